"""The user's history, asked of sacct: the filters people type, one command per page, its answer.

Pure. :func:`history_command` asks ``sacct`` once for one page of one window, filtered and cut
on the cluster (awk, sort), so the reply stays small however many jobs the window holds;
:func:`usage_command` asks about a list of ids in one call; :func:`parse_history_output` turns
either answer into a :class:`~tao_slurm_tui.core.accounting.HistoryPage`. The rows themselves
are parsed by :func:`~tao_slurm_tui.core.accounting.parse_entries`.

Every job of the user is here, named by whoever ran it: a name (or a working directory) can
hold tabs and newlines (``scontrol update JobName=...``), and sacct prints it as it is. So each
command draws a nonce (the caller's): sacct separates fields by ``@<nonce>@``, which no field
holds; on the cluster an awk joins a row's broken lines again (by the count of delimiters) with
a token of the nonce, and our marker lines carry it too. A name's lines never pass for rows or
markers, and come back as one name with its newlines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from tao_slurm_tui.core import quoting
from tao_slurm_tui.core.accounting import (
    FAILED_STATES,
    HISTORY_FIELDS,
    KEYS,
    KNOWN_STATES,
    MAX_PAGE_SIZE,
    HistoryPage,
    HistoryQuery,
    Summary,
    parse_entries,
)
from tao_slurm_tui.core.slurm import TERMINAL_STATES
from tao_slurm_tui.core.slurm_poll import SLURM_ENV_VARS

MARK = "@@tao-history:"
"""Prefix of the marker lines the history command prints."""

_STATE_COL = KEYS.index("state") + 1
_NAME_COL = KEYS.index("name") + 1

# ----------------------------------------------------------------------------------- filters

_RELATIVE_RE = re.compile(r"(\d{1,4})\s*(m|min|minutes?|h|hours?|d|days?|w|weeks?)", re.I)
_UNIT_WORDS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?")


def parse_since(text: str) -> str:
    """Turn a user's ``--since`` into what ``sacct -S`` takes.

    Relative spans (``7d``, ``12h``, ``2w``, ``30m``, ``3 days``) become ``now-7days`` so the
    cluster's own clock decides; dates (``2026-11-01``, ``2026-11-01T08:00``) are passed as
    they are (cluster local time, like sacct prints); ``today`` is midnight.

    Raises:
        ValueError: anything else (one sentence saying what works).
    """
    value = text.strip()
    match = _RELATIVE_RE.fullmatch(value)
    if match:
        number, unit = match.groups()
        return f"now-{int(number)}{_UNIT_WORDS[unit[0].lower()]}"
    if value.lower() in {"today", "midnight"}:
        return "midnight"
    if _DATE_RE.fullmatch(value):
        iso = value.replace(" ", "T")
        try:
            datetime.fromisoformat(iso)
        except ValueError:
            pass
        else:
            return iso
    raise ValueError(
        f"--since {text!r} is not a date or a span; use e.g. 7d, 12h, 2w, today or 2026-11-01"
    )


def parse_states(text: str) -> tuple[str, ...]:
    """``failed,cancelled`` → ``("FAILED", "CANCELLED")``; '' → ().

    Raises:
        ValueError: a name that is not a SLURM job state.
    """
    states: list[str] = []
    for item in text.split(","):
        state = item.strip().upper()
        if not state:
            continue
        if state == "CANCELED":
            state = "CANCELLED"
        if state not in KNOWN_STATES:
            known = ", ".join(sorted(KNOWN_STATES))
            raise ValueError(
                f"--state {item.strip()!r} is not a SLURM job state; use one of {known}"
            )
        if state not in states:
            states.append(state)
    return tuple(states)


def check_name_filter(text: str) -> str:
    """The name filter, checked: printable, no backslash (awk would read it as an escape).

    Raises:
        ValueError: the filter has a control character or a backslash.
    """
    if any(ch == "\\" or not ch.isprintable() for ch in text) or len(text) > 200:
        raise ValueError("the name filter may not contain backslashes or control characters")
    return text


# ----------------------------------------------------------------------------------- commands


def _check_nonce(nonce: str) -> str:
    if not _NONCE_RE.fullmatch(nonce):
        raise ValueError(f"a history nonce is 8-32 lowercase hex digits, not {nonce!r}")
    return nonce


_NONCE_RE = re.compile(r"[0-9a-f]{8,32}")


def delimiter(nonce: str) -> str:
    """sacct's field delimiter for one command: no field holds it."""
    return f"@{_check_nonce(nonce)}@"


def joiner(nonce: str) -> str:
    """What the cluster puts between the lines of one field (a name with newlines)."""
    return f"@{_check_nonce(nonce)}nl@"


def marker(nonce: str) -> str:
    """The marker prefix of one command's own lines."""
    return f"{MARK}{_check_nonce(nonce)}:"


def _sacct_argv(nonce: str, *extra: str) -> list[str]:
    fmt = ",".join(name for _, name in HISTORY_FIELDS)
    return ["sacct", "-n", "-P", "--delimiter", delimiter(nonce), "--format", fmt, *extra]


def _preamble(nonce: str) -> list[str]:
    # One line, no "!" or newline in the quoted script: csh-family login shells choke on both.
    return [
        f"unset {' '.join(SLURM_ENV_VARS)}",
        "LC_ALL=C",
        "export LC_ALL",
        f"m={quoting.quote(marker(nonce))}",
        'u="$(id -un)"',
    ]


_JOIN_AWK = (
    "function flush(){if(have)print buf; have=0} "
    "index($0,m)==1 {flush(); print; next} "
    "{n=gsub(d,d)} "
    "have && cnt<nf-1 {buf=buf j $0; cnt+=n; next} "
    "n>0 {flush(); buf=$0; cnt=n; have=1; next} "
    "{flush(); print} "
    "END{flush()}"
)
"""Puts a row that a name's (or a working directory's) newlines broke back on one line: a
line continues the row before it while that row lacks delimiters (the free fields are not
last, so a whole row ends with a delimiter-free fixed field). Marker lines, messages and lines
before any row pass as they are."""


def _joined(sacct: str, nonce: str) -> str:
    """Shell text: ``sacct``'s rows one a line (see :data:`_JOIN_AWK`), then its marker."""
    join_vars = quoting.join(
        ["-v", f"d={delimiter(nonce)}", "-v", f"j={joiner(nonce)}", "-v", f"nf={len(KEYS)}"]
    )
    return (
        f'{{ {sacct} 2>&1; printf "\\n%ssacct rc=%s\\n" "$m" "$?"; }} | '
        f'awk {join_vars} -v m="$m" {quoting.quote(_JOIN_AWK)}'
    )


_FILTER_AWK = (
    "BEGIN{n=0; sj=0; sf=0; sx=0; sg=0; sc2=0; lg=0; lc=0} "
    'index($0,m)==1 {print "M" t $0; next} '
    "NF==0 {next} "
    'NF<nf {print "M" t m "msg " $0; next} '
    '{d=index($2,"."); if(d==0){b=$2; s=$sc; sub(/ .*/,"",s); sub(/[+]$/,"",s); '
    # The window's totals, over every allocation (only the first page asks for them).
    'if(bf==""){g=0; x=$tr; if(match(x,/(^|,)gres[/]gpu=[0-9]+/)){y=substr(x,RSTART,RLENGTH); '
    'sub(/.*=/,"",y); g=y+0} else {while(match(x,/gres[/]gpu:[^=,]+=[0-9]+/)){'
    'y=substr(x,RSTART,RLENGTH); sub(/.*=/,"",y); g+=y; x=substr(x,RSTART+RLENGTH)}} '
    "e=$er+0; sj++; sg+=g*e; sc2+=($ac+0)*e; "
    'if(index(fin,"," s ",")>0) sf++; '
    'if(index(lost,"," s ",")>0){sx++; lg+=g*e; lc+=($ac+0)*e}} '
    "k=1; "
    'if(st!="" && index(st,"," s ",")==0) k=0; '
    'if(nm!="" && index(tolower($nc),nm)==0) k=0; '
    'if(bf!="" && b+0>=bf+0) k=0; '
    "if(k){keep[b]=1; n++}} else {b=substr($2,1,d-1)} "
    "if(b in keep) print b t $0} "
    'END{print "M" t m "total " n; '
    'if(bf=="") printf "M%s%ssummary %d %d %d %.0f %.0f %.0f %.0f\\n", t, m, sj, sf, sx, sg, sc2, '
    "lg, lc}"
)
"""Keeps allocation rows passing the filters and their steps, prefixed with their raw id so
``sort`` can order them newest first; marker and message lines get an ``M`` key. On the first
page it also totals the whole window (jobs, finished, failed, GPU- and CPU-seconds, lost
GPU- and CPU-seconds) for :class:`Summary`: the same rules as :func:`summarize`."""

_PAGE_AWK = (
    "BEGIN{c=0; more=0} "
    '$1=="M" {sub(/^M\\t/,""); print; next} '
    "{b=$1; if(!(b in seen)){if(c>=lim){more=1; next} seen[b]=1; c++} "
    'sub(/^[^\\t]*\\t/,""); print} '
    'END{printf "%spage count=%d more=%d\\n", m, c, more}'
)
"""Takes the first ``lim`` jobs (with their steps) of the sorted stream."""


def history_command(query: HistoryQuery, nonce: str) -> str:
    """One remote command for one page of the user's history: a single ``sacct`` over the
    window, filtered and cut to ``limit`` jobs on the cluster, so the reply stays small however
    many jobs the window holds.

    Output: the page's rows (allocations then their steps, newest job first), error lines as
    ``@@tao-history:<nonce>:msg …``, and the markers ``…:sacct rc=N``, ``…:total N`` (jobs
    matching the filters in the window, before the cursor) and ``…:page count=N more=0|1``.

    Raises:
        ValueError: a bad limit or state.
    """
    if not 1 <= query.limit <= MAX_PAGE_SIZE:
        raise ValueError(f"page size must be 1..{MAX_PAGE_SIZE}, not {query.limit}")
    for state in query.states:
        if state not in KNOWN_STATES:
            raise ValueError(f"not a SLURM job state: {state!r}")
    check_name_filter(query.name)
    # Open-ended windows end an hour from now, not "now": sacct -E now leaves out a job that
    # started in the very second of the query (seen on the sandbox right after a short job).
    window = ("-S", query.since, "-E", query.until or "now+1hours")
    sacct = quoting.join([*_sacct_argv(nonce, *window), "-u"]) + ' "$u"'
    states = ("," + ",".join(query.states) + ",") if query.states else ""
    filter_vars = [
        "-v",
        f"m={marker(nonce)}",
        "-v",
        f"nf={len(KEYS)}",
        "-v",
        f"sc={_STATE_COL}",
        "-v",
        f"nc={_NAME_COL}",
        "-v",
        f"st={states}",
        "-v",
        f"nm={query.name.lower()}",
        "-v",
        f"bf={query.before if query.before is not None else ''}",
        "-v",
        f"tr={KEYS.index('alloc_tres') + 1}",
        "-v",
        f"er={KEYS.index('elapsed_raw') + 1}",
        "-v",
        f"ac={KEYS.index('alloc_cpus') + 1}",
        "-v",
        "fin=," + ",".join(sorted(TERMINAL_STATES)) + ",",
        "-v",
        "lost=," + ",".join(sorted(FAILED_STATES)) + ",",
    ]
    pipeline = (
        f"{_joined(sacct, nonce)} | "
        f"awk -F {quoting.quote(delimiter(nonce))} -v t='\\t' {quoting.join(filter_vars)} "
        f"{quoting.quote(_FILTER_AWK)} | "
        "sort -t '\t' -k1,1nr -s | "
        f"awk -F '\\t' -v lim={query.limit} -v m=\"$m\" {quoting.quote(_PAGE_AWK)}"
    )
    return quoting.join(["sh", "-c", "; ".join([*_preamble(nonce), pipeline])])


def usage_command(raw_ids: Iterable[str], nonce: str) -> str:
    """One remote command giving the history rows (with steps) of the listed SLURM ids.

    Raises:
        ValueError: an id is not a SLURM job id.
    """
    ids: list[str] = []
    for job_id in raw_ids:
        value = str(job_id).strip()
        if not re.fullmatch(r"[0-9]+(?:_[0-9]+)?", value):
            raise ValueError(f"not a SLURM job id: {job_id!r}")
        if value not in ids:
            ids.append(value)
    if not ids:
        raise ValueError("no job ids to ask sacct about")
    sacct = quoting.join(_sacct_argv(nonce, "-j", ",".join(ids)))
    return quoting.join(["sh", "-c", "; ".join([*_preamble(nonce), _joined(sacct, nonce)])])


# ----------------------------------------------------------------------------------- the answer


def _parse_summary(text: str) -> Summary | None:
    parts = text.split()
    if len(parts) != 7 or not all(p.isdigit() for p in parts):
        return None
    jobs, finished, failed, gpu_s, cpu_s, lost_gpu_s, lost_cpu_s = (int(p) for p in parts)
    return Summary(
        jobs=jobs,
        finished=finished,
        failed=failed,
        gpu_hours=gpu_s / 3600,
        cpu_hours=cpu_s / 3600,
        lost_gpu_hours=lost_gpu_s / 3600,
        lost_cpu_hours=lost_cpu_s / 3600,
    )


_PAGE_RE = re.compile(r"page count=(\d+) more=([01])")


def parse_history_output(text: str, nonce: str, *, paged: bool = True) -> HistoryPage:
    """Parse what :func:`history_command` (``paged``) or :func:`usage_command` printed with
    ``nonce``."""
    page = HistoryPage()
    body: list[str] = []
    mark = marker(nonce)
    for line in text.split("\n"):
        if not line.startswith(mark):
            body.append(line)
            continue
        rest = line[len(mark) :].strip()
        if rest.startswith("sacct rc="):
            value = rest.removeprefix("sacct rc=")
            page.sacct_rc = int(value) if value.lstrip("-").isdigit() else None
            page.complete = page.complete or not paged
        elif rest.startswith("total "):
            value = rest.removeprefix("total ")
            page.total = int(value) if value.isdigit() else None
        elif rest.startswith("msg "):
            body.append(rest.removeprefix("msg "))
        elif rest.startswith("summary "):
            page.summary = _parse_summary(rest.removeprefix("summary "))
        elif paged and (match := _PAGE_RE.fullmatch(rest)):
            page.more = match.group(2) == "1"
            page.complete = True
    page.entries, page.messages = parse_entries("\n".join(body), delimiter(nonce), joiner(nonce))
    return page
