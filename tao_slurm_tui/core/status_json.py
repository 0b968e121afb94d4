"""TAO's ``status.json``: JSON lines read incrementally, summarized into progress and a verdict.

TAO 7.3 appends one JSON object per line to ``<results_dir>/<subtask>/status.json``
(``results/<id>/train/status.json``; where the product looks: :mod:`.tick_reads`): ``date``,
``time``, ``status`` (STARTED, RUNNING, FAILURE, SKIPPED; SUCCESS is in TAO's enum but its
training path never writes it), ``verbosity``, and optionally ``message``, ``kpi`` and, at each
epoch end, ``epoch`` (0-based), ``max_epoch`` (epochs - 1), ``step``, ``max_step``,
``time_per_epoch``, ``time_per_step`` and ``eta`` (``timedelta`` strings such as ``0:03:21.5``).

A run that succeeds ends with RUNNING "Training loop complete." / "Train finished successfully."
and exit 0: no SUCCESS line. A run that fails writes FAILURE with TAO's prefix ("Configuration
error: ...", "Parameter validation error: ...", "File system error: ...") and exits 1. The file
is read like a log (new bytes only), so the last line may be incomplete; lines that are not JSON
objects are skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from tao_slurm_tui.core.models import Progress, TaoStatus

Terminal = Literal["SUCCESS", "FAILURE"]

MAX_LINE_BYTES = 1 << 20
"""A partial line longer than this is dropped: memory stays bounded whatever the file holds."""

MAX_KPI_KEYS = 32
"""KPIs kept per job: the most recently written ones (loss, mAP, lr, ...). A ``status.json``
that writes new keys on every line cannot grow the record, the state DB or the detail pane."""
MAX_KPI_KEY_CHARS = 64
"""A longer KPI name is cut."""
MAX_KPI_TEXT_CHARS = 64
"""A KPI written as text (DINO and RT-DETR write mAP as strings) is cut to this."""
MAX_WORD_CHARS = 64
"""``status`` and ``eta`` kept."""


class StatusJsonReader:
    """Turns chunks of ``status.json`` bytes into entries, keeping an incomplete last line."""

    def __init__(self) -> None:
        self._partial = b""
        self._dropping = False
        self.skipped = 0
        """Lines that were not a JSON object (garbage, truncated writes, oversized lines)."""

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """Add new bytes; return the entries of every line completed by them."""
        if not data:
            return []
        buf = self._partial + data
        *lines, self._partial = buf.split(b"\n")
        entries: list[dict[str, Any]] = []
        for line in lines:
            if self._dropping:
                # The rest of an oversized line: skip up to its newline.
                self._dropping = False
                continue
            entry = self._parse(line)
            if entry is not None:
                entries.append(entry)
        if len(self._partial) > MAX_LINE_BYTES:
            self._partial = b""
            self._dropping = True
            self.skipped += 1
        return entries

    def flush(self) -> list[dict[str, Any]]:
        """Parse the pending last line (call when the file is known to be complete)."""
        line, self._partial = self._partial, b""
        if self._dropping:
            self._dropping = False
            return []
        entry = self._parse(line)
        return [entry] if entry is not None else []

    def reset(self) -> None:
        """Forget the partial line (the file was truncated or replaced)."""
        self._partial = b""
        self._dropping = False

    def _parse(self, line: bytes) -> dict[str, Any] | None:
        text = line.strip()
        if not text:
            return None
        try:
            value = json.loads(text.decode("utf-8", errors="replace"))
        except ValueError:
            self.skipped += 1
            return None
        if not isinstance(value, dict):
            self.skipped += 1
            return None
        return value


def _cut(value: Any, limit: int) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def kpi_value(value: Any) -> int | float | bool | str | None:
    """A KPI value as it is kept: a number as it is, text cut to :data:`MAX_KPI_TEXT_CHARS`;
    None (dropped) for a list, an object or null."""
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return _cut(value, MAX_KPI_TEXT_CHARS)
    return None


def merge_kpis(kept: dict[str, Any], new: Mapping[Any, Any]) -> None:
    """Fold ``new`` KPIs into ``kept`` (in place): the latest value of each key, keys in the
    order they were last written, at most :data:`MAX_KPI_KEYS` of them (the least recently
    written go first), names and text values cut."""
    for key, value in new.items():
        kept_value = kpi_value(value)
        if kept_value is None:
            continue
        name = _cut(key, MAX_KPI_KEY_CHARS)
        kept.pop(name, None)
        kept[name] = kept_value
    for name in list(kept)[: max(0, len(kept) - MAX_KPI_KEYS)]:
        del kept[name]


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(float(value.strip()))
        except ValueError:
            return None
    return None


class StatusSummary:
    """Running summary of ``status.json`` entries; memory does not grow with the file."""

    def __init__(self) -> None:
        self.progress = Progress()
        """Latest epoch, max_epoch, eta, time per epoch, merged KPIs, last status and message."""
        self.terminal: Terminal | None = None
        """The verdict of the last run in the file: its SUCCESS or FAILURE line, if any. A
        STARTED line (a run that began again, e.g. resumed after a requeue) clears it."""
        self.terminal_message = ""
        """The message of that entry."""

    def add(self, entries: Iterable[Mapping[str, Any]]) -> None:
        """Fold more entries in (oldest first)."""
        p = self.progress
        for entry in entries:
            status = entry.get("status")
            message = first_line(entry.get("message"))
            if isinstance(status, str) and status.strip():
                p.status = _cut(status.strip().upper(), MAX_WORD_CHARS)
                if p.status == "STARTED":
                    self.terminal, self.terminal_message = None, ""
                elif p.status in ("SUCCESS", "FAILURE"):
                    self.terminal = "SUCCESS" if p.status == "SUCCESS" else "FAILURE"
                    self.terminal_message = message
            if message:
                p.message = message
            epoch = _as_int(entry.get("epoch"))
            if epoch is not None:
                p.epoch = epoch
            max_epoch = _as_int(entry.get("max_epoch"))
            if max_epoch is not None:
                p.max_epoch = max_epoch
            for key in ("eta", "time_per_epoch"):
                value = entry.get(key)
                if value not in (None, ""):
                    setattr(p, key, _cut(value, MAX_WORD_CHARS))
            kpi = entry.get("kpi")
            if isinstance(kpi, Mapping):
                # KPIs arrive piecemeal (loss each epoch, mAP at validation): keep each latest.
                merge_kpis(p.kpi, kpi)

    @property
    def message(self) -> str:
        """The verdict's message, or the last message when there is no verdict."""
        if self.terminal is not None:
            return self.terminal_message
        return self.progress.message or ""


MESSAGE_CHARS = 300
"""A message is kept to its first line and this many characters: TAO also logs its whole
experiment configuration as one message ("Experiment configuration:\n<yaml>")."""
MAX_MESSAGE_CHARS = MESSAGE_CHARS
"""``message`` kept (a configuration dump or a traceback is cut to its first line, with "…")."""


def first_line(message: Any) -> str:
    """The first non-empty line of a status message, bounded ('' for none)."""
    if message in (None, ""):
        return ""
    for line in str(message).splitlines():
        if line.strip():
            text = line.strip()
            return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"
    return ""


def summarize(
    entries: Iterable[Mapping[str, Any]],
) -> tuple[Progress, Terminal | None, str]:
    """Summarize ``status.json`` entries.

    Returns:
        (progress, terminal, message): ``terminal`` is the verdict of the last run (None if
        there is none) and ``message`` its message (or the last message when there is none).
    """
    summary = StatusSummary()
    summary.add(entries)
    return summary.progress, summary.terminal, summary.message


def resolve_completed(terminal: Terminal | None, message: str) -> tuple[TaoStatus, str]:
    """TAO status of a job SLURM reports COMPLETED (exit 0), given what ``status.json`` said.

    FAILURE → Error with the container's message; SUCCESS, or no verdict at all → Complete. TAO
    7.3 never writes SUCCESS: a run that succeeded ends with RUNNING "Train finished
    successfully." and exit 0, which is Complete with that message. No file at all (a command
    that does not write one) is Complete too: the command exited 0.
    """
    if terminal == "FAILURE":
        return TaoStatus.ERROR, message or "the TAO container reported FAILURE in status.json"
    return TaoStatus.COMPLETE, message or "finished with exit code 0"


STATUS_WORDS = {
    "STARTED": "started",
    "RUNNING": "running",
    "SUCCESS": "succeeded",
    "FAILURE": "failed",
    "SKIPPED": "skipped",
}
"""TAO's status values in words; any other value is shown as written."""


def status_words(status: str | None) -> str:
    """A ``status`` value of status.json for display ('' for none); an unknown value (a newer
    TAO's) is shown as written, bounded and on one line."""
    if not status:
        return ""
    known = STATUS_WORDS.get(status.upper())
    return known if known is not None else first_line(status)[:40]


# ----------------------------------------------------------------------------------- durations

_TIMEDELTA = re.compile(
    r"^\s*(?:(?P<days>-?\d+) days?, )?(?P<h>\d+):(?P<m>\d{1,2}):(?P<s>\d{1,2}(?:\.\d+)?)\s*\Z"
)


def parse_timedelta(text: str | None) -> float | None:
    """Seconds in a duration as TAO writes it (Python's ``str(timedelta)``: ``0:03:21.5``,
    ``0:10:18.004311``, ``1 day, 2:00:00``); a bare number of seconds is accepted too. None for
    anything else."""
    if text is None:
        return None
    value = str(text).strip()
    match = _TIMEDELTA.match(value)
    if match is None:
        try:
            seconds = float(value)
        except ValueError:
            return None
        return seconds if seconds >= 0 and seconds == seconds and seconds != float("inf") else None
    days = int(match["days"] or 0)
    total = days * 86400 + int(match["h"]) * 3600 + int(match["m"]) * 60 + float(match["s"])
    return max(0.0, total)


def duration_words(text: str | None) -> str:
    """A TAO duration for people: ``3m 21s``, ``1h 02m``, ``2d 4h``, ``0.3s``; the text as
    written when it is no duration ('' for none)."""
    seconds = parse_timedelta(text)
    if seconds is None:
        return first_line(text)
    if seconds < 10:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h {whole // 60 % 60:02d}m"
    return f"{whole // 86400}d {whole // 3600 % 24}h"
