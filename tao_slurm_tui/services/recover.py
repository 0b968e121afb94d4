"""After a damaged state DB was moved aside: a profile's jobs rebuilt from the cluster.

The cluster keeps what the store lost. Every submission wrote ``meta/<id>.json`` under the
results root before its sbatch (the job's stable id, which is also its SLURM job name, its
image, partition, pipeline and creation time); ``sacct`` still knows every SLURM job of those
names (each one an attempt, oldest first), and squeue the ones accounting has not recorded yet.
Two round trips: the meta files (newest :data:`MAX_JOBS`), then ``sacct`` and ``squeue -u
<user> --name=<ids>`` (over :data:`WINDOW_DAYS`).

A job SLURM still runs or queues is recovered as it is and monitored again; a finished one is
recovered with its final state (``COMPLETED`` → Complete, failures → Error, cancelled →
Canceled) and never retried: its log was not looked at again. A job the store knows already
(submitted since) is left alone.

Which profiles were recovered is kept in ``<state.db>.recover`` (written when the file was
moved aside), so a crash before recovery, or another profile used later, recovers too.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tao_slurm_tui.core.models import Attempt, JobRecord, TaoStatus
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.quoting import home_path, join
from tao_slurm_tui.core.slurm import map_state, normalize_state
from tao_slurm_tui.remote.connection import Remote
from tao_slurm_tui.services.store import JobStore

WINDOW_DAYS = 60
"""How far back sacct is asked."""

MAX_JOBS = 1000
"""The newest meta files read."""

_META = "@@meta "
_FIELDS = ("JobID", "JobName", "State", "Submit", "Start", "End", "NodeList", "Partition",
           "ExitCode", "Elapsed", "Timelimit")  # fmt: skip


def marker(store: JobStore) -> Path:
    """The file next to the state DB naming where a damaged file went and who recovered."""
    return Path(f"{store.path}.recover")


def note_moved_aside(store: JobStore) -> None:
    """Record (once per move) that the store's jobs must be recovered from the clusters."""
    if store.recovered_from is not None:
        marker(store).write_text(f"{store.recovered_from}\n")


def pending_recovery(store: JobStore, profile_name: str) -> Path | None:
    """The damaged file's new path when ``profile_name`` has not been recovered since."""
    try:
        lines = marker(store).read_text().splitlines()
    except OSError:
        return None
    if not lines or profile_name in lines[1:]:
        return None
    return Path(lines[0])


def _done(store: JobStore, profile_name: str) -> None:
    with marker(store).open("a") as handle:
        handle.write(f"{profile_name}\n")


def meta_command(meta_dir: str) -> str:
    """The newest meta files, each after a ``@@meta <file>`` line (at most 16 KiB each)."""
    return (
        f"cd -- {home_path(meta_dir)} 2>/dev/null || exit 0; "
        f"ls -t -- *.json 2>/dev/null | head -n {MAX_JOBS} | while IFS= read -r f; do "
        f'printf "{_META}%s\\n" "$f"; head -c 16384 -- "$f"; printf "\\n"; done'
    )


def parse_meta(output: str) -> dict[str, dict[str, Any]]:
    """Job id → its meta (only files this tool wrote: ``"tool": "tao-slurm-tui"``)."""
    found: dict[str, dict[str, Any]] = {}
    chunks = output.split(_META)
    for chunk in chunks[1:]:
        _name, _, body = chunk.partition("\n")
        try:
            meta = json.loads(body)
        except ValueError:
            continue
        if isinstance(meta, dict) and meta.get("tool") == "tao-slurm-tui" and meta.get("id"):
            found.setdefault(str(meta["id"]), meta)
    return found


def jobs_command(user: str, names: list[str]) -> str:
    """sacct, then squeue (it knows a job accounting has not recorded yet), by job names; the
    same fields in the same order (squeue has no exit code)."""
    sacct = join(
        ["sacct", "-X", "-n", "-P", "-u", user, f"--name={','.join(names)}",
         "-S", f"now-{WINDOW_DAYS}days", "-E", "now", f"--format={','.join(_FIELDS)}"]
    )  # fmt: skip
    squeue = join(
        ["squeue", "-h", "-t", "all", "-u", user, f"--name={','.join(names)}",
         "-o", "%i|%j|%T|%V|%S|%e|%N|%P||%M|%l"]
    )  # fmt: skip
    return f"{sacct} 2>/dev/null; {squeue} 2>/dev/null; true"


@dataclass(frozen=True)
class Recovery:
    jobs: list[str]
    """Ids of the jobs recovered."""
    aside: Path


async def recover_jobs(
    conn: Remote, store: JobStore, profile_name: str, profile: Profile
) -> Recovery | None:
    """Rebuild the profile's jobs from the cluster if its state DB was moved aside; None when
    there is nothing to do.

    Raises:
        RemoteError: the cluster could not be asked (tried again on the next refresh).
    """
    aside = pending_recovery(store, profile_name)
    if aside is None:
        return None
    meta_dir = posixpath.join(profile.results_root, "meta")
    metas = parse_meta((await conn.run(meta_command(meta_dir), check=True)).stdout)
    known = {job.id for job in store.list_jobs(profile_name)}
    wanted = sorted(set(metas) - known)
    rows: dict[str, list[dict[str, str]]] = {}
    for start in range(0, len(wanted), 200):
        chunk = wanted[start : start + 200]
        out = (await conn.run(jobs_command(profile.user, chunk), check=True)).stdout
        by_id: dict[str, dict[str, str]] = {}
        for line in out.splitlines():
            values = line.split("|")
            if len(values) == len(_FIELDS) and values[0].split(";")[0].isdigit():
                row = dict(zip(_FIELDS, values, strict=True))
                by_id[row["JobID"]] = row  # squeue's line (later) wins for a live job
        for row in by_id.values():
            rows.setdefault(row["JobName"], []).append(row)
    recovered = []
    for job_id in wanted:
        if job_id in rows:
            store.create_job(_record(job_id, profile_name, profile, metas[job_id], rows[job_id]))
            store.add_event(profile_name, job_id, "recovered", f"recovered from {aside.name}")
            recovered.append(job_id)
    _done(store, profile_name)
    return Recovery(recovered, aside)


def _record(
    job_id: str, profile_name: str, profile: Profile, meta: dict[str, Any], rows: list[Any]
) -> JobRecord:
    rows = sorted(rows, key=lambda r: int(r["JobID"].split(";")[0].split("_")[0]))
    attempts = [
        Attempt(
            number=n,
            slurm_job_id=r["JobID"].split(";")[0],
            state=normalize_state(r["State"]),
            exit_code=r["ExitCode"],
            nodes="" if r["NodeList"] == "None assigned" else r["NodeList"],
            submit_time=r["Submit"],
            start_time=r["Start"] if r["Start"] != "Unknown" else "",
            end_time=r["End"] if r["End"] != "Unknown" else "",
            elapsed=r["Elapsed"],
            time_limit=r["Timelimit"],
            partition=r["Partition"],
        )
        for n, r in enumerate(rows)
    ]
    state = attempts[-1].state
    status = map_state(state).status or TaoStatus.PENDING
    pipeline: dict[str, Any] = meta["pipeline"] if isinstance(meta.get("pipeline"), dict) else {}
    return JobRecord(
        id=job_id,
        profile=profile_name,
        spec={"name": job_id, "image": str(meta.get("image", ""))},
        base_results_dir=profile.results_root,
        status=status,
        slurm_state=state,
        message=(
            f"Recovered from the cluster after the state DB was moved aside (SLURM: {state})."
        ),
        attempts=attempts,
        submitted=True,
        created_at=float(meta.get("created_at") or 0),
        pipeline_id=str(pipeline.get("id", "")),
        pipeline_step=max(0, int(pipeline.get("step", 1)) - 1) if pipeline else 0,
    )
