#!/usr/bin/env python3
"""A small CPU stand-in for a TAO training run, for the sandbox demo and tests.

It prints one line per epoch to stdout (main.out), a warning now and then to stderr (main.err),
and appends TAO-style JSON lines to ``$TAO_API_RESULTS_DIR/$TAO_JOB_ID/status.json`` — the same
fields TAO containers write (date, time, status, verbosity, message, epoch, max_epoch, eta, kpi)
— so the queue shows real progress and the final SUCCESS/FAILURE decides the TAO status.

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
from datetime import datetime, timezone
from pathlib import Path


def status_file() -> Path | None:
    root = os.environ.get("TAO_API_RESULTS_DIR")
    job = os.environ.get("TAO_JOB_ID")
    if not root or not job:
        return None
    path = Path(root) / job / "status.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def write_status(path: Path | None, status: str, **fields: object) -> None:
    if path is None:
        return
    now = datetime.now(timezone.utc)
    entry = {
        "date": now.strftime("%-m/%-d/%Y"),
        "time": now.strftime("%-H:%M:%S"),
        "status": status,
        "verbosity": "INFO",
        **fields,
    }
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
    write_status(path, "STARTED", message="Starting training.", max_epoch=args.epochs)
    print(f"training for {args.epochs} epochs on {os.uname().nodename}", flush=True)
    started = time.monotonic()
    for epoch in range(1, args.epochs + 1):
        time.sleep(args.seconds)
        loss = 2.0 * math.exp(-epoch / 4) + random.uniform(0, 0.05)
        eta = (time.monotonic() - started) / epoch * (args.epochs - epoch)
        print(f"epoch {epoch}/{args.epochs} loss={loss:.4f}", flush=True)
        if epoch % 5 == 0:
            print(f"warning: learning rate schedule step at epoch {epoch}", file=sys.stderr)
        if args.fail_at and epoch == args.fail_at:
            print("Traceback (most recent call last):\nValueError: bad spec", file=sys.stderr)
            write_status(path, "FAILURE", message=f"Training failed at epoch {epoch}.")
            return 1
        write_status(
            path,
            "RUNNING",
            epoch=epoch,
            max_epoch=args.epochs,
            eta=f"{int(eta // 60)}:{int(eta % 60):02d}",
            kpi={"loss": round(loss, 4)},
        )
    write_status(path, "SUCCESS", message="Training finished.", kpi={"loss": round(loss, 4)})
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
