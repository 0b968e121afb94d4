"""The runs of a training across slices, its KPI series and the forecast (core, pure)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from tao_slurm_tui.core.forecast import SliceClock, forecast
from tao_slurm_tui.core.kpi_series import (
    MAX_KPI_KEYS,
    EpochPoint,
    clean_kpis,
    format_value,
    kpi_number,
    run_starts,
    series,
    thin,
)
from tao_slurm_tui.core.runs import (
    MAX_NO_PROGRESS,
    ExperimentFacts,
    RunLedger,
    checkpoint_epoch,
    experiment_facts,
    human_duration,
    parse_timedelta,
)
from tests.tao_status import line, train_kpi, training_run, val_kpi


def entries(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(item) for item in lines]


def ledger_of(*runs: list[str], interval: int | None = 1, now: float = 1000.0) -> RunLedger:
    ledger = RunLedger()
    if interval is not None:
        ledger.take_experiment(ExperimentFacts(checkpoint_interval=interval, num_epochs=None))
    for run in runs:
        ledger.fold(entries(run), now)
    return ledger


# ----------------------------------------------------------------------------------- KPIs


@pytest.mark.parametrize(
    ("value", "number"),
    [
        (0.5, 0.5),
        (3, 3.0),
        ("0.5123", 0.5123),  # DINO and RT-DETR write mAP as str(float)
        (" 1e-3 ", 0.001),
        (True, None),
        ("nan", None),
        (float("inf"), None),
        ("0.5; rm -rf /", None),
        ("1" * 60, None),
        ([1], None),
        (None, None),
    ],
)
def test_kpi_number(value: Any, number: float | None) -> None:
    assert kpi_number(value) == number


def test_clean_kpis_keeps_plain_names_and_numbers_within_the_cap() -> None:
    hostile = {"\x1b]52;c;aGk=\x07": 1.0, "[@click=app.quit]": 2.0, "x" * 41: 3.0, "ok": "7"}
    assert clean_kpis(hostile) == {"ok": 7.0}
    many = {f"k{i}": i for i in range(100)}
    kept = clean_kpis(many)
    assert len(kept) == MAX_KPI_KEYS
    # Names already known count against the cap; a known name always stays.
    assert clean_kpis({"new": 1, "k0": 2}, known=[f"k{i}" for i in range(MAX_KPI_KEYS)]) == {
        "k0": 2.0
    }
    assert clean_kpis("not a dict") == {}


def test_thin_bounds_the_series_and_keeps_the_recent_half() -> None:
    points = [EpochPoint(1, e, {"loss": float(e)}) for e in range(5000)]
    kept = thin(points, 1000)
    assert len(kept) <= 1000
    assert kept[0].epoch == 0 and kept[-1].epoch == 4999
    assert [p.epoch for p in kept[-300:]] == list(range(4700, 5000))


def test_series_take_the_latest_run_of_an_epoch_trained_twice() -> None:
    points = [
        EpochPoint(1, 0, {"val_loss": 2.0, "val_acc_1": 0.1}),
        EpochPoint(1, 1, {"val_loss": 1.5}),
        EpochPoint(2, 1, {"val_loss": 1.4}),
        EpochPoint(2, 2, {"val_loss": 1.2}),
    ]
    loss, acc = series(points)
    assert loss.name == "val_loss" and loss.epochs == (1, 2, 3) and loss.values == (2.0, 1.4, 1.2)
    assert loss.best() == 1.2 and acc.best() == 0.1 and acc.last == 0.1
    assert run_starts(points) == [(2, 2)]


def test_format_value() -> None:
    assert format_value(0.51234567) == "0.5123"
    assert format_value(12.0) == "12"
    assert format_value(1.5e-6) == "1.500e-06"


# ----------------------------------------------------------------------------------- the ledger


def test_a_run_s_kpis_land_on_their_epochs() -> None:
    ledger = RunLedger()
    points = ledger.fold(entries(training_run(0, 3, 3)), 0.0)
    by_epoch = {p.epoch: p.kpi for p in points}
    for epoch in range(3):
        assert by_epoch[epoch] == {**val_kpi(epoch), **train_kpi(epoch)}
    run = ledger.run
    assert run is not None and (run.first, run.last, run.epochs, run.start) == (0, 2, 3, 0)
    assert run.epoch_seconds == pytest.approx(2.0)
    assert ledger.max_epoch == 2 and ledger.current == 2


def test_detector_map_strings_become_numbers() -> None:
    points = RunLedger().fold(entries(training_run(0, 2, 2, detector=True)), 0.0)
    assert points[0].kpi["val_mAP"] == pytest.approx(0.05)


def test_folding_in_pieces_equals_folding_at_once() -> None:
    lines = training_run(0, 4, 8) + training_run(4, 8, 8, resumed_from="model_epoch_003.pth")
    whole = ledger_of(lines)
    pieces = RunLedger()
    pieces.take_experiment(ExperimentFacts(checkpoint_interval=1))
    got: dict[tuple[int, int], dict[str, float]] = {}
    for start in range(0, len(lines), 5):
        for point in pieces.fold(entries(lines[start : start + 5]), 1000.0):
            got.setdefault((point.run, point.epoch), {}).update(point.kpi)
        pieces = RunLedger.from_json(json.loads(json.dumps(pieces.to_json())))
    want = {(p.run, p.epoch): p.kpi for p in RunLedger().fold(entries(lines), 0.0)}
    assert got == want
    assert pieces.to_json() == whole.to_json()


def test_a_requeue_that_resumed_is_progress() -> None:
    ledger = ledger_of(
        training_run(0, 5, 10),
        training_run(5, 10, 10, resumed_from="model_epoch_004.pth"),
    )
    first, second = ledger.runs
    assert first.progress is None and second.progress is True and second.start == 5
    assert ledger.no_progress == 0 and ledger.problem == "" and ledger.stop == ""
    assert ledger.last_checkpoint() == 10


def test_a_training_that_never_checkpoints_stops_after_two_runs_without_progress() -> None:
    # checkpoint_interval 10 epochs, 3 epochs fit a slice: nothing to resume from, ever.
    one = training_run(0, 3, 20)
    ledger = ledger_of(one, interval=10)
    ledger.fold(entries(training_run(0, 3, 20)), 0.0)
    assert ledger.problem == "run 2 restarted from epoch 0: no checkpoint was written in run 1"
    assert ledger.no_progress == 1 and ledger.stop == ""
    ledger.fold(entries(training_run(0, 1, 20)), 0.0)
    assert ledger.problem == "run 3 restarted from epoch 0: no checkpoint was written in run 2"
    assert ledger.no_progress == MAX_NO_PROGRESS
    assert ledger.stop.startswith("not requeued again: runs 2 and 3 restarted without progress")
    assert "a checkpoint every 10 epochs takes ~20 s" in ledger.stop


def test_a_run_that_ignored_the_checkpoint_is_reported() -> None:
    ledger = ledger_of(training_run(0, 6, 10), training_run(0, 2, 10))
    assert ledger.problem == (
        "run 2 restarted from epoch 0: run 1 saved a checkpoint at epoch 6 that it did not "
        "resume from (is train.resume_training_checkpoint_path set?)"
    )


def test_without_the_interval_progress_is_judged_by_where_runs_started() -> None:
    ledger = ledger_of(training_run(0, 3, 9), training_run(0, 3, 9), interval=None)
    assert ledger.problem == "run 2 restarted from epoch 0: run 1 left no checkpoint to resume from"
    ledger = ledger_of(
        training_run(0, 3, 9), training_run(3, 5, 9, resumed_from="model_epoch_002.pth"),
        interval=None,
    )  # fmt: skip
    assert ledger.runs[1].progress is True


def test_a_run_with_no_epoch_is_judged_when_the_next_one_starts() -> None:
    short = training_run(0, 0, 9)  # stopped before its first epoch ended
    ledger = ledger_of(training_run(0, 2, 9, epoch_seconds=60), short, interval=5)
    assert ledger.runs[1].progress is None  # still running: no verdict yet
    ledger.fold(entries([line("STARTED", "Starting Classification train.")]), 0.0)
    assert ledger.runs[1].progress is False
    assert "run 2 restarted from epoch 0" in ledger.runs[1].verdict


def test_a_writer_without_started_lines_still_splits_runs() -> None:
    lines = [line("RUNNING", kpi={"loss": 1.0 / (e + 1)}, epoch=e, max_epoch=5) for e in range(3)]
    ledger = ledger_of(lines, lines[:2], interval=None)
    assert [r.number for r in ledger.runs] == [1, 2]


def test_hostile_lines_keep_the_ledger_bounded() -> None:
    ledger = RunLedger()
    junk = [{"status": "STARTED"} for _ in range(500)]
    junk += [{"status": "RUNNING", "kpi": {f"k{i}": i for i in range(1000)}, "epoch": "x"}]
    ledger.fold(junk, 0.0)
    assert len(ledger.runs) <= 64 and len(ledger.kpi_names) == MAX_KPI_KEYS
    assert len(json.dumps(ledger.to_json())) < 20_000


def test_damaged_ledger_json_is_an_empty_ledger() -> None:
    assert RunLedger.from_json(None).runs == []
    assert RunLedger.from_json({"runs": "x", "current": "y"}).current is None


def test_experiment_facts() -> None:
    text = "train:\n  num_epochs: 80\n  checkpoint_interval: 5\nresults_dir: /r\n"
    assert experiment_facts(text) == ExperimentFacts(5, 80)
    steps = "train:\n  checkpoint_interval: 500\n  checkpoint_interval_unit: step\n"
    assert experiment_facts(steps).checkpoint_interval is None
    assert experiment_facts(": not yaml [") == ExperimentFacts()
    assert experiment_facts("- a list") == ExperimentFacts()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0:10:18.004311", 618.004311), ("1 day, 2:03:04", 93784.0), ("2 days, 0:00:01", 172801.0)],
)
def test_parse_timedelta(text: str, seconds: float) -> None:
    assert parse_timedelta(text) == pytest.approx(seconds)
    assert parse_timedelta("soon") is None and parse_timedelta(5) is None


def test_checkpoint_epoch_and_durations() -> None:
    assert checkpoint_epoch("/r/train/model_epoch_005_step_00120.pth") == 5
    assert checkpoint_epoch("/r/train/classifier_model_latest.pth") is None
    assert [human_duration(s) for s in (35, 2400, 13680, 3600, 200000)] == [
        "35 s",
        "40 min",
        "3 h 48 min",
        "1 h",
        "2 d 7 h",
    ]


# ----------------------------------------------------------------------------------- forecast

SLICE = 228 * 60.0  # 3.8 h


def test_forecast_finishes_in_this_slice() -> None:
    ledger = ledger_of(training_run(0, 50, 60, epoch_seconds=240))
    got = forecast(ledger, SliceClock(into_run=3 * 3600, timeout=SLICE), now=1000.0)
    assert got is not None and got.kind == "finishes"
    assert got.text == "finishes in this slice (~40 min left of 3 h 48 min)"
    assert got.to_json()["remaining_seconds"] == 2400


def test_forecast_needs_more_slices_and_names_what_the_stop_loses() -> None:
    # 10 min epochs, a checkpoint every 3 epochs; 20 epochs done after 3 h 20 min of this run.
    ledger = ledger_of(training_run(0, 20, 60, epoch_seconds=600), interval=3)
    got = forecast(ledger, SliceClock(into_run=20 * 600, timeout=SLICE), now=1000.0)
    assert got is not None and got.kind == "more_slices"
    # At the stop (3 h 48 min) 22 epochs are done; the last checkpoint is after epoch 21.
    assert got.resume_epoch == 21
    assert got.lost == pytest.approx(SLICE - 21 * 600)  # 18 min since that checkpoint
    # 60 - 21 = 39 epochs left; a slice trains 22 and keeps 21: 2 more slices.
    assert got.more_slices == 2
    assert got.text == (
        "needs ~2 more slices; the stop at 3 h 48 min will lose ~18 min since the last "
        "checkpoint (epoch 21)"
    )


def test_forecast_never_when_the_interval_does_not_fit_a_slice() -> None:
    ledger = ledger_of(training_run(0, 3, 100, epoch_seconds=1800), interval=10)
    got = forecast(ledger, SliceClock(into_run=3 * 1800, timeout=SLICE), now=1000.0)
    assert got is not None and got.kind == "never" and got.more_slices is None
    assert got.text == (
        "never finishes: a checkpoint every 10 epochs takes ~5 h, longer than the 3 h 48 min "
        "slice, so every requeue restarts from epoch 0; set train.checkpoint_interval to 7 or less"
    )


def test_forecast_without_requeue_and_with_few_requeues_left() -> None:
    ledger = ledger_of(training_run(0, 20, 60, epoch_seconds=600), interval=1)
    off = forecast(ledger, SliceClock(20 * 600, SLICE, requeue=False), now=1000.0)
    assert off is not None and off.kind == "stops" and "use_requeue is off" in off.text
    few = forecast(ledger, SliceClock(20 * 600, SLICE, timeouts_left=1), now=1000.0)
    assert few is not None and few.text.endswith(
        "; only 1 timeout requeue is left (max_timeout_requeues)"
    )


def test_forecast_counts_the_time_since_the_last_epoch_line() -> None:
    ledger = ledger_of(training_run(0, 50, 60, epoch_seconds=240), now=1000.0)
    later = forecast(ledger, SliceClock(into_run=3 * 3600, timeout=SLICE), now=1100.0)
    assert later is not None and later.remaining == pytest.approx(2400 - 100)


def test_no_forecast_before_the_first_epoch_or_after_the_last() -> None:
    assert forecast(RunLedger(), SliceClock(10, SLICE), now=0.0) is None
    done = ledger_of(training_run(0, 5, 5))
    assert forecast(done, SliceClock(10, SLICE), now=0.0) is None


def test_forecast_matches_a_simulated_outcome_within_one_interval() -> None:
    """Simulate slices: the next run's start is what the forecast said, within the interval."""
    interval, seconds, timeout, total = 4, 70.0, 1200.0, 60
    ledger = ledger_of(training_run(0, 5, total, epoch_seconds=seconds), interval=interval)
    got = forecast(ledger, SliceClock(into_run=5 * seconds + 30, timeout=timeout), now=1000.0)
    assert got is not None and got.resume_epoch is not None
    trained_by_stop = math.floor((timeout - 30) / seconds)
    actual = trained_by_stop // interval * interval
    assert abs(got.resume_epoch - actual) <= interval
