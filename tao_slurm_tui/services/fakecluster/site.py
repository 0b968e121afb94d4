"""The fake cluster's bad days: what its admins did (reservations, nodes drained or down) and
what that means for a pending job. Standard library only: :mod:`.engine` asks it where a job
may run and, when nowhere, why.

A reservation is ``{"name", "start", "end", "nodes": [...], "flags": [...], "users": [...]}``
in ``state["reservations"]`` (slurmctld forgets one at its end); a node out of service has
``DRAIN``, ``DOWN`` or ``FAIL`` in its ``state`` and its ``reason``, ``reason_by`` and
``reason_time`` (as an admin's ``scontrol update NodeName= State=DRAIN Reason=`` leaves them).

A pending job that no usable node could ever hold waits as SLURM 22.05 says: ``ReqNodeNotAvail,
Reserved for maintenance`` when a ``MAINT`` reservation holds the nodes for part of its time
limit (its expected start the window's end), ``ReqNodeNotAvail, UnavailableNodes:<host list>``
(its partitions' nodes out of service) when the nodes that fit it are drained or down. It
starts once the window is over or a node is back.
"""

from __future__ import annotations

import re
from typing import Any

Node = dict[str, Any]
Reservation = dict[str, Any]

OUT_OF_SERVICE = ("DRAIN", "DOWN", "FAIL")
"""Words of a node's state that keep new jobs off it."""

MAINTENANCE = "ReqNodeNotAvail, Reserved for maintenance"
UNAVAILABLE = "ReqNodeNotAvail, UnavailableNodes:"


def out_of_service(node: Node) -> bool:
    """An admin (or slurmctld: ``DOWN*``, not responding) took the node out of service."""
    return any(word in str(node["state"]) for word in OUT_OF_SERVICE)


def reservations(state: dict[str, Any], at: float) -> list[Reservation]:
    """The reservations not over at ``at``, soonest first."""
    live = [r for r in state.get("reservations", []) if float(r["end"]) > at]
    return sorted(live, key=lambda r: float(r["start"]))


def blocking(
    state: dict[str, Any], node: str, job: dict[str, Any], at: float
) -> Reservation | None:
    """The reservation that keeps ``job`` off ``node`` if it started at ``at`` (its time limit
    overlaps the window and the job's user is not one of the reservation's), or None."""
    limit = job.get("time_limit")
    until = at + float(limit) if limit is not None else float("inf")
    for resv in reservations(state, at):
        users = resv.get("users", [])
        if node in resv["nodes"] and float(resv["start"]) < until and job["user"] not in users:
            return resv
    return None


def _fits(node: Node, job: dict[str, Any]) -> bool:
    """The node is of a partition and GPU type the job asks for, and big enough for it."""
    wanted = [p for p in str(job["partition"]).split(",") if p]
    excluded = set(str(job.get("exclude", "")).split(","))
    return (
        node["name"] not in excluded
        and (not wanted or bool(set(wanted) & set(node["partitions"])))
        and (not job["gpu_type"] or node["gpu_type"] == job["gpu_type"])
        and int(node["gpus"]) >= int(job["gpus"])
    )


def why_not(state: dict[str, Any], job: dict[str, Any], at: float) -> str:
    """Why no node takes ``job`` at ``at`` when the site is the reason ('' when it is only
    busy); a maintenance wait sets the job's expected start to the window's end."""
    fits = [n for n in state["nodes"] if _fits(n, job)]
    up = [n for n in fits if not out_of_service(n)]
    held = [blocking(state, n["name"], job, at) for n in up]
    if any(r is None for r in held):
        return ""  # a node could hold it: it waits for resources, as any job does
    windows = [r for r in held if r is not None and "MAINT" in r["flags"]]
    if windows:
        job["est_start"] = job["site_until"] = min(float(r["end"]) for r in windows)
        return MAINTENANCE
    if up or not fits:
        return ""
    wanted = set(str(job["partition"]).split(","))
    out = [
        n["name"]
        for n in state["nodes"]
        if out_of_service(n) and (wanted & set(n["partitions"]) or wanted == {""})
    ]
    job["est_start"] = job["site_until"] = None  # (when the admin is done: nobody knows)
    return UNAVAILABLE + host_list(out)


def clear_at(state: dict[str, Any], nodes: list[Node], job: dict[str, Any], at: float) -> float:
    """When reservations no longer keep ``job`` off the first of ``nodes`` in service
    (``at``: none does now)."""
    ends = []
    for node in nodes:
        if out_of_service(node):
            continue
        resv = blocking(state, node["name"], job, at)
        if resv is None:
            return at
        ends.append(float(resv["end"]))
    return min(ends, default=at)


def start_after(job: dict[str, Any], at: float) -> float:
    """The earliest start of a job the site kept waiting: when its window ended (a window
    cancelled early, or a node back: now)."""
    if "site_until" not in job:
        return 0.0
    until = job.pop("site_until")
    return min(float(until), at) if until is not None else at


def host_list(names: list[str]) -> str:
    """SLURM's compressed host list: ``gpu-c[01-02],login1`` (zero padding kept)."""
    groups: dict[tuple[str, int], list[int]] = {}
    order: list[tuple[str, int] | str] = []
    for name in names:
        match = re.fullmatch(r"(.*?)(\d+)", name)
        if match is None:
            order.append(name)
            continue
        key = (match.group(1), len(match.group(2)))
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(match.group(2)))
    out: list[str] = []
    for item in order:
        if isinstance(item, str):
            out.append(item)
            continue
        prefix, width = item
        numbers = sorted(set(groups[item]))
        if len(numbers) == 1:
            out.append(f"{prefix}{numbers[0]:0{width}d}")
            continue
        runs: list[list[int]] = []
        for number in numbers:
            if runs and number == runs[-1][-1] + 1:
                runs[-1].append(number)
            else:
                runs.append([number])
        parts = [f"{r[0]:0{width}d}" + (f"-{r[-1]:0{width}d}" if len(r) > 1 else "") for r in runs]
        out.append(f"{prefix}[{','.join(parts)}]")
    return ",".join(out)


# ----------------------------------------------------------------------------------- the admin


def reserve(
    state: dict[str, Any], name: str, start: float, end: float, nodes: str, flags: str, users: str
) -> None:
    """``scontrol create reservation``: ``nodes`` a comma list of node names or ``ALL``."""
    every = [n["name"] for n in state["nodes"]]
    held = every if nodes == "ALL" else [n for n in nodes.split(",") if n]
    unknown = set(held) - set(every)
    if unknown:
        raise ValueError(f"no such node: {', '.join(sorted(unknown))}")
    more = ["SPEC_NODES"] + (["ALL_NODES"] if nodes == "ALL" else [])
    resv = {
        "name": name,
        "start": start,
        "end": end,
        "nodes": held,
        "flags": [f for f in flags.split(",") if f] + more,
        "users": [u for u in users.split(",") if u],
    }
    kept = [r for r in state.get("reservations", []) if r["name"] != name]
    state["reservations"] = [*kept, resv]


def drain(state: dict[str, Any], node: str, reason: str, by: str, when: str, down: bool) -> None:
    """``scontrol update NodeName=node State=DRAIN|DOWN Reason=...`` (``when``: SLURM's stamp)."""
    found = _node(state, node)
    found.update(
        state="DOWN" if down else "IDLE+DRAIN", reason=reason, reason_by=by, reason_time=when
    )


def resume(state: dict[str, Any], node: str) -> None:
    """``scontrol update NodeName=node State=RESUME``: in service again, no reason."""
    found = _node(state, node)
    found["state"] = "IDLE"
    for key in ("reason", "reason_by", "reason_time"):
        found.pop(key, None)


def _node(state: dict[str, Any], name: str) -> Node:
    for node in state["nodes"]:
        if node["name"] == name:
            return node  # type: ignore[no-any-return]
    raise ValueError(f"no such node: {name}")
