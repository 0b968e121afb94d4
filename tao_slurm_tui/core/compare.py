"""TAO runs side by side: the experiment-spec keys that differ, and the final and best KPIs.

Each job's spec is the ``experiment.yaml`` TAO saved in its results dir (the spec as it ran,
defaults filled in) when it could be read, else the spec the job was submitted with. Both are
flattened to dotted keys (``train.optim.lr``); only keys whose values differ between the jobs
are kept, and the keys that always differ (``results_dir``: every job has its own) are left
out. Values that look like secrets (a key named like ``encryption_key``, ``password`` ...) are
never shown.

Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tao_slurm_tui.core.job_runs import JobRuns, tao_table
from tao_slurm_tui.core.kpi_series import format_value, is_loss
from tao_slurm_tui.core.models import JobRecord

MAX_KEYS = 5000
"""Keys kept per spec (a hostile experiment.yaml cannot make the table endless)."""
MAX_VALUE_CHARS = 80
HIDDEN = "(hidden)"
"""Shown instead of a value whose key names a secret."""
JOB_KEYS = ("image", "num_nodes", "num_gpus", "gpu_type", "time_hours", "timeout_hours")
"""Keys of the job itself compared beside the experiment spec (as ``job.<key>``)."""

_SECRET_RE = re.compile(r"(key|password|passwd|token|secret|credential)s?\Z", re.IGNORECASE)
_ALWAYS_DIFFERENT = ("results_dir",)


def flatten(data: Any, prefix: str = "", out: dict[str, str] | None = None) -> dict[str, str]:
    """``data`` as ``{dotted key: shown value}`` (lists as JSON, at most :data:`MAX_KEYS`)."""
    out = {} if out is None else out
    if isinstance(data, Mapping):
        for key, value in data.items():
            if len(out) >= MAX_KEYS:
                break
            flatten(value, f"{prefix}.{key}" if prefix else str(key), out)
        return out
    if prefix:
        out[prefix] = shown(prefix, data)
    return out


def shown(key: str, value: Any) -> str:
    """One value as the table shows it (secrets hidden, long values cut)."""
    if _SECRET_RE.search(key.rsplit(".", 1)[-1]):
        return HIDDEN
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


@dataclass(frozen=True)
class CompareJob:
    """One job's column."""

    job_id: str
    status: str
    spec: dict[str, str]
    """Flattened spec (experiment spec keys, and ``job.*``)."""
    source: str
    """``experiment.yaml`` or ``submitted spec``."""
    runs: JobRuns
    epochs: str = ""
    """``17/20``: epochs done of the training's epochs ('' unknown)."""


@dataclass(frozen=True)
class Comparison:
    """The jobs' differences and KPIs."""

    jobs: tuple[CompareJob, ...]
    differences: tuple[tuple[str, tuple[str | None, ...]], ...] = ()
    """``(key, value per job)`` of every key that differs (None: the job has no such key)."""
    kpis: tuple[tuple[str, tuple[tuple[float, float] | None, ...]], ...] = ()
    """``(KPI, (last, best) per job)`` of every KPI any job has."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    """What could not be read (a spec fell back to the submitted one, ...)."""

    def to_json(self) -> dict[str, Any]:
        """The ``compare --json`` document."""
        ids = [job.job_id for job in self.jobs]
        return {
            "jobs": [
                {
                    "id": job.job_id,
                    "status": job.status,
                    "spec_source": job.source,
                    "epochs": job.epochs,
                    "runs": len(job.runs.ledger.runs),
                    "forecast": job.runs.forecast.to_json() if job.runs.forecast else None,
                }
                for job in self.jobs
            ],
            "spec": {key: dict(zip(ids, values, strict=True)) for key, values in self.differences},
            "kpi": {
                name: {
                    job_id: None if pair is None else {"last": pair[0], "best": pair[1]}
                    for job_id, pair in zip(ids, pairs, strict=True)
                }
                for name, pairs in self.kpis
            },
            "notes": list(self.notes),
        }

    def kpi_cell(self, index: int, name: str) -> str:
        """``last (best)`` of one KPI of one job, as the table shows it."""
        for kpi, pairs in self.kpis:
            pair = pairs[index] if kpi == name else None
            if pair is not None:
                last, best = pair
                return format_value(last) + ("" if last == best else f" ({format_value(best)})")
        return "—"


def job_spec(spec: Mapping[str, Any]) -> dict[str, str]:
    """The compared keys of a job's own spec, as ``job.<key>``."""
    return {f"job.{k}": shown(k, spec[k]) for k in JOB_KEYS if k in spec}


SUBMITTED_SKIP = frozenset({"name", "command", "env", "then", "inputs"})
"""Keys of a submitted spec not compared as the experiment spec (per-job or not settings)."""


def yaml_spec(text: Any, origin: str) -> dict[str, str] | None:
    """A YAML experiment spec flattened, or None when it is missing or no spec."""
    if not isinstance(text, str) or not text.strip():
        return None
    # omegaconf's loader, as TAO reads specs (imported only when comparing).
    from tao_slurm_tui.core.tao.schema import SpecSyntaxError, parse_spec_yaml

    try:
        return flatten(parse_spec_yaml(text, origin))
    except SpecSyntaxError:
        return None


def column(job: JobRecord, runs: JobRuns, experiment: str | None) -> CompareJob:
    """One job's column: the ``experiment.yaml`` TAO saved (when read, and valid), else the
    experiment spec this tool staged for a ``[tao]`` job, else the submitted spec; with its
    runs and how far it trained."""
    source, spec = "experiment.yaml", yaml_spec(experiment, "experiment.yaml")
    if spec is None:
        source, spec = "staged spec", yaml_spec(tao_table(job).get("experiment"), "the spec")
    if spec is None:
        source = "submitted spec"
        spec = flatten({k: v for k, v in job.spec.items() if k not in SUBMITTED_SKIP})
        spec = {k: v for k, v in spec.items() if not k.startswith(JOB_KEYS)}
    ledger = runs.ledger
    epochs = ""
    if ledger.current is not None and ledger.max_epoch is not None:
        epochs = f"{ledger.current + 1}/{ledger.max_epoch + 1}"
    return CompareJob(job.id, str(job.status), {**spec, **job_spec(job.spec)}, source, runs, epochs)


def compare(jobs: Sequence[CompareJob], notes: Sequence[str] = ()) -> Comparison:
    """The comparison of ``jobs`` (in the given order)."""
    keys: list[str] = []
    seen: set[str] = set()
    for job in jobs:
        for key in job.spec:
            if key not in seen:
                seen.add(key)
                keys.append(key)
    differences = []
    for key in keys:
        if key.rsplit(".", 1)[-1] in _ALWAYS_DIFFERENT:
            continue
        values = tuple(job.spec.get(key) for job in jobs)
        if len(set(values)) > 1:
            differences.append((key, values))
    names: list[str] = []
    for job in jobs:
        names += [s.name for s in job.runs.series if s.name not in names]
    names.sort(key=lambda n: not is_loss(n))
    kpis = []
    for name in names:
        pairs = []
        for job in jobs:
            found = next((s for s in job.runs.series if s.name == name), None)
            pairs.append(None if found is None else (found.last, found.best()))
        kpis.append((name, tuple(pairs)))
    return Comparison(tuple(jobs), tuple(differences), tuple(kpis), tuple(notes))
