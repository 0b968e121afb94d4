"""Phase 1 of a submission, **check**: what only the cluster and the state DB can say.

The spec itself was resolved before (every rule of :func:`tao_slurm_tui.core.spec.resolve`,
the wall time against the cluster's own MaxTime included); this phase asks, in ONE round trip,
whether every input path exists (``test -e``, all missing ones listed at once) and whether the
name is free on the cluster too (a job of that name pending there, or its files staged by
another workstation or state DB). Nothing is staged before it passes.

SLURM's own placement check (``sbatch --test-only``: could any node ever hold the request) runs
in the same remote command as the submission (:func:`~.commands.sbatch_command`): it needs the
staged script and the SQSH dependency, and costs no extra round trip there.
"""

from __future__ import annotations

from dataclasses import dataclass

from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.spec import ResolvedStep
from tao_slurm_tui.core.spec.rules import name_taken
from tao_slurm_tui.errors import BadInput
from tao_slurm_tui.remote.connection import RemoteFiles
from tao_slurm_tui.services.backend import ProgressCallback, SubmitStage
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.services.submit.commands import (
    check_paths_command,
    name_taken_command,
    parse_missing,
    parse_taken,
)


@dataclass(frozen=True)
class Checked:
    """What the check found besides "go ahead"."""

    earlier: JobRecord | None = None
    """A record an earlier try of this job left, not submitted (refused, lost connection,
    crash): its job may have reached SLURM, so submit-and-record looks it up by name first."""


async def check(
    conn: RemoteFiles,
    store: JobStore,
    profile_name: str,
    profile: Profile,
    step: ResolvedStep,
    report: ProgressCallback,
) -> Checked:
    """Check the step's input paths and its name on the cluster (one round trip).

    Raises:
        BadInput: missing input paths, or the name taken (in the state DB since the job was
            resolved, by a live job, or by another workstation's staged files).
    """
    existing = store.get(profile_name, step.name)
    if existing is not None and existing.submitted:
        # Submitted since the job was resolved (another window, a script): the same words.
        raise BadInput(name_taken(existing, profile_name))
    labels = step.spec.labelled_paths()
    to_check = list(labels)
    tao = step.spec.tao
    if tao is not None:
        report(
            SubmitStage.CHECKING,
            f"{tao.network} {tao.action}: experiment spec valid for TAO {tao.version}; "
            f"{len(tao.datasets)} dataset path(s) to find",
        )
    report(SubmitStage.CHECKING, f"checking {len(to_check)} input path(s) on the cluster")
    command = check_paths_command(to_check)
    paths = step.plan.paths
    if existing is None:
        # Names are unique in this state DB only: another workstation (or state DB) may
        # have a job of this name pending under the same base_results_dir, whose staged
        # entrypoint the new one would overwrite. Same round trip.
        command += "; " + name_taken_command(
            profile.user, step.name, [paths.sbatch, paths.entrypoint]
        )
    result = await conn.run(command, timeout=profile.command_timeout)
    missing = parse_missing(result.stdout)
    if missing:
        named = [_named(path, labels.get(path, "")) for path in missing]
        raise BadInput(
            f"{len(missing)} input path(s) do not exist on the cluster: {', '.join(named)}; "
            "stage the data on the shared filesystem or fix the paths in the spec."
        )
    if existing is None:
        _refuse_taken_on_cluster(step.name, *parse_taken(result.stdout))
    return Checked(existing)


def _named(path: str, label: str) -> str:
    """A missing path with the spec key that names it (a TAO dataset key, a [specs] key)."""
    if not label or label == "inputs":
        return path
    return f"{path} ({label})"


def _refuse_taken_on_cluster(name: str, live: list[str], staged: list[str]) -> None:
    if live:
        raise BadInput(
            f"A job named '{name}' is already pending or running on the cluster (SLURM "
            f"job {live[0]}) but is not in this state database (another workstation?); give "
            f"the new job another name, or cancel that one with 'scancel {live[0]}'."
        )
    if staged:
        raise BadInput(
            f"A job named '{name}' was already staged on the cluster ({staged[0]}) "
            "by another workstation or state database; give the new job another name so "
            "neither overwrites the other's files."
        )
