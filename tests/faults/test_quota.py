"""A full file system on the cluster (the sandbox's small loop-mounted ext4 says ENOSPC, as a
real site's quota says EDQUOT): while staging a job, while the job writes its results and logs,
and in the home where enroot keeps its credentials and image cache.

The promises: one sentence naming the file system, the user and the figures df gives, and what
to do; nothing half-written (no staged file, no record, no SLURM job after a failed staging);
the job and its history kept; no retry that would hit the same wall.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.errors import OperationFailed
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services import credentials
from tao_slurm_tui.services.store import JobStore
from tests import sandbox
from tests.faults.test_faults import assert_no_orphan, known_ids, live_jobs, one_sentence
from tests.integration.conftest import harness
from tests.integration.monitor_helpers import PROFILE, Harness, job_spec, unique
from tests.integration.submit_helpers import submit

# The small file system and the small home are used by these tests only; they fill them one
# at a time (one xdist group), beside the rest of the suite.
pytestmark = [pytest.mark.slow, pytest.mark.own_fault, pytest.mark.xdist_group("small-fs")]


def small_fs() -> dict[str, Any]:
    info: dict[str, Any] = sandbox.info()["small_fs"]
    return info


@contextlib.asynccontextmanager
async def on_small_fs(tmp_path: Path) -> AsyncIterator[Harness]:
    """The harness with the profile's results root on the small file system."""
    base = sandbox.user_dir(f"{small_fs()['path']}/tao")
    profile = sandbox.sandbox_profile(base_results_dir=str(base))
    async with harness(profile, JobStore(tmp_path / "state.db")) as h:
        yield h


def files_named(root: str, name: str) -> list[str]:
    out = subprocess.run(
        ["find", root, "-name", f"*{name}*"], capture_output=True, text=True, check=False
    )
    return sorted(out.stdout.split())


def assert_disk_full_sentence(text: str, *, mount: str, user: str = sandbox.USER) -> None:
    one_sentence(text)
    assert f"({mount}) is full for {user}: " in text, text
    assert " MiB used of " in text and " free; free space there" in text, text


# The moments of a submission the file system fills up at (the progress it reports then).
STAGING_POINTS = {
    "layout": "creating the job layout",
    "spec": "writing ",  # the first file staged (specs/<id>.json)
    "launch": "writing ",  # meta/<id>.json and the batch script (the SBATCH stage)
}


@pytest.mark.parametrize("point", sorted(STAGING_POINTS))
async def test_results_file_system_full_while_staging(tmp_path: Path, point: str) -> None:
    mount = small_fs()["mount"]
    async with on_small_fs(tmp_path) as h:
        name = unique(f"fq{point[:3]}")
        base = h.profile.results_root
        fills = contextlib.ExitStack()
        stage_of_point = "sbatch" if point == "launch" else "staging"
        filled: list[str] = []

        def progress(stage: str, detail: str) -> None:
            if stage == stage_of_point and detail.startswith(STAGING_POINTS[point]) and not filled:
                fills.enter_context(sandbox.filled(small_fs()["path"]))
                filled.append(detail)

        with fills, pytest.raises(OperationFailed) as info:
            await submit(h.submitter, job_spec(name, "sleep 30"), on_progress=progress)
        assert filled, "the file system was never filled"
        assert_disk_full_sentence(str(info.value), mount=mount)
        assert "the results file system" in str(info.value).lower()
        # Nothing half-written: no file of the job, no record, no SLURM job.
        assert files_named(base, name) == []
        assert h.store.get(PROFILE, name) is None
        assert live_jobs(name) == []
        # Space freed: the same spec goes through, once.
        await submit(h.submitter, job_spec(name, "sleep 30"))
        job = h.store.require(PROFILE, name)
        assert job.submitted and len(job.attempts) == 1
        assert_no_orphan(name, known_ids(h, name))


async def test_job_stops_when_its_results_fill_the_file_system(tmp_path: Path) -> None:
    """The job writes a checkpoint bigger than what is left: it fails, its log may be lost with
    it, and the monitor says why (not "see main.err"), does not retry, and keeps its history."""
    fs = small_fs()
    async with on_small_fs(tmp_path) as h:
        name = unique("fqjob")
        results = '"$TAO_API_RESULTS_DIR/$TAO_JOB_ID"'
        try:
            await h.submit(
                name,
                f"mkdir -p {results} && echo epoch 1 && "
                f"dd if=/dev/zero of={results}/model_epoch_001.pth bs=1M count=64",
            )
            job = await h.tick_until(name, lambda j: j.status.terminal)
            assert job.status is TaoStatus.ERROR, job.status_json()
            assert job.message.startswith("The job stopped because the results file system ")
            assert_disk_full_sentence(job.message, mount=fs["mount"])
            assert "clone the job (e)" in job.message
            assert len(job.attempts) == 1, "a full file system is never retried"
            assert [e.kind for e in h.store.events(PROFILE, name)][:1] == ["submitted"]
        finally:
            for path in Path(fs["path"], "tao", "results").glob(f"{name}*"):
                subprocess.run(["rm", "-rf", str(path)], check=False)
        assert_no_orphan(name, known_ids(h, name))


# ----------------------------------------------------------------------------- the small home


def small_home_profile(base: str) -> Any:
    home = sandbox.info()["small_home"]
    return sandbox.sandbox_profile(
        user=home["user"],
        ssh_key_path=home["key"],
        known_hosts=home["known_hosts"],
        base_results_dir=base,
    )


async def test_full_home_refuses_the_enroot_credentials_with_the_figures() -> None:
    home = sandbox.info()["small_home"]
    creds = Path(home["enroot_credentials"])
    before = creds.read_bytes() if creds.exists() else None
    sentinel = "SENTINEL" + "x" * 60 + "NGC"
    profile = small_home_profile(f"{home['home']}/tao")
    try:
        async with Connection(profile) as conn:
            with (
                sandbox.filled(home["home"], user=home["user"]),
                pytest.raises(OperationFailed) as info,
            ):
                await credentials.install_ngc_credentials(conn, sentinel)
            text = str(info.value)
            one_sentence(text)
            assert text.startswith("Could not install the enroot credentials: Your home on ")
            assert f"({home['mount']}) is full for {home['user']}: " in text, text
            assert "install the key again" in text and sentinel not in text
            # Nothing half-written: the file is as it was, no temp file beside it.
            assert (creds.read_bytes() if creds.exists() else None) == before
            assert not list(creds.parent.glob(".credentials.*"))
            # Freed: the same install works.
            await credentials.install_ngc_credentials(conn, sentinel)
            assert sentinel in creds.read_text()
    finally:
        if before is None:
            creds.unlink(missing_ok=True)
        else:
            creds.write_bytes(before)


async def test_job_stops_when_it_fills_the_home(tmp_path: Path) -> None:
    """Results and logs in a small home (what a new user's profile often has): the job that
    fills it ends Error with the home's figures, not retried."""
    home = sandbox.info()["small_home"]
    base = sandbox.user_dir(f"{home['home']}/tao", user=home["user"])
    async with harness(small_home_profile(str(base)), JobStore(tmp_path / "state.db")) as h:
        name = unique("fqhome")
        results = '"$TAO_API_RESULTS_DIR/$TAO_JOB_ID"'
        try:
            await h.submit(
                name, f"mkdir -p {results} && dd if=/dev/zero of={results}/big bs=1M count=64"
            )
            job = await h.tick_until(name, lambda j: j.status.terminal)
            assert job.status is TaoStatus.ERROR, job.status_json()
            assert job.message.startswith("The job stopped because your home on the cluster (")
            assert f"({home['mount']}) is full for {home['user']}: " in job.message
            assert len(job.attempts) == 1
        finally:
            subprocess.run(["rm", "-rf", str(base / "results" / name)], check=False)
        assert_no_orphan(name, known_ids(h, name))
