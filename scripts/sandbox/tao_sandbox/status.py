"""TAO's status logger (``nvidia_tao_pytorch/core/loggers/api_logging.py`` in 7.3.0).

Every line of ``<results_dir>/status.json`` is one JSON object: the caller's data first (the epoch
fields of the Lightning callback), then ``date`` (``12/1/2026``: no zero padding), ``time``
(``9:5:3``: no zero padding either), ``status``, ``verbosity``, the optional ``message`` and, once a
model has set them, ``kpi`` (which then rides along on every later line, as in TAO).
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from typing import Any

STARTED = "STARTED"
RUNNING = "RUNNING"
FAILURE = "FAILURE"
SKIPPED = "SKIPPED"
SUCCESS = "SUCCESS"  # in TAO's enum; its training path never writes it


def td(seconds: float) -> str:
    """A duration as TAO writes it: ``str(timedelta)`` (``0:00:02.004311``)."""
    return str(timedelta(seconds=seconds))


class StatusLogger:
    """Appends status lines to ``filename`` (TAO opens it with ``append=True``)."""

    def __init__(self, filename: str) -> None:
        self.path = os.path.realpath(filename)
        self.kpi: dict[str, Any] = {}
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - open for the run

    @staticmethod
    def stamp(now: datetime | None = None) -> tuple[str, str]:
        now = now or datetime.now()
        return f"{now.month}/{now.day}/{now.year}", f"{now.hour}:{now.minute}:{now.second}"

    def line(
        self,
        data: dict[str, Any] | None = None,
        status: str = RUNNING,
        verbosity: str = "INFO",
        message: str | None = None,
        now: datetime | None = None,
    ) -> str:
        out = dict(data or {})
        out["date"], out["time"] = self.stamp(now)
        out["status"] = status
        out["verbosity"] = verbosity
        if message:
            out["message"] = message
        if self.kpi:
            out["kpi"] = self.kpi
        return json.dumps(out)

    def write(
        self,
        data: dict[str, Any] | None = None,
        status: str = RUNNING,
        verbosity: str = "INFO",
        message: str | None = None,
    ) -> None:
        self._file.write(self.line(data, status, verbosity, message) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()
