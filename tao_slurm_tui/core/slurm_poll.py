"""The poll command and its parsers: the queue of one tick as SLURM states it (pure).

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

from tao_slurm_tui.core import quoting
from tao_slurm_tui.core.models import Attempt
from tao_slurm_tui.core.slurm import (
    LIVE_STATES,
    TERMINAL_STATES,
    MappedState,
    clean_reason,
    explain_reason,
    map_state,
    normalize_state,
    reason_for_state,
)
from tao_slurm_tui.core.slurm_text import clean_time

# ----------------------------------------------------------------------------------- poll command

SEP = "\t"
"""Field separator of our squeue/sacct formats. No field we ask for is free text: not the name
(we know our jobs by id), which can hold tabs and newlines (``scontrol update JobName=``) and
so forge a row of another job. A line with another number of fields is not a row."""

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
)
"""(key, squeue ``-O`` field) of every column we ask squeue for, in order. ``-O`` (not ``-o``)
because only it has the restart count; ``:0`` turns off padding and truncation and the suffix
after it is our separator (checked on SLURM 22.05). No name: see :data:`SEP`."""

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
)
"""(key, sacct ``--format`` name) of every column we ask sacct for, in order (no name: see
:data:`SEP`)."""

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

_JOB_ID_RE = re.compile(r"[0-9]+(?:_[0-9]+)?")
# An id column: 13, 13_4 (array task), 13+0 (het job), 13.batch (step), 13;cluster; a state:
# PENDING, CANCELLED by 1001, '' (sacct before the record).
_ROW_ID_RE = re.compile(r"[0-9]+(?:[_+][0-9]+)?(?:\.[A-Za-z0-9_]+)?(?:;\S+)?")
_ROW_STATE_RE = re.compile(r"(?:[A-Z_]+(?: by \S+)?)?")


def _check_ids(ids: Iterable[str]) -> list[str]:
    out: list[str] = []
    for job_id in ids:
        value = str(job_id).strip()
        if not _JOB_ID_RE.fullmatch(value):
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
    live_re = "^(" + "|".join(sorted(LIVE_STATES)) + ")$"  # (awk's regex: no newline in $2)
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


def queue_command(*, local: bool = False, first: Sequence[str] = (), when: str = "") -> str:
    """One remote command listing every job of the login user that slurmctld still knows.

    ``squeue -u <me> -t all``: the live jobs, and the finished ones slurmctld keeps for
    ``MinJobAge`` (end state included) -- the same command whether the client tracks 1 or 1,000
    jobs, filtered locally. Output as :func:`poll_command`'s (``@@tao-poll:squeue rc=N``, rows,
    ``@@tao-poll:end``); ids it does not list are asked of sacct separately
    (``poll_command((), ids)``). ``local``: ``--local``, no REQUEST_FED_INFO (outside a
    federation only); ``first`` runs before squeue, which runs only when the test ``when`` holds.
    """
    scope = ["--local"] if local else []
    squeue = quoting.join(["squeue", "-h", "-r", "-t", "all", *scope, "-O", squeue_format(), "-u"])
    run = (
        f'q=$({squeue} "$(id -un)" 2>&1); r=$?; printf "%ssqueue rc=%s\\n" "$m" "$r"; '
        'if [ -n "$q" ]; then printf "%s\\n" "$q"; fi'
    )
    parts = [*_prelude(), *first, f"if {when}; then {run}; fi" if when else run]
    return quoting.join(["sh", "-c", "; ".join([*parts, 'printf "%send\\n" "$m"'])])


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
    free_last: bool = False,
) -> tuple[list[SlurmRow], list[str]]:
    """Split squeue/sacct output into rows (on newlines only, not ``splitlines``' others).

    A row has one value per field, a SLURM id and a state of SLURM's shape; any other line is
    a message (stderr folded in, a banner, a forged line). ``free_last``: the last field may
    hold the separator (a recorded format with a name last). With ``allocations_only`` step
    rows (``13.batch``, ``13.0``, ``13.extern``) are dropped.

    Args:
        text: the tool's output.
        fields: column keys in order (see :data:`SQUEUE_FIELDS`, :data:`SACCT_FIELDS`;
            :data:`NODELIST_REASON` for a ``%R`` column).
        sep: the column separator.
        allocations_only: drop job step rows.
        wanted: keep only rows of these ids (squeue lists every job of the user; only the
            tracked ones are worth building a row for).
        free_last: the last field may contain the separator.

    Returns:
        (rows, other lines)
    """
    rows: list[SlurmRow] = []
    messages: list[str] = []
    kind = (tuple(fields), sep, free_last)
    previous = _LATEST_ROWS.get(kind, {})
    latest: dict[str, SlurmRow | None] = {}
    for line in text.split("\n"):
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
            row = _parse_row(line, kind[0], sep, free_last=free_last)
        latest[line] = row
        if row is None:
            messages.append(line.strip())
            continue
        if allocations_only and "." in row.job_id:
            continue
        rows.append(row)
    _LATEST_ROWS[kind] = latest
    return rows, messages


_LATEST_ROWS: dict[tuple[tuple[str, ...], str, bool], dict[str, SlurmRow | None]] = {}
"""The rows parsed from the latest output of each kind (squeue's fields, sacct's), by line. A
job that did not change prints the same line on every tick, so a steady tick re-parses nothing
(and equal rows are the same object); only the latest output's lines are kept -- a running
job prints a new elapsed time on every tick, and a cache of every line ever seen grew for as
long as the app ran (found by bench/soak.py)."""


def _parse_row(
    line: str, fields: tuple[str, ...], sep: str, *, free_last: bool = False
) -> SlurmRow | None:
    """One row (None: not a row)."""
    parts = line.split(sep, len(fields) - 1) if free_last else line.split(sep)
    if len(parts) != len(fields):
        return None
    values = dict(zip(fields, (p.strip() for p in parts), strict=True))
    if NODELIST_REASON in values:
        # squeue's %R: "(Reason)" while not running, else the node list.
        combined = values.pop(NODELIST_REASON)
        key = "reason" if combined.startswith("(") else "nodes"
        values.setdefault(key, combined)
    row = SlurmRow(values)
    shaped = _ROW_ID_RE.fullmatch(row.get("job_id")) and _ROW_STATE_RE.fullmatch(row.get("state"))
    return row if shaped else None


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


def is_transient(row: SlurmRow) -> bool:
    """sacct's placeholder right after start (also for ever for a job a crashed controller
    lost): JobName=allocation or none, PENDING, no partition (a real PENDING record has one)."""
    name, partition = row.get("name"), row.get("partition")
    return name in ("", "allocation") and row.state == "PENDING" and not partition


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
    if latest is not None and is_transient(latest):
        latest = None
    jid = (squeue_row.job_id if squeue_row else "") or (latest.job_id if latest else "") or job_id
    snap = SlurmSnapshot(job_id=jid, restarts=restarts)
    primary = squeue_row if squeue_row is not None else latest
    if primary is None:
        return snap
    _take_primary(snap, primary, "squeue" if squeue_row is not None else "sacct")
    if latest is not None and latest.state in TERMINAL_STATES:
        _take_finished(snap, latest, listed=squeue_row is not None)
    return snap


def _take_primary(snap: SlurmSnapshot, primary: SlurmRow, source: str) -> None:
    """The state and details of the row that speaks for the job (squeue's while it lists it)."""
    snap.found = True
    snap.source = source
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


def _take_finished(snap: SlurmSnapshot, latest: SlurmRow, *, listed: bool) -> None:
    """Accounting's finished record of the latest run: the exit code, and whether it agrees."""
    if listed:
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
_MARK_RE = re.compile(r"(squeue|sacct|end)(?: rc=(-?\d+))?(?: ids=(\S*))?\s*")


def parse_poll_output(text: str, wanted: Container[str] | None = None) -> PollOutput:
    """Parse what :func:`poll_command` or :func:`queue_command` printed (only the rows of the
    ``wanted`` ids, when given)."""
    out = PollOutput()
    section = ""
    chunks: dict[str, list[str]] = {"squeue": [], "sacct": []}
    for line in text.split("\n"):
        if line.startswith(MARK):
            match = _MARK_RE.fullmatch(line[len(MARK) :])
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
