"""Which failures are retried: the one list of log patterns, the classifier, node exclusion.

Two consumers share :data:`INFRA_PATTERNS` and :data:`NEVER_RETRY_PATTERNS`:

- the client (:func:`classify`), when the monitor sees a finished attempt;
- the batch script, which embeds :func:`bash_infra_check` (generated from the same lists) and
  requeues itself when its command fails, so retries go on while no client runs.

Rules (decided here, table-tested):

- NODE_FAIL and BOOT_FAIL are retried: the node, not the program, failed.
- FAILED and OUT_OF_MEMORY are retried only when the log tail (last 500 lines of ``main.out``
  and ``main.err``) shows an infrastructure failure and no never-retry sign. A never-retry sign
  wins over any infrastructure sign: a CUDA out-of-memory on one rank makes the other ranks hit
  the NCCL watchdog timeout, and a job that exceeded its own memory limit (SLURM's
  OUT_OF_MEMORY, the cgroup OOM handler) would fail the same way again.
- DEADLINE is never retried (the deadline has passed, a resubmission would be refused again),
  nor TIMEOUT, CANCELLED, PREEMPTED/REVOKED, COMPLETED, or a live state.
- An unreadable log is reported, not retried. At most ``max_retries`` retries, counting the
  batch script's own requeues.

Patterns are matched line by line, case-insensitively, and are written in a subset of Python
regex syntax that :func:`to_ere` turns into POSIX ERE for ``grep -E``: no ``\\b``, no ``(?…)``
groups, no lazy quantifiers; ``\\d``, ``\\s``, ``\\w`` are translated.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tao_slurm_tui.core import quoting
from tao_slurm_tui.core.log_patterns import LogMatch as LogMatch
from tao_slurm_tui.core.log_patterns import LogPattern as LogPattern
from tao_slurm_tui.core.log_patterns import compiled
from tao_slurm_tui.core.log_patterns import find_match as find_match
from tao_slurm_tui.core.runtime_failures import NGC_KEY_REFUSED as NGC_KEY_REFUSED
from tao_slurm_tui.core.runtime_failures import NGC_KEY_REFUSED_REASON as NGC_KEY_REFUSED_REASON
from tao_slurm_tui.core.runtime_failures import RUNTIME_CAUSES as RUNTIME_CAUSES
from tao_slurm_tui.core.runtime_failures import runtime_failure, runtime_reason
from tao_slurm_tui.core.slurm import normalize_state

DEFAULT_MAX_RETRIES = 10
"""Retries allowed per job (the platform's ``MAX_JOB_RETRIES``)."""

LOG_TAIL_LINES = 500
"""Lines read from the end of each of ``main.out`` and ``main.err``."""


INFRA_PATTERNS: list[LogPattern] = [
    # NCCL transport errors and collective timeouts.
    # NCCL WARN only with a failure word: healthy runs print benign WARN lines (plugin lookup).
    LogPattern(
        "NCCL error",
        r"NCCL WARN.*(error|fail|timeout|timed out|abort|refused|reset by peer|closed)",
        (
            "node12:1234:1290 [3] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<4000> "
            "with error 12, opcode 0, len 0, vendor err 129",
            "node3:99:120 [0] NCCL WARN Call to connect returned Connection refused, retrying",
        ),
    ),
    LogPattern(
        "NCCL error",
        r"NCCL error",
        (
            "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269,"
            " unhandled system error, NCCL version 2.14.3",
        ),
    ),
    LogPattern(
        "NCCL error",
        r"nccl(SystemError|InternalError|RemoteError)",
        ("ncclSystemError: System call (e.g. socket, malloc) or external library call failed",),
    ),
    LogPattern(
        "NCCL timeout",
        r"Watchdog caught collective operation timeout",
        (
            "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, "
            "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800487 milliseconds before "
            "timing out.",
        ),
    ),
    LogPattern(
        "NCCL timeout",
        r"NCCL communicator was aborted",
        ("NCCL communicator was aborted on rank 2.",),
    ),
    LogPattern(
        "NCCL timeout",
        r"NCCL watchdog thread terminated",
        (
            "terminate called after throwing: [Rank 0] NCCL watchdog thread terminated "
            "with exception",
        ),
    ),
    # CUDA driver / NVML initialisation on a sick node.
    LogPattern(
        "CUDA driver init failure",
        r"CUDA driver initialization failed",
        ("RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.",),
    ),
    LogPattern(
        "CUDA driver init failure",
        r"cudaErrorInitializationError",
        ("CUDA call failed: cudaErrorInitializationError",),
    ),
    LogPattern(
        "CUDA driver init failure",
        r"CUDA error: initialization error",
        ("RuntimeError: CUDA error: initialization error",),
    ),
    LogPattern(
        "CUDA driver init failure",
        r"Failed to initialize NVML",
        ("Failed to initialize NVML: Driver/library version mismatch",),
    ),
    LogPattern(
        "CUDA driver init failure",
        r"Driver/library version mismatch",
        ("NVML library version: 535.104 Driver/library version mismatch",),
    ),
    # No GPU visible.
    LogPattern(
        "no CUDA device",
        r"no CUDA-capable device is detected",
        ("RuntimeError: CUDA error: no CUDA-capable device is detected",),
    ),
    LogPattern(
        "no CUDA device",
        r"cudaErrorNoDevice|CUDA_ERROR_NO_DEVICE",
        ("cuInit failed: CUDA_ERROR_NO_DEVICE", "error: cudaErrorNoDevice"),
    ),
    LogPattern(
        "no CUDA device",
        r"CUDA-capable device\(s\) is/are busy or unavailable",
        ("RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable",),
    ),
    # GPU lost.
    LogPattern(
        "GPU lost",
        r"GPU has fallen off the bus",
        ("NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.",),
    ),
    LogPattern(
        "GPU lost",
        r"Unable to determine the device handle for GPU",
        ("Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error",),
    ),
    LogPattern(
        "GPU lost", r"GPU is lost", ("Unable to determine the device handle: GPU is lost.",)
    ),
    # Xid and ECC.
    # Hardware Xids only: 13, 31, 43, 45 are faults of the application itself.
    LogPattern(
        "GPU Xid error",
        r"Xid \([^)]*\): (48|56|57|58|61|62|63|64|68|69|74|79|92|94|95|119|120|121)[^0-9]",
        (
            "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, Ch 00000008",
            "kernel: NVRM: Xid (PCI:0000:86:00): 48, pid=2222, An uncorrectable double bit error",
            "NVRM: Xid (PCI:0000:07:00): 74, pid=1, NVLink: fatal error detected on link 3",
        ),
    ),
    LogPattern(
        "GPU ECC error",
        r"uncorrectable ECC error|cudaErrorECCUncorrectable",
        ("RuntimeError: CUDA error: uncorrectable ECC error encountered",),
    ),
    # InfiniBand / RDMA.
    LogPattern(
        "InfiniBand/RDMA error",
        r"ibv_\w+.*(fail|error)",
        ("ibv_poll_cq failed: transport retry counter exceeded", "ibv_create_qp error 12"),
    ),
    LogPattern(
        "InfiniBand/RDMA error",
        r"RDMA.*(error|fail|timeout|timed out)",
        ("rdma_connect: RDMA_CM_EVENT_UNREACHABLE error", "RDMA write failed on qp 0x1a"),
    ),
    LogPattern(
        "InfiniBand/RDMA error",
        r"mlx5\w*.*(error|fail|timeout)",
        ("mlx5_core 0000:5e:00.0: mlx5_cmd_check: command failed, status bad resource",),
    ),
    LogPattern(
        "InfiniBand/RDMA error",
        r"IBV_WC_\w+_ERR|transport retry count(er)? exceeded",
        ("Got completion with status IBV_WC_RETRY_EXC_ERR",),
    ),
    LogPattern(
        "network link down",
        r"(^|[^a-z])(link|port) (is |went |has gone )?down([^a-z]|$)|IB link (error|fail)",
        ("mlx5_core 0000:5e:00.0 ib0: Link down", "IB link error on port 1"),
    ),
    # The kernel OOM killer reaping the node (not the job's own cgroup limit: see NEVER list).
    LogPattern(
        "OOM killer on the node",
        r"Out of memory: Killed process|oom-kill|oom_kill_process|oom_reaper",
        (
            "Out of memory: Killed process 4242 (python) total-vm:123456kB",
            "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null)",
            "oom_reaper: reaped process 4242 (python)",
        ),
    ),
    LogPattern(
        "node failure",
        r"srun: error: Node failure on",
        ("srun: error: Node failure on node17",),
    ),
]
"""Signs of an infrastructure failure in a job's log: the failed attempt is retried."""


DISK_FULL = "file system full or over quota"
"""Family of the never-retry pattern for ENOSPC / EDQUOT."""

NEVER_RETRY_PATTERNS: list[LogPattern] = [
    # The container runtime could not start the job (a refused key, an image or a mount source
    # that does not exist): every retry would fail the same way.
    *(pattern for cause in RUNTIME_CAUSES for pattern in cause.patterns),
    # A full file system or an exceeded quota (results, logs, the enroot cache in the home):
    # every retry would hit it again until someone frees space (core/disk_space.py says which).
    LogPattern(
        DISK_FULL,
        r"No space left on device|Disk quota exceeded|\[Errno (28|122)\]",
        (
            "OSError: [Errno 28] No space left on device: '/lustre/u/results/model_epoch_003.pth'",
            "cp: error writing '/home/u/.cache/enroot/abc.tar': Disk quota exceeded",
            "dd: error writing '/scratch/u/x': No space left on device",
        ),
    ),
    # CUDA out of memory is a program/config error (batch size, model size): retrying repeats it.
    LogPattern(
        "CUDA out of memory",
        r"cuda.*out of memory",
        (
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            "RuntimeError: CUDA error: out of memory",
            "node1:22:22 [0] NCCL WARN Cuda failure 'out of memory'",
            "THCudaCheck FAIL file=... error=2 : out of memory (cuda runtime error)",
        ),
    ),
    LogPattern(
        "CUDA out of memory",
        r"OutOfMemoryError|cudaErrorMemoryAllocation|CUBLAS_STATUS_ALLOC_FAILED|"
        r"CUDNN_STATUS_ALLOC_FAILED|OOM when allocating tensor",
        (
            "torch.OutOfMemoryError: Allocation on device",
            "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling "
            "cublasCreate(handle)",
            "ResourceExhaustedError: OOM when allocating tensor with shape[64,256,56,56]",
        ),
    ),
    # The job exceeded its own memory limit (SLURM OUT_OF_MEMORY): same result on any node.
    LogPattern(
        "job memory limit exceeded",
        r"Memory cgroup out of memory|oom[-_]kill event|cgroup out-of-memory handler|"
        r"CONSTRAINT_MEMCG",
        (
            "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=42.batch. Some of your "
            "processes may have been killed by the cgroup out-of-memory handler.",
            "Memory cgroup out of memory: Killed process 4242 (python)",
        ),
    ),
    # NCCL reporting a program bug, not a transport problem.
    LogPattern(
        "NCCL usage error",
        r"ncclInvalidUsage|ncclInvalidArgument|NCCL error.*invalid (usage|argument)",
        (
            "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191, invalid usage, NCCL 2.18.1",
            "ncclInvalidArgument: Invalid value for an argument.",
        ),
    ),
    # A rank died of a program error; NCCL timeouts on the other ranks are only its echo.
    LogPattern(
        "program error",
        r"^\s*([\w.]+\.)?(ValueError|KeyError|TypeError|AttributeError|IndexError|NameError|"
        r"AssertionError|ZeroDivisionError|ImportError|ModuleNotFoundError|SyntaxError|"
        r"NotImplementedError|FileNotFoundError|MemoryError)(:|$)",
        (
            "ValueError: Invalid spec: num_classes must be > 0",
            "  omegaconf.errors.KeyError: missing key 'dataset'",
            "ModuleNotFoundError: No module named 'foo'",
            "AssertionError",
        ),
    ),
]
"""Signs of a program error: never retried, even when an infrastructure sign shows too."""


@dataclass(frozen=True)
class RetryDecision:
    """The verdict of :func:`classify`."""

    retry: bool
    reason: str
    """One sentence: why (shown to the user and stored with the attempt)."""
    family: str = ""
    """The pattern family that decided, if a log pattern did."""
    line: str = ""
    """The log line that decided, if any (trimmed)."""
    field: str = ""
    """The spec key to change (a container-runtime failure: ``image``, ``container_mounts``);
    '' when none is known."""


def classify(
    slurm_state: str,
    log_tail_lines: Sequence[str] | None,
    retries_so_far: int,
    max_retries: int = DEFAULT_MAX_RETRIES,
) -> RetryDecision:
    """Decide whether a finished attempt is retried.

    Long because: one ordered list of decisions (state, unreadable log, container runtime,
    the script's own stop, program errors, infrastructure signs, the budget), read top down.

    Args:
        slurm_state: the attempt's final SLURM state (any spelling: ``CANCELLED by 1001``).
        log_tail_lines: the last :data:`LOG_TAIL_LINES` lines of ``main.out`` and of
            ``main.err``; None when the log could not be read.
        retries_so_far: retries already made for the job, *including* the batch script's own
            requeues (``JobRecord.retries``), so the two retry paths share one budget.
        max_retries: the budget.
    """
    state = normalize_state(slurm_state)
    budget_left = retries_so_far < max_retries
    used = f"the retry budget ({max_retries}) is used up"
    if state in ("NODE_FAIL", "BOOT_FAIL"):
        what = "a node failed" if state == "NODE_FAIL" else "the node failed to boot"
        if not budget_left:
            return RetryDecision(False, f"SLURM reports {state} ({what}) but {used}.", state)
        return RetryDecision(
            True, f"SLURM reports {state}: {what}; retrying on other nodes.", state
        )
    if state not in ("FAILED", "OUT_OF_MEMORY"):
        return RetryDecision(False, _not_retried(state))
    if log_tail_lines is None:
        return RetryDecision(
            False, f"The job ended {state} and its log could not be read, so it is not retried."
        )
    runtime = runtime_failure(log_tail_lines)
    if runtime is not None:
        cause, line = runtime
        reason = runtime_reason(cause, line, log_tail_lines)
        return RetryDecision(False, reason, cause.family, line, cause.field)
    stop = script_stop(log_tail_lines)
    if stop:
        return RetryDecision(False, f"Not requeued: {stop}", "not requeued")
    never = find_match(log_tail_lines, NEVER_RETRY_PATTERNS)
    if never is not None:
        return RetryDecision(
            False,
            f"The job failed with a program error ({never.pattern.family}), which a retry would "
            "repeat; fix the job and resubmit.",
            never.pattern.family,
            never.line,
        )
    infra = find_match(log_tail_lines, INFRA_PATTERNS)
    if infra is None:
        return RetryDecision(
            False,
            f"The job ended {state} without a sign of an infrastructure failure in its log; "
            "see main.err.",
        )
    family = infra.pattern.family
    if not budget_left:
        return RetryDecision(
            False, f"Infrastructure failure ({family}) but {used}.", family, infra.line
        )
    return RetryDecision(True, f"Infrastructure failure ({family}); retrying.", family, infra.line)


SCRIPT_STOP = "[tao-slurm-tui] not requeued: "
"""How the batch script says why it did not requeue itself (a TAO training that makes no
progress across slices, the timeout cap, a failing ``scontrol requeue``)."""


def script_stop(lines: Sequence[str]) -> str:
    """The batch script's last reason for not requeuing itself ('' when it gave none)."""
    for line in reversed(lines):
        if SCRIPT_STOP in line:
            return line.split(SCRIPT_STOP, 1)[1].strip()[:1000]
    return ""


_ERROR_LINE_RE = re.compile(
    r"(^|[^a-z])(error|errors|exception|traceback|fatal|failed|failure|killed)([^a-z]|\Z)",
    re.IGNORECASE,
)


def first_error(lines: Sequence[str]) -> int | None:
    """Where a failed job's ``main.err`` explains itself: the line a known failure pattern
    matches (a container-runtime cause, a program error, an infrastructure sign), else the
    first line that says error, exception, traceback or failed; None when none does."""
    patterns = [
        *(p for cause in RUNTIME_CAUSES for p in cause.patterns),
        *NEVER_RETRY_PATTERNS,
        *INFRA_PATTERNS,
    ]
    compiled_patterns = [compiled(p.regex) for p in patterns]
    for rx in compiled_patterns:
        for index, line in enumerate(lines):
            if rx.search(line):
                return index
    return next((i for i, line in enumerate(lines) if _ERROR_LINE_RE.search(line)), None)


def _not_retried(state: str) -> str:
    if state == "TIMEOUT":
        return (
            "The job reached its time limit (TIMEOUT); ask for more time or resume from a "
            "checkpoint."
        )
    if state in ("CANCELLED", "PREEMPTED", "REVOKED"):
        return f"The job was {state.lower()}; it is not retried."
    if state == "DEADLINE":
        return "The job missed its deadline (DEADLINE); a resubmission would miss it too."
    return f"SLURM state {state or 'unknown'} is not a failure that is retried."


def nodes_to_exclude(
    failed_nodes: Sequence[str], partition_node_count: int | None, nodes_needed: int
) -> list[str]:
    """Nodes to ``--exclude`` on a retry: the failed ones, while enough others remain.

    Args:
        failed_nodes: host names the failed attempt(s) ran on (expanded; see
            :func:`tao_slurm_tui.core.slurm.expand_nodelist`), most suspect first.
        partition_node_count: nodes in the partition (None or 0 when unknown: exclude nothing,
            since an exclusion could make the request unsatisfiable).
        nodes_needed: nodes the job asks for.

    Returns:
        At most ``partition_node_count - nodes_needed`` distinct names, in the given order.
    """
    if not partition_node_count or nodes_needed < 1:
        return []
    room = partition_node_count - nodes_needed
    out: list[str] = []
    for node in failed_nodes:
        if len(out) >= room:
            break
        if node and node not in out:
            out.append(node)
    return out


# ----------------------------------------------------------------------------------- bash

_CLASS_ESCAPES = {"d": "0-9", "s": "[:space:]", "w": "[:alnum:]_"}
_ESCAPES = {"d": "[0-9]", "s": "[[:space:]]", "w": "[[:alnum:]_]"}
_LITERAL_ESCAPES = set(".()[]{}*+?|^$\\/-:")


def to_ere(regex: str) -> str:
    """Translate a pattern of the portable subset into POSIX ERE for ``grep -E``.

    Raises:
        ValueError: the pattern uses something ERE cannot express the same way.
    """
    out: list[str] = []
    i, n, in_class = 0, len(regex), False
    while i < n:
        ch = regex[i]
        if ch == "\\":
            if i + 1 >= n:
                raise ValueError(f"trailing backslash in {regex!r}")
            nxt = regex[i + 1]
            if nxt in _ESCAPES:
                out.append(_CLASS_ESCAPES[nxt] if in_class else _ESCAPES[nxt])
            elif nxt in _LITERAL_ESCAPES:
                out.append(nxt if in_class and nxt not in "]\\" else "\\" + nxt)
            else:
                raise ValueError(f"escape \\{nxt} has no ERE equivalent in {regex!r}")
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
            out.append(ch)
        elif ch == "[":
            in_class = True
            out.append(ch)
        elif ch == "(" and regex.startswith("(?", i):
            raise ValueError(f"(?...) groups are not ERE in {regex!r}")
        elif ch in "*+?}" and i + 1 < n and regex[i + 1] == "?":
            raise ValueError(f"lazy quantifiers are not ERE in {regex!r}")
        else:
            out.append(ch)
        i += 1
    if in_class:
        raise ValueError(f"unterminated character class in {regex!r}")
    return "".join(out)


def bash_infra_check() -> str:
    """Text of the bash function ``tao_infra_failure FILE...`` for the batch script.

    It returns 0 when the last :data:`LOG_TAIL_LINES` lines of the readable FILEs show an
    infrastructure failure (:data:`INFRA_PATTERNS`) and no never-retry sign
    (:data:`NEVER_RETRY_PATTERNS`), printing the deciding line to stderr; otherwise 1 (also
    when no FILE is readable). Generated from the same lists :func:`classify` uses.
    """
    never = " ".join(f"-e {quoting.quote(to_ere(p.regex))}" for p in NEVER_RETRY_PATTERNS)
    infra = " ".join(f"-e {quoting.quote(to_ere(p.regex))}" for p in INFRA_PATTERNS)
    return "\n".join(
        [
            "# Generated by tao_slurm_tui.core.retry from the client's pattern lists; do not edit.",
            "tao_infra_failure() {",
            "    local _tao_tail='' _tao_f _tao_line",
            '    for _tao_f in "$@"; do',
            '        if [ -r "$_tao_f" ]; then',
            f'            _tao_tail+="$(tail -n {LOG_TAIL_LINES} -- "$_tao_f")"$\'\\n\'',
            "        fi",
            "    done",
            '    [ -n "$_tao_tail" ] || return 1',
            # Here-strings, not pipes: grep -q exiting early must not turn into SIGPIPE under
            # the caller's pipefail.
            f'    if grep -E -i -q {never} <<<"$_tao_tail"; then',
            "        return 1",
            "    fi",
            f'    _tao_line=$(grep -E -i -m 1 {infra} <<<"$_tao_tail") || return 1',
            "    printf 'tao_infra_failure: %s\\n' \"$_tao_line\" >&2",
            "    return 0",
            "}",
        ]
    )
