"""One TAO run of a spec (a job, or one step of a pipeline): its experiment spec checked, what the
product fills in, TAO's command line.

:meth:`TaoRun.derive` checks the run's experiment spec (the spec file, then the overrides, then
what the product fills) against the network's schema and gives the ``tao`` table to keep, the
command and the image. Pure: the schema and the spec file come from the
:class:`~tao_slurm_tui.core.spec.tao_stage.TaoSource`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.quoting import join, quote
from tao_slurm_tui.core.spec.problems import Problem
from tao_slurm_tui.core.tao.catalog import TaoAction, TaoNetwork
from tao_slurm_tui.errors import BadInput

if TYPE_CHECKING:
    from tao_slurm_tui.core.spec.tao_source import TaoSource

CREATED_FILES = {
    "create_onnx_file": "model.onnx",
    "create_onnx_file_2d": "model_2d.onnx",
    "create_onnx_file_3d": "model_3d.onnx",
    "create_engine_file": "model.engine",
    "create_cal_cache": "cal.bin",
    "create_pth_file": "model.pth",
}
"""Roles of NVIDIA's ``spec_params`` for a file the action writes → the file's name in the
subtask's results dir (filled when the spec leaves the key ``???``)."""

HYDRA_SPECIAL = set(",=[]{}()'\"\\ \t")
"""Characters that end an unquoted value in a Hydra override."""

ABSENT: Any = object()
"""What :func:`lookup` gives for a key that is not there."""


@dataclass(frozen=True)
class Wiring:
    """Values a pipeline step takes from the steps before it (docs/PIPELINES.md)."""

    values: dict[str, str] = field(default_factory=dict)
    """Spec key → a value known now (a chosen checkpoint, the export step's ONNX file)."""
    latest: dict[str, str] = field(default_factory=dict)
    """Spec key → a directory whose ``*_latest.pth`` the step takes when it starts (the train
    step's checkpoint does not exist before then)."""


@dataclass(frozen=True)
class DerivedRun:
    """What a run gives the spec."""

    tao: dict[str, Any]
    """The full ``tao`` table (the user's keys, then version, experiment, datasets)."""
    command: str
    """TAO's command line (a step wired to ``*_latest.pth`` finds it first)."""
    image: str
    """The catalogue's image of the action, for this site."""
    problems: list[Problem]
    """What is wrong (on the ``tao`` field; a step's are relocated by the caller)."""
    created: dict[str, str]
    """Spec key → a file the run writes (``export.onnx_file``)."""


@dataclass(frozen=True)
class TaoRun:
    """A ``[tao]`` table, read: the network and action found, the spec file read."""

    network: TaoNetwork
    action: TaoAction
    spec_file: str = ""
    file_spec: dict[str, Any] = field(default_factory=dict)
    """The spec file's mapping (empty without one)."""
    overrides: dict[str, Any] = field(default_factory=dict)
    """``[tao.spec]`` (a step's: its own over the job's)."""
    checkpoint: str = ""
    """A step's chosen checkpoint (``[then.tao] checkpoint``), as written."""

    @classmethod
    def read(cls, raw: Mapping[str, Any], base_dir: Path | None, source: TaoSource) -> TaoRun:
        """Find the network and action; read the spec file.

        Raises:
            BadInput: no or an unknown network or action (nearest names), a spec file that
                cannot be read, overrides that are not a table.
        """
        name, action_name = raw.get("network"), raw.get("action")
        if not isinstance(name, str) or not name:
            raise BadInput("needs 'network': the TAO network to run (tao-slurm-tui tao networks)")
        network = source.catalog.network(name)
        if not isinstance(action_name, str) or not action_name:
            actions = ", ".join(network.action_names)
            raise BadInput(f"needs 'action': one of {network.name}'s actions ({actions})")
        spec_file, file_spec = read_spec_file(raw, base_dir, source)
        return cls(network, network.action(action_name), spec_file, file_spec, overrides_of(raw))

    def derive(
        self,
        source: TaoSource,
        paths: JobPaths,
        resources: Mapping[str, Any],
        wiring: Wiring | None = None,
    ) -> DerivedRun:
        """Check the experiment spec with what the product fills, and make the command.

        Args:
            source: the catalogue and schemas.
            paths: the run's remote paths (its job id's).
            resources: the run's ``num_gpus`` and ``num_nodes`` (the job's, or a step's).
            wiring: what a pipeline step takes from the steps before it.
        """
        from tao_slurm_tui.core.tao.spec_check import check_spec
        from tao_slurm_tui.core.tao.spec_nodes import merge_user

        wiring = wiring or Wiring()
        schema = source.schema(self.network.name)
        user = merge_user(self.file_spec, self.overrides)
        fills, problems = product_fills(schema, self.action, user, resources, paths)
        wired = {**wiring.values, **{k: f"{d}/*_latest.pth" for k, d in wiring.latest.items()}}
        wired = {k: v for k, v in wired.items() if unset(lookup(user, k))}  # the user's win
        fills.update(wired)
        check = check_spec(schema, self.action.name, self.file_spec, {**self.overrides, **fills})
        if not check.ok:
            problems.insert(0, spec_problem(check.summary()))
        latest = {k: d for k, d in wiring.latest.items() if unset(lookup(user, k))}
        return DerivedRun(
            tao=self._table(source.version, check, wired),
            command=tao_command_line(
                self.network, self.action, paths.tao_spec_yaml, paths.results_dir, latest
            ),
            image=source.image(self.network.name, self.action.name),
            problems=problems,
            created={
                k: str(fills.get(k) or lookup(user, k))
                for k, role in self.action.fills.items()
                if role in CREATED_FILES and (k in fills or not unset(lookup(user, k)))
            },
        )

    def _table(self, version: str, check: Any, wired: Mapping[str, str]) -> dict[str, Any]:
        model = next((wired[k] for k in self.action.parent_model_keys if k in wired), "")
        return {
            "network": self.network.name,
            "action": self.action.name,
            **({"spec_file": self.spec_file} if self.spec_file else {}),
            **({"spec": self.overrides} if self.overrides else {}),
            **({"checkpoint": self.checkpoint} if self.checkpoint else {}),
            **({"model": model} if model else {}),
            "version": version,
            "experiment": check.to_yaml() if check.ok else "",
            "datasets": {p.key: p.path for p in check.dataset_paths},
        }


def read_spec_file(
    raw: Mapping[str, Any], base_dir: Path | None, source: TaoSource
) -> tuple[str, dict[str, Any]]:
    """(``spec_file`` as written, its mapping); ('', {}) without one.

    Raises:
        BadInput: not a string, or a file that cannot be read as a YAML mapping.
    """
    spec_file = raw.get("spec_file") or ""
    if not isinstance(spec_file, str):
        raise BadInput("spec_file must be the path of a YAML experiment spec")
    if not spec_file:
        return "", {}
    path = Path(spec_file).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return spec_file, source.read_spec(path)


def overrides_of(raw: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` of a ``[tao]`` table.

    Raises:
        BadInput: not a table.
    """
    overrides = raw.get("spec") or {}
    if not isinstance(overrides, Mapping):
        raise BadInput("spec must be a table of experiment-spec keys ([tao.spec])")
    return dict(overrides)


def job_paths(results_root: str, name: Any) -> JobPaths:
    """The job's remote paths (a stand-in job id while the name is still wrong: the schema
    reports it; a root that is not absolute: the plan does)."""
    root = results_root if results_root.startswith("/") else "/" + results_root.lstrip("/")
    try:
        return JobPaths(root, name if isinstance(name, str) else "")
    except ValueError:
        return JobPaths(root, "draft")


def product_fills(
    schema: Any,
    action: TaoAction,
    user: Mapping[str, Any],
    resources: Mapping[str, Any],
    paths: JobPaths,
) -> tuple[dict[str, Any], list[Problem]]:
    """The experiment-spec values the product sets (dotted key → value), and the user's values
    that contradict them: ``results_dir``, the subtask's GPUs and nodes, files it writes."""
    sub = action.subtask
    nodes = _int(resources.get("num_nodes"), 1)
    gpus = _int(resources.get("num_gpus"), 4)
    wanted: dict[str, Any] = {"results_dir": paths.results_dir}
    on_gpus = schema.field(f"{sub}.num_gpus", action.name) is not None
    if on_gpus and gpus > 0:
        wanted[f"{sub}.num_gpus"] = gpus
        if schema.field(f"{sub}.gpu_ids", action.name) is not None:
            wanted[f"{sub}.gpu_ids"] = list(range(gpus))
        if schema.field(f"{sub}.num_nodes", action.name) is not None:
            wanted[f"{sub}.num_nodes"] = nodes
    fills: dict[str, Any] = {}
    problems: list[Problem] = []
    for key, value in wanted.items():
        mine = lookup(user, key)
        if unset(mine) or mine in (None, "") or mine == value:
            fills[key] = value
        else:
            problems.append(_contradiction(key, mine, value, paths))
    if on_gpus and gpus == 0:
        problems.append(
            Problem(
                "num_gpus",
                f"must be at least 1: {schema.network.name} {action.name} runs on GPUs "
                f"(TAO's {sub}.num_gpus)",
            )
        )
    if lookup(user, f"{sub}.results_dir") not in (ABSENT, None, ""):
        problems.append(
            spec_problem(
                f"{sub}.results_dir: set by tao-slurm-tui (TAO writes {paths.results_dir}/"
                f"{sub}, where its status.json is read); remove it"
            )
        )
    for key, role in action.fills.items():
        name = CREATED_FILES.get(role)
        info = schema.field(key, action.name)
        if name and info is not None and info.default == "???" and unset(lookup(user, key)):
            fills[key] = f"{paths.results_dir}/{sub}/{name}"
    return fills, problems


def _contradiction(key: str, mine: Any, value: Any, paths: JobPaths) -> Problem:
    if key == "results_dir":
        return spec_problem(f"results_dir: set by tao-slurm-tui ({paths.results_dir}); remove it")
    field_name = "num_nodes" if key.endswith("num_nodes") else "num_gpus"
    what = "node(s)" if field_name == "num_nodes" else "GPU(s) per node"
    return spec_problem(
        f"{key} is {mine!r} but the job asks for {value!r} {what} ({field_name}); make them "
        f"agree, or leave {key} out (tao-slurm-tui sets it)"
    )


def spec_problem(text: str) -> Problem:
    """A problem of the experiment spec, on the ``tao`` field (the key named in ``text``)."""
    return Problem("tao", f"[tao] experiment spec: {text}", "located")


def unset(value: Any) -> bool:
    """The user left the key to the product: not there, or TAO's mandatory marker ``???``."""
    return value is ABSENT or value == "???"


def lookup(tree: Mapping[str, Any], key: str) -> Any:
    """The value at a dotted key of a nested mapping (:data:`ABSENT` when it is not there)."""
    node: Any = tree
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return ABSENT
        node = node[part]
    return node


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


# ----------------------------------------------------------------------------------- command


def hydra_value(value: str) -> str:
    """A value as a Hydra override carries it: quoted when it holds a character that would end
    or split it (a comma makes a sweep)."""
    if not any(ch in HYDRA_SPECIAL for ch in value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def tao_command_line(
    network: TaoNetwork,
    action: TaoAction,
    spec_path: str,
    results_dir: str,
    latest: Mapping[str, str] | None = None,
) -> str:
    """TAO's own command, every word shell-quoted and every override value Hydra-quoted:
    ``<network> <subtask> -e <spec> results_dir=<dir>``.

    ``latest`` (spec key → a directory) makes it a few lines of bash: the newest
    ``*_latest.pth`` there is found when the step starts (a train step before it wrote it) and
    passed as that key's override; none there stops the step with one sentence.
    """
    argv = [
        network.name,
        action.subtask,
        "-e",
        spec_path,
        f"results_dir={hydra_value(results_dir)}",
    ]
    command = join(argv)
    if not latest:
        return command
    lines: list[str] = []
    for index, (key, directory) in enumerate(latest.items()):
        var = f"tao_model_{index}"
        pattern = f"{quote(directory)}/*_latest.pth"
        lines += [
            f"{var}=$(ls -1t -- {pattern} 2>/dev/null | head -n 1)",
            f'if [ -z "${var}" ]; then',
            f"    echo {quote(_no_checkpoint(directory, key))} >&2",
            "    exit 1",
            "fi",
        ]
        command += f" \"{key}='${{{var}}}'\""
    return "\n".join([*lines, command])


def _no_checkpoint(directory: str, key: str) -> str:
    return (
        f"tao-slurm-tui: no *_latest.pth in {directory}: the train step before this one saved "
        f"no checkpoint, so {key} has nothing to take."
    )
