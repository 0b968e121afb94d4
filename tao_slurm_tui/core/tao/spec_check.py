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

The parts, one module each: :mod:`.spec_result` (what is returned), :mod:`.spec_nodes` (merging
and reading the tree), :mod:`.spec_values` (field metadata), :mod:`.spec_needs` (what the action
needs).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from tao_slurm_tui.core.tao.catalog import TaoAction
from tao_slurm_tui.core.tao.schema import TaoSchema, plain
from tao_slurm_tui.core.tao.spec_needs import (
    calibration_applies,
    calibration_table,
    dataset_values,
    needed_missing,
    top_table,
)
from tao_slurm_tui.core.tao.spec_nodes import (
    all_keys,
    apply_user_spec,
    merge_user,
    missing_keys,
    neutralized,
    node_at,
)
from tao_slurm_tui.core.tao.spec_result import DatasetPath, ProblemKind, SpecCheck, SpecProblem
from tao_slurm_tui.core.tao.spec_values import metadata_problem, value_problems

__all__ = [
    "DatasetPath",
    "ProblemKind",
    "SpecCheck",
    "SpecProblem",
    "check_spec",
    "default_spec_yaml",
    "metadata_problem",
]


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
    user = merge_user(spec or {}, overrides or {})
    assigned: list[str] = []
    apply_user_spec(merged, user, "", merged, problems, assigned)
    neutral = neutralized(merged)
    problems += value_problems(neutral, defaults, assigned)

    def value_of(key: str) -> object:
        node = node_at(merged, key)
        return None if node is None else plain(node)

    sources = [
        s for s in act.data_sources if s.applies(value_of) and calibration_applies(merged, s.key)
    ]
    problems += needed_missing(schema, action, merged, sources)
    paths, empty = dataset_values(neutral, sources, action)
    problems += empty
    order = {k: i for i, k in enumerate(all_keys(merged))}
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
        if s.required and calibration_applies(check.config, s.key)
    ]
    shown = set(check.sections)
    unused = [k for k in missing_keys(check.config) if top_table(k) in shown and k not in needs]
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
    int8 = [k for k in unused if calibration_table(k)]
    if int8:
        table = calibration_table(int8[0])
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
