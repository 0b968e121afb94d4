"""The user's spec merged into a network's schema one key at a time, and the merged tree read.

Merging key by key (:func:`apply_user_spec`) finds every unknown key and wrong type, not only the
first; reading (:func:`node_at`, :func:`resolved_value`, :func:`missing_keys`) never runs a
resolver (``${oc.env:X}`` is the container's to compute).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.base import Node
from omegaconf.errors import OmegaConfBaseException

from tao_slurm_tui.core.tao.names import nearest, quoted_list
from tao_slurm_tui.core.tao.schema import MISSING, is_structured, iter_leaves, plain, uses_resolver
from tao_slurm_tui.core.tao.spec_result import ProblemKind, SpecProblem


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
            node[last] = merge_user(node[last], value)
        else:
            node[last] = _expand(value) if isinstance(value, Mapping) else value
    return out


def merge_user(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` (dotted keys or tables) merged over ``base`` (a YAML file's mapping)."""
    out = dict(base)
    for key, value in _expand(extra).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_user(out[key], value)
        else:
            out[key] = value
    return out


def all_keys(root: DictConfig) -> Iterator[str]:
    """Every full key of the structured tables under ``root``, in the schema's order."""

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
        close = [k for k in all_keys(root) if k.rsplit(".", 1)[-1] == name][:3]
    if not close:
        close = nearest(prefix + name, all_keys(root))
    hint = f"; did you mean {quoted_list(close)}?" if close else ""
    where = f"'{prefix[:-1]}'" if prefix else "the spec"
    return SpecProblem(prefix + name, ProblemKind.UNKNOWN_KEY, f"unknown key in {where}{hint}")


def error_phrase(exc: BaseException) -> str:
    """omegaconf's message as a phrase: its first line, lower-cased first letter."""
    text = str(exc).splitlines()[0].strip() if str(exc) else type(exc).__name__
    return text[:1].lower() + text[1:]


def apply_user_spec(
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
            apply_user_spec(child, value, key + ".", root, problems, assigned)
            continue
        try:
            node[name] = value
            assigned.append(key)
        except OmegaConfBaseException as exc:
            full = str(getattr(exc, "full_key", "") or key)
            problems.append(SpecProblem(full, ProblemKind.WRONG_TYPE, error_phrase(exc)))


# --------------------------------------------------------------------------------- reading


def covers(outer: str, key: str) -> bool:
    """``key`` is ``outer`` or lies under it (``a.b`` covers ``a.b.c`` and ``a.b[0]``)."""
    return key == outer or key.startswith((outer + ".", outer + "["))


def node_at(root: DictConfig, key: str) -> Node | None:
    """The node at a full key (``a.b[0].c``); None when the path does not lead to one."""
    node: Node | None = root
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", key):
        if part.startswith("["):
            if not isinstance(node, ListConfig) or not usable(node):
                return None
            index = int(part[1:-1])
            item = node._get_node(index) if index < len(node) else None
            node = item if isinstance(item, Node) else None
        else:
            if not isinstance(node, DictConfig) or not usable(node) or part not in set(node):
                return None
            node = node._get_node(part)
    return node


def under_none(root: DictConfig, key: str) -> bool:
    """True when a table on the way to ``key`` is set to null (so ``key`` has no value)."""
    parts = key.split(".")
    for depth in range(1, len(parts)):
        node = node_at(root, ".".join(parts[:depth]))
        if node is None:
            return False
        if node._is_none():
            return True
    return False


def usable(node: Node) -> bool:
    """The node has a value of its own (not ``???``, null or an interpolation)."""
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
    return isinstance(node, DictConfig | ListConfig) and usable(node)


def neutralized(merged: DictConfig) -> DictConfig:
    """A copy of ``merged`` whose resolver interpolations (``${oc.env:X}``) are ``???``: every
    value can then be resolved here without running a resolver, and a value that depends on
    one is unknown (a missing-value error), not a problem."""
    leaves = [(key, node) for key, _, _, node in iter_leaves(merged)]
    if not any(has_resolver(plain(node)) for _, node in leaves):
        return merged  # nothing to hide: no copy needed
    copy_ = copy.deepcopy(merged)
    for _key, parent, name, node in iter_leaves(copy_):
        if has_resolver(plain(node)):
            parent[name] = MISSING
    return copy_


def resolved_value(node: Node) -> tuple[bool, Any]:
    """(known, value): the node's value with interpolations resolved; unknown for resolver
    calls (the container's to compute) and broken references (reported on their own)."""
    if node._is_missing():
        return True, MISSING
    raw = plain(node)
    if has_resolver(raw):
        return False, None
    try:
        if isinstance(node, DictConfig | ListConfig):
            return True, OmegaConf.to_container(node, resolve=True)
        target = node._dereference_node()
        return True, plain(target) if target is not None else None
    except OmegaConfBaseException:
        return False, None


def has_resolver(value: Any) -> bool:
    """Some value in ``value`` calls a resolver (``${oc.env:X}``)."""
    if isinstance(value, dict):
        return any(has_resolver(v) for v in value.values())
    if isinstance(value, list):
        return any(has_resolver(v) for v in value)
    return uses_resolver(value)
