"""The ``[tao]`` table: a job that names a TAO network and action instead of an image and a command.

A draft stage (:data:`~tao_slurm_tui.core.spec.rules.DRAFT_STAGES`): it runs on the draft's table
before the schema and turns

.. code-block:: toml

    [tao]
    network = "classification_pyt"
    action = "train"
    spec_file = "train.yaml"      # optional, relative to the spec file's directory
    [tao.spec]                    # optional overrides, dotted keys
    train.num_epochs = 20

into what the rest of resolving knows: ``image`` (the catalogue's for the action, unless the
spec names one), ``command`` (TAO's own: ``classification_pyt train -e <base>/specs/<id>.yaml
results_dir=<base>/results/<id>``) and the ``tao`` table with what was derived: the experiment
spec to stage (YAML), the TAO version it was checked against and the dataset paths to ``test -e``
on the cluster.

Everything is checked against the network's schema first (:func:`~..tao.spec_check.check_spec`):
a wrong type, an unknown key (the nearest valid one suggested), a value outside its range, a
mandatory value the action needs, an empty dataset key -- one sentence naming the full key, on
the ``tao`` field.

What the product fills in the experiment spec (unless the user set it; a value that contradicts
the job is refused): ``results_dir`` (the job's; TAO writes into ``<results_dir>/<subtask>``,
where the monitor reads ``status.json``), the subtask's ``num_gpus``/``gpu_ids``/``num_nodes``
(the job's GPUs per node and nodes: TAO's launcher starts one process per GPU it is told of, 1
by default), and files the action creates that NVIDIA's own service names (``export.onnx_file``
→ ``<results_dir>/export/model.onnx``).

Pure: the catalogue, the schemas and reading the local ``spec_file`` come through the
:class:`TaoSource` in the context (services/tao.py builds it; the first schema of a network runs
NVIDIA's config dataclasses, which the composer does in a worker first).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.quoting import join
from tao_slurm_tui.core.spec.draft import SpecDraft
from tao_slurm_tui.core.spec.model import DEFAULT_IMAGE
from tao_slurm_tui.core.spec.problems import Problem
from tao_slurm_tui.core.tao.catalog import Catalog, TaoAction, TaoNetwork
from tao_slurm_tui.errors import BadInput

USER_KEYS = ("network", "action", "spec_file", "spec")
"""The keys a user writes in ``[tao]``."""

DERIVED_KEYS = ("version", "experiment", "datasets")
"""The keys resolving adds (never written by a user)."""

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


class SchemaNotLoaded(Exception):
    """The network's schema is not built yet (the composer builds it in a worker first)."""


class TaoSource(Protocol):
    """What the stage needs of a TAO version (services/tao.py's ``TaoCatalogue``)."""

    @property
    def version(self) -> str:
        """The TAO version."""
        ...

    @property
    def catalog(self) -> Catalog:
        """Every network of the version."""
        ...

    def image(self, network: str, action: str) -> str:
        """The image ``network action`` runs in, for this site."""
        ...

    def schema(self, network: str) -> Any:
        """The network's :class:`~tao_slurm_tui.core.tao.schema.TaoSchema`.

        Raises:
            SchemaNotLoaded: not built yet, and building it must not happen here.
        """
        ...

    def read_spec(self, path: Path) -> dict[str, Any]:
        """A local YAML experiment spec as plain data.

        Raises:
            BadInput: missing, unreadable, not YAML or not a mapping.
        """
        ...


@dataclass(frozen=True)
class TaoContext:
    """The TAO knowledge a resolve has: the version's catalogue and schemas, and where the
    profile puts a job's files (the command and the staged spec name them)."""

    source: TaoSource
    """The catalogue and schemas of the profile's TAO version."""
    results_root: str
    """The profile's ``base_results_dir``."""


# ----------------------------------------------------------------------------------- the stage


def uses_tao(table: Mapping[str, Any]) -> bool:
    """The spec (or one of its ``[[then]]`` steps) has a ``[tao]`` table."""
    steps = table.get("then")
    tables = [table, *(steps if isinstance(steps, list) else [])]
    return any(isinstance(t, Mapping) and t.get("tao") is not None for t in tables)


def tao_stage(
    table: Mapping[str, Any], draft: SpecDraft, tao: TaoContext | None
) -> tuple[dict[str, Any], list[Problem]]:
    """The draft's ``[tao]`` table turned into ``image``, ``command`` and the checked experiment
    spec (a table without one is returned as it is)."""
    out = dict(table)
    raw = table.get("tao")
    if raw is None:
        return out, []
    problems = _conflicts(table)
    if not isinstance(raw, Mapping):
        problems.append(Problem("tao", "must be a table: [tao] with network and action"))
        return _stand_ins(out), problems
    unknown = [str(k) for k in raw if k not in USER_KEYS]
    if unknown:
        text = f"has unknown key {unknown[0]!r}; allowed: {', '.join(USER_KEYS)}"
        problems.append(Problem("tao", text))
        return _stand_ins(out), problems
    if tao is None:
        problems.append(Problem("tao", NOT_LOADED, "sentence"))
        return _stand_ins(out), problems
    try:
        job = TaoJobDraft.read(raw, draft, tao.source)
        derived = job.derive(table, tao)
    except BadInput as exc:
        problems.append(Problem("tao", f"[tao] {str(exc).rstrip('.')}", "located"))
        return _stand_ins(out), problems
    except SchemaNotLoaded:
        text = f"[tao] the {raw.get('network')} schema is still loading"
        problems.append(Problem("tao", text, "located"))
        return _stand_ins(out), problems
    out.update(derived.fields)
    problems += derived.problems
    return out, problems


def _stand_ins(out: dict[str, Any]) -> dict[str, Any]:
    """A table whose ``[tao]`` could not be read: stand-ins for the image and command it would
    give (so the schema does not report them too) and no ``tao`` table (the problem is said)."""
    out.pop("tao", None)
    if not str(out.get("command") or "").strip():
        out["command"] = "true"
    if not str(out.get("image") or "").strip():
        out["image"] = DEFAULT_IMAGE
    return out


NOT_LOADED = (
    "The TAO catalogue is not loaded, so the [tao] table cannot be checked; run "
    "'tao-slurm-tui tao networks' once to fetch it"
)


def _conflicts(table: Mapping[str, Any]) -> list[Problem]:
    """Fields a ``[tao]`` job may not set: TAO's command and experiment spec are its own."""
    problems = []
    if str(table.get("command") or "").strip():
        problems.append(
            Problem(
                "command",
                "must be left out of a [tao] job: its command is TAO's own "
                "(<network> <action> -e <spec>); remove it",
            )
        )
    if table.get("specs"):
        problems.append(
            Problem(
                "specs",
                "must be left out of a [tao] job: give its experiment spec as tao.spec_file "
                "or [tao.spec]",
            )
        )
    return problems


@dataclass(frozen=True)
class Derived:
    """What a ``[tao]`` table gives the spec, and what is wrong with it."""

    fields: dict[str, Any]
    """``image`` (when the spec names none), ``command`` and the full ``tao`` table."""
    problems: list[Problem]


@dataclass(frozen=True)
class TaoJobDraft:
    """A user's ``[tao]`` table, read: the network and action found, the spec file read."""

    network: TaoNetwork
    action: TaoAction
    spec_file: str
    file_spec: dict[str, Any]
    """The spec file's mapping (empty without one)."""
    overrides: dict[str, Any]
    """``[tao.spec]``."""
    source: TaoSource

    @classmethod
    def read(cls, raw: Mapping[str, Any], draft: SpecDraft, source: TaoSource) -> TaoJobDraft:
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
        action = network.action(action_name)
        spec_file = raw.get("spec_file") or ""
        if not isinstance(spec_file, str):
            raise BadInput("spec_file must be the path of a YAML experiment spec")
        file_spec: dict[str, Any] = {}
        if spec_file:
            path = Path(spec_file).expanduser()
            if not path.is_absolute() and draft.base_dir is not None:
                path = draft.base_dir / path
            file_spec = source.read_spec(path)
        overrides = raw.get("spec") or {}
        if not isinstance(overrides, Mapping):
            raise BadInput("spec must be a table of experiment-spec keys ([tao.spec])")
        return cls(network, action, spec_file, file_spec, dict(overrides), source)

    def derive(self, table: Mapping[str, Any], tao: TaoContext) -> Derived:
        """Check the experiment spec (with what the product fills) and make the fields."""
        from tao_slurm_tui.core.tao.spec_check import check_spec
        from tao_slurm_tui.core.tao.spec_nodes import merge_user

        schema = self.source.schema(self.network.name)
        paths = job_paths(tao.results_root, table.get("name"))
        user = merge_user(self.file_spec, self.overrides)
        fills, problems = product_fills(schema, self.action, user, table, paths)
        check = check_spec(schema, self.action.name, self.file_spec, {**self.overrides, **fills})
        if not check.ok:
            problems.insert(0, spec_problem(check.summary()))
        tao_table = {
            "network": self.network.name,
            "action": self.action.name,
            **({"spec_file": self.spec_file} if self.spec_file else {}),
            **({"spec": self.overrides} if self.overrides else {}),
            "version": self.source.version,
            "experiment": check.to_yaml() if check.ok else "",
            "datasets": {p.key: p.path for p in check.dataset_paths},
        }
        fields: dict[str, Any] = {
            "tao": tao_table,
            "command": tao_command_line(
                self.network, self.action, paths.tao_spec_yaml, paths.results_dir
            ),
        }
        if not str(table.get("image") or "").strip():
            fields["image"] = self.source.image(self.network.name, self.action.name)
        return Derived(fields, problems)


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
    table: Mapping[str, Any],
    paths: JobPaths,
) -> tuple[dict[str, Any], list[Problem]]:
    """The experiment-spec values the product sets (dotted key → value), and the user's values
    that contradict them."""
    sub = action.subtask
    nodes = _int(table.get("num_nodes"), 1)
    gpus = _int(table.get("num_gpus"), 4)
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
        if mine is _ABSENT or mine in (None, "") or mine == value:
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
    own = lookup(user, f"{sub}.results_dir")
    if own not in (_ABSENT, None, ""):
        problems.append(
            spec_problem(
                f"{sub}.results_dir: set by tao-slurm-tui (TAO writes {paths.results_dir}/"
                f"{sub}, where its status.json is read); remove it"
            )
        )
    for key, role in action.fills.items():
        name = CREATED_FILES.get(role)
        info = schema.field(key, action.name)
        if name and info is not None and info.default == "???" and lookup(user, key) is _ABSENT:
            fills[key] = f"{paths.results_dir}/{sub}/{name}"
    return fills, problems


def _contradiction(key: str, mine: Any, value: Any, paths: JobPaths) -> Problem:
    if key == "results_dir":
        return spec_problem(f"results_dir: set by tao-slurm-tui ({paths.results_dir}); remove it")
    field = "num_nodes" if key.endswith("num_nodes") else "num_gpus"
    what = "node(s)" if field == "num_nodes" else "GPU(s) per node"
    return spec_problem(
        f"{key} is {mine!r} but the job asks for {value!r} {what} ({field}); make them "
        f"agree, or leave {key} out (tao-slurm-tui sets it)"
    )


def spec_problem(text: str) -> Problem:
    """A problem of the experiment spec, on the ``tao`` field (the key named in ``text``)."""
    return Problem("tao", f"[tao] experiment spec: {text}", "located")


_ABSENT = object()


def lookup(tree: Mapping[str, Any], key: str) -> Any:
    """The value at a dotted key of a nested mapping (``_ABSENT`` when it is not there)."""
    node: Any = tree
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _ABSENT
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
    overrides: Mapping[str, str] | None = None,
) -> str:
    """TAO's own command: ``<network> <subtask> -e <spec> results_dir=<dir> [key=value ...]``,
    every word shell-quoted, every override value Hydra-quoted when it must be."""
    argv = [network.name, action.subtask, "-e", spec_path]
    argv.append(f"results_dir={hydra_value(results_dir)}")
    argv += [f"{k}={hydra_value(v)}" for k, v in (overrides or {}).items()]
    return join(argv)
