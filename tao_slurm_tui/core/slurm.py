"""SLURM facts as pure functions: the poll command, its parsers, state mapping, reasons, times.

Nothing here does I/O. The monitor sends :func:`poll_command` over the open connection once per
tick, hands the text it gets back to :func:`parse_poll_output`, and turns each job into a
:class:`SlurmSnapshot` with :meth:`PollOutput.snapshot` (which calls :func:`merge`).

How SLURM really behaves (see the cluster recipe) shaped the merge:

- ``squeue -t all`` is the truth while a job is live; it also lists finished jobs for
  ``MinJobAge`` (5 min), then fails with ``slurm_load_jobs error: Invalid job id specified``
  (rc 1) -- for the whole id list when none is known.
- ``sacct`` has no row for ~1 s after submit and a transient ``allocation``/``PENDING`` row for a
  few seconds after start; its ``State`` carries suffixes (``CANCELLED by 1001``); ``-X`` drops
  step rows (``13.batch``); ``-D`` adds one row per earlier run of a requeued job.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from tao_slurm_tui.core import quoting
from tao_slurm_tui.core.models import Attempt, TaoStatus

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

_NODELIST_RE = re.compile(r"^[A-Za-z0-9._\-\[\],]+$")


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


# ----------------------------------------------------------------------------------- times


def parse_duration(text: str) -> int | None:
    """Seconds in a SLURM duration, or None for ``UNLIMITED``/``INVALID``/''/garbage.

    Forms: ``D-HH:MM:SS``, ``D-HH:MM``, ``D-HH``, ``HH:MM:SS``, ``MM:SS`` (squeue prints ``1:27``
    for 87 s and ``1:00`` for a one-minute limit), and bare minutes (``30``) as sbatch accepts.
    """
    value = text.strip()
    if not value or value.upper() in {"UNLIMITED", "INVALID", "NOT_SET", "N/A", "PARTITION_LIMIT"}:
        return None
    days = 0
    if "-" in value:
        day_part, _, value = value.partition("-")
        if not day_part.isdigit():
            return None
        days = int(day_part)
        parts = value.split(":")
        # After a day count the fields are hours[:minutes[:seconds]].
        parts += ["0"] * (3 - len(parts))
    else:
        parts = value.split(":")
        if len(parts) == 1:
            parts = ["0", parts[0], "0"]  # bare minutes
        elif len(parts) == 2:
            parts = ["0", *parts]  # MM:SS
    if len(parts) != 3:
        return None
    try:
        # sacct may print fractional seconds (``00:00.123``) for some fields.
        hours, minutes = int(parts[0]), int(parts[1])
        seconds = float(parts[2])
    except ValueError:
        return None
    if min(hours, minutes, seconds) < 0:
        return None
    return days * 86400 + hours * 3600 + minutes * 60 + int(seconds)


def is_unlimited(text: str) -> bool:
    """True for SLURM's ``UNLIMITED`` time limit."""
    return text.strip().upper() == "UNLIMITED"


def format_duration(seconds: int | None) -> str:
    """Seconds as SLURM prints them (``1-02:03:04``, ``4:00:00``, ``1:27``); None → ''."""
    if seconds is None:
        return ""
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


_NO_TIME = {"", "N/A", "NONE", "UNKNOWN", "(NULL)", "0"}


def clean_time(text: str) -> str:
    """A SLURM timestamp, or '' for ``N/A``/``Unknown``/``None``."""
    value = text.strip()
    return "" if value.upper() in _NO_TIME else value


# ----------------------------------------------------------------------------------- node lists


def expand_nodelist(nodelist: str) -> list[str]:
    """Expand a SLURM host list: ``gpu[01-03,07],login1`` → gpu01, gpu02, gpu03, gpu07, login1.

    ``None assigned``, ``(null)`` and '' give ``[]``. Zero padding of ranges is kept.
    """
    text = nodelist.strip()
    if not text or text in {"None assigned", "(null)", "None"} or not _NODELIST_RE.match(text):
        return []
    names: list[str] = []
    for item in _split_top_level(text):
        names.extend(_expand_one(item))
    return names


def _split_top_level(text: str) -> list[str]:
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [i for i in items if i]


def _expand_one(item: str) -> list[str]:
    match = re.match(r"^(.*?)\[([^\]]+)\](.*)$", item)
    if not match:
        return [item]
    prefix, ranges, rest = match.groups()
    tails = _expand_one(rest) if rest else [""]
    out: list[str] = []
    for part in ranges.split(","):
        lo, sep, hi = part.partition("-")
        if sep and lo.isdigit() and hi.isdigit():
            width = len(lo)
            out.extend(
                f"{prefix}{n:0{width}d}{tail}"
                for n in range(int(lo), int(hi) + 1)
                for tail in tails
            )
        else:
            out.extend(f"{prefix}{part}{tail}" for tail in tails)
    return out


# ----------------------------------------------------------------------------------- sbatch

_SBATCH_PARSABLE_RE = re.compile(r"^\s*(\d+)(?:;(\S+))?\s*$")
_SBATCH_TEXT_RE = re.compile(r"Submitted batch job (\d+)(?: on cluster (\S+))?")


def parse_sbatch_output(text: str) -> str:
    """The job id from sbatch's stdout: ``13``, ``13;cluster`` (``--parsable``) or
    ``Submitted batch job 22``.

    Raises:
        ValueError: no job id in ``text``.
    """
    for line in text.splitlines():
        match = _SBATCH_PARSABLE_RE.match(line) or _SBATCH_TEXT_RE.search(line)
        if match:
            return match.group(1)
    raise ValueError(f"sbatch printed no job id: {text.strip()[:200]!r}")


# ----------------------------------------------------------------------------------- poll command

SEP = "\t"
"""Field separator of our squeue/sacct formats (tabs never occur in our fields; the job name,
the only free text, comes last so a stray separator in a foreign name cannot shift fields)."""

MARK = "@@tao-poll:"
"""Prefix of the section marker lines the poll command prints."""

SQUEUE_FIELDS: tuple[tuple[str, str], ...] = (
    ("job_id", "JobID"),
    ("state", "State"),
    ("reason", "Reason"),
    ("nodes", "NodeList"),
    ("elapsed", "TimeUsed"),
    ("time_limit", "TimeLimit"),
    ("partition", "Partition"),
    ("submit_time", "SubmitTime"),
    ("start_time", "StartTime"),
    ("end_time", "EndTime"),
    ("restarts", "RestartCnt"),
    ("name", "Name"),
)
"""(key, squeue ``-O`` field) of every column we ask squeue for, in order. ``-O`` (not ``-o``)
because only it has the restart count; ``:0`` turns off padding and truncation and the suffix
after it is our separator (checked on SLURM 22.05)."""

SACCT_FIELDS: tuple[tuple[str, str], ...] = (
    ("job_id", "JobID"),
    ("state", "State"),
    ("exit_code", "ExitCode"),
    ("reason", "Reason"),
    ("nodes", "NodeList"),
    ("elapsed", "Elapsed"),
    ("time_limit", "Timelimit"),
    ("partition", "Partition"),
    ("submit_time", "Submit"),
    ("start_time", "Start"),
    ("end_time", "End"),
    ("name", "JobName"),
)
"""(key, sacct ``--format`` name) of every column we ask sacct for, in order."""

SLURM_ENV_VARS: tuple[str, ...] = (
    "SQUEUE_ACCOUNT",
    "SQUEUE_ALL",
    "SQUEUE_ARRAY",
    "SQUEUE_FEDERATION",
    "SQUEUE_FORMAT",
    "SQUEUE_FORMAT2",
    "SQUEUE_LICENSES",
    "SQUEUE_LOCAL",
    "SQUEUE_NAMES",
    "SQUEUE_PARTITION",
    "SQUEUE_PRIORITY",
    "SQUEUE_QOS",
    "SQUEUE_SIBLING",
    "SQUEUE_SORT",
    "SQUEUE_STATES",
    "SQUEUE_USERS",
    "SACCT_FORMAT",
    "SACCT_FEDERATION",
    "SACCT_LOCAL",
    "SLURM_TIME_FORMAT",
)
"""User environment that changes squeue/sacct output or filtering; unset by the poll command."""

_JOB_ID_RE = re.compile(r"^[0-9]+(?:_[0-9]+)?$")
# What squeue/sacct print in the id column: 13, 13_4 (array task), 13+0 (het job), 13.batch
# (step), 13;cluster (federation).
_ROW_ID_RE = re.compile(r"^[0-9]+(?:[_+][0-9]+)?(?:\.[A-Za-z0-9_]+)?(?:;\S+)?$")


def _check_ids(ids: Iterable[str]) -> list[str]:
    out: list[str] = []
    for job_id in ids:
        value = str(job_id).strip()
        if not _JOB_ID_RE.match(value):
            raise ValueError(f"not a SLURM job id: {job_id!r}")
        if value not in out:
            out.append(value)
    return out


def squeue_format() -> str:
    """The explicit ``squeue -O`` (``--Format``) value: ``JobID:0<TAB>,State:0<TAB>,…,Name:0``."""
    names = [name for _, name in SQUEUE_FIELDS]
    return ",".join([f"{name}:0{SEP}" for name in names[:-1]] + [f"{names[-1]}:0"])


def sacct_format() -> str:
    """The explicit ``sacct --format`` value."""
    return ",".join(name for _, name in SACCT_FIELDS)


def poll_command(live_ids: Sequence[str], finished_probe_ids: Sequence[str] = ()) -> str:
    """One remote command that reports every job of a poll tick in a single round trip.

    squeue is asked about ``live_ids``. sacct (``-X -D``: allocation rows, one per run) is
    asked, in the same remote shell, about ``finished_probe_ids`` plus every live id squeue did
    not report in a live state -- finished, forgotten after ``MinJobAge`` (squeue then fails
    with ``Invalid job id specified`` for the whole list), or lost because the controller is
    down. So sacct runs only when something finished and costs nothing on a quiet tick.

    The script runs under ``sh -c`` (any login shell works), unsets the user's ``SQUEUE_*``/
    ``SACCT_*``/``SLURM_TIME_FORMAT`` variables and uses explicit formats, so a user's
    environment cannot change what we parse. Output: marker lines ``@@tao-poll:squeue rc=N``,
    ``@@tao-poll:sacct rc=N ids=…`` (only when sacct ran) and ``@@tao-poll:end``, each followed
    by the tool's output with stderr folded in (error lines have no separator).

    Args:
        live_ids: SLURM ids whose state squeue should give.
        finished_probe_ids: ids known to be finished whose accounting (exit code) is still
            wanted; they go straight to sacct.

    Raises:
        ValueError: an id is not a SLURM job id (digits, or ``N_M`` for array tasks).
    """
    live = _check_ids(live_ids)
    probe = [i for i in _check_ids(finished_probe_ids) if i not in live]
    live_re = "^(" + "|".join(sorted(LIVE_STATES)) + ")$"
    sacct = quoting.join(
        ["sacct", "-X", "-D", "-n", "-P", "--delimiter", SEP, "--format", sacct_format(), "-j"]
    )
    parts = [*_prelude(), f"s={quoting.quote(','.join(probe))}"]
    if live:
        squeue = quoting.join(
            ["squeue", "-h", "-t", "all", "-j", ",".join(live), "-O", squeue_format()]
        )
        # awk picks the asked ids that squeue did not report in a live state; they go to sacct.
        awk = (
            'BEGIN{n=split(want,w,",")} NF>2 && $2 ~ re {live[$1]=1} '
            'END{for(i=1;i<=n;i++) if((w[i] in live)==0) printf "%s,", w[i]}'
        )
        parts += [
            f"q=$({squeue} 2>&1)",
            "r=$?",
            'printf "%ssqueue rc=%s\\n" "$m" "$r"',
            'if [ -n "$q" ]; then printf "%s\\n" "$q"; fi',
            "f=$(printf '%s\\n' \"$q\" | awk -F '\\t' "
            f"-v want={quoting.quote(','.join(live))} -v re={quoting.quote(live_re)} "
            f"{quoting.quote(awk)})",
            's="$f$s"',
        ]
    parts += [
        's="${s%,}"',
        'if [ -n "$s" ]; then '
        f'o=$({sacct} "$s" 2>&1); r=$?; '
        'printf "%ssacct rc=%s ids=%s\\n" "$m" "$r" "$s"; '
        'if [ -n "$o" ]; then printf "%s\\n" "$o"; fi; fi',
        'printf "%send\\n" "$m"',
    ]
    return quoting.join(["sh", "-c", "; ".join(parts)])


def _prelude() -> list[str]:
    # One line, no "!" and no newline inside the quoted script: csh-family login shells choke
    # on both even within single quotes.
    return [
        f"unset {' '.join(SLURM_ENV_VARS)}",
        "LC_ALL=C",
        "export LC_ALL",
        f"m={quoting.quote(MARK)}",
    ]


def queue_command() -> str:
    """One remote command listing every job of the login user that slurmctld still knows.

    ``squeue -u <me> -t all``: the live jobs, and the finished ones slurmctld keeps for
    ``MinJobAge`` (end state included) -- the same command whether the client tracks 1 or 1,000
    jobs, filtered locally. Output as :func:`poll_command`'s (``@@tao-poll:squeue rc=N``, rows,
    ``@@tao-poll:end``); ids it does not list are asked of sacct separately
    (``poll_command((), ids)``).
    """
    squeue = quoting.join(["squeue", "-h", "-r", "-t", "all", "-O", squeue_format(), "-u"])
    parts = [
        *_prelude(),
        f'q=$({squeue} "$(id -un)" 2>&1)',
        "r=$?",
        'printf "%ssqueue rc=%s\\n" "$m" "$r"',
        'if [ -n "$q" ]; then printf "%s\\n" "$q"; fi',
        'printf "%send\\n" "$m"',
    ]
    return quoting.join(["sh", "-c", "; ".join(parts)])


# ----------------------------------------------------------------------------------- parsing


NODELIST_REASON = "nodelist_reason"
"""Pseudo field key for squeue's ``%R`` column (reason in parentheses, or the node list)."""


@dataclass(frozen=True)
class SlurmRow:
    """One row of squeue or sacct output, by field key."""

    fields: Mapping[str, str]

    def get(self, key: str) -> str:
        """The field ``key`` ('' when the format has no such column)."""
        return self.fields.get(key, "")

    @property
    def job_id(self) -> str:
        """The SLURM id (``13;cluster`` → ``13``)."""
        return self.get("job_id").split(";", 1)[0].strip()

    @property
    def state(self) -> str:
        """Normalized state (first word)."""
        return normalize_state(self.get("state"))


def parse_rows(
    text: str,
    fields: Sequence[str],
    sep: str = SEP,
    *,
    allocations_only: bool = True,
    wanted: Container[str] | None = None,
) -> tuple[list[SlurmRow], list[str]]:
    """Split squeue/sacct output into rows.

    The last field absorbs any extra separators (a job name containing one). Lines without a
    separator are messages (stderr folded in) and are returned apart. With
    ``allocations_only`` step rows (``13.batch``, ``13.0``, ``13.extern``) are dropped.

    Args:
        text: the tool's output.
        fields: column keys in order (see :data:`SQUEUE_FIELDS`, :data:`SACCT_FIELDS`;
            :data:`NODELIST_REASON` for a ``%R`` column).
        sep: the column separator.
        allocations_only: drop job step rows.
        wanted: keep only rows of these ids (squeue lists every job of the user; only the
            tracked ones are worth building a row for).

    Returns:
        (rows, other lines)
    """
    rows: list[SlurmRow] = []
    messages: list[str] = []
    kind = (tuple(fields), sep)
    previous = _LATEST_ROWS.get(kind, {})
    latest: dict[str, SlurmRow | None] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        if sep not in line:
            messages.append(line.strip())
            continue
        if wanted is not None and line[: line.find(sep)].split(";", 1)[0] not in wanted:
            continue
        if line in previous:
            row = previous[line]
        elif line in latest:
            row = latest[line]
        else:
            row = _parse_row(line, kind[0], sep)
        latest[line] = row
        if row is None:
            messages.append(line.strip())
            continue
        if allocations_only and "." in row.job_id:
            continue
        rows.append(row)
    _LATEST_ROWS[kind] = latest
    return rows, messages


_LATEST_ROWS: dict[tuple[tuple[str, ...], str], dict[str, SlurmRow | None]] = {}
"""The rows parsed from the latest output of each kind (squeue's fields, sacct's), by line. A
job that did not change prints the same line on every tick, so a steady tick re-parses nothing
(and equal rows are the same object); only the latest output's lines are kept -- a running
job prints a new elapsed time on every tick, and a cache of every line ever seen grew for as
long as the app ran (found by bench/soak.py)."""


def _parse_row(line: str, fields: tuple[str, ...], sep: str) -> SlurmRow | None:
    """One row (None: not a row)."""
    parts = line.split(sep, len(fields) - 1)
    if len(parts) < len(fields):
        return None
    values = dict(zip(fields, (p.strip() for p in parts), strict=True))
    if NODELIST_REASON in values:
        # squeue's %R: "(Reason)" while not running, else the node list.
        combined = values.pop(NODELIST_REASON)
        key = "reason" if combined.startswith("(") else "nodes"
        values.setdefault(key, combined)
    row = SlurmRow(values)
    return row if _ROW_ID_RE.match(row.get("job_id")) else None


@dataclass
class SlurmSnapshot:
    """What SLURM says about one job id, merged from squeue and sacct."""

    job_id: str
    found: bool = False
    """False when neither squeue nor sacct knows the id (yet)."""
    source: str = "none"
    """``squeue``, ``sacct``, ``both`` or ``none``: where ``state`` came from."""
    state: str = ""
    """Normalized state (``CANCELLED``, not ``CANCELLED by 1001``); '' when unknown."""
    raw_state: str = ""
    """State as printed."""
    name: str = ""
    reason: str = ""
    """Reason without parentheses (``Resources``; ``None`` while running)."""
    nodes: str = ""
    """Node list (SLURM host-list syntax); '' while pending."""
    elapsed: str = ""
    time_limit: str = ""
    partition: str = ""
    submit_time: str = ""
    start_time: str = ""
    """Actual start, '' if it has not started."""
    est_start: str = ""
    """Estimated start while pending, when SLURM has one."""
    end_time: str = ""
    exit_code: str = ""
    """``rc:signal`` from sacct; '' until accounting has the finished record."""
    restarts: int = 0
    """Earlier runs of this SLURM id (requeues), from ``sacct -D``."""
    settled: bool = False
    """True when the job is finished and accounting has its record (exit code known): nothing
    more to ask."""

    @property
    def terminal(self) -> bool:
        """True when the state is a finished one."""
        return self.state in TERMINAL_STATES

    @property
    def mapped(self) -> MappedState:
        """:func:`map_state` of the state."""
        return map_state(self.state)

    @property
    def reason_text(self) -> str:
        """:func:`explain_reason` of the reason ('' while running normally)."""
        if self.state == "RUNNING" or (self.state != "PENDING" and self.reason in {"", "None"}):
            return ""
        return explain_reason(self.reason)

    def apply_to(self, attempt: Attempt) -> Attempt:
        """A copy of ``attempt`` with what this snapshot knows filled in (unknowns kept)."""
        if not self.found:
            return replace(attempt)
        updates: dict[str, object] = {"state": self.state}
        for key in (
            "exit_code",
            "nodes",
            "submit_time",
            "start_time",
            "end_time",
            "elapsed",
            "time_limit",
            "partition",
        ):
            value = getattr(self, key)
            if value:
                updates[key] = value
        updates["reason"] = reason_for_state(self.state, self.reason)
        updates["est_start"] = self.est_start
        updates["restarts"] = max(self.restarts, attempt.restarts)
        return replace(attempt, **updates)  # type: ignore[arg-type]


_DETAIL_KEYS = ("elapsed", "time_limit", "partition", "submit_time", "start_time", "end_time")


def _is_transient(row: SlurmRow) -> bool:
    # sacct's placeholder right after start: JobName=allocation, PENDING, empty partition.
    return row.get("name") == "allocation" and row.state == "PENDING" and not row.get("partition")


def merge(
    squeue_row: SlurmRow | None,
    sacct_rows: SlurmRow | Sequence[SlurmRow] | None,
    job_id: str = "",
) -> SlurmSnapshot:
    """Merge squeue's and sacct's view of one job.

    squeue is the truth while it reports the job (its state is current to the second); sacct
    supplies the exit code and requeue history, and the state once squeue has forgotten the
    job. sacct's transient ``allocation`` row and a sacct record that has not caught up with a
    finish squeue already reports are not trusted: the snapshot is then not ``settled``.

    Args:
        squeue_row: the squeue row of the job, if squeue reported one.
        sacct_rows: the sacct ``-X -D`` rows of the job (one per run, oldest first), or one row.
        job_id: the id (used when neither source has a row).
    """
    if isinstance(sacct_rows, SlurmRow):
        sacct_list: list[SlurmRow] = [sacct_rows]
    else:
        sacct_list = list(sacct_rows or [])
    latest = sacct_list[-1] if sacct_list else None
    # Earlier runs of a requeued job: sacct -D rows before the latest; squeue's RestartCnt.
    restarts = sum(
        1 for r in sacct_list[:-1] if r.state == "REQUEUED" or r.state in TERMINAL_STATES
    )
    if squeue_row is not None and squeue_row.get("restarts").isdigit():
        restarts = max(restarts, int(squeue_row.get("restarts")))
    if latest is not None and _is_transient(latest):
        latest = None
    jid = (squeue_row.job_id if squeue_row else "") or (latest.job_id if latest else "") or job_id
    snap = SlurmSnapshot(job_id=jid, restarts=restarts)
    if squeue_row is None and latest is None:
        return snap
    snap.found = True
    primary = squeue_row if squeue_row is not None else latest
    assert primary is not None  # one of them is set (checked above)
    snap.source = "squeue" if squeue_row is not None else "sacct"
    snap.raw_state = primary.get("state")
    snap.state = primary.state
    snap.name = primary.get("name")
    snap.reason = clean_reason(primary.get("reason"))
    snap.nodes = _clean_nodes(primary.get("nodes"))
    for key in _DETAIL_KEYS:
        setattr(snap, key, clean_time(primary.get(key)) if "time" in key else primary.get(key))
    if snap.state == "PENDING":
        # For a pending job squeue's %S is the scheduler's estimate, not a real start.
        snap.est_start, snap.start_time = snap.start_time, ""
    if not snap.terminal:
        # squeue's %e is the expected end of a live job, not an end.
        snap.end_time = ""
    if latest is not None and latest.state in TERMINAL_STATES:
        if squeue_row is not None:
            snap.source = "both"
            # sacct's finished record is richer: exact elapsed/end time, and the exit code.
            for key in ("elapsed", "end_time", "start_time"):
                value = clean_time(latest.get(key)) if "time" in key else latest.get(key)
                if value and snap.terminal:
                    setattr(snap, key, value)
            if not snap.nodes:
                snap.nodes = _clean_nodes(latest.get("nodes"))
        snap.exit_code = latest.get("exit_code")
        snap.settled = snap.terminal
    return snap


def _clean_nodes(text: str) -> str:
    value = text.strip()
    return "" if value in {"None assigned", "(null)", "None"} else value


# ----------------------------------------------------------------------------------- poll output


@dataclass
class PollOutput:
    """The parsed output of :func:`poll_command`."""

    squeue_rc: int | None = None
    """squeue's exit code (None: squeue was not run)."""
    sacct_rc: int | None = None
    """sacct's exit code (None: sacct was not needed)."""
    sacct_ids: list[str] = field(default_factory=list)
    """Ids sacct was asked about."""
    squeue_rows: dict[str, SlurmRow] = field(default_factory=dict)
    sacct_rows: dict[str, list[SlurmRow]] = field(default_factory=dict)
    squeue_messages: list[str] = field(default_factory=list)
    """squeue's stderr lines (``slurm_load_jobs error: Invalid job id specified``, ...)."""
    sacct_messages: list[str] = field(default_factory=list)
    complete: bool = False
    """True when the end marker arrived (the output was not cut short)."""

    @property
    def squeue_unknown_ids(self) -> bool:
        """True when squeue failed only because it no longer knows the ids (not an outage)."""
        return self.squeue_rc not in (None, 0) and any(
            "Invalid job id specified" in m for m in self.squeue_messages
        )

    @property
    def error(self) -> str:
        """A one-line description of a real failure ('' when the tick is usable).

        squeue forgetting ids is normal; sacct failing while it was needed, or squeue failing
        for another reason with no sacct fallback, is an error.
        """
        if not self.complete:
            return "the poll output was cut short"
        if self.sacct_rc not in (None, 0):
            detail = self.sacct_messages[0] if self.sacct_messages else f"rc {self.sacct_rc}"
            return f"sacct failed: {detail}"
        if self.squeue_rc not in (None, 0) and not self.squeue_unknown_ids and not self.sacct_ids:
            detail = self.squeue_messages[0] if self.squeue_messages else f"rc {self.squeue_rc}"
            return f"squeue failed: {detail}"
        # Lines that are neither job rows nor the tools' own messages: something printed
        # garbage (a login banner on stdout, a wrapper script); the rows it hid are unknown.
        garbage = [
            m
            for m in self.squeue_messages + self.sacct_messages
            if not m.startswith(_TOOL_MESSAGE_PREFIXES)
        ]
        if garbage:
            return f"squeue/sacct printed a line that is not a job row ({garbage[0][:60]!r})"
        return ""

    def snapshot(self, job_id: str) -> SlurmSnapshot:
        """The merged view of ``job_id`` (see :func:`merge`)."""
        return merge(self.squeue_rows.get(job_id), self.sacct_rows.get(job_id), job_id)

    def snapshots(self, job_ids: Iterable[str]) -> dict[str, SlurmSnapshot]:
        """:meth:`snapshot` for each id."""
        return {job_id: self.snapshot(job_id) for job_id in job_ids}


_TOOL_MESSAGE_PREFIXES = ("squeue:", "sacct:", "slurm_", "slurm:", "error:", "warning:")
_SQ_KEYS = tuple(key for key, _ in SQUEUE_FIELDS)
_SA_KEYS = tuple(key for key, _ in SACCT_FIELDS)
_MARK_RE = re.compile(r"^(squeue|sacct|end)(?: rc=(-?\d+))?(?: ids=(\S*))?\s*$")


def parse_poll_output(text: str, wanted: Container[str] | None = None) -> PollOutput:
    """Parse what :func:`poll_command` or :func:`queue_command` printed (only the rows of the
    ``wanted`` ids, when given)."""
    out = PollOutput()
    section = ""
    chunks: dict[str, list[str]] = {"squeue": [], "sacct": []}
    for line in text.splitlines():
        if line.startswith(MARK):
            match = _MARK_RE.match(line[len(MARK) :])
            if not match:
                continue
            section, rc, ids = match.groups()
            if section == "squeue":
                out.squeue_rc = int(rc) if rc is not None else None
            elif section == "sacct":
                out.sacct_rc = int(rc) if rc is not None else None
                out.sacct_ids = [i for i in (ids or "").split(",") if i]
            else:
                out.complete = True
            continue
        if section in chunks:
            chunks[section].append(line)
    rows, out.squeue_messages = parse_rows("\n".join(chunks["squeue"]), _SQ_KEYS, wanted=wanted)
    out.squeue_rows = {row.job_id: row for row in rows}
    rows, out.sacct_messages = parse_rows("\n".join(chunks["sacct"]), _SA_KEYS)
    for row in rows:
        out.sacct_rows.setdefault(row.job_id, []).append(row)
    return out
