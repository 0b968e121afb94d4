"""What an action needs of a spec: its mandatory values (``???``) and its dataset paths.

docs/TAO.md, "Which ??? an action needs" and "Dataset keys tested on the cluster".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from omegaconf import DictConfig

from tao_slurm_tui.core.tao.catalog import DataSource
from tao_slurm_tui.core.tao.schema import MISSING, TaoSchema, plain
from tao_slurm_tui.core.tao.spec_nodes import (
    covers,
    missing_keys,
    node_at,
    resolved_value,
    under_none,
)
from tao_slurm_tui.core.tao.spec_result import DatasetPath, ProblemKind, SpecProblem


def top_table(key: str) -> str:
    """The top-level table of a full key (``train`` of ``train.optim.lr``)."""
    return key.split(".", 1)[0].split("[", 1)[0]


def is_set(root: DictConfig, key: str) -> bool:
    """The key holds a value (not ``???``, null, '' or an empty list)."""
    node = node_at(root, key)
    return node is not None and not node._is_missing() and plain(node) not in (None, "", [])


def calibration_table(key: str) -> str:
    """The table holding the ``calibration`` table that ``key`` is in (empty: not in one)."""
    parts = key.split(".")
    if "calibration" not in parts[:-1]:
        return ""
    return ".".join(parts[: parts.index("calibration")])


def calibration_applies(merged: DictConfig, key: str) -> bool:
    """False for a key under a ``calibration`` table whose TensorRT ``data_type`` is not INT8:
    TensorRT reads calibration data only to build an INT8 engine."""
    table = calibration_table(key + ".x")
    if not table:
        return True
    data_type = node_at(merged, f"{table}.data_type")
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
    parents = [k for k in act.parent_model_keys if top_table(k) in own or whole]
    out: list[SpecProblem] = []
    reported_groups = False
    for key in sorted(missing_keys(merged)):
        top = top_table(key)
        if top in others:
            continue
        if whole or top in own:
            table = calibration_table(key)
            if table:
                if calibration_applies(merged, key):
                    out.append(_missing(key, f"{action} with INT8 ({table}.data_type)"))
                continue
            if key in parents and len(parents) > 1:
                if any(is_set(merged, k) for k in parents if k != key) or reported_groups:
                    continue
                reported_groups = True
                others_text = " or ".join(k for k in parents if k != key)
                out.append(_missing(key, action, f"set it or {others_text}"))
                continue
            out.append(_missing(key, action))
        elif any(covers(s, key) or covers(key, s) for s in required):
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
        if under_none(merged, source.key):
            if source.required:
                empty(source.key)  # its table is unset (null): the action has no dataset
            continue
        node = node_at(merged, source.key)
        if node is None or node._is_missing():
            continue  # a ??? is reported by needed_missing; a key not in the schema is NVIDIA's
        known, value = resolved_value(node)
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
