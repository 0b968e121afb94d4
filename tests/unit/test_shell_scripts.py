"""Static checks of the project's bash scripts.

Under ``set -o pipefail`` a probe like ``ip addr show | grep -q X`` is a race: grep exits on the
first match, the writer gets SIGPIPE on its next write, and the pipeline reads as "not found".
CI once failed that way (``ip addr add`` on an address that was there: "Address already
assigned"). Probes capture the whole answer first (``[[ $(cmd) == *X* ]]``) or use an idempotent
command (``ip addr replace``).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = [
    path
    for path in [*sorted((ROOT / "scripts").iterdir()), ROOT / ".ci" / "run"]
    if path.is_file() and path.read_text(errors="replace").startswith("#!/usr/bin/env bash")
]
EARLY_EXIT = re.compile(r"\|\s*(grep\s+(-\w*q\w*|--quiet)\b|head\b)")
"""A reader that may stop before the writer is done: grep -q, head."""


def test_there_are_bash_scripts_to_check() -> None:
    assert {p.name for p in SCRIPTS} >= {"sandbox-cluster", "run"}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_no_early_exit_reader_in_a_pipefail_script(script: Path) -> None:
    text = script.read_text()
    if "pipefail" not in text:
        return
    offending = [
        f"{script.name}:{number}: {line.strip()}"
        for number, line in enumerate(text.splitlines(), 1)
        if not line.lstrip().startswith("#") and EARLY_EXIT.search(line)
    ]
    assert not offending, "\n".join(offending)


READY = re.compile(r"^ready_state\(\) \{.*\}$", re.MULTILINE)


@pytest.mark.parametrize(
    ("state", "ready"),
    [
        ("idle", True),
        ("mix", True),
        ("alloc", True),
        ("comp", True),
        ("mix-", True),  # PLANNED: held by backfill for a waiting job (CI saw it once)
        ("idle-", True),
        ("drain", False),
        ("drng", False),
        ("down*", False),
        ("idle*", False),  # not responding
        ("idle~", False),  # powered off
        ("mix#", False),  # powering up
        ("", False),
    ],
)
def test_sandbox_status_counts_a_planned_node_as_ready(state: str, ready: bool) -> None:
    """`sandbox-cluster status` and `up` read sinfo's short state; a node the scheduler plans
    for a waiting job (`mix-`) serves jobs and must not make status fail."""
    text = (ROOT / "scripts" / "sandbox-cluster").read_text()
    match = READY.search(text)
    assert match, "ready_state() not found in scripts/sandbox-cluster"
    done = subprocess.run(
        ["bash", "-c", f'{match.group(0)}\nready_state "$1"', "bash", state],
        capture_output=True,
        timeout=10,
        check=False,
    )
    assert (done.returncode == 0) is ready
