"""Phase 1 of a submission, **check**: what only the cluster and the state DB can say.

The spec itself was resolved before (every rule of :func:`tao_slurm_tui.core.spec.resolve`,
the wall time against the cluster's own MaxTime included); this phase asks, in ONE round trip,
whether every input path, every cluster path of the experiment spec and every mount source
exists (``test -e``; all missing ones are named, by field, in the words the form uses: Pyxis
stops a job whose mount source is missing the second it starts) and whether the name is free on
the cluster too (a job of that name pending there, or its files staged by
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
from tao_slurm_tui.core.spec.cluster_rules import cluster_paths
from tao_slurm_tui.core.spec.problems import Problem, Refused
from tao_slurm_tui.core.spec.rules import Subject, name_taken, path_problems
from tao_slurm_tui.core.words import plural
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
    source: str = "spec",
) -> Checked:
    """Check the step's paths and its name on the cluster (one round trip).

    Args:
        source: how sentences name the spec (its file).

    Raises:
        Refused: missing input paths, spec paths or mount sources (by field).
        BadInput: the name taken (in the state DB since the job was resolved, by a live job,
            or by another workstation's staged files).
    """
    existing = store.get(profile_name, step.name)
    if existing is not None and existing.submitted:
        # Submitted since the job was resolved (another window, a script): the same words.
        raise BadInput(name_taken(existing, profile_name))
    labels = step.spec.labelled_paths()
    to_check = list(dict.fromkeys([*labels, *cluster_paths(step.spec, profile)]))
    tao = step.spec.tao
    if tao is not None:
        report(
            SubmitStage.CHECKING,
            f"{tao.network} {tao.action}: experiment spec valid for TAO {tao.version}; "
            f"{plural(len(tao.datasets), 'dataset path')} to find",
        )
    report(SubmitStage.CHECKING, f"checking {plural(len(to_check), 'path')} on the cluster")
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
    missing = set(parse_missing(result.stdout))
    if missing:
        exists = {path: path not in missing for path in to_check}
        action = step.name[len(step.pipeline_id) + 1 :] if step.index else ""
        subject = Subject(step.spec, step.index, action, step.pipeline_id)
        problems = path_problems(subject, profile, exists)
        # What no path rule names (a TAO dataset key): with its key, under the TAO table.
        told = " ".join(p.text for p in problems)
        others = [_named(p, labels.get(p, "")) for p in to_check if p in missing and p not in told]
        if others:
            problems.append(_missing_datasets(others))
        raise Refused(problems, source)
    if existing is None:
        _refuse_taken_on_cluster(step.name, *parse_taken(result.stdout))
    return Checked(existing)


def _named(path: str, label: str) -> str:
    """A missing path with the spec key that names it (a TAO dataset key, a [specs] key)."""
    if not label or label == "inputs":
        return path
    return f"{path} ({label})"


def _missing_datasets(named: list[str]) -> Problem:
    verb = "does" if len(named) == 1 else "do"
    return Problem(
        "tao",
        f"{plural(len(named), 'dataset path')} {verb} not exist on the cluster: "
        f"{', '.join(named)}; stage the data on the shared filesystem or fix the paths",
        form="located",
        rule="dataset paths",
    )


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
