"""Container-runtime failures told after the fact: Pyxis, enroot and the registry.

A job that dies because its image cannot be pulled (a typo in the tag, a refused NGC key) or a
mount source does not exist fails the same way on every retry: it is never retried, and its
message says the cause -- in the registry's own words where the batch script asked it
(``tao_pull_check`` in ``templates/sbatch.sh.j2``) -- and the spec field to change. When the
script had fallen back from a failed SQSH conversion to the registry image, the message says so
too (the conversion job's fate). Pure; :func:`tao_slurm_tui.core.retry.classify` asks
:func:`runtime_failure` first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tao_slurm_tui.core.log_patterns import LogPattern, find_match

NGC_KEY_REFUSED = "registry refused the NGC key"
"""Family of the never-retry pattern for a pull the registry refused (a wrong or revoked key)."""

NGC_KEY_REFUSED_REASON = (
    "The registry refused the NGC key: run set-up → NGC key (or `tao-slurm-tui creds install`), "
    "then resubmit."
)
"""The message the user sees for a pull refused for authentication (never retried)."""

IMAGE_NOT_FOUND = "image not found in the registry"
MOUNT_MISSING = "mount source does not exist"
IMAGE_IMPORT_FAILED = "image import failed"
SQSH_REQUIRED = "SQSH image missing"


@dataclass(frozen=True)
class RuntimeCause:
    """A container-runtime failure (Pyxis, enroot, the registry): what it means and the spec
    field (or setting) to change; never retried -- the same spec fails the same way."""

    family: str
    """What it is, in a few words (the pattern family)."""
    field: str
    """The spec key to change ('' for a setting outside the spec)."""
    patterns: tuple[LogPattern, ...]
    """Lines that show it, most specific first."""

    def reason(self, line: str) -> str:
        """The sentence for the user, with the log line's own words where they say more."""
        words = _RUNTIME_WORDS[self.family]
        detail = _detail(self.family, line)
        return words.format(detail=detail) if "{detail}" in words else words


def _detail(family: str, line: str) -> str:
    if family == IMAGE_NOT_FOUND:
        # The batch script's line: "<registry> has no <repository:tag> (HTTP 404 <its words>)".
        match = re.search(r"(\S+ has no \S+) \(HTTP 404([^)]*)\)", line)
        if match:
            said = match.group(2).strip()
            return f" ({match.group(1)}{'; ' + said if said else ''})"
        return f" ({line[:160]})" if "404" in line else ""
    if family == MOUNT_MISSING:
        match = re.search(r"source path does not exist: (\S+)", line)
        return match.group(1) if match else "a mount source"
    return ""


_RUNTIME_WORDS = {
    IMAGE_NOT_FOUND: (
        "Image not found in the registry{detail}: fix Image (its name or tag), then resubmit."
    ),
    MOUNT_MISSING: (
        "Pyxis could not mount {detail}: the source path does not exist on the node. Remove it "
        "from Mounts or fix the path, then resubmit."
    ),
    IMAGE_IMPORT_FAILED: (
        "Pyxis could not import the image (its registry or enroot failed; main.err has enroot's "
        "log): check Image and that its registry is reachable, then resubmit."
    ),
    SQSH_REQUIRED: (
        "The SQSH image was not made (its conversion job failed; see slurm-logs/sqsh-*.out) "
        "and the profile requires SQSH: fix Image, or turn require_sqsh off, then resubmit."
    ),
    NGC_KEY_REFUSED: NGC_KEY_REFUSED_REASON,
}

SQSH_FALLBACK_RE = re.compile(r"WARNING: the SQSH image (\S+) is missing or invalid")
"""The batch script's line when the SQSH conversion did not produce the image (the job then
pulls from the registry): the conversion job's fate, told after the cause."""

RUNTIME_CAUSES: tuple[RuntimeCause, ...] = (
    RuntimeCause(
        NGC_KEY_REFUSED,
        "",
        (
            # The first is the batch script's own check (tao_pull_check), the second enroot's.
            LogPattern(
                NGC_KEY_REFUSED,
                r"refused the NGC key|\[ERROR\] URL .* returned error code: 40[13]",
                (
                    "[tao-slurm-tui] ERROR: the registry nvcr.io refused the NGC key (HTTP 401): "
                    "run set-up -> NGC key",
                    "[ERROR] URL https://nvcr.io/proxy_auth?scope=repository:nvidia/tao/"
                    "tao-toolkit:pull returned error code: 401 Unauthorized",
                ),
            ),
        ),
    ),
    RuntimeCause(
        IMAGE_NOT_FOUND,
        "image",
        (
            LogPattern(
                IMAGE_NOT_FOUND,
                r"image not found in the registry|\[ERROR\] URL .*/manifests/.* returned error "
                r"code: 404|MANIFEST_UNKNOWN|NAME_UNKNOWN|manifest unknown",
                (
                    "[tao-slurm-tui] ERROR: image not found in the registry: nvcr.io has no "
                    "nvidia/tao/tao-toolkit:6 (HTTP 404 MANIFEST_UNKNOWN: manifest unknown); fix "
                    "the image name or tag",
                    "[ERROR] URL https://nvcr.io/v2/nvidia/tao/tao-toolkit/manifests/6 returned "
                    "error code: 404 Not Found",
                ),
            ),
        ),
    ),
    RuntimeCause(
        MOUNT_MISSING,
        "container_mounts",
        (
            LogPattern(
                MOUNT_MISSING,
                r"container-mounts: source path does not exist",
                (
                    "slurmstepd-tao-n3: error: pyxis: --container-mounts: source path does not "
                    "exist: /lustre",
                ),
            ),
        ),
    ),
    RuntimeCause(
        SQSH_REQUIRED,
        "image",
        (
            LogPattern(
                SQSH_REQUIRED,
                r"ERROR: the SQSH image .* is missing or invalid",
                (
                    "[tao-slurm-tui] ERROR: the SQSH image /r/sqsh/x.sqsh is missing or invalid "
                    "(did its conversion job fail?) and the profile requires SQSH; stopping",
                ),
            ),
        ),
    ),
    RuntimeCause(
        IMAGE_IMPORT_FAILED,
        "image",
        (
            LogPattern(
                IMAGE_IMPORT_FAILED,
                r"pyxis: failed to import docker image|enroot import.*failed",
                (
                    "slurmstepd-tao-n3: error: pyxis: failed to import docker image: "
                    "reg:5000#nvidia/tao/tao-toolkit:6",
                ),
            ),
        ),
    ),
)
"""Container-runtime failures, most specific first: the first cause whose pattern matches any
line decides (enroot's generic "failed to import" comes before the registry's 404 in the log)."""


def runtime_failure(lines: Sequence[str]) -> tuple[RuntimeCause, str] | None:
    """The container-runtime cause the log shows, with its deciding line (None: none)."""
    for cause in RUNTIME_CAUSES:
        found = find_match(lines, cause.patterns)
        if found is not None:
            return cause, found.line
    return None


def runtime_reason(cause: RuntimeCause, line: str, lines: Sequence[str]) -> str:
    """The cause's sentence, and what became of the image's SQSH conversion when the script
    had to fall back to the registry because of it."""
    reason = cause.reason(line)
    fallback = next((m for ln in lines if (m := SQSH_FALLBACK_RE.search(ln))), None)
    if fallback is not None and cause.family != SQSH_REQUIRED:
        reason += (
            f" Its SQSH conversion job failed too (no {fallback.group(1)}), so the job had "
            "fallen back to the registry image."
        )
    return reason
