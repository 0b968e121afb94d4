"""Render the sbatch script and the entrypoint of a job from the Jinja2 templates.

Pure: the templates are read from the packaged ``templates/`` directory, nothing else is
touched. Every value that reaches a shell command is quoted here with :mod:`shlex` (via
:mod:`tao_slurm_tui.core.quoting`); ``#SBATCH`` values are validated to contain no characters
that would need quoting.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, TypedDict, Unpack

import jinja2

from tao_slurm_tui.core import images, partitions, quoting
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.shaping import Shape
from tao_slurm_tui.errors import BadInput
from tao_slurm_tui.resources import templates_dir

if TYPE_CHECKING:
    from tao_slurm_tui.core.profile import Profile
    from tao_slurm_tui.core.spec import JobSpec

SBATCH_TEMPLATE = "sbatch.sh.j2"
ENTRYPOINT_TEMPLATE = "entrypoint.sh.j2"

MAX_RETRIES = 10
"""Self-requeues on infrastructure failures before the job is left failed."""

MASTER_PORT = "29500"
"""Rendezvous port of multi-node jobs (the TAO container contract); ``[env]`` may override it."""

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

_DIRECTIVE_SAFE_RE = re.compile(r"^[A-Za-z0-9._/+=:@,~-]+$")
_NODES_RE = re.compile(r"^[A-Za-z0-9._\-\[\],]+$")
_DEPENDENCY_RE = re.compile(r"^[A-Za-z0-9_:+,?]+$")


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


@dataclass(frozen=True)
class LaunchPlan:
    """Everything the sbatch template needs, computed and checked up front."""

    job_id: str
    partition: str
    account: str
    shape: Shape
    time_limit: str
    timeout_minutes: int
    use_requeue: bool
    runtime: str
    image: str
    paths: JobPaths
    exclude: str
    dependency: str
    exports: list[str]
    rendezvous: list[str]
    srun_lines: list[str]
    infra_check: str
    max_retries: int
    max_timeout_requeues: int = 5
    registry: str = ""
    sqsh_fallback: str = ""
    require_sqsh: bool = False

    def context(self) -> dict[str, object]:
        """Template variables."""
        return {field: getattr(self, field) for field in self.__dataclass_fields__}


def _check_directive(value: str, what: str) -> str:
    if not _DIRECTIVE_SAFE_RE.match(value):
        raise BadInput(
            f"{what} {value!r} contains characters an #SBATCH line cannot carry "
            "(spaces, quotes, '%', '$'); use a plain path or name."
        )
    return value


def _mounts(spec_mounts: Sequence[str], base: str) -> list[str]:
    """The spec's mounts plus ``base``, unless a same-path mount already covers it: the
    entrypoint and results live under ``base`` and must be visible in the container."""
    mounts = list(spec_mounts)
    for mount in mounts:
        parts = mount.split(":")
        src, dst = parts[0].rstrip("/") or "/", (parts[1] if len(parts) > 1 else parts[0])
        same = (dst.rstrip("/") or "/") == src
        if same and (base == src or base.startswith(src.rstrip("/") + "/")):
            return mounts
    return [*mounts, base]


def _step_script(shape: Shape, entrypoint: str) -> str:
    """What each srun task runs (inside the container): set per-node state, exec the entrypoint."""
    run = f"exec bash {quoting.quote(entrypoint)}"
    if shape.multi_node:
        # SLURM_NODEID is per node only inside the step; exporting it in the batch script
        # would give every node rank 0 (the reference snippet's bug).
        return f'export NODE_RANK="$SLURM_NODEID"; {run}'
    return f"unset {' '.join(SINGLE_NODE_UNSET)}; {run}"


def plan_launch(
    spec: JobSpec,
    profile: Profile,
    *,
    base: str | None = None,
    partition_limits: partitions.PartitionLimits | None = None,
    exclude_nodes: Iterable[str] = (),
    dependency: str | None = None,
    image_override: str | None = None,
    infra_check: str | None = None,
    max_retries: int = MAX_RETRIES,
    sqsh_fallback: str | None = None,
    require_sqsh: bool = False,
    pipeline_env: Mapping[str, str] | None = None,
) -> LaunchPlan:
    """Compute and check every value of the batch script (see :func:`render_sbatch`).

    Raises:
        BadInput: no partition, wall time above MaxTime, unusable base dir, bad image,
            exclude list or dependency.
    """
    base_dir = (base if base is not None else profile.results_root).rstrip("/") or "/"
    if not base_dir.startswith("/"):
        raise BadInput(
            f"base_results_dir {base_dir!r} must be an absolute path on the cluster's shared "
            "filesystem; set it in the profile."
        )
    _check_directive(base_dir, "base_results_dir")
    paths = JobPaths(base_dir, spec.name)

    partition = spec.effective_partition(profile)
    if not partition:
        raise BadInput("no partition: set 'partition' in the spec or in the profile.")
    _check_directive(partition, "partition")
    problem = partitions.check_wall_time(spec.time_hours, partition, partition_limits)
    if problem:
        raise BadInput(problem)
    account = spec.effective_account(profile)
    if account:
        _check_directive(account, "account")

    exclude = ",".join(n.strip() for n in exclude_nodes if n.strip())
    if exclude and not _NODES_RE.match(exclude):
        raise BadInput(f"exclude list {exclude!r} is not a SLURM node list.")
    dep = (dependency or "").strip()
    if dep and not _DEPENDENCY_RE.match(dep):
        raise BadInput(f"dependency {dep!r} is not a SLURM dependency such as afterok:123.")

    if sqsh_fallback:
        if not sqsh_fallback.startswith("/"):
            raise BadInput(f"SQSH path {sqsh_fallback!r} must be an absolute path on the cluster.")
        _check_directive(sqsh_fallback, "SQSH path")
    image_text = image_override or spec.image
    try:
        image = images.parse_image(image_text)
    except images.ImageError as exc:
        raise BadInput(f"image: {exc}.") from None

    shape = spec.shape(
        max_gpus_per_node=profile.max_gpus_per_node,
        max_cpus_per_task=profile.max_cpus_per_task,
    )
    exported: dict[str, str] = {
        "TAO_JOB_ID": spec.name,
        "TAO_API_RESULTS_DIR": paths.results_root,
        **(pipeline_env or {}),
        **spec.env,
    }
    rendezvous: list[str] = []
    container_env = list(exported)
    if shape.multi_node:
        master_port = spec.env.get("MASTER_PORT", MASTER_PORT)
        rendezvous = [
            f"export WORLD_SIZE={shape.nodes}",
            f"export NUM_GPU_PER_NODE={shape.gpus_per_node}",
            f"export MASTER_PORT={quoting.quote(master_port)}",
            'MASTER_ADDR=$(scontrol show hostname "$SLURM_JOB_NODELIST" | head -n 1)',
            "export MASTER_ADDR",
        ]
        container_env += [
            k
            for k in ("WORLD_SIZE", "NUM_GPU_PER_NODE", "MASTER_PORT", "MASTER_ADDR")
            if k not in container_env
        ]

    srun = [
        "srun",
        f"--nodes={shape.nodes}",
        f"--ntasks={shape.ntasks}",
        f"--ntasks-per-node={shape.ntasks_per_node}",
        # srun of SLURM 22.05 no longer inherits --cpus-per-task from sbatch.
        f"--cpus-per-task={shape.cpus_per_task}",
        "--kill-on-bad-exit=1",
    ]
    if profile.container_runtime == "pyxis":
        srun += [
            # With a SQSH fallback the script picks the image at start ($TAO_IMAGE).
            "--container-image=$TAO_IMAGE" if sqsh_fallback else f"--container-image={image.pyxis}",
            f"--container-mounts={','.join(_mounts(spec.container_mounts, base_dir))}",
            f"--container-env={','.join(container_env)}",
        ]
    # One option a line in the rendered script; the command after `--` stays on one line.
    srun_lines = [
        '--container-image="$TAO_IMAGE"'
        if arg == "--container-image=$TAO_IMAGE"
        else quoting.quote(arg)
        for arg in srun
    ]
    srun_lines.append(quoting.join(["--", "bash", "-c", _step_script(shape, paths.entrypoint)]))

    timeout_minutes = max(1, math.floor(spec.timeout_hours * 60 + 1e-9))
    return LaunchPlan(
        job_id=spec.name,
        partition=partition,
        account=account,
        shape=shape,
        time_limit=partitions.format_slurm_time(partitions.hours_to_seconds(spec.time_hours)),
        timeout_minutes=timeout_minutes,
        use_requeue=spec.use_requeue,
        runtime=profile.container_runtime,
        image=image.pyxis,
        paths=paths,
        exclude=exclude,
        dependency=dep,
        exports=export_lines(exported),
        rendezvous=rendezvous,
        srun_lines=srun_lines,
        infra_check=(
            (infra_check if infra_check is not None else default_infra_check()).rstrip("\n")
            if spec.use_requeue
            else ""
        ),
        max_retries=max_retries,
        max_timeout_requeues=profile.max_timeout_requeues,
        # A pulled image (not a .sqsh file): the script explains a refused NGC key.
        registry=(
            image.registry
            if profile.container_runtime == "pyxis" and image.registry and not image.is_sqsh
            else ""
        ),
        sqsh_fallback=sqsh_fallback or "",
        require_sqsh=require_sqsh,
    )


class LaunchOptions(TypedDict, total=False):
    """The optional keywords of :func:`plan_launch` (and so of :func:`render_sbatch`)."""

    base: str | None
    partition_limits: partitions.PartitionLimits | None
    exclude_nodes: Iterable[str]
    dependency: str | None
    image_override: str | None
    infra_check: str | None
    max_retries: int
    sqsh_fallback: str | None
    require_sqsh: bool
    pipeline_env: Mapping[str, str] | None


def pipeline_env(pipeline_id: str, step: int, previous_results_dir: str = "") -> dict[str, str]:
    """What a pipeline's step sees: ``TAO_PIPELINE_ID``, ``TAO_PIPELINE_STEP`` (1-based) and,
    from the second step on, ``TAO_PREVIOUS_RESULTS_DIR`` (the previous step's
    ``<base>/results/<id>``, where its container wrote its results)."""
    env = {"TAO_PIPELINE_ID": pipeline_id, "TAO_PIPELINE_STEP": str(step + 1)}
    if previous_results_dir:
        env["TAO_PREVIOUS_RESULTS_DIR"] = previous_results_dir
    return env


PREVIEW_AFTER = "0"
"""Stand-in SLURM id of a pipeline's previous step in a preview (replaced by words)."""


def show_preview_dependency(script: str) -> str:
    """A preview's script with the stand-in previous-step id replaced by what goes there."""
    return script.replace(f"afterok:{PREVIEW_AFTER}\n", "afterok:<SLURM id of the previous step>\n")


def render_steps(spec: JobSpec, profile: Profile, **options: Unpack[LaunchOptions]) -> list[str]:
    """The batch script of every step of ``spec`` (one for a single job), as a preview: each
    later step waits for a placeholder previous-step id and sees the previous step's results
    dir. ``options`` as :func:`render_sbatch`.

    Raises:
        BadInput: a value the cluster would refuse, in any step.
    """
    from tao_slurm_tui.core.spec import pipeline_steps

    steps = pipeline_steps(spec)
    if len(steps) == 1:
        return [render_sbatch(spec, profile, **options)]
    base = options.get("base") or profile.results_root
    scripts: list[str] = []
    previous = ""
    for index, step in enumerate(steps):
        step_options: LaunchOptions = {
            **options,
            "pipeline_env": pipeline_env(steps[0].name, index, previous),
        }
        if index:
            own = options.get("dependency") or ""
            step_options["dependency"] = ",".join(d for d in (own, f"afterok:{PREVIEW_AFTER}") if d)
        scripts.append(show_preview_dependency(render_sbatch(step, profile, **step_options)))
        previous = JobPaths(base, step.name).results_dir
    return scripts


def join_steps(texts: Sequence[str], spec: JobSpec) -> str:
    """Several steps' scripts (or entrypoints) as one text, each under a header line."""
    from tao_slurm_tui.core.spec import pipeline_steps

    if len(texts) == 1:
        return texts[0]
    steps = pipeline_steps(spec)
    parts = []
    for index, (step, text) in enumerate(zip(steps, texts, strict=True)):
        after = f", after {steps[index - 1].name} completed" if index else ""
        parts.append(f"# ===== step {index + 1} of {len(steps)}: {step.name}{after} =====\n{text}")
    return "\n".join(parts)


def render_sbatch(spec: JobSpec, profile: Profile, **options: Unpack[LaunchOptions]) -> str:
    """The batch script of ``spec`` for ``profile``.

    Args:
        spec: the validated job spec.
        profile: supplies partition/account fallbacks, runtime, node size and the results root.
        **options: see :func:`plan_launch`: ``base`` (remote root of the job's files; default
            ``profile.results_root``), ``partition_limits`` (MaxTime per partition in seconds;
            default the packaged list), ``exclude_nodes`` (``--exclude``, e.g. the node a retry
            failed on), ``dependency`` (e.g. ``afterok:<sqsh conversion job>``),
            ``image_override`` (the cached SQSH file), ``infra_check`` (text of the bash function
            ``tao_infra_failure``; default from :func:`tao_slurm_tui.core.retry.bash_infra_check`,
            used only with requeue on), ``max_retries`` (self-requeues on infrastructure
            failures), ``sqsh_fallback`` (SQSH file the script checks at start, magic ``hsqs``:
            run from it when valid, else warn in main.err and use the registry image) and
            ``require_sqsh`` (with ``sqsh_fallback``, stop instead of falling back) and
            ``pipeline_env`` (a pipeline step's variables, :func:`pipeline_env`).

    Raises:
        BadInput: a value the cluster would refuse (see :func:`plan_launch`).
    """
    plan = plan_launch(spec, profile, **options)
    return template_environment().get_template(SBATCH_TEMPLATE).render(**plan.context())


def render_pipeline(
    spec: JobSpec, profile: Profile, *, entrypoint: bool = False, **options: Unpack[LaunchOptions]
) -> str:
    """What ``render`` shows for ``spec``: its batch script (or entrypoint); for a pipeline
    every step's, one after the other under a header line."""
    from tao_slurm_tui.core.spec import pipeline_steps

    if entrypoint:
        return join_steps([render_entrypoint(s) for s in pipeline_steps(spec)], spec)
    return join_steps(render_steps(spec, profile, **options), spec)


def render_entrypoint(spec: JobSpec) -> str:
    """The content of ``entrypoints/job_<id>.sh``: the spec's command, run by bash."""
    command = spec.command.rstrip("\n")  # the template ends the line
    return (
        template_environment()
        .get_template(ENTRYPOINT_TEMPLATE)
        .render(job_id=spec.name, command=command)
    )
