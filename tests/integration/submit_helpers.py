"""Resolving a spec for the submitter on the sandbox, as the back end does before submitting."""

from __future__ import annotations

from typing import Any

from tao_slurm_tui.core.models import SubmitResult
from tao_slurm_tui.core.spec import ResolveContext, ResolvedJob, SpecDraft, resolve
from tao_slurm_tui.services.submit import Submitter


async def resolved(submitter: Submitter, draft: SpecDraft) -> ResolvedJob:
    """``draft`` resolved on the submitter's profile against what the CLI's ``submit`` asks
    first: the cluster's own MaxTime (``partition_limits``) and the state DB's jobs.

    Raises:
        BadInput: the one sentence the CLI would print.
    """
    limits = await submitter.partition_limits()
    jobs = {job.id: job for job in submitter.store.list_jobs(submitter.profile_name)}
    context = ResolveContext(
        partition_limits=limits, jobs=jobs, profile_name=submitter.profile_name
    )
    return resolve(draft, submitter.profile, context).require()


async def submit(submitter: Submitter, draft: SpecDraft, **options: Any) -> SubmitResult:
    """Resolve ``draft`` (:func:`resolved`), then submit it (``options``: ``dry_run``,
    ``on_progress``)."""
    return await submitter.submit(await resolved(submitter, draft), **options)
