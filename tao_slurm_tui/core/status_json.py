"""TAO's ``status.json``: JSON lines read incrementally, summarized into progress and a verdict.

A TAO container appends one JSON object per line to ``results/<id>/status.json``: ``date``,
``time``, ``status`` (STARTED, RUNNING, SUCCESS, FAILURE, SKIPPED), ``verbosity``, and optionally
``message``, ``kpi``, ``epoch``, ``max_epoch``, ``eta`` and more. The file is read like a log (new
bytes only), so the last line may be incomplete; lines that are not JSON objects are skipped.
"""

from __future__ import annotations

import json
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
MAX_MESSAGE_CHARS = 2000
"""``message`` kept (a configuration dump or a traceback is cut, with "…")."""
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
        """Latest epoch, max_epoch, eta, merged KPIs, last status and message."""
        self.terminal: Terminal | None = None
        """The last SUCCESS or FAILURE status seen, if any."""
        self.terminal_message = ""
        """The message of that entry."""

    def add(self, entries: Iterable[Mapping[str, Any]]) -> None:
        """Fold more entries in (oldest first)."""
        p = self.progress
        for entry in entries:
            status = entry.get("status")
            message = entry.get("message")
            if isinstance(status, str) and status:
                p.status = _cut(status.upper(), MAX_WORD_CHARS)
                if p.status in ("SUCCESS", "FAILURE"):
                    self.terminal = "SUCCESS" if p.status == "SUCCESS" else "FAILURE"
                    self.terminal_message = _cut(message, MAX_MESSAGE_CHARS) if message else ""
            if message not in (None, ""):
                p.message = _cut(message, MAX_MESSAGE_CHARS)
            epoch = _as_int(entry.get("epoch"))
            if epoch is not None:
                p.epoch = epoch
            max_epoch = _as_int(entry.get("max_epoch"))
            if max_epoch is not None:
                p.max_epoch = max_epoch
            eta = entry.get("eta")
            if eta not in (None, ""):
                p.eta = _cut(eta, MAX_WORD_CHARS)
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


def summarize(
    entries: Iterable[Mapping[str, Any]],
) -> tuple[Progress, Terminal | None, str]:
    """Summarize ``status.json`` entries.

    Returns:
        (progress, terminal, message): ``terminal`` is the LAST SUCCESS/FAILURE status (None if
        there is none) and ``message`` its message (or the last message when there is none).
    """
    summary = StatusSummary()
    summary.add(entries)
    return summary.progress, summary.terminal, summary.message


def resolve_completed(terminal: Terminal | None, message: str) -> tuple[TaoStatus, str]:
    """TAO status of a job SLURM reports COMPLETED, given what ``status.json`` said.

    SUCCESS → Complete; FAILURE → Error with the container's message; nothing (no file, or a
    command that does not write one) → Complete, since the command exited 0.
    """
    if terminal == "FAILURE":
        return TaoStatus.ERROR, message or "the TAO container reported FAILURE in status.json"
    if terminal == "SUCCESS":
        return TaoStatus.COMPLETE, message
    return TaoStatus.COMPLETE, message or "finished with exit code 0 (no verdict in status.json)"
