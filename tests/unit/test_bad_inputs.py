"""The bad-input table: every row is one wrong input given to the command line, black-box.

Each row runs ``tao-slurm-tui`` (its ``main`` with captured streams, in this process) and
asserts: the exit code (2 bad input, 1 operation failed), ONE sentence on stderr naming what to
do (the row's words appear in it), no traceback, and no file written -- neither locally (config,
state DB, caches, keys) nor on the "cluster".

Remote answers the real cluster never gives (garbage ``squeue``/``sacct`` lines, an ``sbatch``
without a job id, an unreadable ``status.json``) come from :mod:`tests.fakesshd`: a real SSH
server that runs the app's commands with bash and fake SLURM tools that print the row's garbage.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tao_slurm_tui.cli import main
from tao_slurm_tui.core.models import Attempt, JobRecord, TaoStatus
from tao_slurm_tui.services.store import JobStore
from tests import fakesshd

# ----------------------------------------------------------------------------------- fake cluster

#: Plausible SLURM tools for the fake login host; a row replaces the ones it breaks.
FAKE_TOOLS: dict[str, str] = {
    "scontrol": """
case "$1" in
  show) echo "PartitionName=polar AllowGroups=ALL Default=YES MaxTime=04:00:00 State=UP";
        echo "PartitionName=batch AllowGroups=ALL MaxTime=1-00:00:00 State=UP";;
  *) exit 0;;
esac""",
    "sinfo": 'echo "polar*|4:00:00"; echo "batch|1-00:00:00"',
    "sbatch": 'echo "4242"',
    "squeue": "exit 0",
    "sacct": "exit 0",
    "scancel": "exit 0",
    "enroot": "exit 0",
}


@pytest.fixture(scope="module")
def fake_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A running :mod:`tests.fakesshd`; yields its state dir."""
    state = tmp_path_factory.mktemp("fakesshd")
    with fakesshd.running(state):
        yield state


# ----------------------------------------------------------------------------------- rows

GOOD_SPEC = """
name = "job-a"
image = "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt"
command = "echo hi"
num_gpus = 1
cpus_per_task = 1
time_hours = 1
timeout_hours = 0.5
partition = "polar"
use_sqsh = false
container_mounts = []
"""

PROFILE = """
default_profile = "fake"
[profiles.fake]
user = "fake"
hostnames = ["127.0.0.1"]
port = {port}
ssh_key_path = "{key}"
known_hosts = "{kh}"
use_ssh_config = false
partition = "polar"
base_results_dir = "{remote}/tao"
container_runtime = "none"
connect_timeout = 5
command_timeout = 15
"""


def deep_toml(depth: int = 5000) -> str:
    """A TOML document nested ``depth`` arrays deep (valid TOML, hostile to recursion)."""
    return "x = " + "[" * depth + "]" * depth + "\n"


@dataclass
class Row:
    """One bad input: what is run, what it must answer."""

    id: str
    argv: list[str]
    code: int
    words: str
    """A case-insensitive regex the one-sentence message must match."""
    spec: str | bytes | None = GOOD_SPEC
    config: str | bytes | None = PROFILE
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str | bytes] = field(default_factory=dict)
    """Extra local files: path relative to the test's home → content."""
    modes: dict[str, int] = field(default_factory=dict)
    tools: dict[str, str] = field(default_factory=dict)
    """Fake SLURM tools replaced for this row."""
    remote_files: dict[str, str | bytes] = field(default_factory=dict)
    """Files in the fake cluster's results root (relative to ``<remote>/tao``)."""
    store: Callable[[JobStore], None] | None = None
    """Seeds the state DB before the run."""
    raw_db: Callable[[Path], None] | None = None
    """Changes the state DB file directly (after ``store``)."""
    stdin: str = ""
    out: str = ""
    db: str = ""
    """What the state DB may hold afterwards: '' nothing new; 'no-job' the file may have been
    created (the job is recorded before sbatch) but holds no job once SLURM refused it."""
    """For inputs that are rightly tolerated (exit 0): a regex stdout must match."""


def running_job(slurm_id: str = "4242", name: str = "job-a") -> Callable[[JobStore], None]:
    """A submitted, running job in the store."""

    def seed(store: JobStore) -> None:
        store.create_job(
            JobRecord(
                id=name,
                profile="fake",
                spec={"name": name},
                status=TaoStatus.RUNNING,
                slurm_state="RUNNING",
                submitted=True,
                attempts=[Attempt(number=0, slurm_job_id=slurm_id, state="RUNNING")],
            )
        )

    return seed


def sql(statement: str) -> Callable[[Path], None]:
    def run(path: Path) -> None:
        db = sqlite3.connect(path)
        db.execute(statement)
        db.commit()
        db.close()

    return run


def spec_with(**fields: object) -> str:
    """GOOD_SPEC with some keys replaced (values are TOML fragments)."""
    lines = [
        line for line in GOOD_SPEC.strip().splitlines() if line.split("=")[0].strip() not in fields
    ]
    lines += [f"{k} = {v}" for k, v in fields.items() if v is not None]
    return "\n".join(lines) + "\n"


def profile_with(**fields: object) -> str:
    """PROFILE with some keys replaced (values are TOML fragments)."""
    lines = [
        line for line in PROFILE.strip().splitlines() if line.split("=")[0].strip() not in fields
    ]
    lines += [f"{k} = {v}" for k, v in fields.items()]
    return "\n".join(lines) + "\n"


R = "render {spec}"
S = "submit {spec}"
D = "submit --dry-run {spec}"
#: squeue -O output for job 4242 running (the columns of core.slurm_poll.SQUEUE_FIELDS,
#: tab-separated; the restart count last).
SQUEUE_RUNNING = "printf '%s\\t' 4242 RUNNING None n1 0:10 1:00:00 polar 2026-01-01T00:00:00 " + (
    "2026-01-01T00:00:01 2026-01-01T01:00:01; echo 0"
)

ROWS: list[Row] = [
    # --- spec files -------------------------------------------------------------------------
    Row("spec-missing", ["render", "{home}/nope.toml"], 2, "no such spec file"),
    Row("spec-dir", ["render", "{home}"], 2, "is a directory"),
    Row("spec-binary", R.split(), 2, "not UTF-8", spec=b"\xff\xfe\x00\x01garbage"),
    Row("spec-not-toml", R.split(), 2, "TOML", spec="name = \n"),
    Row("spec-deep-nesting", R.split(), 2, "nested", spec=deep_toml()),
    Row("spec-deep-tables", R.split(), 2, "'name'|nested", spec="a" + ".a" * 5000 + " = 1\n"),
    Row("spec-unknown-key", R.split(), 2, "'gpus'", spec=spec_with(gpus=2)),
    Row("spec-no-name", R.split(), 2, "'name'", spec=GOOD_SPEC.replace('name = "job-a"', "")),
    Row("spec-name-shell", R.split(), 2, "'name'", spec=spec_with(name='"a;rm -rf ~"')),
    Row("spec-name-long", R.split(), 2, "'name'", spec=spec_with(name='"' + "a" * 65 + '"')),
    Row("spec-nodes-zero", R.split(), 2, "'num_nodes'", spec=spec_with(num_nodes=0)),
    Row("spec-nodes-text", R.split(), 2, "'num_nodes'", spec=spec_with(num_nodes='"two"')),
    Row("spec-gpus-negative", R.split(), 2, "'num_gpus'", spec=spec_with(num_gpus=-1)),
    Row("spec-time-zero", R.split(), 2, "'time_hours'", spec=spec_with(time_hours=0)),
    Row("spec-time-nan", R.split(), 2, "'time_hours'", spec=spec_with(time_hours="nan")),
    Row("spec-time-inf", R.split(), 2, "'time_hours'", spec=spec_with(time_hours="inf")),
    Row(
        "spec-time-tiny",
        R.split(),
        2,
        "'time_hours'.*minute",
        spec=spec_with(time_hours=1e-9, timeout_hours=1e-10),
    ),
    Row("spec-time-over-limit", R.split(), 2, "'polar'", spec=spec_with(time_hours=12)),
    Row(
        "spec-timeout-tiny",
        R.split(),
        2,
        "'timeout_hours'.*minute",
        spec=spec_with(timeout_hours=1e-9),
    ),
    Row("spec-empty-command", R.split(), 2, "'command'", spec=spec_with(command='""')),
    Row("spec-image-bad", R.split(), 2, "'image'", spec=spec_with(image='"not an image"')),
    Row("spec-partition-newline", R.split(), 2, "'partition'", spec=spec_with(partition='"a\\nb"')),
    Row("spec-account-shell", R.split(), 2, "'account'", spec=spec_with(account='"a b"')),
    Row(
        "spec-env-reserved", R.split(), 2, "WORLD_SIZE", spec=GOOD_SPEC + "[env]\nWORLD_SIZE='2'\n"
    ),
    Row("spec-env-badkey", R.split(), 2, "env", spec=GOOD_SPEC + '[env]\n"1A" = "x"\n'),
    Row("spec-env-secret", R.split(), 2, "key|secret", spec=GOOD_SPEC + '[env]\nNGC_API_KEY="x"\n'),
    Row("spec-mount-relative", R.split(), 2, "mount", spec=spec_with(container_mounts='["rel"]')),
    Row("spec-input-relative", R.split(), 2, "input", spec=spec_with(inputs='["rel/path"]')),
    # --- config files -----------------------------------------------------------------------
    Row("config-missing-explicit", ["--config", "{home}/missing.toml", *R.split()], 2, "missing"),
    Row("config-not-toml", R.split(), 2, "not valid TOML", config="[profiles\n"),
    Row("config-binary", R.split(), 2, "not UTF-8", config=b"\xff\xfe\x00"),
    Row("config-deep-nesting", R.split(), 2, "nested", config=deep_toml()),
    Row("config-unknown-key", R.split(), 2, "not a known setting", config="colour = 1\n"),
    Row("config-port-text", R.split(), 2, "port", config=profile_with(port='"abc"')),
    Row("config-port-zero", R.split(), 2, "port", config=profile_with(port=0)),
    Row("config-poll-fast", R.split(), 2, "poll_interval", config="poll_interval = 0.1\n"),
    Row(
        "config-runtime-docker",
        R.split(),
        2,
        "container_runtime",
        config=profile_with(container_runtime='"docker"'),
    ),
    Row(
        "config-time-tiny",
        R.split(),
        2,
        "time_hours|minute",
        spec=spec_with(),
        config=profile_with(time_hours=1e-9),
    ),
    Row(
        "config-results-tilde",
        D.split(),
        2,
        "base_results_dir",
        config=profile_with(base_results_dir='"~/tao"'),
    ),
    Row(
        "config-results-relative",
        D.split(),
        2,
        "base_results_dir",
        config=profile_with(base_results_dir='"tao"'),
    ),
    Row(
        "config-account-newline",
        D.split(),
        2,
        "account",
        config=profile_with(account='"a\\n#SBATCH --x"'),
    ),
    Row(
        "config-sqsh-dir-relative",
        D.split(),
        2,
        "sqsh_cache_dir",
        config=profile_with(sqsh_cache_dir='"sqsh"'),
    ),
    Row(
        "config-conversion-partition-newline",
        D.split(),
        2,
        "conversion_partition",
        config=profile_with(conversion_partition='"polar\\n#SBATCH --uid=0"'),
    ),
    Row(
        "config-partition-shell",
        R.split(),
        2,
        "partition",
        config=profile_with(partition='"polar;reboot"'),
    ),
    Row("env-partition-shell", R.split(), 2, "SLURM_PARTITION", env={"SLURM_PARTITION": "a b"}),
    Row("config-unknown-profile", ["--profile", "nope", *R.split()], 2, "no profile named"),
    Row("config-hostnames-int", R.split(), 2, "hostnames", config=profile_with(hostnames=5)),
    Row("config-is-dir", ["--config", "{home}", *R.split()], 2, "config"),
    # --- environment overrides --------------------------------------------------------------
    Row("env-time-text", R.split(), 2, "SLURM_TIME_HOURS", env={"SLURM_TIME_HOURS": "abc"}),
    Row("env-time-zero", R.split(), 2, "SLURM_TIME_HOURS", env={"SLURM_TIME_HOURS": "0"}),
    Row(
        "env-time-tiny",
        R.split(),
        2,
        "SLURM_TIME_HOURS|minute",
        spec=spec_with(time_hours=None),
        env={"SLURM_TIME_HOURS": "1e-9"},
    ),
    Row(
        "env-timeout-text", R.split(), 2, "SLURM_TIMEOUT_HOURS", env={"SLURM_TIMEOUT_HOURS": "soon"}
    ),
    Row("env-requeue-maybe", R.split(), 2, "SLURM_USE_REQUEUE", env={"SLURM_USE_REQUEUE": "maybe"}),
    Row(
        "env-results-relative-render",
        R.split(),
        2,
        "SLURM_BASE_RESULTS_DIR|base_results_dir",
        env={"SLURM_BASE_RESULTS_DIR": "rel/dir"},
    ),
    Row(
        "env-results-relative-submit",
        D.split(),
        2,
        "SLURM_BASE_RESULTS_DIR|base_results_dir",
        env={"SLURM_BASE_RESULTS_DIR": "rel/dir"},
    ),
    Row("env-hostname-commas", D.split(), 2, "host", env={"SLURM_HOSTNAME": " , "}),
    Row("env-key-missing", D.split(), 2, "does not exist", env={"SSH_KEY_PATH": "{home}/nokey"}),
    Row("env-key-dir", D.split(), 2, "not a regular file", env={"SSH_KEY_PATH": "{home}"}),
    Row("env-account-shell", D.split(), 2, "account", env={"SLURM_ACCOUNT": "a;b"}),
    # --- flags -------------------------------------------------------------------------------
    Row("flag-unknown-verb", ["frobnicate"], 2, "invalid choice"),
    Row("flag-tail-negative", ["logs", "job-a", "--tail", "-1"], 2, "--tail", store=running_job()),
    Row("flag-tail-text", ["logs", "job-a", "--tail", "x"], 2, "invalid int"),
    Row("flag-status-unknown", ["status", "nope"], 2, "no job 'nope'"),
    Row("flag-cancel-unknown", ["cancel", "nope"], 2, "no job 'nope'"),
    Row("flag-logs-unknown", ["logs", "nope"], 2, "no job 'nope'"),
    Row("flag-spec-with-verb", ["--spec", "{spec}", *R.split()], 2, "composer"),
    Row("flag-set-profile-pair", ["config", "set-profile", "p", "user"], 2, "KEY=VALUE"),
    Row("flag-set-profile-key", ["config", "set-profile", "p", "colour=1"], 2, "not a profile"),
    Row("flag-set-profile-port", ["config", "set-profile", "p", "port=abc"], 2, "port"),
    Row("flag-set-profile-name", ["config", "set-profile", "a b", "user=x"], 2, "profile name"),
    Row("flag-submit-no-spec", ["submit"], 2, "required"),
    Row("flag-creds-empty-stdin", ["creds", "install"], 2, "key", stdin=""),
    # An empty value is bad input, not "the default" (tests/unit/test_empty_options.py: all).
    Row("flag-empty-profile", ["--profile", "", "status"], 2, "--profile is empty.*NAME"),
    Row("flag-empty-config", ["--config=", "status"], 2, "--config is empty.*PATH"),
    Row("flag-empty-tui-spec", ["--spec", ""], 2, "--spec is empty"),
    Row("flag-empty-status-id", ["status", ""], 2, "ID argument is empty"),
    Row("flag-empty-history-state", ["history", "--state", ""], 2, "--state is empty"),
    Row("flag-empty-tail", ["logs", "job-a", "--tail", ""], 2, "--tail is empty"),
    # --- local files: keys, known_hosts, ~/.ssh/config, state DB ------------------------------
    Row("key-mode-0644", D.split(), 2, "chmod 600", modes={"KEY": 0o644}),
    Row(
        "key-default-0644",
        D.split(),
        2,
        "chmod 600",
        modes={".ssh/id_ed25519": 0o644},
        config=profile_with(ssh_key_path='""', use_ssh_config="true"),
        files={".ssh/id_ed25519": "KEYCOPY"},
    ),
    Row(
        "key-garbage",
        D.split(),
        2,
        "private key",
        files={".ssh/garbage": "not a key\n"},
        env={"SSH_KEY_PATH": "{home}/.ssh/garbage"},
        modes={".ssh/garbage": 0o600},
    ),
    Row(
        "known-hosts-dir",
        D.split(),
        2,
        "known_hosts|known hosts",
        config=profile_with(known_hosts='"{home}"'),
    ),
    Row(
        "known-hosts-bad-marker",
        D.split(),
        2,
        "known_hosts.*broken line",
        files={"kh": "@revoked\n"},
        config=profile_with(known_hosts='"{home}/kh"'),
    ),
    Row(
        "known-hosts-garbage",
        D.split(),
        1,
        "known_hosts|known hosts|host key",
        files={"kh": b"\xff\xfe garbage [[[ \x00\n|1|x|y ssh-ed25519 AAAA\n"},
        config=profile_with(known_hosts='"{home}/kh"'),
    ),
    Row(
        "ssh-config-port-text",
        D.split(),
        2,
        "ssh/config",
        files={".ssh/config": "Host *\n  Port abc\n"},
        config=profile_with(use_ssh_config="true"),
    ),
    Row(
        "ssh-config-garbage",
        D.split(),
        2,
        "ssh/config",
        files={".ssh/config": "Host *\n  Match exec\n"},
        config=profile_with(use_ssh_config="true"),
    ),
    # A state DB that is not SQLite at all is no longer refused: it is moved aside and the jobs
    # are recovered from the cluster (tests/unit/test_store_bad_days.py, tests/faults).
    Row(
        "db-unknown-status",
        ["status"],
        1,
        "state database",
        store=running_job(),
        raw_db=sql("UPDATE jobs SET status = 'Exploded'"),
    ),
    Row(
        "db-bad-spec-json",
        ["status"],
        1,
        "state database",
        store=running_job(),
        raw_db=sql("UPDATE jobs SET spec = '{not json'"),
    ),
    Row(
        "db-bad-progress-json",
        ["status", "--json"],
        1,
        "state database",
        store=running_job(),
        raw_db=sql("UPDATE jobs SET progress = '[1,'"),
    ),
    Row(
        "db-bad-slurm-id",
        ["status"],
        1,
        "state database",
        store=running_job(),
        raw_db=sql("UPDATE attempts SET slurm_job_id = '1;rm -rf ~'"),
    ),
    Row(
        "db-newer-schema",
        ["status"],
        1,
        "newer",
        store=running_job(),
        raw_db=sql("PRAGMA user_version = 99"),
    ),
    # --- remote answers (fake login host) -----------------------------------------------------
    Row(
        "remote-squeue-garbage",
        ["status"],
        1,
        "could not refresh|cluster",
        store=running_job(),
        tools={"squeue": "printf 'garbage|||\\n%s\\n' \"$(head -c 64 /dev/urandom | base64)\""},
    ),
    Row(
        "remote-squeue-fails",
        ["status"],
        1,
        "could not refresh|cluster",
        store=running_job(),
        tools={
            "squeue": "echo 'slurm_load_jobs error: Socket timed out' >&2; exit 1",
            "sacct": "echo 'sacct: error: slurmdbd: connection refused' >&2; exit 1",
        },
    ),
    Row(
        "remote-sacct-garbage",
        ["status"],
        1,
        "could not refresh|cluster",
        store=running_job(),
        tools={"squeue": "exit 0", "sacct": "printf '4242|WHAT|||\\n|||\\n\\x01\\n'"},
    ),
    # A damaged status.json only costs the progress column: the job's state comes from SLURM.
    Row(
        "remote-status-json-garbage",
        ["status"],
        0,
        "",
        out="Running",
        store=running_job(),
        tools={"squeue": SQUEUE_RUNNING},
        remote_files={"results/job-a/status.json": b"\xff\x00{{{{\n[1,2\n" * 50},
    ),
    Row(
        "remote-status-json-dir",
        ["status"],
        0,
        "",
        out="Running",
        store=running_job(),
        tools={"squeue": SQUEUE_RUNNING},
        remote_files={"results/job-a/status.json/x": "dir"},
    ),
    Row(
        "remote-sbatch-no-id",
        S.split(),
        1,
        "sbatch|SLURM",
        tools={"sbatch": "echo hello"},
        db="no-job",
    ),
    Row(
        "remote-sbatch-refused",
        S.split(),
        1,
        "Invalid account",
        tools={"sbatch": "echo 'sbatch: error: Invalid account or account/partition' >&2; exit 1"},
        db="no-job",
    ),
    # Unreadable limits: the wall time cannot be checked here; sbatch still checks it.
    Row(
        "remote-partitions-garbage",
        D.split(),
        0,
        "",
        out="#SBATCH --time=01:00:00",
        tools={"scontrol": "echo '%%%%'", "sinfo": "echo 'polar|forever'"},
    ),
    Row(
        "remote-name-live",
        S.split(),
        2,
        "already pending or running.*SLURM job 777",
        tools={"squeue": 'case "$*" in *--name=job-a*) echo 777;; esac'},
    ),
    Row(
        "remote-name-staged",
        S.split(),
        2,
        "already staged",
        remote_files={"entrypoints/job_job-a.sh": "echo other workstation\n"},
    ),
    Row(
        "remote-input-missing",
        D.split(),
        2,
        "do(es)? not exist",
        spec=spec_with(inputs='["lustre:///nowhere/at/all"]'),
    ),
]


# ----------------------------------------------------------------------------------- runner


def _snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` → hash of its content (WAL side files excluded)."""
    out: dict[str, str] = {}
    if not root.exists():
        return out
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        if path.name.endswith(("-wal", "-shm", "-journal")):
            continue
        try:
            data = path.read_bytes()
        except OSError:
            data = b"<unreadable>"
        out[str(path.relative_to(root))] = hashlib.sha256(data).hexdigest()
    return out


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


#: Rows known to fail (strict xfail); none open.
OPEN: set[str] = set()


@pytest.mark.parametrize(
    "row",
    [
        pytest.param(
            r,
            id=r.id,
            marks=[pytest.mark.xfail(strict=True, reason="see OPEN")] if r.id in OPEN else [],
        )
        for r in ROWS
    ],
)
def test_bad_input(
    row: Row,
    fake_host: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    remote = fake_host / "home" / tmp_path.name
    remote.mkdir()
    key = home / ".ssh" / "fake_key"
    key.write_bytes((fake_host / "client_key").read_bytes())
    key.chmod(0o600)
    values = {
        "home": str(home),
        "remote": str(remote),
        "port": (fake_host / "port").read_text(),
        "key": str(key),
        "kh": str(fake_host / "known_hosts"),
        "spec": str(home / "spec.toml"),
    }
    monkeypatch.setenv("HOME", str(home))
    config = home / "config.toml"
    if row.config is not None:
        data = row.config if isinstance(row.config, bytes) else _fill(row.config, values)
        config.write_bytes(data if isinstance(data, bytes) else data.encode())
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg-config"))
    (home / "xdg-config" / "tao-slurm-tui").mkdir(parents=True)
    os.symlink(config, home / "xdg-config" / "tao-slurm-tui" / "config.toml")
    if row.spec is not None:
        spec = row.spec if isinstance(row.spec, bytes) else row.spec.encode()
        (home / "spec.toml").write_bytes(spec)
    db_path = Path(os.environ["XDG_DATA_HOME"]) / "tao-slurm-tui" / "state.db"
    for rel, content in row.files.items():
        path = db_path if rel == "DB" else home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if content == "KEYCOPY":
            content = key.read_bytes()
        path.write_bytes(content if isinstance(content, bytes) else _fill(content, values).encode())
    for rel, mode in row.modes.items():
        (key if rel == "KEY" else home / rel).chmod(mode)
    if row.store is not None:
        with JobStore(db_path) as store:
            row.store(store)
    if row.raw_db is not None:
        row.raw_db(db_path)
    fakebin = fake_host / "fakebin"
    for tool, script in {**FAKE_TOOLS, **row.tools}.items():
        (fakebin / tool).write_text("#!/bin/bash\n" + script + "\n")
        (fakebin / tool).chmod(0o755)
    for rel, content in row.remote_files.items():
        path = remote / "tao" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    for var, value in row.env.items():
        monkeypatch.setenv(var, _fill(value, values))
    monkeypatch.setattr(sys, "stdin", _Stdin(row.stdin))

    local_before = _snapshot(tmp_path)
    local_before.update({f"XDG/{k}": v for k, v in _snapshot(db_path.parents[1]).items()})
    remote_before = _snapshot(remote)
    argv = [_fill(a, values) for a in row.argv]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code if isinstance(exc.code, int) else 2
    except BaseException as exc:
        pytest.fail(f"{row.id}: {type(exc).__name__} escaped main(): {exc!r}")
    out, err = capsys.readouterr()

    assert "Traceback" not in err + out, err
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("[")]
    assert code == row.code, f"{row.id}: exit {code}, expected {row.code}; stderr: {err!r}"
    if row.code == 0:
        assert not lines, f"{row.id}: unexpected messages {lines!r}"
        assert re.search(row.out, out), f"{row.id}: stdout {out!r}"
    else:
        # argparse prints its usage first; the message is the last line.
        message = lines[-1] if lines else ""
        assert re.search(row.words, message, re.IGNORECASE), f"{row.id}: message {message!r}"
        if "usage:" not in err:
            assert len(lines) == 1, f"{row.id}: more than one line on stderr: {lines!r}"
            assert message.startswith("tao-slurm-tui: "), message
            assert message.rstrip().endswith("."), f"{row.id}: not a sentence: {message!r}"
    local_after = _snapshot(tmp_path)
    local_after.update({f"XDG/{k}": v for k, v in _snapshot(db_path.parents[1]).items()})
    if row.code == 0:
        # A tolerated input may update the job's record; it must not add files.
        assert set(local_after) == set(local_before), f"{row.id}: local files added"
    elif row.db:
        db_key = f"XDG/{db_path.relative_to(db_path.parents[1])}"
        others = {k: v for k, v in local_after.items() if k != db_key}
        assert others == {k: v for k, v in local_before.items() if k != db_key}
        with JobStore(db_path) as store:
            jobs = store.list_jobs()
        assert jobs == [], f"{row.id}: a refused job left a record"
    else:
        assert local_after == local_before, f"{row.id}: local files changed"
    assert _snapshot(remote) == remote_before, f"{row.id}: remote files written"
    if not row.db:  # (after sbatch ran, the empty job directories may stay)
        assert not (remote / "tao").exists() or row.remote_files, f"{row.id}: remote dirs created"


class _Stdin:
    """A non-tty stdin with fixed content."""

    def __init__(self, text: str) -> None:
        self._text = text

    def read(self, size: int = -1) -> str:
        text, self._text = self._text, ""
        return text

    def readline(self) -> str:
        return self.read()

    def isatty(self) -> bool:
        return False


def test_table_is_big_enough() -> None:
    """The issue asks for at least 60 rows across specs, config, env, flags, files, remote."""
    assert len(ROWS) >= 60
    assert len({r.id for r in ROWS}) == len(ROWS)
    kinds = {r.id.split("-")[0] for r in ROWS}
    assert {"spec", "config", "env", "flag", "key", "db", "remote"} <= kinds
    # json is used by rows seeding the store through the real store API.
    assert json.dumps([r.id for r in ROWS])
