"""The SQLite job store: schema, round trips, policies and concurrent use."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tao_slurm_tui import config
from tao_slurm_tui.core.models import Attempt, JobRecord, Progress, TaoStatus
from tao_slurm_tui.errors import BadInput, OperationFailed
from tao_slurm_tui.services import store as store_module
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.services.store_schema import MIGRATIONS, SCHEMA_VERSION


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += 1
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> Iterator[JobStore]:
    s = JobStore(tmp_path / "state.db", clock=Clock())
    yield s
    s.close()


def record(job_id: str = "dino-1", profile: str = "sandbox", **kw: object) -> JobRecord:
    return JobRecord(
        id=job_id,
        profile=profile,
        spec={"name": job_id, "num_gpus": 4, "env": {"A": "1"}},
        base_results_dir="/home/slurmtest/tao",
        **kw,  # type: ignore[arg-type]
    )


def test_fresh_file_is_migrated_and_private(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "state.db"
    with JobStore(path) as s:
        assert s.schema_version == SCHEMA_VERSION == len(MIGRATIONS)
        assert s.list_jobs() == [] and s.get("sandbox", "dino-1") is None
        # Reading leaves nothing behind: the file is created by the first write.
        assert not path.parent.exists()
        s.create_job(record())
    assert (path.stat().st_mode & 0o777) == 0o600
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"jobs", "attempts", "events"} <= tables
    db.close()
    # Reopening an up-to-date file changes nothing.
    with JobStore(path) as s:
        assert s.schema_version == SCHEMA_VERSION


def test_default_path_lives_in_the_data_dir() -> None:
    path = config.state_db_path()
    with JobStore(path) as s:
        s.create_job(record())
        assert s.path == path and path.exists()


def test_a_store_opened_before_the_file_existed_sees_later_writes(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    early = JobStore(path)  # e.g. the TUI, opened before the first job ever
    try:
        before = early.version()
        with JobStore(path) as other:  # a CLI submit creates the file
            other.create_job(record())
        assert early.version() != before  # a monitor's cache sees the change
        assert early.get("sandbox", "dino-1") is not None
    finally:
        early.close()


@pytest.mark.parametrize(
    ("statement", "detail"),
    [
        ("UPDATE jobs SET status = 'Exploded'", "Exploded"),
        ("UPDATE jobs SET spec = '{not json'", "Expecting"),
        ("UPDATE jobs SET progress = '[1]'", "JSON object"),
        ("UPDATE attempts SET slurm_job_id = '1;rm -rf ~'", "not a SLURM job id"),
    ],
)
def test_a_damaged_row_is_one_sentence(tmp_path: Path, statement: str, detail: str) -> None:
    path = tmp_path / "state.db"
    with JobStore(path) as s:
        s.create_job(record())
        s.add_attempt("sandbox", "dino-1", Attempt(number=0, slurm_job_id="12"))
    db = sqlite3.connect(path)
    db.execute(statement)
    db.commit()
    db.close()
    with JobStore(path) as s, pytest.raises(OperationFailed, match="damaged record") as info:
        s.list_jobs("sandbox")
    assert "'dino-1'" in str(info.value) and detail in str(info.value)


def test_a_lock_held_by_another_writer_gives_the_right_advice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.db"
    with JobStore(path) as s:
        s.create_job(record())
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 100)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another instance in the middle of a write
    try:
        with pytest.raises(OperationFailed) as info, JobStore(path) as s:
            s.update_job("sandbox", "dino-1", message="x")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    text = str(info.value)
    assert "locked" in text and "another tao-slurm-tui" in text and "move it aside" not in text


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    db.close()
    with pytest.raises(OperationFailed, match="newer tao-slurm-tui"):
        JobStore(path)


def test_garbage_file_is_moved_aside_never_emptied(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    garbage = b"this is not sqlite" * 100
    path.write_bytes(garbage)
    with JobStore(path) as s:
        assert s.recovered_from is not None and s.recovered_from.read_bytes() == garbage
        assert s.recovered_from.name.startswith("state.db.corrupt-")
        assert s.list_jobs() == [] and s.schema_version == SCHEMA_VERSION


def test_round_trip(store: JobStore) -> None:
    progress = Progress(
        epoch=2,
        max_epoch=9,
        eta="0:10:00",
        kpi={"loss": 0.4},
        status="RUNNING",
        time_per_epoch="0:01:00",
    )
    created = store.create_job(record(message="queued", progress=progress))
    assert created.created_at > 0 and created.updated_at >= created.created_at
    got = store.get("sandbox", "dino-1")
    assert got == created
    assert got is not None
    assert got.spec == {"name": "dino-1", "num_gpus": 4, "env": {"A": "1"}}
    assert got.progress == progress and got.progress.fraction == 0.3  # 3 of 10 epochs
    assert got.status is TaoStatus.PENDING and not got.submitted
    assert store.get("sandbox", "nope") is None
    assert store.get("other", "dino-1") is None


def test_attempts_and_submission(store: JobStore) -> None:
    store.create_job(record())
    first = Attempt(number=0, slurm_job_id="13", login_host="127.0.0.1")
    job = store.mark_submitted("sandbox", "dino-1", first)
    assert job.submitted and job.slurm_job_id == "13"
    assert store.events("sandbox", "dino-1")[-1].kind == "submitted"
    job = store.update_attempt(
        "sandbox", "dino-1", 0, state="FAILED", exit_code="1:0", nodes="vm", retry_reason="NCCL"
    )
    assert job.attempts[0].state == "FAILED" and job.attempts[0].retry_reason == "NCCL"
    job = store.add_attempt("sandbox", "dino-1", Attempt(number=1, slurm_job_id="14", restarts=1))
    assert [a.slurm_job_id for a in job.attempts] == ["13", "14"]
    assert job.retries == 2  # one resubmission plus one SLURM requeue
    with pytest.raises(ValueError, match="already has an attempt 1"):
        store.add_attempt("sandbox", "dino-1", Attempt(number=1, slurm_job_id="15"))
    job = store.save_attempt("sandbox", "dino-1", Attempt(number=1, slurm_job_id="15"))
    assert job.attempts[1].slurm_job_id == "15" and job.attempts[1].restarts == 0
    with pytest.raises(KeyError):
        store.update_attempt("sandbox", "dino-1", 7, state="X")
    with pytest.raises(TypeError, match="unknown attempt field"):
        store.update_attempt("sandbox", "dino-1", 0, password="x")


def test_update_job_fields(store: JobStore) -> None:
    store.create_job(record())
    job = store.update_job(
        "sandbox",
        "dino-1",
        status=TaoStatus.RUNNING,
        slurm_state="RUNNING",
        progress=Progress(epoch=1),
        sqsh_job_id="12",
    )
    assert job.status is TaoStatus.RUNNING and job.progress.epoch == 1
    job = store.update_job("sandbox", "dino-1", status="Error", progress={"eta": "1:00"})
    assert job.status is TaoStatus.ERROR and job.progress.eta == "1:00"
    with pytest.raises(TypeError, match="unknown job field"):
        store.update_job("sandbox", "dino-1", ngc_key="secret")
    with pytest.raises(KeyError):
        store.update_job("sandbox", "ghost", message="x")
    with pytest.raises(ValueError):
        store.update_job("sandbox", "dino-1", status="Weird")


def test_same_name_policy(store: JobStore) -> None:
    store.create_job(record())
    with pytest.raises(BadInput, match=r"still Pending.*another name"):
        store.create_job(record())
    store.update_job("sandbox", "dino-1", status=TaoStatus.COMPLETE)
    with pytest.raises(BadInput, match=r"ended Complete.*another name"):
        store.create_job(record())
    # Another profile may use the name.
    assert store.create_job(record(profile="other")).profile == "other"


def test_list_active_and_delete(store: JobStore) -> None:
    for name, status in (("a", TaoStatus.RUNNING), ("b", TaoStatus.COMPLETE), ("c", None)):
        store.create_job(record(name))
        if status:
            store.update_job("sandbox", name, status=status)
    store.create_job(record("z", profile="other"))
    store.add_attempt("sandbox", "a", Attempt(number=0, slurm_job_id="1"))
    assert [j.id for j in store.list_jobs("sandbox")] == ["a", "b", "c"]
    assert [j.id for j in store.active("sandbox")] == ["a", "c"]
    assert store.active("sandbox")[0].slurm_job_id == "1"
    assert [j.id for j in store.list_jobs()] == ["a", "b", "c", "z"]
    assert [j.id for j in store.list_jobs(include_terminal=False)] == ["a", "c", "z"]
    store.add_event("sandbox", "a", "state", "RUNNING")
    assert store.delete_job("sandbox", "a")
    assert not store.delete_job("sandbox", "a")
    assert store.get("sandbox", "a") is None and store.events("sandbox", "a") == []


def test_events(store: JobStore) -> None:
    store.create_job(record())
    for i in range(5):
        store.add_event("sandbox", "dino-1", "state", f"line {i}")
    events = store.events("sandbox", "dino-1")
    assert [e.text for e in events] == [f"line {i}" for i in range(5)]
    assert [e.text for e in store.events("sandbox", "dino-1", limit=2)] == ["line 3", "line 4"]
    assert events[0].seq < events[-1].seq and events[0].time < events[-1].time
    with pytest.raises(KeyError):
        store.add_event("sandbox", "ghost", "state", "x")


def test_require(store: JobStore) -> None:
    with pytest.raises(BadInput, match="no job 'ghost'"):
        store.require("sandbox", "ghost")


def test_two_stores_on_one_file_see_each_other(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    a, b = JobStore(path), JobStore(path)
    try:
        a.create_job(record())
        assert b.get("sandbox", "dino-1") is not None
        b.update_job("sandbox", "dino-1", status=TaoStatus.RUNNING)
        assert a.get("sandbox", "dino-1").status is TaoStatus.RUNNING  # type: ignore[union-attr]
        # Interleaved writers on the same job.
        for i in range(20):
            (a if i % 2 else b).add_event("sandbox", "dino-1", "tick", str(i))
        assert [e.text for e in a.events("sandbox", "dino-1")] == [str(i) for i in range(20)]
    finally:
        a.close()
        b.close()


WRITER = """
import sys
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.core.models import Attempt
store = JobStore(sys.argv[1])
for i in range(int(sys.argv[2])):
    store.add_event("sandbox", "dino-1", "child", str(i))
    store.update_attempt("sandbox", "dino-1", 0, elapsed=str(i))
store.close()
"""


def test_writer_in_a_subprocess_interleaves_with_this_one(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = JobStore(path)
    store.create_job(record())
    store.add_attempt("sandbox", "dino-1", Attempt(number=0, slurm_job_id="1"))
    n = 150
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(n)])
    try:
        for i in range(n):
            store.add_event("sandbox", "dino-1", "parent", str(i))
            store.update_job("sandbox", "dino-1", message=str(i))
    finally:
        assert child.wait(timeout=60) == 0
    events = store.events("sandbox", "dino-1")
    assert sum(e.kind == "child" for e in events) == n
    assert sum(e.kind == "parent" for e in events) == n
    job = store.get("sandbox", "dino-1")
    assert job is not None
    assert job.message == str(n - 1) and job.attempts[0].elapsed == str(n - 1)
    store.close()


def test_threads_share_one_store(store: JobStore) -> None:
    store.create_job(record())
    errors: list[BaseException] = []

    def work(tag: str) -> None:
        try:
            for i in range(50):
                store.add_event("sandbox", "dino-1", tag, str(i))
                store.get("sandbox", "dino-1")
        except BaseException as exc:  # collected and re-raised by the test thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(f"t{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(store.events("sandbox", "dino-1")) == 200


def test_failed_write_rolls_back(store: JobStore) -> None:
    twice = [Attempt(number=0, slurm_job_id="1"), Attempt(number=0, slurm_job_id="2")]
    with pytest.raises(ValueError, match="already has an attempt 0"):
        store.create_job(record(attempts=twice))
    # The job row written before the failing attempt is gone too.
    assert store.get("sandbox", "dino-1") is None
    assert store.create_job(record()).attempts == []


def test_batch_commits_all_writes_at_once_or_none(store: JobStore, tmp_path: Path) -> None:
    store.create_job(record("a"))
    store.create_job(record("b"))
    before = store.version()
    other = JobStore(store.path)
    with store.batch():
        store.update_job("sandbox", "a", status=TaoStatus.RUNNING)
        store.update_job("sandbox", "b", status=TaoStatus.RUNNING)
        # Not visible to another connection until the batch ends.
        assert other.require("sandbox", "a").status is TaoStatus.PENDING
    assert other.require("sandbox", "a").status is TaoStatus.RUNNING
    other.close()
    assert store.version() != before
    assert {j.status for j in store.list_jobs("sandbox")} == {TaoStatus.RUNNING}
    with pytest.raises(RuntimeError), store.batch():
        store.update_job("sandbox", "a", status=TaoStatus.ERROR)
        raise RuntimeError("half way")
    assert store.require("sandbox", "a").status is TaoStatus.RUNNING  # rolled back


def test_timeout_requeues_are_stored_and_spend_no_infrastructure_budget(tmp_path: Path) -> None:
    with JobStore(tmp_path / "state.db") as s:
        s.create_job(
            JobRecord(
                id="t",
                profile="p",
                submitted=True,
                attempts=[
                    Attempt(0, "5", restarts=3, timeout_restarts=2),
                    Attempt(1, "9", restarts=1),
                ],
            )
        )
        job = s.require("p", "t")
    assert [a.timeout_restarts for a in job.attempts] == [2, 0]
    assert job.retries == 5 and job.infra_retries == 3


def test_a_version_1_file_gains_the_timeout_column(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[0])
    db.execute("PRAGMA user_version = 1")
    db.close()
    with JobStore(path) as s:
        assert s.schema_version == SCHEMA_VERSION
        s.create_job(JobRecord(id="t", profile="p", attempts=[Attempt(0, "5")]))
        assert s.require("p", "t").attempts[0].timeout_restarts == 0


def test_change_numbers_follow_every_write_of_a_job_row(store: JobStore, tmp_path: Path) -> None:
    seq0, deletes0 = store.changes()
    store.create_job(record("a"))
    store.create_job(record("b"))
    seq1, _ = store.changes()
    assert seq1 == seq0 + 2
    assert [j.id for j in store.jobs_changed_since("sandbox", seq0)] == ["a", "b"]
    store.update_job("sandbox", "b", message="x")
    assert [j.id for j in store.jobs_changed_since("sandbox", seq1)] == ["b"]
    seq2, _ = store.changes()
    store.add_attempt("sandbox", "a", Attempt(number=0, slurm_job_id="5"))
    (changed,) = store.jobs_changed_since("sandbox", seq2)
    assert changed.id == "a" and changed.attempts[0].slurm_job_id == "5"
    seq3, _ = store.changes()
    store.add_event("sandbox", "a", "note", "events do not change the record")
    assert store.jobs_changed_since("sandbox", seq3) == [] and store.changes()[0] == seq3
    # Another connection's writes are numbered in commit order after this one's.
    with JobStore(store.path) as other:
        other.update_job("sandbox", "a", message="y")
    assert [j.message for j in store.jobs_changed_since("sandbox", seq3)] == ["y"]
    assert store.delete_job("sandbox", "b") and store.changes()[1] == deletes0 + 1
    assert not store.delete_job("sandbox", "b") and store.changes()[1] == deletes0 + 1


def test_a_version_3_file_gains_change_numbers(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    db = sqlite3.connect(path)
    for step in MIGRATIONS[:3]:
        db.executescript(step)
    db.execute("PRAGMA user_version = 3")
    db.execute(
        "INSERT INTO jobs (profile, id, created_at, updated_at) VALUES ('p', 'old', 1.0, 1.0)"
    )
    db.commit()
    db.close()
    with JobStore(path) as s:
        assert s.schema_version == SCHEMA_VERSION
        assert s.changes() == (0, 0)
        assert [j.id for j in s.list_jobs("p")] == ["old"]
        s.update_job("p", "old", message="seen")
        assert [j.id for j in s.jobs_changed_since("p", 0)] == ["old"]
