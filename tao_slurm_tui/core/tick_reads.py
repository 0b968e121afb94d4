"""The files a monitor tick reads besides the queue, as shell text and back (pure).

A tick sends at most two commands. The first is the queue (:mod:`tao_slurm_tui.core.slurm_poll`)
followed in the same shell by :func:`status_tail_command`: one ``tail -v`` over the
``status.json`` of every job last seen running. The second goes out only when a job newly
finished and needs more (:func:`finished_reads_command`): its final ``status.json``, the last
lines of ``main.out``/``main.err`` for the retry rules, the reason the batch script wrote when it
requeued itself, and the size of the partition for ``--exclude``. Every part is framed by marker
lines (:func:`marker`), so one missing file costs only its own part.

Where ``status.json`` is: TAO 7.3 writes it to ``<results_dir>/<subtask>/status.json``
(``results/<id>/train/status.json``: its ``update_results_dir`` appends the subtask), and NVIDIA's
own job handler finds it by searching the results dir. The reads here ask, per job, for
``<results_dir>/status.json`` and ``<results_dir>/*/status.json`` (the directories a glob the
login host's shell expands; one that matches nothing costs nothing), and
:func:`split_status_tails` gives each job its files' text, oldest run first (a free-form command
may run train, then evaluate).

What the files hold is written by whatever runs in the job, so nothing in them may steer the
parse or stall the read:

- The marker lines carry a nonce the caller draws per command (never written anywhere a job
  can read it first), and ``tail -v``'s ``==> NAME <==`` headers name each file by a spelling
  of its path only this command knows (:func:`disguised`; appended to each directory the glob
  found, never globbed itself: bash would fold its slashes): a line of one job's file cannot
  open another job's section or end the output early.
- Only regular, readable files are read (``test -f``: a FIFO, a device or a symlink to one is
  skipped, so a job that replaces its ``status.json`` with a FIFO cannot block the tick), every
  read is bounded in bytes (``tail -c``, then lines), and ``timeout`` ends a read that still
  blocks (a file swapped for a FIFO between the test and the open).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field

from tao_slurm_tui.core.quoting import join, quote
from tao_slurm_tui.core.retry import LOG_TAIL_LINES

MARK = "@@tao-mon:"
"""Prefix of the marker lines our scripts print (followed by the command's nonce)."""
MISSING = "@@tao-missing@@"
"""Printed instead of a log tail when the log file is not there (yet)."""

STATUS_TAIL_LIVE = 16 * 1024
"""Bytes of ``status.json`` read per running job per tick (progress; KPIs merge across ticks)."""
STATUS_TAIL_FINAL = 256 * 1024
"""Bytes of ``status.json`` read once when a job has finished (the verdict is near the end)."""
LOG_TAIL_BYTES = 256 * 1024
"""Bytes of ``main.out``/``main.err`` read for the last :data:`LOG_TAIL_LINES` lines (a log
without newlines is not read backwards to its start)."""
REASON_TAIL_BYTES = 4096
"""Bytes of ``requeue.reason`` read for its last line."""
READ_TIMEOUT = 5
"""Seconds one read may take before ``timeout`` ends it (a file swapped for a FIFO)."""
NONCE_BITS = 32
"""Bits of the nonce spelled into each file name (:func:`disguised`)."""


def marker(nonce: str) -> str:
    """The marker prefix of one command: :data:`MARK` and the nonce."""
    return f"{MARK}{nonce}:"


def disguised(path: str, nonce: str) -> str:
    """``path`` spelled with a pattern only this command knows: after its directory, one
    ``./`` or ``/`` per bit of ``nonce`` (``/r/status.json`` → ``/r/.///././status.json``).
    The kernel reads the same file; ``tail -v`` prints the name as given, so no file's
    content can forge the header of another file."""
    head, _, name = path.rpartition("/")
    bits = bin(int(nonce, 16) & ((1 << NONCE_BITS) - 1))[2:].zfill(NONCE_BITS)
    return f"{head}/" + "".join("./" if bit == "1" else "/" for bit in bits) + name


def section(kind: str, key: str, body: str) -> str:
    """Shell text printing the marker ``kind key``, then what ``body`` prints."""
    return f"printf '%s{kind} %s\\n' \"$M\" {quote(key)}; {body}; printf '\\n'"


def script(parts: Sequence[str], nonce: str) -> str:
    """Wrap shell parts into one ``sh -c`` (the login shell may be csh), ending with the
    ``end`` marker that proves the output was not cut short. ``$t`` is ``timeout`` where the
    host has it."""
    prelude = [
        f"M={quote(marker(nonce))}",
        f't=; if command -v timeout >/dev/null 2>&1; then t="timeout {READ_TIMEOUT}"; fi',
    ]
    return join(["sh", "-c", "; ".join([*prelude, *parts, "printf '%send\\n' \"$M\""])])


def status_files_tail(results_dirs: Sequence[str], nbytes: int, nonce: str) -> str:
    """Shell text: one bounded ``tail -v -c`` over every ``status.json`` of the jobs whose
    results dirs are given -- the dir's own and its subtasks' (``<dir>/*/status.json``) --
    that is a regular, readable file, each named by its :func:`disguised` spelling."""
    suffix = quote(disguised("/status.json", nonce))
    dirs = " ".join(
        f"{quote(d)} {quote(d)}/*" for d in (r.rstrip("/") or "/" for r in results_dirs)
    )
    return (
        f'set --; for d in {dirs}; do f="$d"{suffix}; if [ -f "$f" ] && [ -r "$f" ]; then '
        f'set -- "$@" "$f"; fi; done; if [ "$#" -gt 0 ]; then $t tail -v -c {int(nbytes)} -- '
        '"$@" 2>/dev/null; fi; true'
    )


def status_tail_command(results_dirs: dict[str, str], nbytes: int, nonce: str) -> str:
    """One ``tail -v`` over every ``status.json`` of the jobs (job id → results dir): one
    process, its headers name the files."""
    if not results_dirs:
        return ""
    body = status_files_tail(list(results_dirs.values()), nbytes, nonce)
    return script(["printf '%sstatus\\n' \"$M\"", body], nonce)


def parse_sections(text: str, nonce: str) -> dict[tuple[str, str], list[str]]:
    """``{(kind, key): lines}`` of our marked sections; ``status`` holds ``tail -v`` output.
    Lines are split on newlines only (``str.splitlines`` would also split on the form feeds
    and separators a file may hold)."""
    mark = marker(nonce)
    sections: dict[tuple[str, str], list[str]] = {}
    current: list[str] | None = None
    for line in text.split("\n"):
        if line.startswith(mark):
            kind, _, arg = line[len(mark) :].partition(" ")
            if kind == "end":
                current = None
                continue
            current = sections.setdefault((kind, arg.strip()), [])
            continue
        if current is not None:
            current.append(line)
    return sections


def split_status_tails(
    lines: Sequence[str], results_dirs: dict[str, str], nonce: str
) -> dict[str, str]:
    """Split ``tail -v`` output of :func:`status_files_tail` into ``{job id: text}``.

    Only a header with this command's :func:`disguised` spelling of ``/status.json`` opens a
    file (a header a file's content imitates is that file's content): ``<dir>`` or
    ``<dir>/<subtask>`` before it names the job whose results dir is ``<dir>``. A job with
    several files gets them oldest run first (by the time stamp of each file's last line), so
    the latest run's lines come last.
    """
    tail = f"{disguised('/status.json', nonce)} <=="
    owner = {d.rstrip("/") or "/": j for j, d in results_dirs.items()}
    files: dict[str, list[list[str]]] = {}
    current: list[str] | None = None
    for line in lines:
        if line.startswith("==> ") and line.endswith(tail):
            job = _owner_of(line[4 : -len(tail)], owner)
            if job is not None:
                current = []
                files.setdefault(job, []).append(current)
                continue
        if current is not None:
            current.append(line)
    out: dict[str, str] = {}
    for job, parts in files.items():
        texts = ["\n".join(body) for body in parts]
        texts.sort(key=_last_stamp)  # stable: files without a stamp keep tail's order
        out[job] = "\n".join(texts)
    return out


def _owner_of(directory: str, owner: dict[str, str]) -> str | None:
    """The job whose results dir is ``directory`` or its parent (a subtask's)."""
    if directory in owner:
        return owner[directory]
    return owner.get(posixpath.dirname(directory))


def _last_stamp(text: str) -> tuple[int, ...]:
    """(year, month, day, hour, minute, second) of the last line with TAO's ``date``
    (``12/1/2026``) and ``time`` (``9:5:3``); () when there is none."""
    for line in reversed(text.splitlines()[-20:]):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        try:
            month, day, year = (int(x) for x in str(entry.get("date", "")).split("/"))
            hour, minute, second = (int(float(x)) for x in str(entry.get("time", "")).split(":"))
        except ValueError:
            continue
        return (year, month, day, hour, minute, second)
    return ()


# ----------------------------------------------------------------------------------- round two


@dataclass
class FinishedReads:
    """What the second round trip of a tick reads, keyed by job id (insertion order is the
    order of the script's parts)."""

    status: dict[str, str] = field(default_factory=dict)
    """Results dirs of finished jobs whose ``status.json`` files round one did not read (a
    COMPLETED job's verdict, a FAILED job's FAILURE message)."""
    logs: dict[str, tuple[str, str]] = field(default_factory=dict)
    """``(main.out, main.err)`` of failed attempts, for :func:`~.retry.classify`."""
    requeue: dict[str, str] = field(default_factory=dict)
    """``requeue.reason`` of attempts SLURM requeued (the batch script writes why)."""
    partitions: set[str] = field(default_factory=set)
    """Partitions whose node count decides how many failed nodes may be excluded."""
    order: list[str] = field(default_factory=list)
    """Job ids in the order they were added."""

    def add(self, job_id: str) -> None:
        """Keep ``job_id``'s place in the script's order."""
        if job_id not in self.order:
            self.order.append(job_id)


@dataclass
class FinishedAnswers:
    """The parsed answer to :func:`finished_reads_command`."""

    status: dict[str, str]
    """Job id → ``status.json`` text ('' when missing)."""
    out: dict[str, list[str] | None]
    """Job id → the last lines of ``main.out`` (None when missing)."""
    err: dict[str, list[str] | None]
    """Job id → the last lines of ``main.err`` (None when missing)."""
    requeue: dict[str, str]
    """Job id → the last line of ``requeue.reason`` ('' when none)."""
    partition_nodes: dict[str, int]
    """Partition → node count."""


def _last_lines(path: str, nbytes: int, lines: int, missing: str = "") -> str:
    """Shell text: the last ``lines`` lines within the last ``nbytes`` bytes of a regular,
    readable file (``missing`` printed otherwise)."""
    q = quote(path)
    other = f"echo {missing}" if missing else "true"
    return (
        f"if [ -f {q} ] && [ -r {q} ]; then $t tail -c {int(nbytes)} -- {q} 2>/dev/null "
        f"| tail -n {int(lines)}; else {other}; fi"
    )


def finished_reads_command(reads: FinishedReads, nonce: str) -> str:
    """One ``sh -c`` reading everything in ``reads``."""
    parts: list[str] = []
    for job_id in reads.order:
        for kind, path in zip(("out", "err"), reads.logs.get(job_id, ()), strict=False):
            body = _last_lines(path, LOG_TAIL_BYTES, LOG_TAIL_LINES, MISSING)
            parts.append(section(kind, job_id, body))
        if job_id in reads.requeue:
            body = _last_lines(reads.requeue[job_id], REASON_TAIL_BYTES, 1)
            parts.append(section("requeue", job_id, body))
    if reads.status:
        tail = status_files_tail(list(reads.status.values()), STATUS_TAIL_FINAL, nonce)
        parts.append(f"printf '%sstatus\\n' \"$M\"; {tail}; printf '\\n'")
    for partition in sorted(reads.partitions):
        sinfo = join(["sinfo", "-h", "-p", partition, "-o", "%n"]) + " 2>/dev/null"
        parts.append(section("sinfo", partition, sinfo))
    return script(parts, nonce)


def parse_finished_reads(stdout: str, reads: FinishedReads, nonce: str) -> FinishedAnswers:
    """Split the answer to :func:`finished_reads_command` by job.

    Raises:
        ValueError: the output was cut short (no ``end`` marker).
    """
    if f"{marker(nonce)}end" not in stdout.split("\n"):
        raise ValueError("the output has no end marker")
    sections = parse_sections(stdout, nonce)
    statuses = split_status_tails(sections.get(("status", ""), []), reads.status, nonce)
    answers = FinishedAnswers(
        status={j: statuses.get(j, "") for j in reads.status},
        out={j: _log_lines(sections.get(("out", j))) for j in reads.logs},
        err={j: _log_lines(sections.get(("err", j))) for j in reads.logs},
        requeue={},
        partition_nodes={
            p: len({n for n in sections.get(("sinfo", p), []) if n.strip()})
            for p in reads.partitions
        },
    )
    for job_id in reads.requeue:
        lines = [ln for ln in sections.get(("requeue", job_id), []) if ln.strip()]
        answers.requeue[job_id] = lines[-1].strip() if lines else ""
    return answers


def requeue_why(line: str) -> str:
    """The reason in a ``requeue.reason`` line (``<date> restart=N rc=R why...``, written by the
    batch script's ``tao_requeue``); the line itself when it has another shape."""
    parts = line.split(" ", 3)
    return parts[3].strip() if len(parts) == 4 and parts[1].startswith("restart=") else line.strip()


def _log_lines(lines: list[str] | None) -> list[str] | None:
    if lines is None or any(line == MISSING for line in lines):
        return None
    return lines
