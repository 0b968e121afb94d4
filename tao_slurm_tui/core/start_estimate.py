"""When would it start: SLURM's own estimate for a job before it is submitted (pure).

``sbatch --test-only`` runs the scheduler on the script without creating a job and prints
``sbatch: Job 123 to start at 2026-11-30T22:40:12 using 8 processors on nodes n1 in partition
polar``. One refresh is one round trip: the rendered script goes on stdin into a temporary file
once, then ``sbatch --test-only`` runs on it as it is and with a few command-line overrides
(which beat ``#SBATCH`` lines): another allowed partition, half the GPUs per node, half the wall
time. The hints say which of those would start sooner. Times are compared with the login host's
own clock (``date`` in the same command), so skew between machines does not matter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from tao_slurm_tui.core.capacity_report import CapacityReport, FreeBlock, type_label
from tao_slurm_tui.core.partitions import format_slurm_time, parse_slurm_time
from tao_slurm_tui.core.quoting import join
from tao_slurm_tui.core.slurm_fields import parse_gres
from tao_slurm_tui.core.words import plural

MARK = "@@tao-est:"
"""Prefix of the marker lines of the estimate command."""

VariantKind = Literal["as_is", "partition", "gpus", "time"]

NOW_SLACK = 90
"""Seconds within which a start counts as "now" (the scheduler's own rounding)."""

SOONER = 300
"""Seconds a variant must gain before it is worth a hint."""


@dataclass(frozen=True)
class Variant:
    """One ``sbatch --test-only`` run: the form as it stands, or one change to it."""

    kind: VariantKind
    label: str
    """How the hint names it: ``batch``, ``2 GPUs per node``, ``2 h wall time``."""
    args: tuple[str, ...] = ()
    """Command-line options that override the script's ``#SBATCH`` lines."""


def variants(
    partition: str,
    allowed_partitions: list[str],
    gpus_per_node: int,
    time_seconds: int,
    gpu_type: str = "",
) -> list[Variant]:
    """The runs of one estimate: as is first, then each alternative worth asking about.

    Args:
        partition: the form's partition (a comma list is SLURM's "any of these").
        allowed_partitions: the profile's partitions (each is tried alone).
        gpus_per_node: GPUs per node of the form.
        time_seconds: the form's wall time.
        gpu_type: the GPU type the script asks for ('' for any); fewer GPUs keep the type.
    """
    runs = [Variant("as_is", "as is")]
    chosen = [p.strip() for p in partition.split(",") if p.strip()]
    others = [p for p in allowed_partitions if p and (p not in chosen or len(chosen) > 1)]
    runs += [Variant("partition", p, ("--partition", p)) for p in dict.fromkeys(others)]
    if gpus_per_node > 1:
        half = gpus_per_node // 2
        gres = f"gpu:{gpu_type}:{half}" if gpu_type else f"gpu:{half}"
        label = f"{half} {gpu_type} GPUs per node" if gpu_type else f"{half} GPUs per node"
        runs.append(Variant("gpus", label, (f"--gres={gres}",)))
    if time_seconds >= 2 * 3600:
        half_time = time_seconds // 2
        runs.append(
            Variant(
                "time",
                f"{_hours_label(half_time)} wall time",
                ("--time", format_slurm_time(half_time)),
            )
        )
    return runs


def _hours_label(seconds: int) -> str:
    hours = seconds / 3600
    return f"{hours:g} h" if hours == round(hours, 1) else f"{round(hours, 1)} h"


def estimate_command(runs: list[Variant]) -> str:
    """The one remote command: the script from stdin into a temp file, every run, cleanup."""
    parts = [
        'f=$(mktemp "${TMPDIR:-/tmp}/tao-test-only.XXXXXX") || exit 1',
        "trap 'rm -f \"$f\"' EXIT",
        'cat > "$f"',
        f'echo "{MARK}now $(date +%Y-%m-%dT%H:%M:%S)"',
    ]
    for i, run in enumerate(runs):
        command = join(["sbatch", "--test-only", *run.args])
        parts.append(f'echo \'{MARK}run {i}\'; {command} "$f" 2>&1; echo "{MARK}rc $?"')
    return "; ".join(parts)


@dataclass(frozen=True)
class Estimate:
    """SLURM's answer for one run."""

    variant: Variant
    start: str = ""
    """``2026-11-30T22:40:12`` ('' when SLURM gave no time)."""
    wait_seconds: int | None = None
    """Seconds from now until the start (0: now); None without a start."""
    nodes: str = ""
    partition: str = ""
    error: str = ""
    """SLURM's refusal, one sentence (``Requested node configuration is not available``)."""

    @property
    def now(self) -> bool:
        """It would start now."""
        return self.wait_seconds is not None and self.wait_seconds <= NOW_SLACK


_START_RE = re.compile(
    r"Job \d+ to start at (\S+) using \d+ processors on nodes (\S+) in partition (\S+)"
)
_ERROR_RE = re.compile(r"error:\s*(?:Batch job submission failed:\s*)?(.+)\Z")


def _parse_time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        return None


def parse_estimates(output: str, runs: list[Variant]) -> list[Estimate]:
    """Parse the answer of :func:`estimate_command`; one :class:`Estimate` per run, in order.

    A run with no recognisable answer gets an ``error`` saying so (never an exception).
    """
    now: datetime | None = None
    texts: dict[int, list[str]] = {}
    current: int | None = None
    for line in output.splitlines():
        if line.startswith(MARK):
            tag, _, value = line[len(MARK) :].partition(" ")
            if tag == "now":
                now = _parse_time(value)
            elif tag == "run" and value.strip().isdigit():
                current = int(value)
                texts[current] = []
            else:
                current = None
        elif current is not None:
            texts[current].append(line)
    out: list[Estimate] = []
    for i, run in enumerate(runs):
        lines = texts.get(i)
        if lines is None:
            out.append(Estimate(run, error="SLURM gave no answer."))
            continue
        body = "\n".join(lines)
        match = _START_RE.search(body)
        if match:
            start, nodes, partition = match.groups()
            begin = _parse_time(start)
            wait = None
            if begin is not None and now is not None:
                wait = max(0, int((begin - now).total_seconds()))
            out.append(Estimate(run, start, wait, nodes, partition))
            continue
        errors = [m.group(1).strip() for m in map(_ERROR_RE.search, lines) if m]
        said = [ln.strip() for ln in lines if ln.strip()]
        error = errors[-1] if errors else (said[-1] if said else "no answer")
        out.append(Estimate(run, error=error.rstrip(".") + "."))
    return out


# ----------------------------------------------------------------------------------- words


def short_time(stamp: str) -> str:
    """``2026-05-10T14:30:00`` → ``05-10 14:30``, as the queue shows estimated starts."""
    if len(stamp) >= 16 and stamp[4] == "-" and "T" in stamp:
        return f"{stamp[5:10]} {stamp[11:16]}"
    return stamp if stamp not in ("N/A", "Unknown") else ""


def in_words(wait_seconds: int | None) -> str:
    """``now``, ``in ~5 min``, ``in ~2 h``, ``in ~3 d``; '' when unknown."""
    if wait_seconds is None:
        return ""
    if wait_seconds <= NOW_SLACK:
        return "now"
    minutes = round(wait_seconds / 60)
    if minutes < 90:
        return f"in ~{max(1, minutes)} min"
    hours = round(wait_seconds / 3600)
    if hours < 48:
        return f"in ~{hours} h"
    return f"in ~{round(wait_seconds / 86400)} d"


def describe(estimate: Estimate) -> str:
    """One run in words: ``now on n1``, ``05-10 14:30 (in ~2 h)``, or SLURM's refusal."""
    if estimate.error:
        return f"cannot start: {estimate.error}"
    if estimate.now:
        return f"now on {estimate.nodes}" if estimate.nodes else "now"
    when = short_time(estimate.start)
    words = in_words(estimate.wait_seconds)
    return f"{when} ({words})" if words else when


def hints(estimates: list[Estimate]) -> list[str]:
    """What would start sooner than the form as it stands, one line each.

    ``batch: now; polar: in ~2 h`` when another partition is sooner; ``2 GPUs per node: now``
    and ``2 h wall time: in ~10 min`` when asking for less would be.
    """
    if not estimates:
        return []
    base = estimates[0]
    base_wait = base.wait_seconds

    def sooner(e: Estimate) -> bool:
        if e.error or e.wait_seconds is None:
            return False
        if base.error or base_wait is None:
            return True
        return e.wait_seconds + SOONER < base_wait

    lines: list[str] = []
    by_partition = [e for e in estimates[1:] if e.variant.kind == "partition"]
    if any(sooner(e) for e in by_partition):
        ranked = sorted(
            (e for e in by_partition if not e.error and e.wait_seconds is not None),
            key=lambda e: e.wait_seconds or 0,
        )
        lines.append("; ".join(f"{e.variant.label}: {in_words(e.wait_seconds)}" for e in ranked))
    for e in estimates[1:]:
        if e.variant.kind in ("gpus", "time") and sooner(e):
            lines.append(f"{e.variant.label}: {in_words(e.wait_seconds)}")
    return lines


def block_hint(nodes: int, gpus_per_node: int, block: FreeBlock | None, gpu_type: str = "") -> str:
    """Whether the request fits the largest free block on one node right now.

    ``1 node x 4 GPUs fits a free block now (gpu01: 8 a100 free)``; for a request bigger than
    any free block: ``the largest free block is 2 GPUs (gpu02): 8 GPUs per node waits``.
    With ``gpu_type`` (the request names one), ``block`` is that type's largest free block and
    the words name the type.
    """
    if gpus_per_node <= 0:
        return ""
    gpu = f"{gpu_type} GPU" if gpu_type else "GPU"
    if block is None:
        return f"No node has a free {gpu} right now."
    free = f"{block.node}: {block.gpus} {type_label(block.kind)} free"
    if nodes == 1 and gpus_per_node <= block.gpus:
        return f"1 node x {plural(gpus_per_node, gpu)} fits a free block now ({free})."
    if gpus_per_node > block.gpus:
        return (
            f"The largest free block is {plural(block.gpus, gpu)} ({block.node}); "
            f"{plural(gpus_per_node, gpu)} per node waits."
        )
    return ""


# ----------------------------------------------------------------------------------- the whole


_DIRECTIVE_RE = re.compile(r"^#SBATCH\s+--([a-z-]+)(?:[= ](\S+))?", re.MULTILINE)
_GPUS_RE = re.compile(r"^(?:gpu:)?(?:([A-Za-z0-9_.-]+):)?(\d+)\Z")


@dataclass(frozen=True)
class Request:
    """What a rendered script asks for (its ``#SBATCH`` lines), as the estimate varies it."""

    partition: str = ""
    nodes: int = 1
    gpus_per_node: int = 0
    time_seconds: int = 0
    gpu_type: str = ""
    """The GPU type asked for (``--gres=gpu:a100:4``); '' for any type."""


def _gpus_per_node(found: dict[str, str]) -> tuple[int, str]:
    """GPUs per node and their type from ``--gres`` or ``--gpus-per-node`` (``[TYPE:]N``)."""
    by_type = parse_gres(found.get("gres", ""))
    if not by_type and found.get("gpus-per-node"):
        match = _GPUS_RE.match(found["gpus-per-node"])
        if match:
            by_type = {match.group(1) or "": int(match.group(2))}
    typed = [k for k in by_type if k]
    return sum(by_type.values()), typed[0] if len(typed) == 1 and len(by_type) == 1 else ""


def script_request(script: str) -> Request:
    """Read partition, nodes, GPUs per node (and their type) and wall time from a rendered
    script's directives."""
    found = {key: value or "" for key, value in _DIRECTIVE_RE.findall(script)}
    gpus, gpu_type = _gpus_per_node(found)
    seconds = 0
    if found.get("time"):
        try:
            seconds = parse_slurm_time(found["time"]) or 0
        except ValueError:
            seconds = 0
    nodes = found.get("nodes", "1")
    return Request(
        partition=found.get("partition", ""),
        nodes=int(nodes) if nodes.isdigit() else 1,
        gpus_per_node=gpus,
        time_seconds=seconds,
        gpu_type=gpu_type,
    )


@dataclass(frozen=True)
class StartEstimate:
    """The composer's answer: SLURM's estimate for the form, and what would be sooner."""

    estimates: list[Estimate]
    """As is first, then each variant."""
    hints: list[str]
    """From :func:`hints`."""
    block: str = ""
    """From :func:`block_hint` ('' when the capacity is not known)."""

    @property
    def headline(self) -> str:
        """The form as it stands, in words (``now on n1``, ``05-10 14:30 (in ~2 h)``)."""
        return describe(self.estimates[0]) if self.estimates else "no estimate"


def start_estimate_of(
    estimates: list[Estimate], request: Request, capacity: CapacityReport | None
) -> StartEstimate:
    """Put SLURM's answers, the hints and (when the capacity is known) the free-block hint
    together for the form's first partition. A request SLURM refused gets no free-block
    hint: "fits a free block now" under "cannot start" would contradict it."""
    block = ""
    refused = bool(estimates) and bool(estimates[0].error)
    if capacity is not None and not refused:
        first = request.partition.split(",")[0].strip()
        part = capacity.partition(first)
        if part is not None:
            kind = request.gpu_type
            largest = part.blocks.get(kind) if kind else part.largest_block
            block = block_hint(request.nodes, request.gpus_per_node, largest, kind)
    return StartEstimate(estimates, hints(estimates), block)
