"""The user's SLURM history and usage over the profile's one connection (no Textual).

Every method is one remote command at most: a history page (with the window's totals on the
first page) is one ``sacct`` pipeline, the usage of a list of ids is one ``sacct -j``, and a
foreign job's output (paths and the end of each file) is one ``scontrol``/``tail`` script.
Jobs this tool submitted are linked to their TAO record through the store (every attempt's
SLURM id).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import replace

from tao_slurm_tui.core.accounting import (
    HistoryEntry,
    HistoryPage,
    HistoryQuery,
    Usage,
    links_by_slurm_id,
    window_words,
)
from tao_slurm_tui.core.history_query import history_command, parse_history_output, usage_command
from tao_slurm_tui.core.job_output import JobOutput, job_output_command, parse_job_output
from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.errors import BadInput, OperationFailed
from tao_slurm_tui.remote.connection import Remote
from tao_slurm_tui.services.store import JobStore

USAGE_CHUNK = 500
"""Ids per ``sacct -j`` call when asking for many jobs' usage (keeps the argv short)."""


class HistoryService:
    """History pages, usage figures and output paths for one profile."""

    def __init__(self, conn: Remote, store: JobStore, profile_name: str) -> None:
        """Use ``conn`` for the remote commands and ``store`` to link TAO records."""
        self.conn = conn
        self.store = store
        self.profile_name = profile_name
        self.round_trips = 0
        """Remote commands sent so far (the paging test counts them)."""

    async def _run(self, command: str) -> str:
        self.round_trips += 1
        result = await self.conn.run(command)
        return result.stdout

    async def page(self, query: HistoryQuery) -> HistoryPage:
        """One page of the window: one remote command.

        Raises:
            BadInput: the query is invalid.
            OperationFailed: sacct failed or its output was cut short.
        """
        nonce = secrets.token_hex(8)  # frames the rows: no job's name can forge one
        try:
            command = history_command(query, nonce)
        except ValueError as exc:
            raise BadInput(f"{exc}.") from None
        page = parse_history_output(await self._run(command), nonce)
        if page.error:
            raise OperationFailed(f"Could not read the job history: {page.error}.")
        if page.summary is not None:
            page.summary = replace(page.summary, window=window_words(query.since))
        return page

    async def usage(self, slurm_ids: Iterable[str]) -> dict[str, HistoryEntry]:
        """The accounting of the given SLURM ids (with steps), by id: one call per
        :data:`USAGE_CHUNK` ids. Ids sacct does not know are absent.

        Raises:
            OperationFailed: sacct failed.
        """
        ids = list(dict.fromkeys(i for i in slurm_ids if i))
        found: dict[str, HistoryEntry] = {}
        for start in range(0, len(ids), USAGE_CHUNK):
            nonce = secrets.token_hex(8)
            command = usage_command(ids[start : start + USAGE_CHUNK], nonce)
            page = parse_history_output(await self._run(command), nonce, paged=False)
            if page.error:
                raise OperationFailed(f"Could not read the jobs' accounting: {page.error}.")
            for entry in page.entries:
                found[entry.job_id] = entry
                found.setdefault(entry.raw_id, entry)
        return found

    def links(self) -> dict[str, JobRecord]:
        """Our TAO records by every SLURM id they were submitted under (retries too)."""
        return links_by_slurm_id(self.store.list_jobs(self.profile_name))

    async def job_usage(self, jobs: Iterable[JobRecord]) -> dict[str, Usage]:
        """Usage of the latest attempt of each finished job, by TAO id (one call)."""
        wanted = {j.id: j.slurm_job_id for j in jobs if j.status.terminal and j.slurm_job_id}
        if not wanted:
            return {}
        entries = await self.usage(wanted.values())
        return {tao: entries[sid].usage for tao, sid in wanted.items() if sid in entries}

    async def job_output(self, entry: HistoryEntry) -> JobOutput:
        """Where ``entry`` wrote StdOut/StdErr and the end of each readable file (one call).

        Raises:
            BadInput: the entry has no plain SLURM id (a pending array's meta row).
            OperationFailed: the reply was cut short.
        """
        try:
            command = job_output_command(entry)
        except ValueError as exc:
            raise BadInput(f"{exc}.") from None
        output = parse_job_output(await self._run(command))
        if output is None:
            raise OperationFailed(f"Could not find where {entry.job_id} wrote its output.")
        return output
