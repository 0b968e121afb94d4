"""The job spec's schema (``SPEC.toml``): the pydantic models of a job and its ``[[then]]`` steps.

Defaults are the platform's (1 node, 4 GPUs per node, 16 CPUs per task, 4 h wall time, 3.8 h
timeout, requeue on, SQSH on); the mounts a spec leaves out are the profile's. Unknown keys
are errors, never ignored.
Every field rule here looks at one value (or, for the timeout, the wall time beside it); the
rules that need more -- the profile, the partitions' limits, the jobs already submitted, a step
merged with its parent -- live in :mod:`tao_slurm_tui.core.spec.resolver`, which is the one way
in for a spec. Nothing outside that package validates a spec with this model.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

import tomli_w
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from tao_slurm_tui.core import images, storage
from tao_slurm_tui.core.profile import NAME_RE

_PARTITION_RE = re.compile(r"^[A-Za-z0-9._-]+\Z")
_ACCOUNT_RE = re.compile(r"^[A-Za-z0-9._-]+\Z")
_ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_MOUNT_FLAGS_RE = re.compile(r"^[a-z+]+\Z")

MIN_HOURS = 1 / 60
"""Shortest wall time or timeout: one minute (SLURM's ``--time`` unit; ``0`` means no limit)."""

TIMEOUT_FRACTION = 0.95
"""When only ``time_hours`` is given, the command may run this fraction of it (4 h → 3.8 h)."""

RESERVED_ENV = frozenset(
    {
        "TAO_API_RESULTS_DIR",
        "TAO_JOB_ID",
        "WORLD_SIZE",
        "NUM_GPU_PER_NODE",
        "MASTER_ADDR",
        "NODE_RANK",
        "TAO_PIPELINE_ID",
        "TAO_PIPELINE_STEP",
        "TAO_PREVIOUS_RESULTS_DIR",
    }
)
"""Variables the sbatch script sets itself; a spec may not override them."""

GPU_TYPE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}\Z")
"""A GPU type as SLURM's GRES names it (``a100``, ``h100``, ``rtx_6000``)."""

STEP_FIELDS = (
    "action",
    "command",
    "image",
    "tao",
    "num_nodes",
    "num_gpus",
    "gpu_type",
    "cpus_per_task",
    "time_hours",
    "timeout_hours",
    "partition",
    "env",
    "specs",
)
"""Keys of a ``[[then]]`` table: the action's name, its command (a TAO step's is derived), its
image, its ``[then.tao]``, its own resources, ``env`` added to the parent's and ``specs``
replacing the parent's. Everything else (account, mounts, requeue, SQSH) is the parent's."""

MAX_STEPS = 16
"""Most steps a pipeline may have (the parent job and up to 15 follow-up actions)."""

SECRET_ENV = frozenset({"NGC_KEY", "NGC_API_KEY", "NGC_CLI_API_KEY"})
"""Secrets that must never be written into a staged file: they go through ``creds install``."""


def _env_strings(value: Any) -> Any:
    # TOML gives numbers and booleans; the environment only has strings.
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(item, bool):
                out[key] = "true" if item else "false"
            elif isinstance(item, int | float):
                out[key] = str(item)
            else:
                out[key] = item
        return out
    return value


def _no_bool(value: Any) -> Any:
    # pydantic's lax mode turns true into 1; in a spec that is always a mistake.
    if isinstance(value, bool):
        raise ValueError(f"must be a number, not {str(value).lower()}")
    return value


class _Resources(BaseModel):
    """The numeric fields a job and a ``[[then]]`` step share: never a boolean."""

    @field_validator(
        "num_nodes",
        "num_gpus",
        "cpus_per_task",
        "time_hours",
        "timeout_hours",
        mode="before",
        check_fields=False,
    )
    @classmethod
    def _numbers_not_bools(cls, value: Any) -> Any:
        return _no_bool(value)


class TaoJob(BaseModel):
    """The ``[tao]`` table of a job: a TAO network and action instead of an image and a command.

    The user writes ``network``, ``action``, ``spec_file`` and ``spec`` (a pipeline step:
    ``spec_file``, ``spec`` and ``checkpoint``); resolving (:mod:`~tao_slurm_tui.core.spec.
    tao_stage`) checks them against the network's schema and adds ``version``, ``experiment``,
    ``datasets`` and a step's ``model``, which the stored spec keeps (what ran, with which TAO
    version).
    """

    model_config = ConfigDict(extra="forbid")

    network: str
    """The network (``classification_pyt``): the command TAO's container runs."""
    action: str
    """The network's action (``train``, ``evaluate``, ``export`` ...)."""
    spec_file: str = ""
    """A local YAML experiment spec (relative to the spec file's directory)."""
    spec: dict[str, Any] = Field(default_factory=dict)
    """Experiment-spec overrides (dotted keys or tables), applied over ``spec_file``."""
    version: str = ""
    """The TAO version the experiment spec was checked against."""
    experiment: str = ""
    """The checked experiment spec, staged as ``specs/<id>.yaml`` (TAO's ``-e`` file)."""
    datasets: dict[str, str] = Field(default_factory=dict)
    """Dataset key → path in the container, checked with ``test -e`` before submission."""
    checkpoint: str = ""
    """A pipeline step's chosen checkpoint, as written (``[then.tao] checkpoint``: a file name
    in the train step's results, or an absolute path)."""
    model: str = ""
    """What a pipeline step takes as its model: a file, or ``<train dir>/*_latest.pth`` (the
    newest there when the step starts)."""
    image: str = ""
    """The catalogue's image the job got because its spec named none ('' when it named one)."""

    @model_serializer(mode="wrap")
    def _dump(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if v not in ("", {}) or k in ("network", "action")}

    def user_table(self) -> dict[str, Any]:
        """The keys a user writes in ``[tao]`` (what Save and the composer keep)."""
        data = self.model_dump(mode="json")
        return {k: data[k] for k in ("network", "action", "spec_file", "spec") if k in data}

    def step_table(self) -> dict[str, Any]:
        """The keys a user writes in a TAO step's ``[then.tao]``."""
        data = self.model_dump(mode="json")
        return {k: data[k] for k in ("spec_file", "spec", "checkpoint") if k in data}


class StepSpec(_Resources):
    """A follow-up action of a pipeline (one ``[[then]]`` table of ``SPEC.toml``).

    It runs in the parent's image once the step before it completed (``afterok``); fields left
    out are the parent's. Merged with its parent (:func:`step_data`) it is checked again as a
    job spec of its own when the job is resolved.
    """

    model_config = ConfigDict(extra="forbid")

    action: str
    """The action's name (``evaluate``, ``export``): the step's job id is
    ``<parent name>-<action>``."""
    command: str
    """The step's bash command line."""
    num_nodes: int | None = None
    num_gpus: int | None = None
    gpu_type: str | None = None
    cpus_per_task: int | None = None
    time_hours: float | None = None
    timeout_hours: float | None = None
    partition: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    """Added to (and overriding) the parent's ``[env]``."""
    specs: dict[str, Any] | None = None
    """The step's ``[specs]``; default the parent's."""
    image: str | None = None
    """The step's image; default the parent's (a TAO step whose action runs in another
    container, such as ``gen_trt_engine``'s TensorRT one, gets the catalogue's)."""
    tao: TaoJob | None = None
    """A TAO step's network, action and experiment spec (resolving fills it from the job's
    ``[tao]`` and the step's ``[then.tao]``); never the parent's."""

    @field_validator("action")
    @classmethod
    def _check_action(cls, value: str) -> str:
        if not NAME_RE.match(value) or value in {".", ".."}:
            raise ValueError(f"must be 1-64 letters, digits, '.', '_' or '-' (got {value!r})")
        return value

    @field_validator("env", mode="before")
    @classmethod
    def _env_scalars(cls, value: Any) -> Any:
        return _env_strings(value)

    @model_serializer(mode="wrap")
    def _dump(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        # What the step leaves to the parent is not written (TOML has no null).
        data: dict[str, Any] = handler(self)
        return {key: value for key, value in data.items() if value is not None}

    def overrides(self) -> dict[str, Any]:
        """The job-spec fields this step sets (``action`` and ``env`` excluded)."""
        return self.model_dump(mode="json", exclude={"action", "env"})


class JobSpec(_Resources):
    """One TAO job, as written in ``SPEC.toml``."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    name: str
    """Stable job id and SLURM job name: 1-64 letters, digits, ``.``, ``_``, ``-``."""
    image: str
    """Container image: ``/path/image.sqsh``, ``registry#image:tag``,
    ``docker://registry#image:tag`` or ``registry/image:tag``."""
    command: str
    """A bash command line (pipes, loops, redirects work), staged as ``entrypoints/job_<id>.sh``."""
    num_nodes: int = Field(default=1, ge=1, le=1024)
    """Nodes to run on."""
    num_gpus: int = Field(default=4, ge=0, le=1024)
    """GPUs per node; at or above the node's maximum the request becomes exclusive nodes."""
    gpu_type: str = ""
    """GPU type (``a100``, ``h100``: the type in the nodes' ``Gres=gpu:TYPE:N``, as
    ``tao-slurm-tui capacity`` lists them), asked for as ``--gres=gpu:TYPE:N``; empty: any."""
    cpus_per_task: int = Field(default=16, ge=1, le=4096)
    """CPUs per rank's data loaders."""
    time_hours: float = Field(default=4.0, gt=0, le=24 * 365)
    """Wall time (``--time``); never more than the partition's MaxTime."""
    timeout_hours: float = Field(default=3.8, gt=0, le=24 * 365)
    """The command is stopped after this long (below ``time_hours``) and, with requeue on,
    the job is requeued to resume."""
    partition: str = ""
    """Partition or comma list; empty: the profile's."""
    account: str = ""
    """``--account``; empty: the profile's (or none)."""
    container_mounts: list[str] = Field(default_factory=list)
    """Pyxis mounts, ``/src`` or ``/src:/dst[:flags]``; left out: the profile's
    (:attr:`~tao_slurm_tui.core.profile.Profile.default_mounts`)."""
    use_requeue: bool = True
    """``#SBATCH --requeue`` and requeue on timeout or infrastructure failure."""
    use_sqsh: bool = True
    """Convert the image to a cached SQSH file before the job runs."""
    inputs: list[str] = Field(default_factory=list)
    """Data paths checked with ``test -e`` before submission (``lustre:///...`` or absolute)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables exported into the container."""
    specs: dict[str, Any] = Field(default_factory=dict)
    """TAO experiment spec, staged as ``specs/<name>.json``; path values are converted."""
    then: list[StepSpec] = Field(default_factory=list, max_length=MAX_STEPS - 1)
    """Follow-up actions (``[[then]]`` tables): with any, the spec is a pipeline whose steps
    are submitted at once, each after the previous one completed (see :func:`step_data`)."""
    tao: TaoJob | None = None
    """A TAO job's network, action and experiment spec (``[tao]``); its image and command
    then come from the TAO catalogue."""

    @model_serializer(mode="wrap")
    def _dump(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        # A single job dumps exactly as before pipelines existed (stored specs, Save, JSON).
        data: dict[str, Any] = handler(self)
        if not self.then:
            data.pop("then", None)
        if not self.gpu_type:
            data.pop("gpu_type", None)
        if self.tao is None:
            data.pop("tao", None)
        return data

    # ------------------------------------------------------------------ field rules

    @field_validator("gpu_type")
    @classmethod
    def _check_gpu_type(cls, value: str) -> str:
        if value and not GPU_TYPE_RE.match(value):
            raise ValueError(
                f"must be a GPU type such as a100 or h100: letters, digits, '.', '_' or '-', "
                f"at most 32 (got {value!r}); leave it empty for any type"
            )
        return value

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if value in {".", ".."}:
            raise ValueError(f"cannot be {value!r}: it would name a parent directory")
        if not NAME_RE.match(value):
            raise ValueError(f"must be 1-64 letters, digits, '.', '_' or '-' (got {value!r})")
        return value

    @field_validator("image")
    @classmethod
    def _check_image(cls, value: str) -> str:
        try:
            images.parse_image(value)
        except images.ImageError as exc:
            raise ValueError(f"is invalid: {exc}") from None
        return value.strip(" ")

    @field_validator("command")
    @classmethod
    def _check_command(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty: give the bash command line to run")
        if "\0" in value:
            raise ValueError("must not contain a NUL character")
        return value

    @field_validator("time_hours", "timeout_hours")
    @classmethod
    def _at_least_a_minute(cls, value: float) -> float:
        # SLURM counts --time in minutes and reads 0 as "no limit"; the timeout is in minutes.
        if value < MIN_HOURS:
            raise ValueError(f"must be at least one minute ({MIN_HOURS:.4f} hours; got {value:g})")
        return value

    @field_validator("timeout_hours")
    @classmethod
    def _check_timeout(cls, value: float, info: ValidationInfo) -> float:
        time_hours = info.data.get("time_hours")
        if time_hours is not None and value >= time_hours:
            raise ValueError(
                f"must be below time_hours ({time_hours:g}) so the job can requeue itself "
                f"before SLURM's time limit (got {value:g})"
            )
        return value

    @field_validator("partition")
    @classmethod
    def _check_partition(cls, value: str) -> str:
        value = value.strip(" ")  # spaces only: a trailing newline is refused, not dropped
        if value:
            for part in value.split(","):
                if not _PARTITION_RE.match(part.strip(" ")):
                    raise ValueError(
                        "must be a partition name or a comma list of names "
                        f"(letters, digits, '.', '_', '-'; got {value!r})"
                    )
            value = ",".join(p.strip(" ") for p in value.split(","))
        return value

    @field_validator("account")
    @classmethod
    def _check_account(cls, value: str) -> str:
        value = value.strip(" ")
        if value and not _ACCOUNT_RE.match(value):
            raise ValueError(
                f"must be an account name (letters, digits, '.', '_', '-'; got {value!r})"
            )
        return value

    @field_validator("container_mounts")
    @classmethod
    def _check_mounts(cls, value: list[str]) -> list[str]:
        for i, mount in enumerate(value):
            parts = mount.split(":")
            ok = (
                1 <= len(parts) <= 3
                and not any(ch.isspace() or ch in ",'\"$`\\" for ch in mount)
                and parts[0].startswith("/")
                and (len(parts) < 2 or parts[1].startswith("/"))
                and (len(parts) < 3 or bool(_MOUNT_FLAGS_RE.match(parts[2])))
            )
            if not ok:
                raise ValueError(
                    f"item {i + 1} ({mount!r}) must be an absolute path '/src' or "
                    "'/src:/dst[:flags]' without spaces, commas or quotes"
                )
        return value

    @field_validator("inputs")
    @classmethod
    def _check_inputs(cls, value: list[str]) -> list[str]:
        for i, item in enumerate(value):
            try:
                storage.convert_path(item)
            except storage.PathError as exc:
                raise ValueError(f"has an invalid item {i + 1}: {exc}") from None
        return value

    @field_validator("env", mode="before")
    @classmethod
    def _env_scalars(cls, value: Any) -> Any:
        return _env_strings(value)

    @field_validator("env")
    @classmethod
    def _check_env(cls, value: dict[str, str]) -> dict[str, str]:
        for key, item in value.items():
            if not _ENV_KEY_RE.match(key):
                raise ValueError(
                    f"has key {key!r}, which is not a valid variable name "
                    "(letter or '_', then letters, digits or '_')"
                )
            if key in RESERVED_ENV:
                raise ValueError(f"may not set {key!r}: the job script sets it itself")
            if key.upper() in SECRET_ENV:
                raise ValueError(
                    f"may not set {key!r}, a secret that would be written into the job files; "
                    "install it with 'tao-slurm-tui creds install' instead"
                )
            if "\0" in item:
                raise ValueError(f"has a NUL character in the value of {key!r}")
        return value

    @field_validator("specs")
    @classmethod
    def _check_specs(cls, value: dict[str, Any]) -> dict[str, Any]:
        for where, item in _walk(value, "specs"):
            if storage.looks_like_cluster_path(item):
                try:
                    storage.convert_path(item)
                except storage.PathError as exc:
                    raise ValueError(f"has an invalid path at {where}: {exc}") from None
        return value

    @model_validator(mode="after")
    def _derive_timeout(self) -> JobSpec:
        # A spec that shortens time_hours without a timeout gets the platform's ratio
        # (4 h → 3.8 h) instead of failing on the 3.8 h default.
        if "time_hours" in self.model_fields_set and "timeout_hours" not in self.model_fields_set:
            self.timeout_hours = round(self.time_hours * TIMEOUT_FRACTION, 4)
        return self

    # ------------------------------------------------------------------ derived values

    @property
    def image_ref(self) -> images.ImageRef:
        """The parsed image."""
        return images.parse_image(self.image)

    def resolved_inputs(self) -> list[str]:
        """``inputs`` as cluster paths (``lustre:///x`` → ``/x``)."""
        return [storage.convert_path(item) for item in self.inputs]

    def resolved_specs(self) -> dict[str, Any]:
        """A copy of ``specs`` with every path-like string converted to its cluster path."""
        converted: dict[str, Any] = _convert_tree(copy.deepcopy(self.specs))
        return converted

    def paths_to_check(self) -> list[str]:
        """Every cluster path to ``test -e`` before submission: inputs, paths in specs, then
        a TAO job's dataset paths."""
        return list(self.labelled_paths())

    def labelled_paths(self) -> dict[str, str]:
        """Every cluster path to ``test -e`` before submission → what names it (``inputs``,
        ``specs.x``, or a TAO dataset key): a missing one is reported with its key."""
        seen: dict[str, str] = {}
        for path in self.resolved_inputs():
            seen.setdefault(path, "inputs")
        for where, item in _walk(self.specs, "specs"):
            if storage.looks_like_cluster_path(item):
                seen.setdefault(storage.convert_path(item), where)
        if self.tao is not None:
            for key, path in self.tao.datasets.items():
                seen.setdefault(host_path(path, self.container_mounts), key)
        return seen

    def to_toml(self) -> str:
        """The spec as TOML text (for the composer's Save)."""
        return tomli_w.dumps(self.model_dump(mode="json"))


# ---------------------------------------------------------------------- pipelines


def step_data(parent: Mapping[str, Any], step: StepSpec) -> dict[str, Any]:
    """The job-spec fields of a follow-up ``step`` of ``parent`` (a spec as a dict).

    Everything is the parent's except what the step sets; ``env`` is merged; a step that sets
    ``time_hours`` alone gets the derived timeout, not the parent's; ``tao`` is the step's own
    (a TAO step's), never the parent's.
    """
    data = {key: value for key, value in parent.items() if key not in ("then", "tao")}
    changes = step.overrides()
    if "time_hours" in changes and "timeout_hours" not in changes:
        data.pop("timeout_hours", None)
    data.update(changes)
    data["env"] = {**dict(parent.get("env") or {}), **step.env}
    data["name"] = f"{parent['name']}-{step.action}"
    return data


# ---------------------------------------------------------------------- [specs] helpers


def host_path(path: str, mounts: list[str]) -> str:
    """Where a path inside the container is on the cluster: a ``/src:/dst`` mount maps
    ``/dst/...`` back to ``/src/...`` (the longest mount wins); a same-path mount, or none,
    leaves it as it is."""
    best, best_len = path, -1
    for mount in mounts:
        parts = mount.split(":")
        src, dst = parts[0], parts[1] if len(parts) > 1 else parts[0]
        dst = dst.rstrip("/") or "/"
        inside = path == dst or path.startswith(dst.rstrip("/") + "/")
        if inside and len(dst) > best_len:
            best, best_len = (src.rstrip("/") or "/") + path[len(dst.rstrip("/")) :], len(dst)
    return best


def _walk(tree: Any, where: str) -> list[tuple[str, Any]]:
    """Every leaf of a nested dict/list with its dotted location."""
    out: list[tuple[str, Any]] = []
    if isinstance(tree, Mapping):
        for key, item in tree.items():
            out.extend(_walk(item, f"{where}.{key}"))
    elif isinstance(tree, list):
        for i, item in enumerate(tree):
            out.extend(_walk(item, f"{where}[{i}]"))
    else:
        out.append((where, tree))
    return out


def _convert_tree(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {key: _convert_tree(item) for key, item in tree.items()}
    if isinstance(tree, list):
        return [_convert_tree(item) for item in tree]
    if storage.looks_like_cluster_path(tree):
        return storage.convert_path(tree)
    return tree


FIELDS: tuple[str, ...] = tuple(JobSpec.model_fields)
"""The spec's keys, in file order."""


DEFAULT_IMAGE = "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt"
"""Image a new job starts from (the composer's default and its placeholder)."""
