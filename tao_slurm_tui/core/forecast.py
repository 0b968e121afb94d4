"""Will a running TAO training finish in this wall-time slice, and what will the stop cost?

From the run's own ``status.json`` (seconds per epoch, the last epoch, ``max_epoch``), the saved
experiment spec (``train.checkpoint_interval``) and the slice's clock (how long the run has run
by SLURM's count, and ``timeout_hours``):

- "finishes in this slice (~40 min left of 3 h 48 min)", or
- "needs ~2 more slices; the stop at 3 h 48 min will lose ~35 min since the last checkpoint
  (epoch 12)": the epochs done after the last checkpoint before the stop are trained again, or
- "never finishes: a checkpoint every 10 epochs takes ~5 h 10 min, longer than the 3 h 48 min
  slice": every requeue would restart from the same checkpoint.

The next run resumes from :attr:`Forecast.resume_epoch` (completed epochs); that is what the
sandbox test compares with the outcome, within one checkpoint interval.

Pure: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from tao_slurm_tui.core.runs import RunLedger, human_duration

ForecastKind = Literal["finishes", "more_slices", "never", "stops"]


@dataclass(frozen=True)
class SliceClock:
    """Where the current run stands in its slice."""

    into_run: float
    """Seconds the current run has run (SLURM's elapsed time of the run)."""
    timeout: float
    """Seconds of ``timeout_hours``: when the batch script stops the command."""
    requeue: bool = True
    """The job requeues itself after the stop (``use_requeue``)."""
    timeouts_left: int | None = None
    """Timeout requeues left (``max_timeout_requeues`` minus those made); None: unknown."""


@dataclass(frozen=True)
class Forecast:
    """What the current slice will bring."""

    kind: ForecastKind
    text: str
    """One sentence (the details pane and ``status --json``)."""
    remaining: float
    """Seconds of training left."""
    slice_left: float
    """Seconds left in this slice."""
    slice_length: float
    """Seconds of a slice (``timeout_hours``)."""
    epoch_seconds: float
    more_slices: int | None = None
    """Slices needed after this one (None: never, or it finishes in this one)."""
    resume_epoch: int | None = None
    """Completed epochs the next run will resume from (None: it finishes, or unknown)."""
    lost: float | None = None
    """Seconds of training the stop throws away (since the last checkpoint)."""
    checkpoint_interval: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``forecast`` of ``status --json`` (durations in seconds)."""
        return {
            "kind": self.kind,
            "text": self.text,
            "remaining_seconds": round(self.remaining),
            "slice_left_seconds": round(self.slice_left),
            "slice_seconds": round(self.slice_length),
            "epoch_seconds": round(self.epoch_seconds, 3),
            "more_slices": self.more_slices,
            "resume_epoch": self.resume_epoch,
            "lost_seconds": None if self.lost is None else round(self.lost),
            "checkpoint_interval": self.checkpoint_interval,
        }


def forecast(ledger: RunLedger, clock: SliceClock, now: float) -> Forecast | None:
    """The forecast of the ledger's current run, or None while too little is known (no epoch
    done yet in any run, no epoch length) or when the training has done its last epoch."""
    run = ledger.run
    seconds = (run.epoch_seconds if run else None) or ledger.epoch_seconds()
    if run is None or ledger.current is None or ledger.max_epoch is None or not seconds:
        return None
    total, done = ledger.max_epoch + 1, ledger.current + 1
    if done >= total or clock.timeout <= 0:
        return None
    since = (
        0.0 if ledger.epoch_seen_at is None else min(seconds, max(0.0, now - ledger.epoch_seen_at))
    )
    remaining = max(1.0, (total - done) * seconds - since)
    slice_left = max(0.0, clock.timeout - clock.into_run)
    slice_text = human_duration(clock.timeout)
    base = dict(
        remaining=remaining,
        slice_left=slice_left,
        slice_length=clock.timeout,
        epoch_seconds=seconds,
        checkpoint_interval=ledger.checkpoint_interval,
    )
    if remaining <= slice_left:
        text = f"finishes in this slice (~{human_duration(remaining)} left of {slice_text})"
        return Forecast("finishes", text, **base)  # type: ignore[arg-type]
    if not clock.requeue:
        text = (
            f"stops at {slice_text} before it finishes (~{human_duration(remaining)} of training "
            "left) and is not requeued: use_requeue is off"
        )
        return Forecast("stops", text, **base)  # type: ignore[arg-type]
    return _after_the_stop(ledger, clock, since, base)


def _after_the_stop(
    ledger: RunLedger, clock: SliceClock, since: float, base: dict[str, Any]
) -> Forecast:
    """The stop at the end of this slice: where the next run resumes, what is lost, how many
    slices are left."""
    run = ledger.run
    assert run is not None and ledger.current is not None and ledger.max_epoch is not None
    seconds = float(base["epoch_seconds"])
    total, done = ledger.max_epoch + 1, ledger.current + 1
    started = run.start if run.start is not None else done
    interval = ledger.checkpoint_interval or 1
    done_at_stop = done + math.floor((clock.timeout - clock.into_run + since) / seconds)
    saved = done_at_stop // interval * interval
    resume = saved if saved > started else started  # nothing saved in this run: where it began
    lost = clock.timeout - clock.into_run - ((resume - done) * seconds - since)
    if resume <= started:
        lost = clock.timeout  # the whole slice
    startup = max(0.0, clock.into_run - (done - started) * seconds - since)
    per_slice = math.floor(max(0.0, clock.timeout - startup) / seconds)
    progress = per_slice // interval * interval
    slice_text = human_duration(clock.timeout)
    known = ledger.checkpoint_interval is not None
    if total - resume <= per_slice:
        more: int | None = 1
    elif progress <= 0:
        more = None
    else:
        more = 1 + math.ceil((total - resume - per_slice) / progress)
    if more is None:
        text = (
            f"never finishes: a checkpoint every {interval} epochs takes "
            f"~{human_duration(interval * seconds)}, longer than the {slice_text} slice, so every "
            f"requeue restarts from epoch {resume}; set train.checkpoint_interval to "
            f"{max(1, per_slice)} or less"
        )
        return Forecast("never", text, resume_epoch=resume, lost=lost, **base)
    plural = "s" if more != 1 else ""
    if resume <= started:
        loss = f"the stop at {slice_text} will lose the whole slice: no checkpoint is written in it"
    else:
        loss = (
            f"the stop at {slice_text} will lose ~{human_duration(max(0.0, lost))} since the last "
            f"checkpoint (epoch {resume})"
        )
    if not known:
        loss += " if it checkpoints every epoch (checkpoint_interval not read yet)"
    text = f"needs ~{more} more slice{plural}; {loss}"
    if clock.timeouts_left is not None and more > clock.timeouts_left:
        text += (
            f"; only {clock.timeouts_left} timeout requeue"
            f"{'s are' if clock.timeouts_left != 1 else ' is'} left (max_timeout_requeues)"
        )
    return Forecast(
        "more_slices", text, more_slices=more, resume_epoch=resume, lost=max(0.0, lost), **base
    )
