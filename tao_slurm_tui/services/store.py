"""The durable job store: SQLite (stdlib), shared by the TUI and CLI commands at the same time.

One file, ``config.state_db_path()`` by default, holding jobs (keyed by profile + stable id),
their SLURM attempts and an event log. WAL mode (a rollback journal on a network file system:
:mod:`~tao_slurm_tui.services.store_file`) lets readers and one writer work at once; a busy
timeout makes a second process wait; every write is one ``BEGIN IMMEDIATE`` transaction.
The schema steps are :data:`~tao_slurm_tui.services.store_schema.MIGRATIONS` (append only);
:mod:`~tao_slurm_tui.services.store_rows` reads rows back; :mod:`~tao_slurm_tui.services.locks`
are the cross-process locks next to the file.

The store keeps exactly what it is given and nothing else. It never holds a secret: callers pass
specs whose secrets were refused by validation (``env`` may not carry keys), and no credential
is ever handed to it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tao_slurm_tui.config import create_private
from tao_slurm_tui.core.models import Attempt, JobRecord, Progress, TaoStatus
from tao_slurm_tui.errors import BadInput, OperationFailed
from tao_slurm_tui.services import store_file
from tao_slurm_tui.services.store_rows import (
    ATTEMPT_FIELDS,
    all_attempts,
    attempts_of,
    insert_attempt,
    job_record,
)
from tao_slurm_tui.services.store_schema import MIGRATIONS, SCHEMA_VERSION, statements

BUSY_TIMEOUT_MS = 10_000
"""How long a write waits for another process's transaction before giving up."""

_JOB_FIELDS = (
    "spec",
    "base_results_dir",
    "status",
    "slurm_state",
    "message",
    "progress",
    "submitted",
    "sqsh_job_id",
    "pipeline_id",
    "pipeline_step",
    "plan",
)


@dataclass(frozen=True)
class JobEvent:
    """One line of a job's event log."""

    seq: int
    """Store-wide increasing number (order of writing)."""
    time: float
    """Unix time."""
    kind: str
    """Short tag: ``submitted``, ``state``, ``retry``, ``cancel``, ``error``, ..."""
    text: str


class JobStore:
    """Jobs, attempts and events in one SQLite file; safe across threads and processes."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], float] = time.time,
        mounts: list[store_file.Mount] | None = None,
    ):
        """Open (creating and migrating if needed) the store at ``path``.

        A file SQLite finds damaged is moved aside (:attr:`recovered_from`) and a new one
        created in its place; the back end then recovers the jobs from the cluster.

        Args:
            path: the database file, usually ``config.state_db_path()``.
            clock: time source for ``created_at``/``updated_at``/event times (tests pin it).
            mounts: the mount table (tests); default this machine's ``/proc/self/mounts``.

        Raises:
            OperationFailed: the file cannot be opened, stays locked, or was written by a newer
                version of the app.
        """
        self.path = Path(path)
        self._clock = clock
        self._mounts = mounts
        self.journal_mode = "wal"  # `delete` on a network file system
        self.notice = ""  # the network file system's journal mode, said when it is news
        self.recovered_from: Path | None = None  # where a damaged file was moved
        self._lock = threading.RLock()
        self._batching = False
        # A missing file is created by the first write, not by opening: a dry run, a failed
        # verb or a plain `status` must leave nothing behind. Until then an empty in-memory
        # database with the same schema answers the reads.
        self._virtual = not self.path.exists()
        self._db = self._open(":memory:" if self._virtual else self.path)

    def _open(self, target: str | Path) -> sqlite3.Connection:
        db: sqlite3.Connection | None = None
        try:
            fresh = False
            if isinstance(target, Path):
                # Made 0600 before SQLite opens it (its -wal/-shm files take the same mode).
                fresh = create_private(target)
            # Autocommit mode: transactions are opened explicitly with BEGIN IMMEDIATE.
            db = sqlite3.connect(
                target,
                timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
            if isinstance(target, Path) and fresh:
                with contextlib.suppress(OSError):
                    os.chmod(target, 0o600)
            db.row_factory = sqlite3.Row
            db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._journal(db, target, fresh)
            db.execute("PRAGMA foreign_keys = ON")
            self._migrate(db)
            if isinstance(target, Path) and not fresh:
                store_file.check_integrity(db)
            return db
        except sqlite3.DatabaseError as exc:
            if db is not None:
                db.close()
            if isinstance(target, Path) and store_file.is_damaged(exc):
                # Never emptied in place: the file is kept beside, a new one takes its name,
                # and the back end recovers the jobs from the cluster (``recovered_from``).
                self.recovered_from = store_file.move_aside(target, now=self._clock())
                return self._open(target)
            raise self._db_error(exc) from None
        except OSError as exc:
            raise OperationFailed(
                f"The state database {self.path} cannot be opened ({exc.strerror}); "
                "check the directory's permissions."
            ) from None

    def _journal(self, db: sqlite3.Connection, target: str | Path, fresh: bool) -> None:
        """WAL on a local disk; a rollback journal on a network file system (with a notice)."""
        if not isinstance(target, Path):
            db.execute("PRAGMA journal_mode = WAL")
            return
        choice = store_file.journal_choice(target, store_file.mount_of(target, self._mounts))
        before = str(db.execute("PRAGMA journal_mode").fetchone()[0]).lower()
        self.journal_mode = mode = str(
            db.execute(f"PRAGMA journal_mode = {choice.mode}").fetchone()[0]
        ).lower()
        db.execute(f"PRAGMA synchronous = {choice.synchronous}")
        # Said once: when the file is made, or leaves WAL, on the network file system.
        self.notice = choice.notice if fresh or before != choice.mode else ""
        if mode != choice.mode:
            # WAL cannot be left while another connection has the file open.
            self.notice += (
                f" It is still in {mode} mode because another tao-slurm-tui has it open; "
                "close the others and start again."
            )

    def _db_error(self, exc: sqlite3.DatabaseError) -> OperationFailed:
        return store_file.db_error(self.path, exc, BUSY_TIMEOUT_MS)  # one sentence, with advice

    # ------------------------------------------------------------------ plumbing

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Make every write inside one transaction: one commit for many changes (a monitor
        tick that updates 25 jobs), all or nothing. Other threads wait until it ends."""
        with self._write():
            self._batching = True
            try:
                yield
            finally:
                self._batching = False

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._batching:  # inside batch(): its transaction holds these writes
                yield self._db
                return
            self._attach(create=True)
            with self._transaction(self._db) as db:
                yield db

    def _attach(self, *, create: bool) -> None:
        """Swap the in-memory stand-in for the real file once it exists (another process
        created it) or is about to be written (``create``)."""
        if self._virtual and (create or self.path.exists()):
            memory = self._db
            self._db = self._open(self.path)
            self._virtual = False
            memory.close()

    @contextlib.contextmanager
    def _transaction(self, db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        # BEGIN IMMEDIATE takes the write lock up front: a deferred transaction that upgrades
        # later can fail with "database is locked" without the busy handler helping.
        with self._lock:
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as exc:
                raise self._db_error(exc) from None
            try:
                yield db
            except BaseException:
                with contextlib.suppress(sqlite3.DatabaseError):
                    db.execute("ROLLBACK")
                raise
            else:
                try:
                    db.execute("COMMIT")
                except sqlite3.DatabaseError as exc:
                    with contextlib.suppress(sqlite3.DatabaseError):
                        db.execute("ROLLBACK")
                    raise self._db_error(exc) from None

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        with self._lock:
            self._attach(create=False)
            try:
                yield
            except sqlite3.DatabaseError as exc:
                raise self._db_error(exc) from None

    def _migrate(self, conn: sqlite3.Connection) -> None:
        with self._transaction(conn) as db:
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise OperationFailed(
                    f"The state database {self.path} was written by a newer tao-slurm-tui "
                    f"(schema {version} > {SCHEMA_VERSION}); upgrade tao-slurm-tui."
                )
            for number in range(version + 1, SCHEMA_VERSION + 1):
                for statement in statements(MIGRATIONS[number - 1]):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {number}")

    @property
    def schema_version(self) -> int:
        """The schema version of the open file."""
        with self._reading():
            return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        """Close the connection (the store is unusable afterwards)."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> JobStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ jobs

    def create_job(self, record: JobRecord) -> JobRecord:
        """Record a new job (and any attempts it carries) before it is submitted.

        The stable id is unique per profile, also after the job ended: its remote files
        (``results/<id>``, logs) would collide.

        Raises:
            BadInput: a job with this id already exists in the profile.
        """
        now = self._clock()
        with self._write() as db:
            row = db.execute(
                "SELECT status FROM jobs WHERE profile = ? AND id = ?", (record.profile, record.id)
            ).fetchone()
            if row is not None:
                status = TaoStatus(row["status"])
                if status.terminal:
                    raise BadInput(
                        f"A job named '{record.id}' already exists in profile "
                        f"'{record.profile}' (it ended {status}); give the new job another name."
                    )
                raise BadInput(
                    f"A job named '{record.id}' is still {status} in profile '{record.profile}'; "
                    "give the new job another name or cancel that one first."
                )
            created = record.created_at or now
            db.execute(
                "INSERT INTO jobs (profile, id, spec, base_results_dir, status, slurm_state, "
                "message, progress, submitted, sqsh_job_id, created_at, updated_at, "
                "pipeline_id, pipeline_step, plan, change_seq) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.profile,
                    record.id,
                    json.dumps(record.spec, sort_keys=True),
                    record.base_results_dir,
                    str(record.status),
                    record.slurm_state,
                    record.message,
                    json.dumps(record.progress.to_dict(), sort_keys=True),
                    int(record.submitted),
                    record.sqsh_job_id,
                    created,
                    now,
                    record.pipeline_id,
                    int(record.pipeline_step),
                    json.dumps(record.plan, sort_keys=True),
                    self._next_change(db),
                ),
            )
            for attempt in record.attempts:
                insert_attempt(db, record.profile, record.id, attempt)
            return self._load(db, record.profile, record.id)

    def get(self, profile: str, job_id: str) -> JobRecord | None:
        """The job ``job_id`` of ``profile``, with its attempts, or None."""
        with self._reading():
            row = self._db.execute(
                "SELECT * FROM jobs WHERE profile = ? AND id = ?", (profile, job_id)
            ).fetchone()
            if row is None:
                return None
            return job_record(row, attempts_of(self._db, profile, job_id, self.path), self.path)

    def require(self, profile: str, job_id: str) -> JobRecord:
        """Like :meth:`get`, but a missing job is an error for the user.

        Raises:
            BadInput: no such job.
        """
        record = self.get(profile, job_id)
        if record is None:
            raise BadInput(
                f"There is no job '{job_id}' in profile '{profile}'; run 'tao-slurm-tui status' "
                "to list the jobs."
            )
        return record

    def list_jobs(
        self, profile: str | None = None, *, include_terminal: bool = True
    ) -> list[JobRecord]:
        """Jobs (of ``profile``, or of all profiles), oldest first."""
        clauses, params = [], []
        if profile is not None:
            clauses.append("profile = ?")
            params.append(profile)
        if not include_terminal:
            terminal = [str(s) for s in TaoStatus if s.terminal]
            clauses.append(f"status NOT IN ({','.join('?' * len(terminal))})")
            params.extend(terminal)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._reading():
            rows = self._db.execute(
                f"SELECT * FROM jobs {where} ORDER BY created_at, profile, id", params
            ).fetchall()
            attempts = all_attempts(self._db, profile, self.path)
            return [
                job_record(r, attempts.get((r["profile"], r["id"]), []), self.path) for r in rows
            ]

    def changes(self) -> tuple[int, int]:
        """(the last change number given to a job row, how many jobs were deleted): read it
        before :meth:`jobs_changed_since`, and pass the first number next time."""
        with self._reading():
            row = self._db.execute("SELECT seq, deletes FROM changes WHERE id = 1").fetchone()
            return int(row["seq"]), int(row["deletes"])

    def jobs_changed_since(self, profile: str, change: int) -> list[JobRecord]:
        """The jobs of ``profile`` written after change number ``change`` (oldest first)."""
        return self._jobs_where(
            "profile = ? AND change_seq > ? ORDER BY created_at, id", (profile, change)
        )

    def version(self) -> tuple[int, int]:
        """Differs from an earlier value once anything was written since: rows this connection
        changed, and SQLite's ``data_version`` (bumped by other connections' commits)."""
        with self._reading():  # attaches the real file once another process created it
            other = int(self._db.execute("PRAGMA data_version").fetchone()[0])
            return self._db.total_changes, other

    def pipeline(self, profile: str, pipeline_id: str) -> list[JobRecord]:
        """The steps of pipeline ``pipeline_id`` of ``profile``, in step order ([] if none)."""
        if not pipeline_id:
            return []
        return self._jobs_where(
            "profile = ? AND pipeline_id = ? ORDER BY pipeline_step", (profile, pipeline_id)
        )

    def _jobs_where(self, where: str, params: tuple[str | int, ...]) -> list[JobRecord]:
        """The jobs a few rows match (``where`` names ``profile``), each with its attempts."""
        with self._reading():
            rows = self._db.execute(f"SELECT * FROM jobs WHERE {where}", params).fetchall()
            return [
                job_record(r, attempts_of(self._db, r["profile"], r["id"], self.path), self.path)
                for r in rows
            ]

    def active(self, profile: str) -> list[JobRecord]:
        """Non-terminal jobs of ``profile`` (what the monitor polls), oldest first."""
        return self.list_jobs(profile, include_terminal=False)

    def update_job(self, profile: str, job_id: str, **changes: Any) -> JobRecord:
        """Change fields of a job: ``spec``, ``base_results_dir``, ``status``, ``slurm_state``,
        ``message``, ``progress`` (a :class:`Progress` or dict), ``submitted``, ``sqsh_job_id``.

        Raises:
            TypeError: an unknown field.
            KeyError: no such job.
        """
        unknown = set(changes) - set(_JOB_FIELDS)
        if unknown:
            raise TypeError(f"unknown job field(s): {', '.join(sorted(unknown))}")
        with self._write() as db:
            self._update_job(db, profile, job_id, changes)
            return self._load(db, profile, job_id)

    def delete_job(self, profile: str, job_id: str) -> bool:
        """Forget a job with its attempts and events; True if it existed."""
        with self._write() as db:
            cur = db.execute("DELETE FROM jobs WHERE profile = ? AND id = ?", (profile, job_id))
            if cur.rowcount > 0:
                db.execute("UPDATE changes SET deletes = deletes + 1 WHERE id = 1")
            return cur.rowcount > 0

    # ------------------------------------------------------------------ attempts

    def add_attempt(self, profile: str, job_id: str, attempt: Attempt) -> JobRecord:
        """Append an attempt (its ``number`` must be new for the job).

        Raises:
            KeyError: no such job.
            ValueError: the attempt number is taken.
        """
        with self._write() as db:
            self._touch(db, profile, job_id)
            insert_attempt(db, profile, job_id, attempt)
            return self._load(db, profile, job_id)

    def update_attempt(self, profile: str, job_id: str, number: int, **changes: Any) -> JobRecord:
        """Change fields of attempt ``number`` (any :class:`Attempt` field except ``number``).

        Raises:
            TypeError: an unknown field.
            KeyError: no such job or attempt.
        """
        unknown = set(changes) - set(ATTEMPT_FIELDS)
        if unknown:
            raise TypeError(f"unknown attempt field(s): {', '.join(sorted(unknown))}")
        with self._write() as db:
            self._touch(db, profile, job_id)
            if changes:
                cols = ", ".join(f"{k} = ?" for k in changes)
                cur = db.execute(
                    f"UPDATE attempts SET {cols} WHERE profile = ? AND job_id = ? AND number = ?",
                    [*changes.values(), profile, job_id, number],
                )
                if cur.rowcount == 0:
                    raise KeyError(f"job {profile}/{job_id} has no attempt {number}")
            return self._load(db, profile, job_id)

    def save_attempt(self, profile: str, job_id: str, attempt: Attempt) -> JobRecord:
        """Insert or replace attempt ``attempt.number`` as a whole.

        Raises:
            KeyError: no such job.
        """
        with self._write() as db:
            self._touch(db, profile, job_id)
            db.execute(
                "DELETE FROM attempts WHERE profile = ? AND job_id = ? AND number = ?",
                (profile, job_id, attempt.number),
            )
            insert_attempt(db, profile, job_id, attempt)
            return self._load(db, profile, job_id)

    def mark_submitted(
        self, profile: str, job_id: str, attempt: Attempt, *, event: str = ""
    ) -> JobRecord:
        """Record a confirmed ``sbatch`` in one transaction: the attempt is saved (replacing
        one with the same number), the job is marked submitted, and an event is logged.

        Raises:
            KeyError: no such job.
        """
        with self._write() as db:
            self._update_job(db, profile, job_id, {"submitted": True})
            db.execute(
                "DELETE FROM attempts WHERE profile = ? AND job_id = ? AND number = ?",
                (profile, job_id, attempt.number),
            )
            insert_attempt(db, profile, job_id, attempt)
            text = event or (
                f"submitted attempt {attempt.number} as SLURM job {attempt.slurm_job_id}"
                + (f" via {attempt.login_host}" if attempt.login_host else "")
            )
            self._insert_event(db, profile, job_id, "submitted", text)
            return self._load(db, profile, job_id)

    # ------------------------------------------------------------------ events

    def add_event(self, profile: str, job_id: str, kind: str, text: str) -> JobEvent:
        """Append a line to the job's event log.

        Raises:
            KeyError: no such job.
        """
        with self._write() as db:
            self._touch(db, profile, job_id, bump=False)
            return self._insert_event(db, profile, job_id, kind, text)

    def events(self, profile: str, job_id: str, limit: int | None = None) -> list[JobEvent]:
        """The job's events, oldest first (the last ``limit`` ones when given)."""
        with self._reading():
            sql = "SELECT seq, time, kind, text FROM events WHERE profile = ? AND job_id = ?"
            params: list[Any] = [profile, job_id]
            if limit is not None:
                sql = f"SELECT * FROM ({sql} ORDER BY seq DESC LIMIT ?)"
                params.append(limit)
            rows = self._db.execute(f"{sql} ORDER BY seq", params).fetchall()
        return [JobEvent(r["seq"], r["time"], r["kind"], r["text"]) for r in rows]

    # ------------------------------------------------------------------ internals

    @staticmethod
    def _next_change(db: sqlite3.Connection) -> int:
        """The next store-wide change number, taken inside the writing transaction: SQLite
        lets one writer in at a time, so the numbers follow the order of the commits."""
        db.execute("UPDATE changes SET seq = seq + 1 WHERE id = 1")
        return int(db.execute("SELECT seq FROM changes WHERE id = 1").fetchone()[0])

    def _touch(self, db: sqlite3.Connection, profile: str, job_id: str, bump: bool = True) -> None:
        if bump:
            cur = db.execute(
                "UPDATE jobs SET updated_at = ?, change_seq = ? WHERE profile = ? AND id = ?",
                (self._clock(), self._next_change(db), profile, job_id),
            )
            found = cur.rowcount > 0
        else:
            found = (
                db.execute(
                    "SELECT 1 FROM jobs WHERE profile = ? AND id = ?", (profile, job_id)
                ).fetchone()
                is not None
            )
        if not found:
            raise KeyError(f"no job {profile}/{job_id}")

    def _update_job(
        self, db: sqlite3.Connection, profile: str, job_id: str, changes: dict[str, Any]
    ) -> None:
        values: dict[str, Any] = {}
        for key, value in changes.items():
            if key in ("spec", "plan"):
                value = json.dumps(value, sort_keys=True)
            elif key == "progress":
                data = value.to_dict() if isinstance(value, Progress) else dict(value or {})
                value = json.dumps(data, sort_keys=True)
            elif key == "status":
                value = str(TaoStatus(value))
            elif key == "submitted":
                value = int(bool(value))
            values[key] = value
        values["updated_at"] = self._clock()
        values["change_seq"] = self._next_change(db)
        cols = ", ".join(f"{k} = ?" for k in values)
        cur = db.execute(
            f"UPDATE jobs SET {cols} WHERE profile = ? AND id = ?",
            [*values.values(), profile, job_id],
        )
        if cur.rowcount == 0:
            raise KeyError(f"no job {profile}/{job_id}")

    def _insert_event(
        self, db: sqlite3.Connection, profile: str, job_id: str, kind: str, text: str
    ) -> JobEvent:
        now = self._clock()
        cur = db.execute(
            "INSERT INTO events (profile, job_id, time, kind, text) VALUES (?, ?, ?, ?, ?)",
            (profile, job_id, now, kind, text),
        )
        return JobEvent(int(cur.lastrowid or 0), now, kind, text)

    def _load(self, db: sqlite3.Connection, profile: str, job_id: str) -> JobRecord:
        row = db.execute(
            "SELECT * FROM jobs WHERE profile = ? AND id = ?", (profile, job_id)
        ).fetchone()
        if row is None:
            raise KeyError(f"no job {profile}/{job_id}")
        return job_record(row, attempts_of(db, profile, job_id, self.path), self.path)
