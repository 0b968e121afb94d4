"""Monitor on recorded SLURM output (no network): merge quirks, round trips, retries, cancel."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import Attempt, JobRecord, TaoStatus
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.slurm_poll import MARK, SACCT_FIELDS, SEP, SQUEUE_FIELDS
from tao_slurm_tui.core.tick_reads import disguised
from tao_slurm_tui.remote.connection import CommandResult
from tao_slurm_tui.services.accounting_followup import (
    LOST_ANSWERS,
    LOST_SECONDS,
    UNSETTLED_SECONDS,
    UNSETTLED_TICKS,
    Tally,
)
from tao_slurm_tui.services.monitor import Monitor
from tao_slurm_tui.services.store import JobStore

PROFILE = Profile(user="u", hostnames=["h"], partition="polar", base_results_dir="/r")


def sq(job_id: str, state: str, reason: str = "None", nodes: str = "", name: str = "j") -> str:
    values = {
        "job_id": job_id,
        "state": state,
        "reason": reason,
        "nodes": nodes,
        "name": name,
        "elapsed": "0:01",
        "time_limit": "1:00:00",
        "partition": "polar",
    }
    return SEP.join(values.get(k, "N/A") for k, _ in SQUEUE_FIELDS)


def sa(
    job_id: str,
    state: str,
    exit_code: str = "0:0",
    nodes: str = "vm",
    name: str = "j",
    partition: str = "polar",
) -> str:
    values = {
        "job_id": job_id,
        "state": state,
        "exit_code": exit_code,
        "nodes": nodes,
        "name": name,
        "partition": partition,
        "elapsed": "00:00:05",
    }
    return SEP.join(values.get(k, "Unknown") for k, _ in SACCT_FIELDS)


class FakeCluster:
    """Answers the poll command (squeue for all of the user's jobs, on the framed shell) and the
    background sacct follow-up from tables of rows; counts round trips of each kind."""

    def __init__(self) -> None:
        self.squeue: dict[str, str] = {}
        self.sacct: dict[str, list[str]] = {}
        self.files: dict[str, str] = {}
        self.calls: list[str] = []
        """Commands a tick waited for (the critical path), and scancel."""
        self.followups: list[str] = []
        """Background sacct follow-ups (never awaited by a tick)."""
        self.squeue_forgets = False

    async def run_framed(self, command: Any, **kw: Any) -> CommandResult:
        return await self.run(command, framed=True, **kw)

    async def run(self, command: Any, *, framed: bool = False, **_: Any) -> CommandResult:
        cmd = command if isinstance(command, str) else " ".join(command)
        if (MARK in cmd and "squeue" not in cmd) or "scontrol show reservation" in cmd:
            assert not framed, "sacct (or the site's state) must not hold up the tick's shell"
            self.followups.append(cmd)
        else:
            self.calls.append(cmd)
        if cmd.startswith("scancel"):
            return CommandResult(cmd, 0, "", "", "h")
        out: list[str] = []
        if "squeue" in cmd:
            assert framed and "-u" in cmd and "-j" not in cmd  # all of mine, not N ids
            rows = [] if self.squeue_forgets else list(self.squeue.values())
            out += [f"{MARK}squeue rc=0", *rows, f"{MARK}end"]
        elif MARK in cmd:
            asked = re.search(r"s=([0-9,]+);", cmd)
            want = [i for i in (asked.group(1).split(",") if asked else []) if i in self.sacct]
            out.append(f"{MARK}sacct rc=0 ids={','.join(want)}")
            for i in want:
                out += self.sacct[i]
            out.append(f"{MARK}end")
        framing = re.search(r"M=(@@tao-mon:([0-9a-f]+):)", cmd)
        if framing is not None:
            # The files part as the login host prints it: the command's own markers and the
            # disguised names tail -v gives as headers (core/tick_reads.py).
            mark, nonce = framing.groups()
            for path, text in self.files.items():
                # The reads name each results dir (its own status.json and its subtasks').
                dirs = (path.rsplit("/", 1)[0], path.rsplit("/", 2)[0])
                if any(f"{d} {d}/*" in cmd for d in dirs):
                    out += [f"{mark}status ", f"==> {disguised(path, nonce)} <==", text]
            out.append(f"{mark}end")
        return CommandResult(cmd, 0, "\n".join(out) + "\n", "", "h")


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(tmp_path / "state.db")


def add(store: JobStore, name: str, slurm_id: str, **kw: Any) -> None:
    store.create_job(
        JobRecord(
            id=name,
            profile="p",
            submitted=True,
            attempts=[Attempt(number=0, slurm_job_id=slurm_id)],
            **{"base_results_dir": "/r", **kw},
        )
    )


def queued(store: JobStore, count: int, start: int = 0) -> tuple[FakeCluster, Monitor]:
    """Jobs j<start>.. (SLURM ids 100+i) pending in squeue, and a monitor for them."""
    cluster = FakeCluster()
    for i in range(start, start + count):
        add(store, f"j{i}", str(100 + i))
        cluster.squeue[str(100 + i)] = sq(str(100 + i), "PENDING", "Resources")
    return cluster, Monitor(cluster, store, "p", PROFILE)  # type: ignore[arg-type]


async def test_fifty_jobs_one_round_trip_and_terminal_never_asked_again(store: JobStore) -> None:
    cluster, monitor = queued(store, 50)
    result = await monitor.tick()
    assert len(cluster.calls) == 1 and result.round_trips == 1
    assert all(j.status is TaoStatus.PENDING for j in result.jobs)
    assert result.jobs[0].message == "waiting for nodes/GPUs to become free"
    # All cancelled outside: squeue forgot them (whole list fails), sacct says CANCELLED by 1001.
    cluster.squeue.clear()
    cluster.squeue_forgets = True
    for i in range(50):
        cluster.sacct[str(100 + i)] = [sa(str(100 + i), "CANCELLED by 1001")]
    cluster.calls.clear()
    result = await monitor.tick()
    # squeue no longer lists them: the tick does not wait for sacct, it asks in the background
    # (one batched call for all 50) and the next tick uses the answer.
    assert len(cluster.calls) == 1 and result.round_trips == 1
    assert sorted(result.accounting) == sorted(str(100 + i) for i in range(50))
    assert await monitor.wait_followup()
    # One batched sacct call (beside the site's reservations, asked once in the background).
    assert len([c for c in cluster.followups if "sacct" in c]) == 1
    result = await monitor.tick()
    assert len(cluster.calls) == 2
    assert all(j.status is TaoStatus.CANCELED for j in result.jobs)
    cluster.calls.clear()
    await monitor.tick()
    assert cluster.calls == []


async def test_tick_command_is_the_same_for_one_and_a_thousand_jobs(store: JobStore) -> None:
    cluster, monitor = queued(store, 1)
    await monitor.tick()
    more, _ = queued(store, 999, start=1)
    cluster.squeue.update(more.squeue)
    assert len((await monitor.tick()).changed) == 999  # the new ones got their squeue state
    result = await monitor.tick()
    assert cluster.calls[0] == cluster.calls[2]  # no list of ids: squeue -u me, filtered here
    assert len(result.jobs) == 1000 and result.changed == []  # nothing changed, nothing written
    cluster.squeue["500"] = sq("500", "RUNNING", nodes="vm")
    result = await monitor.tick()
    assert result.changed == ["j400"]


async def test_no_sacct_row_right_after_submit_keeps_the_state(store: JobStore) -> None:
    cluster = FakeCluster()
    add(store, "a", "7")
    cluster.squeue_forgets = True  # neither knows it yet
    monitor = Monitor(cluster, store, "p", PROFILE)  # type: ignore[arg-type]
    result = await monitor.tick()
    assert result.jobs[0].status is TaoStatus.PENDING and result.changed == []


async def test_transient_allocation_row_is_ignored(store: JobStore) -> None:
    cluster = FakeCluster()
    add(store, "a", "7")
    cluster.squeue["7"] = sq("7", "RUNNING", nodes="vm")
    cluster.sacct["7"] = [sa("7", "PENDING", name="allocation", partition="")]
    monitor = Monitor(cluster, store, "p", PROFILE)  # type: ignore[arg-type]
    result = await monitor.tick()
    assert result.jobs[0].status is TaoStatus.RUNNING
    assert result.jobs[0].attempts[0].nodes == "vm"


async def test_completed_reads_status_json_once(store: JobStore) -> None:
    cluster = FakeCluster()
    add(store, "a", "7")
    cluster.squeue["7"] = sq("7", "COMPLETED", nodes="vm")
    cluster.sacct["7"] = [sa("7", "COMPLETED")]
    cluster.files["/r/results/a/train/status.json"] = (
        '{"status": "RUNNING", "epoch": 3, "max_epoch": 3}\n'
        '{"status": "FAILURE", "message": "File system error: bad dataset"}'
    )
    monitor = Monitor(cluster, store, "p", PROFILE)  # type: ignore[arg-type]
    result = await monitor.tick()
    # squeue's COMPLETED waits for accounting, asked in the background; the next tick has it.
    assert result.round_trips == 1 and result.accounting == ["7"]
    assert await monitor.wait_followup()
    result = await monitor.tick()
    assert result.round_trips == 2
    job = result.jobs[0]
    assert job.status is TaoStatus.ERROR and job.message == "File system error: bad dataset"
    assert job.progress.epoch == 3 and job.progress.epoch_text == "4/4"


async def test_requeued_job_counts_restarts_and_is_not_retried_by_the_client(
    store: JobStore,
) -> None:
    cluster = FakeCluster()
    add(store, "a", "7")
    cluster.squeue["7"] = sq("7", "RUNNING", nodes="vm")
    calls: list[str] = []

    async def resubmit(job: JobRecord, **_: Any) -> Attempt:
        calls.append(job.id)
        raise AssertionError("must not resubmit a job SLURM requeued itself")

    monitor = Monitor(cluster, store, "p", PROFILE, resubmit=resubmit)  # type: ignore[arg-type]
    await monitor.tick()
    # The batch script requeued it: same id, back to PENDING (BeginTime).
    cluster.squeue["7"] = sq("7", "PENDING", "BeginTime")
    result = await monitor.tick()
    job = result.jobs[0]
    assert job.status is TaoStatus.PENDING and job.retries == 1
    assert any(e.kind == "requeued" for e in result.events)
    assert calls == []


async def test_cancel_scancels_every_attempt_and_the_sqsh_job(store: JobStore) -> None:
    cluster = FakeCluster()
    store.create_job(
        JobRecord(
            id="a",
            profile="p",
            submitted=True,
            sqsh_job_id="5",
            attempts=[Attempt(0, "6"), Attempt(1, "9")],
        )
    )
    monitor = Monitor(cluster, store, "p", PROFILE, lock_path=store.path.parent / "lock")  # type: ignore[arg-type]
    job = await monitor.cancel("a")
    assert cluster.calls == ["scancel 6 9 5"]
    assert job.status is TaoStatus.CANCELED


class Clock:
    """A hand-driven clock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_finish_waits_for_slow_accounting_even_with_fast_ticks(store: JobStore) -> None:
    # squeue already says COMPLETED, slurmdbd still has the RUNNING row (it lags by seconds):
    # ticks 1 s apart must not end the job before sacct agrees (that lost the exit code).
    cluster = FakeCluster()
    add(store, "a", "7", status=TaoStatus.RUNNING)
    cluster.squeue["7"] = sq("7", "COMPLETED", nodes="vm")
    cluster.sacct["7"] = [sa("7", "RUNNING", exit_code="0:0")]
    clock = Clock()
    monitor = Monitor(cluster, store, "p", PROFILE, clock=clock)  # type: ignore[arg-type]
    for _ in range(5):
        result = await monitor.tick()
        assert result.jobs[0].status is TaoStatus.RUNNING
        await monitor.wait_followup()  # sacct asked in the background, still RUNNING
        clock.now += 1
    cluster.sacct["7"] = [sa("7", "COMPLETED", exit_code="0:0")]
    result = await monitor.tick()
    assert result.round_trips == 1 and result.jobs[0].status is TaoStatus.RUNNING
    assert await monitor.wait_followup()  # accounting agrees now: the next tick acts on it
    result = await monitor.tick()
    job = result.jobs[0]
    assert job.status is TaoStatus.COMPLETE
    assert job.attempts[0].exit_code == "0:0"


async def test_finish_is_trusted_without_accounting_after_ticks_and_time(store: JobStore) -> None:
    # Accounting down: sacct never agrees. squeue's word is trusted once both the tick count and
    # the grace time have passed, not before.
    cluster = FakeCluster()
    add(store, "a", "7", status=TaoStatus.RUNNING)
    cluster.squeue["7"] = sq("7", "CANCELLED", nodes="vm")
    cluster.sacct["7"] = [sa("7", "RUNNING")]
    clock = Clock()
    monitor = Monitor(cluster, store, "p", PROFILE, clock=clock)  # type: ignore[arg-type]
    for _ in range(UNSETTLED_TICKS + 1):
        assert (await monitor.tick()).jobs[0].status is TaoStatus.RUNNING
        await monitor.wait_followup()
    clock.now += UNSETTLED_SECONDS - 1
    assert (await monitor.tick()).jobs[0].status is TaoStatus.RUNNING
    await monitor.wait_followup()
    clock.now += 1
    assert (await monitor.tick()).jobs[0].status is TaoStatus.CANCELED


class ProbeCluster:
    """Answers squeue when the tick asks it, and sacct when the follow-up (the probe after a
    requeue) asks it."""

    def __init__(self) -> None:
        self.squeue = ""
        self.sacct: list[str] = []
        self.asked: list[str] = []

    async def run_framed(self, command: Any, **kw: Any) -> CommandResult:
        return await self.run(command, **kw)

    async def run(self, command: Any, **_: Any) -> CommandResult:
        cmd = command if isinstance(command, str) else " ".join(command)
        out: list[str] = []
        if MARK in cmd:
            if "squeue -h" in cmd:
                self.asked.append("squeue")
                out += [f"{MARK}squeue rc=0", self.squeue]
            else:
                self.asked.append("sacct")
                out += [f"{MARK}sacct rc=0 ids=7", *self.sacct]
            out.append(f"{MARK}end")
        else:  # the second round trip: nothing to read, ended by its own marker
            framing = re.search(r"M=(@@tao-mon:[0-9a-f]+:)", cmd)
            out.append(f"{framing.group(1) if framing else '@@tao-mon:'}end")
        return CommandResult(cmd, 0, "\n".join(out) + "\n", "", "h")


def sq_restarts(state: str, reason: str, restarts: int) -> str:
    values = {"job_id": "7", "state": state, "reason": reason, "restarts": str(restarts)}
    values.update({"nodes": "vm" if state == "RUNNING" else "", "partition": "polar"})
    return SEP.join(values.get(k, "N/A") for k, _ in SQUEUE_FIELDS)


async def test_requeue_probe_with_lagging_accounting_counts_one_restart(store: JobStore) -> None:
    # The batch script requeued itself (squeue: PENDING, RestartCnt 1). The monitor then asks
    # sacct -D (in the background) for the restart count, and slurmdbd still shows the first
    # run RUNNING: that stale row must not flip the job back to Running, or a following squeue
    # PENDING counts the requeue twice.
    cluster = ProbeCluster()
    add(store, "a", "7")
    monitor = Monitor(cluster, store, "p", PROFILE)  # type: ignore[arg-type]
    cluster.squeue = sq_restarts("RUNNING", "None", 0)
    await monitor.tick()
    cluster.squeue = sq_restarts("PENDING", "BeginTime", 1)
    cluster.sacct = [sa("7", "RUNNING")]
    await monitor.tick()
    assert await monitor.wait_followup()
    result = await monitor.tick()
    assert cluster.asked == ["squeue", "squeue", "sacct", "squeue"]
    assert result.jobs[0].status is TaoStatus.PENDING
    result = await monitor.tick()
    job = result.jobs[0]
    assert job.status is TaoStatus.PENDING
    assert job.attempts[0].restarts == 1 and job.retries == 1
    requeued = [e for e in store.events("p", "a") if e.kind == "requeued"]
    assert len(requeued) == 1


async def test_unchanged_jobs_are_not_merged_again_but_other_writers_are_seen(
    store: JobStore,
) -> None:
    cluster, monitor = queued(store, 3)
    first = await monitor.tick()
    assert len(first.changed) == 3
    steady = await monitor.tick()
    assert steady.changed == [] and steady.jobs == first.jobs
    assert all(a is b for a, b in zip(steady.jobs, first.jobs, strict=True))  # not re-read
    # Another process (a CLI) cancels one: the next tick reads the store again and sees it.
    other = JobStore(store.path)
    other.update_job("p", "j1", status=TaoStatus.CANCELED, message="Canceled by the user.")
    other.close()
    result = await monitor.tick()
    assert {j.id: j.status for j in result.jobs}["j1"] is TaoStatus.CANCELED
    # Only the job whose squeue row changed is merged and written.
    cluster.squeue["102"] = sq("102", "RUNNING", nodes="vm")
    result = await monitor.tick()
    assert result.changed == ["j2"]
    assert {j.id: j.status for j in result.jobs}["j2"] is TaoStatus.RUNNING


async def test_ended_jobs_leave_nothing_behind_in_the_monitor(store: JobStore) -> None:
    """The soak (bench/soak.py) found the monitor's memory growing with every job that ever
    ran: the last merge's inputs (squeue fields, sacct rows) stayed for ended jobs. Only the
    store's records (which the queue shows) may grow with the jobs."""
    cluster, monitor = queued(store, 20)
    await monitor.tick()
    assert monitor.jobs.merges_remembered == 20
    for i in range(20):
        sid = str(100 + i)
        cluster.squeue[sid] = sq(sid, "COMPLETED", nodes="vm")
        cluster.sacct[sid] = [sa(sid, "COMPLETED")]
    for _ in range(4):
        await monitor.tick()
        await monitor.wait_followup()
    assert all(job.status is TaoStatus.COMPLETE for job in store.list_jobs("p"))
    assert monitor.jobs.merges_remembered == 0 and monitor.accounting.holds_nothing


async def test_another_writer_makes_the_monitor_read_only_the_rows_it_wrote(
    store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A history of many ended jobs is not read again on every write of another process (or of
    the app's own submit): only the rows written since, everything only after a deletion."""
    cluster, monitor = queued(store, 3)
    for i in range(40):  # a long history
        add(store, f"old{i}", str(900 + i), status=TaoStatus.COMPLETE)
    await monitor.tick()
    full_reads: list[str] = []
    real_list = store.list_jobs

    def counting_list(*args: Any, **kw: Any) -> list[JobRecord]:
        full_reads.append("list")
        return real_list(*args, **kw)

    monkeypatch.setattr(store, "list_jobs", counting_list)
    read_back: list[list[str]] = []
    real_since = store.jobs_changed_since

    def counting_since(profile: str, change: int) -> list[JobRecord]:
        rows = real_since(profile, change)
        read_back.append(sorted(j.id for j in rows))
        return rows

    monkeypatch.setattr(store, "jobs_changed_since", counting_since)
    other = JobStore(store.path)
    other.update_job("p", "j1", status=TaoStatus.CANCELED, message="Canceled by the user.")
    add(other, "new", "777")  # a submission from another terminal
    cluster.squeue["777"] = sq("777", "PENDING", "Priority")
    result = await monitor.tick()
    by_id = {j.id: j for j in result.jobs}
    assert by_id["j1"].status is TaoStatus.CANCELED and "new" in by_id and len(by_id) == 44
    # The rows written since the cache was read: the other writer's two and the first tick's
    # own three (read back once more); none of the 40 ended jobs.
    assert full_reads == [] and read_back[0] == ["j0", "j1", "j2", "new"]
    await monitor.tick()
    assert read_back[1:] == []  # its own writes since: the cache already holds them
    # A deletion (a refused submission) cannot be seen in changed rows: everything is read.
    other.delete_job("p", "old3")
    other.close()
    result = await monitor.tick()
    assert "old3" not in {j.id for j in result.jobs} and full_reads == ["list"]


async def test_a_follow_up_warning_lasts_while_sacct_is_needed_and_no_longer(
    store: JobStore,
) -> None:
    """sacct answering garbage is the tick's warning (what a screen shows) until nothing needs
    sacct any more: then it goes, not stays on screen for ever."""
    cluster, monitor = queued(store, 2)
    await monitor.tick()
    del cluster.squeue["101"]  # squeue forgets j1 for a while: sacct is asked about it
    cluster.sacct["101"] = ["Welcome to polar! Maintenance on Friday."]
    result = await monitor.tick()
    assert result.accounting == ["101"] and result.warning == ""
    await monitor.wait_followup()
    assert "not a job row" in monitor.followup_warning
    result = await monitor.tick()  # still needed, still garbage: still said
    assert "not a job row" in result.warning
    await monitor.wait_followup()
    cluster.squeue["101"] = sq("101", "RUNNING", nodes="vm")  # listed again: sacct not needed
    result = await monitor.tick()
    assert result.accounting == [] and result.warning == ""
    assert (await monitor.tick()).warning == ""


class ShellCluster(FakeCluster):
    """A :class:`FakeCluster` whose second round trip (the reads of finished jobs) runs for
    real in ``sh`` on this machine, with a fake ``sinfo`` that lists ``nodes``."""

    def __init__(self, bin_dir: Path, nodes: list[str]) -> None:
        super().__init__()
        bin_dir.mkdir()
        sinfo = bin_dir / "sinfo"
        sinfo.write_text("#!/bin/sh\n" + "".join(f"echo {n}\n" for n in nodes))
        sinfo.chmod(0o755)
        self.path = f"{bin_dir}:/usr/bin:/bin"
        self.second_rounds: list[str] = []

    async def run(self, command: Any, *, framed: bool = False, **kw: Any) -> CommandResult:
        cmd = command if isinstance(command, str) else " ".join(command)
        if not cmd.startswith("sh -c") or "squeue" in cmd or "sacct" in cmd:
            return await super().run(command, framed=framed, **kw)
        self.second_rounds.append(cmd)
        done = subprocess.run(
            ["/bin/sh", "-c", cmd], capture_output=True, text=True, timeout=30,
            env={"PATH": self.path},
        )  # fmt: skip
        return CommandResult(cmd, done.returncode, done.stdout, done.stderr, "h")


async def test_an_infrastructure_failure_is_retried_without_its_node(
    store: JobStore, tmp_path: Path
) -> None:
    """FAILED with an NCCL error in main.err: the second round reads both logs and the
    partition's size (sinfo) in one command, and the retry excludes the failed node while the
    partition has others."""
    cluster = ShellCluster(tmp_path / "bin", ["n1", "n2", "n3", "n4"])
    root = tmp_path / "results"
    add(store, "a", "7", base_results_dir=str(root), spec={"num_nodes": 1})
    paths = JobPaths(str(root), "a")
    for path, text in (
        (paths.main_out("7"), "epoch 1\n"),
        (paths.main_err("7"), "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269\n"),
    ):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    cluster.squeue["7"] = sq("7", "FAILED", nodes="n2")
    cluster.sacct["7"] = [sa("7", "FAILED", "1:0", nodes="n2")]
    seen: list[tuple[str, list[str], str]] = []

    async def resubmit(job: JobRecord, *, exclude_nodes: Any = (), reason: str = "") -> Attempt:
        seen.append((job.id, list(exclude_nodes), reason))
        attempt = Attempt(number=1, slurm_job_id="8")
        store.add_attempt("p", job.id, attempt)
        return attempt

    monitor = Monitor(cluster, store, "p", PROFILE, resubmit=resubmit)  # type: ignore[arg-type]
    await monitor.tick()  # squeue says FAILED: accounting is asked first
    await monitor.wait_followup()
    result = await monitor.tick()
    assert result.round_trips == 2 and len(cluster.second_rounds) == 1
    assert seen == [("a", ["n2"], seen[0][2])] and "NCCL" in seen[0][2]
    assert any(e.kind == "retried" and "excluding n2" in e.text for e in result.events)
    job = store.require("p", "a")
    assert job.status is TaoStatus.PENDING and job.attempts[0].retry_reason == seen[0][2]


async def test_a_missing_log_is_no_infrastructure_failure(store: JobStore, tmp_path: Path) -> None:
    """FAILED and main.err not there: nothing to classify, so Error (never a blind retry)."""
    cluster = ShellCluster(tmp_path / "bin", ["n1", "n2"])
    add(store, "a", "7", base_results_dir=str(tmp_path / "results"))
    cluster.squeue["7"] = sq("7", "FAILED", nodes="n1")
    cluster.sacct["7"] = [sa("7", "FAILED", "1:0", nodes="n1")]

    async def resubmit(job: JobRecord, **_: Any) -> Attempt:
        raise AssertionError("must not retry without a log")

    monitor = Monitor(cluster, store, "p", PROFILE, resubmit=resubmit)  # type: ignore[arg-type]
    await monitor.tick()
    await monitor.wait_followup()
    result = await monitor.tick()
    assert result.jobs[0].status is TaoStatus.ERROR
    assert "could not be read" in result.jobs[0].message


HYDRA_LOG = """sys:1: UserWarning:
'spec.yaml' is validated against ConfigStore schema with the same name.
Could not override 'train.num_epoch'.
To append to your config use +train.num_epoch=3
Key 'num_epoch' not in 'TrainExpConfig'
    full_key: train.num_epoch
    reference_type=TrainExpConfig
    object_type=TrainExpConfig

Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.
"""
"""What TAO 7.3 (and the sandbox's stand-in) prints for a key the schema lacks."""


@pytest.mark.parametrize("where", ["status", "hydra"])
async def test_a_tao_failure_shows_tao_s_reason(
    store: JobStore, tmp_path: Path, where: str
) -> None:
    """FAILED (exit 1) with no infrastructure sign: TAO's FAILURE message in
    ``train/status.json`` is the reason shown (its last epoch is kept); a spec Hydra refused
    leaves no status.json, and Hydra's message in the log is the reason."""
    cluster = ShellCluster(tmp_path / "bin", ["n1", "n2"])
    root = tmp_path / "results"
    add(store, "a", "7", base_results_dir=str(root))
    paths = JobPaths(str(root), "a")
    files = {
        paths.main_out("7"): HYDRA_LOG if where == "hydra" else "epoch 1\n",
        paths.main_err("7"): "\x1b[33;20m2026 - [TAO Toolkit] - WARNING - Execution status: FAIL\n",
    }
    if where == "status":
        files[paths.subtask_status_json("train")] = (
            '{"epoch": 1, "max_epoch": 9, "status": "RUNNING"}\n'
            '{"status": "FAILURE", "message": "File system error: [Errno 2] No such file"}\n'
        )
    for path, text in files.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    cluster.squeue["7"] = sq("7", "FAILED", nodes="n1")
    cluster.sacct["7"] = [sa("7", "FAILED", "1:0", nodes="n1")]

    async def resubmit(job: JobRecord, **_: Any) -> Attempt:
        raise AssertionError("a program error is not retried")

    monitor = Monitor(cluster, store, "p", PROFILE, resubmit=resubmit)  # type: ignore[arg-type]
    await monitor.tick()
    await monitor.wait_followup()
    job = (await monitor.tick()).jobs[0]
    assert job.status is TaoStatus.ERROR
    assert len(cluster.second_rounds) == 1  # logs and status.json in one read
    if where == "status":
        assert job.message == "File system error: [Errno 2] No such file"
        assert job.progress.epoch_text == "2/10"
    else:
        assert job.message.startswith(
            "TAO refused the experiment spec before it started: Could not override "
            "'train.num_epoch': Key 'num_epoch' not in 'TrainExpConfig' (full key train.num_epoch)"
        )


async def test_a_running_job_the_controller_forgot_is_lost_though_accounting_says_running(
    store: JobStore,
) -> None:
    """A primary slurmctld crashed after the job started but before saving it: the backup's
    squeue answers without it while slurmdbd keeps its RUNNING row for ever (a "runaway job").
    After LOST_ANSWERS ticks and LOST_SECONDS it is lost, not Running for ever."""
    cluster = FakeCluster()
    add(store, "a", "7", status=TaoStatus.RUNNING)
    cluster.squeue["7"] = sq("7", "RUNNING", nodes="vm")
    cluster.sacct["7"] = [sa("7", "RUNNING")]
    clock = Clock()
    monitor = Monitor(cluster, store, "p", PROFILE, clock=clock)  # type: ignore[arg-type]
    await monitor.tick()
    cluster.squeue_forgets = True  # the controller now in charge never heard of it
    forgotten_at = clock.now
    for _ in range(2 * LOST_ANSWERS + 10):
        result = await monitor.tick()
        await monitor.wait_followup()
        job = result.jobs[0]
        if job.status is not TaoStatus.RUNNING:
            break
        clock.now += 20
    # Not before LOST_SECONDS (a blip of the controller is no loss), and soon after.
    assert LOST_SECONDS <= clock.now - forgotten_at <= LOST_SECONDS + 60
    assert job.status is TaoStatus.ERROR  # no resubmit wired in: it ends saying why
    assert "SLURM lost job 7" in job.message and "no end" in job.message


async def test_a_short_absence_from_squeue_with_accounting_running_is_no_loss(
    store: JobStore,
) -> None:
    cluster = FakeCluster()
    add(store, "a", "7", status=TaoStatus.RUNNING)
    cluster.sacct["7"] = [sa("7", "RUNNING")]
    clock = Clock()
    monitor = Monitor(cluster, store, "p", PROFILE, clock=clock)  # type: ignore[arg-type]
    for listed in (False, False, True, False, False):  # listed again: the count starts over
        cluster.squeue = {"7": sq("7", "RUNNING", nodes="vm")} if listed else {}
        result = await monitor.tick()
        await monitor.wait_followup()
        clock.now += LOST_SECONDS
        assert result.jobs[0].status is TaoStatus.RUNNING


def test_a_tally_counts_from_the_first_time_and_forgets() -> None:
    now = [100.0]
    tally = Tally(lambda: now[0])
    assert tally.peek("7") == (0, 0.0) and "7" not in tally and not tally
    assert tally.add("7") == (1, 0.0)
    now[0] = 130.0
    assert tally.add("7") == (2, 30.0) and tally.peek("7") == (2, 30.0)
    tally.add("8")
    tally.keep_only({"8"})
    assert "7" not in tally and tally.peek("8") == (1, 0.0)
    tally.forget("8")
    assert not tally
