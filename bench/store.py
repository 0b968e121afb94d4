"""Benchmark: what the monitor reads after another writer, with a long job history.

The queue's cache of jobs must follow writes of other processes (a CLI ``submit`` or
``cancel`` in another terminal) and of the app's own submit. Side by side in one run, for a
history of N ended jobs plus 3 active ones, after another connection updated one job and
created one:

- **everything**: ``list_jobs`` (what the monitor did before store schema 4);
- **changed rows**: ``changes`` + ``jobs_changed_since`` (what it does now): the rows written
  since it last read.

Local SQLite only (no cluster): ``.venv/bin/python bench/store.py``. Writes the table into
bench/RESULTS.md (section "store").
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from _sandbox import fmt_s, table, write_results

from tao_slurm_tui.core.models import Attempt, JobRecord, TaoStatus
from tao_slurm_tui.core.spec import JobSpec
from tao_slurm_tui.services.store import JobStore

SIZES = (100, 1000, 5000)
REPEATS = 9


def spec(name: str) -> dict[str, object]:
    """A realistic stored spec (the composer's defaults, a small TAO experiment spec)."""
    return JobSpec.model_validate(
        {
            "name": name,
            "image": "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt",
            "command": "dino train -e /specs/train.yaml",
            "env": {"NCCL_DEBUG": "INFO"},
            "specs": {"train": {"num_epochs": 10, "dataset": {"path": "/lustre/data/train"}}},
        }
    ).model_dump(mode="json")


def fill(store: JobStore, start: int, count: int, status: TaoStatus) -> None:
    with store.batch():
        for i in range(start, start + count):
            store.create_job(
                JobRecord(
                    id=f"job-{i}",
                    profile="p",
                    spec=spec(f"job-{i}"),
                    status=status,
                    submitted=True,
                    attempts=[Attempt(number=0, slurm_job_id=str(10_000 + i))],
                )
            )


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        store = JobStore(Path(folder) / "state.db")
        other = JobStore(Path(folder) / "state.db")
        have = 0
        for n in SIZES:
            fill(store, have, n - have, TaoStatus.COMPLETE)
            have = n
            full, changed, read = [], [], 0
            for r in range(REPEATS):
                since = store.changes()[0]
                other.update_job("p", f"job-{r}", message=f"canceled {r}")
                fill(other, 1_000_000 + n * 100 + r, 1, TaoStatus.PENDING)
                t0 = time.perf_counter()
                everything = store.list_jobs("p")
                full.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                store.changes()
                fresh = store.jobs_changed_since("p", since)
                changed.append(time.perf_counter() - t0)
                read = len(fresh)
            median = statistics.median
            rows.append(
                [
                    f"{len(everything):,}",
                    fmt_s(median(full)),
                    f"{median(full) / len(everything) * 1e6:.0f} µs",
                    f"{read}",
                    fmt_s(median(changed)),
                    f"{median(full) / median(changed):.0f}x",
                ]
            )
            print(rows[-1], flush=True)
        store.close()
        other.close()
    text = "\n\n".join(
        [
            "## The job cache after another writer (`bench/store.py`)",
            f"Measured {time.strftime('%Y-%m-%d %H:%M')} on local SQLite (WAL), median of "
            f"{REPEATS}: a history of ended jobs, then another connection updates one job and "
            "records a new one; what the monitor reads to catch up.",
            table(
                [
                    "jobs in the store",
                    "everything (before)",
                    "per job",
                    "rows written since",
                    "changed rows (now)",
                    "everything / changed",
                ],
                rows,
            ),
            "Before schema 4 every write of another process, and the app's own submit, made the "
            "next tick read every job of the profile again (the soak's tick grew from 11 to "
            "17 ms over 100 jobs that way). Now each job row carries a store-wide change "
            "number taken inside its write transaction (so in commit order); the monitor reads "
            "the rows numbered after the last it read, and everything only after a deletion "
            "(a refused submission).",
        ]
    )
    print()
    print(text)
    write_results("store", text)


if __name__ == "__main__":
    main()
