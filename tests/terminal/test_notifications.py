"""Desktop notifications as the terminal receives them: the real app (and ``status --watch``) in
tmux on demo mode's fake cluster, whose jobs the test starts, ends and runs out of wall time.

Every byte the program writes to its terminal is recorded (tmux ``pipe-pane``), so the test sees
the escape sequences themselves: OSC 9 inside tmux's DCS passthrough for the TUI (the app is
told it runs in tmux), OSC 777 for ``status --watch``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tao_slurm_tui.services.fakecluster import engine
from tao_slurm_tui.services.fakecluster.world import World
from tests.terminal.demo import start
from tests.terminal.tmux import TIMEOUT, Terminal

ESC = "\x1b"


def _config(home: Path, via: str) -> None:
    (home / ".config" / "tao-slurm-tui" / "config.toml").write_text(
        f'poll_interval = 2\n[notify]\nenabled = "always"\nvia = "{via}"\n'
    )


def _happen(world: World) -> None:
    """yolo-finetune starts, dino-train-1 trains to its end, bert-retried has 10 min left."""
    with world.edit() as state:
        at = engine.now(state)
        jobs = {job["name"]: job for job in state["jobs"].values()}
        yolo = jobs["yolo-finetune"]
        yolo.update(state="RUNNING", reason="None", node_list="gpu-a03", start=at, pinned=False)
        bert = jobs["bert-retried"]
        bert["time_limit"] = int(engine.elapsed(bert, at)) + 600
    world.train("dino-train-1", 13)


def _wait_bytes(path: Path, wanted: list[str], terminal: Terminal) -> str:
    deadline = time.monotonic() + TIMEOUT
    text = ""
    while time.monotonic() < deadline:
        text = path.read_bytes().decode("utf-8", "replace") if path.exists() else ""
        if all(w in text for w in wanted):
            return text
        time.sleep(0.2)
    missing = [w for w in wanted if w not in text]
    pytest.fail(f"never sent {missing!r}; the screen:\n{terminal.screen()}")


def test_the_tui_notifies_start_end_and_wall_time_through_tmux(
    demo_home: Path, demo_world: World, demo_terminals: list[Terminal]
) -> None:
    home, world = demo_home, demo_world
    _config(home, "osc9")
    terminal = start(demo_terminals, home, [], TMUX="/tmp/tmux-test,1,0")
    out = home.parent / "tui.bytes"
    terminal.record_output(out)
    terminal.wait_for("set-up")  # demo mode's first start
    terminal.keys("Escape")
    terminal.wait_for("dino-train-1")
    _happen(world)

    def wrapped(title: str, body: str) -> str:
        return f"{ESC}Ptmux;{ESC}{ESC}]9;{title}: {body}\a{ESC}\\"

    text = _wait_bytes(
        out,
        [
            wrapped("Job started", "yolo-finetune started on gpu-a03."),
            wrapped("Job finished", "dino-train-1 finished."),
            f"{ESC}Ptmux;{ESC}{ESC}]9;Wall time running out: bert-retried has ",
        ],
        terminal,
    )
    # Once each: the next polls send nothing again.
    assert text.count("Job started: yolo-finetune") == 1
    assert "min of wall time left; SLURM stops it then." in text
    terminal.keys("C-q")
    assert terminal.wait_exit() == 0


def test_status_watch_notifies_on_the_terminal_not_in_its_output(
    demo_home: Path, demo_world: World, demo_terminals: list[Terminal]
) -> None:
    home, world = demo_home, demo_world
    _config(home, "osc777")
    listing = home.parent / "status.json-lines"
    command = f"{sys.executable} -m tao_slurm_tui status --watch --json > {listing}"
    terminal = start(demo_terminals, home, [], ARGV=command)
    out = home.parent / "watch.bytes"
    terminal.record_output(out)
    deadline = time.monotonic() + TIMEOUT
    while '"id": "dino-train-1"' not in (listing.read_text() if listing.exists() else ""):
        assert time.monotonic() < deadline, terminal.screen()
        time.sleep(0.2)
    _happen(world)
    _wait_bytes(
        out,
        [
            f"{ESC}]777;notify;Job started;yolo-finetune started on gpu-a03.\a",
            f"{ESC}]777;notify;Job finished;dino-train-1 finished.\a",
            f"{ESC}]777;notify;Wall time running out;bert-retried has ",
        ],
        terminal,
    )
    # stdout (a file here, a pipe to jq elsewhere) holds the JSON lines only.
    assert ESC not in listing.read_text()
