"""KPIs as numbers: what a ``status.json`` ``kpi`` value may become, and the per-epoch series.

TAO's models set ``kpi`` dicts (``train_loss``, ``val_loss``, ``val_acc_1``; DINO and RT-DETR
write ``val_mAP`` as *strings*, ``str(mAP)``). The file comes from the cluster, so it is hostile
data until proven otherwise: a KPI is kept only when its name is a short plain word and its
value a finite number (or a string that parses as one), and a job keeps at most
:data:`MAX_KPI_KEYS` names and :data:`MAX_POINTS` epochs. A longer training is thinned (every
other stored epoch of its older half goes), so a plot keeps its shape while the state DB stays
bounded whatever the file holds.

Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_KPI_KEYS = 12
"""KPI names kept per job (the first ones seen; later new names are dropped)."""
MAX_POINTS = 1000
"""Epochs kept per job; beyond, the series is thinned (:func:`thin`)."""
MAX_KEY_CHARS = 40
"""Longest KPI name kept."""

_KEY_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.@/-]{0,39}")
_NUMBER_RE = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def kpi_number(value: Any) -> float | None:
    """``value`` as a finite float: ints and floats (not bools), or a string holding one number
    (``"0.5123"``, as DINO writes mAP); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = float(value)
    elif isinstance(value, float):
        number = value
    elif isinstance(value, str) and len(value) <= 40 and _NUMBER_RE.fullmatch(value.strip()):
        number = float(value.strip())
    else:
        return None
    return number if math.isfinite(number) else None


def kpi_key(name: Any) -> str | None:
    """``name`` when it is a plain KPI name (a letter, then letters, digits, ``_.@/-``; at most
    :data:`MAX_KEY_CHARS`), else None."""
    if isinstance(name, str) and _KEY_RE.fullmatch(name):
        return name
    return None


def clean_kpis(kpi: Any, known: Iterable[str] = ()) -> dict[str, float]:
    """The numeric, well-named KPIs of one ``kpi`` dict (at most :data:`MAX_KPI_KEYS` names
    counting the ``known`` ones: a new name beyond the cap is dropped)."""
    if not isinstance(kpi, Mapping):
        return {}
    names = set(known)
    out: dict[str, float] = {}
    for raw_name, raw_value in list(kpi.items())[: MAX_KPI_KEYS * 4]:
        name, value = kpi_key(raw_name), kpi_number(raw_value)
        if name is None or value is None:
            continue
        if name not in names:
            if len(names) >= MAX_KPI_KEYS:
                continue
            names.add(name)
        out[name] = value
    return out


@dataclass
class EpochPoint:
    """The KPIs of one epoch of one run (slice) of a job."""

    run: int
    """1-based run of the job the epoch was trained in (a requeue starts the next run)."""
    epoch: int
    """TAO's 0-based epoch."""
    kpi: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON form (``status --json``, ``compare --json``)."""
        return {"run": self.run, "epoch": self.epoch, "kpi": dict(self.kpi)}


def thin(points: list[EpochPoint], limit: int = MAX_POINTS) -> list[EpochPoint]:
    """At most ``limit`` points: while over it, every other point of the older half goes (the
    first and the newest half stay, so recent epochs keep full detail)."""
    kept = list(points)
    while len(kept) > limit and len(kept) > 2:
        half = len(kept) // 2
        older = kept[:half]
        kept = [older[0], *older[2::2], *kept[half:]]
    return kept


@dataclass(frozen=True)
class Series:
    """One KPI over the epochs of a job: the value of each epoch from the latest run that
    trained it (a run that restarted from an earlier epoch overwrites what it trained again)."""

    name: str
    epochs: tuple[int, ...]
    """1-based epoch numbers (TAO's 0-based ``epoch`` + 1: "after epoch 3")."""
    values: tuple[float, ...]

    @property
    def last(self) -> float:
        """The latest value."""
        return self.values[-1]

    def best(self) -> float:
        """The best value: lowest for a loss, highest for anything else (accuracy, mAP)."""
        return min(self.values) if is_loss(self.name) else max(self.values)


def is_loss(name: str) -> bool:
    """True for a KPI where lower is better (its name mentions loss or error)."""
    low = name.lower()
    return "loss" in low or "err" in low


def series(points: Iterable[EpochPoint]) -> list[Series]:
    """Every KPI of ``points`` as a series, losses first, in the order names first appear."""
    by_epoch: dict[str, dict[int, tuple[int, float]]] = {}
    for point in points:
        for name, value in point.kpi.items():
            seen = by_epoch.setdefault(name, {})
            old = seen.get(point.epoch)
            if old is None or point.run >= old[0]:
                seen[point.epoch] = (point.run, value)
    out = []
    for name, values in by_epoch.items():
        epochs = sorted(values)
        out.append(Series(name, tuple(e + 1 for e in epochs), tuple(values[e][1] for e in epochs)))
    return sorted(out, key=lambda s: not is_loss(s.name))


def run_starts(points: Iterable[EpochPoint]) -> list[tuple[int, int]]:
    """``(run, first 1-based epoch)`` of every run after the first: where a requeue resumed."""
    first: dict[int, int] = {}
    for point in points:
        first[point.run] = min(first.get(point.run, point.epoch), point.epoch)
    runs = sorted(first)
    return [(run, first[run] + 1) for run in runs[1:]]


def format_value(value: float) -> str:
    """A KPI as a researcher reads it: 4 significant digits, no exponent for usual values."""
    if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
        return f"{value:.3e}"
    return f"{value:.4g}"
