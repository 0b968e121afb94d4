"""Why a pending job waits: the reason in words with what to do, its priority and factors
(``sprio``), its rank among the partition's pending jobs, the user's fair share (``sshare``).

Pure. :func:`why_command` is the one command (one round trip, asked when the details pane shows
a pending job, never in the poll); :func:`parse_why` reads its answer into a
:class:`WaitReport`.

How SLURM 22.05 answers (checked on the sandbox's ``priority/multifactor``):

- ``sprio`` lists only pending jobs the scheduler considers: a held job or one waiting for a
  dependency is absent, and ``-j`` of such a job prints ``Unable to find jobs matching
  user/id(s) specified`` (exit 0); a job pending in two partitions has one row per partition;
- ``sprio -w`` prints one ``Weights`` row (the site's weight of each factor);
- under ``priority/basic`` sprio refuses: ``You are not running a supported priority plugin``;
- ``sshare -U -u USER`` gives one row per association of the user (account, shares, usage,
  fair-share factor); an unknown user gives no row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tao_slurm_tui.core import quoting
from tao_slurm_tui.core.slurm import clean_reason, explain_reason

MARK = "@@tao-why:"
"""Prefix of the line that starts each part of the answer."""

SPRIO_FORMAT = "%i|%r|%Y|%A|%F|%J|%P|%Q|%N|%u"
"""Job id, partition, priority, then the weighted age, fair-share, job size, partition, QOS and
nice factors, user."""

SSHARE_FORMAT = "Account,User,RawShares,NormShares,RawUsage,EffectvUsage,FairShare"

FACTORS = ("age", "fairshare", "jobsize", "partition", "qos")
"""The weighted factors of a priority, in sprio's order."""

FACTOR_WORDS = {
    "age": "age",
    "fairshare": "fair share",
    "jobsize": "job size",
    "partition": "partition",
    "qos": "QOS",
}

_ADVICE: dict[str, str] = {
    "Priority": (
        "Jobs of higher priority are ahead. Its priority grows as it waits (age) and as your "
        "recent usage decays (fair share); a shorter wall time lets it start early in a gap "
        "(backfill)."
    ),
    "Resources": (
        "The GPUs it asks for are busy. Fewer GPUs, a shorter wall time (backfill) or another "
        "partition may start sooner: p shows where GPUs are free."
    ),
    "Dependency": "It starts when the job it depends on (a pipeline's earlier step) completes.",
    "DependencyNeverSatisfied": "It will never start: cancel it and submit again.",
    "JobHeldUser": "Release it (scontrol release) to let it queue again.",
    "JobHeldAdmin": "Ask the cluster's administrators why they hold it.",
    "PartitionTimeLimit": "Cancel it and ask for less wall time than the partition allows.",
    "PartitionNodeLimit": "Cancel it and ask for fewer nodes.",
    "PartitionConfig": "Cancel it and change the request to fit the partition.",
    "ReqNodeNotAvail": (
        "A node it needs is down, drained or reserved; another partition (or leaving that "
        "node out) may start sooner."
    ),
    "BeginTime": "It waits for its start time; nothing to do.",
    "Reservation": "It waits for its reservation to begin.",
    "None": "The scheduler has not looked at it yet; give it a minute.",
}

_LIMIT_ADVICE = (
    "It starts when your running jobs (or your group's) free enough under the limit: wait, or "
    "cancel one of them."
)


def advice(reason: str) -> str:
    """What the user can do about a pending reason ('' when there is nothing to say)."""
    text = clean_reason(reason)
    if text.startswith("Nodes required for job are DOWN"):
        text = "ReqNodeNotAvail"  # SLURM's own description of it, as squeue may print it
    head = re.split(r"[,:\s]", text, maxsplit=1)[0] if text else ""
    if head in _ADVICE:
        return _ADVICE[head]
    return _LIMIT_ADVICE if head.startswith(("QOS", "Assoc")) else ""


@dataclass(frozen=True)
class Priority:
    """A job's priority and its weighted factors in one partition (``sprio``'s row)."""

    job_id: str
    partition: str
    priority: int
    factors: dict[str, int] = field(default_factory=dict)
    """Weighted age, fair share, job size, partition and QOS factors."""
    nice: int = 0
    user: str = ""


@dataclass(frozen=True)
class FairShare:
    """The user's fair share in one account (``sshare``'s row)."""

    account: str
    factor: float | None
    """The fair-share factor (0..1; 1: no recent usage)."""
    share: float | None
    """The user's normalized share of the account."""
    usage: float | None
    """The user's effective share of the recent usage."""


@dataclass(frozen=True)
class WaitReport:
    """Everything the 'why it waits' pane shows for one pending job."""

    job_id: str
    """The TAO job."""
    slurm_job_id: str
    reason: str
    """SLURM's pending reason (raw)."""
    priorities: tuple[Priority, ...] = ()
    """The job's row per partition ('' when sprio does not rank it now)."""
    weights: dict[str, int] = field(default_factory=dict)
    """The site's weight of each factor."""
    ranks: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per partition: (rank, pending jobs ranked) — 1 is next."""
    fairshare: FairShare | None = None
    est_start: str = ""
    """SLURM's start estimate ('' when it has none)."""
    problem: str = ""
    """Why priorities are missing, as a sentence ('' when they are there or not expected)."""

    @property
    def words(self) -> str:
        """The reason in words."""
        return explain_reason(self.reason)

    @property
    def advice(self) -> str:
        """What the user can do."""
        return advice(self.reason)


def why_command(slurm_job_id: str, partitions: list[str], user: str) -> str:
    """The one command: the job's sprio rows, the weights, every pending job of its
    partitions, the user's sshare rows and the job's reason and estimate from squeue."""
    if not slurm_job_id.isdigit():
        raise ValueError(f"not a SLURM job id: {slurm_job_id!r}")
    parts = ",".join(partitions)
    steps = [
        ("sprio", ["sprio", "-h", "-j", slurm_job_id, "-o", SPRIO_FORMAT]),
        ("weights", ["sprio", "-h", "-w", "-o", SPRIO_FORMAT]),
        ("rank", ["sprio", "-h", "-o", SPRIO_FORMAT, *(["-p", parts] if parts else [])]),
        ("share", ["sshare", "-h", "-P", "-U", "-u", user, "-o", SSHARE_FORMAT]),
        ("job", ["squeue", "-h", "-j", slurm_job_id, "-O", "Reason:0|,StartTime:0|,Partition:0"]),
    ]
    lines = [f"echo {MARK}{name}; {quoting.join(argv)} 2>&1" for name, argv in steps]
    return "\n".join(lines)


def _sections(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith(MARK):
            current = out.setdefault(line[len(MARK) :].strip(), [])
        elif current is not None and line.strip():
            current.append(line.strip())
    return out


def _int(text: str) -> int:
    try:
        return int(float(text.strip() or 0))
    except ValueError:
        return 0


def _float(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:
        return None


def _priority(line: str) -> Priority | None:
    parts = line.split("|")
    if len(parts) != 10:
        return None
    job_id, partition, priority, *factors, nice, user = parts
    return Priority(
        job_id.strip(),
        partition.strip(),
        _int(priority),
        dict(zip(FACTORS, (_int(f) for f in factors), strict=True)),
        _int(nice),
        user.strip(),
    )


def _ranks(rows: list[Priority], mine: tuple[Priority, ...]) -> dict[str, tuple[int, int]]:
    """The job's place among each partition's pending jobs (higher priority first, then the
    older job: SLURM's order within a priority tier)."""
    ranks: dict[str, tuple[int, int]] = {}
    for own in mine:
        peers = [r for r in rows if r.partition == own.partition]
        if not any(r.job_id == own.job_id for r in peers):
            peers.append(own)
        ahead = sum(
            1
            for r in peers
            if r.priority > own.priority
            or (r.priority == own.priority and _int(r.job_id) < _int(own.job_id))
        )
        ranks[own.partition] = (ahead + 1, len(peers))
    return ranks


def _fairshare(lines: list[str], account: str) -> FairShare | None:
    rows = [line.split("|") for line in lines if line.count("|") == 6]
    if not rows:
        return None
    row = next((r for r in rows if r[0].strip() == account), rows[0])
    return FairShare(row[0].strip(), _float(row[6]), _float(row[3]), _float(row[5]))


def parse_why(
    text: str, job_id: str, slurm_job_id: str, *, reason: str = "", account: str = ""
) -> WaitReport:
    """The report from :func:`why_command`'s answer.

    Args:
        text: The answer.
        job_id: The TAO job.
        slurm_job_id: Its SLURM job.
        reason: The reason the last poll saw (squeue's fresher one wins).
        account: The job's account (which sshare row is the user's for it).
    """
    parts = _sections(text)
    rows = [p for line in parts.get("sprio", []) if (p := _priority(line))]
    mine = tuple(r for r in rows if r.job_id == slurm_job_id)
    weights_row = next((p for line in parts.get("weights", []) if (p := _priority(line))), None)
    weights = dict(weights_row.factors) if weights_row is not None else {}
    ranked = [p for line in parts.get("rank", []) if (p := _priority(line))]
    job = (parts.get("job") or [""])[0].split("|")
    fresh_reason = job[0].strip() if len(job) == 3 else ""
    est = job[1].strip() if len(job) == 3 else ""
    everything = " ".join(" ".join(v) for v in parts.values())
    problem = ""
    if "priority plugin" in everything:
        problem = (
            "This cluster does not weigh priorities (priority/basic): pending jobs start in "
            "the order they were submitted, as resources allow."
        )
    elif not mine and clean_reason(fresh_reason or reason) in ("", "None"):
        problem = "The scheduler has not looked at it yet; it is ranked once it has."
    elif not mine:
        problem = "SLURM does not rank it yet: only jobs free to start are ranked."
    return WaitReport(
        job_id,
        slurm_job_id,
        fresh_reason or reason,
        mine,
        weights,
        _ranks(ranked, mine),
        _fairshare(parts.get("share", []), account),
        "" if est.upper() in ("", "N/A", "UNKNOWN", "NONE") else est,
        problem,
    )
