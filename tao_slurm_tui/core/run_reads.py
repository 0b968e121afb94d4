"""The remote reads of a TAO training's runs, as shell text and back (pure).

A training's ``status.json`` grows by a few lines per epoch for days and is read *incrementally*:
each read asks for the bytes after the offset the last one stopped at (at most
:data:`RUN_READ_CAP`), so a tick costs what the training wrote since the last one, and the KPI
series of every epoch of every run is kept (a tail would lose epochs while the app was closed).
The file is where TAO 7.3 writes it, ``<results_dir>/train/status.json`` (``<results_dir>/
<subtask>/``; older or other writers: ``<results_dir>/status.json``). The bytes travel base64
encoded: exact offsets whatever the file holds, and no line of it can pose as one of our marker
lines. Only regular files are read (a FIFO must not hang the poll), through ``head -c``.

``experiment.yaml`` (the spec TAO saved, beside ``status.json``) is read once per training for
its ``checkpoint_interval``; and the monitor's ``requeue.stop`` (why the batch script must not
requeue the job again) is written in the same command.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass

from tao_slurm_tui.core.quoting import quote
from tao_slurm_tui.core.tick_reads import marker, parse_sections, script

RUN_READ_CAP = 64 * 1024
"""Bytes of ``status.json`` read per training per command (more follow in the next)."""
EXPERIMENT_CAP = 64 * 1024
"""Bytes of ``experiment.yaml`` read."""
SUBTASK_DIRS = ("train",)
"""Where TAO 7.3 puts a training's files under its ``results_dir``, searched first."""


@dataclass(frozen=True)
class RunRead:
    """What to read (and write) for one training."""

    key: str
    """The job's id (a marker line names it)."""
    directory: str
    """The training's ``results_dir`` (``status.json`` is searched below it)."""
    offset: int = 0
    """Bytes of ``status.json`` already read."""
    experiment: bool = False
    """Also read ``experiment.yaml``."""
    stop_path: str = ""
    """Write :attr:`stop_reason` to this ``requeue.stop`` ('' nothing to write)."""
    stop_reason: str = ""


@dataclass(frozen=True)
class RunAnswer:
    """What came back for one training."""

    path: str = ""
    """The ``status.json`` found ('' none yet)."""
    size: int = 0
    """Its size in bytes."""
    data: bytes = b""
    """Its bytes from the offset on (at most :data:`RUN_READ_CAP`)."""
    experiment: str | None = None
    """``experiment.yaml`` when asked for and found."""
    stopped: bool = False
    """``requeue.stop`` was written."""


def _part(read: RunRead) -> str:
    key, d = quote(read.key), quote(read.directory.rstrip("/") or "/")
    candidates = " ".join(
        [
            *(f"{d}/{sub}/status.json" for sub in SUBTASK_DIRS),
            f"{d}/status.json",
            f"{d}/*/status.json",
        ]
    )
    found = f's=; for c in {candidates}; do if [ -f "$c" ]; then s=$c; break; fi; done'
    head = "printf '%srun %s\\n' \"$M\" " + key
    body = (
        'if [ -n "$s" ]; then printf \'%s %s\\n\' "$(stat -c %s -- "$s")" '
        '"$(printf \'%s\' "$s" | base64 -w 0)"; '
        f'tail -c +{read.offset + 1} -- "$s" | head -c {RUN_READ_CAP} | base64 -w 0; '
        "printf '\\n'; fi"
    )
    parts = [found, head, body]
    if read.experiment:
        parts.append(
            'e="${s%/*}/experiment.yaml"; if [ -n "$s" ] && [ -f "$e" ]; then '
            "printf '%sexp %s\\n' \"$M\" " + key + "; "
            f"head -c {EXPERIMENT_CAP} -- \"$e\" | base64 -w 0; printf '\\n'; fi"
        )
    if read.stop_path:
        parts.append(
            f"printf '%s\\n' {quote(read.stop_reason)} > {quote(read.stop_path)} && "
            "printf '%sstopped %s\\n' \"$M\" " + key
        )
    return "; ".join(parts)


def run_reads_command(reads: Sequence[RunRead], nonce: str) -> str:
    """One ``sh -c`` reading every training of ``reads`` ('' when there is none); its marker
    lines carry ``nonce`` (core.tick_reads)."""
    if not reads:
        return ""
    return script([_part(read) for read in reads], nonce)


def parse_run_reads(stdout: str, reads: Sequence[RunRead], nonce: str) -> dict[str, RunAnswer]:
    """The answers by job id; a training whose part is missing or garbled gets an empty answer
    (nothing is folded for it this time).

    Raises:
        ValueError: the output was cut short (no ``end`` marker).
    """
    if f"{marker(nonce)}end" not in stdout.split("\n"):
        raise ValueError("the output has no end marker")
    sections = parse_sections(stdout, nonce)
    answers: dict[str, RunAnswer] = {}
    for read in reads:
        lines = [line for line in sections.get(("run", read.key), []) if line.strip()]
        answer = RunAnswer(stopped=("stopped", read.key) in sections)
        if len(lines) >= 1:
            size, _, path = lines[0].partition(" ")
            data = _decode(lines[1]) if len(lines) > 1 else b""
            if size.isdigit() and data is not None:
                name = _decode(path)
                answer = RunAnswer(
                    path=name.decode("utf-8", "replace") if name else "",
                    size=int(size),
                    data=data,
                    stopped=answer.stopped,
                )
        exp = [line for line in sections.get(("exp", read.key), []) if line.strip()]
        if exp:
            text = _decode(exp[0])
            if text is not None:
                answer = RunAnswer(
                    answer.path,
                    answer.size,
                    answer.data,
                    text.decode("utf-8", "replace"),
                    answer.stopped,
                )
        answers[read.key] = answer
    return answers


def _decode(text: str) -> bytes | None:
    try:
        return base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None


# ----------------------------------------------------------------------------------- compare

SPEC_CAP = 256 * 1024
"""Bytes of a job's ``experiment.yaml`` read for a comparison."""


def experiment_reads_command(directories: dict[str, str], nonce: str) -> str:
    """One ``sh -c`` printing each training's ``experiment.yaml`` (base64), by job id."""
    parts = []
    for key, directory in directories.items():
        d = quote(directory.rstrip("/") or "/")
        subtasks = [f"{d}/{sub}/experiment.yaml" for sub in SUBTASK_DIRS]
        candidates = " ".join([*subtasks, f"{d}/experiment.yaml", f"{d}/*/experiment.yaml"])
        parts.append(
            f"printf '%sspec %s\\n' \"$M\" {quote(key)}; "
            f'for c in {candidates}; do if [ -f "$c" ]; then '
            f"head -c {SPEC_CAP} -- \"$c\" | base64 -w 0; break; fi; done; printf '\\n'"
        )
    return script(parts, nonce) if parts else ""


def parse_experiment_reads(stdout: str, keys: Sequence[str], nonce: str) -> dict[str, str]:
    """Job id → its ``experiment.yaml`` (absent when none was found).

    Raises:
        ValueError: the output was cut short (no ``end`` marker).
    """
    if f"{marker(nonce)}end" not in stdout.split("\n"):
        raise ValueError("the output has no end marker")
    sections = parse_sections(stdout, nonce)
    found = {}
    for key in keys:
        lines = [line for line in sections.get(("spec", key), []) if line.strip()]
        data = _decode(lines[0]) if lines else None
        if data:
            found[key] = data.decode("utf-8", "replace")
    return found
