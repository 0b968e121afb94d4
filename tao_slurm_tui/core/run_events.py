"""Run events: what a job writes about itself, read on the login host instead of asking slurmctld.

The batch script (templates/sbatch.sh.j2) appends one line to ``<log dir>/events`` when a run
starts and one when the script exits::

    start <restart count> <unix time> <node>
    end <restart count> <unix time> rc=<exit status>

(``<unix time>`` is bash's ``EPOCHREALTIME``: a decimal comma in some locales.) A run killed
with its node or by SIGKILL leaves no ``end``: only slurmctld can tell then, so the monitor
still asks it, at a slower pace (:mod:`tao_slurm_tui.core.pace`).

Every watching tick sends :func:`events_parts` ahead of the queue: ONE ``stat`` of every active
job's events file (a file-system metadata call, no slurmctld RPC). The sizes it prints are
compared in the shell with the ones the client saw last; only when they differ are the files
printed (``tail -v``) and squeue run in the same round trip. A file only grows, and a new one
adds an entry, so any new line changes the sizes. Pure: shell text and parsers, no I/O.

What the files hold is written by whatever runs in the job, so it is framed as the tick's other
file reads are (:mod:`tao_slurm_tui.core.tick_reads`): the marker lines carry the command's
nonce, ``tail -v`` names each file by its :func:`~tao_slurm_tui.core.tick_reads.disguised`
spelling, only regular files are read, bounded and timed. The caller parses the queue only
from after the part's ``done`` marker (:func:`split_events`), so no line of a file can pass for
a queue row, another job's events or the end of the part.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from tao_slurm_tui.core.quoting import quote
from tao_slurm_tui.core.tick_reads import READ_TIMEOUT, disguised

MARK = "@@tao-ev:"
"""Prefix of the marker lines of the events part (followed by the command's nonce)."""
EVENTS_TAIL = 1024
"""Bytes read of a changed events file (its last few runs)."""

_SIZES_RE = re.compile(r"[0-9,]*")


def marker(nonce: str) -> str:
    """The marker prefix of one command's events part: :data:`MARK` and the nonce."""
    return f"{MARK}{nonce}:"


@dataclass(frozen=True)
class RunEvent:
    """One line of an events file."""

    kind: str
    """``start`` or ``end``."""
    restart: int
    """SLURM's restart count of the run (0 for the first run, +1 per requeue)."""
    at: float
    """When (unix time, from the node's clock)."""
    detail: str = ""
    """The node (``start``) or ``rc=N`` (``end``)."""


@dataclass
class EventsAnswer:
    """What the events part of one tick printed."""

    sizes: str | None = None
    """The files' sizes as the shell printed them (None: the part did not answer)."""
    asked: bool = False
    """True when squeue ran in this round trip (asked for, or the sizes changed)."""
    printed: bool = False
    """True when the files' text was printed (the sizes changed)."""
    cluster_now: float | None = None
    """The login host's clock (unix time) when squeue ran."""
    utc_offset: int = 0
    """The login host's UTC offset in seconds (SLURM prints local times)."""
    last: dict[str, RunEvent | None] = field(default_factory=dict)
    """Job id → the last line of its file, for the files printed (None: no event line)."""
    complete: bool = False
    """True when the part's end marker arrived."""


ASK_CONDITION = '[ "$ea" = 1 ]'
"""Shell test that is true when :func:`events_parts` decided squeue runs."""


def events_parts(paths: Sequence[str], known: str, ask: bool, nonce: str) -> list[str]:
    """Shell statements (for one ``sh -c`` script, joined with ``; ``) that stat ``paths``,
    print the sizes, decide whether squeue runs (:data:`ASK_CONDITION`) and print the files
    that changed.

    Args:
        paths: the events files of the active jobs.
        known: the sizes the client saw last ('' at first).
        ask: squeue runs whatever the sizes say (the pace says it is due).
        nonce: the command's nonce (hex), never written where a job could read it first.
    """
    if not _SIZES_RE.fullmatch(known):
        raise ValueError(f"not a sizes string: {known!r}")
    names = " ".join(quote(disguised(p, nonce)) for p in paths)
    # (stat of a FIFO does not open it; a missing file prints nothing: the sizes change)
    stat = f"$(stat -L --printf '%s,' -- {names} 2>/dev/null)" if paths else "''"
    changed = f'[ "$es" != {quote(known)} ]'
    tail = f"{_files_tail(names)}; printf '\\n'"
    return [
        f"em={quote(marker(nonce))}",
        f't=; if command -v timeout >/dev/null 2>&1; then t="timeout {READ_TIMEOUT}"; fi',
        f"es={stat}",
        f"ea={1 if ask else 0}",
        f"if {changed}; then ea=1; fi",
        'printf "%ssizes %s\\n%sask %s\\n" "$em" "$es" "$em" "$ea"',
        f"if {changed}; then {tail}; fi" if paths else "true",
        f'if {ASK_CONDITION}; then printf "%snow %s\\n" "$em" "$(date \'+%s %z\')"; fi',
        'printf "%sdone\\n" "$em"',
    ]


def _files_tail(names: str) -> str:
    """Shell text: one bounded, timed ``tail -v -c`` over those of the (quoted, disguised)
    ``names`` that are regular, readable files."""
    return (
        f'set --; for f in {names}; do if [ -f "$f" ] && [ -r "$f" ]; then set -- "$@" "$f"; '
        f'fi; done; if [ "$#" -gt 0 ]; then $t tail -v -c {EVENTS_TAIL} -- "$@" 2>/dev/null; '
        "fi; true"
    )


def parse_event_line(line: str) -> RunEvent | None:
    """One events line (None: not one)."""
    parts = line.strip().split(" ", 3)
    if len(parts) < 3 or parts[0] not in ("start", "end") or not parts[1].isdigit():
        return None
    try:
        at = float(parts[2].replace(",", "."))
    except ValueError:
        return None
    return RunEvent(parts[0], int(parts[1]), at, parts[3] if len(parts) > 3 else "")


def split_events(text: str, nonce: str) -> tuple[str, str]:
    """A tick's output cut after its events part: (the part, what follows it). No ``done``
    marker (the output was cut short): ('', '')."""
    head, sep, rest = text.partition(f"{marker(nonce)}done\n")
    return (head + sep, rest) if sep else ("", "")


def parse_events(text: str, paths: Mapping[str, str], nonce: str) -> EventsAnswer:
    """The events part of a tick's output (other lines are ignored).

    Args:
        text: the events part (:func:`split_events`).
        paths: job id → its events file, as sent.
        nonce: the command's nonce.
    """
    answer = EventsAnswer()
    by_path = {disguised(p, nonce): j for j, p in paths.items()}
    mark = marker(nonce)
    inside = False
    current: str | None = None
    lines: dict[str, list[str]] = {}
    for line in text.split("\n"):
        if line.startswith(mark):
            kind, _, arg = line[len(mark) :].partition(" ")
            inside = _take_marker(answer, kind, arg.strip())
            current = None
            continue
        if not inside:
            continue
        if line.startswith("==> ") and line.endswith(" <==") and line[4:-4] in by_path:
            current = by_path[line[4:-4]]
            lines[current] = []
            answer.printed = True
        elif current is not None:
            lines[current].append(line)
    for job_id, body in lines.items():
        events = [e for e in map(parse_event_line, body) if e is not None]
        answer.last[job_id] = events[-1] if events else None
    return answer


def _take_marker(answer: EventsAnswer, kind: str, arg: str) -> bool:
    """Note one marker line; True when the files' text follows it."""
    if kind == "sizes":
        answer.sizes = arg if _SIZES_RE.fullmatch(arg) else None
    elif kind == "ask":
        answer.asked = arg == "1"
        return True
    elif kind == "now":
        clock, _, offset = arg.partition(" ")
        try:
            answer.cluster_now = float(clock)
        except ValueError:
            answer.cluster_now = None
        answer.utc_offset = parse_utc_offset(offset) or 0
    elif kind == "done":
        answer.complete = answer.sizes is not None
    return False


def parse_utc_offset(text: str) -> int | None:
    """``+0130`` (``date +%z``) → 5400 seconds (None when unreadable)."""
    match = re.fullmatch(r"([+-])(\d\d)(\d\d)", text.strip())
    if not match:
        return None
    sign = -1 if match.group(1) == "-" else 1
    return sign * (int(match.group(2)) * 3600 + int(match.group(3)) * 60)


@functools.lru_cache(maxsize=4096)
def slurm_time_to_unix(text: str, utc_offset: int) -> float | None:
    """A SLURM timestamp (``2026-12-01T18:00:00``, the cluster's local time) as unix time."""
    try:
        naive = datetime.strptime(text.strip(), "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return None
    return naive.replace(tzinfo=UTC).timestamp() - utc_offset
