"""The sandbox's stand-ins where their logic can be checked without the cluster: TAO's status-line
format, checkpoint names and the latest link, TensorBoard's record framing, the launcher's own
errors, and nvidia-smi's formats for the GPUs of a job step. (Composition against the real schema
and whole runs happen inside the image: tests/integration/test_sandbox_tao.py.)"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

STANDINS = Path(__file__).resolve().parents[2] / "scripts" / "sandbox"
sys.path.insert(0, str(STANDINS))
status: Any = importlib.import_module("tao_sandbox.status")
events: Any = importlib.import_module("tao_sandbox.events")
runner: Any = importlib.import_module("tao_sandbox.runner")
entrypoint: Any = importlib.import_module("tao_sandbox.entrypoint")
networks: Any = importlib.import_module("tao_sandbox.networks")
tensorboard: Any = importlib.import_module("tao_sandbox.tensorboard")


def load_nvidia_smi(node_local: Path, load_dir: Path) -> Any:
    loader = importlib.machinery.SourceFileLoader(
        "nvidia_smi", str(STANDINS / "bin" / "nvidia-smi")
    )
    spec = importlib.util.spec_from_loader("nvidia_smi", loader)
    assert spec is not None
    module: Any = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    module.NODE_LOCAL = str(node_local)
    module.LOAD_DIR = str(load_dir)
    return module


# ------------------------------------------------------------------------------- status.json


def test_status_line_is_tao_format(tmp_path: Path) -> None:
    log = status.StatusLogger(str(tmp_path / "status.json"))
    now = datetime(2026, 1, 2, 3, 4, 5)
    line = json.loads(
        log.line({"epoch": 0, "max_epoch": 2}, message="Training loop in progress", now=now)
    )
    # The caller's fields first, then TAO's, dates and times without zero padding.
    assert list(line) == ["epoch", "max_epoch", "date", "time", "status", "verbosity", "message"]
    assert (line["date"], line["time"]) == ("1/2/2026", "3:4:5")
    assert line["status"] == "RUNNING" and line["verbosity"] == "INFO"
    # Once set, the KPIs ride along on every later line, as TAO's logger keeps them.
    log.kpi = {"train_loss": 0.5}
    log.write(status=status.STARTED, message="x")
    log.write(message="y")
    written = [json.loads(x) for x in (tmp_path / "status.json").read_text().splitlines()]
    assert [w["kpi"] for w in written] == [{"train_loss": 0.5}] * 2
    assert status.td(2.004311) == "0:00:02.004311" and status.td(618) == "0:10:18"


# ------------------------------------------------------------------------------- checkpoints


def test_checkpoint_names_and_the_latest_link(tmp_path: Path) -> None:
    cls, dino = networks.NETWORKS["classification_pyt"], networks.NETWORKS["dino"]
    assert runner.checkpoint_name(cls, 3, 40) == "model_epoch_003.pth"
    assert runner.checkpoint_name(dino, 3, 40) == "model_epoch_003_step_00040.pth"
    assert runner.get_latest_checkpoint(str(tmp_path)) is None
    state = {"epoch": 0, "global_step": 4, "pytorch-lightning_version": "2.5.1"}
    runner.save_checkpoint(cls, str(tmp_path), "model_epoch_000.pth", state)
    runner.save_checkpoint(cls, str(tmp_path), "model_epoch_001.pth", {**state, "epoch": 1})
    link = tmp_path / "classifier_model_latest.pth"
    assert os.readlink(link) == "model_epoch_001.pth"  # relative, as Lightning's save_last="link"
    latest = runner.get_latest_checkpoint(str(tmp_path))
    assert latest == str(tmp_path / "model_epoch_001.pth")
    assert runner.load_checkpoint(latest)["epoch"] == 1
    (tmp_path / "junk.pth").write_text("not a checkpoint")
    with pytest.raises(Exception, match="invalid load key"):
        runner.load_checkpoint(str(tmp_path / "junk.pth"))
    with pytest.raises(FileNotFoundError):
        runner.load_checkpoint(str(tmp_path / "gone.pth"))


def test_hydra_arguments_split_as_tao_passes_them() -> None:
    argv = ["--config-path", "/specs", "--config-name", "train.yaml", "results_dir=/r", "+a.b=1"]
    assert runner.parse_hydra_args(argv) == ("/specs", "train.yaml", ["results_dir=/r", "+a.b=1"])


# ------------------------------------------------------------------------------- TensorBoard


def test_event_files_are_crc_checked_tfrecords(tmp_path: Path) -> None:
    assert events.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    writer = events.EventWriter(str(tmp_path))
    writer.scalar("train_loss_epoch", 0.25, 8)
    writer.close()
    records = events.read_records(writer.path)
    assert (
        len(records) == 2 and b"brain.Event:2" in records[0] and b"train_loss_epoch" in records[1]
    )
    blob = bytearray(Path(writer.path).read_bytes())
    blob[-6] ^= 0xFF
    Path(writer.path).write_bytes(bytes(blob))
    with pytest.raises(ValueError, match="CRC"):
        events.read_records(writer.path)
    assert tensorboard.event_files(str(tmp_path))[0][1].startswith("events.out.tfevents.")
    assert "<title>TensorBoard</title>" in tensorboard.page(str(tmp_path))


# ------------------------------------------------------------------------------- the launcher


def test_launcher_errors_are_tao_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert entrypoint.main("classification_pyt", ["train"]) == 1
    assert capsys.readouterr().out == (
        "ERROR: The subtask `train` requires the following argument: -e/--experiment_spec_file\n"
    )
    missing = tmp_path / "nope.yaml"
    assert entrypoint.main("dino", ["evaluate", "-e", str(missing)]) == 1
    assert capsys.readouterr().out == (
        f"ERROR: The indicated experiment spec file `{missing}` doesn't exist!\n"
    )
    with pytest.raises(SystemExit):
        entrypoint.main("classification_pyt", ["nosuch", "-e", str(missing)])
    assert "invalid choice: 'nosuch'" in capsys.readouterr().err


# ------------------------------------------------------------------------------- nvidia-smi


@pytest.fixture
def smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    node = tmp_path / "node"
    node.mkdir()
    (node / "gpus").write_text("a100 4\n")
    load = tmp_path / "load"
    load.mkdir()
    for key in ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "SLURM_JOB_ID"):
        monkeypatch.delenv(key, raising=False)
    return load_nvidia_smi(node, load)


def test_nvidia_smi_query_shows_the_steps_gpus(
    smi: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("SLURM_STEP_GPUS", "1,3")
    Path(smi.LOAD_DIR, "42").write_text("1 77 1234\n")
    assert (
        smi.main(
            ["--query-gpu=index,name,utilization.gpu,memory.used,memory.total", "--format=csv"]
        )
        == 0
    )
    assert capsys.readouterr().out.splitlines() == [
        "index, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB]",
        "0, NVIDIA A100-SXM4-80GB, 0 %, 0 MiB, 81920 MiB",
        "1, NVIDIA A100-SXM4-80GB, 77 %, 1234 MiB, 81920 MiB",
    ]
    assert smi.main(["--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"]) == 0
    assert capsys.readouterr().out.splitlines() == ["0", "77"]
    assert smi.main(["-L"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert [line.split(" (UUID: GPU-")[0] for line in listing] == [
        "GPU 0: NVIDIA A100-SXM4-80GB",
        "GPU 1: NVIDIA A100-SXM4-80GB",
    ]
    # The UUID names the physical GPU: the same one from another job that holds it as its 0.
    monkeypatch.setenv("SLURM_STEP_GPUS", "3")
    assert smi.main(["--query-gpu=uuid", "--format=csv,noheader"]) == 0
    assert capsys.readouterr().out.strip() == listing[1].split("(UUID: ")[1].rstrip(")")


def test_nvidia_smi_errors_as_nvidia_smi(
    smi: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert smi.main(["--query-gpu=index,bogus", "--format=csv"]) == 2
    assert capsys.readouterr().out.startswith('Field "bogus" is not a valid field to query.')
    monkeypatch.setenv("SLURM_JOB_ID", "7")  # a job step without GPUs
    assert smi.main(["-L"]) == 6 and capsys.readouterr().out == "No devices were found\n"
    smi.NODE_LOCAL = "/nonexistent"  # the login host: no GPUs, no driver
    assert smi.main(["-L"]) == 9
    assert "couldn't communicate with the NVIDIA driver" in capsys.readouterr().out
