"""Desktop notifications: the escape sequences, which way a terminal takes them, which events
are sent, and that nothing from the cluster can end a sequence early."""

from __future__ import annotations

from typing import Any

import pytest

from tao_slurm_tui.config import NotifySettings
from tao_slurm_tui.core.models import Attempt, JobRecord, TaoStatus
from tao_slurm_tui.core.notify import (
    notify_send_argv,
    osc9,
    osc99,
    osc777,
    pick_method,
    plain_text,
    session,
    tmux_passthrough,
    wall_time_left,
)
from tao_slurm_tui.services.backend import Transition, transitions
from tao_slurm_tui.services.notify import Notifier

ESC = "\x1b"
EVIL = "dino\x1b]0;pwned\x07\x1b\\\x9d2;x\x9c\r\nrm -rf ~\x7f"
"""A job message as a hostile cluster could send it: OSC and ST (7- and 8-bit), BEL, CR LF."""


def test_plain_text_spells_out_every_control_character() -> None:
    text = plain_text(EVIL)
    assert not any(ord(c) < 32 or 127 <= ord(c) < 160 for c in text)
    assert text == r"dino\x1b]0;pwned\x07\x1b\\x9d2;x\x9c rm -rf ~\x7f"
    assert plain_text("a\u202eb\t c") == r"a\u202eb c"  # bidi spelled out, blanks one space
    assert plain_text("x" * 300).endswith("…") and len(plain_text("x" * 300)) == 240


@pytest.mark.parametrize("build", [osc9, osc777, lambda t, b: osc99(t, b, "tao-1")])
def test_a_hostile_text_stays_inside_its_sequence(build: Any) -> None:
    sequence = build(EVIL, EVIL)
    assert sequence.startswith(f"{ESC}]")
    inner = sequence[2:]
    # The only controls left are the ones that end each sequence (BEL or ST) and start the next.
    terminators = inner.count("\x07") + inner.count(f"{ESC}\\")
    assert terminators == (2 if build not in (osc9, osc777) else 1)
    assert "\x9d" not in sequence and "\x9c" not in sequence and "\r" not in sequence


def test_the_three_forms() -> None:
    assert osc9("Job started", "a started.") == f"{ESC}]9;Job started: a started.\x07"
    assert osc777("Job; started", "a;b") == f"{ESC}]777;notify;Job, started;a;b\x07"
    assert osc99("Job started", "a started.", "tao 1") == (
        f"{ESC}]99;i=tao-1:d=0;Job started{ESC}\\{ESC}]99;i=tao-1:p=body;a started.{ESC}\\"
    )


def test_tmux_passthrough_doubles_every_escape() -> None:
    wrapped = tmux_passthrough(osc9("T", "b"))
    assert wrapped == f"{ESC}Ptmux;{ESC}{ESC}]9;T: b\x07{ESC}\\"


@pytest.mark.parametrize(
    ("environ", "notify_send", "method"),
    [
        ({"TERM": "xterm-kitty"}, True, "osc99"),
        ({"KITTY_WINDOW_ID": "1", "TERM": "tmux-256color"}, False, "osc99"),
        ({"TERM": "foot"}, False, "osc777"),
        ({"TERM": "rxvt-unicode-256color"}, False, "osc777"),
        ({"TERM_PROGRAM": "iTerm.app"}, False, "osc9"),
        ({"TERM_PROGRAM": "WezTerm"}, True, "osc9"),
        ({"WT_SESSION": "x"}, False, "osc9"),
        ({"DISPLAY": ":0", "TERM": "xterm-256color"}, True, "notify-send"),
        ({"DISPLAY": ":0", "SSH_CONNECTION": "a b c d"}, True, "osc9"),  # not that desktop
        ({"WAYLAND_DISPLAY": "wayland-0"}, False, "osc9"),  # no notify-send
        ({"VTE_VERSION": "7200"}, False, "osc777"),
        ({}, False, "osc9"),
    ],
)
def test_the_way_is_picked_from_the_terminal(
    environ: dict[str, str], notify_send: bool, method: str
) -> None:
    assert pick_method(environ, notify_send=notify_send) == method


def test_a_setting_overrides_and_tmux_wraps() -> None:
    assert session({"TERM": "xterm-kitty"}, "osc777", notify_send=True).method == "osc777"
    assert session({"TMUX": "/tmp/t,1,0"}, "auto", notify_send=False).tmux


def test_notify_send_gets_plain_arguments_with_its_markup_escaped() -> None:
    assert notify_send_argv("Job <failed>", "a & b <i>x</i>") == [
        "notify-send",
        "--app-name=tao-slurm-tui",
        "Job <failed>",
        "a &amp; b &lt;i&gt;x&lt;/i&gt;",
    ]


def _running(job_id: str, elapsed: str, limit: str, slurm_id: str = "7") -> JobRecord:
    return JobRecord(
        job_id,
        "p",
        status=TaoStatus.RUNNING,
        attempts=[Attempt(0, slurm_id, elapsed=elapsed, time_limit=limit, nodes="n1")],
    )


def test_wall_time_left_from_the_last_poll() -> None:
    assert wall_time_left(_running("a", "3:50:00", "4:00:00")) == (600, 14400)
    assert wall_time_left(_running("a", "10:00", "UNLIMITED")) is None
    pending = JobRecord("b", "p", attempts=[Attempt(0, "8", time_limit="1:00:00")])
    assert wall_time_left(pending) is None


def _notifier(**settings: Any) -> tuple[Notifier, list[str], list[list[str]]]:
    sent: list[str] = []
    spawned: list[list[str]] = []
    notifier = Notifier(
        NotifySettings(**settings),
        sent.append,
        environ={"TERM": "xterm-256color"},
        spawn=spawned.append,
    )
    return notifier, sent, spawned


def test_wall_time_is_warned_once_per_attempt_and_not_for_short_jobs() -> None:
    notifier, _, _ = _notifier()
    near = _running("long", "3:50:00", "4:00:00")
    short = _running("short", "00:01:00", "00:10:00")
    (event,) = notifier.wall_time([near, short])
    assert event == Transition(
        "long", "walltime", "long has 10 min of wall time left; SLURM stops it then."
    )
    assert notifier.wall_time([near]) == []
    retried = _running("long", "3:55:00", "4:00:00", slurm_id="9")  # a new attempt
    assert len(notifier.wall_time([retried])) == 1
    far = _running("far", "1:00:00", "4:00:00")
    assert notifier.wall_time([far]) == []


def test_only_the_events_the_settings_ask_for_are_sent() -> None:
    notifier, sent, _ = _notifier(via="osc9", canceled=False, retried=False)
    events = [
        Transition("a", "started", "a started on n1."),
        Transition("b", "canceled", "b was canceled."),
        Transition("c", "retried", "c was retried."),
        Transition("d", "failed", f"d failed: {EVIL}"),
    ]
    assert notifier.send(events) == 2
    assert sent[0] == f"{ESC}]9;Job started: a started on n1.\x07"
    assert sent[1].startswith(f"{ESC}]9;Job failed: d failed: dino\\x1b]0;pwned")
    assert sent[1].count(ESC) == 1


def test_ci_turns_notifications_off_unless_always() -> None:
    settings = NotifySettings()
    assert not Notifier(settings, print, environ={"CI": "true"}).enabled
    assert Notifier(settings, print, environ={"CI": "false"}).enabled
    always = NotifySettings(enabled="always")
    assert Notifier(always, print, environ={"CI": "true"}).enabled
    assert not Notifier(NotifySettings(enabled="never"), print, environ={}).enabled


def test_a_desktop_session_spawns_notify_send() -> None:
    spawned: list[list[str]] = []
    notifier = Notifier(NotifySettings(via="notify-send"), None, environ={}, spawn=spawned.append)
    assert notifier.send([Transition("a", "finished", "a finished.")]) == 1
    assert spawned == [["notify-send", "--app-name=tao-slurm-tui", "Job finished", "a finished."]]


def test_a_job_that_starts_is_an_event() -> None:
    pending = JobRecord("a", "p", status=TaoStatus.PENDING, attempts=[Attempt(0, "7")])
    running = JobRecord(
        "a", "p", status=TaoStatus.RUNNING, attempts=[Attempt(0, "7", nodes="n[1-2]")]
    )
    assert transitions({"a": pending}, [running]) == [
        Transition("a", "started", "a started on n[1-2].")
    ]
    paused = JobRecord("a", "p", status=TaoStatus.PAUSED, attempts=[Attempt(0, "7")])
    assert transitions({"a": paused}, [running]) == []  # resumed, not started
