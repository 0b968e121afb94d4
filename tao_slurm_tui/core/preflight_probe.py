"""The doctor's remote probe: one script for every remote check, and its output cut by check.

Pure: :func:`probe_sections` picks the checks that apply, :func:`build_probe_script` frames each
in begin/end markers carrying its exit status, and :func:`parse_probe` cuts the answer back into
:class:`Section` values, which :mod:`tao_slurm_tui.core.preflight` evaluates. The services layer
runs the script over the one connection (:mod:`tao_slurm_tui.services.onboarding`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tao_slurm_tui.core.quoting import home_path, quote

SLURM_TOOLS = ("squeue", "sbatch", "sacct", "scancel")
"""Commands the app runs on the login host."""

MARK = "@@tao-doctor"
"""Prefix of the section markers in the probe output."""

_TOOLS_BODY = (
    "for t in " + " ".join(SLURM_TOOLS) + "; do "
    'p=$(command -v "$t" 2>/dev/null) || p=""; v=""; '
    'if [ -n "$p" ]; then v=$("$t" --version </dev/null 2>&1 | head -n 1); fi; '
    'printf \'%s|%s|%s\\n\' "$t" "$p" "$v"; done'
)
_ASSOC_BODY = 'sacctmgr -n -P show assoc where user="$(id -un)" format=account </dev/null'
_DEFACCT_BODY = 'sacctmgr -n -P show user "$(id -un)" format=defaultaccount </dev/null'
_ENFORCE_BODY = "scontrol show config </dev/null | grep -i '^AccountingStorageEnforce' || true"
_PARTITIONS_BODY = "scontrol show partition -o </dev/null"
_CREDS_BODY = (
    'if [ -s "$HOME/.config/enroot/.credentials" ]; then echo present; else echo missing; fi'
)
_PYXIS_BODY = (
    "if ! command -v srun >/dev/null 2>&1; then echo nosrun; "
    "elif srun --help </dev/null 2>&1 | grep -q -e '--container-image'; then echo present; "
    "else echo missing; fi"
)

NODE_CHECK_SECONDS = 30
"""How long the compute-node check waits for a free node (``srun --immediate``)."""

# Runs on a compute node (one task): enroot on the PATH slurmd gives jobs, and the Pyxis plugin
# named in the node's plugstack config present there. One "key|value|value" line each.
_NODE_SCRIPT = (
    'echo "node|$(hostname -s)"; '
    'p=$(command -v enroot 2>/dev/null) && echo "enroot|$p|$(enroot version 2>&1 | head -n 1)" '
    '|| echo "enroot||"; '
    'c=$(dirname "${SLURM_CONF:-/etc/slurm/slurm.conf}"); '
    'so=$(cat "$c/plugstack.conf" "$c"/plugstack.conf.d/*.conf 2>/dev/null '
    "| awk '$1 !~ /^#/ && $2 ~ /spank_pyxis/ { print $2; exit }'); "
    'if [ -n "$so" ] && [ -f "$so" ]; then echo "pyxis|$so|yes"; else echo "pyxis|$so|no"; fi'
)


def _node_body(partition: str) -> str:
    srun = [
        "srun",
        f"--immediate={NODE_CHECK_SECONDS}",
        "--nodes=1",
        "--ntasks=1",
        "--time=1",
        "--quiet",
        "--job-name=tao-doctor",
    ]
    if partition:
        srun.append(f"--partition={partition}")
    return (
        f"timeout {NODE_CHECK_SECONDS + 45} "
        + " ".join(quote(a) for a in srun)
        + f" sh -c {quote(_NODE_SCRIPT)} </dev/null"
    )


def _results_body(path: str) -> str:
    return (
        f"d={home_path(path)}; "
        'if [ -d "$d" ]; then if [ -w "$d" ]; then echo writable; else echo readonly; fi; '
        'else p="$d"; while [ ! -e "$p" ]; do p=$(dirname "$p"); done; '
        'if [ -d "$p" ] && [ -w "$p" ]; then echo "creatable|$p"; else echo "blocked|$p"; fi; fi'
    )


def _inputs_body(paths: Sequence[str]) -> str:
    quoted = " ".join(quote(p) for p in paths)
    return (
        f"i=0; for p in {quoted}; do "
        'if [ -e "$p" ]; then echo "$i|ok"; else echo "$i|missing"; fi; i=$((i+1)); done'
    )


def probe_sections(
    *,
    results_dir: str | None,
    check_pyxis: bool,
    input_paths: Sequence[str] = (),
    partition: str = "",
) -> dict[str, str]:
    """Section name → shell body, for every remote check that applies (with Pyxis also a
    one-task ``srun`` on a compute node of ``partition``)."""
    sections = {
        "tools": _TOOLS_BODY,
        "assoc": _ASSOC_BODY,
        "defacct": _DEFACCT_BODY,
        "enforce": _ENFORCE_BODY,
        "partitions": _PARTITIONS_BODY,
        "creds": _CREDS_BODY,
    }
    if results_dir:
        sections["results"] = _results_body(results_dir)
    if check_pyxis:
        sections["pyxis"] = _PYXIS_BODY
        sections["node"] = _node_body(partition)
    if input_paths:
        sections["inputs"] = _inputs_body(input_paths)
    return sections


def build_probe_script(sections: Mapping[str, str]) -> str:
    """One bash script running every section, each framed by begin/end markers with its rc.

    Every section's stdin is closed (an ``srun`` would otherwise eat the rest of the script) and
    its stderr is folded into stdout, so a failing command explains itself in the detail.
    """
    lines = ["exec </dev/null"]
    for name, body in sections.items():
        lines.append(f"printf '\\n{MARK} begin {name}\\n'")
        lines.append(f"( {body} ) 2>&1")
        lines.append(f"printf '\\n{MARK} end {name} %s\\n' \"$?\"")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Section:
    """Output of one probe section."""

    rc: int
    """Exit status of the section's last command."""
    lines: tuple[str, ...]
    """Non-empty output lines."""

    @property
    def text(self) -> str:
        """The lines joined by newlines."""
        return "\n".join(self.lines)


def parse_probe(output: str) -> dict[str, Section]:
    """Split the probe output into sections; a section without an end marker is left out."""
    sections: dict[str, Section] = {}
    current: str | None = None
    buf: list[str] = []
    for raw in output.splitlines():
        line = raw.rstrip("\r")
        if line.startswith(MARK + " "):
            parts = line.split()
            if len(parts) >= 3 and parts[1] == "begin":
                current, buf = parts[2], []
            elif len(parts) >= 4 and parts[1] == "end" and parts[2] == current:
                try:
                    rc = int(parts[3])
                except ValueError:
                    rc = -1
                sections[current] = Section(rc, tuple(buf))
                current, buf = None, []
            continue
        if current is not None and line.strip():
            buf.append(line)
    return sections


def first_error(section: Section | None) -> str:
    """The line of a failed section that explains it (or what is known of the failure)."""
    if section is None:
        return "no answer from the login host"
    for line in section.lines:
        if "error" in line.lower() or "not found" in line.lower():
            return line.strip()
    return section.lines[0].strip() if section.lines else f"exit status {section.rc}"
