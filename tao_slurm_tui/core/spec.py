"""The job spec (``SPEC.toml``): a validated pydantic model and its error messages.

Defaults are the platform's (1 node, 4 GPUs per node, 16 CPUs per task, 4 h wall time, 3.8 h
timeout, ``/lustre`` mounted, requeue on, SQSH on). Unknown keys are errors, never ignored.
Every error names the field and what is allowed, in words a user can act on:
:func:`load_spec` raises :class:`~tao_slurm_tui.errors.BadInput` with one sentence, and
:func:`spec_errors` maps field → message for the composer's inline validation.
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomli_w
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import ErrorDetails

from tao_slurm_tui.core import images, storage
from tao_slurm_tui.core.partitions import PartitionLimits, check_wall_time
from tao_slurm_tui.core.profile import NAME_RE, Profile
from tao_slurm_tui.core.shaping import Shape, shape_resources
from tao_slurm_tui.errors import BadInput

_PARTITION_RE = re.compile(r"^[A-Za-z0-9._-]+$")
_ACCOUNT_RE = re.compile(r"^[A-Za-z0-9._-]+$")
_ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MOUNT_FLAGS_RE = re.compile(r"^[a-z+]+$")

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

GPU_TYPE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")
"""A GPU type as SLURM's GRES names it (``a100``, ``h100``, ``rtx_6000``)."""

STEP_FIELDS = (
    "action",
    "command",
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
"""Keys of a ``[[then]]`` table: the action's name, its command, its own resources, ``env``
added to the parent's and ``specs`` replacing the parent's. Everything else (image, account,
mounts, requeue, SQSH) is the parent's."""

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


class StepSpec(_Resources):
    """A follow-up action of a pipeline (one ``[[then]]`` table of ``SPEC.toml``).

    It runs in the parent's image once the step before it completed (``afterok``); fields left
    out are the parent's. Every value is checked again as part of the step's own job spec
    (:func:`pipeline_steps`).
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
    """The step's TAO experiment spec; default the parent's."""

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
    container_mounts: list[str] = Field(default_factory=lambda: ["/lustre"])
    """Pyxis mounts, ``/src`` or ``/src:/dst[:flags]``."""
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
    are submitted at once, each after the previous one completed (see :func:`pipeline_steps`)."""

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
        return value.strip()

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
        value = value.strip()
        if value:
            for part in value.split(","):
                if not _PARTITION_RE.match(part.strip()):
                    raise ValueError(
                        "must be a partition name or a comma list of names "
                        f"(letters, digits, '.', '_', '-'; got {value!r})"
                    )
            value = ",".join(p.strip() for p in value.split(","))
        return value

    @field_validator("account")
    @classmethod
    def _check_account(cls, value: str) -> str:
        value = value.strip()
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

    @model_validator(mode="after")
    def _check_steps(self) -> JobSpec:
        # After _derive_timeout: a step inherits the parent's (derived) timeout.
        if not self.then:
            return self
        parent = self.model_dump(mode="json")
        seen = {self.name}
        for number, step in enumerate(self.then, start=2):
            data = step_data(parent, step)
            where = f"step {number} ({step.action!r})"
            if len(data["name"]) > 64:
                raise ValueError(
                    f"{where}: its job id {data['name']!r} is longer than 64 characters; "
                    "shorten the job's name or the action"
                )
            if data["name"] in seen:
                raise ValueError(
                    f"{where}: its job id {data['name']!r} is already used by an earlier step; "
                    "give every action its own name"
                )
            seen.add(data["name"])
            try:
                JobSpec.model_validate(data)
            except ValidationError as exc:
                field, message = next(iter(_errors_by_field(exc).items()))
                raise ValueError(f"{where}: field '{field}' {message}") from None
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
        """Every cluster path to ``test -e`` before submission: inputs, then paths in specs."""
        seen: dict[str, None] = {}
        for path in self.resolved_inputs():
            seen.setdefault(path, None)
        for _, item in _walk(self.specs, "specs"):
            if storage.looks_like_cluster_path(item):
                seen.setdefault(storage.convert_path(item), None)
        return list(seen)

    def shape(self, *, max_gpus_per_node: int = 8, max_cpus_per_task: int = 128) -> Shape:
        """The SLURM resource request (see :mod:`tao_slurm_tui.core.shaping`)."""
        return shape_resources(
            self.num_nodes,
            self.num_gpus,
            self.cpus_per_task,
            max_gpus_per_node=max_gpus_per_node,
            max_cpus_per_task=max_cpus_per_task,
            gpu_type=self.gpu_type,
        )

    def effective_partition(self, profile: Profile) -> str:
        """The spec's partition, or the profile's."""
        return self.partition or ",".join(profile.partitions)

    def effective_account(self, profile: Profile) -> str:
        """The spec's account, or the profile's."""
        return self.account or profile.account.strip()

    def to_toml(self) -> str:
        """The spec as TOML text (for the composer's Save)."""
        return tomli_w.dumps(self.model_dump(mode="json"))


# ---------------------------------------------------------------------- pipelines


def step_data(parent: Mapping[str, Any], step: StepSpec) -> dict[str, Any]:
    """The job-spec fields of a follow-up ``step`` of ``parent`` (a spec as a dict).

    Everything is the parent's except what the step sets; ``env`` is merged; a step that sets
    ``time_hours`` alone gets the derived timeout, not the parent's.
    """
    data = {key: value for key, value in parent.items() if key != "then"}
    changes = step.overrides()
    if "time_hours" in changes and "timeout_hours" not in changes:
        data.pop("timeout_hours", None)
    data.update(changes)
    data["env"] = {**dict(parent.get("env") or {}), **step.env}
    data["name"] = f"{parent['name']}-{step.action}"
    return data


def pipeline_steps(spec: JobSpec) -> list[JobSpec]:
    """Every step of ``spec`` as its own job spec, in order: the parent job first (without
    ``then``), then one per ``[[then]]`` table. A single job gives ``[spec]``.

    Raises:
        BadInput: a step is invalid (cannot happen for a validated spec).
    """
    if not spec.then:
        return [spec]
    parent = spec.model_dump(mode="json", exclude_unset=True)
    parent.pop("then", None)
    steps = [validate_spec(parent)]
    for number, step in enumerate(spec.then, start=2):
        steps.append(validate_spec(step_data(parent, step), source=f"step {number}"))
    return steps


# ---------------------------------------------------------------------- [specs] helpers


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


# ---------------------------------------------------------------------- error messages

FIELDS: tuple[str, ...] = tuple(JobSpec.model_fields)
"""The spec's keys, in file order."""

_TYPE_WORDS = {
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be a table",
}


def _message(error: ErrorDetails) -> str:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    loc = error["loc"]
    item = ""
    if len(loc) > 1:
        item = f"item {int(loc[1]) + 1} " if isinstance(loc[1], int) else f"key {loc[1]!r} "
    if kind == "extra_forbidden":
        return f"is not a known field; allowed fields: {', '.join(FIELDS)}"
    if kind == "missing":
        return "is required"
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        words = {
            "greater_than_equal": "at least",
            "greater_than": "above",
            "less_than_equal": "at most",
            "less_than": "below",
        }[kind]
        limit = next(iter(ctx.values()), "?")
        return f"must be {words} {limit} (got {error.get('input')!r})"
    if kind in _TYPE_WORDS:
        got = error.get("input")
        shown = "" if isinstance(got, dict | list) else f" (got {got!r})"
        return f"{item}{_TYPE_WORDS[kind]}{shown}"
    return f"{item}is invalid: {error['msg']}"


def _errors_by_field(exc: ValidationError, data: Mapping[str, Any] | None = None) -> dict[str, str]:
    out: dict[str, str] = {}
    for error in exc.errors():
        loc = error["loc"]
        field = str(loc[0]) if loc else "spec"
        if not loc and str((error.get("ctx") or {}).get("error", "")).startswith("step "):
            out.setdefault("then", _message(error))  # a step's check (JobSpec._check_steps)
            continue
        if field == "then" and len(loc) >= 3 and isinstance(loc[1], int):
            out.setdefault(field, _step_message(error, data))
            continue
        out.setdefault(field, _message(error))
    return out


def _step_message(error: ErrorDetails, data: Mapping[str, Any] | None) -> str:
    """``step N ('action'): field 'x' ...`` for an error inside a ``[[then]]`` table."""
    loc = error["loc"]
    index = int(loc[1])
    action = ""
    steps = (data or {}).get("then")
    if isinstance(steps, list) and index < len(steps) and isinstance(steps[index], Mapping):
        name = steps[index].get("action")
        action = f" ({name!r})" if isinstance(name, str) and name else ""
    inner: ErrorDetails = {**error, "loc": tuple(loc[2:])}
    if error["type"] == "extra_forbidden":
        message = f"is not a known field of a [[then]] step; allowed: {', '.join(STEP_FIELDS)}"
    else:
        message = _message(inner)
    return f"step {index + 2}{action}: field '{loc[2]}' {message}"


def spec_errors(data: Mapping[str, Any]) -> dict[str, str]:
    """Validate ``data`` and return field → message (empty when valid), for inline validation.

    Messages are phrases meant to follow the field's name ("must be below time_hours (4)").
    """
    try:
        JobSpec.model_validate(dict(data))
    except ValidationError as exc:
        return _errors_by_field(exc, data)
    return {}


PROFILE_DEFAULTS = ("time_hours", "timeout_hours", "use_requeue")
"""Spec fields whose default comes from the profile (and so from ``SLURM_TIME_HOURS``,
``SLURM_TIMEOUT_HOURS``, ``SLURM_USE_REQUEUE``) when the spec leaves them out."""


def with_profile_defaults(data: Mapping[str, Any], profile: Profile) -> dict[str, Any]:
    """``data`` with the profile's wall time, timeout and requeue for the keys it leaves out.

    A spec that sets ``time_hours`` alone keeps the derived timeout (:data:`TIMEOUT_FRACTION`);
    a profile whose timeout is not below its wall time gets the derived one too.
    """
    out = dict(data)
    out.setdefault("use_requeue", profile.use_requeue)
    if "time_hours" not in out:
        out["time_hours"] = profile.time_hours
        if "timeout_hours" not in out:
            out["timeout_hours"] = (
                profile.timeout_hours
                if profile.timeout_hours < profile.time_hours
                else round(profile.time_hours * TIMEOUT_FRACTION, 4)
            )
    return out


def spec_for_profile(spec: JobSpec, profile: Profile) -> JobSpec:
    """``spec`` as it runs on ``profile``: the profile's defaults for what the spec left out.

    Raises:
        BadInput: the combination is invalid (a spec timeout not below the profile's wall time).
    """
    data = with_profile_defaults(spec.model_dump(mode="json", exclude_unset=True), profile)
    return validate_spec(data)


def spec_errors_for_profile(
    data: Mapping[str, Any],
    profile: Profile,
    partition_limits: PartitionLimits | None = None,
) -> dict[str, str]:
    """Field → message for a spec as it would run on ``profile``, wall time included.

    The composer's inline validation (real and fake back ends alike): :func:`spec_errors`,
    plus the wall time against the MaxTime of every partition the job may run in (the spec's,
    else the profile's). The wall-time check runs even while other fields are still wrong, so
    the user sees every problem at once.

    Args:
        data: the spec as typed (a dict; unknown keys are reported too).
        profile: supplies the partitions when the spec names none.
        partition_limits: MaxTime per partition in seconds; default the packaged list.
    """
    errors = spec_errors(with_profile_defaults(data, profile))
    if "time_hours" in errors or "partition" in errors:
        return errors
    hours = data.get("time_hours", profile.time_hours)
    if not isinstance(hours, int | float) or isinstance(hours, bool):
        return errors
    partition = str(data.get("partition") or "").strip() or ",".join(profile.partitions)
    problem = check_wall_time(float(hours), partition, partition_limits)
    if problem:
        errors["time_hours"] = problem
    return errors


def validate_spec(data: Mapping[str, Any], *, source: str = "spec") -> JobSpec:
    """Validate ``data`` as a spec.

    Raises:
        BadInput: one sentence naming ``source``, the first bad field and what is allowed.
    """
    try:
        return JobSpec.model_validate(dict(data))
    except ValidationError as exc:
        errors = _errors_by_field(exc, data)
        field, message = next(iter(errors.items()))
        more = len(errors) - 1
        suffix = f" ({more} more field{'s' if more > 1 else ''} with problems)" if more else ""
        if field == "then" and message.startswith("step "):
            # A [[then]] step's problem names the step and its field itself.
            raise BadInput(f"{source}: {message}{suffix}.") from None
        raise BadInput(f"{source}: field '{field}' {message}{suffix}.") from None


def parse_spec_table(text: str, *, source: str = "spec") -> dict[str, Any]:
    """Parse TOML text into the spec's table, not yet validated.

    Raises:
        BadInput: not TOML, or nested too deeply to read.
    """
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{source}: not valid TOML ({exc}); fix the file and try again.") from None
    except RecursionError:
        raise BadInput(too_deep(source)) from None


def parse_spec_text(text: str, *, source: str = "spec") -> JobSpec:
    """Parse TOML text as a spec.

    Raises:
        BadInput: not TOML, or not a valid spec.
    """
    data = parse_spec_table(text, source=source)
    try:
        return validate_spec(data, source=source)
    except RecursionError:
        raise BadInput(too_deep(source)) from None


def too_deep(source: str) -> str:
    """The sentence for a TOML document nested too deeply to read (arrays in arrays ...)."""
    return (
        f"{source}: the TOML is nested too deeply to read (thousands of arrays or tables "
        "inside each other); a spec needs only a few levels, so fix the file."
    )


def read_spec_text(path: str | Path) -> str:
    """The text of a ``SPEC.toml`` file.

    Raises:
        BadInput: missing, a directory, unreadable, or not UTF-8 text (a binary file).
    """
    file = Path(path)
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise BadInput(f"{file}: no such spec file; check the path.") from None
    except IsADirectoryError:
        raise BadInput(f"{file}: is a directory, not a spec file.") from None
    except OSError as exc:
        raise BadInput(f"{file}: cannot read the spec file ({exc.strerror}).") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{file}: the spec file is not UTF-8 text.") from None


def load_spec(path: str | Path) -> JobSpec:
    """Read and validate a ``SPEC.toml`` file.

    Raises:
        BadInput: unreadable file, bad TOML, or an invalid field (one sentence naming the file,
            the field and what is allowed).
    """
    return parse_spec_text(read_spec_text(path), source=str(Path(path)))


DEFAULT_IMAGE = "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt"
"""Image a new job starts from (the composer's default and its placeholder)."""


def default_spec(profile: Profile, *, name: str = "") -> dict[str, Any]:
    """A new job with the profile's defaults (the composer's empty form)."""
    return {
        "name": name,
        "image": DEFAULT_IMAGE,
        "command": "",
        "num_nodes": 1,
        "num_gpus": 4,
        "cpus_per_task": 16,
        "time_hours": profile.time_hours,
        "timeout_hours": profile.timeout_hours,
        "partition": profile.partitions[0] if profile.partitions else "",
        "account": profile.account,
        "container_mounts": ["/lustre"],
        "use_requeue": profile.use_requeue,
        "use_sqsh": True,
        "inputs": [],
        "env": {},
        "specs": {},
    }


def spec_for(spec: Mapping[str, Any] | JobSpec, profile: Profile) -> JobSpec:
    """A spec (a dict as typed, or one loaded from a file) as it runs on ``profile``.

    Raises:
        BadInput: the spec is invalid (one sentence naming the field).
    """
    if isinstance(spec, JobSpec):
        return spec_for_profile(spec, profile)
    return validate_spec(with_profile_defaults(spec, profile))


def refusal_hint(message: str, spec: JobSpec, profile: Profile) -> str:
    """What to do when SLURM refused ``spec`` with ``message`` ('' when there is nothing more
    to say than SLURM's words).

    "Requested node configuration is not available" means no node of the partition could ever
    hold the request (not "busy now"): name what was asked for on one node, and where to see
    what the nodes have.
    """
    if "node configuration is not available" not in message.lower():
        return ""
    shape = spec.shape(
        max_gpus_per_node=profile.max_gpus_per_node,
        max_cpus_per_task=profile.max_cpus_per_task,
    )
    gpus = f"{shape.gpus_per_node} {spec.gpu_type + ' ' if spec.gpu_type else ''}GPU(s)"
    where = spec.effective_partition(profile) or "the default partition"
    return (
        f"No node of {where} has {gpus} and {shape.cpus_per_task} CPUs on one node; "
        "'tao-slurm-tui capacity' lists each partition's GPU types and nodes. Ask for fewer "
        + ("or another GPU type (or none), " if spec.gpu_type else "")
        + "or another partition, and submit again."
    )
