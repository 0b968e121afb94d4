"""Render the batch script and the entrypoint of a resolved job from the Jinja2 templates.

Pure: the templates are read from the packaged ``templates/`` directory, nothing else is
touched. Rendering decides nothing and checks nothing: every value comes from the step's
:class:`~tao_slurm_tui.core.launch.LaunchPlan` (decided and checked once, when the job was
resolved) and the submission's :class:`~tao_slurm_tui.core.launch.LaunchExtras`. Every value that
reaches a shell command is quoted here with :mod:`shlex` (via :mod:`tao_slurm_tui.core.quoting`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING

import jinja2

from tao_slurm_tui.core import images, quoting
from tao_slurm_tui.core.launch import LaunchExtras, LaunchPlan, registry_of
from tao_slurm_tui.core.train_command import MAX_NO_PROGRESS
from tao_slurm_tui.resources import templates_dir

if TYPE_CHECKING:
    from tao_slurm_tui.core.spec.model import JobSpec
    from tao_slurm_tui.core.spec.resolver import ResolvedJob

SBATCH_TEMPLATE = "sbatch.sh.j2"
ENTRYPOINT_TEMPLATE = "entrypoint.sh.j2"

MAX_RETRIES = 10
"""Self-requeues on infrastructure failures before the job is left failed."""

SINGLE_NODE_UNSET = (
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "SLURM_NTASKS_PER_NODE",
    "SLURM_TASKS_PER_NODE",
    "SLURM_STEP_NUM_TASKS",
    "SLURM_STEP_TASKS_PER_NODE",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_NODEID",
    "PMI_RANK",
    "PMI_SIZE",
    "PMIX_RANK",
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "NODE_RANK",
)
"""Per-task variables removed inside a single-node container: TAO spawns its own ranks, and
launchers (Lightning, torchrun) that see SLURM's single task would otherwise run one rank."""

PREVIEW_AFTER = "0"
"""Stand-in SLURM id of a pipeline's previous step in a preview (replaced by words)."""

_TAO_IMAGE = "--container-image=$TAO_IMAGE"


@cache
def template_environment() -> jinja2.Environment:
    """The Jinja2 environment over the packaged templates (``StrictUndefined``)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # shell, not HTML: quoting is done explicitly with the q filter
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["q"] = quoting.quote
    return env


def default_infra_check() -> str:
    """Text of the bash function ``tao_infra_failure FILE...`` from :mod:`core.retry`.

    Imported lazily: the retry classifier owns the patterns and may change them without
    touching rendering.
    """
    from tao_slurm_tui.core import retry

    return retry.bash_infra_check()


def export_lines(env: Mapping[str, str]) -> list[str]:
    """``export KEY='value'`` lines whose values survive any character when sourced by bash."""
    return [f"export {key}={quoting.quote(value)}" for key, value in env.items()]


def _step_script(plan: LaunchPlan) -> str:
    """What each srun task runs (inside the container): set per-node state, exec the entrypoint."""
    run = f"exec bash {quoting.quote(plan.paths.entrypoint)}"
    if plan.shape.multi_node:
        # SLURM_NODEID is per node only inside the step; exporting it in the batch script
        # would give every node rank 0 (the reference snippet's bug).
        return f'export NODE_RANK="$SLURM_NODEID"; {run}'
    return f"unset {' '.join(SINGLE_NODE_UNSET)}; {run}"


def srun_lines(plan: LaunchPlan, image: str, extras: LaunchExtras) -> list[str]:
    """The launch step, one option a line (the command after ``--`` stays on one line)."""
    shape = plan.shape
    srun = [
        "srun",
        f"--nodes={shape.nodes}",
        f"--ntasks={shape.ntasks}",
        f"--ntasks-per-node={shape.ntasks_per_node}",
        # srun of SLURM 22.05 no longer inherits --cpus-per-task from sbatch.
        f"--cpus-per-task={shape.cpus_per_task}",
        "--kill-on-bad-exit=1",
    ]
    if plan.runtime == "pyxis":
        srun += [
            # With a SQSH fallback the script picks the image at start ($TAO_IMAGE).
            _TAO_IMAGE if extras.sqsh_fallback else f"--container-image={image}",
            f"--container-mounts={','.join(plan.mounts)}",
            f"--container-env={','.join(plan.container_env)}",
        ]
    lines = [
        '--container-image="$TAO_IMAGE"' if a == _TAO_IMAGE else quoting.quote(a) for a in srun
    ]
    lines.append(quoting.join(["--", "bash", "-c", _step_script(plan)]))
    return lines


def template_context(
    plan: LaunchPlan,
    extras: LaunchExtras,
    *,
    infra_check: str | None = None,
    max_retries: int = MAX_RETRIES,
) -> dict[str, object]:
    """The sbatch template's variables: the plan, with what the submission adds."""
    image = plan.image
    registry = plan.registry
    if extras.image_override:
        # The cached SQSH file (a valid override: LaunchExtras.checked parsed it).
        ref = images.parse_image(extras.image_override)
        image, registry = ref.pyxis, registry_of(ref, plan.runtime == "pyxis")
    check = infra_check if infra_check is not None else default_infra_check()
    pulled = images.parse_image(image) if registry else None
    return {
        "job_id": plan.job_id,
        "partition": plan.partition,
        "account": plan.account,
        "shape": plan.shape,
        "time_limit": plan.time_limit,
        "timeout_minutes": plan.timeout_minutes,
        "use_requeue": plan.use_requeue,
        "runtime": plan.runtime,
        "image": image,
        "paths": plan.paths,
        "exclude": extras.exclude,
        "dependency": extras.dependency,
        "exports": export_lines(plan.environment),
        "rendezvous": list(plan.rendezvous),
        "srun_lines": srun_lines(plan, image, extras),
        "infra_check": check.rstrip("\n") if plan.use_requeue else "",
        "max_retries": max_retries,
        "max_timeout_requeues": plan.max_timeout_requeues,
        "checkpoint_dir": plan.checkpoint_dir if plan.use_requeue else "",
        "max_no_progress": MAX_NO_PROGRESS,
        "registry": registry,
        "pull_repository": pulled.repository if pulled else "",
        "pull_reference": (pulled.digest or pulled.tag) if pulled else "",
        "sqsh_fallback": extras.sqsh_fallback,
        "require_sqsh": plan.require_sqsh,
    }


def render_sbatch(
    plan: LaunchPlan,
    extras: LaunchExtras | None = None,
    *,
    infra_check: str | None = None,
    max_retries: int = MAX_RETRIES,
) -> str:
    """The batch script of a planned step.

    Args:
        plan: the step's launch plan (from its resolved job, or as stored with the job).
        extras: what the submission adds: ``--exclude``, ``--dependency``, the SQSH image.
        infra_check: text of the bash function ``tao_infra_failure`` (default from
            :func:`tao_slurm_tui.core.retry.bash_infra_check`; used only with requeue on).
        max_retries: self-requeues on infrastructure failures.
    """
    context = template_context(
        plan, extras or LaunchExtras(), infra_check=infra_check, max_retries=max_retries
    )
    return template_environment().get_template(SBATCH_TEMPLATE).render(**context)


def render_entrypoint(spec: JobSpec) -> str:
    """The content of ``entrypoints/job_<id>.sh``: the spec's command, run by bash."""
    command = spec.command.rstrip("\n")  # the template ends the line
    return (
        template_environment()
        .get_template(ENTRYPOINT_TEMPLATE)
        .render(job_id=spec.name, command=command)
    )


# ----------------------------------------------------------------------------------- previews


def preview_extras(index: int) -> LaunchExtras:
    """A preview's extras for step ``index``: a later step waits for a stand-in id."""
    return LaunchExtras(dependency=f"afterok:{PREVIEW_AFTER}" if index else "")


def show_preview_dependency(script: str) -> str:
    """A preview's script with the stand-in previous-step id replaced by what goes there."""
    return script.replace(f"afterok:{PREVIEW_AFTER}\n", "afterok:<SLURM id of the previous step>\n")


def preview_scripts(job: ResolvedJob) -> list[str]:
    """The batch script of every step of ``job`` (one for a single job), as a preview: each
    later step waits for a placeholder previous-step id."""
    return [
        show_preview_dependency(render_sbatch(step.plan, preview_extras(index)))
        for index, step in enumerate(job.steps)
    ]


def join_steps(texts: Sequence[str], job: ResolvedJob) -> str:
    """Several steps' scripts (or entrypoints) as one text, each under a header line."""
    if len(texts) == 1:
        return texts[0]
    steps = job.steps
    parts = []
    for index, (step, text) in enumerate(zip(steps, texts, strict=True)):
        after = f", after {steps[index - 1].name} completed" if index else ""
        parts.append(f"# ===== step {index + 1} of {len(steps)}: {step.name}{after} =====\n{text}")
    return "\n".join(parts)


def render_job(job: ResolvedJob, *, entrypoint: bool = False) -> str:
    """What ``render`` shows for ``job``: its batch script (or entrypoint); for a pipeline
    every step's, one after the other under a header line."""
    if entrypoint:
        return join_steps([render_entrypoint(step.spec) for step in job.steps], job)
    return join_steps(preview_scripts(job), job)
