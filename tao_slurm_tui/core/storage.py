"""Data paths a job may use: they must live on the cluster's shared filesystem.

A SLURM job runs on compute nodes, so a path that exists only on the user's machine is useless
there. The platform accepts ``lustre:///abs/path`` (→ ``/abs/path``), ``slurm://`` URIs from
microservices metadata (→ their path) and plain absolute paths the compute nodes can read;
``file://`` URIs, relative paths and ``~`` paths are refused. Pure functions, no I/O: whether a
path exists is checked later with ``test -e`` on the login host.
"""

from __future__ import annotations

import re

from tao_slurm_tui.errors import BadInput

LUSTRE_SCHEME = "lustre://"
SLURM_SCHEME = "slurm://"
FILE_SCHEME = "file://"

_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

#: The platform's explanation, appended to every refusal.
SHARED_FS_HINT = (
    "data must be on the cluster's shared filesystem: use lustre:///absolute/path "
    "(or a plain absolute path the compute nodes can read)"
)


class PathError(ValueError):
    """A path the cluster cannot use; ``str()`` is a phrase to put after the value's name."""


def looks_like_cluster_path(value: object) -> bool:
    """Whether a string value in ``[specs]`` is meant as a data path and must be checked.

    ``lustre://``, ``slurm://`` and absolute paths are data paths; ``file://`` URIs are included
    so that they are refused instead of silently passed to the container.
    """
    if not isinstance(value, str):
        return False
    low = value.lower()
    return (
        value.startswith("/")
        or low.startswith(LUSTRE_SCHEME)
        or low.startswith(SLURM_SCHEME)
        or low.startswith(FILE_SCHEME)
    )


def _check_absolute(path: str, original: str) -> str:
    if not path.startswith("/") or path.strip("/") == "":
        raise PathError(
            f"{original!r} does not name an absolute file or directory; {SHARED_FS_HINT}"
        )
    if any(ch in path for ch in "\0\n\r"):
        raise PathError(f"{original!r} contains a control character; use a plain path")
    # Collapse duplicate slashes only; '..' is kept as written (the cluster resolves it).
    return re.sub(r"/{2,}", "/", path)


def convert_path(value: str) -> str:
    """Convert a user-supplied data path to the path the compute nodes see.

    Args:
        value: ``lustre:///abs``, ``slurm://[cluster]/abs`` or ``/abs``.

    Returns:
        The absolute path on the cluster.

    Raises:
        PathError: ``file://``, relative, ``~`` or other local-looking paths, unknown schemes.
    """
    text = value.strip()
    if not text:
        raise PathError(f"the path is empty; {SHARED_FS_HINT}")
    low = text.lower()
    if low.startswith(LUSTRE_SCHEME):
        rest = text[len(LUSTRE_SCHEME) :]
        if not rest.startswith("/"):
            raise PathError(
                f"{value!r} has a host part; write lustre:///absolute/path with three slashes"
            )
        return _check_absolute(rest, value)
    if low.startswith(SLURM_SCHEME):
        rest = text[len(SLURM_SCHEME) :]
        # slurm://cluster/abs/path and slurm:///abs/path both name /abs/path.
        if not rest.startswith("/"):
            slash = rest.find("/")
            rest = "" if slash < 0 else rest[slash:]
        return _check_absolute(rest, value)
    if low.startswith(FILE_SCHEME):
        raise PathError(f"{value!r} is a local file:// path; {SHARED_FS_HINT}")
    scheme = _SCHEME_RE.match(text)
    if scheme:
        raise PathError(
            f"{value!r} uses the unsupported scheme {scheme.group(1)}://; {SHARED_FS_HINT}"
        )
    if text.startswith("~"):
        raise PathError(f"{value!r} is a path in a local home directory; {SHARED_FS_HINT}")
    if not text.startswith("/"):
        raise PathError(f"{value!r} is a relative local path; {SHARED_FS_HINT}")
    return _check_absolute(text, value)


def cluster_path(value: str, *, field: str = "path") -> str:
    """:func:`convert_path` for callers that want a user-facing error.

    Raises:
        BadInput: one sentence naming ``field`` and saying how to fix the path.
    """
    try:
        return convert_path(value)
    except PathError as exc:
        raise BadInput(f"{field}: {exc}.") from None
