"""The details pane's live parts on the fake cluster: a running job's GPUs (and the queue's flag
for a job whose GPUs sit idle), and why a pending job waits (sprio, sshare)."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from tao_slurm_tui.core.gpu_usage import GpuReading, GpuReport, GpuSample
from tao_slurm_tui.core.shown import UNSAFE
from tao_slurm_tui.core.why_wait import FairShare, Priority, WaitReport
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.fakecluster.world import World
from tao_slurm_tui.widgets.gpu_pane import GpuPane, render_gpus
from tao_slurm_tui.widgets.job_table import JobTable
from tao_slurm_tui.widgets.wait_pane import WaitPane, render_wait
from tests.hostile import BIDI, C1, FORGE_LINE, OSC0, OSC52
from tests.tui.conftest import SIZE, build_app, polls
from tests.tui.test_snapshots import size
from tests.tui.waits import settle, shown, wait_for

__all__ = ["size"]  # the snapshot sizes fixture, shared


def _sruns(world: World) -> list[str]:
    """The GPU samples the services sent (one ``srun --overlap`` step per job in each)."""
    return [c for c in world.commands if "srun --overlap" in c]


def _sweeps(world: World) -> list[str]:
    """The samples of every running job (the queue's idle check: both running jobs)."""
    return [c for c in _sruns(world) if c.count("srun --overlap") > 1]


def _samples(world: World, slurm_id: str) -> list[str]:
    """The samples of one job alone (the GPU pane's)."""
    return [c for c in _sruns(world) if c.count("srun --overlap") == 1 and slurm_id in c]


async def _queue_on(pilot: Any, job_id: str) -> QueueScreen:
    screen: QueueScreen = await shown(pilot, QueueScreen)
    await wait_for(pilot, lambda: screen.polled_ok, "the first poll")
    screen.select_job(job_id)
    await wait_for(pilot, lambda: screen.selected == job_id, f"the cursor on {job_id}")
    return screen


async def _answered(pilot: Any, job_id: str, pane_id: str) -> tuple[QueueScreen, Any]:
    """The queue on ``job_id`` once its pane (``#gpus``, ``#wait``) has its first answer."""
    screen = await _queue_on(pilot, job_id)
    pane: Any = screen.query_one(f"#{pane_id}")
    await wait_for(pilot, lambda: pane.report is not None, f"the {pane_id} pane's answer")
    return screen, pane


def _text(pane: Any) -> str:
    content = pane.content
    return content.plain if isinstance(content, Text) else str(content)


async def test_the_gpu_pane_shows_what_nvidia_smi_says_of_the_jobs_gpus(
    fake: ClusterBackend, world: World
) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen, pane = await _answered(pilot, "dino-train-1", "gpus")
        text = _text(pane)
        assert "4x NVIDIA A100-SXM4-80GB" in text
        assert text.count("87 %") == 4 and "60.0/80.0 GiB" in text
        assert "gpu-a01:3" in text
        # One bounded command: one step into the job, nvidia-smi on its node.
        (command,) = _samples(world, "1051")
        assert "--jobid=1051 --nodes=1 --ntasks=1" in command
        assert "timeout -k 5 20 srun" in command
        assert not screen.query_one("#wait", WaitPane).display


async def test_the_gpu_pane_asks_only_while_the_details_are_shown(
    fake: ClusterBackend, world: World
) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        _, pane = await _answered(pilot, "dino-train-1", "gpus")
        await settle(pilot)
        await pilot.press("i")  # the details hidden: a due refresh asks nothing
        pane.refresh_now()
        await settle(pilot)
        assert len(_samples(world, "1051")) == 1
        await pilot.press("i")
        pane.refresh_now()
        await wait_for(
            pilot, lambda: len(_samples(world, "1051")) == 2, "a sample once shown again"
        )


async def test_a_job_whose_gpus_sit_idle_is_flagged_in_the_queue(
    fake: ClusterBackend, world: World
) -> None:
    fake.config.settings.gpu_idle_minutes = 1  # the back end reads the config's settings
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen: QueueScreen = await shown(pilot, QueueScreen)
        await wait_for(pilot, lambda: screen.polled_ok, "the first poll")
        # The poll's sweep samples every running job: bert-retried idle, dino busy.
        await wait_for(pilot, lambda: len(_sweeps(world)) == 1, "the first sweep")
        await settle(pilot)
        sweep = _sweeps(world)[0]
        assert "--jobid=1049" in sweep and "--jobid=1051" in sweep
        table = screen.query_one("#jobs", JobTable)
        assert str(table.get_cell("bert-retried", "reason")) == ""
        world.advance(90)
        await screen.poll().wait()
        await wait_for(pilot, lambda: len(_sweeps(world)) == 2, "the next sweep")
        await wait_for(
            pilot,
            lambda: str(table.get_cell("bert-retried", "reason")) == "GPUs idle 1 min",
            "the idle flag",
        )
        assert str(table.get_cell("dino-train-1", "reason")) == ""
        # Between sweeps a poll asks no GPU again.
        await screen.poll().wait()
        await settle(pilot)
        assert len(_sweeps(world)) == 2
        # Busy again: the next sample takes the flag down.
        world.gpu_load("bert-retried", "all 95 70000")
        screen.select_job("bert-retried")
        pane = screen.query_one("#gpus", GpuPane)
        await wait_for(
            pilot,
            lambda: pane.report is not None and pane.report.job_id == "bert-retried",
            "bert-retried's figures",
        )
        await wait_for(
            pilot, lambda: str(table.get_cell("bert-retried", "reason")) == "", "the flag gone"
        )


async def test_the_wait_pane_says_why_a_pending_job_waits(
    fake: ClusterBackend, world: World
) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        screen, pane = await _answered(pilot, "seg-large", "wait")
        text = _text(pane)
        assert "What you can do: Jobs of higher priority are ahead." in text
        assert "in polar: 3 of 3 pending jobs ranked" in text
        assert "fair share 3800/10000" in text and "QOS 1000/1000" in text
        assert "Your fair share in tao: 0.380" in text and "41%" in text
        # One round trip, asked when shown: sprio is never part of a poll.
        polled = polls(world)
        assert len([c for c in world.commands if "@@tao-why:" in c]) == 1
        await screen.poll().wait()
        await settle(pilot)
        assert polls(world) == polled + 1
        assert len([c for c in world.commands if "@@tao-why:" in c]) == 1
        assert not screen.query_one("#gpus", GpuPane).display


async def test_a_job_waiting_for_another_is_not_ranked_and_says_so(
    fake: ClusterBackend, world: World
) -> None:
    app = build_app(fake)
    async with app.run_test(size=SIZE) as pilot:
        _, pane = await _answered(pilot, "dep-waiter", "wait")
        text = _text(pane)
        assert "starts when the job it depends on" in text
        assert "SLURM does not rank it yet" in text
        assert "Priority" not in text


def test_snapshot_why_a_pending_job_waits(
    snap_compare: Any, fake: ClusterBackend, size: tuple[int, int]
) -> None:
    async def run_before(pilot: Any) -> None:
        await _answered(pilot, "seg-large", "wait")
        await settle(pilot)

    assert snap_compare(build_app(fake), terminal_size=size, run_before=run_before)


def test_the_panes_show_the_clusters_words_as_data() -> None:
    """Model, node, partition and account names, and SLURM's complaints, come from the cluster:
    their control characters are spelled out, never sent to the terminal."""
    gpu = GpuReading(f"n1{OSC0}", 0, f"NVIDIA {OSC52}{BIDI}", 50, 1024, 81920)
    sample = GpuSample("7", 0.0, (gpu,), problem=f"srun: {FORGE_LINE}refused")
    gpus = render_gpus(GpuReport("a", sample), 15).plain
    wait = render_wait(
        WaitReport(
            "a", "7", "Priority",
            priorities=(Priority("7", f"polar{OSC0}", 10, {"age": 1}),),
            ranks={f"polar{OSC0}": (1, 2)},
            problem=f"odd {C1}",
            fairshare=FairShare(f"tao{OSC52}", 0.5, 0.1, 0.2),
        )
    ).plain  # fmt: skip
    for text in (gpus, wait):
        assert UNSAFE.search(text.replace("\n", "")) is None, text
    assert "n1\\x1b]0;pwned-title\\x07:0" in gpus and "NVIDIA \\x1b]52;c;" in gpus
    assert "srun: \\x1b[1A\\x1b[2Krefused" in gpus
    assert "in polar\\x1b]0;pwned-title\\x07: 1 of 2" in wait and "odd \\x9b1A" in wait
    assert "fair share in tao\\x1b]52;c;" in wait
