"""The long-lived framed shell (``Connection.run_framed``) against the real sandbox sshd:
framing, no interleaving, clean timeouts, reconnects, the fallback where a login host forbids a
shell, and -- through a proxy adding 20 ms each way -- one network round trip per command and
per monitor tick."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from tao_slurm_tui.core.models import Attempt, JobRecord, TaoStatus
from tao_slurm_tui.core.quoting import join
from tao_slurm_tui.remote.connection import CommandTimeout, Connection, ConnectionState
from tao_slurm_tui.remote.hostkeys import trust_host_key
from tao_slurm_tui.services.monitor import Monitor
from tao_slurm_tui.services.store import JobStore
from tests import sandbox
from tests.integration.test_connection import SecondSshd, _kill
from tests.latency import DelayProxy

pytestmark = pytest.mark.usefixtures("cluster")


@pytest.fixture
async def conn() -> AsyncIterator[Connection]:
    connection = Connection(sandbox.sandbox_profile())
    try:
        yield connection
    finally:
        await connection.close()


async def test_stdout_stderr_and_status_stay_apart(conn: Connection) -> None:
    result = await conn.run_framed("printf out; printf err >&2; exit 3")
    assert (result.exit_status, result.stdout, result.stderr) == (3, "out", "err")
    # Output that looks like our markers, lines without a newline, a command reading stdin.
    result = await conn.run_framed("printf '\\n@@tao-sh:0:1 0\\n'; cat; echo done")
    assert result.ok and result.stdout == "\n@@tao-sh:0:1 0\ndone\n"
    # exit, cd and variables stay inside the command (a subshell), the shell lives on.
    await conn.run_framed("cd / && X=1 && exit 0")
    result = await conn.run_framed('pwd; echo "${X:-unset}"')
    assert result.stdout == f"{sandbox.HOME}\nunset\n"
    # A MiB arrives byte-identical; a syntax error is the command's failure, not the shell's.
    big = await conn.run_framed("head -c 1048576 /dev/zero | tr '\\0' a")
    assert big.stdout == "a" * 1048576
    broken = await conn.run_framed("echo 'unbalanced")
    assert broken.exit_status != 0 and broken.stderr
    assert (await conn.run_framed("echo still")).stdout == "still\n"
    shell = conn.shell
    assert shell is not None and shell.starts == 1 and shell.commands == 7
    # The same command through run() and run_framed() gives the same result.
    cmd = join(["sh", "-c", "echo $((6*7)); echo e >&2; exit 5"])
    a, b = await conn.run(cmd), await conn.run_framed(cmd)
    assert (a.exit_status, a.stdout, a.stderr) == (b.exit_status, b.stdout, b.stderr)


async def test_concurrent_commands_never_interleave(conn: Connection) -> None:
    async def one(n: int) -> str:
        cmd = f"for i in 1 2 3; do echo {n}-$i; echo e{n}-$i >&2; sleep 0.01; done"
        result = await conn.run_framed(cmd)
        assert result.stderr == "".join(f"e{n}-{i}\n" for i in (1, 2, 3))
        return result.stdout

    outputs = await asyncio.gather(*(one(n) for n in range(20)))
    assert outputs == ["".join(f"{n}-{i}\n" for i in (1, 2, 3)) for n in range(20)]
    assert conn.shell is not None and conn.shell.starts == 1


async def test_timeout_replaces_the_shell_and_the_next_command_is_clean(conn: Connection) -> None:
    await conn.run_framed("true")
    with pytest.raises(CommandTimeout, match=r"did not finish within 0\.3 s"):
        await conn.run_framed("sleep 1; echo late", timeout=0.3)
    # The old shell would print "late" a moment later: the next command must not see it.
    result = await conn.run_framed("sleep 1.2; echo mine")
    assert result.stdout == "mine\n" and result.stderr == ""
    assert conn.shell is not None and conn.shell.starts == 2


async def test_shell_is_recreated_after_a_reconnect() -> None:
    seen: list[ConnectionState] = []
    connection = Connection(sandbox.sandbox_profile(), on_state=lambda s, _m: seen.append(s))
    try:
        # The shell's parent is the sshd process serving this connection.
        session = int((await connection.run_framed("echo $PPID")).stdout)
        assert "sshd" in Path(f"/proc/{session}/cmdline").read_text()
        first = connection.shell
        seen.clear()
        _kill(session)
        result = await connection.run_framed("echo $PPID")
        assert result.ok and int(result.stdout) != session
        assert ConnectionState.RECONNECTING in seen and seen[-1] is ConnectionState.CONNECTED
        assert connection.shell is not None and connection.shell is not first
    finally:
        await connection.close()


@pytest.fixture
def no_shell_sshd(tmp_path: Path) -> Iterator[SecondSshd]:
    """A second sshd whose login host allows commands but refuses a shell on stdin (a
    ForceCommand wrapper, as some sites use)."""
    script = Path(f"/tmp/tao-no-shell-{uuid.uuid4().hex[:8]}.sh")
    script.write_text(
        '#!/bin/sh\ncase "$SSH_ORIGINAL_COMMAND" in\n'
        '  ""|"exec sh"|sh|bash) echo "interactive shells are not allowed here" >&2; exit 1;;\n'
        'esac\nexec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n'
    )
    script.chmod(0o755)
    server = SecondSshd(tmp_path, extra_config=f"ForceCommand {script}\n")
    server.start()
    try:
        yield server
    finally:
        server.stop()
        script.unlink()


async def test_falls_back_to_exec_where_the_login_host_refuses_a_shell(
    tmp_path: Path, no_shell_sshd: SecondSshd
) -> None:
    known_hosts = tmp_path / "known_hosts"
    trust_host_key(
        known_hosts, "127.0.0.1", no_shell_sshd.port, no_shell_sshd.public_key.read_text()
    )
    profile = sandbox.sandbox_profile(port=no_shell_sshd.port, known_hosts=str(known_hosts))
    async with Connection(profile) as connection:
        result = await connection.run_framed("echo via-exec; echo e >&2; exit 4")
        assert (result.exit_status, result.stdout, result.stderr) == (4, "via-exec\n", "e\n")
        assert connection.shell is None  # refused: plain exec from now on
        assert (await connection.run_framed("echo again")).stdout == "again\n"


# ----------------------------------------------------------------------------------- latency


async def _counted(proxy: DelayProxy, operation: Callable[[], Awaitable[object]]) -> int:
    """Round trips ``operation`` waited for through ``proxy`` (client requests it counted)."""
    mark = len(proxy.directions)
    await operation()
    await asyncio.sleep(3 * proxy.delay)  # anything sent after the answer shows up too
    return proxy.requests(mark)


async def test_one_round_trip_per_command_and_per_tick(tmp_path: Path) -> None:
    async with (
        DelayProxy(0.020) as proxy,
        Connection(sandbox.sandbox_profile()) as near,
        Connection(proxy.profile(tmp_path / "known_hosts")) as far,
    ):
        await far.run_framed("true")  # connects and starts the shell
        # The control: an exec opens a channel, then runs the command (and closes it).
        assert await _counted(proxy, lambda: far.run("true")) >= 2
        assert await _counted(proxy, lambda: far.run_framed("true")) == 1
        assert await _counted(proxy, lambda: far.run_framed("echo x >&2; exit 3")) == 1
        # Monitor ticks over 3 held jobs: one round trip each (squeue for all my jobs).
        submitted = await near.run(
            "for i in 1 2 3; do sbatch --parsable --hold -p polar -c 1 -o /dev/null "
            "-J t-latency --wrap true || exit 1; done",
            check=True,
        )
        ids = [line.split(";")[0] for line in submitted.stdout.split()]
        store = JobStore(tmp_path / "state.db")
        try:
            for i, sid in enumerate(ids):
                store.create_job(
                    JobRecord(
                        id=f"t-latency-{i}",
                        profile="p",
                        base_results_dir=sandbox.RESULTS,
                        status=TaoStatus.PENDING,
                        submitted=True,
                        attempts=[Attempt(number=0, slurm_job_id=sid)],
                    )
                )
            monitor = Monitor(far, store, "p", sandbox.sandbox_profile())
            await monitor.tick()
            # The site's reservations and drains are read in the background once per 10 min
            # (the first tick starts it): not part of a tick's cost.
            await monitor.site.wait()

            async def ten_ticks() -> None:
                for _ in range(10):
                    assert (await monitor.tick()).round_trips == 1

            start = time.perf_counter()
            assert await _counted(proxy, ten_ticks) == 10
            elapsed = time.perf_counter() - start - 3 * proxy.delay
            # Physically at least 10 x RTT; the count above is the claim, this is the cost.
            assert elapsed >= 10 * proxy.rtt
            assert all(j.status is TaoStatus.PENDING for j in store.list_jobs("p"))
        finally:
            store.close()
            await near.run(["scancel", *ids])
