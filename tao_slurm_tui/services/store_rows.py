"""Rows of the state DB back into records, checked: a damaged row is one sentence, not a crash.

The store keeps exactly what it is given; what it reads back is checked the way the UI and the
shell commands need it (a SLURM id is digits, a spec a JSON object), so a file written by
something else, or damaged, fails with the advice to move it aside.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from tao_slurm_tui.core.models import Attempt, JobRecord, Progress, TaoStatus
from tao_slurm_tui.errors import OperationFailed

ATTEMPT_FIELDS = tuple(f.name for f in fields(Attempt) if f.name != "number")
"""The columns of ``attempts`` besides its key, named as :class:`Attempt`'s fields."""

_SLURM_ID_RE = re.compile(r"^(?:[0-9]+(?:_[0-9]+)?)?\Z")


def job_record(row: sqlite3.Row, attempts: list[Attempt], path: Path) -> JobRecord:
    """The :class:`JobRecord` of a ``jobs`` row and its attempts.

    Raises:
        OperationFailed: the row does not hold what this version writes.
    """
    try:
        return JobRecord(
            id=row["id"],
            profile=row["profile"],
            spec=json_object(row["spec"]),
            base_results_dir=row["base_results_dir"],
            status=TaoStatus(row["status"]),
            slurm_state=row["slurm_state"],
            message=row["message"],
            progress=Progress.from_dict(json_object(row["progress"])),
            attempts=attempts,
            submitted=bool(row["submitted"]),
            sqsh_job_id=slurm_id(row["sqsh_job_id"]),
            created_at=float(row["created_at"]),
            updated_at=float(row["updated_at"]),
            pipeline_id=str(row["pipeline_id"]),
            pipeline_step=int(row["pipeline_step"]),
            plan=json_object(row["plan"]),
        )
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise damaged(path, row["profile"], row["id"], exc) from None


def damaged(path: Path, profile: str, job_id: str, exc: Exception) -> OperationFailed:
    """A record this version cannot read: move the file aside."""
    detail = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
    return OperationFailed(
        f"The state database {path} holds a damaged record of job '{job_id}' in "
        f"profile '{profile}' ({detail}); it was not written by this version of "
        "tao-slurm-tui, so move the file aside (your jobs on the cluster are not affected)."
    )


def attempt_of(row: sqlite3.Row, path: Path) -> Attempt:
    """The :class:`Attempt` of an ``attempts`` row.

    Raises:
        OperationFailed: the row does not hold what this version writes.
    """
    try:
        attempt = Attempt(number=int(row["number"]), **{k: row[k] for k in ATTEMPT_FIELDS})
        slurm_id(attempt.slurm_job_id)
        attempt.restarts = int(attempt.restarts)
        return attempt
    except (ValueError, TypeError, KeyError) as exc:
        raise damaged(path, row["profile"], row["job_id"], exc) from None


def slurm_id(value: object) -> str:
    """A stored SLURM id: digits (``N_M`` for array tasks) or empty."""
    text = str(value)
    if not _SLURM_ID_RE.match(text):
        raise ValueError(f"not a SLURM job id: {text[:40]!r}")
    return text


def json_object(text: str | None) -> dict[str, Any]:
    """A stored JSON object (spec, progress)."""
    value = json.loads(text or "{}")
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


def insert_attempt(db: sqlite3.Connection, profile: str, job_id: str, attempt: Attempt) -> None:
    """Insert one ``attempts`` row.

    Raises:
        ValueError: the job has an attempt with this number already.
    """
    data = asdict(attempt)
    cols = ["profile", "job_id", *data]
    try:
        db.execute(
            f"INSERT INTO attempts ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
            [profile, job_id, *data.values()],
        )
    except sqlite3.IntegrityError:
        raise ValueError(
            f"job {profile}/{job_id} already has an attempt {attempt.number}"
        ) from None


def attempts_of(db: sqlite3.Connection, profile: str, job_id: str, path: Path) -> list[Attempt]:
    """The attempts of one job, in order."""
    rows = db.execute(
        "SELECT * FROM attempts WHERE profile = ? AND job_id = ? ORDER BY number",
        (profile, job_id),
    ).fetchall()
    return [attempt_of(r, path) for r in rows]


def all_attempts(
    db: sqlite3.Connection, profile: str | None, path: Path
) -> dict[tuple[str, str], list[Attempt]]:
    """The attempts of every job (of ``profile``), by (profile, job id), in order."""
    sql = "SELECT * FROM attempts"
    params: list[Any] = []
    if profile is not None:
        sql += " WHERE profile = ?"
        params.append(profile)
    out: dict[tuple[str, str], list[Attempt]] = {}
    for r in db.execute(sql + " ORDER BY profile, job_id, number", params):
        out.setdefault((r["profile"], r["job_id"]), []).append(attempt_of(r, path))
    return out
