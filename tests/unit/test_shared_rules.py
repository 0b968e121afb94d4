"""One source for the composer's rules: spec errors with wall time, and pending-reason words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tao_slurm_tui.core.partitions import HOUR
from tao_slurm_tui.core.render import render_sbatch
from tao_slurm_tui.core.slurm import explain_reason
from tao_slurm_tui.core.spec import spec_errors, spec_errors_for_profile, validate_spec
from tao_slurm_tui.services.fakecluster.demo import Demo
from tao_slurm_tui.services.fakecluster.seed import demo_profile as fake_profile
from tao_slurm_tui.widgets.job_table import reason_in_words

GOOD: dict[str, Any] = {
    "name": "rules-1",
    "image": "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt",
    "command": "dino train -e /specs/train.yaml",
    "time_hours": 4,
    "timeout_hours": 3.8,
    "partition": "polar",
}

LIMITS = {"polar": 4 * HOUR, "long": 48 * HOUR}


def test_valid_spec_has_no_errors() -> None:
    assert spec_errors_for_profile(GOOD, fake_profile(), LIMITS) == {}


def test_wall_time_over_the_partition_limit_is_an_error_of_time_hours() -> None:
    errors = spec_errors_for_profile({**GOOD, "time_hours": 10}, fake_profile(), LIMITS)
    assert list(errors) == ["time_hours"]
    assert "'polar' (MaxTime 4 h)" in errors["time_hours"]
    assert (
        spec_errors_for_profile(
            {**GOOD, "time_hours": 10, "partition": "long"}, fake_profile(), LIMITS
        )
        == {}
    )


def test_wall_time_is_checked_even_when_other_fields_are_wrong() -> None:
    data = {**GOOD, "name": "bad name!", "command": "", "time_hours": 10}
    errors = spec_errors_for_profile(data, fake_profile(), LIMITS)
    assert {"name", "command", "time_hours"} <= set(errors)


def test_profile_partitions_are_used_when_the_spec_names_none() -> None:
    profile = fake_profile().model_copy(update={"partition": "long"})
    data = {**GOOD, "partition": "", "time_hours": 10}
    assert spec_errors_for_profile(data, profile, LIMITS) == {}
    assert "time_hours" in spec_errors_for_profile(data, fake_profile(), LIMITS)


def test_a_bad_number_is_reported_once_without_a_wall_time_message() -> None:
    errors = spec_errors_for_profile({**GOOD, "time_hours": "ten"}, fake_profile(), LIMITS)
    assert errors["time_hours"] == spec_errors({**GOOD, "time_hours": "ten"})["time_hours"]


@pytest.mark.parametrize(
    "data",
    [
        GOOD,
        {**GOOD, "time_hours": 10},
        {**GOOD, "num_gpus": -1, "bogus": 1},
        {**GOOD, "partition": "gpu-long", "time_hours": 40, "timeout_hours": 39},
    ],
)
async def test_the_demo_uses_the_rules_with_the_fake_clusters_limits(
    data: dict[str, Any], tmp_path: Path
) -> None:
    demo = Demo(tmp_path / "demo", workstation=False)
    fake = demo.backend()
    try:
        limits = await fake.partition_limits()  # scontrol show partition on the fake cluster
        assert limits == {"polar": 4 * HOUR, "polar3": 4 * HOUR, "gpu-long": 48 * HOUR}
        assert fake.validate_spec(dict(data)) == spec_errors_for_profile(data, fake.profile, limits)
        if not fake.validate_spec(dict(data)):
            expected = render_sbatch(validate_spec(data), fake.profile, partition_limits=limits)
            assert fake.render(dict(data)) == expected
    finally:
        await fake.close()
        demo.close()


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        ("Resources", "no free nodes"),
        ("(Priority)", "lower priority"),
        ("ReqNodeNotAvail, UnavailableNodes:vm", "node unavail."),
        ("QOSSomethingNew", "QOS limit"),
        ("SomethingNew", "SomethingNew"),
        ("None", ""),
        ("", ""),
    ],
)
def test_short_reasons_come_from_core_slurm(reason: str, words: str) -> None:
    assert explain_reason(reason, short=True) == words
    assert reason_in_words(reason) == words
