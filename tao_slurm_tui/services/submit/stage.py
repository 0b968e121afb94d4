"""Phase 2 of a submission, **stage**: the job's files on the cluster, each written atomically.

The remote layout (:mod:`tao_slurm_tui.core.layout`): ``specs/<id>.json`` (``[specs]`` with
cluster paths converted), a ``[tao]`` job's checked experiment spec ``specs/<id>.yaml`` (TAO's
``-e`` file), ``env/<id>.json`` (mode 0600: ``[env]`` may hold tokens) and
``entrypoints/job_<id>.sh`` (the command, run by bash in the container). ``meta/<id>.json`` and
the batch script follow in submit-and-record, once the image is known.
"""

from __future__ import annotations

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.quoting import join
from tao_slurm_tui.core.render import render_entrypoint
from tao_slurm_tui.core.spec import ResolvedStep
from tao_slurm_tui.remote.connection import RemoteFiles
from tao_slurm_tui.services.backend import ProgressCallback, SubmitStage
from tao_slurm_tui.services.submit.commands import env_file, spec_file


async def stage(
    conn: RemoteFiles, profile: Profile, step: ResolvedStep, report: ProgressCallback
) -> None:
    """Create the job's directories and write its spec, environment and entrypoint."""
    paths = step.plan.paths
    report(SubmitStage.STAGING, f"creating the job layout under {paths.base}")
    await conn.run(
        join(["mkdir", "-p", "--", *paths.staging_dirs]),
        check=True,
        timeout=profile.command_timeout,
    )
    report(SubmitStage.STAGING, f"writing {paths.spec_json}")
    await conn.upload_text(paths.spec_json, spec_file(step))
    tao = step.spec.tao
    if tao is not None:
        report(SubmitStage.STAGING, f"writing {paths.tao_spec_yaml} ({tao.network} {tao.action})")
        await conn.upload_text(paths.tao_spec_yaml, tao.experiment)
    report(SubmitStage.STAGING, f"writing {paths.env_json} (mode 0600)")
    await conn.upload_text(paths.env_json, env_file(step), mode=0o600)
    report(SubmitStage.STAGING, f"writing {paths.entrypoint}")
    await conn.upload_text(paths.entrypoint, render_entrypoint(step.spec), mode=0o755)


async def unstage(conn: RemoteFiles, profile: Profile, step: ResolvedStep) -> None:
    """Remove every file the submission staged (SLURM refused the job: the name is free
    again, also for other workstations). Best effort: the caller ignores a failure."""
    paths = step.plan.paths
    files = [paths.spec_json, paths.env_json, paths.entrypoint, paths.meta_json, paths.sbatch]
    if step.spec.tao is not None:
        files.append(paths.tao_spec_yaml)
    await conn.run(join(["rm", "-f", "--", *files]), timeout=profile.command_timeout)
