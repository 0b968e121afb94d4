"""Pipelines the TAO way: ``[[then]]`` steps that run actions of the job's network.

A step of a ``[tao]`` job whose ``action`` is one of the network's actions and which gives no
``command`` is a TAO step: it runs ``<network> <action>`` on the job's experiment spec (its own
``[then.tao]`` ``spec_file`` or ``spec`` over it), and takes the model of the steps before it
without the user typing a path (docs/PIPELINES.md, "TAO steps"):

- a checkpoint key (``evaluate.checkpoint``, ``export.checkpoint``, ``inference.checkpoint``,
  ``quantize.model_path`` ...: NVIDIA's ``parent_model`` keys, :attr:`TaoAction.parent_model_keys`)
  takes the newest ``*_latest.pth`` of the nearest train step before it, found when the step
  starts (the file does not exist before the train step ran); ``[then.tao] checkpoint`` chooses
  another (a file name in that train step's results, or an absolute path);
- an ONNX key (``gen_trt_engine.onnx_file``) takes the ONNX file of the nearest export step
  before it;
- a key the experiment spec sets itself is left as it is.

A step whose action is not one of the network's, or that gives its own ``command``, runs that
command as any step does. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.spec.draft import SpecDraft
from tao_slurm_tui.core.spec.problems import Problem
from tao_slurm_tui.core.spec.tao_run import (
    DerivedRun,
    TaoRun,
    Wiring,
    job_paths,
    overrides_of,
    read_spec_file,
)
from tao_slurm_tui.core.tao.catalog import TaoAction
from tao_slurm_tui.errors import BadInput

if TYPE_CHECKING:
    from tao_slurm_tui.core.spec.tao_source import TaoContext

STEP_KEYS = ("spec_file", "spec", "checkpoint")
"""The keys a user writes in a TAO step's ``[then.tao]``."""

ENGINE_SUFFIXES = ("onnx_file", "trt_engine", "engine_file")
"""Parent-model keys that take an exported model, not a checkpoint."""


@dataclass(frozen=True)
class _Ran:
    """A TAO run before the step being derived: what it is and what it leaves behind."""

    action: TaoAction
    paths: JobPaths
    created: Mapping[str, str]


def derive_steps(
    table: Mapping[str, Any], parent: TaoRun, draft: SpecDraft, tao: TaoContext, first: DerivedRun
) -> tuple[list[Any] | None, list[Problem]]:
    """The job's ``[[then]]`` steps with every TAO step's command, ``tao`` table and image
    filled (None: no steps); the problems of each, located at the step."""
    steps = table.get("then")
    if not isinstance(steps, list) or not steps:
        return None, []
    explicit_image = bool(str(table.get("image") or "").strip())
    before = [_Ran(parent.action, job_paths(tao.results_root, table.get("name")), first.created)]
    out: list[Any] = []
    problems: list[Problem] = []
    for index, step in enumerate(steps, start=1):
        if not isinstance(step, Mapping):
            out.append(step)  # the schema says what is wrong with it
            continue
        where = f"step {index + 1} ({step.get('action')!r})"
        if not _is_tao_step(step, parent):
            out.append(dict(step))
            if step.get("tao") is not None:
                problems.append(Problem("then", f"{where}: {_not_a_tao_step(parent)}", "located"))
            continue
        try:
            new, found, ran = _derive_step(step, index, table, parent, draft, tao, before)
        except BadInput as exc:
            problems.append(Problem("then", f"{where}: [then.tao] {exc}".rstrip("."), "located"))
            out.append({**step, "command": step.get("command") or "true", "tao": None})
            continue
        if explicit_image or step.get("image"):
            new.pop("image", None)
        else:
            new["tao"]["image"] = new["image"]
        out.append(new)
        problems += [_located(p, where) for p in found]
        before.append(ran)
    return out, problems


def _is_tao_step(step: Mapping[str, Any], parent: TaoRun) -> bool:
    action = step.get("action")
    return (
        isinstance(action, str)
        and action in parent.network.action_names
        and not str(step.get("command") or "").strip()
    )


def _not_a_tao_step(parent: TaoRun) -> str:
    return (
        f"[then.tao] is for a step that runs one of {parent.network.name}'s actions "
        f"({', '.join(parent.network.action_names)}) without a command; remove it or the command"
    )


def _derive_step(
    step: Mapping[str, Any],
    index: int,
    table: Mapping[str, Any],
    parent: TaoRun,
    draft: SpecDraft,
    tao: TaoContext,
    before: list[_Ran],
) -> tuple[dict[str, Any], list[Problem], _Ran]:
    """One TAO step: (its table, its problems, what it leaves for the steps after it)."""
    raw = step.get("tao") or {}
    if not isinstance(raw, Mapping):
        raise BadInput("must be a table with spec_file, spec or checkpoint")
    unknown = [str(k) for k in raw if k not in STEP_KEYS]
    if unknown:
        raise BadInput(f"has unknown key {unknown[0]!r}; allowed: {', '.join(STEP_KEYS)}")
    checkpoint = raw.get("checkpoint") or ""
    if not isinstance(checkpoint, str):
        raise BadInput("checkpoint must be a file name or an absolute path")
    spec_file, file_spec = read_spec_file(raw, draft.base_dir, tao.source)
    if not spec_file:
        spec_file, file_spec = parent.spec_file, parent.file_spec
    from tao_slurm_tui.core.tao.spec_nodes import merge_user

    run = TaoRun(
        parent.network,
        parent.network.action(str(step["action"])),
        spec_file,
        file_spec,
        merge_user(parent.overrides, overrides_of(raw)),
        checkpoint,
    )
    paths = job_paths(tao.results_root, f"{table.get('name')}-{step['action']}")
    resources = {k: step.get(k, table.get(k)) for k in ("num_gpus", "num_nodes")}
    wiring, found = _wiring(run, before)
    derived = run.derive(tao.source, paths, resources, wiring)
    new = {k: v for k, v in step.items() if k != "tao"}
    own = {k: raw[k] for k in ("spec_file", "spec") if raw.get(k)}  # the step's, as written
    table_ = {k: v for k, v in derived.tao.items() if k not in ("spec_file", "spec")}
    new.update(command=derived.command, tao={**table_, **own}, image=derived.image)
    return new, found + derived.problems, _Ran(run.action, paths, derived.created)


def _wiring(run: TaoRun, before: list[_Ran]) -> tuple[Wiring, list[Problem]]:
    """What the step's parent-model keys take from the runs before it."""
    keys = run.action.parent_model_keys
    models = [k for k in keys if not k.endswith(ENGINE_SUFFIXES)]
    exported = [k for k in keys if k.endswith("onnx_file")]
    values: dict[str, str] = {}
    latest: dict[str, str] = {}
    problems: list[Problem] = []
    train = next((r for r in reversed(before) if r.action.subtask == "train"), None)
    for key in models:
        if run.checkpoint.startswith("/"):
            values[key] = run.checkpoint
        elif run.checkpoint and train is not None:
            values[key] = f"{train.paths.results_dir}/train/{run.checkpoint}"
        elif run.checkpoint:
            problems.append(_no_train(key, "a checkpoint file name needs"))
        elif train is not None:
            latest[key] = f"{train.paths.results_dir}/train"
    for key in exported:
        onnx = next(
            (v for r in reversed(before) for k, v in r.created.items() if k.endswith("onnx_file")),
            "",
        )
        if onnx:
            values[key] = onnx
    return Wiring(values, latest), problems


def _no_train(key: str, what: str) -> Problem:
    return Problem(
        "tao",
        f"[then.tao] checkpoint: {what} a train step before this one to be found in; give an "
        f"absolute path, or set {key} in the experiment spec",
        "located",
    )


def _located(problem: Problem, where: str) -> Problem:
    """A step's problem as the pipeline shows it: on ``then``, naming the step."""
    text = problem.text
    if problem.field == "tao":
        text = text.replace("[tao]", "[then.tao]", 1)
    elif problem.form == "phrase":
        text = f"field '{problem.field}' {text}"
    return Problem("then", f"{where}: {text}", "located", problem.rule)
