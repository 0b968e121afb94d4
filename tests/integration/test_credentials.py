"""The NGC key into the remote enroot credentials, and nowhere else.

A sentinel key is installed on the sandbox while a thread samples every process's command line
and environment on the server (we are root on the same machine: ``/proc`` is the server's process
list, and ``ps -eo args`` is run too). Afterwards the sentinel must be in the credentials file
and in none of: the sampled processes, the app's XDG dirs, the state DB, the captured output,
the remote user's shell history.

The remote file is shared by every test run: a file lock serializes these tests, and the file
is backed up and restored around each one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import tomli_w

from tao_slurm_tui.config import state_db_path
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.errors import BadInput
from tao_slurm_tui.remote.connection import Connection
from tao_slurm_tui.services.credentials import (
    Secret,
    credentials_present,
    install_ngc_credentials,
)
from tests import sandbox

ENROOT_DIR = Path(sandbox.HOME) / ".config" / "enroot"
CRED = ENROOT_DIR / ".credentials"
LOCK = "/tmp/tao-creds-test.lock"
OTHER = "machine gitlab.example.com login bob password other-token-123\n"


@pytest.fixture
def remote_creds(cluster: None) -> Iterator[Path]:
    """Exclusive use of the remote credentials file; its previous state is restored after."""
    user = pwd.getpwnam(sandbox.USER)
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        config_existed = ENROOT_DIR.parent.exists()
        dir_existed = ENROOT_DIR.exists()
        dir_mode = ENROOT_DIR.stat().st_mode & 0o777 if dir_existed else None
        saved = CRED.read_bytes() if CRED.exists() else None
        try:
            yield CRED
        finally:
            if saved is None:
                with contextlib.suppress(FileNotFoundError):
                    CRED.unlink()
            else:
                ENROOT_DIR.mkdir(parents=True, exist_ok=True)
                tmp = ENROOT_DIR / f".restore-{uuid.uuid4().hex}"
                tmp.write_bytes(saved)
                os.chown(tmp, user.pw_uid, user.pw_gid)
                os.chmod(tmp, 0o600)
                os.replace(tmp, CRED)
            if not dir_existed:
                shutil.rmtree(ENROOT_DIR, ignore_errors=True)
                if not config_existed:
                    shutil.rmtree(ENROOT_DIR.parent, ignore_errors=True)
            elif dir_mode is not None:
                os.chmod(ENROOT_DIR, dir_mode)
            fcntl.flock(lock, fcntl.LOCK_UN)


def _seed_remote_file(content: str) -> None:
    user = pwd.getpwnam(sandbox.USER)
    for path in (ENROOT_DIR.parent, ENROOT_DIR):
        path.mkdir(exist_ok=True)
        os.chown(path, user.pw_uid, user.pw_gid)
    os.chmod(ENROOT_DIR, 0o755)  # the install must tighten it to 0700
    CRED.write_text(content)
    os.chown(CRED, user.pw_uid, user.pw_gid)
    os.chmod(CRED, 0o644)


class ProcessSampler(threading.Thread):
    """Samples argv and environment of every process on the server until stopped.

    A cheap loop watches the remote user's processes; when the install script shows up it is
    frozen (SIGSTOP) while every process's argv and environment are read and ``ps -eo args``
    runs, then resumed. So at least one full sample is known to fall inside an install.
    """

    def __init__(self, needle: str) -> None:
        super().__init__(daemon=True)
        self.needle = needle.encode()
        self.uid = pwd.getpwnam(sandbox.USER).pw_uid
        self.hits: list[str] = []
        self.saw_install = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        rounds = 0
        while not self._stop_event.is_set():
            for pid in self._user_pids():
                try:
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if b".config/enroot" in cmdline and b"bash" in cmdline:
                    self._full_sample_while_frozen(pid)
            rounds += 1
            if rounds % 50 == 0:
                self._full_sample()

    def _user_pids(self) -> list[int]:
        pids = []
        with os.scandir("/proc") as entries:
            for entry in entries:
                if entry.name.isdigit():
                    with contextlib.suppress(OSError):
                        if entry.stat().st_uid == self.uid:
                            pids.append(int(entry.name))
        return pids

    def _full_sample_while_frozen(self, pid: int) -> None:
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            return
        try:
            self.saw_install += 1
            self._full_sample()
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def _full_sample(self) -> None:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            for name in ("cmdline", "environ"):
                try:
                    data = Path(f"/proc/{pid}/{name}").read_bytes()
                except OSError:
                    continue
                if self.needle in data:
                    self.hits.append(f"/proc/{pid}/{name}")
        out = subprocess.run(["ps", "-eo", "args"], capture_output=True).stdout
        if self.needle in out:
            self.hits.append("ps -eo args")

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=30)


def _files_containing(root: Path, needle: bytes) -> list[str]:
    found = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath) / name
            with contextlib.suppress(OSError):
                if needle in path.read_bytes():
                    found.append(str(path))
    return found


def _assert_no_local_trace(sentinel: str, xdg_root: Path) -> None:
    needle = sentinel.encode()
    assert _files_containing(xdg_root, needle) == []
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        assert _files_containing(Path(os.environ[var]), needle) == []
    db = state_db_path()
    if db.exists():
        assert needle not in db.read_bytes()


def _assert_no_remote_history(sentinel: str) -> None:
    for path in Path(sandbox.HOME).glob(".*history*"):
        if path.is_file():
            assert sentinel not in path.read_text(errors="replace"), path


async def test_install_writes_exact_file_and_leaves_no_trace(
    remote_creds: Path,
    sandbox_profile: Profile,
    capfd: pytest.CaptureFixture[str],
    _isolated_xdg: Path,
) -> None:
    sentinel = "SENTINEL-NGC-" + uuid.uuid4().hex
    _seed_remote_file(OTHER + "machine nvcr.io login $oauthtoken password OLD-KEY\n")
    sampler = ProcessSampler(sentinel)
    sampler.start()
    try:
        async with Connection(sandbox_profile) as conn:
            # Repeat until the sampler has seen the remote script at least once, so the
            # process-list assertion below is known to have overlapped an install.
            for _ in range(50):
                await install_ngc_credentials(conn, Secret(sentinel))
                if sampler.saw_install:
                    break
            assert await credentials_present(conn)
    finally:
        sampler.stop()
    assert sampler.saw_install, "the sampler never saw the remote install running"
    assert sampler.hits == []

    assert remote_creds.read_text() == (
        OTHER
        + f"machine nvcr.io login $oauthtoken password {sentinel}\n"
        + f"machine authn.nvidia.com login $oauthtoken password {sentinel}\n"
    )
    assert remote_creds.stat().st_mode & 0o777 == 0o600
    assert ENROOT_DIR.stat().st_mode & 0o777 == 0o700
    assert pwd.getpwuid(remote_creds.stat().st_uid).pw_name == sandbox.USER
    assert [p.name for p in ENROOT_DIR.iterdir()] == [".credentials"]  # no temp file left

    out, err = capfd.readouterr()
    assert sentinel not in out and sentinel not in err
    _assert_no_local_trace(sentinel, _isolated_xdg)
    _assert_no_remote_history(sentinel)


async def test_bad_key_is_refused_without_echo(
    sandbox_profile: Profile, capfd: pytest.CaptureFixture[str]
) -> None:
    sentinel = "SENTINEL-NGC-" + uuid.uuid4().hex
    async with Connection(sandbox_profile) as conn:
        with pytest.raises(BadInput) as info:
            await install_ngc_credentials(conn, f"{sentinel} extra")
    assert sentinel not in str(info.value)
    out, err = capfd.readouterr()
    assert sentinel not in out + err


def _config(tmp_path: Path, profile: Profile) -> Path:
    cfg = tmp_path / "config.toml"
    cfg.write_text(
        tomli_w.dumps({"profiles": {"sb": profile.model_dump(mode="json", exclude_none=True)}})
    )
    return cfg


def test_cli_install_from_stdin_and_check(
    remote_creds: Path, sandbox_profile: Profile, tmp_path: Path, _isolated_xdg: Path
) -> None:
    sentinel = "SENTINEL-NGC-" + uuid.uuid4().hex
    _seed_remote_file(OTHER)
    cfg = _config(tmp_path, sandbox_profile)
    base = [sys.executable, "-m", "tao_slurm_tui", "--config", str(cfg), "creds"]
    sampler = ProcessSampler(sentinel)
    sampler.start()
    try:
        proc = subprocess.run(
            [*base, "install"], input=sentinel + "\n", capture_output=True, text=True, timeout=120
        )
    finally:
        sampler.stop()
    assert proc.returncode == 0, proc.stderr
    assert sentinel not in proc.stdout + proc.stderr
    assert "Installed" in proc.stdout
    assert sampler.hits == []
    assert remote_creds.read_text().startswith(OTHER)
    assert remote_creds.read_text().count(sentinel) == 2
    check = subprocess.run([*base, "check"], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0 and "present" in check.stdout

    bad = subprocess.run(
        [*base, "install"],
        input=f"{sentinel}\nsecond line\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2
    assert sentinel not in bad.stdout + bad.stderr
    assert "line break" in bad.stderr
    _assert_no_local_trace(sentinel, _isolated_xdg)
    _assert_no_remote_history(sentinel)


def test_cli_check_reports_missing(
    remote_creds: Path, sandbox_profile: Profile, tmp_path: Path
) -> None:
    with contextlib.suppress(FileNotFoundError):
        remote_creds.unlink()
    cfg = _config(tmp_path, sandbox_profile)
    proc = subprocess.run(
        [sys.executable, "-m", "tao_slurm_tui", "--config", str(cfg), "creds", "check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "creds install" in proc.stderr
