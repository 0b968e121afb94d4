"""Partition MaxTime fetched from the cluster, cached per cluster, packaged list offline."""

from __future__ import annotations

from pathlib import Path
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


async def test_fetched_once_then_cached_per_cluster() -> None:
    conn = Conn(SCONTROL)
    first = await partitions.fetch_partition_limits(conn, Profile(hostnames=["a"]))
    assert first == {"polar": 4 * 3600, "batch": 2 * 86400}
    assert await partitions.fetch_partition_limits(conn, Profile(hostnames=["a"])) == first
    assert conn.calls == 1
    assert partitions.offline_limits(Profile(hostnames=["a"]))["batch"] == 2 * 86400
    assert partitions.offline_limits(Profile(hostnames=["other"])) == PACKAGED_LIMITS


async def test_sinfo_is_the_second_source_and_failures_fall_back() -> None:
    conn = Conn("@@sinfo\ngpu*|1-00:00:00\nlong|UNLIMITED\n")
    assert await partitions.fetch_partition_limits(conn, Profile(hostnames=["b"])) == {
        "gpu": 86400,
        "long": None,
    }
    down = Conn(fail=True)
    assert (
        await partitions.fetch_partition_limits(down, Profile(hostnames=["c"])) == PACKAGED_LIMITS
    )
    assert (
        await partitions.fetch_partition_limits(None, Profile(hostnames=["c"])) == PACKAGED_LIMITS
    )


async def test_the_cache_follows_the_cluster_not_the_profile_name() -> None:
    """A profile whose login host, port or user changed asks the new cluster (issue 12: the
    cache was keyed by the profile's name, so a renamed host kept the old cluster's limits);
    a profile renamed but pointing at the same cluster keeps its cache."""
    old = Profile(hostnames=["old-login"], user="ana", port=22)
    conn = Conn(SCONTROL)
    assert (await partitions.fetch_partition_limits(conn, old))["batch"] == 2 * 86400
    other = "PartitionName=batch MaxTime=01:00:00 State=UP\n@@sinfo\n"
    for changed in (
        old.model_copy(update={"hostnames": ["new-login"]}),
        old.model_copy(update={"port": 2222}),
        old.model_copy(update={"user": "bo"}),
    ):
        fresh = Conn(other)
        assert await partitions.fetch_partition_limits(fresh, changed) == {"batch": 3600}
        assert fresh.calls == 1, changed
        # Offline, the new cluster's own table (not the old one's under the same name).
        assert partitions.offline_limits(changed)["batch"] == 3600
    again = Conn(other)
    same = old.model_copy(update={"partition": "batch"})
    assert (await partitions.fetch_partition_limits(again, same))["batch"] == 2 * 86400
    assert again.calls == 0
    assert partitions.offline_limits(old)["batch"] == 2 * 86400


def test_the_backend_forgets_the_limits_of_the_old_host(tmp_path: Path) -> None:
    """The composer's wall-time check (no network) uses the new cluster's cached limits once
    the profile's host was changed in the same session."""
    from tao_slurm_tui.config import Config, Settings
    from tao_slurm_tui.core.spec import SpecDraft
    from tao_slurm_tui.services.cluster import ClusterBackend
    from tao_slurm_tui.services.store import JobStore

    old = Profile(hostnames=["old-login"], user="ana", partition="batch")
    new = old.model_copy(update={"hostnames": ["new-login"]})
    partitions._write(old, {"batch": 2 * 86400}, {})
    partitions._write(new, {"batch": 3600}, {})
    config = Config(tmp_path / "config.toml", Settings(profiles={"work": old}))
    backend = ClusterBackend(config, "work", store=JobStore(tmp_path / "state.db"))
    draft = SpecDraft({**backend.default_spec(), "name": "j", "command": "true", "time_hours": 2})
    assert "time_hours" not in backend.resolve(draft).by_field()
    backend.save_profile("work", new)
    assert "time_hours" in backend.resolve(draft).by_field()
    backend.store.close()
