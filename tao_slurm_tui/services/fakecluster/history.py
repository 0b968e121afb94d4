"""The user's past SLURM jobs on the fake cluster: about 1,000 over the last two weeks.

A colleague-style mix (CPU pre-processing, GPU sweeps, an array, jobs that failed, timed out,
were cancelled, lost a node or ran out of memory) with plausible efficiency and memory, each with
its ``slurm-<id>.out`` in the working directory. Deterministic for a given 'now'. ``sacct``
answers from them (``history.json``); slurmctld has long forgotten them.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from tao_slurm_tui.services.fakecluster import engine
from tao_slurm_tui.services.fakecluster.world import World

NAMES = ("preprocess-coco", "sweep-lr", "eval-ckpt", "notebook", "export-onnx", "rsync-data")
STATES = (
    ("COMPLETED", "0:0"), ("COMPLETED", "0:0"), ("COMPLETED", "0:0"), ("COMPLETED", "0:0"),
    ("FAILED", "1:0"), ("CANCELLED", "0:15"), ("TIMEOUT", "0:15"), ("COMPLETED", "0:0"),
    ("COMPLETED", "0:0"), ("COMPLETED", "0:0"), ("COMPLETED", "0:0"), ("NODE_FAIL", "0:0"),
    ("COMPLETED", "0:0"), ("OUT_OF_MEMORY", "0:125"),
)  # fmt: skip
WORK_DIR = "/lustre/fsw/users/researcher/work"
VERSION = "1"
"""Bumped whenever :func:`output_text` or the jobs change (the shared outputs are rebuilt)."""
FAILED = ("FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY")


def history_jobs(now: float, size: int = 1000) -> list[dict[str, Any]]:
    """``size`` finished jobs, SLURM ids 1..size, the newest ending about ten hours before now."""
    jobs: list[dict[str, Any]] = []
    for i in range(size):
        state, code = STATES[(i * 3) % len(STATES)]
        name = NAMES[(i * 5) % len(NAMES)]
        gpus = (0, 1, 4, 8)[(i * 3) % 4] if name not in {"rsync-data", "notebook"} else 0
        cpus = max(2, gpus * 8)
        limit = (30, 60, 240, 480)[i % 4] * 60
        ran = limit if state == "TIMEOUT" else max(20, (limit * ((i * 37) % 100)) // 100)
        efficiency = 0.15 + ((i * 53) % 80) / 100
        submit = now - ((size - i) * 19 + 600) * 60
        start = submit + (i * 97) % 5400
        jobs.append(
            {
                "id": str(i + 1),
                "array_id": f"301_{i - 300}" if 300 <= i < 400 else "",
                "name": name,
                "user": "researcher",
                "account": "tao",
                "qos": "normal",
                "partition": "polar" if gpus else "batch",
                "state": state,
                "reason": "None",
                "cancelled_by": "4242" if state == "CANCELLED" else "",
                "exit_code": code,
                "nodes_req": 1,
                "cpus": cpus,
                "gpus": gpus,
                "gpu_type": "",
                "time_limit": limit,
                "submit": submit,
                "start": start,
                "end": start + ran,
                "node_list": f"gpu-a{(i % 8) + 1:02d}" if gpus else f"cpu-{(i % 4) + 1:02d}",
                "work_dir": WORK_DIR,
                "cpu_time": int(cpus * ran * efficiency),
                "max_rss": f"{(i * 131) % 60000 + 800}M",
            }
        )
    return jobs


def output_text(job: dict[str, Any]) -> str:
    """What a job printed: steps with a falling loss; a failed one ends in a traceback."""
    lines = [f"[{job['name']}] step {n}/40 loss={2.0 / (n + 1):.4f}" for n in range(40)]
    if job["state"] in FAILED:
        lines += [
            "Traceback (most recent call last):",
            '  File "train.py", line 88, in <module>',
            "RuntimeError: CUDA error: an illegal memory access was encountered",
        ]
    return "\n".join(lines) + "\n"


def write_outputs(world: World, jobs: list[dict[str, Any]], *, shared: bool = False) -> None:
    """The history for ``sacct`` and each job's ``slurm-<id>.out``.

    With ``shared`` the outputs (the same for any clock: a job's text depends on its number
    only, and nothing writes there) are one read-only folder per user and history size, made
    once and linked into the world: a thousand files less to write for each test's world.
    """
    with open(world.path / engine.HISTORY_FILE, "w", encoding="utf-8") as handle:
        json.dump(jobs, handle, separators=(",", ":"))
    folder = world.local(WORK_DIR)
    folder.parent.mkdir(parents=True, exist_ok=True)
    if shared:
        folder.symlink_to(_shared_outputs(jobs))
        return
    _write(folder, jobs)


def _write(folder: Path, jobs: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for job in jobs:
        name = job["array_id"] or job["id"]
        with open(folder / f"slurm-{name}.out", "w", encoding="utf-8") as handle:
            handle.write(output_text(job))


def _shared_outputs(jobs: list[dict[str, Any]]) -> Path:
    """The shared folder of :func:`write_outputs` (built aside, then renamed into place, so a
    parallel test never sees it half written)."""
    target = Path(tempfile.gettempdir()) / f"tao-fake-history-{VERSION}-{os.getuid()}-{len(jobs)}"
    if not target.is_dir():
        building = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
        _write(building, jobs)
        try:
            building.rename(target)
        except OSError:  # another process was quicker: its folder holds the same files
            shutil.rmtree(building, ignore_errors=True)
    return target
