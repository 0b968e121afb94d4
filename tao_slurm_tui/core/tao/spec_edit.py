"""The composer's experiment-spec editor, in plain functions: the YAML it shows, the overrides
an edit makes of it, where a key is in it, and the settings to suggest first.

The editor shows the whole experiment spec the job would run with: the schema's defaults for the
action, the ``spec_file`` over them and the ``[tao.spec]`` overrides over that
(:func:`editor_text`), under a header naming what the action needs. What the user changes is kept
as overrides against the defaults and the file (:func:`overrides_from`): a TOML saved from the
composer holds only those, as one would write it by hand, and loading it shows the same text
again. Problems of the check are shown at their line (:func:`line_of`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tao_slurm_tui.core.spec.tao_run import ABSENT, lookup
from tao_slurm_tui.core.tao.schema import FieldInfo, TaoSchema, key_lines, parse_spec_yaml
from tao_slurm_tui.core.tao.spec_check import check_spec, default_spec_yaml

POPULAR_SHOWN = 8
"""How many of NVIDIA's popular settings the composer suggests."""


def editor_text(
    schema: TaoSchema,
    action: str,
    file_spec: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> str:
    """The experiment spec as the editor shows it: the header of ``tao spec`` (what the action
    needs, which dataset keys are checked), then the merged spec as YAML.

    Raises:
        BadInput: ``action`` is not an action of the network.
    """
    header = [ln for ln in _header(default_spec_yaml(schema, action))]
    check = check_spec(schema, action, file_spec, overrides)
    return "\n".join(header) + ("\n" if header else "") + check.to_yaml()


def base_data(
    schema: TaoSchema, action: str, file_spec: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The spec the overrides are measured against: the defaults with the spec file over them,
    as plain data (what :func:`editor_text` shows before any override)."""
    return parse_spec_yaml(check_spec(schema, action, file_spec).to_yaml(), "the spec")


def overrides_from(edited: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of ``edited`` that differ from ``base``, as dotted keys in the editor's
    order (a table or a list that differs is compared whole, leaf by leaf for tables)."""
    return dict(_diff(edited, base, ""))


def _diff(
    edited: Mapping[str, Any], base: Mapping[str, Any], prefix: str
) -> Iterator[tuple[str, Any]]:
    for key, value in edited.items():
        full = f"{prefix}{key}"
        known = base.get(key, _MISSING) if isinstance(base, Mapping) else _MISSING
        if isinstance(value, Mapping) and isinstance(known, Mapping) and value:
            yield from _diff(value, known, full + ".")
        elif known is _MISSING or known != value:
            yield full, value


_MISSING = object()


@dataclass(frozen=True)
class Suggestion:
    """A setting NVIDIA marks popular, with what it is now."""

    info: FieldInfo
    value: Any


def line_of(key: str, lines: Mapping[str, int]) -> int | None:
    """The line of ``key``, or of the nearest table above it that is in the text (an unknown
    key is where it was written; a missing one is under its table)."""
    probe = key
    while probe:
        if probe in lines:
            return lines[probe]
        cut = max(probe.rfind("."), probe.rfind("["))
        probe = probe[:cut] if cut > 0 else ""
    return None


def _value_at(data: Mapping[str, Any], key: str) -> Any:
    """The value at a dotted key of the editor's spec (None when it is not there)."""
    value = lookup(data, key)
    return None if value is ABSENT else value


def popular(schema: TaoSchema, action: str, data: Mapping[str, Any]) -> list[Suggestion]:
    """The action's settings NVIDIA marks popular (the ones people change most), the action's
    own table first, with their values in ``data`` (the editor's spec); not the ones the product
    sets from the job (its GPUs, nodes and results dir)."""
    own = schema.action(action).section
    product = {"results_dir", *(f"{own}.{k}" for k in ("num_gpus", "gpu_ids", "num_nodes"))}
    fields = [f for f in schema.fields(action) if f.popular and f.key not in product]
    fields.sort(key=lambda f: (not f.key.startswith(own + "."), 0))
    return [Suggestion(f, _value_at(data, f.key)) for f in fields[:POPULAR_SHOWN]]


def _header(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return lines


__all__ = [
    "Suggestion",
    "base_data",
    "editor_text",
    "key_lines",
    "line_of",
    "overrides_from",
    "popular",
]
