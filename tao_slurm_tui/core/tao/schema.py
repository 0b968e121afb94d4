"""A network's experiment-spec schema: NVIDIA's dataclass tree as an omegaconf config.

:class:`TaoSchema` wraps the structured config (``OmegaConf.structured(ExperimentConfig)``, built
by ``services/tao_loader.py`` from the hash-checked wheel) with what the catalogue knows of the
network. Everything here is pure: it takes loaded objects and returns values or text.

Which parts of a spec an action uses (docs/TAO.md, "Sections of a spec"): the top-level tables
named like an action (``train``, ``evaluate``, ``export``, ``gen_trt_engine`` ...) belong to that
action; every other key (``model``, ``dataset``, ``results_dir`` ...) is shared. An action uses
its own table and the shared ones; ``retrain`` runs ``train`` with its table, and ``distill``
trains the student with the ``train`` table too (NVIDIA's distill script runs the training
experiment).
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.base import Node

from tao_slurm_tui.core.tao.catalog import TaoAction, TaoNetwork
from tao_slurm_tui.errors import BadInput

TAO_SUBTASKS = frozenset(
    {
        "train",
        "retrain",
        "evaluate",
        "inference",
        "export",
        "gen_trt_engine",
        "trtexec",
        "prune",
        "distill",
        "quantize",
        "dataset_convert",
        "convert",
        "grit_score",
    }
)
"""Subtask names of TAO's container commands: a top-level table with one of these names (or a
name among the network's own actions) is that action's table."""

EXTRA_SECTIONS: Mapping[str, tuple[str, ...]] = {"distill": ("train",)}
"""Tables an action uses besides its own (distill trains the student with ``train``)."""

MISSING = "???"
"""omegaconf's mandatory-value marker."""

_RESOLVER_RE = re.compile(r"\$\{\s*[A-Za-z_][\w.]*\s*:")


class SpecSyntaxError(BadInput):
    """A spec file or override that is not YAML, or not a mapping."""


@dataclass(frozen=True)
class FieldInfo:
    """What NVIDIA's schema says about one setting (for editors and messages)."""

    key: str
    """Full dotted key."""
    default: Any
    """Default value (``???`` for a mandatory one; a table or list as plain data)."""
    value_type: str = ""
    """NVIDIA's ``value_type`` (``int``, ``float``, ``string``, ``bool``, ``list``, ``categorical``,
    ``collection`` ...)."""
    display_name: str = ""
    """Short human name."""
    description: str = ""
    """What it does (whitespace collapsed)."""
    valid_min: Any = None
    """Lowest valid value (``None``: no bound)."""
    valid_max: Any = None
    """Highest valid value (``None``: no bound; ``'inf'`` as NVIDIA writes it)."""
    valid_options: tuple[str, ...] = ()
    """The values it may take (empty: any)."""
    popular: bool = False
    """NVIDIA marks it as one of the settings people change most."""
    regex: str = ""
    """A pattern the value must match (empty: any)."""


@dataclass
class TaoSchema:
    """A network's schema for one TAO version (and the action-specific ones it has)."""

    version: str
    """The TAO version it comes from."""
    network: TaoNetwork
    """The catalogue entry of the network."""
    root: DictConfig
    """The network's structured config (``ExperimentConfig``). Never changed: use :meth:`fresh`."""
    action_roots: Mapping[str, DictConfig] = field(default_factory=dict)
    """Action name → its own structured config, for actions whose script loads another class."""

    def action(self, name: str) -> TaoAction:
        """The catalogue's action ``name``.

        Raises:
            BadInput: not an action of this network.
        """
        return self.network.action(name)

    def schema_for(self, action: str) -> DictConfig:
        """The (shared, unchanged) structured config ``action`` validates against."""
        return self.action_roots.get(action, self.root)

    def fresh(self, action: str) -> DictConfig:
        """A private copy of the schema of ``action`` with its defaults, to merge a spec into."""
        return copy.deepcopy(self.schema_for(action))

    def own_sections(self, action: str) -> tuple[str, ...]:
        """The top-level tables that belong to ``action`` (empty for an action-specific schema,
        which is all its own)."""
        if action in self.action_roots:
            return ()
        act = self.action(action)
        return (act.section, *EXTRA_SECTIONS.get(act.name, ()))

    def action_sections(self, action: str) -> frozenset[str]:
        """Top-level tables of ``action``'s schema that belong to some action."""
        names = TAO_SUBTASKS | {a.subtask for a in self.network.actions}
        root = self.schema_for(action)
        return frozenset(str(k) for k in root if k in names)

    def sections_used(self, action: str) -> list[str]:
        """The top-level keys ``action`` uses, in the schema's order: the shared ones and its
        own tables."""
        root = self.schema_for(action)
        own = set(self.own_sections(action))
        others = self.action_sections(action) - own
        return [str(k) for k in root if k not in others]

    def field(self, key: str, action: str = "") -> FieldInfo | None:
        """What the schema says about ``key`` (``None``: not a key of the schema)."""
        root = self.schema_for(action) if action else self.root
        parts = key.split(".")
        node: Node | None = root
        parent: DictConfig | None = None
        for part in parts:
            # keys(): `in` on a DictConfig is False for a ??? value
            if not isinstance(node, DictConfig) or part not in node.keys():  # noqa: SIM118
                return None
            parent, node = node, node._get_node(part)
        if parent is None or node is None:
            return None
        return field_info(key, parent, parts[-1], node)

    def fields(self, action: str) -> list[FieldInfo]:
        """Every setting ``action`` uses, in the schema's order (leaves of its tables)."""
        root = self.schema_for(action)
        used = set(self.sections_used(action))
        return [
            field_info(k, parent, name, node)
            for k, parent, name, node in iter_leaves(root)
            if k.split(".", 1)[0].split("[", 1)[0] in used
        ]


# ------------------------------------------------------------------------------ tree walking


def is_structured(node: Node) -> bool:
    """True for a table backed by a dataclass (unknown keys are refused there)."""
    if not isinstance(node, DictConfig):
        return False
    obj = node._metadata.object_type
    return obj is not None and dataclasses.is_dataclass(obj)


def _metadata(parent: DictConfig, name: str) -> Mapping[str, Any]:
    obj = parent._metadata.object_type
    if obj is None or not dataclasses.is_dataclass(obj):
        return {}
    for f in dataclasses.fields(obj):
        if f.name == name:
            return f.metadata
    return {}


def _is_container(node: Node) -> bool:
    return (
        isinstance(node, DictConfig | ListConfig)
        and not node._is_missing()
        and not node._is_none()
        and not node._is_interpolation()
    )


def iter_leaves(root: DictConfig) -> Iterator[tuple[str, DictConfig, str, Node]]:
    """Every leaf value under ``root``: ``(full key, parent table, name in it, node)``.

    Tables and lists of tables are walked; a list of plain values is one leaf. Inside lists the
    key carries the index: ``dataset.train_data_sources[0].image_dir``.
    """

    def walk(node: DictConfig, prefix: str) -> Iterator[tuple[str, DictConfig, str, Node]]:
        for name in node:
            child = node._get_node(name)
            if child is None:
                continue
            key = f"{prefix}{name!s}"
            if isinstance(child, DictConfig) and _is_container(child):
                yield from walk(child, key + ".")
            elif isinstance(child, ListConfig) and _is_container(child) and _holds_tables(child):
                for i in range(len(child)):
                    item = child._get_node(i)
                    if isinstance(item, DictConfig) and _is_container(item):
                        yield from walk(item, f"{key}[{i}].")
            else:
                yield key, node, str(name), child

    yield from walk(root, "")


def _holds_tables(node: ListConfig) -> bool:
    return any(isinstance(node._get_node(i), DictConfig) for i in range(len(node)))


def plain(node: Node) -> Any:
    """A node's value as plain data, interpolations and ``???`` kept as text."""
    if isinstance(node, DictConfig | ListConfig):
        if node._is_missing():
            return MISSING
        if node._is_none():
            return None
        if node._is_interpolation():
            return node._value()
        return OmegaConf.to_container(node, resolve=False)
    value = node._value()
    return value


def uses_resolver(text: object) -> bool:
    """True for an interpolation that calls a resolver (``${oc.env:X}``, ``${now:...}``): the
    container computes it, in its own environment, so it is not checked here."""
    return isinstance(text, str) and bool(_RESOLVER_RE.search(text))


def _options(raw: Any) -> tuple[str, ...]:
    if raw in (None, ""):
        return ()
    items = raw if isinstance(raw, list | tuple) else str(raw).split(",")
    out = []
    for item in items:
        text = " ".join(str(item).split())
        # NVIDIA sometimes explains an option in brackets: "KL (KL divergence)" means "KL".
        text = text.split(" (", 1)[0].strip()
        if text:
            out.append(text)
    return tuple(out)


def _bound(raw: Any) -> Any:
    return None if raw in (None, "") else raw


def field_info(key: str, parent: DictConfig, name: str, node: Node) -> FieldInfo:
    """The :class:`FieldInfo` of ``parent[name]``."""
    meta = _metadata(parent, name)
    return FieldInfo(
        key=key,
        default=plain(node),
        value_type=str(meta.get("value_type") or ""),
        display_name=str(meta.get("display_name") or ""),
        description=" ".join(str(meta.get("description") or "").split()),
        valid_min=_bound(meta.get("valid_min")),
        valid_max=_bound(meta.get("valid_max")),
        valid_options=_options(meta.get("valid_options")),
        popular=str(meta.get("popular", "")).lower() == "yes",
        regex=str(meta.get("regex") or ""),
    )


# ------------------------------------------------------------------------------ text in/out


def parse_spec_yaml(text: str, origin: str = "the spec") -> dict[str, Any]:
    """A YAML experiment spec as plain data, read the way TAO reads it (omegaconf's loader:
    ``1e-3`` is a float, a duplicate key is an error); interpolations stay text.

    Raises:
        SpecSyntaxError: not YAML, or not a mapping at the top.
    """
    try:
        loaded = OmegaConf.create(text) if text.strip() else OmegaConf.create({})
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecSyntaxError(f"{origin} is not valid YAML{where}: {what}.") from None
    except Exception as exc:  # omegaconf's own refusals (a bad key type, a cycle ...)
        raise SpecSyntaxError(f"{origin} cannot be read: {str(exc).splitlines()[0]}.") from None
    if not isinstance(loaded, DictConfig):
        raise SpecSyntaxError(
            f"{origin} must be a mapping of settings (train:, dataset: ...), not a list."
        )
    data = OmegaConf.to_container(loaded, resolve=False)
    assert isinstance(data, dict)
    return {str(k): v for k, v in data.items()}


def key_lines(text: str) -> dict[str, int]:
    """Dotted key (``dataset.train_data_sources[0].image_dir``) → its 1-based line in the YAML
    ``text`` ({} when it is not YAML)."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return {}
    found: dict[str, int] = {}

    def walk(node: yaml.Node, prefix: str) -> None:
        if isinstance(node, yaml.MappingNode):
            for key_node, value in node.value:
                key = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
                found.setdefault(key, key_node.start_mark.line + 1)
                walk(value, key)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                key = f"{prefix}[{index}]"
                found.setdefault(key, item.start_mark.line + 1)
                walk(item, key)

    if root is not None:
        walk(root, "")
    return found


def parse_override(text: str) -> tuple[str, Any]:
    """``"train.num_epochs=20"`` → ``("train.num_epochs", 20)``: the value is read as YAML, as
    Hydra reads a command-line override.

    Raises:
        SpecSyntaxError: no ``=``, an empty key, or a value that is not YAML.
    """
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key or any(c.isspace() for c in key):
        raise SpecSyntaxError(f"'{text}' is not KEY=VALUE; write e.g. train.num_epochs=20.")
    try:
        parsed = OmegaConf.create("v: " + value.strip() if value.strip() else {"v": ""})
    except Exception:
        raise SpecSyntaxError(f"{key}: the value {value!r} is not YAML.") from None
    node = parsed._get_node("v") if isinstance(parsed, DictConfig) else None
    if node is None or list(parsed.keys()) != ["v"]:
        raise SpecSyntaxError(f"{key}: the value {value!r} is not one YAML value.")
    return key, plain(node)


def to_yaml(config: DictConfig, keys: list[str] | None = None) -> str:
    """``config`` (only its top-level ``keys``, in order, when given) as YAML; interpolations
    are kept for the container to resolve and mandatory values show as ``???``.

    Written with omegaconf's own YAML dumper, which quotes a string TAO's loader would read as
    another type (``'1e-3'``, ``'???'`` kept as text where it is text).
    """
    data = OmegaConf.to_container(config, resolve=False, enum_to_str=True)
    assert isinstance(data, dict)
    if keys is not None:
        data = {k: data[k] for k in keys if k in data}
    try:
        from omegaconf._utils import get_omega_conf_dumper
    except ImportError:  # omegaconf moved it: the public, slower way gives the same text
        return OmegaConf.to_yaml(OmegaConf.create(data))
    text: str = yaml.dump(
        data,
        default_flow_style=False,
        allow_unicode=True,
        sort_keys=False,
        Dumper=get_omega_conf_dumper(),
    )
    return text
