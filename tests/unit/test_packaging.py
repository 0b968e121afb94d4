"""A non-editable install into a fresh venv works and finds the packaged styles and templates."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_in_fresh_venv_finds_styles_and_templates(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist), str(REPO)],
        check=True,
        capture_output=True,
    )
    (wheel,) = dist.glob("tao_slurm_tui-*.whl")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)],
        check=True,
        capture_output=True,
    )
    cli = env_dir / "bin" / "tao-slurm-tui"
    help_out = subprocess.run(
        [str(cli), "--help"], check=True, capture_output=True, text=True, cwd=tmp_path
    )
    assert "doctor" in help_out.stdout
    probe = (
        "from tao_slurm_tui.resources import styles_dir, templates_dir\n"
        "print(styles_dir()); print(templates_dir())\n"
        "print(sorted(p.name for p in styles_dir().glob('*.tcss')))\n"
        "print(sorted(p.name for p in templates_dir().glob('*.j2')))\n"
    )
    out = subprocess.run(
        [str(py), "-c", probe], check=True, capture_output=True, text=True, cwd=tmp_path
    ).stdout.splitlines()
    styles, templates = Path(out[0]), Path(out[1])
    # Found inside the installed package, not in the checkout.
    assert env_dir in styles.parents and env_dir in templates.parents
    assert "app.tcss" in out[2]
    assert "sbatch.sh.j2" in out[3]
