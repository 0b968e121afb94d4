"""What SLURM 22.05 does with ``--dependency=afterok:<id>`` when ``<id>`` is requeued.

Found on the sandbox (SLURM 22.05.8), first by hand on 2026-11-30 and kept true by this test,
because TAO pipelines (train -> evaluate -> export submitted at once) depend on it:

1. **Requeued while running** (``scontrol requeue``, or SLURM requeueing after a node failure
   with ``--requeue``): the dependent job stays ``PENDING (Dependency)`` with
   ``afterok:<id>(unfulfilled)`` while the step waits (``BeginTime``) and runs again, and
   starts once the *same SLURM id* completes. So a step that SLURM itself requeues keeps its
   pipeline intact.
2. **Requeued after it FAILED**: the moment the step failed, the dependent job turned
   ``PENDING (DependencyNeverSatisfied)`` with ``afterok:<id>(failed)``, and it STAYS so after
   the step is requeued and then completes: SLURM never re-evaluates a failed dependency. The
   dependent job would wait forever; a pipeline must therefore cancel the rest of the chain
   ("the previous step failed"), or re-point it (``scontrol update JobId=<next>
   Dependency=afterok:<new id>``) when it retries a step under a new SLURM id.
"""

from __future__ import annotations

import subprocess
import time

from tests import sandbox


def _ssh(command: str) -> str:
    done = subprocess.run(
        [*sandbox.openssh_argv(), command], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _sbatch(*args: str) -> str:
    return _ssh(" ".join(["sbatch", "--parsable", "-o", "/dev/null", "-t", "5", *args]))


def _squeue(job_id: str) -> str:
    return _ssh(f"squeue -h -j {job_id} -o '%T %r %E' 2>/dev/null || true")


def _wait(predicate_cmd: str, want: str, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while True:
        got = _ssh(predicate_cmd)
        if want in got:
            return got
        assert time.monotonic() < deadline, f"{predicate_cmd!r} never showed {want!r}: {got!r}"
        time.sleep(1)


def _state(job_id: str) -> str:
    return f"sacct -n -X -j {job_id} -o State%30 | head -n 1"


def test_afterok_survives_a_requeue_of_a_running_job(cluster: None) -> None:
    first = _sbatch("--requeue", "-J", "rq-first", "--wrap", "'sleep 8'")
    second = _sbatch("-J", "rq-second", f"--dependency=afterok:{first}", "--wrap", "true")
    try:
        _wait(f"squeue -h -j {first} -o %T", "RUNNING")
        _ssh(f"scontrol requeue {first}")
        assert _squeue(second) == f"PENDING Dependency afterok:{first}(unfulfilled)"
        _wait(_state(second), "COMPLETED", timeout=180)
        runs = _ssh(f"sacct -n -X -D -j {first} -o State%20").split()
        assert runs[-1] == "COMPLETED" and "REQUEUED" in runs  # it ran twice, then second ran
    finally:
        _ssh(f"scancel {first} {second} 2>/dev/null || true")


def test_afterok_on_a_failed_then_requeued_job_is_never_satisfied(cluster: None) -> None:
    flag = f"$HOME/.tao-rq-{time.time_ns()}"
    script = f"'if [ -e {flag} ]; then exit 0; fi; touch {flag}; exit 1'"
    first = _sbatch("--requeue", "-J", "rq-fail", "--wrap", script)
    second = _sbatch("-J", "rq-after-fail", f"--dependency=afterok:{first}", "--wrap", "true")
    try:
        _wait(_state(first), "FAILED")
        assert _wait(f"squeue -h -j {second} -o %r", "DependencyNeverSatisfied")
        _ssh(f"scontrol requeue {first}")
        _wait(_state(first), "COMPLETED", timeout=180)
        time.sleep(3)
        # The step completed on its second run, yet the dependent job is stuck for good.
        assert _squeue(second) == f"PENDING DependencyNeverSatisfied afterok:{first}(failed)"
    finally:
        _ssh(f"scancel {first} {second} 2>/dev/null || true; rm -f {flag}")
