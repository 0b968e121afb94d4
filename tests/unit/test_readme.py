"""The README stays true: key tables generated from the app, the two set-up commands, paths."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _readme_bindings_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "readme_bindings", ROOT / "scripts/readme_bindings.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_key_tables_match_the_app() -> None:
    text = (ROOT / "README.md").read_text()
    assert _readme_bindings_module().render(text) == text, "run: make readme-bindings"


def test_readme_quick_start_is_the_two_make_commands() -> None:
    text = (ROOT / "README.md").read_text()
    quick = text.split("## Quick start", 1)[1].split("##", 1)[0]
    commands = [
        line.split("#")[0].strip() for line in quick.splitlines() if line.startswith("make ")
    ]
    assert commands == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    assert "\ndemo:" in makefile and "\ntest:" in makefile
    assert "make test" in (ROOT / ".ci/run").read_text()


def test_readme_screenshots_exist() -> None:
    text = (ROOT / "README.md").read_text()
    for line in text.splitlines():
        if "](screenshots/" in line:
            path = line.split("](", 1)[1].split(")", 1)[0]
            assert (ROOT / path).is_file(), path
