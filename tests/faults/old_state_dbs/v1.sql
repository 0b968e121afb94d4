-- state DB as written by a release with schema 1 (wal mode)
BEGIN TRANSACTION;
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
INSERT INTO "attempts" VALUES('sandbox','dino-train',0,'101','login1','NODE_FAIL','','','tao-n2','2026-11-28T10:00:00','2026-11-28T10:01:00','2026-11-28T11:00:00','00:59:00','04:00:00','polar','','node failure',1);
INSERT INTO "attempts" VALUES('sandbox','dino-train',1,'117','login2','RUNNING','','','tao-n1','2026-11-28T11:00:05','2026-11-28T11:00:30','','','','polar','','',0);
INSERT INTO "attempts" VALUES('sandbox','cls-eval',0,'99','','COMPLETED','0:0','','','','','','','','','','',0);
CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        profile TEXT NOT NULL,
        job_id TEXT NOT NULL,
        time REAL NOT NULL,
        kind TEXT NOT NULL,
        text TEXT NOT NULL,
        FOREIGN KEY (profile, job_id) REFERENCES jobs (profile, id) ON DELETE CASCADE
    );
INSERT INTO "events" VALUES(1,'sandbox','dino-train',1764500014.0,'submitted','submitted attempt 0 as SLURM job 101 via login1');
INSERT INTO "events" VALUES(2,'sandbox','dino-train',1764500035.0,'retry','retried as SLURM job 117');
INSERT INTO "events" VALUES(3,'sandbox','cls-eval',1764500056.0,'submitted','submitted attempt 0 as SLURM job 99');
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
INSERT INTO "jobs" VALUES('sandbox','dino-train','{"command": "dino train -e /specs/train.yaml", "env": {"WANDB_MODE": "offline"}, "image": "nvcr.io/nvidia/tao/tao-toolkit:5.5.0-pyt", "name": "dino-train", "num_gpus": 4, "num_nodes": 1, "time_hours": 4.0}','/home/slurmtest/tao','Running','RUNNING','Retry 1 of 10: node failure','{"epoch": 3, "kpi": {"loss": 0.42}, "max_epoch": 10}',1,'',1764500000.0,1764500028.0);
INSERT INTO "jobs" VALUES('sandbox','cls-eval','{"name": "cls-eval", "num_gpus": 1}','/home/slurmtest/tao','Complete','COMPLETED','','{"epoch": null, "eta": null, "kpi": {}, "max_epoch": null, "message": null, "status": null}',1,'',1764500042.0,1764500063.0);
INSERT INTO "jobs" VALUES('sandbox','never-sent','{"name": "never-sent"}','','Pending','','','{"epoch": null, "eta": null, "kpi": {}, "max_epoch": null, "message": null, "status": null}',0,'',1764500070.0,1764500070.0);
INSERT INTO "jobs" VALUES('sandbox','pl-1-evaluate','{"name": "pl-1-evaluate"}','','Pending','','','{"epoch": null, "eta": null, "kpi": {}, "max_epoch": null, "message": null, "status": null}',0,'',1764500077.0,1764500077.0);
INSERT INTO "jobs" VALUES('cluster2','other-cluster','{"name": "x"}','','Canceled','','','{"epoch": null, "eta": null, "kpi": {}, "max_epoch": null, "message": null, "status": null}',0,'',1764500084.0,1764500084.0);
CREATE INDEX jobs_status ON jobs (profile, status);
CREATE INDEX events_job ON events (profile, job_id, seq);
DELETE FROM "sqlite_sequence";
INSERT INTO "sqlite_sequence" VALUES('events',3);
COMMIT;
PRAGMA user_version = 1;
