"""The state DB on its bad days (issue 24): a file written by every earlier release, a network
file system under it, another process holding its lock, a damaged file."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tao_slurm_tui import config
from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.errors import OperationFailed
from tao_slurm_tui.services import store as store_module
from tao_slurm_tui.services import store_file
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.services.store_file import Mount, parse_mounts
from tao_slurm_tui.services.store_schema import SCHEMA_VERSION

OLD = Path(__file__).resolve().parents[1] / "faults" / "old_state_dbs"


def old_db(tmp_path: Path, version: int) -> Path:
    """The file a release with schema ``version`` wrote (make_old_state_dbs.py, from its own
    code), restored from its dump."""
    path = tmp_path / "state.db"
    db = sqlite3.connect(path)
    db.executescript((OLD / f"v{version}.sql").read_text())
    db.execute("PRAGMA journal_mode = WAL")  # as every release so far opened it
    db.close()
    return path


# ----------------------------------------------------------------------------- old releases


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_a_file_of_every_earlier_schema_keeps_every_job(tmp_path: Path, version: int) -> None:
    path = old_db(tmp_path, version)
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == version
    before = {tuple(r) for r in raw.execute("SELECT profile, id, status, message FROM jobs")}
    attempts = raw.execute("SELECT job_id, number, slurm_job_id, state FROM attempts").fetchall()
    events = raw.execute("SELECT job_id, kind, text FROM events ORDER BY seq").fetchall()
    raw.close()
    with JobStore(path) as s:
        assert s.schema_version == SCHEMA_VERSION
        jobs = {(j.profile, j.id): j for j in s.list_jobs()}
        assert {(p, i, str(j.status), j.message) for (p, i), j in jobs.items()} == before
        assert len(jobs) == 5
        dino = jobs[("sandbox", "dino-train")]
        assert dino.status is TaoStatus.RUNNING and dino.submitted
        assert [(a.number, a.slurm_job_id, a.state) for a in dino.attempts] == [
            (0, "101", "NODE_FAIL"),
            (1, "117", "RUNNING"),
        ]
        assert dino.attempts[0].nodes == "tao-n2" and dino.attempts[1].login_host == "login2"
        assert dino.attempts[0].restarts == 1
        # Columns later releases added read as their defaults (or what was written).
        assert dino.attempts[0].timeout_restarts == (1 if version >= 2 else 0)
        assert dino.progress.epoch == 3 and dino.progress.kpi == {"loss": 0.42}
        assert dino.spec["num_gpus"] == 4 and dino.plan == {}
        evaluate = jobs[("sandbox", "pl-1-evaluate")]
        assert (evaluate.pipeline_id, evaluate.pipeline_step) == (
            ("pl-1", 1) if version >= 3 else ("", 0)
        )
        assert sorted(a.slurm_job_id for j in jobs.values() for a in j.attempts) == sorted(
            r[2] for r in attempts
        )
        assert [(e.kind, e.text) for e in s.events("sandbox", "dino-train")] == [
            (k, t) for j, k, t in events if j == "dino-train"
        ]
        # The migrated file takes new writes, and the monitor's change numbers work on it.
        seq, _ = s.changes()
        s.update_job("sandbox", "dino-train", message="seen by the new release")
        assert [j.id for j in s.jobs_changed_since("sandbox", seq)] == ["dino-train"]
    with JobStore(path) as again:  # reopened: nothing migrates twice
        assert len(again.list_jobs()) == 5


# ----------------------------------------------------------------------------- network homes

MOUNTS = """\
/dev/vda1 / ext4 rw,relatime 0 0
tmpfs /tmp tmpfs rw 0 0
filer:/export/home /home nfs4 rw,relatime,vers=4.2,hard,proto=tcp 0 0
filer:/old /home/old nfs rw,vers=3,nolock,local_lock=all 0 0
//nas/lab /mnt/lab\\040share cifs rw,vers=3.1.1 0 0
alice@login:/home/alice /mnt/cluster fuse.sshfs rw,nosuid,nodev 0 0
lustre@o2ib:/scratch /scratch lustre rw,flock 0 0
"""


@pytest.mark.parametrize(
    ("where", "fstype", "network", "local_locks"),
    [
        ("/home/alice/.local/share/tao-slurm-tui/state.db", "nfs4", True, False),
        ("/home/old/bob/state.db", "nfs", True, True),
        ("/mnt/lab share/x/state.db", "cifs", True, False),
        ("/mnt/cluster/state.db", "fuse.sshfs", True, True),
        ("/scratch/u/state.db", "lustre", True, False),
        ("/tmp/state.db", "tmpfs", False, False),
        ("/var/lib/state.db", "ext4", False, False),
        ("/homework/state.db", "ext4", False, False),  # /home is no prefix of /homework
    ],
)
def test_the_file_system_under_a_path_comes_from_the_mount_table(
    where: str, fstype: str, network: bool, local_locks: bool
) -> None:
    mount = store_file.mount_of(where, parse_mounts(MOUNTS))
    assert mount is not None and mount.fstype == fstype
    assert (mount.network, mount.local_locks) == (network, local_locks)


def fake_mounts(tmp_path: Path, fstype: str, options: str = "rw") -> list[Mount]:
    """This machine's mounts, with ``tmp_path`` mounted from a file server as ``fstype``."""
    real = parse_mounts(store_file.MOUNTS.read_text())
    return [*real, *parse_mounts(f"filer:/x {tmp_path.resolve()} {fstype} {options} 0 0")]


def journal_mode_on_disk(path: Path) -> str:
    db = sqlite3.connect(path)
    try:
        return str(db.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        db.close()


def test_a_state_db_on_nfs_uses_a_rollback_journal_with_one_notice(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with JobStore(path, mounts=fake_mounts(tmp_path, "nfs4")) as s:
        s.create_job(store_module.JobRecord(id="a", profile="p"))
        assert s.journal_mode == "delete"
        assert s.notice.count(".") >= 1 and "\n" not in s.notice
        assert "network file system (nfs4" in s.notice and str(path) in s.notice
        assert "WAL" in s.notice and "same jobs" in s.notice
        # What SQLite really does with the file: no -wal / -shm beside it.
        assert journal_mode_on_disk(path) == "delete"
        assert not Path(f"{path}-wal").exists() and not Path(f"{path}-shm").exists()
        assert [p.name for p in tmp_path.iterdir()] == ["state.db"]


def test_a_wal_file_moved_to_nfs_leaves_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with JobStore(path) as s:  # written on a local disk
        s.create_job(store_module.JobRecord(id="a", profile="p"))
    assert journal_mode_on_disk(path) == "wal"
    with JobStore(path, mounts=fake_mounts(tmp_path, "nfs", "rw,vers=3")) as s:
        assert s.journal_mode == "delete" and [j.id for j in s.list_jobs()] == ["a"]
    assert journal_mode_on_disk(path) == "delete"


def test_locks_that_stay_on_one_machine_are_named_in_the_notice(tmp_path: Path) -> None:
    with JobStore(tmp_path / "s.db", mounts=fake_mounts(tmp_path, "fuse.sshfs")) as s:
        s.create_job(store_module.JobRecord(id="a", profile="p"))
        assert "one machine at a time" in s.notice and "TAO_SLURM_TUI_STATE_DB" in s.notice


def test_a_local_disk_keeps_wal_and_says_nothing(tmp_path: Path) -> None:
    with JobStore(tmp_path / "s.db") as s:
        s.create_job(store_module.JobRecord(id="a", profile="p"))
        assert (s.journal_mode, s.notice) == ("wal", "")


def test_two_machines_sharing_a_home_write_one_file_in_turn(tmp_path: Path) -> None:
    """Two processes (the two terminals) writing the same DB on the "network" home at once:
    every write lands, none is lost, and the file stays in rollback-journal mode."""
    path = tmp_path / "state.db"
    mounts = fake_mounts(tmp_path, "nfs4")
    with JobStore(path, mounts=mounts) as s:
        s.create_job(store_module.JobRecord(id="shared", profile="p"))
    script = (
        "import sys\n"
        "from tao_slurm_tui.services.store import JobStore\n"
        "from tao_slurm_tui.services.store_file import parse_mounts\n"
        "from tao_slurm_tui.core.models import JobRecord\n"
        f"mounts = parse_mounts({'filer:/x ' + str(tmp_path.resolve()) + ' nfs4 rw 0 0'!r})\n"
        f"s = JobStore({str(path)!r}, mounts=mounts)\n"
        "assert s.journal_mode == 'delete', s.journal_mode\n"
        "for i in range(40):\n"
        "    s.create_job(JobRecord(id=f'{sys.argv[1]}-{i}', profile='p'))\n"
        "    s.add_event('p', 'shared', 'note', sys.argv[1])\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, name], stderr=subprocess.PIPE, text=True)
        for name in ("left", "right")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    with JobStore(path, mounts=mounts) as s:
        assert len(s.list_jobs("p")) == 81
        assert sorted(e.text for e in s.events("p", "shared")) == ["left"] * 40 + ["right"] * 40
    assert journal_mode_on_disk(path) == "delete"


def test_the_state_db_can_be_put_on_a_local_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(config.STATE_DB_VARIABLE, str(tmp_path / "local" / "state.db"))
    assert config.state_db_path() == tmp_path / "local" / "state.db"
    monkeypatch.setenv(config.STATE_DB_VARIABLE, " ")
    assert config.state_db_path() == config.data_dir() / "state.db"


# ----------------------------------------------------------------------------- locked


HOLDER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA locking_mode = EXCLUSIVE")
db.execute("BEGIN EXCLUSIVE")
db.execute("UPDATE jobs SET message = 'held'")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
db.execute("COMMIT")
"""


def hold_lock(path: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_a_lock_held_for_a_moment_is_waited_for(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with JobStore(path) as s:
        s.create_job(store_module.JobRecord(id="a", profile="p"))
    holder = hold_lock(path, 1.5)
    try:
        started = time.monotonic()
        with JobStore(path) as s:
            s.update_job("p", "a", message="mine")
            assert s.require("p", "a").message == "mine"
        assert time.monotonic() - started >= 0.5  # it waited, it did not fail
    finally:
        holder.wait(timeout=30)


def test_a_lock_held_too_long_names_the_process_holding_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.db"
    with JobStore(path) as s:
        s.create_job(store_module.JobRecord(id="a", profile="p"))
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 1000)
    holder = hold_lock(path, 30)
    try:
        with pytest.raises(OperationFailed) as info, JobStore(path) as s:
            s.update_job("p", "a", message="mine")
        text = str(info.value)
        assert f"process {holder.pid} (python" in text, text
        assert "stayed locked for 1 s" in text and text.endswith("try again.")
        assert "Traceback" not in text and "\n" not in text
    finally:
        holder.kill()
        holder.wait()
    assert store_file.lock_holders(path) == []


# ----------------------------------------------------------------------------- damaged


def test_a_damaged_page_is_found_at_open_and_the_file_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with JobStore(path) as s:
        for i in range(300):
            s.create_job(store_module.JobRecord(id=f"job-{i}", profile="p", message="x" * 200))
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 8 * page
    data[3 * page : 5 * page] = b"\xa5" * (2 * page)  # two pages of an index / table overwritten
    path.write_bytes(bytes(data))
    with JobStore(path, clock=lambda: 1_764_600_000.0) as s:
        aside = s.recovered_from
        assert aside is not None and aside.read_bytes() == bytes(data)  # kept as it was
        assert aside.name == "state.db.corrupt-" + time.strftime(
            "%Y%m%d-%H%M%S", time.localtime(1_764_600_000)
        )
        assert s.list_jobs() == []
    # The next open finds a good file: nothing moves again.
    with JobStore(path) as s:
        assert s.recovered_from is None
    assert len(list(tmp_path.glob("state.db.corrupt-*"))) == 1
