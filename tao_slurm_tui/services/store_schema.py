"""The state DB's schema: numbered steps, append only (a stable contract: ARCHITECTURE.md).

``PRAGMA user_version`` holds the number of steps applied; :class:`~tao_slurm_tui.services.store.
JobStore` applies the missing ones when it opens a file, in one transaction, and refuses a file
written by a newer release. Never edit a released step: add one.
"""

from __future__ import annotations

MIGRATIONS: list[str] = [
    # 1: jobs, attempts, events.
    """
    CREATE TABLE jobs (
        profile TEXT NOT NULL,
        id TEXT NOT NULL,
        spec TEXT NOT NULL DEFAULT '{}',
        base_results_dir TEXT NOT NULL DEFAULT '',
        status TEXT NOT NULL DEFAULT 'Pending',
        slurm_state TEXT NOT NULL DEFAULT '',
        message TEXT NOT NULL DEFAULT '',
        progress TEXT NOT NULL DEFAULT '{}',
        submitted INTEGER NOT NULL DEFAULT 0,
        sqsh_job_id TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (profile, id)
    );
    CREATE INDEX jobs_status ON jobs (profile, status);
    CREATE TABLE attempts (
        profile TEXT NOT NULL,
        job_id TEXT NOT NULL,
        number INTEGER NOT NULL,
        slurm_job_id TEXT NOT NULL,
        login_host TEXT NOT NULL DEFAULT '',
        state TEXT NOT NULL DEFAULT '',
        exit_code TEXT NOT NULL DEFAULT '',
        reason TEXT NOT NULL DEFAULT '',
        nodes TEXT NOT NULL DEFAULT '',
        submit_time TEXT NOT NULL DEFAULT '',
        start_time TEXT NOT NULL DEFAULT '',
        end_time TEXT NOT NULL DEFAULT '',
        elapsed TEXT NOT NULL DEFAULT '',
        time_limit TEXT NOT NULL DEFAULT '',
        partition TEXT NOT NULL DEFAULT '',
        est_start TEXT NOT NULL DEFAULT '',
        retry_reason TEXT NOT NULL DEFAULT '',
        restarts INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (profile, job_id, number),
        FOREIGN KEY (profile, job_id) REFERENCES jobs (profile, id) ON DELETE CASCADE
    );
    CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        profile TEXT NOT NULL,
        job_id TEXT NOT NULL,
        time REAL NOT NULL,
        kind TEXT NOT NULL,
        text TEXT NOT NULL,
        FOREIGN KEY (profile, job_id) REFERENCES jobs (profile, id) ON DELETE CASCADE
    );
    CREATE INDEX events_job ON events (profile, job_id, seq);
    """,
    # 2: timeout requeues are counted apart from the infrastructure-retry budget.
    """
    ALTER TABLE attempts ADD COLUMN timeout_restarts INTEGER NOT NULL DEFAULT 0;
    """,
    # 3: TAO pipelines: the steps of one pipeline share its id and are ordered by step.
    """
    ALTER TABLE jobs ADD COLUMN pipeline_id TEXT NOT NULL DEFAULT '';
    ALTER TABLE jobs ADD COLUMN pipeline_step INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX jobs_pipeline ON jobs (profile, pipeline_id, pipeline_step);
    """,
    # 4: a store-wide change number on every job row, so a reader (the monitor) reloads only
    # the rows written since it last looked, not every job of the history.
    """
    ALTER TABLE jobs ADD COLUMN change_seq INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX jobs_change ON jobs (profile, change_seq);
    CREATE TABLE changes (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        seq INTEGER NOT NULL,
        deletes INTEGER NOT NULL
    );
    INSERT INTO changes (id, seq, deletes) VALUES (1, 0, 0);
    """,
    # 5: the launch plan a job was resolved to, so a retry renders it as it was submitted.
    """
    ALTER TABLE jobs ADD COLUMN plan TEXT NOT NULL DEFAULT '{}';
    """,
    # 6: a TAO training's runs across wall-time slices (where its status.json was read up to,
    # the run ledger) and its KPIs per epoch (bounded: core.kpi_series).
    """
    CREATE TABLE job_runs (
        profile TEXT NOT NULL,
        job_id TEXT NOT NULL,
        reader TEXT NOT NULL DEFAULT '{}',
        ledger TEXT NOT NULL DEFAULT '{}',
        PRIMARY KEY (profile, job_id),
        FOREIGN KEY (profile, job_id) REFERENCES jobs (profile, id) ON DELETE CASCADE
    );
    CREATE TABLE kpi_points (
        profile TEXT NOT NULL,
        job_id TEXT NOT NULL,
        run INTEGER NOT NULL,
        epoch INTEGER NOT NULL,
        kpi TEXT NOT NULL,
        PRIMARY KEY (profile, job_id, run, epoch),
        FOREIGN KEY (profile, job_id) REFERENCES jobs (profile, id) ON DELETE CASCADE
    );
    """,
]
"""Schema steps; step N (1-based) brings ``user_version`` from N-1 to N."""

SCHEMA_VERSION = len(MIGRATIONS)


def statements(script: str) -> list[str]:
    """The statements of one step."""
    # Migrations are plain DDL without semicolons inside literals: split on ';'.
    return [s.strip() for s in script.split(";") if s.strip()]
