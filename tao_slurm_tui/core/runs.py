"""The runs of a TAO training across wall-time slices, read from its ``status.json``: where each
run started, what it trained and checkpointed, its KPIs per epoch, and whether it resumed.

A job stopped at ``timeout_hours`` requeues itself under the same SLURM id, and TAO appends to
the same ``<results_dir>/train/status.json``: every run (slice) begins with a STARTED line
("Starting Classification train."), writes "Resuming training from checkpoint: <path>" when it
auto-resumed from ``*_latest.pth``, then STARTED "Starting Training Loop." and one line per
epoch (``epoch`` 0-based, ``time_per_epoch``, ``eta``). KPIs arrive on lines of their own:
validation metrics just *before* an epoch's line, the epoch's ``train_loss`` just *after* it (the
order of Lightning's hooks), and every later line carries the last dict again. So a KPI is taken
from the line that changed it, a training KPI belongs to the epoch line before it and any other
to the next epoch line.

The check (issue 21): a run after the first must start past the last checkpoint the run before it
wrote. "run 3 restarted from epoch 0: no checkpoint was written in run 2" is a run without
progress; after :data:`MAX_NO_PROGRESS` of them in a row the job is not requeued again (the
batch script reads the reason, see :attr:`RunLedger.stop`). "epoch N" in sentences counts
completed epochs, as the queue shows progress: a run that restarted from epoch 0 trains TAO's
epoch 0 first.

Pure: no I/O. The ledger is folded incrementally (new lines only) and stored as JSON.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tao_slurm_tui.core.kpi_series import EpochPoint, clean_kpis
from tao_slurm_tui.core.train_command import MAX_NO_PROGRESS

MAX_RUNS = 64
"""Runs remembered per job (the oldest are forgotten; a timeout cap is far below it)."""

LOOP_MESSAGE = "Starting Training Loop"
RESUME_MESSAGE = "Resuming training from checkpoint:"
_CHECKPOINT_EPOCH_RE = re.compile(r"epoch[_=]?(\d{1,6})")
_TIMEDELTA_RE = re.compile(r"(?:(\d{1,6}) days?, )?(\d{1,6}):(\d{2}):(\d{2}(?:\.\d+)?)")


def parse_timedelta(value: Any) -> float | None:
    """Seconds in a Python ``timedelta`` string as TAO writes durations (``0:10:18.004311``,
    ``1 day, 2:03:04``); None for anything else."""
    if not isinstance(value, str):
        return None
    match = _TIMEDELTA_RE.fullmatch(value.strip())
    if match is None:
        return None
    days, hours, minutes, seconds = match.groups()
    return int(days or 0) * 86400 + int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def human_duration(seconds: float) -> str:
    """A duration as a researcher says it: ``35 s``, ``40 min``, ``3 h 48 min``, ``2 d 4 h``."""
    total = max(0, round(seconds))
    if total < 60:
        return f"{total} s"
    minutes = round(total / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def checkpoint_epoch(path: str) -> int | None:
    """The 0-based epoch in a checkpoint's file name (``model_epoch_005.pth`` → 5)."""
    name = path.rsplit("/", 1)[-1]
    match = _CHECKPOINT_EPOCH_RE.search(name)
    return int(match.group(1)) if match else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


@dataclass
class Run:
    """One run (slice) of the training."""

    number: int
    """1-based: run 2 is the first requeue's."""
    resumed_from: str = ""
    """The checkpoint the run resumed from ('' when it started from scratch)."""
    loop: bool = False
    """The training loop started (set-up is over: no resume line by now means none)."""
    first: int | None = None
    """0-based epoch of its first epoch line."""
    last: int | None = None
    """0-based epoch of its last epoch line."""
    epoch_seconds: float | None = None
    """Seconds per epoch (TAO's ``time_per_epoch``, smoothed over the run's epochs)."""
    progress: bool | None = None
    """True: it started past the checkpoint of the run before; False: it did not; None: the
    first run, or not known yet."""
    verdict: str = ""
    """The sentence when it restarted without progress."""

    @property
    def start(self) -> int | None:
        """Epochs completed when the run started (its first epoch's 0-based index), once known:
        from its first epoch line, else from the checkpoint it resumed from, else 0 once its
        training loop started without resuming."""
        if self.first is not None:
            return self.first
        if self.resumed_from:
            epoch = checkpoint_epoch(self.resumed_from)
            return None if epoch is None else epoch + 1
        return 0 if self.loop else None

    @property
    def epochs(self) -> int:
        """Epochs it trained (by its epoch lines)."""
        if self.first is None or self.last is None:
            return 0
        return max(0, self.last - self.first + 1)

    def last_checkpoint(self, interval: int | None) -> int | None:
        """Epochs completed at the last checkpoint it wrote (every ``interval`` epochs, as TAO's
        ``ModelCheckpoint(every_n_epochs=...)``); None when it wrote none or it is unknown."""
        if not interval or self.first is None or self.last is None:
            return None
        done = (self.last + 1) // interval * interval
        return done if done - 1 >= self.first else None

    def to_json(self) -> dict[str, Any]:
        """Stored form (and ``status --json``'s ``runs``)."""
        return {
            "run": self.number,
            "resumed_from": self.resumed_from,
            "loop": self.loop,
            "first_epoch": self.first,
            "last_epoch": self.last,
            "start": self.start,
            "epoch_seconds": self.epoch_seconds,
            "progress": self.progress,
            "verdict": self.verdict,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Run:
        """Inverse of :meth:`to_json` (tolerates missing keys)."""
        seconds = data.get("epoch_seconds")
        return cls(
            number=int(data.get("run", 1)),
            resumed_from=str(data.get("resumed_from", ""))[:500],
            loop=bool(data.get("loop", False)),
            first=_int(data.get("first_epoch")),
            last=_int(data.get("last_epoch")),
            epoch_seconds=float(seconds) if isinstance(seconds, (int, float)) else None,
            progress=data.get("progress") if isinstance(data.get("progress"), bool) else None,
            verdict=str(data.get("verdict", ""))[:500],
        )


@dataclass
class ExperimentFacts:
    """What the forecast and the check need from the saved experiment spec."""

    checkpoint_interval: int | None = None
    """``train.checkpoint_interval`` in epochs (None: unknown, or counted in steps)."""
    num_epochs: int | None = None
    """``train.num_epochs``."""


def experiment_facts(text: str) -> ExperimentFacts:
    """The facts of TAO's ``experiment.yaml`` (the resolved spec it saves in the results dir);
    empty facts when it is not a YAML mapping."""
    # Read as TAO reads it (omegaconf's loader); imported here, not by every module that
    # imports this one (the monitor reads one experiment.yaml per training, once).
    from tao_slurm_tui.core.tao.schema import SpecSyntaxError, parse_spec_yaml

    try:
        data = parse_spec_yaml(text, "experiment.yaml")
    except SpecSyntaxError:
        return ExperimentFacts()
    train = data.get("train") if isinstance(data, dict) else None
    if not isinstance(train, dict):
        return ExperimentFacts()
    interval = _int(train.get("checkpoint_interval"))
    unit = str(train.get("checkpoint_interval_unit") or "epoch").lower()
    epochs = _int(train.get("num_epochs"))
    return ExperimentFacts(
        checkpoint_interval=interval if interval and interval > 0 and unit == "epoch" else None,
        num_epochs=epochs if epochs and epochs > 0 else None,
    )


@dataclass
class RunLedger:
    """Every run of one job, folded from its ``status.json`` lines (stored between ticks)."""

    runs: list[Run] = field(default_factory=list)
    checkpoint_interval: int | None = None
    """From ``experiment.yaml`` (None until read, or unknown)."""
    num_epochs: int | None = None
    experiment_read: bool = False
    """``experiment.yaml`` was read (or found missing after the training started)."""
    current: int | None = None
    """0-based epoch of the last epoch line of the current run."""
    last_kpi: dict[str, float] = field(default_factory=dict)
    """The KPIs of the last line (a changed value is a new KPI)."""
    pending: dict[str, float] = field(default_factory=dict)
    """KPIs set before the epoch line they belong to."""
    kpi_names: list[str] = field(default_factory=list)
    """Every KPI name kept so far (bounded)."""
    epoch_seen_at: float | None = None
    """When (this machine's clock) the last epoch line was read."""
    max_epoch: int | None = None
    stop: str = ""
    """Why the job must not be requeued again ('' while it may be)."""

    # ------------------------------------------------------------------ reading

    @property
    def run(self) -> Run | None:
        """The current (latest) run."""
        return self.runs[-1] if self.runs else None

    @property
    def no_progress(self) -> int:
        """Runs in a row, up to the latest judged one, that restarted without progress."""
        count = 0
        for run in reversed([r for r in self.runs if r.progress is not None]):
            if run.progress:
                break
            count += 1
        return count

    @property
    def problem(self) -> str:
        """The latest run's verdict when it restarted without progress ('' otherwise)."""
        judged = [r for r in self.runs if r.progress is not None]
        return judged[-1].verdict if judged and not judged[-1].progress else ""

    def last_checkpoint(self) -> int | None:
        """Epochs completed at the newest checkpoint any run wrote (by the interval)."""
        done = [c for r in self.runs if (c := r.last_checkpoint(self.checkpoint_interval))]
        return max(done) if done else None

    # ------------------------------------------------------------------ folding

    def take_experiment(self, facts: ExperimentFacts) -> None:
        """What ``experiment.yaml`` says (read once)."""
        self.experiment_read = True
        self.checkpoint_interval = facts.checkpoint_interval
        self.num_epochs = facts.num_epochs

    def fold(self, entries: Iterable[Mapping[str, Any]], now: float) -> list[EpochPoint]:
        """Fold new ``status.json`` entries (oldest first) in.

        Args:
            entries: the parsed lines.
            now: this machine's clock (when the lines were read).

        Returns:
            The epoch points made or changed by these lines (to store).
        """
        touched: dict[tuple[int, int], EpochPoint] = {}
        for entry in entries:
            self._fold_one(entry, now, touched)
        return list(touched.values())

    def _fold_one(
        self, entry: Mapping[str, Any], now: float, touched: dict[tuple[int, int], EpochPoint]
    ) -> None:
        status = str(entry.get("status") or "").upper()
        message = str(entry.get("message") or "")
        epoch = _int(entry.get("epoch"))
        if (status == "STARTED" and not message.startswith(LOOP_MESSAGE)) or not self.runs:
            self._begin_run()
        elif epoch is not None and self.current is not None and epoch <= self.current:
            self._begin_run()  # a writer without STARTED lines went back: a new run
        run = self.runs[-1]
        if message.startswith(LOOP_MESSAGE):
            run.loop = True
        elif message.startswith(RESUME_MESSAGE):
            run.resumed_from = message[len(RESUME_MESSAGE) :].strip()[:500]
        kpi = clean_kpis(entry.get("kpi"), self.kpi_names)
        self.kpi_names += [k for k in kpi if k not in self.kpi_names]
        changed = {k: v for k, v in kpi.items() if self.last_kpi.get(k) != v}
        if "kpi" in entry:
            self.last_kpi = kpi
        if epoch is not None and epoch >= 0:
            self._epoch_line(run, epoch, entry, now)
            self._add(touched, run.number, epoch, {**self.pending, **changed})
            self.pending = {}
            return
        for name, value in changed.items():
            after = name.startswith("train") or message.startswith("Train metrics")
            if after and self.current is not None:
                self._add(touched, run.number, self.current, {name: value})
            else:
                self.pending[name] = value

    def _begin_run(self) -> None:
        previous = self.runs[-1] if self.runs else None
        if previous is not None and previous.progress is None:
            self._judge(previous)
        number = previous.number + 1 if previous else 1
        self.runs = [*self.runs, Run(number)][-MAX_RUNS:]
        self.current = None
        self.last_kpi = {}
        self.pending = {}

    def _epoch_line(self, run: Run, epoch: int, entry: Mapping[str, Any], now: float) -> None:
        first = run.first is None
        if first:
            run.first = epoch
        run.last = epoch
        self.current = epoch
        self.epoch_seen_at = now
        max_epoch = _int(entry.get("max_epoch"))
        if max_epoch is not None and max_epoch >= 0:
            self.max_epoch = max_epoch
        took = parse_timedelta(entry.get("time_per_epoch"))
        if took is not None and took > 0:
            # Smoothed: the first epoch of a run carries its start-up; later ones settle.
            old = run.epoch_seconds
            run.epoch_seconds = took if old is None else 0.5 * old + 0.5 * took
        if first:
            self._judge(run)

    def _add(
        self,
        touched: dict[tuple[int, int], EpochPoint],
        run: int,
        epoch: int,
        kpi: dict[str, float],
    ) -> None:
        if not kpi:
            return
        point = touched.setdefault((run, epoch), EpochPoint(run, epoch))
        point.kpi.update(kpi)

    # ------------------------------------------------------------------ the check

    def _judge(self, run: Run) -> None:
        """Did ``run`` start past the last checkpoint of the run before it?"""
        index = self.runs.index(run)
        start = run.start
        if index == 0 or start is None:
            return
        before = self.runs[index - 1]
        interval = self.checkpoint_interval
        saved = before.last_checkpoint(interval)
        if saved is not None:
            run.progress = start >= saved
            why = (
                f"run {before.number} saved a checkpoint at epoch {saved} that it did not "
                "resume from (is train.resume_training_checkpoint_path set?)"
            )
        elif interval is not None:
            run.progress = False
            why = f"no checkpoint was written in run {before.number}"
        elif before.start is not None:
            run.progress = start > before.start
            why = f"run {before.number} left no checkpoint to resume from"
        else:
            return
        run.verdict = (
            "" if run.progress else f"run {run.number} restarted from epoch {start}: {why}"
        )
        if not run.progress and self.no_progress >= MAX_NO_PROGRESS and not self.stop:
            self.stop = self.stop_reason(run)

    def stop_reason(self, run: Run) -> str:
        """Why the job is not requeued again after ``run``, and what to change."""
        count = self.no_progress
        first = run.number - count + 1
        runs = f"runs {first} to {run.number}" if count > 2 else f"runs {first} and {run.number}"
        advice = "lower train.checkpoint_interval or raise timeout_hours"
        interval, seconds = self.checkpoint_interval, run.epoch_seconds or self.epoch_seconds()
        if interval and seconds:
            takes = human_duration(interval * seconds)
            advice = f"a checkpoint every {interval} epochs takes ~{takes}; {advice}"
        return f"not requeued again: {runs} restarted without progress ({run.verdict}); {advice}"

    def epoch_seconds(self) -> float | None:
        """The latest known seconds per epoch of any run."""
        for run in reversed(self.runs):
            if run.epoch_seconds:
                return run.epoch_seconds
        return None

    def summary(self) -> dict[str, Any]:
        """What the job's record carries (``Progress.runs``): small and bounded; empty while
        no run is known."""
        run = self.run
        if run is None:
            return {}
        return {
            "run": run.number,
            "starts": [r.start for r in self.runs][-16:],
            "no_progress": self.no_progress,
            "problem": self.problem,
            "stop": self.stop,
            "checkpoint_interval": self.checkpoint_interval,
            "last_checkpoint": self.last_checkpoint(),
            "epoch_seconds": self.epoch_seconds(),
            "resumed_from": run.resumed_from,
        }

    # ------------------------------------------------------------------ storage

    def to_json(self) -> dict[str, Any]:
        """Stored form."""
        return {
            "runs": [r.to_json() for r in self.runs],
            "checkpoint_interval": self.checkpoint_interval,
            "num_epochs": self.num_epochs,
            "experiment_read": self.experiment_read,
            "current": self.current,
            "last_kpi": dict(self.last_kpi),
            "pending": dict(self.pending),
            "kpi_names": list(self.kpi_names),
            "epoch_seen_at": self.epoch_seen_at,
            "max_epoch": self.max_epoch,
            "stop": self.stop,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> RunLedger:
        """Inverse of :meth:`to_json`; a damaged or missing ledger is an empty one."""
        if not isinstance(data, Mapping):
            return cls()
        seen = data.get("epoch_seen_at")
        runs = data.get("runs")
        return cls(
            runs=[Run.from_json(r) for r in runs if isinstance(r, Mapping)][-MAX_RUNS:]
            if isinstance(runs, list)
            else [],
            checkpoint_interval=_int(data.get("checkpoint_interval")),
            num_epochs=_int(data.get("num_epochs")),
            experiment_read=bool(data.get("experiment_read", False)),
            current=_int(data.get("current")),
            last_kpi=clean_kpis(data.get("last_kpi")),
            pending=clean_kpis(data.get("pending")),
            kpi_names=[n for n in data.get("kpi_names") or [] if isinstance(n, str)][:12],
            epoch_seen_at=float(seen) if isinstance(seen, (int, float)) else None,
            max_epoch=_int(data.get("max_epoch")),
            stop=str(data.get("stop", ""))[:1000],
        )
