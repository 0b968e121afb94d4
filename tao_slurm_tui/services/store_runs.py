"""The state DB's tables of TAO trainings' runs (schema step 6): where each training's
``status.json`` was read up to, its run ledger, and its KPIs per epoch.

Beside :class:`~tao_slurm_tui.services.store.JobStore` (whose file, lock and transactions it
uses): the KPI series of one training is up to :data:`~tao_slurm_tui.core.kpi_series.MAX_POINTS`
rows, thinned when it grows past them, so a hostile or endless ``status.json`` cannot grow the
file without bound. Rows go with their job (``ON DELETE CASCADE``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tao_slurm_tui.core.kpi_series import MAX_POINTS, EpochPoint, clean_kpis, thin
from tao_slurm_tui.core.runs import RunLedger
from tao_slurm_tui.services.store import JobStore


@dataclass
class ReaderState:
    """Where the read of one training's ``status.json`` stands."""

    path: str = ""
    """The file read ('' none found yet)."""
    offset: int = 0
    """Bytes folded so far."""
    skip_line: bool = False
    """Drop the rest of a line longer than a whole read (it was no status line)."""
    stop_written: bool = False
    """The ledger's stop reason is in the attempt's ``requeue.stop``."""
    final: bool = False
    """Read after the job ended: nothing more will come."""

    def to_json(self) -> dict[str, Any]:
        """Stored form."""
        return {
            "path": self.path,
            "offset": self.offset,
            "skip_line": self.skip_line,
            "stop_written": self.stop_written,
            "final": self.final,
        }

    @classmethod
    def from_json(cls, data: Any) -> ReaderState:
        """Inverse of :meth:`to_json` (a damaged one starts over)."""
        if not isinstance(data, dict):
            return cls()
        offset = data.get("offset")
        return cls(
            path=str(data.get("path", ""))[:4096],
            offset=offset if isinstance(offset, int) and offset >= 0 else 0,
            skip_line=bool(data.get("skip_line", False)),
            stop_written=bool(data.get("stop_written", False)),
            final=bool(data.get("final", False)),
        )


@dataclass
class TrainingRecord:
    """One training's stored state."""

    reader: ReaderState = field(default_factory=ReaderState)
    ledger: RunLedger = field(default_factory=RunLedger)
    stored: bool = False
    """A row exists (False: nothing was read for the job yet)."""


class RunStore:
    """Reads and writes the runs tables of a :class:`JobStore`'s file."""

    def __init__(self, store: JobStore) -> None:
        """Use ``store``'s file.

        Args:
            store: the job store (its connection, lock and transactions are shared).
        """
        self.store = store

    def load(self, profile: str, job_id: str) -> TrainingRecord:
        """The stored state of one training (a fresh one when none is stored)."""
        # The store's private plumbing: this module is its other half (schema step 6).
        with self.store._reading():
            row = self.store._db.execute(
                "SELECT reader, ledger FROM job_runs WHERE profile = ? AND job_id = ?",
                (profile, job_id),
            ).fetchone()
        if row is None:
            return TrainingRecord()
        return TrainingRecord(
            ReaderState.from_json(_loads(row["reader"])),
            RunLedger.from_json(_loads(row["ledger"])),
            stored=True,
        )

    def save(
        self,
        profile: str,
        job_id: str,
        record: TrainingRecord,
        points: Iterable[EpochPoint] = (),
        *,
        reset: bool = False,
    ) -> None:
        """Store one training's state and merge ``points`` into its series (one transaction).

        Args:
            profile: the profile.
            job_id: the job.
            record: reader and ledger to store.
            points: new or changed epochs (their KPIs merge into the stored ones).
            reset: forget the stored series first (the file was replaced).
        """
        with self.store._write() as db:
            if (
                db.execute(
                    "SELECT 1 FROM jobs WHERE profile = ? AND id = ?", (profile, job_id)
                ).fetchone()
                is None
            ):
                return  # deleted meanwhile
            if reset:
                db.execute(
                    "DELETE FROM kpi_points WHERE profile = ? AND job_id = ?", (profile, job_id)
                )
            db.execute(
                "INSERT OR REPLACE INTO job_runs (profile, job_id, reader, ledger) "
                "VALUES (?, ?, ?, ?)",
                (
                    profile,
                    job_id,
                    json.dumps(record.reader.to_json()),
                    json.dumps(record.ledger.to_json()),
                ),
            )
            added = 0
            for point in points:
                old = db.execute(
                    "SELECT kpi FROM kpi_points WHERE profile = ? AND job_id = ? AND run = ? "
                    "AND epoch = ?",
                    (profile, job_id, point.run, point.epoch),
                ).fetchone()
                kpi = {**clean_kpis(_loads(old["kpi"])), **point.kpi} if old else point.kpi
                added += old is None
                db.execute(
                    "INSERT OR REPLACE INTO kpi_points (profile, job_id, run, epoch, kpi) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (profile, job_id, point.run, point.epoch, json.dumps(kpi)),
                )
            if added:
                self._bound(db, profile, job_id)
        record.stored = True

    def _bound(self, db: Any, profile: str, job_id: str) -> None:
        """Thin the series once it holds more than :data:`MAX_POINTS` epochs."""
        count = db.execute(
            "SELECT COUNT(*) FROM kpi_points WHERE profile = ? AND job_id = ?", (profile, job_id)
        ).fetchone()[0]
        if count <= MAX_POINTS:
            return
        points = self._points(db, profile, job_id)
        # Down to three quarters: thinning does not run again for the next few epochs.
        kept = {(p.run, p.epoch) for p in thin(points, MAX_POINTS * 3 // 4)}
        for point in points:
            if (point.run, point.epoch) not in kept:
                db.execute(
                    "DELETE FROM kpi_points WHERE profile = ? AND job_id = ? AND run = ? "
                    "AND epoch = ?",
                    (profile, job_id, point.run, point.epoch),
                )

    def points(self, profile: str, job_id: str) -> list[EpochPoint]:
        """The training's KPIs per epoch, in training order (run, then epoch)."""
        with self.store._reading():
            return self._points(self.store._db, profile, job_id)

    @staticmethod
    def _points(db: Any, profile: str, job_id: str) -> list[EpochPoint]:
        rows = db.execute(
            "SELECT run, epoch, kpi FROM kpi_points WHERE profile = ? AND job_id = ? "
            "ORDER BY run, epoch",
            (profile, job_id),
        ).fetchall()
        return [
            EpochPoint(int(r["run"]), int(r["epoch"]), clean_kpis(_loads(r["kpi"]))) for r in rows
        ]


def _loads(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
