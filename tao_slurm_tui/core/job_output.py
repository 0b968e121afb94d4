"""A job's StdOut/StdErr as SLURM reports them, and the end of each file: pure command + parser.

The history view's ``l`` on a job this tool did not submit sends :func:`job_output_command` (one
call) and shows what :func:`parse_job_output` makes of the reply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tao_slurm_tui.core import quoting
from tao_slurm_tui.core.accounting import HistoryEntry

OUT_MARK = "@@tao-out:"
"""Prefix of the marker lines of :func:`job_output_command`."""

OUTPUT_TAIL_BYTES = 256 * 1024
"""How much of the end of a foreign job's StdOut/StdErr is read (bounded, whatever its size)."""


@dataclass(frozen=True)
class JobOutput:
    """A job's StdOut/StdErr as SLURM reports them, and the end of each when readable."""

    stdout_path: str = ""
    stderr_path: str = ""
    stdout_readable: bool = False
    stderr_readable: bool = False
    source: str = ""
    """``scontrol`` (the controller still knows the job) or ``default`` (sbatch's default
    ``slurm-<id>.out`` in the job's working directory, once SLURM forgot the job)."""
    stdout: str = ""
    """The last :data:`OUTPUT_TAIL_BYTES` of StdOut ('' when unreadable)."""
    stderr: str = ""
    """The end of StdErr; '' when unreadable or the same file as StdOut."""

    @property
    def same_file(self) -> bool:
        """True when StdErr went to StdOut's file (sbatch's default)."""
        return self.stderr_path == self.stdout_path


def default_output_path(entry: HistoryEntry) -> str:
    """sbatch's default output file of ``entry`` (``slurm-%j.out``, ``slurm-%A_%a.out`` for
    array tasks) in its working directory; '' when sacct has no working directory."""
    if not entry.work_dir:
        return ""
    name = entry.job_id if "_" in entry.job_id else entry.raw_id
    return f"{entry.work_dir.rstrip('/')}/slurm-{name}.out"


def job_output_command(entry: HistoryEntry, max_bytes: int = OUTPUT_TAIL_BYTES) -> str:
    """One remote command: where ``entry``'s StdOut/StdErr are, and the end of each.

    SLURM 22.05's sacct has no StdOut field, so ``scontrol show job`` answers while the
    controller still knows the job (``MinJobAge``); after that sbatch's default path in the
    job's working directory is the best guess (a job that set ``--output`` elsewhere is then
    reported unreadable).

    Raises:
        ValueError: the entry has no plain SLURM id.
    """
    if not entry.raw_id.isdigit():
        raise ValueError(f"{entry.job_id} has no SLURM id to look up")
    fields = 'tr " " "\\n"'
    script = "; ".join(
        [
            f"m={quoting.quote(OUT_MARK)}",
            "src=default",
            f"info=$(scontrol show job -o {quoting.quote(entry.raw_id)} 2>/dev/null) "
            "&& src=scontrol",
            f'o=$(printf "%s\\n" "$info" | {fields} | sed -n "s/^StdOut=//p")',
            f'e=$(printf "%s\\n" "$info" | {fields} | sed -n "s/^StdErr=//p")',
            f'[ -n "$o" ] || o={quoting.quote(default_output_path(entry))}',
            '[ -n "$e" ] || e="$o"',
            'ro=0; re=0; [ -n "$o" ] && [ -f "$o" ] && [ -r "$o" ] && ro=1',
            '[ -n "$e" ] && [ -f "$e" ] && [ -r "$e" ] && re=1',
            'printf "%spaths %s %s %s\\n%s\\n%s\\n" "$m" "$src" "$ro" "$re" "$o" "$e"',
            'printf "%sout\\n" "$m"',
            # Only regular files ([ -f ] above) and within a timeout (one swapped for a FIFO).
            't=; if command -v timeout >/dev/null 2>&1; then t="timeout 10"; fi',
            f'if [ "$ro" = 1 ]; then $t tail -c {int(max_bytes)} -- "$o"; fi',
            'printf "\\n%serr\\n" "$m"',
            f'if [ "$re" = 1 ] && [ "$e" != "$o" ]; then $t tail -c {int(max_bytes)} -- "$e"; fi',
            'printf "\\n%send\\n" "$m"',
        ]
    )
    return quoting.join(["sh", "-c", script])


_PATHS_RE = re.compile(r"^paths (scontrol|default) ([01]) ([01])\Z")


def parse_job_output(text: str) -> JobOutput | None:
    """Parse :func:`job_output_command`'s reply; None when it was cut short or garbled."""
    lines = text.split("\n")
    head = next((i for i, ln in enumerate(lines) if ln.startswith(OUT_MARK + "paths ")), None)
    if head is None or head + 2 >= len(lines):
        return None
    match = _PATHS_RE.match(lines[head][len(OUT_MARK) :])
    if not match:
        return None
    sections: dict[str, list[str]] = {"out": [], "err": []}
    current = ""
    ended = False
    for line in lines[head + 3 :]:
        if line.startswith(OUT_MARK):
            current = line[len(OUT_MARK) :].strip()
            ended = ended or current == "end"
            continue
        if current in sections:
            sections[current].append(line)
    if not ended:
        return None

    def body(key: str) -> str:
        # The marker printf adds one newline after the file's own last one.
        chunk = sections[key]
        return "\n".join(chunk[:-1] if chunk and chunk[-1] == "" else chunk)

    return JobOutput(
        stdout_path=lines[head + 1],
        stderr_path=lines[head + 2],
        stdout_readable=match.group(2) == "1",
        stderr_readable=match.group(3) == "1",
        source=match.group(1),
        stdout=body("out"),
        stderr=body("err"),
    )
