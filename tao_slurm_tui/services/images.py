"""SQSH images: a cached, pre-converted container image per registry image, made by a SLURM job.

Pyxis can start a container straight from the registry, but every job (and every node of a
multi-node job) then pulls and unpacks the image again. With ``use_sqsh`` the image is converted
once into a SquashFS file on the shared filesystem and later jobs start from that file.

Design (the choices the issue leaves open):

* **Cache**: ``<profile.sqsh_cache_dir or base_results_dir/sqsh>/<image with / and : as _>.sqsh``
  (the name comes from :attr:`~tao_slurm_tui.core.images.ImageRef.sqsh_name`). A cached file
  counts only if it starts with the squashfs magic ``hsqs`` (checked remotely with ``head -c 4``),
  so a half-written or truncated file is never used. ``:latest`` images reuse the cache unless
  ``force_reconvert_latest``.
* **Conversion is its own SLURM batch job** on the conversion partition
  (``profile.conversion_partition`` or the first partition): ``enroot import`` into a job-scoped
  partial file with a job-scoped ``ENROOT_TEMP_PATH``, magic check, atomic rename into place. The
  job name is deterministic (``sqsh-<sha256 of the image>[:12]``), so a conversion already in flight
  is found with ``squeue --name`` and waited for instead of being duplicated. The cache check and
  the in-flight lookup are one round trip.
* **No client blocks**: the training job is submitted with ``--dependency=afterany:<conversion>``,
  not ``afterok``. With ``afterok`` a failed conversion would leave the training job pending forever
  (``DependencyNeverSatisfied``) unless some client noticed; with ``afterany`` it always starts once
  the conversion ends, and **the training script itself decides** (the ``sqsh_fallback`` hook of
  ``templates/sbatch.sh.j2``): when the SQSH file exists and starts with ``hsqs`` it runs from it,
  otherwise it prints a ``WARNING`` line to ``main.err`` and uses the registry image — or, when the
  profile has ``require_sqsh``, prints an ``ERROR`` line and exits 1 (the job ends FAILED).
  This works without the monitor and without any client being connected.
* **Reporting**: the submission records a ``sqsh`` event (conversion submitted / reused / cache hit)
  and returns a warning saying the job falls back if the conversion fails;
  :func:`conversion_outcome` tells afterwards whether the conversion failed so the monitor (or a
  test) can record that the fallback was taken.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from tao_slurm_tui.core.images import ImageRef
from tao_slurm_tui.core.partitions import format_slurm_time
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.quoting import join, quote
from tao_slurm_tui.core.slurm_text import parse_sbatch_output
from tao_slurm_tui.errors import OperationFailed
from tao_slurm_tui.remote.connection import CommandTimeout, ConnectionLost, RemoteFiles

SQSH_MAGIC = "hsqs"
"""First four bytes of a SquashFS file (little-endian superblock magic)."""

CONVERSION_TIME_SECONDS = 2 * 3600
"""Default wall time of a conversion job (the profile's ``sqsh_conversion_minutes`` decides;
capped by the partition's MaxTime); imports take 5-30 min."""

CONVERSION_PREFIX = "sqsh-"
"""Job-name prefix of conversion jobs."""

ACTIVE_STATES = "PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED,REQUEUED,RESIZING"
"""squeue states of a conversion that is still in flight (worth waiting for)."""

SqshAction = Literal["off", "direct", "cached", "convert", "wait"]
"""What the SQSH step decided: SQSH off, image already a .sqsh file, cache hit, new conversion job,
or waiting for a conversion already in flight."""


@dataclass(frozen=True)
class SqshPlan:
    """How the training job gets its image; what :func:`render_sbatch` needs from the SQSH step."""

    action: SqshAction
    """What was decided."""
    sqsh_path: str = ""
    """The SQSH file the job runs from (or falls back from); empty when SQSH is off."""
    image_override: str | None = None
    """Image to render instead of the spec's (the SQSH path on a cache hit or a .sqsh image)."""
    dependency: str | None = None
    """``--dependency`` value (``afterany:<conversion id>``) when a conversion runs first."""
    sqsh_fallback: str | None = None
    """SQSH path the training script checks at start (registry image if invalid); None: no check."""
    conversion_job_id: str = ""
    """SLURM id of the conversion job waited for (new or in flight)."""
    conversion_job_name: str = ""
    """Deterministic name of the conversion job."""
    warnings: list[str] = field(default_factory=list)
    """Sentences for the user (fallback notice, reused cache of a moving tag)."""
    event: str = ""
    """One sentence for the job's event log."""


# ----------------------------------------------------------------------------------- pure parts


def cache_dir_for(profile: Profile) -> str:
    """The SQSH cache dir of a profile: ``sqsh_cache_dir`` or ``<base_results_dir>/sqsh``."""
    if profile.sqsh_cache_dir:
        return profile.sqsh_cache_dir.rstrip("/") or "/"
    return f"{profile.results_root.rstrip('/')}/sqsh"


def conversion_partition(profile: Profile, spec_partition: str = "") -> str:
    """Partition of the conversion job: the profile's, else the first of the job's/profile's."""
    if profile.conversion_partition:
        return profile.conversion_partition.split(",")[0].strip()
    for source in (spec_partition, profile.partition):
        first = [p.strip() for p in source.split(",") if p.strip()]
        if first:
            return first[0]
    return ""


def conversion_job_name(ref: ImageRef) -> str:
    """Deterministic SLURM job name of the conversion of ``ref`` (same for every spelling)."""
    digest = hashlib.sha256(ref.canonical.encode("utf-8")).hexdigest()[:12]
    return f"{CONVERSION_PREFIX}{digest}"


def sqsh_magic(sqsh_path: str) -> str:
    """Shell text printing the first letters of a cached image (a regular file only: a FIFO
    or a device put in its place must not block the probe)."""
    q = quote(sqsh_path)
    # tr keeps letters only: head of a binary file may hold NULs a shell variable cannot carry.
    return f"if [ -f {q} ]; then head -c 4 -- {q} 2>/dev/null | tr -dc 'A-Za-z0-9'; fi"


def probe_command(sqsh_path: str, user: str, job_name: str) -> str:
    """One round trip: the cached file's first bytes and any conversion of it in flight.

    Output: ``MAGIC=<letters>`` and ``INFLIGHT=<ids separated by spaces>``.
    """
    magic = sqsh_magic(sqsh_path)
    squeue = join(
        ["squeue", "-h", "-u", user, f"--name={job_name}", "-t", ACTIVE_STATES, "-o", "%i"]
    )
    return (
        f'printf "MAGIC=%s\\n" "$({magic})"; '
        f'printf "INFLIGHT=%s\\n" "$({squeue} 2>/dev/null | tr "\\n" " ")"'
    )


def parse_probe(output: str) -> tuple[bool, list[str]]:
    """Parse :func:`probe_command` output into (cache valid, in-flight conversion ids)."""
    valid = False
    inflight: list[str] = []
    for line in output.splitlines():
        if line.startswith("MAGIC="):
            valid = line[len("MAGIC=") :].strip() == SQSH_MAGIC
        elif line.startswith("INFLIGHT="):
            inflight = [i for i in line[len("INFLIGHT=") :].split() if i.strip()]
    return valid, inflight


def render_conversion_script(
    ref: ImageRef,
    sqsh_path: str,
    *,
    job_name: str,
    partition: str,
    log_path: str,
    account: str = "",
    time_seconds: int = CONVERSION_TIME_SECONDS,
    force: bool = False,
) -> str:
    """The sbatch script of a conversion job (pure).

    The import goes to ``<sqsh>.partial.<jobid>`` with ``ENROOT_TEMP_PATH`` private to the job, is
    checked for the squashfs magic and only then renamed over the cache file, so a reader never
    sees a partial file and two conversions never write the same file.

    Args:
        ref: a registry image (not a .sqsh file).
        sqsh_path: the cache file to create.
        job_name: :func:`conversion_job_name` of ``ref``.
        partition: conversion partition.
        log_path: ``--output`` file; its directory must exist before submission.
        account: ``--account`` when non-empty.
        time_seconds: wall time.
        force: convert even when a valid cache file exists (``:latest`` + force_reconvert_latest).
    """
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={job_name}",
        f"#SBATCH --partition={partition}",
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks=1",
        f"#SBATCH --time={format_slurm_time(time_seconds)}",
        f"#SBATCH --output={log_path}",
        "#SBATCH --open-mode=append",
    ]
    if account:
        lines.append(f"#SBATCH --account={account}")
    lines += [
        "# SQSH conversion job written by tao-slurm-tui.",
        "set -euo pipefail",
        f"final={quote(sqsh_path)}",
        f"uri={quote(ref.enroot_uri)}",
        f"force={1 if force else 0}",
        *_CONVERSION_BODY,
    ]
    return "\n".join(lines)


_CONVERSION_BODY = (
    'partial="${final}.partial.${SLURM_JOB_ID}"',
    'export ENROOT_TEMP_PATH="${TMPDIR:-/tmp}/tao-enroot-${SLURM_JOB_ID}"',
    'cleanup() { rm -rf -- "$ENROOT_TEMP_PATH" "$partial"; }',
    "trap cleanup EXIT",
    'mkdir -p -- "$ENROOT_TEMP_PATH" "$(dirname -- "$final")"',
    'echo "tao-slurm-tui: converting $uri to $final on $(hostname)"',
    # Another conversion may have finished while this one waited in the queue.
    'if [ "$force" = 0 ] && [ "$(head -c 4 -- "$final" 2>/dev/null | tr -dc A-Za-z0-9)"'
    f" = {SQSH_MAGIC} ]; then",
    '  echo "tao-slurm-tui: $final is already a valid SQSH image"; exit 0',
    "fi",
    "if ! command -v enroot >/dev/null 2>&1; then",
    '  echo "tao-slurm-tui: ERROR: enroot is not installed on $(hostname);'
    ' cannot convert $uri" >&2',
    "  exit 1",
    "fi",
    'enroot import -o "$partial" "$uri" </dev/null',
    f'if [ "$(head -c 4 -- "$partial" 2>/dev/null | tr -dc A-Za-z0-9)" != {SQSH_MAGIC} ]; then',
    '  echo "tao-slurm-tui: ERROR: enroot import did not produce a SquashFS file" >&2',
    "  exit 1",
    "fi",
    'mv -f -- "$partial" "$final"',
    'echo "tao-slurm-tui: SQSH image ready: $final"',
    "",
)
"""The conversion script after its variables (``final``, ``uri``, ``force``): import into a
partial file private to the job, check the squashfs magic, then rename over the cache file."""


def _cached(ref: ImageRef, sqsh_path: str, name: str) -> SqshPlan:
    """The plan of a job that uses a valid cached SQSH image (a moving tag is warned about)."""
    warnings = []
    if ref.is_latest:
        warnings.append(
            f"Using the cached SQSH of the moving tag {ref.canonical}; set "
            "force_reconvert_latest in the profile to convert it again."
        )
    return SqshPlan(
        action="cached",
        sqsh_path=sqsh_path,
        image_override=sqsh_path,
        conversion_job_name=name,
        warnings=warnings,
        event=f"Using the cached SQSH image {sqsh_path}.",
    )


def sbatch_error(stderr: str, stdout: str = "") -> str:
    """SLURM's own words from a rejected sbatch: the ``sbatch: error:`` lines, joined."""
    lines = [ln.strip() for ln in (stderr or "").splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower() or "unrecognized" in ln.lower()]
    chosen = errors or lines or [ln.strip() for ln in stdout.splitlines() if ln.strip()]
    text = "; ".join(chosen)
    return text[:800] if text else "sbatch failed without a message"


# ----------------------------------------------------------------------------------- service


class ImageService:
    """Decides how a training job gets its image and submits conversion jobs."""

    def __init__(self, conn: RemoteFiles, profile: Profile) -> None:
        """Create the service.

        Args:
            conn: the profile's one connection.
            profile: the cluster profile.
        """
        self._conn = conn
        self._profile = profile

    async def prepare(
        self,
        ref: ImageRef,
        *,
        use_sqsh: bool,
        spec_partition: str = "",
        max_time_seconds: int | None = None,
        report: Callable[[str], None] = lambda _detail: None,
    ) -> SqshPlan:
        """Look at the cache and, if needed, submit (or find) the conversion job.

        Args:
            ref: the parsed image of the spec.
            use_sqsh: the spec's ``use_sqsh``.
            spec_partition: the job's partition (for the default conversion partition).
            max_time_seconds: MaxTime of the conversion partition (caps the wall time).
            report: called with one line of detail as the step goes on.

        Raises:
            OperationFailed: the conversion job could not be submitted (SLURM's message).
        """
        if ref.is_sqsh:
            return SqshPlan(action="direct", sqsh_path=ref.sqsh_path, image_override=ref.sqsh_path)
        if not use_sqsh:
            return SqshPlan(action="off")

        sqsh_path = ref.sqsh_cache_path(cache_dir_for(self._profile))
        name = conversion_job_name(ref)
        force = ref.is_latest and self._profile.force_reconvert_latest
        report(f"checking the SQSH cache {sqsh_path}")
        valid, inflight = await self._look(sqsh_path, name)
        if valid and not force:
            report(f"using the cached SQSH image {sqsh_path}")
            return _cached(ref, sqsh_path, name)
        if inflight:
            report(f"waiting for the conversion job {inflight[0]} already in flight")
            return self._chain("wait", ref, sqsh_path, name, inflight[0])
        conv_id = await self._submit_conversion(
            ref, sqsh_path, name, spec_partition, max_time_seconds, force
        )
        report(f"conversion job {conv_id} submitted for {ref.canonical}")
        return self._chain("convert", ref, sqsh_path, name, conv_id)

    async def _look(self, sqsh_path: str, name: str) -> tuple[bool, list[str]]:
        """Whether the cache file is a valid SQSH image, and the conversion jobs in flight."""
        result = await self._conn.run(
            probe_command(sqsh_path, self._profile.user, name),
            timeout=self._profile.command_timeout,
        )
        return parse_probe(result.stdout)

    def _chain(
        self, action: SqshAction, ref: ImageRef, path: str, name: str, conv_id: str
    ) -> SqshPlan:
        """The plan of a job that waits for a conversion job (``conv_id``; '' in a dry run)."""
        if self._profile.require_sqsh:
            fallback = "the job stops if it fails (require_sqsh)"
        else:
            fallback = (
                "if it fails the job falls back to the registry image (a WARNING line in main.err)"
            )
        if action == "wait":
            note = (
                f"The job waits for the SQSH conversion job {conv_id} already in flight for "
                f"{ref.canonical}; {fallback}."
            )
        elif conv_id:
            note = (
                f"SQSH conversion job {conv_id} converts {ref.canonical} first and the job waits "
                f"for it; {fallback}."
            )
        else:
            note = f"A SQSH conversion job would convert {ref.canonical} first; {fallback}."
        return SqshPlan(
            action=action,
            sqsh_path=path,
            dependency=f"afterany:{conv_id}" if conv_id else None,
            sqsh_fallback=path,
            conversion_job_id=conv_id,
            conversion_job_name=name,
            warnings=[note],
            event=note,
        )

    async def _submit_conversion(
        self,
        ref: ImageRef,
        sqsh_path: str,
        name: str,
        spec_partition: str,
        max_time_seconds: int | None,
        force: bool,
    ) -> str:
        base = self._profile.results_root.rstrip("/")
        log_dir = f"{base}/slurm-logs"
        script_path = f"{base}/sbatch/{name}.sbatch"
        time_seconds = self._profile.sqsh_conversion_minutes * 60
        if max_time_seconds is not None:
            time_seconds = min(time_seconds, max_time_seconds)
        script = render_conversion_script(
            ref,
            sqsh_path,
            job_name=name,
            partition=conversion_partition(self._profile, spec_partition),
            log_path=f"{log_dir}/{name}-%j.out",
            account=self._profile.account,
            time_seconds=time_seconds,
            force=force,
        )
        parent = sqsh_path.rsplit("/", 1)[0] or "/"
        await self._conn.run(
            join(["mkdir", "-p", "--", log_dir, f"{base}/sbatch", parent]),
            check=True,
            timeout=self._profile.command_timeout,
        )
        await self._conn.upload_text(script_path, script, mode=0o644)
        return await self._sbatch_conversion(script_path, sqsh_path, name)

    async def _sbatch_conversion(self, script_path: str, sqsh_path: str, name: str) -> str:
        """sbatch the staged conversion script exactly once: after a drop or a timeout the
        queue is asked for the job by name before trying again."""
        command = join(["sbatch", "--parsable", "--export=ALL", script_path])
        for attempt in range(2):
            try:
                result = await self._conn.run(
                    command, timeout=self._profile.command_timeout, retry_on_drop=False
                )
            except (ConnectionLost, CommandTimeout):
                # Same name, so a conversion that did get submitted is found in the queue.
                _, inflight = await self._look(sqsh_path, name)
                if inflight:
                    return inflight[0]
                if attempt == 1:
                    raise
                continue
            if result.exit_status != 0:
                raise OperationFailed(
                    f"SLURM refused the SQSH conversion job: {sbatch_error(result.stderr)}; "
                    "set conversion_partition in the profile or turn use_sqsh off."
                )
            try:
                return parse_sbatch_output(result.stdout)
            except ValueError:
                raise OperationFailed(
                    f"sbatch printed no id for the SQSH conversion ({result.stdout.strip()!r}); "
                    "check the cluster with `squeue` and try again."
                ) from None
        raise OperationFailed("the SQSH conversion job could not be submitted; try again.")


@dataclass(frozen=True)
class ConversionOutcome:
    """What became of a conversion job."""

    state: str
    """sacct/squeue state (first word), '' when unknown."""
    ready: bool
    """The SQSH file exists with the right magic."""
    finished: bool
    """The conversion job has ended."""

    @property
    def failed(self) -> bool:
        """Ended without producing a valid file: the training job falls back (or stops)."""
        return self.finished and not self.ready


async def conversion_outcome(
    conn: RemoteFiles, conversion_job_id: str, sqsh_path: str
) -> ConversionOutcome:
    """One round trip: the conversion job's state and whether the SQSH file is valid now.

    Args:
        conn: the profile's connection.
        conversion_job_id: SLURM id of the conversion job.
        sqsh_path: the cache file it was to produce.
    """
    magic = sqsh_magic(sqsh_path)
    squeue = join(["squeue", "-h", "-t", "all", "-j", conversion_job_id, "-o", "%T"])
    sacct = join(["sacct", "-X", "-n", "-P", "-j", conversion_job_id, "--format=State"])
    command = (
        f'printf "MAGIC=%s\\n" "$({magic})"; '
        f'printf "SQUEUE=%s\\n" "$({squeue} 2>/dev/null | head -n 1)"; '
        f'printf "SACCT=%s\\n" "$({sacct} 2>/dev/null | head -n 1)"'
    )
    result = await conn.run(command)
    fields: dict[str, str] = {}
    for line in result.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key] = value.strip()
    ready = fields.get("MAGIC") == SQSH_MAGIC
    # squeue knows live jobs best; sacct knows finished ones after squeue forgot them.
    state = (fields.get("SQUEUE") or fields.get("SACCT") or "").split(" ")[0]
    live = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING"}
    finished = bool(state) and state not in live
    return ConversionOutcome(state=state, ready=ready, finished=finished)
