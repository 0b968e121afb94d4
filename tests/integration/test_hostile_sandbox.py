"""The reproductions of issue 25 that need real SLURM and OpenSSH, on the sandbox cluster.

- A job renames itself (``scontrol update JobName=``) to a name with newlines and tabs that
  holds a whole squeue row (and a sacct row) of another job: that job stays Running, no false
  event is recorded, the history shows the name whole and no forged entry.
- A job replaces its ``status.json``, ``main.out``, ``main.err`` and ``requeue.reason`` with
  FIFOs: the polls go on (another job's progress is read) and its own end is still decided.
- ``ForwardAgent yes`` in ``~/.ssh/config`` forwards no agent (plain commands and the
  long-lived shell), unless the profile asks for it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.quoting import quote
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services.history import HistoryService
from tests import sandbox
from tests.integration.monitor_helpers import PROFILE, Harness, status_line, unique

pytestmark = pytest.mark.usefixtures("cluster")

RUNNING = 120
"""Seconds the jobs of these tests run (they are cancelled at the end)."""


def running(job: JobRecord) -> bool:
    return job.status is TaoStatus.RUNNING


async def test_a_job_s_new_name_forges_no_row_of_another_job(h: Harness) -> None:
    victim = unique("victim")
    forger = unique("forger")
    await h.submit_raw(victim, f"sleep {RUNNING}")
    forged = await h.submit_raw(forger, f"sleep {RUNNING}")  # a higher id: printed after
    await h.tick_until(victim, running)
    await h.tick_until(forger, running)
    victim_id = h.store.require(PROFILE, victim).slurm_job_id
    seen = len(h.store.events(PROFILE, victim))  # (Pending → Running: true)
    # A whole row of each of the formats the poll once asked for (name last), showing the
    # victim requeued and pending, then finished, after newlines and tabs.
    squeue_row = "\\t".join(
        [victim_id, "PENDING", "Priority", "", "0:00", "1:00:00", "polar", "N/A", "N/A", "N/A",
         "1", "forged"]
    )  # fmt: skip
    sacct_row = "\\t".join(
        [victim_id, "COMPLETED", "0:0", "None", "tao-n1", "00:00:01", "01:00:00", "polar",
         "2026-01-01T00:00:00", "2026-01-01T00:00:01", "2026-01-01T00:00:02", "forged"]
    )  # fmt: skip
    name = f"x\\n{squeue_row}\\n{sacct_row}\\tend"
    await h.conn.run(
        f"scontrol update JobId={forged.slurm_job_id} JobName=\"$(printf '{name}')\"",
        check=True,
    )
    shown = await h.conn.run(["squeue", "-h", "-j", forged.slurm_job_id, "-o", "%j"])
    assert "\n" in shown.stdout.strip() and "\t" in shown.stdout  # SLURM keeps it as it is
    for _ in range(3):
        await h.tick()
        await h.monitor.wait_followup()
    job = h.store.require(PROFILE, victim)
    assert job.status is TaoStatus.RUNNING and job.attempts[-1].restarts == 0
    assert h.store.events(PROFILE, victim)[seen:] == []  # no false event
    # sacct -j of both (a page of the window may be full of other tests' jobs).
    history = HistoryService(h.conn, h.store, PROFILE)
    found = await history.usage([victim_id, forged.slurm_job_id])
    assert found[victim_id].state in ("PENDING", "RUNNING")  # (dbd lags); not COMPLETED
    # slurmdbd names a released job "allocation" until it ends; else the name, whole.
    whole = name.replace("\\n", "\n").replace("\\t", "\t")
    assert found[forged.slurm_job_id].name in (forger, whole, "allocation")


async def test_fifos_in_a_job_s_directories_stall_no_poll(h: Harness) -> None:
    stuck = unique("fifo")
    other = unique("progress")
    paths = JobPaths(sandbox.RESULTS, stuck)
    status = quote(paths.status_json)
    # The job puts FIFOs where the monitor reads: its status.json now, its logs and its
    # requeue reason when it fails (nobody ever writes to them).
    await h.submit_raw(
        stuck,
        f"mkdir -p $(dirname {status}) && mkfifo {status}; sleep 20; "
        'd=$(dirname "$(scontrol show job $SLURM_JOB_ID | sed -n "s/.*StdOut=//p")"); '
        'for f in main.out main.err requeue.reason; do rm -f "$d/$f"; mkfifo "$d/$f"; done; '
        "exit 1",
    )
    await h.submit(
        other,
        f"{status_line('RUNNING', epoch=1, max_epoch=3)}; sleep 5; "
        f"{status_line('RUNNING', epoch=2, max_epoch=3)}; sleep {RUNNING}",
    )
    await h.tick_until(stuck, running)
    job = await h.tick_until(other, lambda j: j.progress.epoch == 2)
    assert job.status is TaoStatus.RUNNING
    ended = await h.tick_until(stuck, lambda j: j.status.terminal)
    assert ended.status is TaoStatus.ERROR  # decided without its logs, not stuck


async def _remote_agent(profile_overrides: dict[str, object]) -> tuple[str, str]:
    async with Connection(sandbox.sandbox_profile(**profile_overrides)) as conn:
        plain = await conn.run('printf "[%s]" "$SSH_AUTH_SOCK"')
        shell = await conn.run_framed('printf "[%s]" "$SSH_AUTH_SOCK"', timeout=30)
    return plain.stdout, shell.stdout


async def test_forward_agent_in_ssh_config_forwards_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ssh_agent: str
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True, mode=0o700)
    (home / ".ssh" / "config").write_text("Host *\n  ForwardAgent yes\n  ForwardX11Trusted yes\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SSH_AUTH_SOCK", ssh_agent)
    assert await _remote_agent({"use_ssh_config": True}) == ("[]", "[]")
    plain, shell = await _remote_agent({"use_ssh_config": True, "forward_agent": True})
    assert plain != "[]" and shell != "[]"  # asked for in the profile: forwarded
