"""The fake ``scontrol show reservation`` and ``sinfo -R``: the site's reservations and its
nodes out of service, as SLURM 22.05 prints them (recorded on the sandbox; see :mod:`.site`
for the state behind them)."""

from __future__ import annotations

import re
from collections.abc import Callable

from tao_slurm_tui.services.fakecluster import engine, site
from tao_slurm_tui.services.fakecluster.engine import State
from tao_slurm_tui.services.fakecluster.queue_tools import flags

SINFO_VALUED = {"-o", "-p", "--format", "--partition"}
"""sinfo's options that take a value (as :func:`.admin_tools.sinfo` reads them)."""

_HEADERS = {
    "E": "REASON", "u": "USER", "H": "TIMESTAMP", "N": "NODELIST", "n": "HOSTNAMES",
    "T": "STATE", "t": "STATE", "P": "PARTITION",
}  # fmt: skip
_COMPACT = {"drained": "drain", "draining": "drng"}


# ----------------------------------------------------------------------------------- scontrol


def _reservation_lines(state: State, resv: site.Reservation, at: float) -> list[str]:
    """The reservation's fields, one group per line of the multi-line form."""
    nodes = [n for n in state["nodes"] if n["name"] in resv["nodes"]]
    cores = sum(int(n["cpus"]) for n in nodes)
    start, end = float(resv["start"]), float(resv["end"])
    return [
        f"ReservationName={resv['name']} StartTime={engine.stamp(start)} "
        f"EndTime={engine.stamp(end)} Duration={engine.duration(end - start)}",
        f"Nodes={site.host_list([n['name'] for n in nodes])} NodeCnt={len(nodes)} "
        f"CoreCnt={cores} Features=(null) PartitionName=(null) Flags={','.join(resv['flags'])}",
        f"TRES=cpu={cores}",
        f"Users={','.join(resv['users']) or '(null)'} Groups=(null) Accounts=(null) "
        f"Licenses=(null) State={'ACTIVE' if start <= at else 'INACTIVE'} BurstBuffer=(null) "
        "Watts=n/a",
        "MaxStartDelay=(null)",
    ]


def show_reservation(state: State, argv: list[str]) -> int:
    """``scontrol [-o] show reservation [NAME]``."""
    at = engine.now(state)
    words = [a for a in argv if not a.startswith("-")][2:]
    rows = site.reservations(state, at)
    if words:
        rows = [r for r in rows if r["name"] == words[0]]
        if not rows:
            print(f"Reservation {words[0]} not found")
            return 1
    if not rows:
        print("No reservations in the system")
        return 0
    one_line = "-o" in argv or "--oneliner" in argv
    for resv in rows:
        lines = _reservation_lines(state, resv, at)
        print(" ".join(lines) if one_line else "\n   ".join(lines) + "\n")
    return 0


# ----------------------------------------------------------------------------------- sinfo


def lists_reasons(argv: list[str]) -> bool:
    """``sinfo -R`` / ``--list-reasons``."""
    return any(flag in ("-R", "--list-reasons") for flag, _ in flags(argv, SINFO_VALUED))


def _state_word(state: State, node: site.Node) -> str:
    """sinfo's ``%T``: ``drained`` (``draining`` while jobs still run on it), ``down*``..."""
    words = str(node["state"]).upper()
    star = "*" if words.endswith("*") else ""
    if "DRAIN" in words and "DOWN" not in words:
        return "draining" if engine.gpus_free(state, node) < int(node["gpus"]) else "drained"
    for word in ("DOWN", "FAIL"):
        if word in words:
            return word.lower() + star
    return words.split("+")[0].lower() + star


def sinfo_reasons(state: State, argv: list[str]) -> int:
    """``sinfo -R [-h] [-N] [-p P] [-o FORMAT]``: the nodes out of service and why (one line
    per node and partition with ``-N``; nodes alike in one host list without)."""
    fmt, only, header, per_node = "%20E %9u %19H %N", "", True, False
    for flag, value in flags(argv, SINFO_VALUED):
        if flag in ("-o", "--format"):
            fmt = value
        elif flag in ("-p", "--partition"):
            only = value
        elif flag in ("-h", "--noheader"):
            header = False
        elif flag in ("-N", "--Node"):
            per_node = True
    rows: dict[tuple[str, ...], list[str]] = {}
    for node in state["nodes"]:
        if not site.out_of_service(node):
            continue
        parts = [p for p in node["partitions"] if not only or p == only]
        for part in parts if per_node else parts[:1]:
            values = {
                "E": str(node.get("reason", "")) or "none",
                "u": str(node.get("reason_by", "")) or "root",
                "H": str(node.get("reason_time", "")) or "Unknown",
                "T": _state_word(state, node),
                "P": part,
            }
            values["t"] = _COMPACT.get(values["T"], values["T"])
            key: tuple[str, ...] = (node["name"],) if per_node else ()
            key += tuple(values[c] for c in "EuHTtP")
            rows.setdefault(key, []).append(node["name"])
    if header:
        print(_render(fmt, _HEADERS.get))
    for key, names in rows.items():
        values = dict(zip("EuHTtP", key[-6:], strict=True))
        values["N"] = values["n"] = site.host_list(names)
        print(_render(fmt, values.get))
    return 0


def _render(fmt: str, value: Callable[[str, str], str]) -> str:
    """``fmt`` with each ``%[.]W<code>`` replaced (cut to W; ``.``: right-justified)."""

    def one(match: re.Match[str]) -> str:
        text = value(match.group(3), "")
        if not match.group(2):
            return text
        width = int(match.group(2))
        text = text[:width]
        return text.rjust(width) if match.group(1) else text.ljust(width)

    return re.sub(r"%(\.?)(\d*)([A-Za-z])", one, fmt)
