"""SLURM job states and reasons: what each state means for a TAO job, what a reason means.

Pure. :func:`map_state` is the status mapping of docs/ARCHITECTURE.md ("Status mapping"):
what the monitor does with every state SLURM prints. :func:`explain_reason` turns a pending or
finish reason into plain words (a sentence, or a few words for a table column).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from tao_slurm_tui.core.models import TaoStatus

# ----------------------------------------------------------------------------------- states

LIVE_STATES: frozenset[str] = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "SUSPENDED",
        "STOPPED",
        "REQUEUED",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "SPECIAL_EXIT",
        "RESV_DEL_HOLD",
    }
)
"""States of a job that has not finished: squeue answers for these, sacct is not asked."""

TERMINAL_STATES: frozenset[str] = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "BOOT_FAIL",
        "DEADLINE",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REVOKED",
    }
)
"""States after which SLURM runs nothing more for this job id (unless someone requeues it)."""


class StateAction(StrEnum):
    """What the monitor must do with a SLURM state."""

    STATUS = "status"
    """The TAO status is known from the state alone."""
    NEEDS_STATUS_JSON = "needs_status_json"
    """COMPLETED: ``status.json`` decides Complete or Error."""
    MAYBE_RETRY = "maybe_retry"
    """A failure: :func:`tao_slurm_tui.core.retry.classify` decides retry or Error."""
    UNKNOWN = "unknown"
    """A state we do not know (or none yet): keep the previous status and poll again."""


@dataclass(frozen=True)
class MappedState:
    """The result of :func:`map_state`."""

    action: StateAction
    status: TaoStatus | None
    """The TAO status to show now: final for ``STATUS``; for ``NEEDS_STATUS_JSON`` the status if
    ``status.json`` says nothing (Complete); for ``MAYBE_RETRY`` the status when not retried
    (Error); None for ``UNKNOWN``."""


_STATE_TABLE: dict[str, MappedState] = {
    **{
        s: MappedState(StateAction.STATUS, TaoStatus.PENDING)
        for s in (
            "PENDING",
            "CONFIGURING",
            "REQUEUED",
            "REQUEUE_FED",
            "REQUEUE_HOLD",
            "SPECIAL_EXIT",
            "RESV_DEL_HOLD",
        )
    },
    **{
        s: MappedState(StateAction.STATUS, TaoStatus.RUNNING)
        for s in ("RUNNING", "COMPLETING", "RESIZING", "SIGNALING", "STAGE_OUT")
    },
    "COMPLETED": MappedState(StateAction.NEEDS_STATUS_JSON, TaoStatus.COMPLETE),
    **{
        s: MappedState(StateAction.MAYBE_RETRY, TaoStatus.ERROR)
        for s in ("FAILED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "NODE_FAIL")
    },
    **{
        s: MappedState(StateAction.STATUS, TaoStatus.CANCELED)
        for s in ("CANCELLED", "PREEMPTED", "REVOKED")
    },
    "TIMEOUT": MappedState(StateAction.STATUS, TaoStatus.ERROR),
    **{s: MappedState(StateAction.STATUS, TaoStatus.PAUSED) for s in ("SUSPENDED", "STOPPED")},
}


def normalize_state(raw: str) -> str:
    """First word of a SLURM state, upper case: ``CANCELLED by 1001`` → ``CANCELLED``.

    Also drops the ``+`` that sacct appends when it truncates (``CANCELLED+``).
    """
    words = raw.strip().split()
    return words[0].rstrip("+").upper() if words else ""


def map_state(state: str) -> MappedState:
    """Map a SLURM job state to what the monitor does (docs/ARCHITECTURE.md, "Status mapping").

    PENDING/CONFIGURING/REQUEUED… → Pending; RUNNING/COMPLETING → Running; COMPLETED → read
    ``status.json``; FAILED/BOOT_FAIL/DEADLINE/OUT_OF_MEMORY/NODE_FAIL → maybe retry, else Error;
    CANCELLED/PREEMPTED/REVOKED → Canceled; TIMEOUT → Error; SUSPENDED/STOPPED → Paused.

    Args:
        state: the state as SLURM prints it (suffixes like ``by 1001`` are ignored).
    """
    return _STATE_TABLE.get(normalize_state(state), MappedState(StateAction.UNKNOWN, None))


def is_terminal(state: str) -> bool:
    """True when ``state`` (any SLURM spelling) means the SLURM job has finished."""
    return normalize_state(state) in TERMINAL_STATES


# ----------------------------------------------------------------------------------- reasons

_REASONS: dict[str, str] = {
    "None": "waiting for the scheduler's first look at the job",
    "Resources": "waiting for nodes/GPUs to become free",
    "Priority": "other jobs with higher priority are ahead in the queue",
    "PartitionTimeLimit": (
        "the requested time exceeds the partition's limit; it will never start "
        "(cancel it and ask for less time)"
    ),
    "PartitionNodeLimit": (
        "the requested node count is outside the partition's limits; it will never start "
        "(cancel it and ask for fewer nodes)"
    ),
    "PartitionConfig": (
        "the request does not fit the partition's configuration (CPUs, GPUs or memory); "
        "cancel it and change the request"
    ),
    "PartitionDown": "the partition is down",
    "PartitionInactive": "the partition is inactive",
    "Dependency": "waiting for the jobs it depends on to finish",
    "DependencyNeverSatisfied": (
        "a job it depends on failed, so it will never start (cancel it and resubmit)"
    ),
    "BeginTime": "waiting for its start time (a requeued job waits a short while before it runs)",
    "JobHeldUser": "held by its owner (release it with scontrol release)",
    "JobHeldAdmin": "held by an administrator",
    "launch failed requeued held": (
        "the launch failed and SLURM held it; release it or cancel and resubmit"
    ),
    "NonZeroExitCode": "the job exited with a non-zero exit code",
    "JobLaunchFailure": (
        "SLURM could not launch the job (often a missing output directory or a bad node)"
    ),
    "TimeLimit": "the job ran out of its time limit",
    "NodeDown": "a node the job needs (or ran on) is down",
    "BadConstraints": "the request can never be satisfied by this cluster",
    "ReqNodeNotAvail": "a node the job needs is unavailable (down, drained or reserved)",
    "Reservation": "waiting for its advanced reservation to become usable",
    "InvalidAccount": "the account is invalid; cancel the job and fix the account",
    "InvalidQOS": "the QOS is invalid; cancel the job and fix the QOS",
    "AssocGrpGRES": "your account has reached its group GPU (GRES) limit",
    "AssocGrpCpuLimit": "your account has reached its group CPU limit",
    "AssocGrpJobsLimit": "your account has reached its limit of running jobs",
    "AssocMaxJobsLimit": "you have reached the per-user job limit of your account",
    "QOSMaxJobsPerUserLimit": "you have reached the per-user running-job limit of the QOS",
    "QOSMaxGRESPerUser": "you have reached the per-user GPU limit of the QOS",
    "QOSGrpGRES": "the QOS has reached its group GPU limit",
    "Prolog": "the node is running its prolog script",
    "Cleaning": "the job is being cleaned up before it can run again",
    "FrontEndDown": "the front-end node is down",
    "SystemFailure": "a SLURM or node failure",
    "OutOfMemory": "the job ran out of memory",
}

_SHORT_REASONS: dict[str, str] = {
    "None": "",
    "Resources": "no free nodes",
    "Priority": "lower priority",
    "PartitionTimeLimit": "over max time",
    "PartitionNodeLimit": "too many nodes",
    "PartitionConfig": "does not fit",
    "PartitionDown": "partition down",
    "PartitionInactive": "partition off",
    "Dependency": "waits for job",
    "DependencyNeverSatisfied": "dep. failed",
    "BeginTime": "start not yet",
    "JobHeldUser": "held by you",
    "JobHeldAdmin": "held by admin",
    "launch failed requeued held": "launch failed",
    "ReqNodeNotAvail": "node unavail.",
    "Reservation": "reservation",
    "InvalidAccount": "bad account",
    "InvalidQOS": "bad QOS",
    "AssocMaxJobsLimit": "too many jobs",
    "AssocGrpJobsLimit": "too many jobs",
    "QOSMaxJobsPerUserLimit": "too many jobs",
    "AssocGrpGRES": "GPU limit",
    "QOSMaxGRESPerUser": "GPU limit",
    "QOSGrpGRES": "GPU limit",
    "AssocGrpCpuLimit": "CPU limit",
    "BadConstraints": "impossible",
    "NodeDown": "node down",
    "Prolog": "prolog",
    "Cleaning": "cleaning up",
}
"""A few words per pending reason, for a table column (:func:`explain_reason` with ``short``)."""


def clean_reason(reason: str) -> str:
    """Strip the parentheses squeue's ``%R`` puts around a reason (``(Resources)``)."""
    text = reason.strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1].strip()
    return text


_END_REASONS = frozenset(
    {
        "NonZeroExitCode",
        "JobLaunchFailure",
        "TimeLimit",
        "NodeDown",
        "BadConstraints",
        "RaisedSignal",
        "Prolog",
        "SystemFailure",
        "OutOfMemory",
        "DeadLine",
    }
)
"""squeue reasons that explain how a job ended (kept after it left PENDING)."""

_WAITING_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "CONFIGURING"})


def reason_for_state(state: str, reason: str) -> str:
    """The reason worth showing for a job in ``state``.

    A waiting reason (``(BeginTime)``, ``(JobHeldUser)``, squeue's ``None``) means nothing once
    the job runs, ended or was cancelled, so it is dropped then; reasons that explain an end
    (``NonZeroExitCode``, ``TimeLimit``, ``JobLaunchFailure``, ...) are kept.
    """
    if normalize_state(state) in _WAITING_STATES:
        return reason
    head = re.split(r"[,:\s]", clean_reason(reason), maxsplit=1)[0]
    return reason if head in _END_REASONS else ""


def explain_reason(reason: str, *, short: bool = False) -> str:
    """Explain a SLURM pending/finish reason in plain words.

    Accepts ``Resources`` or ``(Resources)``, ``ReqNodeNotAvail, UnavailableNodes:vm`` and other
    decorated forms; unknown reasons fall back to ``SLURM reason: <reason>``; an empty reason
    gives ''.

    Args:
        reason: the reason as squeue/sacct print it.
        short: a few words for a table column (``no free nodes``) instead of a sentence;
            unknown reasons then fall back to the reason itself.
    """
    text = clean_reason(reason)
    if not text:
        return ""
    table = _SHORT_REASONS if short else _REASONS
    head = re.split(r"[,:\s]", text, maxsplit=1)[0]
    for key in (text, head):
        if key in table:
            return table[key]
    if short:
        for prefix, words in (("QOS", "QOS limit"), ("Assoc", "account limit")):
            if head.startswith(prefix):
                return words
        return head
    if head.startswith("QOS"):
        return f"a QOS limit is reached ({text})"
    if head.startswith("Assoc"):
        return f"an account (association) limit is reached ({text})"
    if head.startswith("Partition"):
        return f"the partition does not allow the request ({text})"
    return f"SLURM reason: {text}"


_CONTROLLER_DOWN = re.compile(
    r"Unable to contact slurm controller|Socket timed out on send/recv|backup controller in "
    r"standby mode|Zero Bytes were transmitted or received|Communication connection failure|"
    r"Connection refused|Transport endpoint is not connected",
    re.IGNORECASE,
)


def controller_unreachable(message: str) -> str:
    """A SLURM command's error that means the controller did not answer, in words ('' for any
    other error): the primary restarting, or the backup taking over, makes every client wait or
    fail for SlurmctldTimeout seconds or more."""
    if not _CONTROLLER_DOWN.search(message):
        return ""
    return (
        f"SLURM's controller did not answer ({message.strip()[:160]}); it may be restarting or "
        "failing over to its backup, so the job states shown are the last known ones"
    )
