"""The backup slurmctld takes over when the primary dies, and hands control back when it returns
(``SlurmctldHost`` listed twice, shared StateSaveLocation, ``SlurmctldTimeout`` of seconds).

``scripts/sandbox-cluster ctl-down`` kills the primary as a crash would; every SLURM command on
the machine waits through the takeover, so this is ``serial`` and holds the cluster lock.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests import sandbox

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.usefixtures("cluster")]

STATE_FILE = Path("/var/lib/slurm/slurmctld/job_state")
"""The controllers' shared StateSaveLocation: the primary writes it, the backup reads it."""


def submit(*args: str) -> str:
    out = sandbox.ssh(sandbox.quoted("sbatch", "--parsable", "-o", "/dev/null", *args))
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_backup_controller_takes_over_and_hands_back() -> None:
    with sandbox.flocked(sandbox.CLUSTER_LOCK):
        assert sandbox.fresh_info()["controllers"]["in_control"] == "tao-ctl"
        running = submit("-t", "10", "--wrap", "sleep 600")
        held = submit("--hold", "--wrap", "true")
        sandbox.wait_state(running, {"RUNNING"}, 120)
        # A crash loses what the primary had not saved yet (jobs submitted in its last seconds
        # included): kill it only once its job state on disk postdates both jobs.
        saved = time.time()
        sandbox.wait_for(
            lambda: STATE_FILE.stat().st_mtime > saved + 0.5, 60, "slurmctld saved its job state"
        )
        try:
            down = sandbox.script("ctl-down")
            assert down.returncode == 0, down.stderr
            killed = time.monotonic()
            # Commands wait through the takeover, then the backup answers.
            sandbox.wait_for(
                lambda: sandbox.ssh("squeue -h -o %i", timeout=60).returncode == 0, 60, "squeue"
            )
            takeover = time.monotonic() - killed
            controllers = sandbox.fresh_info()["controllers"]
            assert controllers["in_control"] == "tao-ctl2", controllers
            assert controllers["primary"]["up"] is False and controllers["backup"]["up"] is True
            assert takeover < 4 * controllers["slurmctld_timeout"], takeover
            # The backup knows every job (shared state) and schedules new ones.
            assert sandbox.job_state(running) == "RUNNING"
            assert sandbox.job_state(held) == "PENDING"
            fresh = submit("--wrap", "true")
            assert sandbox.wait_state(fresh, sandbox.FINAL, 120) == "COMPLETED"
        finally:
            up = sandbox.script("ctl-up", timeout=180)
            assert up.returncode == 0, up.stdout + up.stderr
        assert sandbox.fresh_info()["controllers"]["in_control"] == "tao-ctl"
        assert sandbox.job_state(running) == "RUNNING"
        assert sandbox.job_state(held) == "PENDING"
        sandbox.ssh(f"scancel {running} {held}")


def test_ctl_up_with_the_primary_up_changes_nothing() -> None:
    result = sandbox.script("ctl-up")
    assert result.returncode == 0, result.stderr
    assert sandbox.fresh_info()["controllers"]["in_control"] == "tao-ctl"
