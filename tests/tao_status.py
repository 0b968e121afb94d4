"""``status.json`` lines as TAO 7.3 writes them for a training (the sandbox's stand-in writes
the same; tests/integration/test_sandbox_tao.py checks it against the real thing): per run a
STARTED line, the resume line when it resumed, STARTED "Starting Training Loop.", then per epoch
the validation KPIs, the epoch line, the training KPIs; the KPIs ride along on later lines."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any


def val_kpi(epoch: int, detector: bool = False) -> dict[str, Any]:
    """Validation KPIs of an epoch (a detector writes mAP as a string, as DINO does)."""
    loss = round(2.0 / (1 + epoch) + 0.1, 4)
    if detector:
        return {"val_mAP": str(round(0.05 * (epoch + 1), 4)), "val_loss": loss}
    return {"val_loss": loss, "val_acc_1": round(min(0.98, 0.1 * (epoch + 1)), 4)}


def train_kpi(epoch: int) -> dict[str, Any]:
    """The training loss of an epoch."""
    return {"train_loss": round(1.9 / (1 + epoch) + 0.05, 4)}


def line(status: str, message: str = "", kpi: dict[str, Any] | None = None, **data: Any) -> str:
    entry: dict[str, Any] = dict(data)
    entry.update(date="12/1/2026", time="9:5:3", status=status, verbosity="INFO")
    if message:
        entry["message"] = message
    if kpi:
        entry["kpi"] = kpi
    return json.dumps(entry)


def training_run(
    first: int,
    stop: int,
    epochs: int,
    *,
    resumed_from: str = "",
    epoch_seconds: float = 2.0,
    detector: bool = False,
    results: str = "/lustre/r/train",
) -> list[str]:
    """The lines of one run that trains TAO's epochs ``first`` .. ``stop - 1`` of ``epochs``."""
    out = [line("STARTED", "Starting Classification train.")]
    if resumed_from:
        out.append(line("RUNNING", f"Resuming training from checkpoint: {results}/{resumed_from}"))
    out.append(line("STARTED", "Starting Training Loop."))
    kpi: dict[str, Any] = {}
    took = str(timedelta(seconds=epoch_seconds))
    for epoch in range(first, stop):
        kpi = val_kpi(epoch, detector)
        out.append(line("RUNNING", "Eval metrics generated.", kpi))
        eta = str(timedelta(seconds=(epochs - 1 - epoch) * epoch_seconds))
        fields = dict(epoch=epoch, step=(epoch + 1) * 4, max_epoch=epochs - 1, max_step=epochs * 4)
        fields.update(time_per_epoch=took, time_per_step="0:00:00.5", eta=eta)
        out.append(line("RUNNING", "Training loop in progress", kpi, **fields))
        kpi = train_kpi(epoch)
        out.append(line("RUNNING", "Train metrics generated.", kpi))
    if stop == epochs:
        out.append(line("RUNNING", "Training loop complete.", kpi))
        out.append(line("RUNNING", "Train finished successfully.", kpi))
    return out


def text(lines: list[str]) -> str:
    return "".join(f"{item}\n" for item in lines)
