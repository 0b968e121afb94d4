"""The sandbox image's TAO 7.3 stand-in, run as a researcher runs TAO: ``sbatch`` on the login host,
Pyxis pulling the image from the NGC-style registry, TAO's CLI inside the container.

What is checked is what real TAO 7.3 does (nvidia-tao-pytorch 7.3.0, read from its sources):
status.json lines in ``<results_dir>/train/``, 0-based epochs with ``max_epoch = epochs - 1``, no
SUCCESS line, ``model_epoch_XXX.pth`` + ``classifier_model_latest.pth``,
auto-resume after a requeue,
Hydra's refusal of a spec typo before anything is written, TAO's FAILURE prefixes, SIGTERM as
Lightning handles it, and the ``tensorboard`` command answering over the bridge.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import textwrap
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests import sandbox

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("cluster")]

PULL = 420.0
"""A job that pulls the image on a busy 2-core machine, maybe pending behind parallel tests."""

sys.path.insert(0, str(sandbox.REPO / "scripts" / "sandbox"))
events: Any = importlib.import_module("tao_sandbox.events")


def workdir(prefix: str) -> Path:
    return sandbox.user_dir(Path(sandbox.RESULTS) / "it-tao" / f"{prefix}-{uuid.uuid4().hex[:8]}")


def status_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def submit(job_dir: Path, body: str, *sbatch: str, epoch_seconds: float = 2) -> str:
    """A batch job whose container step runs ``body`` (bash) in the TAO stand-in image, with the
    job dir and the sandbox's datasets mounted; submitted over ssh as the test user."""
    datasets = sandbox.info()["tao"]["datasets"]
    (job_dir / "body.sh").write_text(body)
    (job_dir / "job.sbatch").write_text(
        textwrap.dedent(
            f"""\
            #!/bin/bash
            export TAO_SANDBOX_EPOCH_SECONDS={epoch_seconds}
            srun --container-image={sandbox.image_ref()} \\
              --container-mounts={job_dir}:{job_dir},{datasets}:{datasets} \\
              bash {job_dir}/body.sh
            """
        )
    )
    for name in ("body.sh", "job.sbatch"):
        os.chown(job_dir / name, *sandbox.owner_ids())
    out = sandbox.ssh(
        sandbox.quoted(
            "sbatch", "--parsable", "-J", job_dir.name, "-o", f"{job_dir}/slurm-%j.out",
            "--time=00:20:00", *sbatch, f"{job_dir}/job.sbatch",
        )
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().split(";")[0]


def test_classification_train_resumes_after_a_requeue_and_ends_as_tao_does() -> None:
    job_dir = workdir("cls")
    spec = Path(sandbox.info()["tao"]["example_specs"]["classification_pyt"])
    results = job_dir / "results"
    train = results / "train"
    with sandbox.ngc_credentials():
        job = submit(
            job_dir,
            f"classification_pyt train -e {spec} results_dir={results} train.num_epochs=8\n",
            "--gres=gpu:1",
            "--requeue",
        )
        try:
            # Wait for two epochs' checkpoints, then requeue (SIGTERM, as at a wall-time stop).
            sandbox.wait_for(
                lambda: (train / "model_epoch_001.pth").exists(), PULL, "two epochs checkpointed"
            )
            before = os.path.realpath(train / "classifier_model_latest.pth")
            requeue = sandbox.as_user(["scontrol", "requeue", job])
            assert requeue.returncode == 0, requeue.stderr
            state = sandbox.wait_state(job, sandbox.FINAL, PULL)
        finally:
            sandbox.as_user(["scancel", job])
    log = (job_dir / f"slurm-{job}.out").read_text()
    assert state == "COMPLETED", log
    lines = status_lines(train / "status.json")
    messages = [line.get("message", "") for line in lines]
    # Two attempts, appended to one status.json: the second resumed from the first's checkpoint.
    assert messages.count("Starting Classification train.") == 2
    resumed = [m for m in messages if m.startswith("Resuming training from checkpoint: ")]
    assert len(resumed) == 1, messages
    resumed_from = resumed[0].split(": ", 1)[1]
    assert resumed_from.startswith(f"{train}/model_epoch_") and resumed_from.endswith(".pth")
    assert os.path.realpath(resumed_from) >= before
    resumed_epoch = int(resumed_from.rsplit("_", 1)[1][:3])
    epochs = [line for line in lines if "epoch" in line]
    after = lines[messages.index(resumed[0]) :]
    second = [line["epoch"] for line in after if "epoch" in line]
    assert second == list(range(resumed_epoch + 1, 8))
    assert {line["epoch"] for line in epochs} == set(range(8))
    for line in epochs:
        assert line["max_epoch"] == 7 and line["status"] == "RUNNING"
        assert line["step"] <= line["max_step"] == 8 * 4  # 64 images, batch 8 per GPU, 1 GPU
        for key in ("time_per_epoch", "time_per_step", "eta"):
            assert isinstance(line[key], str) and line[key].count(":") == 2, line
    # The end is TAO's: two RUNNING lines, no SUCCESS anywhere.
    assert messages[-2:] == ["Training loop complete.", "Train finished successfully."]
    assert all(line["status"] in {"STARTED", "RUNNING"} for line in lines)
    evals = [line["kpi"] for line in lines if line.get("message") == "Eval metrics generated."]
    assert len(evals) >= 8 and all(k.keys() == {"val_loss", "val_acc_1"} for k in evals)
    assert lines[-1]["kpi"].keys() == {"train_loss"}
    month, day, year = lines[-1]["date"].split("/")
    assert len(year) == 4 and not month.startswith("0") and not day.startswith("0")
    # Checkpoints: one per epoch, the latest a relative link to the last one.
    assert sorted(p.name for p in train.glob("model_epoch_*.pth")) == [
        f"model_epoch_{e:03d}.pth" for e in range(8)
    ]
    assert os.readlink(train / "classifier_model_latest.pth") == "model_epoch_007.pth"
    assert "results_dir: " + str(train) in (train / "experiment.yaml").read_text()
    # One event file per attempt, each a valid TFRecord stream.
    files = sorted((train / "lightning_logs" / "version_1").glob("events.out.tfevents.*"))
    assert len(files) == 2
    for path in files:
        assert len(events.read_records(str(path))) > 1
    assert "Execution status: PASS" in log


CONTRACT = """\
set -u
cd {d}
run() {{ name=$1; shift; "$@" >"{d}/$name.out" 2>&1; echo $? >"{d}/$name.rc"; }}
cat >{d}/typo.yaml <<EOF
train:
  num_epochs: ten
EOF
run no_spec classification_pyt train
run missing_spec classification_pyt train -e {d}/nope.yaml
run override_typo classification_pyt train -e {cls} results_dir={d}/typo train.num_epoch=2
run yaml_typo classification_pyt train -e {d}/typo.yaml results_dir={d}/typo
run eval_no_ckpt classification_pyt evaluate -e {cls} results_dir={d}/ev
run no_gpu env CUDA_VISIBLE_DEVICES= classification_pyt train -e {cls} results_dir={d}/nogpu
run train classification_pyt train -e {cls} results_dir={d}/cls train.num_epochs=2 \\
  train.checkpoint_interval=2
run evaluate classification_pyt evaluate -e {cls} results_dir={d}/cls \\
  evaluate.checkpoint={d}/cls/train/classifier_model_latest.pth
run eval_gone classification_pyt evaluate -e {cls} results_dir={d}/gone \\
  evaluate.checkpoint={d}/nope.pth
run export classification_pyt export -e {cls} results_dir={d}/cls \\
  export.checkpoint={d}/cls/train/classifier_model_latest.pth export.onnx_file={d}/model.onnx
run defaults dino default_specs
run rtdetr_train rtdetr train -e {rtdetr} results_dir={d}/rt train.num_epochs=1
run rtdetr_infer rtdetr inference -e {rtdetr} results_dir={d}/rt \
  inference.checkpoint={d}/rt/train/rtdetr_model_latest.pth
# SIGTERM to every process of the command, as slurmstepd sends it at a stop; then wait until
# the last of them has exited.
setsid dino train -e {dino} results_dir={d}/dino train.num_epochs=6 >{d}/dino_term.out 2>&1 &
pid=$!
until grep -q "Starting Training Loop" {d}/dino/train/status.json 2>/dev/null; do sleep 0.2; done
sleep 1.5
kill -TERM -- -$pid
wait $pid
echo $? >{d}/dino_term.rc
while kill -0 -- -$pid 2>/dev/null; do sleep 0.2; done
cp {d}/dino/train/status.json {d}/dino-status-after-term.json
run dino_resume dino train -e {dino} results_dir={d}/dino train.num_epochs=6
tensorboard --logdir {d}/cls/train/lightning_logs --bind_all --port {port} \\
  >{d}/tensorboard.out 2>&1 &
echo "$(hostname) {port}" >{d}/tensorboard.ready
sleep 120
"""


def test_tao_cli_errors_subtasks_sigterm_and_tensorboard_in_one_container() -> None:
    d = workdir("cli")
    info = sandbox.info()
    port = 16000 + uuid.uuid4().int % 2000
    body = CONTRACT.format(
        d=d,
        cls=info["tao"]["example_specs"]["classification_pyt"],
        dino=info["tao"]["example_specs"]["dino"],
        rtdetr=info["tao"]["example_specs"]["rtdetr"],
        port=port,
    )
    with sandbox.ngc_credentials():
        job = submit(d, body, "--gres=gpu:1", epoch_seconds=1)
        try:
            ready = sandbox.wait_for(
                lambda: (
                    (d / "tensorboard.ready").exists()
                    and (d / "tensorboard.ready").read_text().split()
                ),
                PULL,
                "the container's commands",
            )
            node, _ = ready
            nodes = info["nodes"]
            addr = f"10.77.0.{11 + nodes.index(node)}"
            page = sandbox.wait_for(
                lambda: fetch(f"http://{addr}:{port}/"), 30, "tensorboard answers"
            )
        finally:
            sandbox.as_user(["scancel", job])

    def out(name: str) -> str:
        return (d / f"{name}.out").read_text()

    def rc(name: str) -> int:
        return int((d / f"{name}.rc").read_text())

    # The launcher's own checks: an ERROR line, exit 1.
    assert rc("no_spec") == 1
    assert (
        "ERROR: The subtask `train` requires the following argument: -e/--experiment_spec_file"
        in (out("no_spec"))
    )
    assert rc("missing_spec") == 1
    assert f"ERROR: The indicated experiment spec file `{d}/nope.yaml` doesn't exist!" in (
        out("missing_spec")
    )
    # Schema errors fail in Hydra's composition: before TAO's code, so no status.json at all.
    assert rc("override_typo") == 1
    assert "Could not override 'train.num_epoch'." in out("override_typo")
    assert "Key 'num_epoch' not in 'TrainExpConfig'" in out("override_typo")
    assert "Execution status: FAIL" in out("override_typo")
    assert rc("yaml_typo") == 1
    assert "Error merging 'typo.yaml' with schema" in out("yaml_typo")
    assert "could not be converted to Integer" in out("yaml_typo")
    assert "full_key: train.num_epochs" in out("yaml_typo")
    assert not (d / "typo").exists()
    # A mandatory value left unset fails inside TAO's monitor: a FAILURE line with its prefix.
    assert rc("eval_no_ckpt") == 1
    last = status_lines(d / "ev" / "evaluate" / "status.json")[-1]
    assert last["status"] == "FAILURE"
    assert last["message"].startswith(
        "Configuration error: Missing mandatory value: evaluate.checkpoint"
    )
    # No GPU in the step: Lightning refuses before training (no CPU fallback in TAO).
    assert rc("no_gpu") == 1
    assert "MisconfigurationException: No supported gpu backend found!" in out("no_gpu")
    # train → evaluate → export.
    assert rc("train") == 0 and "Execution status: PASS" in out("train")
    assert os.readlink(d / "cls" / "train" / "classifier_model_latest.pth") == (
        "model_epoch_001.pth"
    )
    assert rc("evaluate") == 0
    ev = status_lines(d / "cls" / "evaluate" / "status.json")
    assert ev[-1]["message"] == "Evaluate finished successfully."
    assert "test_acc_1" in ev[-1]["kpi"]
    assert rc("eval_gone") == 1
    assert status_lines(d / "gone" / "evaluate" / "status.json")[-1]["message"] == (
        f"File system error: [Errno 2] No such file or directory: '{d}/nope.pth'"
    )
    assert rc("export") == 0 and json.loads((d / "model.onnx").read_text())["epoch"] == 1
    assert rc("defaults") == 0 and "train:\n" in out("defaults")
    # The sandbox's example specs fit their schemas (RT-DETR's differs from DINO's).
    assert rc("rtdetr_train") == 0 and rc("rtdetr_infer") == 0, out("rtdetr_train")
    assert (d / "rt" / "inference" / "results.json").is_file()
    # SIGTERM to every process (as SLURM sends it): the launcher dies at once (143); Lightning
    # stops after the batch, DINO's exception checkpoint becomes the latest, and the status file
    # ends without a FAILURE line or a "finished" line.
    assert rc("dino_term") == 128 + 15
    assert "Execution status" not in out("dino_term")
    dino = d / "dino" / "train"
    first = status_lines(d / "dino-status-after-term.json")
    assert first[-1]["status"] in {"STARTED", "RUNNING"}
    assert "finished" not in first[-1].get("message", "")
    assert rc("dino_resume") == 0
    lines = status_lines(dino / "status.json")
    resumed = [
        line["message"].split(": ", 1)[1]
        for line in lines[len(first) :]
        if line.get("message", "").startswith("Resuming training from checkpoint: ")
    ]
    assert len(resumed) == 1
    name = Path(resumed[0]).name  # model_epoch_EEE_step_SSSSS.pth, written at the SIGTERM
    assert Path(resumed[0]).parent == dino and "_step_" in name, name
    epoch = int(name.split("_")[2])
    again = [line["epoch"] for line in lines[len(first) :] if "epoch" in line]
    assert again == list(range(epoch, 6))  # the interrupted epoch is finished, then the rest
    assert lines[-1]["message"] == "Train finished successfully."
    assert all(line["status"] != "FAILURE" for line in lines)
    evals = [line["kpi"] for line in lines if line.get("message") == "Eval metrics generated."]
    assert evals and all(isinstance(k["val_mAP"], str) and float(k["val_mAP"]) > 0 for k in evals)
    # tensorboard served its page from inside the job's container, reached over the bridge.
    assert "<title>TensorBoard</title>" in page and "events.out.tfevents." in page
    assert f"TensorBoard 2.19.0 at http://{node}:{port}/" in out_file(d / "tensorboard.out")


def fetch(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return str(response.read().decode())
    except OSError:
        return ""


def out_file(path: Path) -> str:
    return path.read_text() if path.exists() else ""
