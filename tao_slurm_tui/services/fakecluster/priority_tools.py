"""The fake ``sprio`` and ``sshare``: a multifactor priority as SLURM 22.05 shows it.

``sprio`` ranks the pending jobs free to start (a held job or one waiting for a dependency is
not listed, as on a real controller), one row per partition, each factor weighted by the site's
weights (``state["priority_weights"]``): age grows to its weight over ``max_age`` seconds since
the job was submitted, fair share is the user's factor times its weight, job size the share of
the cluster's nodes it asks for (its complement under ``favor_small``), partition and QOS their
full weight. ``sshare -U -u USER`` prints the user's associations from ``state["shares"]``.
"""

from __future__ import annotations

import sys

from tao_slurm_tui.services.fakecluster import engine
from tao_slurm_tui.services.fakecluster.engine import Job, State
from tao_slurm_tui.services.fakecluster.queue_tools import flags

WEIGHTS = {"age": 1000, "fairshare": 10000, "jobsize": 1000, "partition": 1000, "qos": 1000}
"""The weights when the state names none (those of the sandbox's slurm.conf)."""

MAX_AGE = 7 * 86400.0
"""PriorityMaxAge (SLURM's default, 7 days) when the state names none."""

UNRANKED = ("Dependency", "DependencyNeverSatisfied", "JobHeldUser", "JobHeldAdmin")

_CODES = {"A": "age", "F": "fairshare", "J": "jobsize", "P": "partition", "Q": "qos"}


def _factors(state: State, job: Job, at: float) -> dict[str, int]:
    weights = state.get("priority_weights", WEIGHTS)
    since = job["submit"]  # eligible at submission (a job waiting for another is not ranked)
    age = min(1.0, max(0.0, at - float(since)) / float(state.get("max_age", MAX_AGE)))
    fairshare = float(state.get("fairshare", {}).get(job["user"], 0.5))
    size = int(job["nodes_req"]) / max(1, len(state["nodes"]))
    if state.get("favor_small"):  # PriorityFavorSmall=YES: the smaller job the higher
        size = 1.0 - size
    return {
        "age": round(weights["age"] * age),
        "fairshare": round(weights["fairshare"] * fairshare),
        "jobsize": round(weights["jobsize"] * size),
        "partition": weights["partition"],
        "qos": weights["qos"],
    }


def _row(fmt: str, values: dict[str, str]) -> str:
    out, i = [], 0
    while i < len(fmt):
        if fmt[i] == "%" and i + 1 < len(fmt):
            out.append(values.get(fmt[i + 1], ""))
            i += 2
        else:
            out.append(fmt[i])
            i += 1
    return "".join(out)


def sprio(state: State, argv: list[str]) -> int:
    """``sprio [-h] [-w] [-j IDS] [-p PARTS] [-u USERS] -o FORMAT``."""
    header, weights_only, fmt = True, False, "%.15i %9r %.8u %.10Y %.10A %.10F %.10J %.10P %.10Q"
    ids: set[str] = set()
    parts: set[str] = set()
    users: set[str] = set()
    for flag, value in flags(argv, {"-j", "-p", "-u", "-o", "--jobs", "--format"}):
        if flag in ("-h", "--noheader"):
            header = False
        elif flag in ("-w", "--weights"):
            weights_only = True
        elif flag in ("-j", "--jobs"):
            ids = set(value.split(","))
        elif flag == "-p":
            parts = set(value.split(","))
        elif flag == "-u":
            users = set(value.split(","))
        elif flag in ("-o", "--format"):
            fmt = value
    fmt = fmt.replace(".", "")
    for width in "0123456789":
        fmt = fmt.replace(f"%{width}", "%")
    if header:
        print(_row(fmt, {"i": "JOBID", "r": "PARTITION", "Y": "PRIORITY", "u": "USER"}))
    if weights_only:
        weights = state.get("priority_weights", WEIGHTS)
        print(_row(fmt, {"i": "Weights", **{c: str(weights[k]) for c, k in _CODES.items()}}))
        return 0
    at = engine.now(state)
    rows = []
    for job in sorted(state["jobs"].values(), key=lambda j: int(j["id"])):
        if job["state"] != "PENDING" or job["held"] or job["reason"] in UNRANKED:
            continue
        if (ids and job["id"] not in ids) or (users and job["user"] not in users):
            continue
        factors = _factors(state, job, at)
        for partition in str(job["partition"]).split(","):
            if parts and partition not in parts:
                continue
            values = {c: str(factors[k]) for c, k in _CODES.items()}
            values.update(i=job["id"], r=partition, u=job["user"], N="0")
            values["Y"] = str(1 + sum(factors.values()))
            rows.append(_row(fmt, values))
    if not rows and ids:
        print("Unable to find jobs matching user/id(s) specified")
    for row in rows:
        print(row)
    return 0


SSHARE_KEYS = {
    "account": "account",
    "user": "user",
    "rawshares": "raw_shares",
    "normshares": "norm_shares",
    "rawusage": "raw_usage",
    "effectvusage": "effective_usage",
    "fairshare": "fairshare",
}


def sshare(state: State, argv: list[str]) -> int:
    """``sshare -h -P -U -u USER -o FIELDS``: the user's associations, one row each."""
    users: set[str] = set()
    fields = ["account", "user", "rawshares", "normshares", "rawusage", "fairshare"]
    for flag, value in flags(argv, {"-u", "-o", "--users", "--format"}):
        if flag in ("-u", "--users"):
            users = set(value.split(","))
        elif flag in ("-o", "--format"):
            fields = [f.lower() for f in value.split(",")]
    unknown = [f for f in fields if f not in SSHARE_KEYS]
    if unknown:
        print(f"sshare: error: Invalid field requested: {unknown[0]}", file=sys.stderr)
        return 1
    for share in state.get("shares", []):
        if users and share["user"] not in users:
            continue
        print("|".join(str(share.get(SSHARE_KEYS[f], "")) for f in fields))
    return 0
