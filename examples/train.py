#!/usr/bin/env python3
"""A small CPU stand-in for a TAO training run, for the sandbox demo and tests.

It prints one line per epoch to stdout (main.out), a warning now and then to stderr (main.err),
and appends JSON lines to ``$TAO_API_RESULTS_DIR/$TAO_JOB_ID/train/status.json`` as TAO 7.3's
training writes them: 0-based ``epoch`` with ``max_epoch`` = epochs - 1, ``time_per_epoch`` and
``eta`` as ``timedelta`` strings, a ``kpi``; on success RUNNING "Train finished successfully."
and exit 0 (TAO writes no SUCCESS line), on failure a FAILURE line and exit 1.

    python3 train.py --epochs 12 --seconds 2 [--fail-at N]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path


def status_file() -> Path | None:
    root = os.environ.get("TAO_API_RESULTS_DIR")
    job = os.environ.get("TAO_JOB_ID")
    if not root or not job:
        return None
    path = Path(root) / job / "train" / "status.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def write_status(path: Path | None, status: str, **fields: object) -> None:
    if path is None:
        return
    now = datetime.now(timezone.utc)
    kpi = fields.pop("kpi", None)
    message = fields.pop("message", None)
    entry = {  # TAO's order: the epoch fields, then its own, no zero padding in date and time
        **fields,
        "date": f"{now.month}/{now.day}/{now.year}",
        "time": f"{now.hour}:{now.minute}:{now.second}",
        "status": status,
        "verbosity": "INFO",
    }
    if message:
        entry["message"] = message
    if kpi:
        entry["kpi"] = kpi
    with path.open("a") as handle:
        handle.write(json.dumps(entry) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds per epoch")
    parser.add_argument("--fail-at", type=int, default=0, help="fail at this epoch (0: never)")
    args = parser.parse_args()

    path = status_file()
    random.seed(args.epochs)
    write_status(path, "STARTED", message="Starting Training Loop.")
    print(f"training for {args.epochs} epochs on {os.uname().nodename}", flush=True)
    started = time.monotonic()
    loss = 0.0
    for epoch in range(1, args.epochs + 1):
        began = time.monotonic()
        time.sleep(args.seconds)
        loss = 2.0 * math.exp(-epoch / 4) + random.uniform(0, 0.05)
        took = time.monotonic() - began
        eta = (time.monotonic() - started) / epoch * (args.epochs - epoch)
        print(f"epoch {epoch}/{args.epochs} loss={loss:.4f}", flush=True)
        if epoch % 5 == 0:
            print(f"warning: learning rate schedule step at epoch {epoch}", file=sys.stderr)
        if args.fail_at and epoch == args.fail_at:
            print("Traceback (most recent call last):\nValueError: bad spec", file=sys.stderr)
            write_status(
                path, "FAILURE", message=f"Parameter validation error: bad spec at epoch {epoch}."
            )
            return 1
        write_status(
            path,
            "RUNNING",
            epoch=epoch - 1,
            step=epoch,
            max_epoch=args.epochs - 1,
            max_step=args.epochs,
            time_per_epoch=str(timedelta(seconds=took)),
            time_per_step=str(timedelta(seconds=took)),
            eta=str(timedelta(seconds=eta)),
            message="Training loop in progress",
            kpi={"train_loss": round(loss, 4)},
        )
    write_status(
        path, "RUNNING", message="Training loop complete.", kpi={"train_loss": round(loss, 4)}
    )
    write_status(path, "RUNNING", message="Train finished successfully.")
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
