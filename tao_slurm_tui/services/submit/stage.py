"""Phase 2 of a submission, **stage**: the job's files on the cluster, each written atomically.

The remote layout (:mod:`tao_slurm_tui.core.layout`): ``specs/<id>.json`` (``[specs]`` with
cluster paths converted), a ``[tao]`` job's checked experiment spec ``specs/<id>.yaml`` (TAO's
``-e`` file), ``env/<id>.json`` (mode 0600: ``[env]`` may hold tokens) and
``entrypoints/job_<id>.sh`` (the command, run by bash in the container). ``meta/<id>.json`` and
the batch script follow in submit-and-record, once the image is known.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.quoting import join
from tao_slurm_tui.core.render import render_entrypoint
from tao_slurm_tui.core.spec import ResolvedStep
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.remote.connection import RemoteError, RemoteFiles
from tao_slurm_tui.services.backend import ProgressCallback, SubmitStage
from tao_slurm_tui.services.disk_space import disk_full_error
from tao_slurm_tui.services.submit.commands import env_file, spec_file


async def stage(
    conn: RemoteFiles, profile: Profile, step: ResolvedStep, report: ProgressCallback
) -> None:
    """Create the job's directories and write its spec, environment and entrypoint.

    Raises:
        OperationFailed: a file system is full or over quota (which, whose, the figures);
            nothing staged is left behind.
        RemoteError: another failure to write.
    """
    paths = step.plan.paths
    report(SubmitStage.STAGING, f"creating the job layout under {paths.base}")
    async with _disk_full_told(conn, profile, step):
        await conn.run(
            join(["mkdir", "-p", "--", *paths.staging_dirs]),
            check=True,
            timeout=profile.command_timeout,
        )
        report(SubmitStage.STAGING, f"writing {paths.spec_json}")
        await conn.upload_text(paths.spec_json, spec_file(step))
        tao = step.spec.tao
        if tao is not None:
            report(
                SubmitStage.STAGING, f"writing {paths.tao_spec_yaml} ({tao.network} {tao.action})"
            )
            await conn.upload_text(paths.tao_spec_yaml, tao.experiment)
        report(SubmitStage.STAGING, f"writing {paths.env_json} (mode 0600)")
        await conn.upload_text(paths.env_json, env_file(step), mode=0o600)
        report(SubmitStage.STAGING, f"writing {paths.entrypoint}")
        await conn.upload_text(paths.entrypoint, render_entrypoint(step.spec), mode=0o755)


async def stage_launch(
    conn: RemoteFiles, profile: Profile, step: ResolvedStep, meta: str, script: str
) -> None:
    """Write ``meta/<id>.json`` and the batch script (mode 0600: it carries the [env] values),
    with :func:`stage`'s care for a full file system."""
    paths = step.plan.paths
    async with _disk_full_told(conn, profile, step):
        await conn.upload_text(paths.meta_json, meta)
        await conn.upload_text(paths.sbatch, script, mode=0o600)


@contextlib.asynccontextmanager
async def _disk_full_told(
    conn: RemoteFiles, profile: Profile, step: ResolvedStep
) -> AsyncIterator[None]:
    """A write that failed on a full file system (or quota) becomes the one sentence that
    says so; everything staged is removed first, so no half-staged job remains."""
    try:
        yield
    except RemoteError as exc:
        told = await disk_full_error(
            conn,
            profile,
            str(exc),
            fallback=step.plan.paths.base,
            then="free space there and submit again",
        )
        if told is None:
            raise
        with contextlib.suppress(TaoError):
            await unstage(conn, profile, step)
        raise told from None


async def unstage(conn: RemoteFiles, profile: Profile, step: ResolvedStep) -> None:
    """Remove every file the submission staged (SLURM refused the job: the name is free
    again, also for other workstations). Best effort: the caller ignores a failure."""
    paths = step.plan.paths
    files = [paths.spec_json, paths.env_json, paths.entrypoint, paths.meta_json, paths.sbatch]
    if step.spec.tao is not None:
        files.append(paths.tao_spec_yaml)
    # The job's own results directory goes too while it is empty (nothing ran in it).
    rmdir = join(["rmdir", "--", paths.results_dir])
    await conn.run(
        join(["rm", "-f", "--", *files]) + f"; {rmdir} 2>/dev/null; true",
        timeout=profile.command_timeout,
    )
