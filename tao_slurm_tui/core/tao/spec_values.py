"""The values a user set, checked against NVIDIA's field metadata (omegaconf checks none of it):
``valid_min``/``valid_max``, ``valid_options``, ``regex``, and interpolations to no key.

A value equal to the schema's default is never refused (docs/TAO.md, "The spec check").
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from typing import Any

from omegaconf import DictConfig
from omegaconf.errors import InterpolationToMissingValueError, OmegaConfBaseException

from tao_slurm_tui.core.tao.names import quoted_list
from tao_slurm_tui.core.tao.schema import (
    MISSING,
    FieldInfo,
    field_info,
    iter_leaves,
    plain,
    uses_resolver,
)
from tao_slurm_tui.core.tao.spec_nodes import covers, error_phrase, node_at, resolved_value
from tao_slurm_tui.core.tao.spec_result import ProblemKind, SpecProblem


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


def value_problems(
    merged: DictConfig, defaults: DictConfig, assigned: Iterable[str]
) -> list[SpecProblem]:
    """Metadata and reference problems of the values the user set (the ``assigned`` keys and
    everything under them): the rest are NVIDIA's defaults."""
    problems = []
    roots = set(assigned)
    for key, parent, name, node in iter_leaves(merged):
        if not any(covers(r, key) for r in roots):
            continue
        raw = plain(node)
        if node._is_interpolation() and not uses_resolver(raw):
            try:
                node._dereference_node()
            except InterpolationToMissingValueError:
                continue  # refers to a ??? (or a resolver's) value: nothing to check yet
            except OmegaConfBaseException as exc:
                problems.append(SpecProblem(key, ProblemKind.BAD_REFERENCE, error_phrase(exc)))
                continue
        default = node_at(defaults, key)
        if default is not None and plain(default) == raw:
            continue  # NVIDIA's own default: the container takes it whatever the metadata says
        known, value = resolved_value(node)
        if not known:
            continue
        problem = metadata_problem(key, value, field_info(key, parent, name, node))
        if problem:
            problems.append(problem)
    return problems
