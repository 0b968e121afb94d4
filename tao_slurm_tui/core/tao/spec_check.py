"""Check a researcher's experiment spec against the network's schema, before anything is staged.

:func:`check_spec` merges the user's spec (a YAML file's mapping and/or dotted-key overrides) into
the schema one key at a time, so that every problem is found, not just the first, and returns a
:class:`SpecCheck`: each problem with the full dotted key and one phrase, the dataset paths the
action needs on the cluster (for ``test -e``), and the merged spec to stage as YAML.

Problems found (docs/TAO.md, "The spec check"):

- an unknown key, with the nearest valid key ("did you mean 'train.num_epochs'?");
- a wrong type, as omegaconf reports it when it converts the value;
- a value outside NVIDIA's ``valid_min``/``valid_max``, not among its ``valid_options`` or not
  matching its ``regex`` (omegaconf checks none of these). A value equal to the schema's default
  is never refused: NVIDIA's metadata contradicts its own defaults in a few places
  (``evaluate.batch_size = -1`` under ``valid_min = 1``), and the container accepts its defaults;
- an interpolation to a key that does not exist;
- a mandatory value (``???``) the action needs (:func:`needed_missing`);
- a dataset key the action needs that is empty.
"""

from __future__ import annotations

import copy
import math
import re
import textwrap
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.base import Node
from omegaconf.errors import InterpolationToMissingValueError, OmegaConfBaseException

from tao_slurm_tui.core.tao.catalog import DataSource, TaoAction
from tao_slurm_tui.core.tao.names import nearest, quoted_list
from tao_slurm_tui.core.tao.schema import (
    MISSING,
    FieldInfo,
    TaoSchema,
    field_info,
    is_structured,
    iter_leaves,
    plain,
    to_yaml,
    uses_resolver,
)
from tao_slurm_tui.errors import BadInput


class ProblemKind(StrEnum):
    """What is wrong with a key."""

    UNKNOWN_KEY = "unknown key"
    WRONG_TYPE = "wrong type"
    OUT_OF_RANGE = "out of range"
    NOT_AN_OPTION = "not an option"
    NO_MATCH = "no match"
    BAD_REFERENCE = "bad reference"
    MISSING = "missing value"
    NEEDS_DATASET = "needs a dataset"


@dataclass(frozen=True)
class SpecProblem:
    """One problem of a spec."""

    key: str
    """The full dotted key (``dataset.train_data_sources[0].image_dir``)."""
    kind: ProblemKind
    """What kind of problem it is."""
    message: str
    """One phrase saying what is wrong and what to do."""

    @property
    def sentence(self) -> str:
        """``key: message`` (no final full stop)."""
        return f"{self.key}: {self.message}"


@dataclass(frozen=True)
class DatasetPath:
    """A dataset path the action reads, to be checked on the cluster (``test -e``)."""

    key: str
    """The spec key that holds it (with the list index for a list of datasets)."""
    path: str
    """The path as written in the spec (a path inside the container)."""


@dataclass(frozen=True)
class SpecCheck:
    """The result of :func:`check_spec`."""

    version: str
    """TAO version of the schema."""
    network: str
    """The network."""
    action: str
    """The action."""
    problems: tuple[SpecProblem, ...]
    """Every problem found, in the order of the spec's keys."""
    dataset_paths: tuple[DatasetPath, ...]
    """Dataset paths the action needs (values that are set; empty required ones are problems)."""
    config: DictConfig
    """The merged spec (the schema's defaults under the user's values)."""
    sections: tuple[str, ...]
    """Top-level keys staged: the ones the action uses plus any the user set."""

    @property
    def ok(self) -> bool:
        """True when there is no problem."""
        return not self.problems

    def summary(self) -> str:
        """One sentence: the first problem, and how many more (with their keys)."""
        if not self.problems:
            return f"the {self.network} {self.action} spec is valid"
        first = self.problems[0].sentence
        rest = [p.key for p in self.problems[1:]]
        if not rest:
            return first
        shown = ", ".join(rest[:5]) + (" ..." if len(rest) > 5 else "")
        return f"{first} (and {len(rest)} more: {shown})"

    def raise_for_problems(self, origin: str = "") -> None:
        """Raise :class:`BadInput` with :meth:`summary` when there is a problem.

        Raises:
            BadInput: the spec has a problem; ``origin`` (a file name) prefixes the sentence.
        """
        if self.problems:
            prefix = f"{origin}: " if origin else ""
            raise BadInput(f"{prefix}{self.summary()}.")

    def to_yaml(self) -> str:
        """The merged spec as YAML for staging: the tables the action uses and any the user set,
        interpolations kept for the container to resolve."""
        return to_yaml(self.config, list(self.sections))


# --------------------------------------------------------------------------------- merging


def _expand(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted keys (``train.num_epochs``) as nested tables; tables merge with each other."""
    out: dict[str, Any] = {}
    for raw, value in overrides.items():
        parts = str(raw).split(".")
        node = out
        for part in parts[:-1]:
            nxt = node.get(part)
            if not isinstance(nxt, dict):
                nxt = node[part] = {}
            node = nxt
        last = parts[-1]
        if isinstance(value, Mapping) and isinstance(node.get(last), dict):
            node[last] = _merge_dicts(node[last], value)
        else:
            node[last] = _expand(value) if isinstance(value, Mapping) else value
    return out


def _merge_dicts(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in _expand(extra).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge_dicts(out[key], value)
        else:
            out[key] = value
    return out


def _all_keys(root: DictConfig) -> Iterator[str]:
    def walk(node: DictConfig, prefix: str) -> Iterator[str]:
        for name in node:
            key = f"{prefix}{name!s}"
            yield key
            child = node._get_node(name)
            if isinstance(child, DictConfig) and is_structured(child) and not child._is_none():
                yield from walk(child, key + ".")

    yield from walk(root, "")


def _unknown(node: DictConfig, name: str, prefix: str, root: DictConfig) -> SpecProblem:
    siblings = [str(k) for k in node]
    close = [f"{prefix}{c}" for c in nearest(name, siblings)]
    if not close:
        # The right name in the wrong table (train.batch_size for dataset.batch_size).
        close = [k for k in _all_keys(root) if k.rsplit(".", 1)[-1] == name][:3]
    if not close:
        close = nearest(prefix + name, _all_keys(root))
    hint = f"; did you mean {quoted_list(close)}?" if close else ""
    where = f"'{prefix[:-1]}'" if prefix else "the spec"
    return SpecProblem(prefix + name, ProblemKind.UNKNOWN_KEY, f"unknown key in {where}{hint}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0].strip() if str(exc) else type(exc).__name__
    return text[:1].lower() + text[1:]


def _apply(
    node: DictConfig,
    data: Mapping[Any, Any],
    prefix: str,
    root: DictConfig,
    problems: list[SpecProblem],
    assigned: list[str],
) -> None:
    """Merge ``data`` into ``node`` one key at a time (every problem is found); ``assigned``
    collects the full keys of the values set."""
    structured = is_structured(node)
    keys = {str(k) for k in node}
    for raw, value in data.items():
        name = str(raw)
        key = prefix + name
        if structured and name not in keys:
            problems.append(_unknown(node, name, prefix, root))
            continue
        child = node._get_node(name) if name in keys else None
        if (
            isinstance(value, Mapping)
            and isinstance(child, DictConfig)
            and is_structured(child)
            and not child._is_none()
            and not child._is_missing()
            and not child._is_interpolation()
        ):
            _apply(child, value, key + ".", root, problems, assigned)
            continue
        try:
            node[name] = value
            assigned.append(key)
        except OmegaConfBaseException as exc:
            full = str(getattr(exc, "full_key", "") or key)
            problems.append(SpecProblem(full, ProblemKind.WRONG_TYPE, _first_line(exc)))


# --------------------------------------------------------------------------------- values


def _node_at(root: DictConfig, key: str) -> Node | None:
    node: Node | None = root
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", key):
        if part.startswith("["):
            if not isinstance(node, ListConfig) or not _usable(node):
                return None
            index = int(part[1:-1])
            item = node._get_node(index) if index < len(node) else None
            node = item if isinstance(item, Node) else None
        else:
            if not isinstance(node, DictConfig) or not _usable(node) or part not in set(node):
                return None
            node = node._get_node(part)
    return node


def _under_none(root: DictConfig, key: str) -> bool:
    """True when a table on the way to ``key`` is set to null (so ``key`` has no value)."""
    parts = key.split(".")
    for depth in range(1, len(parts)):
        node = _node_at(root, ".".join(parts[:depth]))
        if node is None:
            return False
        if node._is_none():
            return True
    return False


def _usable(node: Node) -> bool:
    return not node._is_missing() and not node._is_none() and not node._is_interpolation()


def missing_keys(root: DictConfig) -> list[str]:
    """Full keys of the ``???`` values under ``root``, without resolving anything
    (``OmegaConf.missing_keys`` resolves interpolations, which would run ``${oc.env:...}`` here
    on the workstation)."""
    found: list[str] = []

    def walk(node: Node, key: str) -> None:
        if node._is_missing():
            found.append(key)
            return
        if not _is_open(node):
            return
        if isinstance(node, DictConfig):
            for name in node:
                child = node._get_node(name)
                if child is not None:
                    walk(child, f"{key}.{name!s}" if key else str(name))
        elif isinstance(node, ListConfig):
            for i in range(len(node)):
                item = node._get_node(i)
                if isinstance(item, Node):
                    walk(item, f"{key}[{i}]")

    walk(root, "")
    return found


def _is_open(node: Node) -> bool:
    return isinstance(node, DictConfig | ListConfig) and _usable(node)


def neutralized(merged: DictConfig) -> DictConfig:
    """A copy of ``merged`` whose resolver interpolations (``${oc.env:X}``) are ``???``: every
    value can then be resolved here without running a resolver, and a value that depends on
    one is unknown (a missing-value error), not a problem."""
    leaves = [(key, node) for key, _, _, node in iter_leaves(merged)]
    if not any(_has_resolver(plain(node)) for _, node in leaves):
        return merged  # nothing to hide: no copy needed
    copy_ = copy.deepcopy(merged)
    for _key, parent, name, node in iter_leaves(copy_):
        if _has_resolver(plain(node)):
            parent[name] = MISSING
    return copy_


def _resolved(node: Node) -> tuple[bool, Any]:
    """(known, value): the node's value with interpolations resolved; unknown for resolver
    calls (the container's to compute) and broken references (reported on their own)."""
    if node._is_missing():
        return True, MISSING
    raw = plain(node)
    if _has_resolver(raw):
        return False, None
    try:
        if isinstance(node, DictConfig | ListConfig):
            return True, OmegaConf.to_container(node, resolve=True)
        target = node._dereference_node()
        return True, plain(target) if target is not None else None
    except OmegaConfBaseException:
        return False, None


def _has_resolver(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_has_resolver(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_resolver(v) for v in value)
    return uses_resolver(value)


def _scalars(value: Any) -> Iterator[Any]:
    if isinstance(value, list | tuple):
        for item in value:
            yield from _scalars(item)
    elif not isinstance(value, dict):
        yield value


def _number(raw: Any) -> float | None:
    if raw is None or isinstance(raw, bool):
        return None
    try:
        return float(str(raw).strip().strip("'\""))
    except ValueError:
        return None


def _fmt(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return str(int(x)) if x == int(x) else repr(x)


def _in_options(value: Any, options: Iterable[str]) -> bool:
    text = str(value).lower()
    number = _number(value) if isinstance(value, int | float) else None
    for option in options:
        if text == option.lower():
            return True
        if number is not None and _number(option) == number:
            return True
    return False


def metadata_problem(key: str, value: Any, info: FieldInfo) -> SpecProblem | None:
    """The first way ``value`` breaks the field's ``valid_min``/``valid_max``/``valid_options``/
    ``regex`` (each element of a list, nested lists too), or ``None``."""
    low, high = _number(info.valid_min), _number(info.valid_max)
    pattern = None
    if info.regex:
        try:
            pattern = re.compile(info.regex)
        except re.error:
            pattern = None  # NVIDIA's pattern is not one Python reads: nothing to check against
    for item in _scalars(value):
        if item is None or item == MISSING:
            continue
        if isinstance(item, int | float) and not isinstance(item, bool):
            if low is not None and item < low:
                return SpecProblem(
                    key, ProblemKind.OUT_OF_RANGE, f"{item!r} is below the minimum {_fmt(low)}"
                )
            if high is not None and item > high:
                return SpecProblem(
                    key, ProblemKind.OUT_OF_RANGE, f"{item!r} is above the maximum {_fmt(high)}"
                )
        if info.valid_options and not _in_options(item, info.valid_options):
            shown = quoted_list(info.valid_options[:12]) + (
                " ..." if len(info.valid_options) > 12 else ""
            )
            return SpecProblem(key, ProblemKind.NOT_AN_OPTION, f"{item!r} is not one of {shown}")
        if pattern is not None and isinstance(item, str) and not pattern.search(item):
            return SpecProblem(
                key, ProblemKind.NO_MATCH, f"{item!r} does not match the pattern {info.regex}"
            )
    return None


def _value_problems(
    merged: DictConfig, defaults: DictConfig, assigned: Iterable[str]
) -> list[SpecProblem]:
    """Metadata and reference problems of the values the user set (the ``assigned`` keys and
    everything under them): the rest are NVIDIA's defaults."""
    problems = []
    roots = set(assigned)
    for key, parent, name, node in iter_leaves(merged):
        if not any(_covers(r, key) for r in roots):
            continue
        raw = plain(node)
        if node._is_interpolation() and not uses_resolver(raw):
            try:
                node._dereference_node()
            except InterpolationToMissingValueError:
                continue  # refers to a ??? (or a resolver's) value: nothing to check yet
            except OmegaConfBaseException as exc:
                problems.append(SpecProblem(key, ProblemKind.BAD_REFERENCE, _first_line(exc)))
                continue
        default = _node_at(defaults, key)
        if default is not None and plain(default) == raw:
            continue  # NVIDIA's own default: the container takes it whatever the metadata says
        known, value = _resolved(node)
        if not known:
            continue
        problem = metadata_problem(key, value, field_info(key, parent, name, node))
        if problem:
            problems.append(problem)
    return problems


# --------------------------------------------------------------------------------- needs


def _top(key: str) -> str:
    return key.split(".", 1)[0].split("[", 1)[0]


def _covers(outer: str, key: str) -> bool:
    return key == outer or key.startswith((outer + ".", outer + "["))


def _is_set(root: DictConfig, key: str) -> bool:
    node = _node_at(root, key)
    return node is not None and not node._is_missing() and plain(node) not in (None, "", [])


def _calibration_table(key: str) -> str:
    """The table holding the ``calibration`` table that ``key`` is in (empty: not in one)."""
    parts = key.split(".")
    if "calibration" not in parts[:-1]:
        return ""
    return ".".join(parts[: parts.index("calibration")])


def _calibration_applies(merged: DictConfig, key: str) -> bool:
    """False for a key under a ``calibration`` table whose TensorRT ``data_type`` is not INT8:
    TensorRT reads calibration data only to build an INT8 engine."""
    table = _calibration_table(key + ".x")
    if not table:
        return True
    data_type = _node_at(merged, f"{table}.data_type")
    return data_type is not None and str(plain(data_type)).lower() == "int8"


def needed_missing(
    schema: TaoSchema, action: str, merged: DictConfig, sources: Iterable[DataSource]
) -> list[SpecProblem]:
    """The mandatory values (``???``) left in ``merged`` that ``action`` needs.

    The rule (docs/TAO.md, "Which ??? an action needs"):

    1. in the action's own table (``evaluate.checkpoint`` for evaluate), except
       - ``….calibration.*``: TensorRT reads it only for INT8, so it is needed only when the
         enclosing table's ``data_type`` is INT8;
       - keys NVIDIA's catalogue fills from the same parent model (``inference.checkpoint`` and
         ``inference.trt_engine``): one of them is needed, whichever the container uses;
    2. in a shared table (``dataset``, ``model`` ...) only when the catalogue names it for this
       action: a required dataset key of the action (``dataset.train_dataset.images_dir`` for
       train), or a key it fills from the parent model;
    3. never in another action's table (``export.onnx_file`` does not matter for train).
    """
    act = schema.action(action)
    own = set(schema.own_sections(action))
    whole = not own  # an action-specific schema is all the action's own
    others = schema.action_sections(action) - own
    required = [s.key for s in sources if s.required]
    parents = [k for k in act.parent_model_keys if _top(k) in own or whole]
    out: list[SpecProblem] = []
    reported_groups = False
    for key in sorted(missing_keys(merged)):
        top = _top(key)
        if top in others:
            continue
        if whole or top in own:
            table = _calibration_table(key)
            if table:
                if _calibration_applies(merged, key):
                    out.append(_missing(key, f"{action} with INT8 ({table}.data_type)"))
                continue
            if key in parents and len(parents) > 1:
                if any(_is_set(merged, k) for k in parents if k != key) or reported_groups:
                    continue
                reported_groups = True
                others_text = " or ".join(k for k in parents if k != key)
                out.append(_missing(key, action, f"set it or {others_text}"))
                continue
            out.append(_missing(key, action))
        elif any(_covers(s, key) or _covers(key, s) for s in required):
            out.append(_missing(key, action, "the path of a dataset on the cluster"))
        elif key in act.parent_model_keys:
            out.append(_missing(key, action, "the model of the previous step"))
    return out


def _missing(key: str, needs: str, what: str = "set it") -> SpecProblem:
    return SpecProblem(
        key,
        ProblemKind.MISSING,
        f"a mandatory value (???) that {needs} needs; "
        + (what if what.startswith("set") else f"set it to {what}"),
    )


def dataset_values(
    merged: DictConfig, sources: Iterable[DataSource], action: str
) -> tuple[list[DatasetPath], list[SpecProblem]]:
    """The dataset paths set in ``merged`` for ``sources``, and the required ones left empty."""
    paths: list[DatasetPath] = []
    problems: list[SpecProblem] = []

    def empty(key: str) -> None:
        problems.append(
            SpecProblem(
                key,
                ProblemKind.NEEDS_DATASET,
                f"empty; {action} needs the path of a dataset on the cluster here",
            )
        )

    def take(key: str, value: Any, required: bool) -> None:
        if isinstance(value, str) and value and value != MISSING:
            paths.append(DatasetPath(key, value))
        elif isinstance(value, list) and value:
            for i, item in enumerate(value):
                take(f"{key}[{i}]", item, required)
        elif value in (None, "", []) and required:
            empty(key)

    for source in sources:
        if _under_none(merged, source.key):
            if source.required:
                empty(source.key)  # its table is unset (null): the action has no dataset
            continue
        node = _node_at(merged, source.key)
        if node is None or node._is_missing():
            continue  # a ??? is reported by needed_missing; a key not in the schema is NVIDIA's
        known, value = _resolved(node)
        if not known:
            continue
        if not source.fields:
            take(source.key, value, source.required)
            continue
        if value in (None, [], {}):
            if source.required:
                empty(source.key)
            continue
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            base = f"{source.key}[{i}]" if isinstance(value, list) else source.key
            for name in source.fields:
                field_value = item.get(name) if isinstance(item, dict) else None
                take(f"{base}.{name}", field_value, source.required)
    unique = list(dict.fromkeys(paths))
    return unique, problems


# --------------------------------------------------------------------------------- check


def check_spec(
    schema: TaoSchema,
    action: str,
    spec: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> SpecCheck:
    """Check ``spec`` (a YAML file's mapping) with ``overrides`` (dotted keys, applied after it)
    for ``action`` of ``schema``'s network.

    Raises:
        BadInput: ``action`` is not an action of the network (the spec itself never raises:
            its problems are in the result).
    """
    act: TaoAction = schema.action(action)
    defaults = schema.schema_for(action)
    merged = schema.fresh(action)
    problems: list[SpecProblem] = []
    user = _merge_dicts(spec or {}, overrides or {})
    assigned: list[str] = []
    _apply(merged, user, "", merged, problems, assigned)
    neutral = neutralized(merged)
    problems += _value_problems(neutral, defaults, assigned)

    def value_of(key: str) -> object:
        node = _node_at(merged, key)
        return None if node is None else plain(node)

    sources = [
        s for s in act.data_sources if s.applies(value_of) and _calibration_applies(merged, s.key)
    ]
    problems += needed_missing(schema, action, merged, sources)
    paths, empty = dataset_values(neutral, sources, action)
    problems += empty
    order = {k: i for i, k in enumerate(_all_keys(merged))}
    problems.sort(key=lambda p: order.get(p.key.split("[", 1)[0], len(order)))
    used = schema.sections_used(action)
    touched = [str(k) for k in merged if str(k) in user and str(k) not in used]
    sections = tuple(k for k in (str(k) for k in merged) if k in used or k in touched)
    return SpecCheck(
        version=schema.version,
        network=schema.network.name,
        action=action,
        problems=tuple(_dedupe(problems)),
        dataset_paths=tuple(paths),
        config=merged,
        sections=sections,
    )


def _dedupe(problems: Iterable[SpecProblem]) -> Iterator[SpecProblem]:
    seen: set[str] = set()
    for problem in problems:
        if problem.key not in seen:
            seen.add(problem.key)
            yield problem


def default_spec_yaml(schema: TaoSchema, action: str) -> str:
    """The default experiment spec of ``action`` as YAML, what a researcher starts editing:
    the tables the action uses, mandatory values as ``???``, with a header naming the values the
    action needs and the dataset keys checked on the cluster.

    Raises:
        BadInput: ``action`` is not an action of the network.
    """
    check = check_spec(schema, action)
    needs = [p.key for p in check.problems if p.kind is ProblemKind.MISSING]
    datasets = [
        s.key + (f" ({', '.join(s.fields)} of each)" if s.fields else "")
        for s in schema.action(action).data_sources
        if s.required and _calibration_applies(check.config, s.key)
    ]
    shown = set(check.sections)
    unused = [k for k in missing_keys(check.config) if _top(k) in shown and k not in needs]
    net = schema.network.name
    act = schema.action(action)
    notes = [
        f"{net} {action}: the default experiment spec of TAO {schema.version} (nvidia-tao-core "
        f"{schema.version}). In the container: {net} {act.subtask} -e <this file>.",
    ]
    if needs:
        notes.append(f"Fill in before submitting (???): {', '.join(needs)}.")
    if datasets:
        notes.append(f"Dataset paths, checked on the cluster: {', '.join(datasets)}.")
    notes += [
        f"Also: {p.sentence}."
        for p in check.problems
        if p.kind not in (ProblemKind.MISSING, ProblemKind.NEEDS_DATASET)
    ]
    int8 = [k for k in unused if _calibration_table(k)]
    if int8:
        table = _calibration_table(int8[0])
        notes.append(f"Needed only for INT8 ({table}.data_type: INT8): {', '.join(int8)}.")
    rest = sorted(k for k in unused if k not in int8)
    if rest:
        notes.append(f"{action} does not use the other ??? values ({', '.join(rest)}).")
    lines = [
        "# " + line
        for note in notes
        for line in textwrap.wrap(note, 96, break_long_words=False, break_on_hyphens=False)
    ]
    return "\n".join(lines) + "\n" + check.to_yaml()
