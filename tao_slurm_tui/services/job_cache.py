"""The monitor's copy of a profile's jobs: read from the store only where it changed.

A tick must stay cheap with a long history: every job that ever ran is a row, but only the
active ones are polled. :class:`JobCache` holds every job of one profile as the store last had
it and, after a write by anyone (this process, a CLI verb in another), reads again only the rows
written since (the store's change number, schema 4); everything only after a deletion (rare: a
refused submission) or the first time.

It also remembers, per active job, the inputs of its last merge (the record and what squeue and
sacct said), so that a job nothing new is known about is not merged again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.services.store import JobStore

MergeInputs = tuple[Any, ...]
"""What a merge saw of one job: its SLURM id, squeue's fields, sacct's rows."""


class JobCache:
    """Every job of one profile (store order), and the inputs of each active job's last merge."""

    def __init__(self, store: JobStore, profile_name: str) -> None:
        self.store = store
        self.profile_name = profile_name
        self._jobs: dict[str, JobRecord] = {}
        self._version: tuple[int, int] | None = None
        """The store's version the cache matches (None: read again before use)."""
        self._changes: tuple[int, int] | None = None
        """The store's (change number, deletions) when the cache was last read from it."""
        self._merged: dict[str, tuple[JobRecord, MergeInputs]] = {}

    # ------------------------------------------------------------------ records

    def jobs(self) -> list[JobRecord]:
        """Every job of the profile, up to date with the store."""
        version = self.store.version()
        if version != self._version:
            changes = self.store.changes()  # before reading: a later write is read next time
            known = self._changes
            if known is None or changes[1] != known[1] or not self._jobs:
                self._jobs = {j.id: j for j in self.store.list_jobs(self.profile_name)}
            else:
                for job in self.store.jobs_changed_since(self.profile_name, known[0]):
                    self._jobs[job.id] = job
            self._changes = changes
            self._version = version
        return list(self._jobs.values())

    def behind_store(self) -> bool:
        """True when the store was written since the cache last matched it."""
        return self.store.version() != self._version

    def records(self) -> list[JobRecord]:
        """The cached jobs as they are (no store access)."""
        return list(self._jobs.values())

    def get(self, job_id: str) -> JobRecord | None:
        """One cached job (no store access)."""
        return self._jobs.get(job_id)

    def read_back(self, job_ids: Iterable[str], *, stale: bool) -> None:
        """Read ``job_ids`` again from the store after this process wrote them.

        Args:
            job_ids: the jobs just written.
            stale: someone else wrote during the tick: their rows are read next time (the change
                number stays where the cache was last read, so that read takes every row
                written since, this tick's own few rows too).
        """
        for job_id in job_ids:
            fresh = self.store.get(self.profile_name, job_id)
            if fresh is None:
                self._jobs.pop(job_id, None)
                continue
            self._jobs[job_id] = fresh
            merged = self._merged.get(job_id)
            if merged is not None:
                self._merged[job_id] = (fresh, merged[1])
        self._version = None if stale else self.store.version()

    def reload(self, job_ids: Iterable[str]) -> None:
        """Read ``job_ids`` again now, and everything written since on the next :meth:`jobs`."""
        for job_id in job_ids:
            fresh = self.store.get(self.profile_name, job_id)
            if fresh is not None:
                self._jobs[job_id] = fresh
        self._version = None

    # ------------------------------------------------------------------ merges

    def merged_with(self, job: JobRecord, inputs: MergeInputs) -> bool:
        """True when ``job`` (this very record) was last merged from these same inputs."""
        last = self._merged.get(job.id)
        return last is not None and last[0] is job and last[1] == inputs

    def remember_merge(self, job: JobRecord, inputs: MergeInputs) -> None:
        """Note what the merge of ``job`` saw."""
        self._merged[job.id] = (job, inputs)

    def keep_merges_of(self, job_ids: Iterable[str]) -> None:
        """Forget the merges of every other job (ended ones: memory stays bound by the active
        jobs, not by every job that ever ran)."""
        self._merged = {i: self._merged[i] for i in job_ids if i in self._merged}

    @property
    def merges_remembered(self) -> int:
        """How many jobs' last merge inputs are kept."""
        return len(self._merged)
