"""Partition MaxTime fetched from the cluster, cached per profile, packaged list offline."""

from __future__ import annotations

from typing import Any

from tao_slurm_tui.core.partitions import PACKAGED_LIMITS
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.errors import OperationFailed
from tao_slurm_tui.services import partitions


class Conn:
    def __init__(self, stdout: str = "", fail: bool = False) -> None:
        self.stdout = stdout
        self.fail = fail
        self.calls = 0

    async def run(self, command: Any, **_: Any) -> Any:
        self.calls += 1
        if self.fail:
            raise OperationFailed("down")

        class R:
            stdout = self.stdout

        return R()

    async def upload_text(self, path: str, content: str, *, mode: int = 0o644) -> None:
        raise AssertionError("not used")


SCONTROL = (
    "PartitionName=polar Default=YES MaxTime=04:00:00 State=UP\n"
    "PartitionName=batch MaxTime=2-00:00:00 State=UP\n@@sinfo\npolar*|4:00:00\n"
)


async def test_fetched_once_then_cached_per_profile() -> None:
    conn = Conn(SCONTROL)
    first = await partitions.fetch_partition_limits(conn, "a", Profile())
    assert first == {"polar": 4 * 3600, "batch": 2 * 86400}
    assert await partitions.fetch_partition_limits(conn, "a", Profile()) == first
    assert conn.calls == 1
    assert partitions.offline_limits("a")["batch"] == 2 * 86400
    assert partitions.offline_limits("other") == PACKAGED_LIMITS


async def test_sinfo_is_the_second_source_and_failures_fall_back() -> None:
    conn = Conn("@@sinfo\ngpu*|1-00:00:00\nlong|UNLIMITED\n")
    assert await partitions.fetch_partition_limits(conn, "b", Profile()) == {
        "gpu": 86400,
        "long": None,
    }
    down = Conn(fail=True)
    assert await partitions.fetch_partition_limits(down, "c", Profile()) == PACKAGED_LIMITS
    assert await partitions.fetch_partition_limits(None, "c", Profile()) == PACKAGED_LIMITS
