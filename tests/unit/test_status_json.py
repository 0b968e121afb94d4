"""status.json: incremental JSON-lines reading and the Complete/Error verdict."""

from __future__ import annotations

import json

import pytest

from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.core.status_json import (
    MAX_LINE_BYTES,
    MESSAGE_CHARS,
    StatusJsonReader,
    StatusSummary,
    duration_words,
    parse_timedelta,
    resolve_completed,
    summarize,
)


def line(**entry: object) -> bytes:
    return (json.dumps(entry) + "\n").encode()


STARTED = line(date="11/29/2026", time="21:08:34", status="STARTED", verbosity="INFO")
EPOCH_3 = line(
    status="RUNNING", epoch=3, max_epoch=10, eta="0:07:00", kpi={"loss": 0.5}, verbosity="INFO"
)


def test_partial_lines_across_feeds() -> None:
    reader = StatusJsonReader()
    data = STARTED + EPOCH_3
    got = []
    # Byte by byte: every split point, including inside a UTF-8 sequence, must work.
    data += line(status="RUNNING", message="läuft")
    for i in range(len(data)):
        got.extend(reader.feed(data[i : i + 1]))
    assert [e["status"] for e in got] == ["STARTED", "RUNNING", "RUNNING"]
    assert got[2]["message"] == "läuft"
    assert reader.skipped == 0


def test_last_line_without_newline_needs_flush() -> None:
    reader = StatusJsonReader()
    assert reader.feed(STARTED + b'{"status": "SUCCESS"}') == [
        {"date": "11/29/2026", "time": "21:08:34", "status": "STARTED", "verbosity": "INFO"}
    ]
    assert reader.flush() == [{"status": "SUCCESS"}]
    assert reader.flush() == []


def test_garbage_and_non_objects_are_skipped() -> None:
    reader = StatusJsonReader()
    entries = reader.feed(b"not json\n[1, 2]\n\n\r\n" + EPOCH_3 + b'{"status": "RUN\n')
    assert [e["epoch"] for e in entries] == [3]
    assert reader.skipped == 3


def test_unknown_keys_are_kept_and_ignored_by_summary() -> None:
    entries = StatusJsonReader().feed(
        line(status="RUNNING", epoch=1, graphical={"x": 1}, categorical={}, new_field=True)
    )
    assert entries[0]["new_field"] is True
    progress, terminal, _ = summarize(entries)
    assert progress.epoch == 1 and terminal is None


def test_oversized_line_is_dropped_and_memory_bounded() -> None:
    reader = StatusJsonReader()
    assert reader.feed(b"x" * (MAX_LINE_BYTES + 10)) == []
    assert reader.feed(b"y" * 100) == []  # still the same oversized line
    assert reader.feed(b"\n" + EPOCH_3) == [json.loads(EPOCH_3)]
    assert reader.skipped == 1


def test_reset_forgets_partial_line() -> None:
    reader = StatusJsonReader()
    reader.feed(b'{"status": "RUNN')
    reader.reset()
    assert reader.feed(EPOCH_3)[0]["epoch"] == 3


def test_summary_progress() -> None:
    entries = [
        json.loads(x)
        for x in (
            STARTED,
            EPOCH_3,
            line(status="RUNNING", epoch="4", kpi={"mAP": 0.3}, message="validating"),
        )
    ]
    progress, terminal, message = summarize(entries)
    assert (progress.epoch, progress.max_epoch, progress.eta) == (4, 10, "0:07:00")
    assert progress.kpi == {"loss": 0.5, "mAP": 0.3}
    # TAO's epoch is 0-based and max_epoch = epochs - 1: epoch 4 of 0..10 is 5 of 11 done.
    assert progress.fraction == 5 / 11 and progress.epoch_text == "5/11"
    assert progress.status == "RUNNING"
    assert terminal is None and message == "validating"


def test_the_last_run_s_verdict_wins() -> None:
    entries: list[dict[str, object]] = [
        {"status": "FAILURE", "message": "first attempt died"},
        {"status": "RUNNING", "epoch": 2},
        {"status": "SUCCESS", "message": "done"},
        {"status": "SKIPPED"},
    ]
    _, terminal, message = summarize(entries)
    assert (terminal, message) == ("SUCCESS", "done")
    _, terminal, message = summarize([*entries, {"status": "FAILURE", "message": "bad spec"}])
    assert (terminal, message) == ("FAILURE", "bad spec")
    # A run that started again (resumed after a requeue) has no verdict yet.
    _, terminal, message = summarize([*entries, {"status": "STARTED", "message": "Starting."}])
    assert (terminal, message) == (None, "Starting.")


def test_incremental_summary_matches_batch() -> None:
    summary = StatusSummary()
    reader = StatusJsonReader()
    data = STARTED + EPOCH_3 + line(status="failure", message="boom")
    for i in range(0, len(data), 7):
        summary.add(reader.feed(data[i : i + 7]))
    assert summary.terminal == "FAILURE" and summary.message == "boom"
    assert summary.progress.epoch == 3


def test_resolve_completed() -> None:
    assert resolve_completed("SUCCESS", "ok") == (TaoStatus.COMPLETE, "ok")
    assert resolve_completed("FAILURE", "bad spec") == (TaoStatus.ERROR, "bad spec")
    status, message = resolve_completed("FAILURE", "")
    assert status is TaoStatus.ERROR and "FAILURE" in message
    status, message = resolve_completed(None, "")
    assert status is TaoStatus.COMPLETE and "exit code 0" in message
    # TAO 7.3 never writes SUCCESS: its last RUNNING message is the verdict's.
    assert resolve_completed(None, "Train finished successfully.") == (
        TaoStatus.COMPLETE,
        "Train finished successfully.",
    )


def test_durations_as_tao_writes_them() -> None:
    assert parse_timedelta("0:03:21.5") == 201.5
    assert parse_timedelta("0:10:18.004311") == pytest.approx(618.004311)
    assert parse_timedelta("1 day, 2:00:00") == 93600
    assert parse_timedelta("3 days, 0:00:01") == 259201
    assert parse_timedelta("12.5") == 12.5
    for bad in ("", "soon", "-1", "nan", "inf", "1:2", None):
        assert parse_timedelta(bad) is None, bad
    assert [duration_words(x) for x in ("0:00:00.301082", "0:00:42", "0:03:21.5")] == [
        "0.3s",
        "42s",
        "3m 21s",
    ]
    assert duration_words("2:05:00") == "2h 05m" and duration_words("1 day, 4:00:00") == "1d 4h"
    assert duration_words("later") == "later" and duration_words(None) == ""


def test_a_message_of_many_lines_is_kept_to_its_first() -> None:
    entries = [{"status": "RUNNING", "message": "Experiment configuration:\nmodel:\n  x: 1"}]
    progress, _, message = summarize(entries)
    assert progress.message == message == "Experiment configuration:"
    long = [{"status": "FAILURE", "message": "x" * 5000}]
    assert len(summarize(long)[2]) == MESSAGE_CHARS
