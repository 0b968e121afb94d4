"""``tao-slurm-tui render``: prints the script with no network; a bad spec exits 2."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tao_slurm_tui.cli import main

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "train-demo.toml"

SANDBOX_CONFIG = """
default_profile = "sandbox"
[profiles.sandbox]
user = "slurmtest"
hostnames = ["127.0.0.1"]
port = 2222
partition = "polar"
base_results_dir = "/home/slurmtest/tao"
container_runtime = "none"
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(SANDBOX_CONFIG, encoding="utf-8")
    return path


def test_render_demo_spec(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(config), "render", str(DEMO)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#!/bin/bash\n")
    assert "#SBATCH --job-name=train-demo" in out
    assert "#SBATCH --partition=polar" in out
    assert "#SBATCH --output=/home/slurmtest/tao/slurm-logs/%x-%j/main.out" in out
    assert "--container-image" not in out  # runtime none
    result = subprocess.run(["bash", "-n"], input=out, text=True, capture_output=True, check=False)
    assert result.returncode == 0, result.stderr


def test_render_entrypoint(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(config), "render", "--entrypoint", str(DEMO)]) == 0
    out = capsys.readouterr().out
    assert "examples/train.py --epochs 12" in out
    result = subprocess.run(["bash", "-n"], input=out, text=True, capture_output=True, check=False)
    assert result.returncode == 0, result.stderr


def test_render_without_a_config_uses_the_platform_defaults(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["render", str(DEMO)]) == 0
    out = capsys.readouterr().out
    # Pyxis by default: the registry part before '#', and the refused-key check for it.
    assert "--container-image=tao-registry.internal:5000#nvidia/tao/tao-toolkit:sandbox" in out
    assert "tao_pull_check tao-registry.internal:5000 nvidia/tao/tao-toolkit" in out


def test_bad_spec_exits_2_naming_the_field(
    tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text('name = "x"\nimage = "nvcr.io/a/b:t"\ncommand = "c"\nnum_nodes = 0\n')
    assert main(["--config", str(config), "render", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "'num_nodes'" in err and "at least 1" in err
    assert "Traceback" not in err


def test_time_above_partition_limit_exits_2(
    tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "long.toml"
    spec.write_text('name = "x"\nimage = "nvcr.io/a/b:t"\ncommand = "c"\ntime_hours = 12\n')
    assert main(["--config", str(config), "render", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "'polar'" in err and "4 h" in err


def test_missing_spec_file_exits_2(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(config), "render", "/nonexistent/spec.toml"]) == 2
    assert "no such spec file" in capsys.readouterr().err


def test_environment_overrides_reach_render(
    config: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # SLURM_TIME_HOURS / SLURM_USE_REQUEUE are the defaults of a spec that leaves them out, for
    # the CLI as for the composer (they used to be ignored by render and submit).
    spec = tmp_path / "short.toml"
    spec.write_text('name = "env-test"\nimage = "ubuntu:22.04"\ncommand = "true"\n', "utf-8")
    monkeypatch.setenv("SLURM_TIME_HOURS", "2")
    monkeypatch.setenv("SLURM_USE_REQUEUE", "false")
    assert main(["--config", str(config), "render", str(spec)]) == 0
    out = capsys.readouterr().out
    assert "#SBATCH --time=02:00:00" in out
    assert "--requeue" not in out
    assert "timeout 114m " in out  # 0.95 x 2 h, the derived command timeout
    monkeypatch.delenv("SLURM_USE_REQUEUE")
    spec.write_text(spec.read_text("utf-8") + "time_hours = 1.0\n", "utf-8")
    assert main(["--config", str(config), "render", str(spec)]) == 0
    out = capsys.readouterr().out
    assert "#SBATCH --time=01:00:00" in out and "#SBATCH --requeue" in out
