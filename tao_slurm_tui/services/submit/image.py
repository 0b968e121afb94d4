"""Phase 3 of a submission, **prepare image**: how the job gets its container image.

:func:`prepare_image` asks :class:`~tao_slurm_tui.services.images.ImageService` (cache hit, a
conversion job, or one already in flight; one round trip, a second to submit a conversion).
A dry run and a retry prepare nothing: :func:`image_at_start` is the plan the batch script can
carry by itself -- run from the cached SQSH file when it is valid at start, else the registry
image -- so neither asks the cluster about the image nor submits a conversion.
"""

from __future__ import annotations

from collections.abc import Iterable

from tao_slurm_tui.core.launch import LaunchExtras
from tao_slurm_tui.core.partitions import PartitionLimits, split_partitions
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.spec import ResolvedStep
from tao_slurm_tui.remote.connection import RemoteFiles
from tao_slurm_tui.services.backend import ProgressCallback, SubmitStage
from tao_slurm_tui.services.images import ImageService, SqshPlan, cache_dir_for


async def prepare_image(
    conn: RemoteFiles,
    profile: Profile,
    step: ResolvedStep,
    limits: PartitionLimits,
    report: ProgressCallback,
) -> SqshPlan:
    """Decide the step's image; submit (or find) its SQSH conversion job when needed.

    Args:
        conn: the profile's connection.
        profile: the cache dir, conversion partition and SQSH settings.
        step: the resolved step.
        limits: MaxTime per partition (caps the conversion job's wall time).
        report: the submission's progress.

    Raises:
        OperationFailed: the conversion job could not be submitted (SLURM's message).
    """
    ref = step.spec.image_ref
    if step.spec.use_sqsh or ref.is_sqsh:
        report(SubmitStage.SQSH, f"preparing the image {ref.canonical}")
    conversion = split_partitions(profile.conversion_partition or step.plan.partition)[:1]
    return await ImageService(conn, profile).prepare(
        ref,
        use_sqsh=step.spec.use_sqsh,
        spec_partition=step.plan.partition,
        max_time_seconds=limits.get(conversion[0]) if conversion else None,
        report=lambda detail: report(SubmitStage.SQSH, detail),
    )


def image_at_start(step: ResolvedStep, profile: Profile) -> SqshPlan:
    """The image plan the script decides at start, with no round trip: a ``.sqsh`` image runs
    as it is; with SQSH on, the cached file when it is valid then, else the registry image."""
    ref = step.spec.image_ref
    if ref.is_sqsh:
        return SqshPlan(action="direct", sqsh_path=ref.sqsh_path, image_override=ref.sqsh_path)
    if not step.spec.use_sqsh:
        return SqshPlan(action="off")
    path = ref.sqsh_cache_path(cache_dir_for(profile))
    return SqshPlan(action="cached", sqsh_path=path, sqsh_fallback=path)


def preview_warning(step: ResolvedStep, image: SqshPlan) -> str:
    """What a dry run says about the image it did not prepare ('' when there is nothing)."""
    if not image.sqsh_fallback:
        return ""
    return (
        f"The SQSH image {image.sqsh_path} is looked up (or converted) when the job is "
        "submitted; the script shown runs from it when it is valid at start, else from "
        f"{step.spec.image_ref.canonical}."
    )


def launch_extras(
    image: SqshPlan, *, after: str = "", exclude_nodes: Iterable[str] = ()
) -> LaunchExtras:
    """What the submission adds to the step's plan: the SQSH image, and the dependency on the
    conversion job and on the previous pipeline step (``after``: its SLURM id)."""
    dependency = [image.dependency] if image.dependency else []
    if after:
        dependency.append(f"afterok:{after}")
    return LaunchExtras.checked(
        exclude_nodes=exclude_nodes,
        dependency=",".join(dependency),
        image_override=image.image_override,
        sqsh_fallback=image.sqsh_fallback,
    )
