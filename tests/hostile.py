"""Hostile values from the cluster, and where the tests put them into the fake cluster's world.

What a careless or malicious job (or an admin's typo) can write where the product reads: a log
line, ``status.json``, a job name (``scontrol update JobName=...``), a node's drain reason, a
SLURM version string. The CLI tier (tests/unit/test_hostile_cli.py) and the TUI tier
(tests/tui/test_hostile.py) plant them with :func:`plant` and check the bytes that reach the
terminal with :func:`terminal_codes` / :func:`leaked_payloads`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import pytest
import rich.markup
import textual.markup

from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.shown import UNSAFE
from tao_slurm_tui.services.fakecluster import engine
from tao_slurm_tui.services.fakecluster.seed import RESULTS
from tao_slurm_tui.services.fakecluster.world import World

OSC52 = "\x1b]52;c;cm0gLXJmIH4v\x07"
"""Writes "rm -rf ~/" to the user's clipboard (paste-jacking the next shell command)."""
OSC0 = "\x1b]0;pwned-title\x07"
"""Sets the terminal window's title."""
FORGE_LINE = "\x1b[1A\x1b[2K"
"""Cursor up one line, erase it: the next text replaces a line of real output."""
C1 = "\x9b1A\x9d0;c1-title\x9c"
"""The same in C1 controls (CSI, OSC, ST as single code points)."""
BIDI = "\u202edecoy\u202c"
"""A right-to-left override: text reads in another order than it is."""
MARKUP_END = "[/]"
"""Ends markup that was never opened: MarkupError (a crash) where data is parsed as markup."""
MARKUP_CLICK = "[@click=app.quit]click me[/]"
"""Becomes a clickable action where data is parsed as markup."""
NAMES = ("exp[/data]", "sweep[lr=0.1]")
"""Job names people really use that happen to look like markup."""

EVERYTHING = f"a{OSC52}b{OSC0}c{FORGE_LINE}d{C1}e{BIDI}f{MARKUP_END}g{MARKUP_CLICK}h\x07\x7f\x00"
"""Every kind at once, between letters."""

PAYLOADS = (
    "\x1b]52;c;cm0gLXJmIH4v",
    "\x1b]0;pwned-title",
    "\x1b[1A\x1b[2K",
    "\x9b",
    "\x9d",
    "\u202e",
)
"""Sequences that must never reach the terminal as bytes (the TUI's own output is full of its
own escape sequences; these are the planted ones)."""

MARKERS = ("\x1b", "\x9b", "\x9d", "\u202e", "exp[/data]", "sweep[lr", "[@click=app.quit]",
           "Xid 79", "pwned-title", "step done", "decoy")  # fmt: skip
"""What every planted value holds (raw or spelled out): a string with one of them handed to a
markup parser is data read as markup."""

HISTORY_ID = "990001"
"""The SLURM id of the hostile job planted in the history."""


def terminal_codes(data: bytes) -> list[str]:
    """The control characters in a CLI's output other than newline and tab ([] when none)."""
    text = data.decode("utf-8", "replace")
    return sorted({repr(m.group()) for m in UNSAFE.finditer(text) if m.group() not in "\n\t"})


def leaked_payloads(output: str) -> list[str]:
    """Which planted sequences a terminal received (the TUI's driver output)."""
    return [p for p in PAYLOADS if p in output]


@dataclass
class MarkupSpy:
    """Every string with a planted value that reached a markup parser (Rich's or Textual's)."""

    parsed: list[str] = field(default_factory=list)


def markup_spy(monkeypatch: pytest.MonkeyPatch) -> MarkupSpy:
    """Watch both markup parsers (``Text.from_markup``, ``Content.from_markup`` and every widget
    that reads a ``str`` as markup end there) for the planted values, until the test ends:
    whatever screen or widget shows them, now or added later, must hand them over as plain
    text."""
    spy = MarkupSpy()
    rich_render, textual_to_content = rich.markup.render, textual.markup.to_content

    def watch(markup: object) -> None:
        if isinstance(markup, str) and any(m in markup for m in MARKERS):
            spy.parsed.append(markup)

    def render(markup: str, *args: Any, **kwargs: Any) -> Any:
        watch(markup)
        return rich_render(markup, *args, **kwargs)

    def to_content(markup: str, *args: Any, **kwargs: Any) -> Any:
        watch(markup)
        return textual_to_content(markup, *args, **kwargs)

    monkeypatch.setattr(rich.markup, "render", render)
    monkeypatch.setattr(textual.markup, "to_content", to_content)
    return spy


@dataclass(frozen=True)
class Planted:
    """Where each hostile value went (what a test asserts about)."""

    running: str = "dino-train-1"
    """A running job: its status.json and main.out carry every kind."""
    victim: str = "bert-retried"
    """A running job (a lower SLURM id: printed before the forger) another job's name tries
    to show as requeued and Pending."""
    history_name: str = f"exp[/data]{OSC52}{FORGE_LINE}"
    """A job of the user's history, run outside the tool."""


def plant(world: World) -> Planted:
    """Put every hostile value into ``world`` (the seeded fake cluster)."""
    planted = Planted()
    paths = JobPaths(RESULTS, planted.running)
    status = world.local(paths.subtask_status_json("train"))  # where TAO 7.3 writes it
    with status.open("a", encoding="utf-8") as handle:
        for line in (
            {"status": "RUNNING", "epoch": 8, "max_epoch": 20, "eta": f"0:40:00{OSC0}",
             "kpi": {f"loss{OSC52}": 0.3, "mAP": f"0.5{C1}", NAMES[1]: 1}},
            {"status": "RUNNING", "message": f"step done {EVERYTHING}"},
        ):  # fmt: skip
            handle.write(json.dumps(line) + "\n")
    with world.edit() as state:
        running = next(j for j in state["jobs"].values() if j["name"] == planted.running)
        out = world.local(paths.main_out(running["id"]))
        victim = max(
            (j for j in state["jobs"].values() if j["name"] == planted.victim),
            key=lambda j: int(j["id"]),  # its latest attempt
        )
        # The running job renames itself: after a newline, a whole squeue -O row (the columns
        # the poll once asked for, the name last) showing the victim requeued and Pending.
        forged = [victim["id"], "PENDING", "Priority", "", "0:00", "1:00:00", "polar", "N/A",
                  "N/A", "N/A", "1", "forged"]  # fmt: skip
        running["name"] = "x\n" + "\t".join(forged)
        node = next(n for n in state["nodes"] if n.get("reason"))
        node["reason"] = f"Xid 79 {OSC52}{BIDI}{MARKUP_END}"
        state["version"] = f"22.05.8{OSC0}"
    with out.open("a", encoding="utf-8") as handle:
        handle.write(f"real line\nfake line{FORGE_LINE}\n{EVERYTHING}\n\x1b[32mgreen\x1b[0m\n")
    _plant_history(world, planted)
    return planted


def _plant_history(world: World, planted: Planted) -> None:
    history_file = world.path / engine.HISTORY_FILE
    jobs: list[dict[str, Any]] = json.loads(history_file.read_text(encoding="utf-8"))
    last = dict(jobs[-1])
    work_dir = f"{world.home}/outside"
    last.update(
        id=HISTORY_ID, array_id="", name=planted.history_name, work_dir=work_dir,
        state="FAILED", exit_code="1:0", end=float(last["end"]) + 60,
    )  # fmt: skip
    jobs.append(last)
    tmp = history_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(jobs), encoding="utf-8")
    os.replace(tmp, history_file)
    output = world.local(f"{work_dir}/slurm-{HISTORY_ID}.out")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(f"outside job\n{EVERYTHING}\n", encoding="utf-8")
