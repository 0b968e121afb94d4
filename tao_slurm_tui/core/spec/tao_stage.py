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
:class:`~.tao_source.TaoSource` in the context (services/tao.py builds it; the first schema of a
network runs NVIDIA's config dataclasses, which the composer does in a worker first).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tao_slurm_tui.core.spec.draft import SpecDraft
from tao_slurm_tui.core.spec.model import DEFAULT_IMAGE
from tao_slurm_tui.core.spec.problems import Problem
from tao_slurm_tui.core.spec.tao_run import TaoRun, job_paths
from tao_slurm_tui.core.spec.tao_source import SchemaNotLoaded, TaoContext
from tao_slurm_tui.core.spec.tao_steps import STEP_KEYS, derive_steps
from tao_slurm_tui.errors import BadInput

USER_KEYS = ("network", "action", "spec_file", "spec")
"""The keys a user writes in ``[tao]``."""


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
        run = TaoRun.read(raw, draft.base_dir, tao.source)
        paths = job_paths(tao.results_root, table.get("name"))
        derived = run.derive(tao.source, paths, table)
        steps, step_problems = derive_steps(table, run, draft, tao, derived)
    except BadInput as exc:
        problems.append(Problem("tao", f"[tao] {str(exc).rstrip('.')}", "located"))
        return _stand_ins(out), problems
    except SchemaNotLoaded:
        text = f"[tao] the {raw.get('network')} schema is still loading"
        problems.append(Problem("tao", text, "located"))
        return _stand_ins(out), problems
    out.update(tao=derived.tao, command=derived.command)
    if not str(table.get("image") or "").strip():
        out["image"] = out["tao"]["image"] = derived.image
    if steps is not None:
        out["then"] = steps
    problems += derived.problems + step_problems
    return out, problems


def editable(table: Mapping[str, Any]) -> dict[str, Any]:
    """A spec table as its user writes it: a resolved or stored ``[tao]`` job (its ``tao``
    table holds what resolving derived) loses the derived keys, the command and the image the
    catalogue gave it, and so do its TAO steps -- what the composer shows and Save writes. Any
    other table is returned as it is."""
    out = dict(table)
    tao = out.get("tao")
    if not _derived(tao):
        return out
    assert isinstance(tao, Mapping)
    out["tao"] = {k: tao[k] for k in USER_KEYS if tao.get(k) not in (None, "", {})}
    out.pop("command", None)
    if tao.get("image") and out.get("image") == tao.get("image"):
        out.pop("image", None)
    if not out.get("specs"):
        out.pop("specs", None)
    steps = out.get("then")
    if isinstance(steps, list):
        out["then"] = [_editable_step(step) for step in steps]
    return out


def _derived(tao: Any) -> bool:
    return isinstance(tao, Mapping) and any(k in tao for k in ("version", "experiment"))


def _editable_step(step: Any) -> Any:
    if not isinstance(step, Mapping) or not _derived(step.get("tao")):
        return step
    out = dict(step)
    tao = out.pop("tao")
    own = {k: tao[k] for k in STEP_KEYS if tao.get(k) not in (None, "", {})}
    if own:
        out["tao"] = own
    out.pop("command", None)
    if tao.get("image") and out.get("image") == tao.get("image"):
        out.pop("image", None)
    return out


def _stand_ins(out: dict[str, Any]) -> dict[str, Any]:
    """A table whose ``[tao]`` could not be read: stand-ins for the image and command it would
    give (so the schema does not report them too) and no ``tao`` table (the problem is said)."""
    out.pop("tao", None)
    if not str(out.get("command") or "").strip():
        out["command"] = "true"
    if not str(out.get("image") or "").strip():
        out["image"] = DEFAULT_IMAGE
    steps = out.get("then")
    if isinstance(steps, list):
        # Steps that would have run the network's actions: not reported a second time.
        out["then"] = [
            {**s, "command": "true", "tao": None}
            if isinstance(s, Mapping) and not str(s.get("command") or "").strip()
            else s
            for s in steps
        ]
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
