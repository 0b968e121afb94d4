"""The launch plan of one job: every value of its batch script, decided once when it is resolved.

:func:`plan_step` turns a validated step and the profile into a :class:`LaunchPlan` (the
partition and account with their profile fallbacks, the resource shape, the wall time and
timeout, the job's remote paths, the exported environment, the container's mounts). The plan is
computed once per step by :func:`tao_slurm_tui.core.spec.resolve`, rendered as often as needed
(:mod:`tao_slurm_tui.core.render`) and stored with the job, so a retry renders exactly what was
submitted -- never re-planned against a profile that may have changed since.

What only the submission knows is :class:`LaunchExtras`: the SLURM id of the previous pipeline
step or SQSH conversion (``--dependency``), the nodes a retry avoids (``--exclude``) and the SQSH
image (a cached file, or one the script checks at start).

Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tao_slurm_tui.core import images, partitions, quoting
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.shaping import Shape, shape_resources
from tao_slurm_tui.core.train_command import checkpoint_dir
from tao_slurm_tui.core.words import plural
from tao_slurm_tui.errors import BadInput

if TYPE_CHECKING:
    # Only read, never built here: core.spec resolves a draft and calls plan_step.
    from tao_slurm_tui.core.spec.model import JobSpec

MASTER_PORT = "29500"
"""Rendezvous port of multi-node jobs (the TAO container contract); ``[env]`` may override it."""

RENDEZVOUS_ENV = ("WORLD_SIZE", "NUM_GPU_PER_NODE", "MASTER_PORT", "MASTER_ADDR")
"""Variables a multi-node job's batch script sets for the container."""

PLAN_VERSION = 1
"""Version of :meth:`LaunchPlan.to_json`'s layout (stored with every job)."""

_DIRECTIVE_SAFE_RE = re.compile(r"^[A-Za-z0-9._/+=:@,~-]+\Z")
_NODES_RE = re.compile(r"^[A-Za-z0-9._\-\[\],]+\Z")
_DEPENDENCY_RE = re.compile(r"^[A-Za-z0-9_:+,?]+\Z")


class PlanRefused(ValueError):
    """A value the cluster would refuse, found while planning (one sentence, one field)."""

    def __init__(self, field: str, sentence: str) -> None:
        super().__init__(sentence)
        self.field = field
        """The spec key it belongs to (``""``: the profile's)."""
        self.sentence = sentence
        """What is wrong and what to do."""


@dataclass(frozen=True)
class LaunchPlan:
    """Every value of one step's batch script that does not depend on the submission."""

    job_id: str
    """The job's id and SLURM job name."""
    partition: str
    """``--partition``: the spec's, else the profile's (a comma list)."""
    account: str
    """``--account``: the spec's, else the profile's ('' none)."""
    shape: Shape
    """The resource request (:mod:`tao_slurm_tui.core.shaping`)."""
    time_limit: str
    """``--time`` as SLURM reads it."""
    timeout_minutes: int
    """The command is stopped after this long (``timeout_hours``)."""
    use_requeue: bool
    """``--requeue`` and the self-requeue hooks."""
    runtime: str
    """``pyxis`` or ``none`` (the profile's ``container_runtime``)."""
    image: str
    """The spec's image in Pyxis form."""
    registry: str
    """The registry a pulled image comes from ('' for a ``.sqsh`` file or without Pyxis): the
    script explains a refused NGC key."""
    paths: JobPaths
    """The job's remote layout."""
    environment: Mapping[str, str] = field(default_factory=dict)
    """What the script exports (the job's id and results root, a pipeline's variables, then
    ``[env]``), in order."""
    rendezvous: tuple[str, ...] = ()
    """A multi-node job's rendezvous lines."""
    mounts: tuple[str, ...] = ()
    """``--container-mounts`` (the spec's, plus the results root when they do not cover it)."""
    container_env: tuple[str, ...] = ()
    """``--container-env``: the variables the container sees."""
    max_timeout_requeues: int = 5
    """Self-requeues after ``timeout_hours`` (the profile's cap)."""
    require_sqsh: bool = False
    """Stop instead of falling back to the registry image when the SQSH file is bad."""
    checkpoint_dir: str = ""
    """Where a TAO training writes its checkpoints: the script requeues it after a timeout only
    while runs write them (:mod:`tao_slurm_tui.core.train_command`); '' for other commands."""

    def to_json(self) -> dict[str, Any]:
        """The plan as JSON data (stored with the job; :meth:`from_json` reads it back)."""
        return {
            "version": PLAN_VERSION,
            "job_id": self.job_id,
            "partition": self.partition,
            "account": self.account,
            "shape": {
                "nodes": self.shape.nodes,
                "gpus_per_node": self.shape.gpus_per_node,
                "cpus_per_task": self.shape.cpus_per_task,
                "exclusive": self.shape.exclusive,
                "ntasks_per_node": self.shape.ntasks_per_node,
                "gpu_type": self.shape.gpu_type,
            },
            "time_limit": self.time_limit,
            "timeout_minutes": self.timeout_minutes,
            "use_requeue": self.use_requeue,
            "runtime": self.runtime,
            "image": self.image,
            "registry": self.registry,
            "base": self.paths.base,
            "environment": dict(self.environment),
            "rendezvous": list(self.rendezvous),
            "mounts": list(self.mounts),
            "container_env": list(self.container_env),
            "max_timeout_requeues": self.max_timeout_requeues,
            "require_sqsh": self.require_sqsh,
            "checkpoint_dir": self.checkpoint_dir,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LaunchPlan:
        """Read a stored plan.

        Raises:
            ValueError: not a plan of :data:`PLAN_VERSION` (a newer or damaged one).
        """
        if data.get("version") != PLAN_VERSION:
            raise ValueError(f"launch plan version {data.get('version')!r} is not {PLAN_VERSION}")
        try:
            shape = Shape(**dict(data["shape"]))
            return cls(
                job_id=str(data["job_id"]),
                partition=str(data["partition"]),
                account=str(data["account"]),
                shape=shape,
                time_limit=str(data["time_limit"]),
                timeout_minutes=int(data["timeout_minutes"]),
                use_requeue=bool(data["use_requeue"]),
                runtime=str(data["runtime"]),
                image=str(data["image"]),
                registry=str(data["registry"]),
                paths=JobPaths(str(data["base"]), str(data["job_id"])),
                environment={str(k): str(v) for k, v in dict(data["environment"]).items()},
                rendezvous=tuple(str(x) for x in data["rendezvous"]),
                mounts=tuple(str(x) for x in data["mounts"]),
                container_env=tuple(str(x) for x in data["container_env"]),
                max_timeout_requeues=int(data["max_timeout_requeues"]),
                require_sqsh=bool(data["require_sqsh"]),
                # Added later: plans stored before it have no check.
                checkpoint_dir=str(data.get("checkpoint_dir", "")),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"damaged launch plan ({exc})") from None


@dataclass(frozen=True)
class LaunchExtras:
    """What a submission adds to a plan (checked by :meth:`checked`)."""

    exclude: str = ""
    """``--exclude``: nodes a retry avoids."""
    dependency: str = ""
    """``--dependency`` (``afterany:<conversion>``, ``afterok:<previous step>``)."""
    image_override: str = ""
    """The image to run instead of the spec's (a cached SQSH file)."""
    sqsh_fallback: str = ""
    """A SQSH file the script checks at start (magic ``hsqs``): run from it when valid, else
    the registry image (or stop, with ``require_sqsh``)."""

    @classmethod
    def checked(
        cls,
        *,
        exclude_nodes: Iterable[str] = (),
        dependency: str | None = None,
        image_override: str | None = None,
        sqsh_fallback: str | None = None,
    ) -> LaunchExtras:
        """Extras whose every value an ``#SBATCH`` line or the script can carry.

        Raises:
            BadInput: an exclude list, dependency, image or SQSH path SLURM would refuse.
        """
        exclude = ",".join(n.strip() for n in exclude_nodes if n.strip())
        if exclude and not _NODES_RE.match(exclude):
            raise BadInput(f"exclude list {exclude!r} is not a SLURM node list.")
        dep = (dependency or "").strip()
        if dep and not _DEPENDENCY_RE.match(dep):
            raise BadInput(f"dependency {dep!r} is not a SLURM dependency such as afterok:123.")
        if sqsh_fallback:
            if not sqsh_fallback.startswith("/"):
                raise BadInput(
                    f"SQSH path {sqsh_fallback!r} must be an absolute path on the cluster."
                )
            check_directive(sqsh_fallback, "SQSH path")
        if image_override:
            try:
                images.parse_image(image_override)
            except images.ImageError as exc:
                raise BadInput(f"image: {exc}.") from None
        return cls(exclude, dep, image_override or "", sqsh_fallback or "")


def check_directive(value: str, what: str) -> str:
    """``value`` if an ``#SBATCH`` line can carry it unquoted.

    Raises:
        BadInput: spaces, quotes, ``%``, ``$`` or the like.
    """
    if not _DIRECTIVE_SAFE_RE.match(value):
        raise BadInput(_unsafe(value, what))
    return value


def _unsafe(value: str, what: str) -> str:
    return (
        f"{what} {value!r} contains characters an #SBATCH line cannot carry "
        "(spaces, quotes, '%', '$'); use a plain path or name."
    )


# ----------------------------------------------------------------------------------- planning


def plan_step(
    spec: JobSpec,
    profile: Profile,
    *,
    base: str | None = None,
    pipeline_env: Mapping[str, str] | None = None,
) -> LaunchPlan:
    """Decide every value of ``spec``'s batch script on ``profile``.

    Args:
        spec: a validated job spec (one step of a pipeline: its own spec).
        profile: supplies the partition and account fallbacks, the runtime, the node size, the
            timeout-requeue cap and the results root.
        base: the job's remote root; default ``profile.results_root``.
        pipeline_env: a pipeline step's variables (:func:`pipeline_env`).

    Raises:
        PlanRefused: no partition, a results root that is not absolute, or a value an
            ``#SBATCH`` line cannot carry.
    """
    paths = _job_paths(spec.name, base if base is not None else profile.results_root)
    partition, account = _placement(spec, profile)
    shape = shape_of(spec, profile)
    environment, rendezvous = _environment(spec, paths, shape, pipeline_env or {})
    container_env = list(environment)
    if shape.multi_node:
        container_env += [k for k in RENDEZVOUS_ENV if k not in container_env]
    ref = spec.image_ref
    pyxis = profile.container_runtime == "pyxis"
    return LaunchPlan(
        job_id=spec.name,
        partition=partition,
        account=account,
        shape=shape,
        time_limit=partitions.format_slurm_time(partitions.hours_to_seconds(spec.time_hours)),
        timeout_minutes=max(1, math.floor(spec.timeout_hours * 60 + 1e-9)),
        use_requeue=spec.use_requeue,
        runtime=profile.container_runtime,
        image=ref.pyxis,
        registry=registry_of(ref, pyxis),
        paths=paths,
        environment=environment,
        rendezvous=tuple(rendezvous),
        mounts=tuple(_mounts(spec.container_mounts, paths.base)),
        container_env=tuple(container_env),
        max_timeout_requeues=profile.max_timeout_requeues,
        require_sqsh=profile.require_sqsh,
        checkpoint_dir=checkpoint_dir(spec.command, paths) if spec.use_requeue else "",
    )


def shape_of(spec: JobSpec, profile: Profile) -> Shape:
    """The SLURM resource request of ``spec`` on ``profile``'s nodes."""
    return shape_resources(
        spec.num_nodes,
        spec.num_gpus,
        spec.cpus_per_task,
        max_gpus_per_node=profile.max_gpus_per_node,
        max_cpus_per_task=profile.max_cpus_per_task,
        gpu_type=spec.gpu_type,
    )


def registry_of(ref: images.ImageRef, pyxis: bool) -> str:
    """The registry a pulled image comes from under Pyxis ('' for a ``.sqsh`` file)."""
    return ref.registry if pyxis and ref.registry and not ref.is_sqsh else ""


def _job_paths(job_id: str, base: str) -> JobPaths:
    base_dir = base.rstrip("/") or "/"
    if not base_dir.startswith("/"):
        raise PlanRefused(
            "",
            f"base_results_dir {base_dir!r} must be an absolute path on the cluster's shared "
            "filesystem; set it in the profile.",
        )
    if not _DIRECTIVE_SAFE_RE.match(base_dir):
        raise PlanRefused("", _unsafe(base_dir, "base_results_dir"))
    return JobPaths(base_dir, job_id)


def _placement(spec: JobSpec, profile: Profile) -> tuple[str, str]:
    """(partition, account): the spec's, else the profile's."""
    partition = spec.partition or ",".join(profile.partitions)
    if not partition:
        raise PlanRefused(
            "partition", "no partition: set 'partition' in the spec or in the profile."
        )
    if not _DIRECTIVE_SAFE_RE.match(partition):
        raise PlanRefused("partition", _unsafe(partition, "partition"))
    account = spec.account or profile.account.strip()
    if account and not _DIRECTIVE_SAFE_RE.match(account):
        raise PlanRefused("account", _unsafe(account, "account"))
    return partition, account


def _environment(
    spec: JobSpec, paths: JobPaths, shape: Shape, pipeline_env: Mapping[str, str]
) -> tuple[dict[str, str], list[str]]:
    """(what the script exports, a multi-node job's rendezvous lines)."""
    exported: dict[str, str] = {
        "TAO_JOB_ID": spec.name,
        "TAO_API_RESULTS_DIR": paths.results_root,
        **pipeline_env,
        **spec.env,
    }
    if not shape.multi_node:
        return exported, []
    master_port = spec.env.get("MASTER_PORT", MASTER_PORT)
    return exported, [
        f"export WORLD_SIZE={shape.nodes}",
        f"export NUM_GPU_PER_NODE={shape.gpus_per_node}",
        f"export MASTER_PORT={quoting.quote(master_port)}",
        'MASTER_ADDR=$(scontrol show hostname "$SLURM_JOB_NODELIST" | head -n 1)',
        "export MASTER_ADDR",
    ]


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


def pipeline_env(pipeline_id: str, step: int, previous_results_dir: str = "") -> dict[str, str]:
    """What a pipeline's step sees: ``TAO_PIPELINE_ID``, ``TAO_PIPELINE_STEP`` (1-based) and,
    from the second step on, ``TAO_PREVIOUS_RESULTS_DIR`` (the previous step's
    ``<base>/results/<id>``, where its container wrote its results)."""
    env = {"TAO_PIPELINE_ID": pipeline_id, "TAO_PIPELINE_STEP": str(step + 1)}
    if previous_results_dir:
        env["TAO_PREVIOUS_RESULTS_DIR"] = previous_results_dir
    return env


def refusal_hint(message: str, plan: LaunchPlan) -> str:
    """What to do when SLURM refused the planned job with ``message`` ('' when there is nothing
    more to say than SLURM's words).

    "Requested node configuration is not available" means no node of the partition could ever
    hold the request (not "busy now"): name what was asked for on one node, and where to see
    what the nodes have.
    """
    if "node configuration is not available" not in message.lower():
        return ""
    shape = plan.shape
    gpu_type = shape.gpu_type
    gpus = plural(shape.gpus_per_node, f"{gpu_type + ' ' if gpu_type else ''}GPU")
    where = plan.partition or "the default partition"
    return (
        f"No node of {where} has {gpus} and {shape.cpus_per_task} CPUs on one node; "
        "'tao-slurm-tui capacity' lists each partition's GPU types and nodes. Ask for fewer "
        + ("or another GPU type (or none), " if gpu_type else "")
        + "or another partition, and submit again."
    )
