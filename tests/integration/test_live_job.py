"""A job's live details on the sandbox: its GPUs as the nodes' nvidia-smi stand-in reports them
(and the queue's flag for a job whose GPUs sit idle), why a job waits behind another (sprio and
sshare of the real priority/multifactor), and a shell inside a running Pyxis job's container,
typed into the real CLI and TUI in a terminal (tmux)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text

from tao_slurm_tui.app import make_app
from tao_slurm_tui.config import Config, Settings, state_db_path
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.screens.queue import QueueScreen
from tao_slurm_tui.services.cluster import ClusterBackend
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.widgets.gpu_pane import GpuPane
from tao_slurm_tui.widgets.job_table import JobTable
from tao_slurm_tui.widgets.wait_pane import WaitPane
from tests import sandbox
from tests.integration.monitor_helpers import PROFILE, Harness, unique
from tests.integration.test_pyxis import PULL, good_key, image_job, ph, pyxis_profile
from tests.terminal.tmux import Terminal
from tests.tools import require
from tests.tui.waits import shown, wait_for

pytestmark = pytest.mark.slow

__all__ = ["good_key", "ph", "pyxis_profile"]  # the Pyxis fixtures, shared

RUN = 240.0
"""Bound for a job to start: it may pend while parallel tests hold the nodes."""


def _backend(profile: Profile, tmp_path: Path, **settings: Any) -> ClusterBackend:
    """The real back end on the sandbox, reading the harness's state DB."""
    config = Config(
        tmp_path / "config.toml",
        Settings(default_profile=PROFILE, profiles={PROFILE: profile}, **settings),
    )
    return ClusterBackend(config, PROFILE, store=JobStore(state_db_path()))


@pytest.fixture
async def hs(sandbox_profile: Profile) -> AsyncIterator[Harness]:
    """A harness on the state DB the back end reads (bare srun, no container)."""
    from tests.integration.conftest import harness

    async with harness(sandbox_profile, JobStore(state_db_path())) as h:
        yield h


def _text(pane: Any) -> str:
    content = pane.content
    return content.plain if isinstance(content, Text) else str(content)


@contextlib.contextmanager
def _loads(*jobs: tuple[str, str]) -> Iterator[None]:
    """Set nvidia-smi's load of each (SLURM id, line) job while inside."""
    try:
        for slurm_id, line in jobs:
            sandbox.gpu_load(slurm_id, line)
        yield
    finally:
        for slurm_id, _ in jobs:
            sandbox.gpu_load(slurm_id)


async def test_the_gpu_pane_shows_the_stand_ins_figures_and_the_queue_flags_an_idle_job(
    hs: Harness, sandbox_profile: Profile, tmp_path: Path
) -> None:
    busy, idle = unique("gpu-busy"), unique("gpu-idle")
    for name in (busy, idle):
        await hs.submit(name, "sleep 600", num_gpus=2)
    for name in (busy, idle):
        await hs.tick_until(name, lambda j: j.status is TaoStatus.RUNNING, timeout=RUN, interval=2)
    busy_job = hs.store.require(PROFILE, busy)
    backend = _backend(sandbox_profile, tmp_path, gpu_idle_minutes=0.05, gpu_refresh=5)
    app = make_app(backend, settings=backend.config.settings)
    with _loads((busy_job.slurm_job_id, "0 91 40000")):
        async with app.run_test(size=(160, 45)) as pilot:
            screen: QueueScreen = await shown(pilot, QueueScreen)
            await wait_for(pilot, lambda: screen.polled_ok, "the first poll", 60)
            pane = screen.query_one("#gpus", GpuPane)
            screen.select_job(busy)
            await wait_for(
                pilot,
                lambda: pane.report is not None and pane.report.job_id == busy,
                "the busy job's figures",
                60,
            )
            assert pane.report is not None
            gpus = pane.report.sample.gpus
            node = busy_job.latest.nodes if busy_job.latest else ""
            # The job's two GPUs, numbered from 0 on its node, as SLURM bound them.
            assert [(g.node, g.index) for g in gpus] == [(node, 0), (node, 1)]
            assert (gpus[0].utilization, gpus[0].memory_used) == (91, 40000)
            assert (gpus[1].utilization, gpus[1].memory_used) == (0, 0)
            kind = sandbox.info()["gpus"][node]["type"]
            assert gpus[0].name == {"a100": "NVIDIA A100-SXM4-80GB"}.get(
                kind, "NVIDIA H100 80GB HBM3"
            )
            text = _text(pane)
            # The node's GPU as nvidia-smi reports it: an A100-SXM4-80GB has 81920 MiB, an
            # H100 80GB HBM3 81559 MiB (79.6 GiB); the job lands on either kind.
            total = {"a100": "80.0"}.get(kind, "79.6")
            assert f"91 % 39.1/{total} GiB" in text and f"{node}:1" in text
            # The idle job: two samples 5 s apart, idle over the 3 s limit, flagged.
            screen.select_job(idle)
            table = screen.query_one("#jobs", JobTable)
            await wait_for(
                pilot,
                lambda: str(table.get_cell(idle, "reason")).startswith("GPUs idle"),
                "the idle flag",
                60,
            )
            assert str(table.get_cell(busy, "reason")) == ""
            # The poll's sweep: every running job at once (the app closes the back end when
            # it ends, so this asks while it runs).
            flagged = await backend.idle_gpu_jobs()
            assert idle in flagged and busy not in flagged
    await backend.close()


async def test_why_a_job_waits_behind_another_shows_sprio_and_sshare_figures(
    hs: Harness, sandbox_profile: Profile, tmp_path: Path
) -> None:
    gpus = sandbox.info()["gpus"]
    (node,) = [n for n, g in gpus.items() if g["type"] == "h100"]  # the one h100 node
    # Ahead of it: a job holding every GPU of that node; behind it, ours asks the same. Only
    # that node is blocked: the other tests on the shared sandbox keep the rest.
    blocker = await hs.conn.run(
        f"sbatch --parsable -J {unique('block')} -p polar -w {node} --gres=gpu:h100:4 -t 3 "
        "--wrap 'sleep 120'",
        check=True,
    )
    blocker_id = blocker.stdout.strip()
    name = unique("waits")
    try:
        # Ours is submitted once the blocker holds the node (a blocker still pending, behind
        # another test's job there, could be overtaken by ours: backfill).
        deadline = time.monotonic() + 120
        while (await hs.conn.run(f"squeue -h -j {blocker_id} -o %T")).stdout.strip() != "RUNNING":
            assert time.monotonic() < deadline, f"the blocker never started on {node}"
            await asyncio.sleep(1)
        await hs.submit(name, "sleep 10", num_gpus=4, gpu_type="h100", time_hours=0.05)
        # Once the scheduler looked at it (right after submission its reason is "None" and
        # sprio does not list it yet: the report says so, the pane asks again on a new reason).
        job = await hs.tick_until(
            name,
            lambda j: j.status is TaoStatus.PENDING and j.reason not in ("", "None"),
            interval=2,
        )
        backend = _backend(sandbox_profile, tmp_path)
        report = await backend.why_pending(name)
        weights = sandbox.info()["priority"]["weights"]
        assert report.weights == weights
        (row,) = report.priorities
        assert row.partition == "polar" and row.user == sandbox.USER
        # slurmctld sums the weighted factors as floats and truncates the total; sprio prints
        # each factor rounded, so their sum may be off by up to one per factor (3916 vs 3917).
        assert sum(row.factors.values()) > 0
        assert abs(row.priority - sum(row.factors.values())) <= len(row.factors)
        assert 0 < row.factors["fairshare"] <= weights["fairshare"]
        assert row.factors["partition"] == weights["partition"]
        rank, ranked = report.ranks["polar"]
        assert 1 <= rank <= ranked
        assert report.fairshare is not None and report.fairshare.factor is not None
        assert report.advice  # a pending reason in words, with what to do
        app = make_app(backend, settings=Settings(poll_interval=3600))
        async with app.run_test(size=(160, 45)) as pilot:
            screen: QueueScreen = await shown(pilot, QueueScreen)
            await wait_for(pilot, lambda: screen.polled_ok, "the first poll", 60)
            screen.select_job(name)
            pane = screen.query_one("#wait", WaitPane)
            await wait_for(
                pilot,
                lambda: pane.report is not None and bool(pane.report.priorities),
                "the answer",
                60,
            )
            text = _text(pane)
            assert f"in polar: {pane.report.ranks['polar'][0]} of" in text  # type: ignore[union-attr]
            assert f"fair share {pane.report.priorities[0].factors['fairshare']}/" in text  # type: ignore[union-attr]
            assert "Your fair share in tao:" in text
        await backend.close()
        assert job.status is TaoStatus.PENDING
    finally:
        await hs.conn.run(f"scancel {blocker_id}")


# ----------------------------------------------------------------------------------- the shell


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    require("tmux")
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


def _terminal(terminals: list[Terminal], tmp_path: Path, args: list[str]) -> Terminal:
    workdir = tmp_path / f"term{len(terminals)}"
    workdir.mkdir()
    env = {k: v for k, v in os.environ.items() if k.startswith("XDG_")}
    env.update(
        HOME=str(tmp_path), PATH=os.environ.get("PATH", "/usr/bin:/bin"),
        TERM="xterm-256color", LANG="C.UTF-8", CI="true",
    )  # fmt: skip
    terminal = Terminal([sys.executable, "-m", "tao_slurm_tui", *args], env, workdir)
    terminals.append(terminal)
    return terminal


def _config(tmp_path: Path, profile: Profile) -> str:
    path = tmp_path / "config.toml"
    Config(path, Settings(default_profile=PROFILE, profiles={PROFILE: profile})).save()
    return str(path)


def _ssh_sessions(terminal: Terminal, port: int) -> int:
    """TCP connections to the login's ``port`` held by the program in ``terminal`` (its
    process tree): 0 when it runs over the dashboard's shared connection."""
    pids, inodes = [terminal.pane_pid()], set()
    for pid in pids:
        with contextlib.suppress(OSError):
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            pids.extend(int(child) for child in children)
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    inodes.add(os.readlink(fd))
    rows = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    return sum(
        1 for row in rows if row[2].endswith(f":{port:04X}") and f"socket:[{row[9]}]" in inodes
    )


async def _running_with_marker(ph: Harness, marker: str, token: str) -> JobRecord:
    name = unique("shell")
    command = f"echo {token} > /tmp/{marker}; echo marker-written; sleep 900"
    await ph.submit(name, command, **image_job(num_gpus=1))
    job = await ph.tick_until(name, lambda j: j.status is not TaoStatus.PENDING, timeout=PULL)
    assert job.status is TaoStatus.RUNNING, job.status_json()
    out = Path(JobPaths(sandbox.RESULTS, name).main_out(job.slurm_job_id))
    deadline = time.monotonic() + PULL
    while "marker-written" not in (out.read_text() if out.exists() else ""):
        assert time.monotonic() < deadline, "the job never wrote its marker"
        time.sleep(1)
    return job


async def test_the_shell_lands_inside_the_running_pyxis_jobs_container(
    ph: Harness,
    good_key: None,
    pyxis_profile: Profile,
    tmp_path: Path,
    terminals: list[Terminal],
) -> None:
    marker, token = f"tao-shell-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    job = await _running_with_marker(ph, marker, token)
    node = job.latest.nodes if job.latest else ""
    # The marker is the container's own: the node itself has no such file.
    outside = await ph.conn.run(
        f"srun --overlap --jobid={job.slurm_job_id} --nodelist={node} test -e /tmp/{marker}"
    )
    assert outside.exit_status == 1, outside
    config = _config(tmp_path, pyxis_profile)

    # The dashboard first: ! on the only job, and back to the queue as it was.
    tui = _terminal(terminals, tmp_path, ["--config", config])
    tui.wait_for(job.id)
    tui.keys("!")  # the only job, under the cursor
    tui.wait_for(f"inside the container of job {job.slurm_job_id} on {node}")
    tui.text(f"cat /tmp/{marker}")
    tui.keys("Enter")
    tui.wait_for(token)
    tui.text("exit")
    tui.keys("Enter")
    tui.wait_for(f"Back from the shell in {job.id}")

    # The verb beside the running dashboard (whose connection it may share): the user's
    # terminal type and size reach the shell.
    cli = _terminal(terminals, tmp_path, ["--config", config, "shell", job.id])
    cli.wait_for(f"inside the container of job {job.slurm_job_id} on {node}")
    # No login of its own: the shell's channel runs on the dashboard's connection (at a site
    # that asks a one-time code, none is asked for the shell).
    port = sandbox.info()["ssh"]["port"]
    assert _ssh_sessions(tui, port) >= 1 and _ssh_sessions(cli, port) == 0
    cli.text(f"cat /tmp/{marker}; echo job=$SLURM_JOB_ID; echo size=$(stty size) term=$TERM")
    cli.keys("Enter")
    screen = cli.wait_for(f"job={job.slurm_job_id}")
    assert token in screen and "size=30 100 term=xterm-256color" in screen
    cli.resize(90, 28)  # a window-size change reaches the shell through srun's pty
    cli.text("echo rows,cols=$(stty size | tr ' ' ,)")
    cli.keys("Enter")
    cli.wait_for("rows,cols=28,90")
    cli.text("exit")
    cli.keys("Enter")
    assert cli.wait_exit() == 0

    tui.keys("C-q")
    assert tui.wait_exit() == 0
