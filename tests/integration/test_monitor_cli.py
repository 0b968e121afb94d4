"""The status / logs / cancel verbs end to end on the sandbox."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import tomli_w

from tao_slurm_tui import cli
from tao_slurm_tui.config import state_db_path
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services.store import JobStore
from tests.integration.monitor_helpers import Harness, status_line, unique


def write_config(tmp_path: Path, profile: Profile) -> str:
    path = tmp_path / "config.toml"
    data = {
        "default_profile": "sandbox",
        "poll_interval": 2.0,
        "profiles": {"sandbox": profile.model_dump(mode="json", exclude_none=True)},
    }
    path.write_text(tomli_w.dumps(data))
    return str(path)


async def _submit(profile: Profile, name: str, command: str) -> None:
    store = JobStore(state_db_path())
    try:
        async with Connection(profile) as conn:
            await Harness(conn, store, profile).submit(name, command)
    finally:
        store.close()


def test_status_watch_logs_and_cancel(
    sandbox_profile: Profile, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, sandbox_profile)
    name = unique("cli")
    asyncio.run(
        _submit(
            sandbox_profile, name, f"echo line-1; echo oops >&2; {status_line('SUCCESS', 'fine')}"
        )
    )
    assert cli.main(["--config", config, "status", name, "--json", "--watch"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    final = json.loads(lines[-1])
    usage = final[0].pop("usage")
    # The finished job's usage (added key): it ran, so it has an elapsed time and no GPUs.
    assert usage["elapsed_s"] is not None and usage["gpus"] == 0 and usage["gpu_hours"] == 0
    # The training keys (added): a job that wrote no epochs has no forecast and no KPIs.
    runs = final[0].pop("runs")
    assert final[0].pop("forecast") is None and final[0].pop("kpi") == {}
    assert runs is None or (runs["forecast"] is None and runs["problem"] == "")
    assert final == [
        {
            "id": name,
            "status": "Complete",
            "slurm_state": "COMPLETED",
            "slurm_job_id": final[0]["slurm_job_id"],
            "retries": 0,
            "reason": "",
            "message": "fine",
        }
    ]
    assert cli.main(["--config", config, "logs", name]) == 0
    assert "line-1" in capsys.readouterr().out
    assert cli.main(["--config", config, "logs", name, "--err", "--tail", "1"]) == 0
    assert capsys.readouterr().out == "oops\n"
    assert cli.main(["--config", config, "logs", name, "--follow"]) == 0
    assert "line-1" in capsys.readouterr().out
    # Cancelling a finished job is a success and keeps its status.
    assert cli.main(["--config", config, "cancel", name]) == 0
    assert "already finished" in capsys.readouterr().out
    assert cli.main(["--config", config, "status", "no-such-job"]) == 2


def test_cancel_verb_cancels_a_running_job(
    sandbox_profile: Profile, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, sandbox_profile)
    name = unique("cli-cancel")
    asyncio.run(_submit(sandbox_profile, name, "sleep 300"))
    assert cli.main(["--config", config, "cancel", name]) == 0
    assert capsys.readouterr().out.strip() == f"{name} canceled."
    assert cli.main(["--config", config, "status", name, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["status"] == "Canceled"
