"""A pending reason the site's maintenance and drained nodes explain, in words (issue 24)."""

from __future__ import annotations

import time

import pytest

from tao_slurm_tui.core.site_state import (
    WAIT_PREFIX,
    explain_wait,
    is_site_wait,
    maintenance_now,
    maintenance_sentence,
    parse_site,
)

# Recorded on the sandbox (SLURM 22.05): `scontrol show reservation -o`, then `sinfo -R -h -N`
# (one line per node and partition).
SITE = """\
ReservationName=tao-maint StartTime=2026-12-01T18:11:40 EndTime=2026-12-01T18:21:40 \
Duration=00:10:00 Nodes=tao-n[1-3] NodeCnt=3 CoreCnt=24 Features=(null) PartitionName=(null) \
Flags=MAINT,IGNORE_JOBS,SPEC_NODES,ALL_NODES TRES=cpu=24 Users=root Groups=(null) \
Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)
ReservationName=course StartTime=2026-12-01T09:00:00 EndTime=2026-12-01T12:00:00 \
Duration=03:00:00 Nodes=tao-n1 NodeCnt=1 CoreCnt=8 Features=(null) PartitionName=(null) \
Flags=SPEC_NODES TRES=cpu=8 Users=alice Groups=(null) Accounts=(null) Licenses=(null) \
State=INACTIVE BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)
@@site:sinfo
tao-n3|drained|disk replacement|root|2026-12-01T17:11:44
tao-n3|drained|disk replacement|root|2026-12-01T17:11:44
tao-n2|down*|Not responding|slurm|2026-12-01T16:02:10
"""


def at(text: str) -> float:
    return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))


def test_the_reservation_s_window_is_in_the_sentence() -> None:
    site = parse_site(SITE)
    assert [r.name for r in site.reservations] == ["course", "tao-maint"]
    reason = "ReqNodeNotAvail, Reserved for maintenance"
    assert is_site_wait(reason)
    text = explain_wait(reason, site, at("2026-12-01T17:15:00"))
    assert text == (
        f"{WAIT_PREFIX}the maintenance: reservation 'tao-maint' holds tao-n[1-3] from 18:11 to "
        "18:21; the job starts after it, or before if it can finish in time (a shorter time "
        "limit helps)."
    )
    # Another day: the date is named too.
    assert "Tue 01 Dec 18:11" in explain_wait(reason, site, at("2026-11-30T10:00:00"))
    # Once the window is over it is not offered as the explanation any more.
    assert explain_wait(reason, site, at("2026-12-01T19:00:00")) == ""


def test_drained_nodes_are_named_with_the_admin_s_reason_once() -> None:
    site = parse_site(SITE)
    assert [n.node for n in site.nodes_out] == ["tao-n3", "tao-n2"]
    text = explain_wait("ReqNodeNotAvail, UnavailableNodes:tao-n3", site, at("2026-12-01T17:20:00"))
    assert text == (
        f"{WAIT_PREFIX}nodes an admin took out of service: tao-n3 is drained: disk replacement "
        "(set by root at 17:11); the job starts when they return or other nodes fit it."
    )
    both = explain_wait("ReqNodeNotAvail, UnavailableNodes:tao-n[2-3]", site)
    assert "tao-n3 is drained" in both and "tao-n2 is down*: Not responding" in both
    assert explain_wait("Resources", site) == "" and not is_site_wait("Priority")


def test_an_unreachable_cluster_during_its_window_is_the_announced_maintenance() -> None:
    site = parse_site(SITE)
    assert maintenance_now(site, at("2026-12-01T18:15:00")).name == "tao-maint"  # type: ignore[union-attr]
    assert maintenance_now(site, at("2026-12-01T10:00:00")) is None  # not a MAINT reservation
    assert maintenance_now(None) is None
    window = maintenance_now(site, at("2026-12-01T18:15:00"))
    assert window is not None
    assert maintenance_sentence(window, now=at("2026-12-01T18:15:00")) == (
        "The cluster is in its announced maintenance (reservation 'tao-maint' until 18:21); "
        "your jobs stay as they were and monitoring resumes by itself when it is back."
    )
    told = maintenance_sentence(window, "login1: connection refused", at("2026-12-01T18:15:00"))
    assert "until 18:21): no login host answers (login1: connection refused); your jobs" in told


def test_nothing_from_the_site_is_nothing_to_say() -> None:
    empty = parse_site("")
    assert empty.reservations == () and empty.nodes_out == ()
    assert explain_wait("ReqNodeNotAvail, Reserved for maintenance", empty) == ""


def test_times_in_the_cluster_s_zone_are_shown_in_the_workstation_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A cluster in Tokyo (+0900), a researcher in London in winter (UTC): the window SLURM
    # prints as 18:11 there is 09:11 here, and the countdown is measured against it.
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        site = parse_site("@@site:tz +0900\n" + SITE)
        (maint,) = [r for r in site.reservations if r.maintenance]
        assert maint.start == at("2026-12-01T09:11:40")
        reason = "ReqNodeNotAvail, Reserved for maintenance"
        assert "from 09:11 to 09:21;" in explain_wait(reason, site, at("2026-12-01T08:00:00"))
        assert maintenance_now(site, at("2026-12-01T09:15:00")) == maint
        assert maintenance_now(site, at("2026-12-01T18:15:00")) is None
        drained = explain_wait(
            "ReqNodeNotAvail, UnavailableNodes:tao-n3", site, at("2026-12-01T09:00:00")
        )
        assert "(set by root at 08:11)" in drained
        # No offset answered (an older recorded output): the workstation's zone, as before.
        assert parse_site(SITE).reservations[1].start == at("2026-12-01T18:11:40")
    finally:
        monkeypatch.undo()
        time.tzset()
