"""The state DB's bad days, end to end on the sandbox: a damaged file (the jobs come back from
the cluster), a file of every earlier release with a job still running (monitoring carries on),
a file another program keeps locked (the CLI waits, then names it), and a network home (the CLI
says once which journal mode it chose). The store's own cases are
tests/unit/test_store_bad_days.py."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from tao_slurm_tui.cli import main
from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.services import store_file
from tao_slurm_tui.services.store import JobStore
from tests import sandbox
from tests.faults.conftest import Cli
from tests.faults.test_faults import assert_no_orphan, live_jobs, one_sentence
from tests.integration.conftest import harness
from tests.integration.monitor_helpers import IMAGE, unique
from tests.unit.test_store_bad_days import hold_lock

# The state DB is each test's own (tmp_path): nothing another test uses is disturbed.
pytestmark = [pytest.mark.slow, pytest.mark.own_fault]

OLD = Path(__file__).resolve().parent / "old_state_dbs"


def spec_file(tmp_path: Path, name: str, command: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\nimage = "{IMAGE}"\ncommand = "{command}"\nnum_gpus = 0\n'
        "cpus_per_task = 1\ntime_hours = 0.25\nuse_sqsh = false\ncontainer_mounts = []\n"
    )
    return path


def state_db(cli: Cli) -> Path:
    return Path(cli.env["XDG_DATA_HOME"]) / "tao-slurm-tui" / "state.db"


def status(cli: Cli) -> dict[str, dict[str, object]]:
    result = cli.run("status", "--json")
    assert result.returncode == 0, result.stderr
    return {j["id"]: j for j in json.loads(result.stdout)}


def test_a_damaged_state_db_is_moved_aside_and_the_jobs_recovered(cli: Cli, tmp_path: Path) -> None:
    running, done = unique("fdbrun"), unique("fdbdone")
    # Its own results root: the jobs recovered are those whose meta files are there (the
    # sandbox user's other jobs live under the shared one).
    base = f"{sandbox.RESULTS}/{unique('fdbroot')}"
    cli.config.write_text(sandbox.config_toml().replace(sandbox.RESULTS, base))
    try:
        for name, command in ((running, "sleep 300"), (done, "true")):
            submitted = cli.run("submit", str(spec_file(tmp_path, name, command)))
            assert submitted.returncode == 0, submitted.stderr
        ids = {name: str(job["slurm_job_id"]) for name, job in status(cli).items()}
        sandbox.wait_for(lambda: sandbox.job_state(ids[done]) == "COMPLETED", 120, "job done")
        sandbox.wait_state(ids[running], {"RUNNING"}, 120)
        db = state_db(cli)
        damaged = b"SQLite format 3\x00" + b"\xa5" * 8192  # a header, then garbage
        db.write_bytes(damaged)
        for side in ("-wal", "-shm"):
            Path(f"{db}{side}").unlink(missing_ok=True)
        # The next command says what happened in words, and the jobs are back.
        result = cli.run("status", "--json")
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
        assert any("was damaged; it was moved to" in ln and "nothing was deleted" in ln
                   for ln in lines), result.stderr  # fmt: skip
        assert any("2 job(s) of profile 'sandbox' were recovered from the cluster" in ln
                   for ln in lines), result.stderr  # fmt: skip
        for line in lines:
            one_sentence(line)
        (aside,) = db.parent.glob("state.db.corrupt-*")
        assert aside.read_bytes() == damaged, "the damaged file was changed, not kept aside"
        jobs = {j["id"]: j for j in json.loads(result.stdout)}
        assert str(jobs[running]["slurm_job_id"]) == ids[running]
        assert str(jobs[done]["slurm_job_id"]) == ids[done]
        assert jobs[done]["status"] == str(TaoStatus.COMPLETE)
        assert jobs[running]["status"] in (str(TaoStatus.RUNNING), str(TaoStatus.PENDING))
        # Monitoring carries on (the next status polls the recovered job), and nothing is
        # recovered twice.
        again = cli.run("status", "--json")
        assert "recovered" not in again.stderr and "damaged" not in again.stderr
        assert json.loads(again.stdout)[0]["status"] in ("Running", "Complete")
        assert_no_orphan(running, {ids[running]})
        cancelled = cli.run("cancel", running)
        assert cancelled.returncode == 0, cancelled.stderr
        sandbox.wait_for(lambda: not live_jobs(running), 60, "the recovered job cancelled")
    finally:
        cli.run("cancel", running)


@pytest.mark.parametrize("version", [1, 2, 3, 4])
async def test_an_earlier_release_s_state_db_with_a_running_job_carries_on(
    sandbox_profile: object, tmp_path: Path, version: int
) -> None:
    """The file as each earlier release wrote it (schemas 1 to 4, WAL), with a job that is
    really running on the cluster: the new release migrates it and monitors the job to its end,
    no second attempt."""
    name = unique(f"fdbv{version}")
    out = sandbox.ssh(
        sandbox.quoted("sbatch", "--parsable", "-J", name, "-p", "polar", "-c", "1",
                       "-o", "/dev/null", "--wrap", "sleep 8")
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    slurm_id = out.stdout.strip()
    path = tmp_path / "state.db"
    db = sqlite3.connect(path)
    db.executescript((OLD / f"v{version}.sql").read_text())
    db.execute(
        "UPDATE jobs SET id = ?, base_results_dir = ? WHERE id = 'dino-train'",
        (name, sandbox.RESULTS),
    )
    db.execute("UPDATE attempts SET job_id = ? WHERE job_id = 'dino-train'", (name,))
    db.execute("UPDATE events SET job_id = ? WHERE job_id = 'dino-train'", (name,))
    db.execute("UPDATE attempts SET slurm_job_id = ? WHERE job_id = ? AND number = 1",
               (slurm_id, name))  # fmt: skip
    db.commit()
    db.close()
    store = JobStore(path)
    async with harness(sandbox.sandbox_profile(), store) as h:
        job = await h.tick_until(name, lambda j: j.status.terminal, timeout=120)
        assert job.status is TaoStatus.COMPLETE, job.status_json()
        assert [a.slurm_job_id for a in job.attempts] == ["101", slurm_id]
        assert job.attempts[0].state == "NODE_FAIL"  # the old release's history is kept
        assert len(h.store.list_jobs()) == 5


def test_a_state_db_on_a_network_home_is_said_once(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI (in this process) on a home the mount table says is NFS (the table is a file
    standing in for /proc/self/mounts: this machine runs no NFS server): one stderr line the
    first time the file is written, a rollback journal on disk, silence afterwards."""
    for var, value in cli.env.items():
        if var.startswith("XDG_"):
            monkeypatch.setenv(var, value)
    data = Path(cli.env["XDG_DATA_HOME"])
    mounts = tmp_path / "mounts"
    mounts.write_text(
        store_file.MOUNTS.read_text() + f"filer:/export/home {data} nfs4 rw,vers=4.2,hard 0 0\n"
    )
    monkeypatch.setattr(store_file, "MOUNTS", mounts)
    name = unique("fdbnfs")
    config = str(cli.config)
    try:
        assert main(["--config", config, "submit", str(spec_file(tmp_path, name, "true"))]) == 0
        first = capsys.readouterr().err
        notice = [ln for ln in first.splitlines() if "network file system" in ln]
        assert len(notice) == 1 and "(nfs4 at " in notice[0], first
        one_sentence(notice[0])
        db = sqlite3.connect(state_db(cli))
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        db.close()
        assert main(["--config", config, "status"]) == 0
        assert "network file system" not in capsys.readouterr().err
    finally:
        main(["--config", config, "cancel", name])


def test_a_state_db_another_program_keeps_locked(cli: Cli, tmp_path: Path) -> None:
    """Another program (here a python holding an exclusive transaction; at a site, a stuck
    second terminal or a backup tool) keeps the state DB locked: a lock of a moment is waited
    for, one held for good is one sentence naming the process, exit 1, and the file is intact
    for the next command once the holder lets go."""
    name = unique("fdblock")
    submitted = cli.run("submit", str(spec_file(tmp_path, name, "true")))
    assert submitted.returncode == 0, submitted.stderr
    db = state_db(cli)

    try:
        holder = hold_lock(db, 3)
        started = time.monotonic()
        waited = cli.run("status", "--json")
        holder.wait(timeout=30)
        assert waited.returncode == 0, waited.stderr
        assert time.monotonic() - started >= 2, "the lock was not there to wait for"
        assert name in {j["id"] for j in json.loads(waited.stdout)}

        holder = hold_lock(db, 120)
        try:
            refused = cli.run("status", "--json")
            assert refused.returncode == 1, refused.stdout + refused.stderr
            one_sentence(refused.stderr)
            assert f"process {holder.pid} (python" in refused.stderr, refused.stderr
        finally:
            holder.kill()
            holder.wait()
        after = status(cli)  # the holder gone: everything as it was, nothing moved aside
        assert name in after
        assert not list(db.parent.glob("state.db.corrupt-*"))
    finally:
        cli.run("cancel", name)
