"""The product reads what TAO 7.3 writes, as the sandbox's stand-in writes it (the stand-in is
NVIDIA's format, read from nvidia-tao-pytorch 7.3.0): the stand-in runs here, in a process of
its own against nvidia-tao-core's real schema, and its files go through the monitor's real
reads (``sh``, ``tail -v``, the globs) and the status summary.

- ``status.json`` is found in ``<results_dir>/train/``;
- 0-based epochs are shown as epochs done of the run's (2/3 after two of three epochs);
- no SUCCESS line, exit 0 → Complete, with TAO's last message;
- a FAILURE line → its message; a Hydra spec error → no status.json, the log's message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.core.status_json import (
    StatusJsonReader,
    StatusSummary,
    duration_words,
    resolve_completed,
)
from tao_slurm_tui.core.tao_outcome import failure_reason
from tao_slurm_tui.core.tick_reads import (
    STATUS_TAIL_LIVE,
    FinishedReads,
    finished_reads_command,
    parse_finished_reads,
    parse_sections,
    split_status_tails,
    status_tail_command,
)

STANDINS = Path(__file__).resolve().parents[2] / "scripts" / "sandbox"


NONCE = "7a0c0ffee7a0beef"
"""The tick's nonce (core/tick_reads.py: markers and disguised names)."""


def sh(command: str) -> str:
    return subprocess.run(
        ["/bin/sh", "-c", command], capture_output=True, text=True, timeout=60, check=True
    ).stdout


def tao(
    release: Any, tmp: Path, network: str, *argv: str, seconds: float = 0.05
) -> tuple[int, str]:
    """``<network> <argv...>`` as the container runs it (the stand-in's launcher and runner, on
    nvidia-tao-core's config tree), one GPU visible; (exit status, stdout + stderr)."""
    env = {
        **os.environ,
        "PYTHONPATH": f"{STANDINS}{os.pathsep}{release.root}",
        "CUDA_VISIBLE_DEVICES": "0",
        "TAO_SANDBOX_EPOCH_SECONDS": str(seconds),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.pop("SLURM_NTASKS", None)
    code = f"import sys; from tao_sandbox import entrypoint; sys.exit(entrypoint.main({network!r}))"
    done = subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp,
    )
    return done.returncode, done.stdout + done.stderr


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    for part in ("train", "val", "test"):
        for cls in ("cat", "dog"):
            (root / part / cls).mkdir(parents=True)
            (root / part / cls / "1.jpg").write_bytes(b"\xff\xd8")
    (root / "classes.txt").write_text("cat\ndog\n")
    return root


def spec(tmp_path: Path, dataset: Path, **train: Any) -> Path:
    path = tmp_path / "train.yaml"
    data = {
        "dataset": {
            "batch_size": 1,
            "num_classes": 2,
            "train_dataset": {"images_dir": str(dataset / "train")},
            "val_dataset": {"images_dir": str(dataset / "val")},
            "test_dataset": {"images_dir": str(dataset / "test")},
            "classes_file": str(dataset / "classes.txt"),
        },
        "train": {"num_epochs": 3, "checkpoint_interval": 1, **train},
    }
    path.write_text(json.dumps(data))  # JSON is YAML
    return path


def live_reads(results_dirs: dict[str, str]) -> dict[str, str]:
    """What a monitor tick's first round trip reads for running jobs, through a real sh."""
    out = sh(status_tail_command(results_dirs, STATUS_TAIL_LIVE, NONCE))
    lines = parse_sections(out, NONCE).get(("status", ""), [])
    return split_status_tails(lines, results_dirs, NONCE)


def summary_of(text: str) -> StatusSummary:
    reader = StatusJsonReader()
    summary = StatusSummary()
    summary.add(reader.feed(text.encode()) + reader.flush())
    return summary


def test_a_three_epoch_train_is_read_where_tao_writes_it(
    tao_release: Any, tmp_path: Path, dataset: Path
) -> None:
    results = tmp_path / "results" / "cls"
    rc, out = tao(
        tao_release, tmp_path, "classification_pyt", "train", "-e",
        str(spec(tmp_path, dataset)), f"results_dir={results}",
    )  # fmt: skip
    assert rc == 0, out
    assert "Execution status: PASS" in out
    written = results / "train" / "status.json"
    lines = [json.loads(x) for x in written.read_text().splitlines()]
    assert not (results / "status.json").exists()
    assert all(line["status"] != "SUCCESS" for line in lines)  # TAO 7.3 writes none

    # After two of three epochs (the file as it was then): 2/3, never "1/2".
    second = max(i for i, line in enumerate(lines) if line.get("epoch") == 1)
    partial = tmp_path / "partial" / "cls"
    (partial / "train").mkdir(parents=True)
    (partial / "train" / "status.json").write_text(
        "".join(json.dumps(line) + "\n" for line in lines[: second + 1])
    )
    texts = live_reads({"cls": str(results), "mid": str(partial)})
    mid = summary_of(texts["mid"]).progress
    assert (mid.epoch, mid.max_epoch) == (1, 2)  # what TAO wrote
    assert mid.epoch_text == "2/3" and mid.fraction == pytest.approx(2 / 3)
    assert duration_words(mid.time_per_epoch).endswith("s") and mid.eta

    # The end: no SUCCESS line, exit 0 → Complete, with TAO's own last words.
    reads = FinishedReads(status={"cls": str(results)}, order=["cls"])
    final = parse_finished_reads(sh(finished_reads_command(reads, NONCE)), reads, NONCE).status[
        "cls"
    ]
    done = summary_of(final)
    assert done.progress.epoch_text == "3/3" and done.terminal is None
    assert resolve_completed(done.terminal, done.message) == (
        TaoStatus.COMPLETE,
        "Train finished successfully.",
    )
    assert {"train_loss", "val_loss", "val_acc_1"} <= set(done.progress.kpi)
    # The message "Experiment configuration:\n<yaml>" never became a message of many lines.
    assert all("\n" not in (m or "") for m in (done.progress.message, done.message))


def test_a_failure_line_and_a_hydra_error_are_the_reasons_shown(
    tao_release: Any, tmp_path: Path, dataset: Path
) -> None:
    # A mandatory value left ???: TAO's monitor writes FAILURE "Configuration error: ...".
    ev = tmp_path / "results" / "ev"
    rc, out = tao(
        tao_release, tmp_path, "classification_pyt", "evaluate", "-e",
        str(spec(tmp_path, dataset)), f"results_dir={ev}",
    )  # fmt: skip
    assert rc == 1 and "Execution status: FAIL" in out
    reads = FinishedReads(status={"ev": str(ev)}, order=["ev"])
    summary = summary_of(
        parse_finished_reads(sh(finished_reads_command(reads, NONCE)), reads, NONCE).status["ev"]
    )
    reason = failure_reason(summary.terminal, summary.message, out.splitlines())
    assert reason.startswith("Configuration error: Missing mandatory value: evaluate.checkpoint")

    # A key the schema lacks, as an override: Hydra refuses before TAO runs: no status.json.
    bad = tmp_path / "results" / "bad"
    rc, out = tao(
        tao_release, tmp_path, "classification_pyt", "train", "-e",
        str(spec(tmp_path, dataset)), f"results_dir={bad}", "train.num_epoch=3",
    )  # fmt: skip
    assert rc == 1 and not bad.exists()
    reads = FinishedReads(status={"bad": str(bad)}, order=["bad"])
    text = parse_finished_reads(sh(finished_reads_command(reads, NONCE)), reads, NONCE).status[
        "bad"
    ]
    summary = summary_of(text)
    assert text == "" and summary.terminal is None
    reason = failure_reason(summary.terminal, summary.message, out.splitlines())
    assert reason == (
        "TAO refused the experiment spec before it started: Could not override "
        "'train.num_epoch': Key 'num_epoch' not in 'TrainExpConfig' (full key train.num_epoch). "
        "Fix the spec and submit again."
    )

    # A value of the wrong type in the YAML file.
    typo = tmp_path / "typo.yaml"
    typo.write_text("train:\n  num_epochs: ten\n")
    rc, out = tao(tao_release, tmp_path, "classification_pyt", "train", "-e", str(typo))
    assert rc == 1
    assert failure_reason(None, "", out.splitlines()) == (
        "TAO refused the experiment spec before it started: Error merging 'typo.yaml' with "
        "schema: Value 'ten' of type 'str' could not be converted to Integer (full key "
        "train.num_epochs). Fix the spec and submit again."
    )


def test_a_resumed_run_is_not_failed_by_the_first_run_s_failure(tmp_path: Path) -> None:
    """A run interrupted (FAILURE "User/System interruption"), requeued, resumed and finished:
    the STARTED of the resumed run clears the old verdict."""
    lines = [
        {"status": "STARTED", "message": "Starting Classification train."},
        {"epoch": 0, "max_epoch": 2, "status": "RUNNING", "message": "Training loop in progress"},
        {"status": "FAILURE", "message": "User/System interruption: Train was interrupted"},
        {"status": "STARTED", "message": "Starting Classification train."},
        {"status": "RUNNING", "message": "Resuming training from checkpoint: /r/x.pth"},
        {"epoch": 2, "max_epoch": 2, "status": "RUNNING", "message": "Training loop in progress"},
        {"status": "RUNNING", "message": "Train finished successfully."},
    ]
    summary = summary_of("".join(json.dumps(line) + "\n" for line in lines))
    assert summary.terminal is None and summary.progress.epoch_text == "3/3"
    assert resolve_completed(summary.terminal, summary.message)[0] is TaoStatus.COMPLETE


def test_a_job_s_status_files_are_read_in_the_order_they_were_written(tmp_path: Path) -> None:
    """A free-form command ran train, then evaluate: evaluate's lines come last (its last time
    stamp is later), though ``evaluate`` sorts before ``train``; a file at the results dir's top
    (a command that writes its own) is read too; another job's file is not mixed in."""
    root = tmp_path / "results"

    def write(path: Path, *entries: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(e) + "\n" for e in entries))

    write(
        root / "a" / "train" / "status.json",
        {"date": "12/1/2026", "time": "9:5:3", "status": "RUNNING", "epoch": 4, "max_epoch": 4},
        {"date": "12/1/2026", "time": "9:5:9", "status": "RUNNING", "message": "Train done."},
    )
    write(
        root / "a" / "evaluate" / "status.json",
        {"date": "12/1/2026", "time": "10:0:0", "status": "RUNNING", "message": "Evaluated."},
    )
    write(root / "b" / "status.json", {"status": "FAILURE", "message": "b's own"})
    write(root / "ab" / "train" / "status.json", {"status": "FAILURE", "message": "not a's"})
    texts = live_reads({"a": str(root / "a"), "b": str(root / "b"), "c": str(root / "c")})
    assert set(texts) == {"a", "b"}  # c has none yet
    a = summary_of(texts["a"])
    assert a.progress.epoch_text == "5/5" and a.message == "Evaluated."
    assert summary_of(texts["b"]).message == "b's own"


@pytest.mark.parametrize(
    ("status", "words"),
    [
        ("STARTED", "started"),
        ("RUNNING", "running"),
        ("SUCCESS", "succeeded"),
        ("FAILURE", "failed"),
        ("SKIPPED", "skipped"),
        ("PAUSED_BY_NEWER_TAO", "PAUSED_BY_NEWER_TAO"),
        ("", ""),
    ],
)
def test_every_status_value_has_words(status: str, words: str) -> None:
    from tao_slurm_tui.core.status_json import status_words

    assert status_words(status or None) == words
