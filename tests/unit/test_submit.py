"""Exactly-once submission and SQSH planning against a scripted fake connection (no network)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from tao_slurm_tui.core.images import parse_image
from tao_slurm_tui.core.models import Attempt, JobRecord
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.spec import ResolveContext, ResolvedJob, SpecDraft, resolve
from tao_slurm_tui.errors import BadInput, OperationFailed, TaoError
from tao_slurm_tui.remote.connection import CommandTimeout, ConnectionLost
from tao_slurm_tui.services import images
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.services.submit import (
    SbatchOnce,
    Submitter,
    check_paths_command,
    parse_missing,
    parse_reconcile,
    parse_submitted,
    sbatch_command,
)

NOW = "2026-11-29T21:00:00"


@dataclass
class Result:
    command: str
    exit_status: int
    stdout: str = ""
    stderr: str = ""
    host: str = "login1"

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


Handler = Callable[[str], Result]


class FakeConn:
    """Answers commands by what they start with; records everything."""

    def __init__(self) -> None:
        self.host = "login1"
        self.commands: list[str] = []
        self.uploads: dict[str, tuple[str, int]] = {}
        self.sbatch: list[Handler] = []
        """One handler per expected sbatch run, in order."""
        self.reconcile: list[str] = []
        """squeue rows (``id|state|submit|reason``) the reconcile sees, per lookup."""
        self.missing: list[str] = []
        self.maxtime = "04:00:00"
        self.probe = "MAGIC=\nINFLIGHT=\n"
        self.conversion = ""
        """SLURM id a SQSH conversion job's sbatch gets ('' : sbatch prints nothing)."""
        self.on_sbatch: Callable[[], None] | None = None

    async def run(
        self,
        cmd: str | Sequence[str],
        *,
        input: str | None = None,
        timeout: float | None = None,
        check: bool = False,
        retry_on_drop: bool = True,
    ) -> Result:
        text = cmd if isinstance(cmd, str) else " ".join(cmd)
        self.commands.append(text)
        if text.startswith("scontrol show partition"):
            out = f"PartitionName=polar Default=YES MaxTime={self.maxtime} State=UP\n@@sinfo\n"
            return Result(text, 0, out)
        if text.startswith('printf "NOW='):
            return Result(text, 0, "NOW=1\n" + "".join(f"MISSING={p}\n" for p in self.missing))
        if text.startswith("t=$(sbatch --test-only"):
            assert not retry_on_drop, "sbatch must never be re-run by the transport"
            if self.on_sbatch:
                self.on_sbatch()
            return self.sbatch.pop(0)(text)
        if text.startswith('printf "@@now'):
            rows = self.reconcile.pop(0) if self.reconcile else ""
            return Result(text, 0, f"@@now {NOW}\n@@squeue rc=0\n{rows}\n@@sacct rc=0\n\n")
        if text.startswith('printf "MAGIC='):
            return Result(text, 0, self.probe)
        if text.startswith("sbatch --parsable --export=ALL") and self.conversion:
            return Result(text, 0, f"{self.conversion}\n")
        return Result(text, 0, "")

    async def upload_text(self, path: str, content: str, *, mode: int = 0o644) -> None:
        self.uploads[path] = (content, mode)

    def count(self, prefix: str) -> int:
        return sum(1 for c in self.commands if c.startswith(prefix))


def ok(job_id: str) -> Handler:
    return lambda cmd: Result(cmd, 0, f"TAO_SUBMITTED={job_id}\n")


def drop(cmd: str) -> Result:
    raise ConnectionLost("The connection to login1 dropped while `sbatch` was running.")


def rejected(message: str) -> Handler:
    return lambda cmd: Result(
        cmd, 1, "", f"sbatch: error: Batch job submission failed: {message}\n"
    )


PROFILE = Profile(
    user="alice",
    hostnames=["login1"],
    partition="polar",
    base_results_dir="/lustre/alice",
    container_runtime="none",
)


@pytest.fixture
def profile() -> Profile:
    return PROFILE


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(tmp_path / "state.db")


def table(**over: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "job-1",
        "image": "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt",
        "command": "echo hi",
        "use_sqsh": False,
        "time_hours": 2,
    }
    data.update(over)
    return data


def make_spec(**over: Any) -> ResolvedJob:
    """The job resolved on PROFILE, as the back end hands it to the submitter."""
    return resolve(SpecDraft(table(**over)), PROFILE).require()


async def no_sleep(_: float) -> None:
    return None


def submitter(conn: FakeConn, store: JobStore, profile: Profile) -> Submitter:
    return Submitter(conn, store, "p", profile, sleep=no_sleep)


# ----------------------------------------------------------------------------------- pure


def test_sbatch_command_holds_makes_the_log_dir_and_releases() -> None:
    cmd = sbatch_command("/b/sbatch/job_x.sbatch", "/b/slurm-logs/x-", ["--exclude=n1"])
    assert "sbatch --parsable --export=ALL --hold --exclude=n1 /b/sbatch/job_x.sbatch" in cmd
    hold, mkdir, release = (cmd.index(s) for s in ("--hold", "mkdir -p", "scontrol release"))
    assert hold < mkdir < release
    assert 'mkdir -p -- /b/slurm-logs/x-"$id"' in cmd


def test_parse_submitted_bare_and_cluster_forms() -> None:
    assert parse_submitted("TAO_SUBMITTED=13\n") == "13"
    assert parse_submitted("TAO_SUBMITTED=13;taotest\n") == "13"
    assert parse_submitted("") == ""


def test_check_paths_lists_every_missing_path() -> None:
    cmd = check_paths_command(["/a b", "/c'd"])
    assert "'/a b'" in cmd and "test -e" in cmd
    assert parse_missing("NOW=1\nMISSING=/a b\nMISSING=/x\n") == ["/a b", "/x"]


def test_parse_reconcile_filters() -> None:
    output = (
        f"@@now {NOW}\n@@squeue rc=0\n"
        "40|PENDING|2026-11-29T20:59:50|JobHeldUser\n"
        "39|FAILED|2026-11-29T20:59:40|BadConstraints\n"
        "12|COMPLETED|2026-11-29T18:00:00|None\n"
        "41|PENDING|2026-11-29T20:59:55|None\n"
        "@@sacct rc=0\n"
        "38|FAILED|2026-11-29T20:59:30|None assigned\n"
    )
    answered, found = parse_reconcile(output, window_seconds=120, exclude_ids=["41"])
    assert answered
    # 41 is a known attempt, 39/38 rejected records, 12 too old: only 40 is adoptable.
    assert found == [("40", "PENDING")]
    assert parse_reconcile("@@squeue rc=1\n@@sacct rc=1\n", window_seconds=5) == (False, [])


# ----------------------------------------------------------------------------------- submit


async def test_record_exists_before_sbatch_and_is_marked_after(
    store: JobStore, profile: Profile
) -> None:
    conn = FakeConn()
    conn.sbatch = [ok("77")]
    seen: list[tuple[bool, bool]] = []

    def check() -> None:
        rec = store.get("p", "job-1")
        seen.append((rec is not None, bool(rec and rec.submitted)))

    conn.on_sbatch = check
    stages: list[str] = []
    result = await submitter(conn, store, profile).submit(
        make_spec(), on_progress=lambda s, d: stages.append(s)
    )
    assert seen == [(True, False)]
    assert result.slurm_job_id == "77" and result.job_dir == "/lustre/alice"
    rec = store.require("p", "job-1")
    assert rec.submitted and rec.attempts[0].number == 0
    assert rec.attempts[0].slurm_job_id == "77" and rec.attempts[0].login_host == "login1"
    assert stages[0] == "checking inputs" and stages[-1] == "done"
    assert {"staging", "sbatch"} <= set(stages)
    # The layout, each file through the atomic upload; env is private.
    up = conn.uploads
    assert up["/lustre/alice/env/job-1.json"][1] == 0o600
    for path in (
        "/lustre/alice/specs/job-1.json",
        "/lustre/alice/meta/job-1.json",
        "/lustre/alice/entrypoints/job_job-1.sh",
        "/lustre/alice/sbatch/job_job-1.sbatch",
    ):
        assert path in up
    assert conn.count("t=$(sbatch --test-only") == 1


async def test_lost_connection_adopts_the_job_found_by_name(
    store: JobStore, profile: Profile
) -> None:
    conn = FakeConn()
    conn.sbatch = [drop]
    conn.reconcile = ["55|PENDING|2026-11-29T20:59:59|JobHeldUser"]
    result = await submitter(conn, store, profile).submit(make_spec())
    assert result.slurm_job_id == "55" and result.adopted
    assert conn.count("t=$(sbatch --test-only") == 1  # no second sbatch
    adopt = [c for c in conn.commands if "scontrol release '55'" in c or "release 55" in c]
    assert adopt and "mkdir -p -- /lustre/alice/slurm-logs/job-1-55" in adopt[0]
    rec = store.require("p", "job-1")
    assert rec.submitted and rec.slurm_job_id == "55"
    assert any("adopted" in w for w in result.warnings)


async def test_lost_connection_without_a_job_submits_once_more(
    store: JobStore, profile: Profile
) -> None:
    conn = FakeConn()
    conn.sbatch = [drop, ok("60")]
    conn.reconcile = ["", "", ""]
    result = await submitter(conn, store, profile).submit(make_spec())
    assert result.slurm_job_id == "60" and not result.adopted
    assert conn.count("t=$(sbatch --test-only") == 2
    # The reconcile looked before the retry (after every delay, as sbatch may still be running).
    first_retry = [
        i for i, c in enumerate(conn.commands) if c.startswith("t=$(sbatch --test-only")
    ][1]
    assert any(c.startswith('printf "@@now') for c in conn.commands[:first_retry])


async def test_timeout_then_job_appears_late_is_adopted(store: JobStore, profile: Profile) -> None:
    conn = FakeConn()

    def timeout(cmd: str) -> Result:
        raise CommandTimeout("sbatch did not finish")

    conn.sbatch = [timeout]
    conn.reconcile = ["", "61|PENDING|2026-11-29T20:59:59|None"]
    result = await submitter(conn, store, profile).submit(make_spec())
    assert result.slurm_job_id == "61" and conn.count("t=$(sbatch --test-only") == 1


async def test_unreachable_cluster_during_reconcile_leaves_job_unsubmitted(
    store: JobStore, profile: Profile
) -> None:
    conn = FakeConn()
    conn.sbatch = [drop]
    original = conn.run

    async def failing(cmd: Any, **kw: Any) -> Result:
        if isinstance(cmd, str) and cmd.startswith('printf "@@now'):
            raise ConnectionLost("down")
        return await original(cmd, **kw)

    conn.run = failing  # type: ignore[method-assign]
    with pytest.raises(OperationFailed, match="run submit again"):
        await submitter(conn, store, profile).submit(make_spec())
    rec = store.require("p", "job-1")
    assert not rec.submitted
    assert conn.count("t=$(sbatch --test-only") == 1


async def test_rejected_sbatch_surfaces_slurm_and_can_be_fixed(
    store: JobStore, profile: Profile
) -> None:
    conn = FakeConn()
    conn.sbatch = [rejected("Invalid account or account/partition combination specified")]
    with pytest.raises(OperationFailed, match="Invalid account or account/partition"):
        await submitter(conn, store, profile).submit(make_spec(account="nosuch"))
    # SLURM said no: nothing half-done is left, neither the record nor the staged files.
    assert store.get("p", "job-1") is None
    assert conn.count("rm -f --") == 1
    # Same name, fixed spec: submitted as if for the first time.
    conn.sbatch = [ok("90")]
    result = await submitter(conn, store, profile).submit(make_spec())
    assert result.slurm_job_id == "90"
    assert store.require("p", "job-1").submitted


async def test_earlier_try_that_reached_slurm_is_adopted_on_resubmit(
    store: JobStore, profile: Profile
) -> None:
    conn = FakeConn()
    conn.sbatch = [drop]

    async def unreachable(*a: Any, **k: Any) -> Any:
        raise OperationFailed("no host")

    sub = submitter(conn, store, profile)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(SbatchOnce, "_lookup", unreachable)
        with pytest.raises(TaoError):
            await sub.submit(make_spec())
    conn.reconcile = ["70|RUNNING|2026-11-29T20:59:59|vm"]
    result = await submitter(conn, store, profile).submit(make_spec())
    assert result.slurm_job_id == "70" and result.adopted
    assert conn.count("t=$(sbatch --test-only") == 1


async def test_a_submitted_name_is_refused(store: JobStore, profile: Profile) -> None:
    conn = FakeConn()
    conn.sbatch = [ok("1")]
    await submitter(conn, store, profile).submit(make_spec())
    with pytest.raises(BadInput, match="another name"):
        await submitter(conn, store, profile).submit(make_spec())


async def test_missing_inputs_listed_at_once_and_nothing_staged(
    store: JobStore, profile: Profile
) -> None:
    conn = FakeConn()
    conn.missing = ["/lustre/a", "/lustre/b"]
    spec = make_spec(inputs=["lustre:///lustre/a", "/lustre/b", "/lustre/c"])
    with pytest.raises(BadInput, match="/lustre/a, /lustre/b"):
        await submitter(conn, store, profile).submit(spec)
    checks = [c for c in conn.commands if c.startswith('printf "NOW=')]
    assert len(checks) == 1 and all(p in checks[0] for p in ("/lustre/a", "/lustre/b", "/lustre/c"))
    assert conn.uploads == {} and store.get("p", "job-1") is None
    assert not any(c.startswith("mkdir") for c in conn.commands)


async def test_wall_time_checked_against_the_real_maxtime(
    store: JobStore, profile: Profile
) -> None:
    conn = FakeConn()
    conn.maxtime = "01:30:00"  # the packaged list would allow 4 h
    limits = await submitter(conn, store, profile).partition_limits(refresh=True)
    draft = SpecDraft(table(time_hours=2))
    assert resolve(draft, profile).job is not None  # the packaged 4 h
    with pytest.raises(BadInput, match=r"MaxTime 1\.5 h"):
        resolve(draft, profile, ResolveContext(partition_limits=limits)).require()
    assert conn.uploads == {}


async def test_dry_run_is_check_and_render(store: JobStore, profile: Profile) -> None:
    conn = FakeConn()
    conn.missing = ["/lustre/a"]
    with pytest.raises(BadInput, match="/lustre/a"):  # the check runs
        await submitter(conn, store, profile).submit(make_spec(inputs=["/lustre/a"]), dry_run=True)
    conn.missing = []
    result = await submitter(conn, store, profile).submit(make_spec(use_sqsh=True), dry_run=True)
    assert result.dry_run and "#SBATCH --job-name=job-1" in result.script
    assert conn.uploads == {} and store.get("p", "job-1") is None
    assert conn.count("t=$(sbatch --test-only") == 0
    # No image preparation: no SQSH probe, no conversion; the script checks the file at start.
    assert conn.count('printf "MAGIC=') == 0 and conn.count("sbatch --parsable") == 0
    assert "/lustre/alice/sqsh/nvcr.io_nvidia_tao_tao-toolkit_6.26.3-pyt.sqsh" in result.script
    assert "falling back to the registry image" in result.script
    assert any("when the job is submitted" in w for w in result.warnings)


async def test_resubmit_excludes_nodes_and_known_attempts(
    store: JobStore, profile: Profile
) -> None:
    conn = FakeConn()
    conn.sbatch = [ok("100")]
    sub = submitter(conn, store, profile)
    await sub.submit(make_spec())
    conn.sbatch = [drop]
    # Only the known attempt 100 carries the name: it must not be adopted; then a new job is.
    conn.reconcile = ["100|FAILED|2026-11-29T20:59:59|vm"] * 3
    conn.sbatch.append(ok("101"))
    job = store.require("p", "job-1")
    attempt = await sub.resubmit(job, exclude_nodes=["vm"], reason="NODE_FAIL")
    assert attempt.number == 1 and attempt.slurm_job_id == "101"
    assert "#SBATCH --exclude=vm" in conn.uploads["/lustre/alice/sbatch/job_job-1.sbatch"][0]
    rec = store.require("p", "job-1")
    assert [a.slurm_job_id for a in rec.attempts] == ["100", "101"]
    assert rec.attempts[1].retry_reason == "NODE_FAIL"


# ----------------------------------------------------------------------------------- sqsh


def test_conversion_script_is_job_scoped_and_checks_magic() -> None:
    ref = parse_image("nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt")
    name = images.conversion_job_name(ref)
    assert name == images.conversion_job_name(
        parse_image("docker://nvcr.io#nvidia/tao/tao-toolkit:6.26.3-pyt")
    )
    script = images.render_conversion_script(
        ref, "/c/x.sqsh", job_name=name, partition="polar", log_path="/b/slurm-logs/x-%j.out"
    )
    assert f"#SBATCH --job-name={name}" in script
    assert 'ENROOT_TEMP_PATH="${TMPDIR:-/tmp}/tao-enroot-${SLURM_JOB_ID}"' in script
    assert 'enroot import -o "$partial" "$uri"' in script
    assert "uri=docker://nvcr.io#nvidia/tao/tao-toolkit:6.26.3-pyt" in script.replace("'", "")
    assert (
        script.index("enroot import")
        < script.index("!= hsqs")
        < script.index('mv -f -- "$partial"')
    )


def test_probe_parsing() -> None:
    assert images.parse_probe("MAGIC=hsqs\nINFLIGHT=\n") == (True, [])
    assert images.parse_probe("MAGIC=\nINFLIGHT=12 13 \n") == (False, ["12", "13"])


async def test_sqsh_conversion_submitted_and_training_depends_afterany(
    store: JobStore, profile: Profile
) -> None:
    conn = FakeConn()
    conn.sbatch = [ok("201")]
    conn.conversion = "200"
    result = await submitter(conn, store, profile).submit(make_spec(use_sqsh=True))
    assert result.sqsh_job_id == "200" and result.slurm_job_id == "201"
    script = conn.uploads["/lustre/alice/sbatch/job_job-1.sbatch"][0]
    assert "#SBATCH --dependency=afterany:200" in script
    assert "falling back to the registry image" in script
    assert any("falls back" in w for w in result.warnings)
    events = [e.kind for e in store.events("p", "job-1")]
    assert "sqsh" in events
    assert store.require("p", "job-1").sqsh_job_id == "200"


async def test_sqsh_conversion_in_flight_is_waited_for_not_duplicated(
    store: JobStore, profile: Profile
) -> None:
    conn = FakeConn()
    conn.probe = "MAGIC=\nINFLIGHT=150\n"
    conn.sbatch = [ok("151")]
    result = await submitter(conn, store, profile).submit(make_spec(use_sqsh=True))
    assert result.sqsh_job_id == "150"
    assert not any(c.startswith("sbatch --parsable") for c in conn.commands)
    assert "afterany:150" in conn.uploads["/lustre/alice/sbatch/job_job-1.sbatch"][0]


async def test_valid_cache_is_used_directly(store: JobStore, profile: Profile) -> None:
    conn = FakeConn()
    conn.probe = "MAGIC=hsqs\nINFLIGHT=\n"
    conn.sbatch = [ok("300")]
    result = await submitter(conn, store, profile).submit(make_spec(use_sqsh=True))
    assert result.sqsh_job_id == ""
    script = conn.uploads["/lustre/alice/sbatch/job_job-1.sbatch"][0]
    assert "--dependency" not in script
    # The cached file is run directly (no runtime fallback check needed).
    assert "runtime: none" in script and "HOOK: SQSH" not in script
    assert any(
        "/lustre/alice/sqsh/nvcr.io_nvidia_tao_tao-toolkit_6.26.3-pyt.sqsh" in c
        for c in conn.commands
    )


async def test_latest_reconverts_only_when_forced(store: JobStore, profile: Profile) -> None:
    conn = FakeConn()
    conn.probe = "MAGIC=hsqs\nINFLIGHT=\n"
    plan = await images.ImageService(conn, profile).prepare(
        parse_image("nvcr.io/nvidia/x:latest"), use_sqsh=True
    )
    assert plan.action == "cached" and plan.warnings
    conn.conversion = "500"
    forced = profile.model_copy(update={"force_reconvert_latest": True})
    plan = await images.ImageService(conn, forced).prepare(
        parse_image("nvcr.io/nvidia/x:latest"), use_sqsh=True
    )
    assert plan.action == "convert" and plan.conversion_job_id == "500"


def test_sqsh_cache_dir_defaults_under_base(profile: Profile) -> None:
    assert images.cache_dir_for(profile) == "/lustre/alice/sqsh"
    other = profile.model_copy(update={"sqsh_cache_dir": "/cache/"})
    assert images.cache_dir_for(other) == "/cache"
    assert re.fullmatch(r"sqsh-[0-9a-f]{12}", images.conversion_job_name(parse_image("a/b:c")))


# ----------------------------------------------------------------------------------- pipelines


def pipeline_spec() -> ResolvedJob:
    return make_spec(
        then=[
            {"action": "evaluate", "command": "echo eval", "num_gpus": 1},
            {"action": "export", "command": "echo export"},
        ]
    )


def sbatch_scripts(conn: FakeConn) -> dict[str, str]:
    return {p: c for p, (c, _) in conn.uploads.items() if "/sbatch/" in p}


async def test_pipeline_steps_are_submitted_at_once_each_after_the_previous(
    store: JobStore, profile: Profile
) -> None:
    conn = FakeConn()
    conn.sbatch = [ok("10"), ok("11"), ok("12")]
    result = await submitter(conn, store, profile).submit(pipeline_spec())
    assert [r.slurm_job_id for r in (result, *result.steps)] == ["10", "11", "12"]
    scripts = sbatch_scripts(conn)
    first = scripts["/lustre/alice/sbatch/job_job-1.sbatch"]
    second = scripts["/lustre/alice/sbatch/job_job-1-evaluate.sbatch"]
    third = scripts["/lustre/alice/sbatch/job_job-1-export.sbatch"]
    assert "--dependency" not in first
    assert "#SBATCH --dependency=afterok:10\n" in second
    assert "#SBATCH --dependency=afterok:11\n" in third
    assert "export TAO_PREVIOUS_RESULTS_DIR=/lustre/alice/results/job-1-evaluate" in third
    steps = store.pipeline("p", "job-1")
    assert [(s.id, s.pipeline_step, s.submitted) for s in steps] == [
        ("job-1", 0, True),
        ("job-1-evaluate", 1, True),
        ("job-1-export", 2, True),
    ]
    meta = conn.uploads["/lustre/alice/meta/job-1-export.json"][0]
    assert '"after_slurm_job_id": "11"' in meta


async def test_a_lost_sbatch_of_a_later_step_is_adopted_not_doubled(
    store: JobStore, profile: Profile
) -> None:
    conn = FakeConn()
    conn.sbatch = [ok("10"), drop, ok("12")]
    conn.reconcile = ["11|PENDING|2026-11-29T20:59:59|Dependency"]
    result = await submitter(conn, store, profile).submit(pipeline_spec())
    assert [r.slurm_job_id for r in (result, *result.steps)] == ["10", "11", "12"]
    assert result.steps[0].adopted and conn.count("t=$(sbatch --test-only") == 3
    # The step after the adopted one depends on the adopted SLURM job.
    assert "afterok:11\n" in sbatch_scripts(conn)["/lustre/alice/sbatch/job_job-1-export.sbatch"]


async def test_a_refused_later_step_keeps_the_earlier_and_a_second_submit_finishes(
    store: JobStore, profile: Profile
) -> None:
    conn = FakeConn()
    conn.sbatch = [ok("10"), rejected("Requested node configuration is not available")]
    with pytest.raises(OperationFailed) as caught:
        await submitter(conn, store, profile).submit(pipeline_spec())
    message = str(caught.value)
    assert message.startswith("step 2 of 3 (job-1-evaluate) was not submitted: SLURM refused")
    assert "job-1 (SLURM job 10)" in message and "submit the same spec again" in message
    assert store.get("p", "job-1-evaluate") is None and store.require("p", "job-1").submitted
    conn.sbatch = [ok("21"), ok("22")]
    result = await submitter(conn, store, profile).submit(pipeline_spec())
    assert [r.slurm_job_id for r in (result, *result.steps)] == ["10", "21", "22"]
    assert conn.count("t=$(sbatch --test-only") == 4  # step 1 was not submitted twice
    assert "afterok:10\n" in sbatch_scripts(conn)["/lustre/alice/sbatch/job_job-1-evaluate.sbatch"]


async def test_a_retried_step_keeps_its_pipeline_variables_without_a_dependency(
    store: JobStore, profile: Profile
) -> None:
    conn = FakeConn()
    conn.sbatch = [ok("10"), ok("11"), ok("12"), ok("31")]
    sub = submitter(conn, store, profile)
    await sub.submit(pipeline_spec())
    await sub.resubmit(store.require("p", "job-1-evaluate"), reason="NCCL")
    script = sbatch_scripts(conn)["/lustre/alice/sbatch/job_job-1-evaluate.sbatch"]
    assert "--dependency" not in script
    assert "export TAO_PREVIOUS_RESULTS_DIR=/lustre/alice/results/job-1" in script
    assert "export TAO_PIPELINE_STEP=2" in script


async def test_pipeline_dry_run_submits_nothing_and_shows_a_placeholder(
    store: JobStore, profile: Profile
) -> None:
    conn = FakeConn()
    result = await submitter(conn, store, profile).submit(pipeline_spec(), dry_run=True)
    assert conn.count("t=$(sbatch --test-only") == 0 and store.list_jobs() == []
    assert len(result.steps) == 2
    assert "afterok:<SLURM id of the previous step>" in result.steps[1].script


# ----------------------------------------------------------------------------------- stored steps


async def test_the_store_keeps_the_resolved_step_and_a_retry_runs_it_as_planned(
    store: JobStore, profile: Profile
) -> None:
    conn = FakeConn()
    conn.sbatch = [ok("40"), ok("41")]
    await submitter(conn, store, profile).submit(make_spec(num_gpus=16))
    record = store.require("p", "job-1")
    assert record.spec["num_gpus"] == 16 and record.plan["partition"] == "polar"
    assert record.plan["shape"]["nodes"] == 2  # 16 GPUs: two exclusive nodes of 8
    # The profile changed since (another partition, bigger nodes, another account): the retry
    # runs what was submitted, checked against nothing new.
    changed = profile.model_copy(
        update={"partition": "other", "account": "acct", "max_gpus_per_node": 16}
    )
    await submitter(conn, store, changed).resubmit(record, reason="NODE_FAIL")
    script = conn.uploads["/lustre/alice/sbatch/job_job-1.sbatch"][0]
    assert "#SBATCH --partition=polar\n" in script and "--account" not in script
    assert "#SBATCH --nodes=2\n" in script and "#SBATCH --exclusive\n" in script
    assert store.require("p", "job-1").slurm_job_id == "41"


def legacy_record(job_id: str, step: int = 0, pipeline: str = "", **spec: Any) -> JobRecord:
    """A job as a version before stored plans kept it: its spec only."""
    data = {**table(name=job_id), **spec}
    data.setdefault("timeout_hours", 1.9)
    return JobRecord(
        id=job_id,
        profile="p",
        spec=data,
        base_results_dir="/lustre/alice",
        submitted=True,
        attempts=[Attempt(0, str(60 + step), state="NODE_FAIL")],
        pipeline_id=pipeline,
        pipeline_step=step,
    )


async def test_a_job_stored_before_plans_were_is_retried_from_its_spec(
    store: JobStore, profile: Profile
) -> None:
    store.create_job(legacy_record("old", time_hours=6))  # above today's 4 h: not checked
    store.create_job(legacy_record("pl", 0, "pl"))
    store.create_job(legacy_record("pl-ev", 1, "pl"))
    conn = FakeConn()
    conn.sbatch = [ok("70"), ok("71")]
    sub = submitter(conn, store, profile)
    attempt = await sub.resubmit(store.require("p", "old"), reason="NODE_FAIL")
    assert attempt.slurm_job_id == "70" and attempt.number == 1
    script = conn.uploads["/lustre/alice/sbatch/job_old.sbatch"][0]
    assert "#SBATCH --time=06:00:00\n" in script and "#SBATCH --partition=polar\n" in script
    await sub.resubmit(store.require("p", "pl-ev"), reason="NCCL")
    step = conn.uploads["/lustre/alice/sbatch/job_pl-ev.sbatch"][0]
    assert "export TAO_PREVIOUS_RESULTS_DIR=/lustre/alice/results/pl" in step
    assert "export TAO_PIPELINE_STEP=2" in step and "--dependency" not in step


async def test_a_stored_plan_this_version_cannot_read_is_made_again(
    store: JobStore, profile: Profile
) -> None:
    store.create_job(replace(legacy_record("newer"), plan={"version": 99, "what": "?"}))
    conn = FakeConn()
    conn.sbatch = [ok("80")]
    attempt = await submitter(conn, store, profile).resubmit(store.require("p", "newer"))
    assert attempt.slurm_job_id == "80"
    assert "#SBATCH --job-name=newer" in conn.uploads["/lustre/alice/sbatch/job_newer.sbatch"][0]
