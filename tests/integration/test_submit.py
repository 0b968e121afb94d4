"""Staging and exactly-once submission against the real sandbox cluster (runtime ``none``).

As root the tests look at SLURM directly (``squeue``/``sacct``) and read the job files under
``/home/slurmtest``. Every job has a unique name, so the tests run side by side.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tao_slurm_tui.cli import main
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.quoting import join
from tao_slurm_tui.core.spec import SpecDraft
from tao_slurm_tui.errors import BadInput, OperationFailed
from tao_slurm_tui.remote.connection import CommandResult, Connection, ConnectionLost
from tao_slurm_tui.services.images import conversion_outcome
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.services.submit import Submitter
from tests import sandbox
from tests.integration.submit_helpers import submit

TERMINAL = {
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "BOOT_FAIL",
    "OUT_OF_MEMORY",
}

WRITES_STATUS = (
    'echo "line one"; echo "line two"; d="$TAO_API_RESULTS_DIR/$TAO_JOB_ID"; mkdir -p "$d"; '
    'printf \'%s\\n\' \'{"status": "STARTED"}\' \'{"status": "SUCCESS", "message": "done"}\' '
    '> "$d/status.json"'
)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def spec(name: str, **over: Any) -> SpecDraft:
    data: dict[str, Any] = {
        "name": name,
        "image": "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt",
        "command": "echo hello",
        "num_gpus": 1,
        "cpus_per_task": 1,
        "time_hours": 1,
        "use_sqsh": False,
    }
    data.update(over)
    return SpecDraft(data)


def local(args: Sequence[str]) -> str:
    return subprocess.run(list(args), capture_output=True, text=True, check=False).stdout


def jobs_named(name: str) -> set[str]:
    """Every SLURM job of the test user with this name (live or finished)."""
    ids = set(local(["squeue", "-h", "-t", "all", f"--name={name}", "-o", "%i"]).split())
    rows = local(
        ["sacct", "-X", "-n", "-P", "-u", sandbox.USER, f"--name={name}", "-S", "now-3600",
         "--format=JobID"]
    )  # fmt: skip
    return ids | {r.split(";")[0] for r in rows.split()}


def live_jobs_named(name: str) -> list[str]:
    return local(["squeue", "-h", f"--name={name}", "-o", "%i"]).split()


def state_of(job_id: str) -> str:
    live = local(["squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T"]).strip()
    if live:
        return live.split()[0]
    row = local(["sacct", "-X", "-n", "-P", "-j", job_id, "--format=State"]).strip()
    return row.split()[0] if row else ""


async def wait_terminal(job_id: str, limit: float = 180) -> str:
    """The job's finished state; the bound allows ~2 min PENDING behind parallel tests' GPUs.

    ``state_of`` asks squeue first (current to the second, keeps finished jobs for MinJobAge),
    sacct only once squeue forgot the job, so a finished state it reports is final.
    """
    loop = asyncio.get_running_loop()
    end = loop.time() + limit
    state = ""
    while loop.time() < end:
        state = state_of(job_id)
        if state in TERMINAL:
            return state
        await asyncio.sleep(1)
    raise AssertionError(f"job {job_id} did not finish in {limit} s (last state {state!r})")


def staged_files(paths: JobPaths) -> list[str]:
    files = [paths.spec_json, paths.env_json, paths.meta_json, paths.entrypoint, paths.sbatch]
    return [f for f in files if Path(f).exists()]


@pytest.fixture
def profile(sandbox_profile: Profile) -> Profile:
    return sandbox_profile


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(tmp_path / "state.db")


@pytest.fixture
async def conn(profile: Profile) -> AsyncIterator[Connection]:
    connection = Connection(profile)
    yield connection
    await connection.close()


# ----------------------------------------------------------------------------------- success


async def test_job_runs_to_completed_with_logs_at_the_contract_path(
    conn: Connection, store: JobStore, profile: Profile
) -> None:
    name = unique("it-ok")
    events: list[tuple[str, str]] = []
    result = await submit(
        Submitter(conn, store, "sandbox", profile),
        spec(name, command=WRITES_STATUS, inputs=[f"lustre://{sandbox.HOME}"]),
        on_progress=lambda stage, detail: events.append((stage, detail)),
    )
    assert result.slurm_job_id.isdigit() and result.job_dir == sandbox.RESULTS
    assert events[0][0] == "checking inputs" and events[-1][0] == "done"
    assert await wait_terminal(result.slurm_job_id) == "COMPLETED"
    paths = JobPaths(sandbox.RESULTS, name)
    out = Path(paths.main_out(result.slurm_job_id))
    assert out == Path(f"{sandbox.RESULTS}/slurm-logs/{name}-{result.slurm_job_id}/main.out")
    text = out.read_text()
    assert "line one" in text and "line two" in text
    lines = Path(paths.status_json).read_text().splitlines()
    assert json.loads(lines[-1])["status"] == "SUCCESS"
    assert (Path(paths.env_json).stat().st_mode & 0o777) == 0o600
    record = store.require("sandbox", name)
    assert record.submitted and record.attempts[0].slurm_job_id == result.slurm_job_id
    assert record.attempts[0].login_host == sandbox.HOST
    assert jobs_named(name) == {result.slurm_job_id}


# ----------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"partition": "nosuch"}, "Invalid partition name specified"),
        ({"account": "nosuch"}, "Invalid account or account/partition combination specified"),
        ({"time_hours": 5}, "Requested time limit is invalid"),
    ],
    ids=["partition", "account", "time-slurm"],
)
async def test_slurm_refusal_surfaces_its_message_and_leaves_nothing(
    conn: Connection,
    store: JobStore,
    profile: Profile,
    monkeypatch: pytest.MonkeyPatch,
    over: dict[str, Any],
    message: str,
) -> None:
    name = unique("it-rej")
    submitter = Submitter(conn, store, "sandbox", profile)

    async def no_limits(**_: Any) -> dict[str, int | None]:
        return {}  # bypass our MaxTime check so SLURM's own is exercised

    monkeypatch.setattr(submitter, "partition_limits", no_limits)
    with pytest.raises(OperationFailed, match=message):
        await submit(submitter, spec(name, **over))
    assert live_jobs_named(name) == []
    # Leaves nothing: no record, no staged file (the name is free again, here and for others).
    assert store.get("sandbox", name) is None
    assert staged_files(JobPaths(sandbox.RESULTS, name)) == []
    result = await submit(submitter, spec(name), dry_run=True)  # the same name is usable
    assert result.dry_run


async def test_time_above_real_maxtime_is_refused_before_staging(
    conn: Connection, store: JobStore, profile: Profile
) -> None:
    name = unique("it-time")
    with pytest.raises(BadInput, match=r"MaxTime 4 h"):
        await submit(Submitter(conn, store, "sandbox", profile), spec(name, time_hours=5))
    # The batch partition allows 2 days: the real MaxTime, not the packaged 4 h, decides.
    result = await submit(
        Submitter(conn, store, "sandbox", profile),
        spec(name, partition="batch", time_hours=5),
        dry_run=True,
    )
    assert "#SBATCH --time=05:00:00" in result.script
    assert staged_files(JobPaths(sandbox.RESULTS, name)) == []
    assert store.get("sandbox", name) is None


async def test_missing_inputs_are_listed_and_nothing_is_staged(
    conn: Connection, store: JobStore, profile: Profile
) -> None:
    name = unique("it-miss")
    gone1, gone2 = f"{sandbox.HOME}/{unique('nope')}", f"/{unique('nope')}/data.json"
    with pytest.raises(BadInput) as info:
        await submit(
            Submitter(conn, store, "sandbox", profile),
            spec(name, inputs=[gone1, sandbox.HOME, f"lustre://{gone2}"]),
        )
    assert gone1 in str(info.value) and gone2 in str(info.value)
    assert sandbox.HOME + "," not in str(info.value)
    assert staged_files(JobPaths(sandbox.RESULTS, name)) == []
    assert store.get("sandbox", name) is None and jobs_named(name) == set()


# ----------------------------------------------------------------------------------- exactly once


class DropAroundSbatch(Connection):
    """A connection that lets sbatch reach SLURM (held), then loses the link before the answer."""

    def __init__(self, profile: Profile, script: str) -> None:
        super().__init__(profile)
        self.script = script
        self.drops = 0

    async def run(
        self,
        command: str | Sequence[str],
        *,
        input: str | bytes | None = None,
        timeout: float | None = None,
        check: bool = False,
        retry_on_drop: bool = True,
    ) -> CommandResult:
        kwargs: dict[str, Any] = {
            "input": input,
            "timeout": timeout,
            "check": check,
            "retry_on_drop": retry_on_drop,
        }
        if (
            isinstance(command, str)
            and command.startswith("t=$(sbatch --test-only")
            and not self.drops
        ):
            self.drops += 1
            # The job is accepted; the log-dir mkdir and the release are lost with the link.
            await super().run(join(["sbatch", "--parsable", "--export=ALL", "--hold", self.script]))
            raise ConnectionLost("injected: the connection dropped right after sbatch")
        return await super().run(command, **kwargs)


async def test_connection_dropped_after_sbatch_gives_exactly_one_job(
    store: JobStore, profile: Profile
) -> None:
    name = unique("it-drop")
    paths = JobPaths(sandbox.RESULTS, name)
    conn = DropAroundSbatch(profile, paths.sbatch)
    try:
        result = await submit(
            Submitter(conn, store, "sandbox", profile), spec(name, command="echo adopted")
        )
    finally:
        await conn.close()
    assert conn.drops == 1 and result.adopted
    assert jobs_named(name) == {result.slurm_job_id}
    # The adopted job was given its log directory and released: it runs and logs.
    assert await wait_terminal(result.slurm_job_id) == "COMPLETED"
    assert "adopted" in Path(paths.main_out(result.slurm_job_id)).read_text()
    assert jobs_named(name) == {result.slurm_job_id}
    assert store.require("sandbox", name).slurm_job_id == result.slurm_job_id


# ----------------------------------------------------------------------------------- sqsh


async def test_sqsh_conversion_fails_without_enroot_and_the_job_falls_back(
    conn: Connection, store: JobStore, profile: Profile
) -> None:
    name = unique("it-sqsh")
    # A unique tag: no cached file and no conversion of it in flight from another test.
    image = f"nvcr.io/nvidia/tao/tao-toolkit:{unique('t')}"
    submitter = Submitter(conn, store, "sandbox", profile)
    result = await submit(submitter, spec(name, image=image, use_sqsh=True, command=WRITES_STATUS))
    assert result.sqsh_job_id.isdigit()
    assert any("falls back to the registry image" in w for w in result.warnings)
    assert any(e.kind == "sqsh" for e in store.events("sandbox", name))
    assert await wait_terminal(result.sqsh_job_id) == "FAILED"
    assert await wait_terminal(result.slurm_job_id) == "COMPLETED"
    paths = JobPaths(sandbox.RESULTS, name)
    err = Path(paths.main_err(result.slurm_job_id)).read_text()
    assert "WARNING: the SQSH image" in err and "falling back to the registry image" in err
    assert "line one" in Path(paths.main_out(result.slurm_job_id)).read_text()
    record = store.require("sandbox", name)
    assert record.sqsh_job_id == result.sqsh_job_id
    sqsh_path = (
        f"{sandbox.RESULTS}/sqsh/{record.spec['image'].replace('/', '_').replace(':', '_')}.sqsh"
    )
    outcome = await conversion_outcome(conn, result.sqsh_job_id, sqsh_path)
    assert outcome.failed and outcome.state == "FAILED"
    text = await submitter.check_sqsh_outcome(record)
    assert text is not None and "fell back" in text
    assert [e.kind for e in store.events("sandbox", name)].count("sqsh_fallback") == 1
    assert await submitter.check_sqsh_outcome(record) is None  # reported once


# ----------------------------------------------------------------------------------- CLI


def write_config(tmp_path: Path) -> Path:
    cfg = tmp_path / "config.toml"
    cfg.write_text(
        "default_profile = 'sandbox'\n[profiles.sandbox]\n"
        f"user = '{sandbox.USER}'\nhostnames = ['{sandbox.HOST}']\nport = {sandbox.PORT}\n"
        f"ssh_key_path = '{sandbox.SSH_KEY}'\nknown_hosts = '{sandbox.KNOWN_HOSTS}'\n"
        "use_ssh_config = false\npartition = 'polar'\n"
        f"base_results_dir = '{sandbox.RESULTS}'\ncontainer_runtime = 'none'\n"
    )
    return cfg


def test_cli_submit_json_dry_run_and_exit_codes(
    cluster: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(tmp_path)
    name = unique("it-cli")
    spec_file = tmp_path / "spec.toml"
    body = (
        f"name = '{name}'\nimage = 'nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt'\n"
        "command = 'echo from-cli'\nnum_gpus = 1\ncpus_per_task = 1\ntime_hours = 1\n"
        "use_sqsh = false\n"
    )
    spec_file.write_text(body + f"inputs = ['{sandbox.HOME}/{unique('nope')}']\n")
    assert main(["--config", str(cfg), "submit", str(spec_file)]) == 2
    assert "1 input path does not exist on the cluster" in capsys.readouterr().err

    spec_file.write_text(body)
    assert main(["--config", str(cfg), "submit", str(spec_file), "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert f"#SBATCH --job-name={name}" in captured.out and "[checking inputs]" in captured.err
    assert staged_files(JobPaths(sandbox.RESULTS, name)) == []

    assert main(["--config", str(cfg), "submit", str(spec_file), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"id", "slurm_job_id", "job_dir"} and data["id"] == name
    assert jobs_named(name) == {data["slurm_job_id"]}
    assert main(["--config", str(cfg), "submit", str(spec_file)]) == 2  # name taken
    assert "another name" in capsys.readouterr().err


# ----------------------------------------------------------------------------------- GPU type


async def test_a_gpu_type_lands_on_a_node_of_that_type_and_an_unknown_one_is_explained(
    conn: Connection, store: JobStore, profile: Profile
) -> None:
    """The sandbox's nodes are typed (tao-n1/n2 gpu:a100:4, tao-n3 gpu:h100:4)."""
    gres = {
        line.split("|")[0]: line.split("|")[1]
        for line in local(["sinfo", "-N", "-h", "-p", "polar", "-o", "%N|%G"]).split()
    }
    h100 = sorted(node for node, g in gres.items() if ":h100:" in g)
    assert h100, gres
    name = unique("it-h100")
    submitter = Submitter(conn, store, "sandbox", profile)
    result = await submit(submitter, spec(name, gpu_type="h100", command="hostname"))
    assert await wait_terminal(result.slurm_job_id) == "COMPLETED"
    ran_on = local(["sacct", "-X", "-n", "-P", "-j", result.slurm_job_id, "--format=NodeList"])
    assert ran_on.split() == h100[:1] or ran_on.strip() in h100, ran_on

    other = unique("it-v100")
    with pytest.raises(OperationFailed) as refused:
        await submit(submitter, spec(other, gpu_type="v100"))
    text = str(refused.value)
    assert "Requested node configuration is not available" in text
    assert "1 v100 GPU " in text and "tao-slurm-tui capacity" in text
    assert store.get("sandbox", other) is None and live_jobs_named(other) == []


def test_cli_refuses_a_gpu_type_no_node_has_before_anything_is_staged(
    cluster: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Named in the spec, a GPU type is checked against the cluster's nodes (one capacity
    round trip) by the same rule as the composer's: one sentence, exit 2, nothing staged."""
    cfg = write_config(tmp_path)
    name = unique("it-v100")
    spec_file = tmp_path / "spec.toml"
    spec_file.write_text(
        f"name = '{name}'\nimage = 'nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt'\n"
        "command = 'hostname'\nnum_gpus = 1\ncpus_per_task = 1\ntime_hours = 1\n"
        "use_sqsh = false\ngpu_type = 'v100'\n"
    )
    assert main(["--config", str(cfg), "submit", str(spec_file)]) == 2
    err = capsys.readouterr().err
    assert "No node of partition 'polar' has GPU type 'v100' (it has a100, h100)" in err
    assert err.count("\n") == 1
    assert staged_files(JobPaths(sandbox.RESULTS, name)) == [] and jobs_named(name) == set()
    spec_file.write_text(spec_file.read_text().replace("'v100'", "'h100'"))
    assert main(["--config", str(cfg), "submit", str(spec_file), "--dry-run"]) == 0
    assert "#SBATCH --gres=gpu:h100:1" in capsys.readouterr().out
