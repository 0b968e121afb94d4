"""Fault injection on the sandbox cluster: stop and start its daemons exactly as
``scripts/sandbox-cluster up`` does, and cut one SSH session from the server side.

The sandbox script records each daemon it started in ``$STATE/daemons/<name>`` as
``<pid> <exe> <starttime>`` (``starttime`` from ``/proc/PID/stat``) and ``down`` stops exactly
those. A restart here keeps that bookkeeping true: the daemon is stopped through its record
(SIGTERM, then SIGKILL after 15 s), started with the very command line ``up`` uses, and its new
record is written in the same format once its pid file names a live process with the right exe,
so ``down`` still finds it. Only slurmctld, slurmdbd and sshd are handled (what the fault suite
disturbs). Every function must run under ``flock /tmp/tao-cluster.lock`` (the tests take it).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests import ready, sandbox

STATE = sandbox.STATE_DIR
REC_DIR = STATE / "daemons"
RUN_DIR = STATE / "run"
LOG_DIR = STATE / "log"
SSH_DIR = STATE / "ssh"

#: How ``sandbox-cluster up`` starts each daemon (its ``start_daemon`` lines), and its exe.
COMMANDS: dict[str, tuple[list[str], str]] = {
    "slurmctld": (
        [
            "unshare",
            "--uts",
            "sh",
            "-c",
            'hostname "$1" && exec /usr/sbin/slurmctld',
            "sh",
            "tao-ctl",
        ],
        "/usr/sbin/slurmctld",
    ),
    "slurmdbd": (["/usr/sbin/slurmdbd"], "/usr/sbin/slurmdbd"),
    "sshd": (
        ["/usr/sbin/sshd", "-f", str(SSH_DIR / "sshd_config"), "-E", str(LOG_DIR / "sshd.log")],
        "/usr/sbin/sshd",
    ),
}


@dataclass(frozen=True)
class Record:
    pid: int
    exe: str
    start: str


def _stat(pid: int) -> tuple[str, str] | None:
    """(state, starttime) of a pid, or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(") ", 1)[1].split()
    return fields[0], fields[19]


def _runs(pid: int, exe: str) -> bool:
    st = _stat(pid)
    if st is None or st[0] in ("Z", "X"):
        return False
    try:
        return os.readlink(f"/proc/{pid}/exe") == exe
    except OSError:
        return False


def recorded(name: str) -> Record | None:
    """The running daemon ``up`` recorded under ``name``, if it still runs."""
    try:
        pid, exe, start = (REC_DIR / name).read_text().split()
    except (OSError, ValueError):
        return None
    st = _stat(int(pid))
    if not _runs(int(pid), exe) or st is None or st[1] != start:
        return None
    return Record(int(pid), exe, start)


def stop(name: str) -> None:
    """Stop a recorded daemon (SIGTERM; SIGKILL after 15 s) and drop its record."""
    rec = recorded(name)
    if rec is None:
        raise RuntimeError(f"{name} is not running as recorded by sandbox-cluster")
    os.kill(rec.pid, signal.SIGTERM)
    with contextlib.suppress(ready.NotReady):
        ready.wait_until(lambda: recorded(name) is None, f"{name} ending on SIGTERM", timeout=15)
    if recorded(name) is not None:
        os.kill(rec.pid, signal.SIGKILL)
        # Gone, not "a moment later": a start right after must not meet the old listener.
        ready.wait_until(lambda: recorded(name) is None, f"{name} ending on SIGKILL", timeout=10)
    (REC_DIR / name).unlink(missing_ok=True)


def start(name: str) -> None:
    """Start a stopped daemon as ``up`` does and record it."""
    if recorded(name) is not None:
        return
    argv, exe_path = COMMANDS[name]
    exe = os.path.realpath(exe_path)
    pidfile = RUN_DIR / f"{name}.pid"
    pidfile.unlink(missing_ok=True)
    with open(LOG_DIR / f"{name}.stderr", "wb") as err:
        subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=err, stderr=err, check=True)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            pid = int(re.sub(r"\D", "", pidfile.read_text()))
        except (OSError, ValueError):
            pid = 0
        st = _stat(pid) if pid else None
        if pid and st and _runs(pid, exe):
            (REC_DIR / name).write_text(f"{pid} {exe} {st[1]}\n")
            return
        time.sleep(0.1)
    raise RuntimeError(f"{name} did not come up; see {LOG_DIR}")


def wait_until(check: list[str], timeout: float = 60) -> None:
    """Run ``check`` (argv) until it succeeds."""
    deadline = time.monotonic() + timeout
    while subprocess.run(check, capture_output=True, check=False).returncode != 0:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{' '.join(check)} kept failing for {timeout:g} s")
        time.sleep(0.5)


def slurmctld_up() -> None:
    wait_until(["sh", "-c", "timeout 5 scontrol ping | grep -q 'is UP'"])


def slurmdbd_up() -> None:
    wait_until(["sh", "-c", "timeout 5 sacctmgr -n -P list cluster >/dev/null"])


def sshd_up() -> None:
    """The sandbox's sshd greets as an SSH server (its pid file only says it started)."""
    ready.wait_until(
        lambda: ready.ssh_banner(sandbox.HOST, sandbox.PORT), "the sandbox sshd", timeout=30
    )


def sshd_sessions(local_port: int) -> list[int]:
    """Server-side sshd processes serving the TCP connection from ``local_port`` (ours)."""
    out = subprocess.run(
        ["ss", "-Htnp", "state", "established", f"( sport = :{sandbox.PORT} )"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    pids: list[int] = []
    for line in out.splitlines():
        cols = line.split()
        if len(cols) >= 4 and cols[3].rsplit(":", 1)[-1] == str(local_port):
            pids += [int(p) for p in re.findall(r"pid=(\d+)", line)]
    return pids


def kill_session(local_port: int) -> int:
    """SIGKILL the sshd processes of one connection (the "network dropped" of a login host);
    returns how many were killed."""
    pids = sshd_sessions(local_port)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return len(pids)
