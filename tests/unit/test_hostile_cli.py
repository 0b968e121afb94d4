"""The hostile-value table for the command line: every verb that shows the cluster's words, run
as a real process on the fake cluster (``TAO_SLURM_TUI_DEMO=1``, the real services) after
:func:`tests.hostile.plant` put escape sequences, C1 controls, bidi overrides, markup-looking
names and a row-forging job name where the cluster's answers come from.

Each row says where the value enters, and the test reads the bytes the process wrote: no
control character but newline and tab reaches the terminal (``--json`` included), the value is
shown spelled out where the row says so, and nothing the hostile job wrote changes another job.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tao_slurm_tui.services.fakecluster.demo import Demo, demo_directory
from tao_slurm_tui.services.fakecluster.seed import PROFILE_NAME
from tests.hostile import HISTORY_ID, Planted, plant, terminal_codes


@dataclass(frozen=True)
class Row:
    """One verb over the planted world: where the hostile value enters, what must show."""

    id: str
    argv: list[str]
    enters: str
    """Where the cluster's words come from for this verb."""
    shows: str = ""
    """A regex stdout must match (the value as data: spelled out, or dropped from a log)."""
    hides: str = ""
    """A regex stdout must not match."""
    code: int = 0


ROWS = [
    Row("status", ["status"], "status.json message and eta of a running job; SLURM states",
        shows=r"dino-train-1 +Running .*step done a\\x1b\]52;c;", hides=r"bert-retried +Pending"),
    Row("status-one", ["status", "dino-train-1"], "the same for one job",
        shows=r"eta 0:40:00\\x1b\]0;pwned-"),  # an eta that is no duration: 20 characters
    Row("status-json", ["status", "--json"], "--json: every value JSON-escaped",
        shows=r'"message": "step done a\\u001b\]52;c;'),
    Row("logs", ["logs", "dino-train-1"], "main.out lines (OSC 52, OSC 0, cursor-up+erase, C1)",
        shows=r"(?m)^fake line$\n^abcde\\u202edecoy\\u202cf\[/\]g\[@click=app\.quit\]click me\[/\]"
        r"h\\x07\\x7f\\x00$"),
    Row("logs-tail", ["logs", "dino-train-1", "--tail", "3"], "the last lines only",
        shows=r"(?m)^green$"),
    Row("history", ["history", "--since", "30d"], "a job of the user's named with escapes",
        shows=r"exp\[/data\]\\x1b\]52;c;"),
    Row("history-json", ["history", "--since", "30d", "--json"], "--json of the same",
        shows=r'"name": "exp\[/data\]\\u001b\]52;c;'),
    Row("capacity", ["capacity"], "an admin's drain reason with escapes, bidi and markup",
        shows=r"Xid 79 \\x1b\]52;c;cm0gLXJmIH4v\\x07\\u202edecoy\\u202c\[/\]"),
    Row("capacity-json", ["capacity", "--json"], "--json of the same", shows=r"\\u001b\]52"),
    Row("doctor", ["doctor"], "SLURM's version string", code=1, shows=r"22\.05\.8\\x1b\]0;"),
]  # fmt: skip


@pytest.fixture
def world_env(tmp_path: Path) -> tuple[dict[str, str], Planted]:
    """The demo cluster with every hostile value planted, and the environment of a process
    that runs the CLI on it."""
    env = {
        **os.environ,
        "TAO_SLURM_TUI_DEMO": "1",
        "HOME": str(tmp_path / "home"),
        "COLUMNS": "200",
        "PYTHONIOENCODING": "utf-8",
    }
    demo = Demo(demo_directory(), now=None)
    planted = plant(demo.world(PROFILE_NAME))
    demo.close()
    return env, planted


def cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "tao_slurm_tui", *argv],
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_the_cluster_s_words_reach_the_terminal_as_data(
    row: Row, world_env: tuple[dict[str, str], Planted]
) -> None:
    env, _ = world_env
    done = cli(env, *row.argv)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == row.code, f"{row.id} ({row.enters}): {err}"
    assert "Traceback" not in err
    assert terminal_codes(done.stdout) == [], f"{row.id}: raw codes on stdout"
    assert terminal_codes(done.stderr) == [], f"{row.id}: raw codes on stderr"
    if row.shows:
        assert re.search(row.shows, out), f"{row.id}: {out[-2000:]}"
    if row.hides:
        assert not re.search(row.hides, out), f"{row.id}: {out[-2000:]}"


def test_a_forged_job_name_changes_no_other_job(
    world_env: tuple[dict[str, str], Planted],
) -> None:
    env, planted = world_env
    for _ in range(2):  # a poll, then one that uses what the background sacct brought
        done = cli(env, "status", "--json")
        assert done.returncode == 0, done.stderr.decode()
    jobs = {job["id"]: job for job in json.loads(done.stdout)}
    assert jobs[planted.victim]["status"] == "Running"
    assert jobs[planted.running]["status"] == "Running"
    demo = Demo(demo_directory(), now=None)
    events = demo.store.events(PROFILE_NAME, planted.victim)
    demo.close()
    assert not [e for e in events if e.kind in ("requeued", "state")], events


def test_an_outside_job_s_output_name_is_data(world_env: tuple[dict[str, str], Planted]) -> None:
    env, planted = world_env
    done = cli(env, "history", "--since", "30d", "--name", "exp[")
    assert done.returncode == 0 and terminal_codes(done.stdout) == []
    assert HISTORY_ID in done.stdout.decode()
    assert planted.history_name.split("\x1b")[0] in done.stdout.decode()
