"""History and usage on the real sandbox: foreign jobs, a CPU burner's figures, 1,000 jobs paged.

The jobs here are submitted with plain ``sbatch`` over an OpenSSH process (not by this tool),
so they only exist in SLURM's accounting.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from tao_slurm_tui import cli
from tao_slurm_tui.config import Profile
from tao_slurm_tui.core.accounting import HistoryEntry, HistoryQuery
from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.core.quoting import quote
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services.history import HistoryService
from tao_slurm_tui.services.store import JobStore
from tests import sandbox
from tests.integration.monitor_helpers import PROFILE, Harness, unique
from tests.integration.test_monitor_cli import write_config

BURN_S = 20
ARRAY_SIZE = 1000


def plain_sbatch(*args: str) -> str:
    """sbatch over a fresh OpenSSH process, as a user would type it; returns the job id."""
    remote = " ".join(["sbatch", "--parsable", *args])
    done = subprocess.run(
        [*sandbox.openssh_argv(), remote], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().split(";")[0]


def gpus_on_polar() -> int:
    """GPUs per node of the default partition (0 when the sandbox has no GPU gres)."""
    done = subprocess.run(
        [*sandbox.openssh_argv(), "sinfo -h -p polar -o %G"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    match = re.search(r"gpu(?::[^:(,]+)?:(\d+)", done.stdout)
    return int(match.group(1)) if match else 0


async def _wait_accounted(
    service: HistoryService, slurm_id: str, timeout: float = 240
) -> HistoryEntry:
    """Until sacct has the job's final record (slurmdbd lags a little behind the finish)."""
    deadline = time.monotonic() + timeout
    while True:
        entry = (await service.usage([slurm_id])).get(slurm_id)
        if entry is not None and entry.finished and entry.usage.total_cpu_s is not None:
            return entry
        if time.monotonic() > deadline:
            raise AssertionError(f"sacct never finished {slurm_id}: {entry}")
        await asyncio.sleep(2)


def _scancel(job_id: str) -> None:
    subprocess.run([*sandbox.openssh_argv(), f"scancel {job_id}"], capture_output=True, timeout=60)


def test_foreign_cpu_burner_appears_with_its_usage(
    sandbox_profile: Profile, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = unique("burn")
    gpus = 1 if gpus_on_polar() else 0
    # The job measures the burner's CPU time itself (utime + stime from /proc, in clock
    # ticks) so the test compares sacct's efficiency with an independent truth.
    script = (
        "sh -c 'while :; do :; done' & p=$!; "
        f"sleep {BURN_S}; read -r st < /proc/$p/stat; kill $p; "
        'echo "CPU-TRUTH $(echo "$st" | awk \'{print $14 + $15}\') $(getconf CLK_TCK)"; '
        "echo tao-foreign-marker"
    )
    gres = [f"--gpus={gpus}"] if gpus else []
    job_id = plain_sbatch(
        "-J", name, "-p", "polar", "-c", "1", "-t", "10", *gres, "--wrap", quote(script)
    )

    async def scenario() -> tuple[HistoryEntry, str, str]:
        store = JobStore(tmp_path / "state.db")
        try:
            async with Connection(sandbox_profile) as conn:
                service = HistoryService(conn, store, PROFILE)
                entry = await _wait_accounted(service, job_id)
                output = await service.job_output(entry)
                assert output.stdout_readable and output.same_file, output
                return entry, output.stdout, output.stdout_path
        finally:
            store.close()

    try:
        entry, out, stdout_path = asyncio.run(scenario())
    finally:
        _scancel(job_id)
    assert entry.state == "COMPLETED" and entry.name == name
    assert "tao-foreign-marker" in out
    assert stdout_path.endswith(f"slurm-{job_id}.out")
    usage = entry.usage
    assert usage.elapsed_s is not None and abs(usage.elapsed_s - BURN_S) <= 3, usage
    truth_line = next(ln for ln in out.splitlines() if ln.startswith("CPU-TRUTH "))
    ticks, per_second = (int(t) for t in truth_line.split()[1:3])
    cpu_s = ticks / per_second
    truth = cpu_s / (usage.alloc_cpus * usage.elapsed_s)
    assert usage.cpu_efficiency is not None
    assert abs(usage.cpu_efficiency - truth) <= 0.25 * truth, (usage.cpu_efficiency, truth)
    assert usage.gpus == gpus
    assert usage.gpu_hours == pytest.approx(gpus * usage.elapsed_s / 3600)
    assert usage.queue_wait_s is not None and usage.queue_wait_s >= 0

    # The CLI lists it too (filter by its name), with the JSON keys of the contract.
    config = write_config(tmp_path, sandbox_profile)
    assert cli.main(["--config", config, "history", "--since", "1h", "--name", name, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["slurm_job_id"] for r in rows] == [job_id]
    assert rows[0]["elapsed"] and rows[0]["cpu_efficiency"] == pytest.approx(
        usage.cpu_efficiency, abs=1e-3
    )
    assert rows[0]["gpu_hours"] == pytest.approx(usage.gpu_hours, abs=1e-3)
    assert rows[0]["tao_id"] is None  # not submitted by this tool
    assert cli.main(["--config", config, "history", "--since", "1h", "--name", name]) == 0
    table = capsys.readouterr().out
    assert job_id in table and "COMPLETED" in table and "last 1 hour:" in table


def test_our_jobs_are_linked_to_their_tao_record(sandbox_profile: Profile, tmp_path: Path) -> None:
    name = unique("hist-ours")

    async def scenario() -> None:
        store = JobStore(tmp_path / "state.db")
        async with Connection(sandbox_profile) as conn:
            harness = Harness(conn, store, sandbox_profile)
            try:
                await harness.submit(name, "echo hello")
                job = await harness.tick_until(name, lambda j: j.status.terminal)
                assert job.status is TaoStatus.COMPLETE
                service = HistoryService(conn, store, PROFILE)
                entry = await _wait_accounted(service, job.slurm_job_id)
                # A window query can trail `sacct -j` on a busy slurmdbd (seen on the shared
                # sandbox): the history shows the job once accounting lists it; wait for that.
                deadline = time.monotonic() + 120
                while True:
                    page = await service.page(HistoryQuery(since="now-1hours", name=name))
                    if page.entries or time.monotonic() > deadline:
                        break
                    await asyncio.sleep(3)
                assert [e.job_id for e in page.entries] == [job.slurm_job_id]
                assert service.links()[entry.raw_id].id == name
                usage = await service.job_usage([job])
                assert usage[name].elapsed_s is not None
            finally:
                await harness.cleanup()
                store.close()

    asyncio.run(scenario())


def test_thousand_finished_jobs_page_without_one_call_per_job(
    sandbox_profile: Profile, tmp_path: Path
) -> None:
    name = unique("arr")
    array_id = plain_sbatch(
        "-J", name, "-p", "polar", "-c", "1", "-t", "1", f"--array=0-{ARRAY_SIZE - 1}",
        "-o", "/dev/null", "--wrap", "true",
    )  # fmt: skip

    async def scenario() -> tuple[list[str], int, int | None]:
        store = JobStore(tmp_path / "state.db")
        try:
            async with Connection(sandbox_profile) as conn:
                service = HistoryService(conn, store, PROFILE)
                query = HistoryQuery(since="now-2hours", name=name, states=("COMPLETED",))
                deadline = time.monotonic() + 300
                while True:
                    first = await service.page(query)
                    if first.total == ARRAY_SIZE:
                        break
                    assert time.monotonic() < deadline, f"only {first.total} tasks finished"
                    await asyncio.sleep(5)
                service.round_trips = 0
                ids: list[str] = []
                page = await service.page(query)
                total = page.total
                ids += [e.raw_id for e in page.entries]
                while page.next_before is not None:
                    page = await service.page(
                        HistoryQuery(
                            since=query.since,
                            name=name,
                            states=query.states,
                            before=page.next_before,
                        )
                    )
                    ids += [e.raw_id for e in page.entries]
                return ids, service.round_trips, total
        finally:
            store.close()

    try:
        ids, calls, total = asyncio.run(scenario())
    finally:
        _scancel(array_id)
    assert total == ARRAY_SIZE
    assert len(ids) == len(set(ids)) == ARRAY_SIZE
    assert ids == sorted(ids, key=int, reverse=True)  # newest first, no gaps or repeats
    assert calls == ARRAY_SIZE // 200  # one sacct per page of 200, not one per job
