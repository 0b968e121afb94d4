"""``creds install`` never takes the key as an argument, and never echoes one given there."""

from __future__ import annotations

import pytest

from tao_slurm_tui.cli import main


def test_key_as_an_argument_is_refused_without_echo(capsys: pytest.CaptureFixture[str]) -> None:
    sentinel = "SENTINEL-ngc-argv-7f3e"
    assert main(["creds", "install", sentinel]) == 2
    captured = capsys.readouterr()
    assert sentinel not in captured.out + captured.err  # argparse would echo it back
    assert "never the NGC key itself" in captured.err
    assert "Traceback" not in captured.err
