"""Container image references: the forms users write and the forms each tool needs.

Accepted (the platform's list): ``/path/image.sqsh``, ``registry#image:tag``,
``docker://registry#image:tag`` and ``registry/image:tag``. Pyxis wants ``registry#image:tag``
for ``srun --container-image``; ``enroot import`` wants ``docker://registry#image:tag``; the SQSH
cache file is named after the image with ``/``, ``:`` (and ``#``, ``@``) turned into ``_``.

The ``#`` is not kept in the cache name: every spelling of the same image (``nvcr.io/a/b:t``,
``nvcr.io#a/b:t``, ``docker://nvcr.io#a/b:t``) maps to the same canonical ``nvcr.io/a/b:t``, so
they share one cached file, and ``#`` would need quoting in every shell that touches the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tao_slurm_tui.core.storage import PathError, convert_path
from tao_slurm_tui.errors import BadInput

ACCEPTED_FORMS = (
    "/path/image.sqsh, registry#image:tag, docker://registry#image:tag or registry/image:tag"
)
"""The accepted forms, as listed in error messages."""

DOCKER_PREFIX = "docker://"
SQSH_SUFFIX = ".sqsh"

_HOST = (
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
)
_REGISTRY_RE = re.compile(rf"^{_HOST}(?::[0-9]{{1,5}})?\Z")
_COMPONENT_RE = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*\Z")
_TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\Z")
_DIGEST_RE = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}\Z")


class ImageError(ValueError):
    """A malformed image reference; ``str()`` is a phrase naming the value and the forms."""


@dataclass(frozen=True)
class ImageRef:
    """A parsed image reference."""

    raw: str
    """The text the user wrote."""
    sqsh_path: str = ""
    """For a ``.sqsh`` image: its absolute path on the cluster; empty for registry images."""
    registry: str = ""
    """Registry host (``nvcr.io``, ``localhost:5000``); empty for Docker Hub or a SQSH file."""
    repository: str = ""
    """Repository path (``nvidia/tao/tao-toolkit``)."""
    tag: str = ""
    """Tag (``6.26.3-pyt``); ``latest`` when none was written and no digest was given."""
    digest: str = ""
    """``sha256:...`` when pinned by digest."""

    @property
    def is_sqsh(self) -> bool:
        """True for a pre-built SQSH file (nothing to pull or convert)."""
        return bool(self.sqsh_path)

    @property
    def is_latest(self) -> bool:
        """True for a moving ``:latest`` image (its SQSH cache may be stale)."""
        return not self.is_sqsh and self.tag == "latest" and not self.digest

    def _image_part(self) -> str:
        text = self.repository
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text

    @property
    def canonical(self) -> str:
        """Ordinary ``registry/image:tag`` form (the SQSH path for a SQSH image)."""
        if self.is_sqsh:
            return self.sqsh_path
        prefix = f"{self.registry}/" if self.registry else ""
        return prefix + self._image_part()

    @property
    def pyxis(self) -> str:
        """What ``srun --container-image=`` takes: ``registry#image:tag`` or the SQSH path."""
        if self.is_sqsh:
            return self.sqsh_path
        prefix = f"{self.registry}#" if self.registry else ""
        return prefix + self._image_part()

    @property
    def enroot_uri(self) -> str:
        """What ``enroot import`` takes: ``docker://registry#image:tag``.

        Raises:
            ValueError: for a SQSH file, which is not imported.
        """
        if self.is_sqsh:
            raise ValueError("a .sqsh image is already converted; there is nothing to import")
        return DOCKER_PREFIX + self.pyxis

    @property
    def sqsh_name(self) -> str:
        """File name of the cached SQSH conversion.

        ``nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt`` →
        ``nvcr.io_nvidia_tao_tao-toolkit_6.26.3-pyt.sqsh``.
        """
        if self.is_sqsh:
            return self.sqsh_path.rsplit("/", 1)[-1]
        return re.sub(r"[/:#@]", "_", self.canonical) + SQSH_SUFFIX

    def sqsh_cache_path(self, cache_dir: str) -> str:
        """Path of the cached SQSH file under ``cache_dir`` (the file itself for a SQSH image)."""
        if self.is_sqsh:
            return self.sqsh_path
        return f"{cache_dir.rstrip('/') or ''}/{self.sqsh_name}"


def _error(value: str, why: str = "") -> ImageError:
    detail = f" ({why})" if why else ""
    return ImageError(f"{value!r} is not a valid image{detail}; use one of {ACCEPTED_FORMS}")


def _parse_image_part(value: str, registry: str, image: str) -> ImageRef:
    digest = ""
    if "@" in image:
        image, digest = image.split("@", 1)
        if not _DIGEST_RE.match(digest):
            raise _error(value, f"bad digest {digest!r}")
    tag = ""
    last = image.rsplit("/", 1)[-1]
    if ":" in last:
        image, tag = image.rsplit(":", 1)
        if not _TAG_RE.match(tag):
            raise _error(value, f"bad tag {tag!r}")
    if not image:
        raise _error(value, "the image name is missing")
    for component in image.split("/"):
        if not _COMPONENT_RE.match(component):
            raise _error(
                value, f"bad name part {component!r}: lowercase letters, digits, '.', '_', '-'"
            )
    if not tag and not digest:
        tag = "latest"
    return ImageRef(raw=value, registry=registry, repository=image, tag=tag, digest=digest)


def parse_image(value: str) -> ImageRef:
    """Parse an image reference in one of the accepted forms.

    Raises:
        ImageError: malformed; the message lists the accepted forms.
    """
    text = value.strip(" ")  # spaces around it; a newline is a typo to refuse, not to drop
    if not text:
        raise ImageError(f"is empty; use one of {ACCEPTED_FORMS}")
    if any(ch.isspace() for ch in text) or any(ch in text for ch in "'\"`$\\,;"):
        raise _error(value, "spaces, quotes and shell characters are not allowed")
    if text.endswith(SQSH_SUFFIX) and (
        text.startswith("/") or text.lower().startswith("lustre://")
    ):
        try:
            path = convert_path(text)
        except PathError as exc:
            raise ImageError(f"the SQSH image {exc}") from None
        return ImageRef(raw=value, sqsh_path=path)
    if text.endswith(SQSH_SUFFIX) or text.startswith(("/", ".", "~")):
        raise _error(value, "a SQSH image must be an absolute path on the cluster ending in .sqsh")
    rest = text[len(DOCKER_PREFIX) :] if text.startswith(DOCKER_PREFIX) else text
    if "://" in rest:
        raise _error(value, "unknown scheme")
    if "#" in rest:
        registry, image = rest.split("#", 1)
        if not _REGISTRY_RE.match(registry):
            raise _error(value, f"bad registry {registry!r}")
        if "#" in image:
            raise _error(value, "more than one '#'")
        return _parse_image_part(value, registry, image)
    first, sep, remainder = rest.partition("/")
    # Docker's rule: the first part is a registry when it has a '.', a ':' port or is localhost.
    if sep and ("." in first or ":" in first or first == "localhost"):
        if not _REGISTRY_RE.match(first):
            raise _error(value, f"bad registry {first!r}")
        return _parse_image_part(value, first, remainder)
    return _parse_image_part(value, "", rest)


def check_image(value: str, *, field: str = "image") -> ImageRef:
    """:func:`parse_image` with a user-facing error.

    Raises:
        BadInput: one sentence naming ``field`` and the accepted forms.
    """
    try:
        return parse_image(value)
    except ImageError as exc:
        raise BadInput(f"{field}: {exc}.") from None
