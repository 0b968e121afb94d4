"""Pilot test: a one-off notice of the back end (a login host that went away, the state DB on a
network file system) is shown once as a toast after the poll that brought it (issue 24)."""

from __future__ import annotations

from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tests.tui.conftest import build_app
from tests.tui.waits import settle, shown, wait_for

FAILOVER = (
    "The login host login2 went away; switched to login1 (your jobs and their monitoring carry on)."
)


async def test_a_failover_notice_is_one_toast_after_the_poll(fake: ClusterBackend) -> None:
    notices = [[FAILOVER]]
    fake.take_notices = lambda: notices.pop() if notices else []  # type: ignore[method-assign]
    app = build_app(fake)
    async with app.run_test(size=(100, 30)) as pilot:
        screen: QueueScreen = await shown(pilot, QueueScreen)
        await wait_for(pilot, lambda: screen.polled_ok, "the first poll")
        await wait_for(
            pilot,
            lambda: any(n.message == FAILOVER for n in app._notifications),
            "the failover toast",
        )
        await screen.poll(manual=True).wait()  # the next poll tells nothing new
        await settle(pilot)
        toasts = [n for n in app._notifications if n.message == FAILOVER]
        assert len(toasts) == 1 and toasts[0].severity == "information"
        assert toasts[0].title == "Cluster"
