"""The capacity cache the GPUs screen and the composer share (no cluster: a counted fetch)."""

from __future__ import annotations

import asyncio

import pytest

from tao_slurm_tui.core.capacity import parse_capacity_output
from tao_slurm_tui.core.capacity_report import CapacityReport, build_report
from tao_slurm_tui.errors import OperationFailed
from tao_slurm_tui.services.capacity_cache import CapacityCache
from tests.capacity_data import GOLDEN


def recorded() -> CapacityReport:
    """A new report from a capacity answer recorded on the sandbox."""
    text = (GOLDEN / "sandbox-busy.txt").read_text(encoding="utf-8")
    return build_report(parse_capacity_output(text))


class Fetch:
    """A fetch that waits for ``gate`` and counts its calls; ``error`` makes it fail."""

    def __init__(self) -> None:
        self.calls = 0
        self.gate = asyncio.Event()
        self.gate.set()
        self.error = ""

    async def __call__(self) -> CapacityReport:
        self.calls += 1
        await self.gate.wait()
        if self.error:
            raise OperationFailed(self.error)
        return recorded()


async def test_fresh_report_is_reused_and_a_stale_one_fetched_again() -> None:
    now = [100.0]
    fetch = Fetch()
    cache = CapacityCache(fetch, max_age=60, clock=lambda: now[0])
    assert cache.fresh() is None
    first = await cache.get()
    assert await cache.get() is first and fetch.calls == 1
    now[0] += 59.9
    assert await cache.get() is first and fetch.calls == 1
    now[0] += 0.2
    assert await cache.get() is not first and fetch.calls == 2
    await cache.refresh()  # the GPUs screen always asks
    assert fetch.calls == 3 and cache.fetches == 3


async def test_callers_share_the_fetch_on_its_way() -> None:
    fetch = Fetch()
    fetch.gate.clear()
    cache = CapacityCache(fetch)
    waiting = [asyncio.ensure_future(cache.get()) for _ in range(3)]
    waiting.append(asyncio.ensure_future(cache.refresh()))
    await asyncio.sleep(0)
    fetch.gate.set()
    reports = await asyncio.gather(*waiting)
    assert fetch.calls == 1 and all(r is reports[0] for r in reports)


async def test_a_caller_giving_up_does_not_cancel_the_others() -> None:
    fetch = Fetch()
    fetch.gate.clear()
    cache = CapacityCache(fetch)
    quitter = asyncio.ensure_future(cache.refresh())
    stayer = asyncio.ensure_future(cache.get())
    await asyncio.sleep(0)
    quitter.cancel()
    fetch.gate.set()
    assert isinstance(await stayer, CapacityReport) and fetch.calls == 1


async def test_failure_reaches_every_waiter_and_the_hint_gets_none() -> None:
    fetch = Fetch()
    fetch.error = "Could not connect to any login host."
    cache = CapacityCache(fetch)
    with pytest.raises(OperationFailed, match="Could not connect"):
        await cache.refresh()
    assert await cache.get_or_none() is None
    assert cache.report is None and fetch.calls == 2  # a failure is not cached
    fetch.error = ""
    assert await cache.get_or_none() is not None
