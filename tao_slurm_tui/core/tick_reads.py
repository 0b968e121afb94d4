"""The files a monitor tick reads besides the queue, as shell text and back (pure).

A tick sends at most two commands. The first is the queue (:mod:`tao_slurm_tui.core.slurm_poll`)
followed in the same shell by :func:`status_tail_command`: one ``tail -v`` over the
``status.json`` files of every job last seen running. The second goes out only when a job newly
finished and needs more (:func:`finished_reads_command`): its final ``status.json``, the last
lines of ``main.out``/``main.err`` for the retry rules, the reason the batch script wrote when it
requeued itself, and the size of the partition for ``--exclude``. Every part is framed by marker
lines (:data:`MARK`), so one missing file costs only its own part.

Where ``status.json`` is: TAO 7.3 writes it to ``<results_dir>/<subtask>/status.json``
(``results/<id>/train/status.json``: its ``update_results_dir`` appends the subtask), and NVIDIA's
own job handler finds it by searching the results dir. The reads here ask, per job, for
``<results_dir>/status.json`` and ``<results_dir>/*/status.json`` (a glob the login host's shell
expands; one that matches nothing costs nothing), and :func:`split_status_tails` gives each job
its files' text, oldest run first (a free-form command may run train, then evaluate).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field

from tao_slurm_tui.core.quoting import join, quote
from tao_slurm_tui.core.retry import LOG_TAIL_LINES

MARK = "@@tao-mon:"
"""Prefix of the marker lines our scripts print."""
MISSING = "@@tao-missing@@"
"""Printed instead of a log tail when the log file is not there (yet)."""

STATUS_TAIL_LIVE = 16 * 1024
"""Bytes of ``status.json`` read per running job per tick (progress; KPIs merge across ticks)."""
STATUS_TAIL_FINAL = 256 * 1024
"""Bytes of ``status.json`` read once when a job has finished (the verdict is near the end)."""


def section(kind: str, key: str, body: str) -> str:
    """Shell text printing the marker ``kind key``, then what ``body`` prints."""
    return f"printf '%s{kind} %s\\n' \"$M\" {quote(key)}; {body}; printf '\\n'"


def script(parts: Sequence[str]) -> str:
    """Wrap shell parts into one ``sh -c`` (the login shell may be csh), ending with the
    ``end`` marker that proves the output was not cut short."""
    return join(["sh", "-c", "; ".join([f"M={quote(MARK)}", *parts, "printf '%send\\n' \"$M\""])])


def status_files(results_dir: str) -> str:
    """Shell words naming every ``status.json`` of a job: its results dir's own and its
    subtasks' (``<results_dir>/*/status.json``, expanded by the login host's shell)."""
    base = quote(results_dir.rstrip("/") or "/")
    return f"{base}/status.json {base}/*/status.json"


def status_tail_command(results_dirs: dict[str, str], nbytes: int) -> str:
    """One ``tail -v`` over every ``status.json`` of the jobs (job id → results dir): one
    process, its headers name the files."""
    if not results_dirs:
        return ""
    files = " ".join(status_files(d) for d in results_dirs.values())
    body = f"tail -v -c {int(nbytes)} -- {files} 2>/dev/null"
    return script(["printf '%sstatus\\n' \"$M\"", f"{body}; true"])


def parse_sections(text: str) -> dict[tuple[str, str], list[str]]:
    """``{(kind, key): lines}`` of our marked sections; ``status`` holds ``tail -v`` output."""
    sections: dict[tuple[str, str], list[str]] = {}
    current: list[str] | None = None
    for line in text.split("\n"):
        if line.startswith(MARK):
            kind, _, arg = line[len(MARK) :].partition(" ")
            if kind == "end":
                current = None
                continue
            current = sections.setdefault((kind, arg.strip()), [])
            continue
        if current is not None:
            current.append(line)
    return sections


def split_status_tails(lines: Sequence[str], results_dirs: dict[str, str]) -> dict[str, str]:
    """Split ``tail -v`` output of :func:`status_files` into ``{job id: text}``.

    A header ``==> <dir>/status.json <==`` or ``==> <dir>/<subtask>/status.json <==`` belongs to
    the job whose results dir is ``<dir>``. A job with several files gets them oldest run first
    (by the time stamp of each file's last line), so the latest run's lines come last.
    """
    owner = {d.rstrip("/") or "/": j for j, d in results_dirs.items()}
    files: dict[str, list[tuple[str, list[str]]]] = {}
    current: list[str] | None = None
    for line in lines:
        if line.startswith("==> ") and line.endswith(" <=="):
            job = _owner_of(line[4:-4], owner)
            current = None
            if job is not None:
                current = []
                files.setdefault(job, []).append((line[4:-4], current))
            continue
        if current is not None:
            current.append(line)
    out: dict[str, str] = {}
    for job, parts in files.items():
        texts = ["\n".join(body) for _path, body in parts]
        texts.sort(key=_last_stamp)  # stable: files without a stamp keep tail's order
        out[job] = "\n".join(texts)
    return out


def _owner_of(path: str, owner: dict[str, str]) -> str | None:
    if posixpath.basename(path) != "status.json":
        return None
    parent = posixpath.dirname(path)
    if parent in owner:
        return owner[parent]
    return owner.get(posixpath.dirname(parent))


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


def finished_reads_command(reads: FinishedReads) -> str:
    """One ``sh -c`` reading everything in ``reads``."""
    parts: list[str] = []
    for job_id in reads.order:
        for kind, path in zip(("out", "err"), reads.logs.get(job_id, ()), strict=False):
            q = quote(path)
            body = f"if [ -r {q} ]; then tail -n {LOG_TAIL_LINES} -- {q}; else echo {MISSING}; fi"
            parts.append(section(kind, job_id, body))
        if job_id in reads.requeue:
            q = quote(reads.requeue[job_id])
            parts.append(section("requeue", job_id, f"tail -n 1 -- {q} 2>/dev/null"))
    if reads.status:
        files = " ".join(status_files(d) for d in reads.status.values())
        tail = f"tail -v -c {STATUS_TAIL_FINAL} -- {files}"
        parts.append(f"printf '%sstatus\\n' \"$M\"; {tail} 2>/dev/null; printf '\\n'")
    for partition in sorted(reads.partitions):
        sinfo = join(["sinfo", "-h", "-p", partition, "-o", "%n"]) + " 2>/dev/null"
        parts.append(section("sinfo", partition, sinfo))
    return script(parts)


def parse_finished_reads(stdout: str, reads: FinishedReads) -> FinishedAnswers:
    """Split the answer to :func:`finished_reads_command` by job.

    Raises:
        ValueError: the output was cut short (no ``end`` marker).
    """
    if f"{MARK}end" not in stdout:
        raise ValueError("the output has no end marker")
    sections = parse_sections(stdout)
    statuses = split_status_tails(sections.get(("status", ""), []), reads.status)
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
