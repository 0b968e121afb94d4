"""Every CLI verb goes through the application layer, so ``TAO_SLURM_TUI_DEMO=1`` runs it on the
real back end over the fake cluster, exactly as it runs the TUI (no cluster; the demo's own
store and SSH files in the cache dir, the user's state DB and ~/.ssh untouched)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tao_slurm_tui.cli import main
from tao_slurm_tui.services.fakecluster.seed import FAKE_HOST


@pytest.fixture(autouse=True)
def demo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TAO_SLURM_TUI_DEMO", "1")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_status_lists_the_demo_jobs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = _run(capsys, "status", "--json")
    assert code == 0
    jobs = {job["id"]: job for job in json.loads(out)}
    assert jobs["dino-train-1"]["status"] == "Running"
    assert not (tmp_path / "data").exists()  # the demo's store is its own
    assert not (tmp_path / "home").exists()  # and so are its SSH key and known_hosts


def test_logs_tail_and_unknown_job(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "logs", "dino-train-1", "--tail", "3")
    assert code == 0 and len(out.splitlines()) == 3
    code, _, err = _run(capsys, "logs", "no-such-job")
    assert code == 2 and "no-such-job" in err and "Traceback" not in err


def test_submit_dry_run_renders_and_submit_records(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text('name = "demo-cli"\nimage = "ubuntu:22.04"\ncommand = "true"\n', "utf-8")
    code, out, _ = _run(capsys, "submit", "--dry-run", str(spec))
    assert code == 0 and "#SBATCH --job-name=demo-cli" in out
    code, out, err = _run(capsys, "submit", "--json", str(spec))
    assert code == 0, err
    assert json.loads(out)["id"] == "demo-cli"
    assert "[sbatch]" in err  # progress on stderr, as with the real back end


def test_cancel_doctor_and_creds(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "cancel", "dino-train-1")
    assert code == 0 and out.strip() == "dino-train-1 canceled."
    code, out, _ = _run(capsys, "status", "--json")  # the next process sees the same cluster
    jobs = {job["id"]: job for job in json.loads(out)}
    assert jobs["dino-train-1"]["status"] == "Canceled" and jobs["dep-waiter"]["status"] in {
        "Pending",
        "Canceled",
    }
    code, out, _ = _run(capsys, "doctor", "--json")
    assert code == 1  # the demo's set-up is not finished: login2's host key is not trusted
    assert {c["check"] for c in json.loads(out)} >= {"profile", "host_keys", "login"}
    code, _, err = _run(capsys, "creds", "check")
    assert code == 1 and FAKE_HOST in err


def test_render_entrypoint(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text('name = "demo-ep"\nimage = "ubuntu:22.04"\ncommand = "echo hi"\n', "utf-8")
    code, out, _ = _run(capsys, "render", "--entrypoint", str(spec))
    assert code == 0 and "echo hi" in out
