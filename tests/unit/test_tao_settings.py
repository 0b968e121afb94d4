"""The profile's TAO settings: ``tao_version``, ``tao_registry`` (a site mirror of nvcr.io) and
``tao_images`` (exact images per container kind), validated where they are written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tao_slurm_tui.cli import main
from tao_slurm_tui.config import Config
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.errors import ConfigError


def test_defaults_pin_nothing() -> None:
    profile = Profile()
    assert (profile.tao_version, profile.tao_registry, profile.tao_images) == ("", "", {})


def test_profile_settings_validate_and_round_trip(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    assert (
        main(
            [
                "--config",
                str(config),
                "config",
                "set-profile",
                "hpc",
                "user=alice",
                "hostnames=login1",
                "tao_version=7.3.0",
                "tao_registry=harbor.site.edu:5000/nvcr/",
                "tao_images=TAO_PYTORCH=harbor.site.edu/tao:7.3.0-pyt, TAO_DS=/sq/ds.sqsh",
            ]
        )
        == 0
    )
    profile = Config.load(config).profile("hpc", environ={})
    assert profile.tao_version == "7.3.0"
    assert profile.tao_registry == "harbor.site.edu:5000/nvcr"
    assert profile.tao_images == {
        "TAO_PYTORCH": "harbor.site.edu/tao:7.3.0-pyt",
        "TAO_DS": "/sq/ds.sqsh",
    }


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("tao_version=latest", "must be a TAO version like 7.3.0"),
        ("tao_registry=https://harbor.site.edu", "must be a registry host"),
        ("tao_images=TAO_PYTORCH", "is not KIND=IMAGE"),
        ("tao_images=pyt=reg/x:1", "is not a TAO container kind"),
        ("tao_images=TAO_PYTORCH=has space", "TAO_PYTORCH: "),
    ],
)
def test_bad_profile_settings_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str, message: str
) -> None:
    config = tmp_path / "config.toml"
    argv = ["--config", str(config), "config", "set-profile", "x", "user=a", "hostnames=h", setting]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_bad_tao_setting_in_the_file_is_one_sentence(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[profiles.a]\nuser = "a"\nhostnames = ["h"]\ntao_registry = "a b"\n')
    with pytest.raises(ConfigError, match=r"key 'profiles.a.tao_registry' is invalid"):
        Config.load(config)
