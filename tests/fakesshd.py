"""A real SSH server (asyncssh) that runs every command with local bash and *fake* SLURM tools.

The bad-input table needs remote answers the real cluster never gives (garbage ``squeue`` or
``sacct`` lines, an ``sbatch`` that prints no job id, an unreadable ``status.json``). This server
is a real SSH endpoint: the app connects to it over TCP with its real :class:`Connection`, and
each command runs in ``bash -c`` on this machine with ``PATH`` starting at ``FAKEBIN``, where the
test puts small scripts named ``squeue``, ``sacct``, ``sbatch``... that print what the row needs.
Nothing else is faked, so the test does not depend on how the app builds its commands.

Run as ``python -m tests.fakesshd STATE_DIR``: writes ``STATE_DIR/port`` when listening;
``STATE_DIR/host_key`` (server), ``STATE_DIR/client_key`` (+ ``.pub``), ``STATE_DIR/known_hosts``,
``STATE_DIR/fakebin`` and ``STATE_DIR/home`` (the remote ``$HOME``) are created here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import asyncssh

from tests.ready import ssh_banner, wait_until


class _Server(asyncssh.SSHServer):
    def begin_auth(self, username: str) -> bool:
        return True

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        return True


async def run_with_bash(
    process: asyncssh.SSHServerProcess[bytes],
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> None:
    """Run the channel's command with local ``bash -c``: stdin, stdout, stderr and the exit
    status forwarded (as sshd runs it with the user's shell)."""
    proc = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        process.command or "bash",
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdin and proc.stdout and proc.stderr

    async def feed() -> None:
        stdin = proc.stdin
        assert stdin is not None
        try:
            while data := await process.stdin.read(65536):
                stdin.write(data)
                await stdin.drain()
        except (OSError, asyncssh.Error):
            pass
        finally:
            stdin.close()

    async def pump(source: asyncio.StreamReader, sink: asyncssh.SSHWriter[bytes]) -> None:
        while data := await source.read(65536):
            sink.write(data)

    feeder = asyncio.ensure_future(feed())
    try:
        await asyncio.gather(pump(proc.stdout, process.stdout), pump(proc.stderr, process.stderr))
        code = await proc.wait()
    finally:
        feeder.cancel()
        if proc.returncode is None:  # the channel went away first
            proc.kill()
            await proc.wait()
    process.exit(code)


def prepare(state: Path) -> None:
    """Keys, known_hosts skeleton and the fake remote home (idempotent)."""
    state.mkdir(parents=True, exist_ok=True)
    for name in ("host_key", "client_key"):
        path = state / name
        if not path.exists():
            key = asyncssh.generate_private_key("ssh-ed25519")
            key.write_private_key(str(path))
            key.write_public_key(str(path) + ".pub")
            path.chmod(0o600)
    (state / "fakebin").mkdir(exist_ok=True)
    (state / "home").mkdir(exist_ok=True)


async def _serve(state: Path) -> None:
    env = {
        "PATH": f"{state / 'fakebin'}:/usr/bin:/bin",
        "HOME": str(state / "home"),
        "USER": "fake",
        "LANG": "C.UTF-8",
    }

    async def handle(process: asyncssh.SSHServerProcess[bytes]) -> None:
        await run_with_bash(process, env=env, cwd=env["HOME"])

    server = await asyncssh.listen(
        "127.0.0.1",
        0,
        server_host_keys=[str(state / "host_key")],
        server_factory=_Server,
        process_factory=handle,
        encoding=None,
        allow_scp=False,
    )
    port = server.sockets[0].getsockname()[1]
    host_pub = (state / "host_key.pub").read_text().strip()
    (state / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub}\n")
    tmp = state / "port.tmp"
    tmp.write_text(str(port))
    os.replace(tmp, state / "port")
    await server.wait_closed()


@contextlib.contextmanager
def running(state: Path) -> Iterator[int]:
    """This server in a child process with its state in ``state``; yields its port and stops it
    afterwards."""
    port_file = state / "port"
    port_file.unlink(missing_ok=True)  # (a port file of an earlier run names a dead server)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakesshd", str(state)],
        cwd=Path(__file__).resolve().parents[1],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    def serving() -> bool:
        # The file is written (atomically) once the server listens; its greeting proves it.
        return port_file.exists() and ssh_banner("127.0.0.1", int(port_file.read_text()))

    try:
        wait_until(
            serving,
            "the fake sshd",
            timeout=30,
            alive=lambda: proc.poll() is None,
            detail=lambda: (
                proc.stderr.read().decode() if proc.poll() is not None and proc.stderr else ""
            ),
        )
        yield int(port_file.read_text())
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    state = Path(sys.argv[1])
    prepare(state)
    asyncio.run(_serve(state))


if __name__ == "__main__":
    main()
