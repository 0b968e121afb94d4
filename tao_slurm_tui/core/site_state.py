"""The site's own state behind a pending reason: maintenance reservations and nodes an admin
drained or that are down, with their windows and reasons (pure).

squeue says only ``ReqNodeNotAvail, Reserved for maintenance`` or ``ReqNodeNotAvail,
UnavailableNodes:gpu[03-04]``; ``scontrol show reservation -o`` has the window and ``sinfo -R``
the admin's reason. Both print the cluster's local time, which need not be the workstation's
(a researcher in Europe, a cluster in California): :func:`site_command` asks both in one
command, with the cluster's UTC offset, and every time shown is the workstation's own.
:func:`explain_wait` turns a reason into the sentence a researcher needs (when it can start,
who drained what and why), and :func:`maintenance_now` tells an unreachable cluster during its
announced window from an outage.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from tao_slurm_tui.core.run_events import parse_utc_offset, slurm_time_to_unix
from tao_slurm_tui.core.slurm_fields import parse_key_values
from tao_slurm_tui.core.slurm_text import expand_nodelist

_MARK = "@@site:sinfo"
_TZ = "@@site:tz "

WAIT_PREFIX = "Waiting for "
"""Every sentence :func:`explain_wait` makes starts so (the monitor clears it once the job no
longer waits)."""


def site_command() -> str:
    """The cluster's UTC offset, its reservations (one line each) and the drained/down nodes
    with their reasons."""
    return (
        f'printf "{_TZ}%s\\n" "$(date +%z)"; '
        "scontrol show reservation -o 2>/dev/null; "
        f'printf "{_MARK}\\n"; '
        "sinfo -R -h -N -o '%n|%T|%E|%u|%H' 2>/dev/null; true"
    )


@dataclass(frozen=True)
class Reservation:
    name: str
    start: float
    end: float
    nodes: str
    flags: frozenset[str]

    @property
    def maintenance(self) -> bool:
        return "MAINT" in self.flags


@dataclass(frozen=True)
class NodeOut:
    """A node SLURM will not use, and why (``sinfo -R``)."""

    node: str
    state: str
    reason: str
    user: str
    since: str
    """When it was set, as SLURM printed it."""
    since_at: float | None = None
    """...as unix time (None: unreadable)."""


@dataclass(frozen=True)
class SiteState:
    reservations: tuple[Reservation, ...] = ()
    nodes_out: tuple[NodeOut, ...] = ()


def _when(text: str, utc_offset: int | None) -> float | None:
    """A SLURM time as unix time; ``utc_offset`` None (unknown): the workstation's zone."""
    if utc_offset is not None:
        return slurm_time_to_unix(text, utc_offset)
    try:
        return time.mktime(time.strptime(text.strip(), "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None


def parse_site(output: str) -> SiteState:
    """Read :func:`site_command`'s output."""
    head, _, tail = output.partition(_MARK)
    tz = next((li.removeprefix(_TZ) for li in head.splitlines() if li.startswith(_TZ)), "")
    offset = parse_utc_offset(tz)
    reservations = []
    for line in head.splitlines():
        if not line.startswith("ReservationName="):
            continue
        kv = parse_key_values(line)
        start = _when(kv.get("StartTime", ""), offset)
        end = _when(kv.get("EndTime", ""), offset)
        if start is None or end is None:
            continue
        flags = frozenset(f for f in kv.get("Flags", "").split(",") if f)
        reservations.append(
            Reservation(kv["ReservationName"], start, end, kv.get("Nodes", ""), flags)
        )
    seen: dict[str, NodeOut] = {}
    for line in tail.splitlines():
        parts = line.split("|")
        if len(parts) == 5 and parts[0].strip():
            node, state, reason, user, since = (p.strip() for p in parts)
            out = NodeOut(node, state, reason, user, since, _when(since, offset))
            seen.setdefault(node, out)  # one per node
    return SiteState(tuple(sorted(reservations, key=lambda r: r.start)), tuple(seen.values()))


def _time(epoch: float, now: float) -> str:
    same_day = time.localtime(epoch)[:3] == time.localtime(now)[:3]
    return time.strftime("%H:%M" if same_day else "%a %d %b %H:%M", time.localtime(epoch))


def _since(node: NodeOut, now: float) -> str:
    return _time(node.since_at, now) if node.since_at is not None else node.since


def is_site_wait(reason: str) -> bool:
    """True for a pending reason the site's reservations or node states explain."""
    return bool(re.search(r"ReqNodeNotAvail|Reserved for maintenance|Reservation|NodeDown", reason))


def explain_wait(reason: str, site: SiteState, now: float | None = None) -> str:
    """The sentence for a job pending for ``reason`` ('' when the site state adds nothing)."""
    now = time.time() if now is None else now
    if "maintenance" in reason.lower():
        window = next(
            (r for r in site.reservations if r.maintenance and r.end > now), None
        )  # the soonest one still to come or under way
        if window is not None:
            span = f"{_time(window.start, now)} to {_time(window.end, now)}"
            return (
                f"{WAIT_PREFIX}the maintenance: reservation '{window.name}' holds "
                f"{window.nodes or 'the nodes'} from {span}; the job starts after it, or before "
                "if it can finish in time (a shorter time limit helps)."
            )
    named = re.search(r"UnavailableNodes:(\S+)", reason)
    wanted = set(expand_nodelist(named.group(1))) if named else set()
    out = [n for n in site.nodes_out if not wanted or n.node in wanted]
    if named and out:
        text = "; ".join(
            f"{n.node} is {n.state}: {n.reason or 'no reason given'}"
            + (f" (set by {n.user} at {_since(n, now)})" if n.user else "")
            for n in out[:4]
        )
        more = f" and {len(out) - 4} more" if len(out) > 4 else ""
        return (
            f"{WAIT_PREFIX}nodes an admin took out of service: {text}{more}; the job starts "
            "when they return or other nodes fit it."
        )
    return ""


def maintenance_now(site: SiteState | None, now: float | None = None) -> Reservation | None:
    """The maintenance reservation under way now, if the site announced one."""
    if site is None:
        return None
    now = time.time() if now is None else now
    return next((r for r in site.reservations if r.maintenance and r.start <= now < r.end), None)


def maintenance_sentence(window: Reservation, detail: str = "", now: float | None = None) -> str:
    """What an unreachable cluster means during its announced maintenance (``detail``: what
    failed, e.g. ``login1: connection refused``)."""
    now = time.time() if now is None else now
    return (
        f"The cluster is in its announced maintenance (reservation '{window.name}' until "
        f"{_time(window.end, now)})"
        + (f": no login host answers ({detail})" if detail else "")
        + "; your jobs stay as they were and monitoring resumes by itself when it is back."
    )
