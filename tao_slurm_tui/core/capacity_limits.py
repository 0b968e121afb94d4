"""The limits a site sets (QOS, accounts, associations), against what is in use now (pure).

A researcher whose job pends with ``QOSMaxGRESPerUser`` wants to see the limit and their use
side by side. The limits come from ``sacctmgr`` (QOS and the user's associations, see
:mod:`tao_slurm_tui.core.capacity_command`); the use is counted from the running jobs of the
same refresh. Memory use is not in squeue's fixed format: its limits are shown without a use.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tao_slurm_tui.core.capacity import Association, CapacityRaw, Job


@dataclass(frozen=True)
class LimitUse:
    """One limit the site set, against what is in use now."""

    scope: str
    """Where it is set: ``QOS normal``, ``account tao``, ``association tao/alice``."""
    kind: str
    """``GrpTRES`` (the group's total), ``MaxTRESPerUser``, ``MaxTRES`` (per job),
    ``GrpJobs``, ``MaxJobsPerUser``, ``MaxJobs``."""
    resource: str
    """``gres/gpu``, ``cpu``, ``node``, ``mem`` or ``jobs``."""
    limit: int
    used: int | None
    """Current use the limit counts (None for per-job limits, which nothing accumulates)."""

    @property
    def reached(self) -> bool:
        """Use is at (or over) the limit: new jobs under it will pend."""
        return self.used is not None and self.used >= self.limit


def _sum_tres(jobs: Iterable[Job], resource: str) -> int:
    """What ``jobs`` use of one TRES (``gres/gpu``, ``cpu``, ``node``; 0 for any other)."""
    if resource == "gres/gpu":
        return sum(j.gpus for j in jobs)
    if resource == "cpu":
        return sum(j.cpus * j.tasks for j in jobs)
    if resource == "node":
        return sum(j.nodes * j.tasks for j in jobs)
    return 0


_SHOWN_TRES = ("gres/gpu", "cpu", "node", "mem")


def _tres_limits(
    scope: str, kind: str, tres: dict[str, int], jobs: list[Job] | None
) -> list[LimitUse]:
    out = []
    for resource in _SHOWN_TRES:
        if resource not in tres:
            continue
        # Memory use is not in squeue's fixed format: show the limit, not a guess at use.
        used = None if jobs is None or resource == "mem" else _sum_tres(jobs, resource)
        out.append(LimitUse(scope, kind, resource, tres[resource], used))
    return out


def limits_in_use(raw: CapacityRaw) -> list[LimitUse]:
    """Every QOS and association limit that applies to the user, against current use."""
    running = [j for j in raw.jobs if j.running]
    mine = [j for j in running if j.user == raw.user]
    limits: list[LimitUse] = []
    my_assocs = [a for a in raw.associations if a.user == raw.user]
    my_accounts = {a.account for a in my_assocs}
    # The QOS the user may run under (empty: every QOS the site lists may matter).
    allowed_qos = {q for a in my_assocs for q in a.qos}
    for qos in raw.qos:
        if allowed_qos and qos.name not in allowed_qos:
            continue
        scope = f"QOS {qos.name}"
        in_qos = [j for j in running if j.qos == qos.name]
        my_in_qos = [j for j in mine if j.qos == qos.name]
        limits += _tres_limits(scope, "GrpTRES", qos.grp_tres, in_qos)
        limits += _tres_limits(scope, "MaxTRESPerUser", qos.max_tres_per_user, my_in_qos)
        limits += _tres_limits(scope, "MaxTRES", qos.max_tres_per_job, None)
        if qos.grp_jobs is not None:
            limits.append(LimitUse(scope, "GrpJobs", "jobs", qos.grp_jobs, len(in_qos)))
        if qos.max_jobs_per_user is not None:
            limits.append(
                LimitUse(scope, "MaxJobsPerUser", "jobs", qos.max_jobs_per_user, len(my_in_qos))
            )
    for assoc in raw.associations:
        if assoc.account not in my_accounts or assoc.user not in ("", raw.user):
            continue
        limits += _assoc_limits(assoc, running, raw.user)
    return [lim for lim in limits if lim.limit >= 0]


def _assoc_limits(assoc: Association, running: list[Job], user: str) -> list[LimitUse]:
    where = f"/{assoc.partition}" if assoc.partition else ""
    scope = (
        f"association {assoc.account}/{assoc.user}{where}"
        if assoc.user
        else f"account {assoc.account}{where}"
    )
    counted = [
        j
        for j in running
        if j.account == assoc.account
        and (not assoc.user or j.user == user)
        and (not assoc.partition or assoc.partition in j.partitions)
    ]
    out = _tres_limits(scope, "GrpTRES", assoc.grp_tres, counted)
    out += _tres_limits(scope, "MaxTRES", assoc.max_tres_per_job, None)
    if assoc.grp_jobs is not None:
        out.append(LimitUse(scope, "GrpJobs", "jobs", assoc.grp_jobs, len(counted)))
    if assoc.max_jobs is not None and assoc.user:
        out.append(LimitUse(scope, "MaxJobs", "jobs", assoc.max_jobs, len(counted)))
    return out
