"""The layers point one way (docs/ARCHITECTURE.md): an import-contract test keeps them so.

- ``core`` is pure: no asyncssh, no Textual, no config (file handling), services, remote or UI.
- ``remote`` is the only place that opens connections: no Textual, no services/UI.
- ``services`` never import Textual or the UI.
- the UI (``app``, ``screens``, ``widgets``) never imports asyncssh or ``remote``: it talks to a
  back end object.
- the CLI (``cli``, ``commands``) never imports asyncssh, ``remote`` or Textual: each verb is a call
  on the same back end object (tests/unit/test_import_graph.py checks the whole graph).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "tao_slurm_tui"

FORBIDDEN: dict[str, tuple[str, ...]] = {
    "core": (
        "asyncssh",
        "textual",
        "rich",
        "tao_slurm_tui.remote",
        "tao_slurm_tui.services",
        "tao_slurm_tui.screens",
        "tao_slurm_tui.widgets",
        "tao_slurm_tui.app",
        "tao_slurm_tui.config",
        "tao_slurm_tui.commands",
        "subprocess",
        "socket",
        "sqlite3",
    ),
    "remote": (
        "textual",
        "tao_slurm_tui.services",
        "tao_slurm_tui.screens",
        "tao_slurm_tui.widgets",
        "tao_slurm_tui.app",
    ),
    "services": (
        "textual",
        "tao_slurm_tui.screens",
        "tao_slurm_tui.widgets",
        "tao_slurm_tui.app",
        "tao_slurm_tui.commands",
    ),
    "commands": ("asyncssh", "textual", "tao_slurm_tui.remote"),
    "cli.py": ("asyncssh", "textual", "tao_slurm_tui.remote"),
    "screens": ("asyncssh", "tao_slurm_tui.remote"),
    "widgets": ("asyncssh", "tao_slurm_tui.remote", "tao_slurm_tui.services.store"),
    "app.py": ("asyncssh", "tao_slurm_tui.remote"),
}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _files(layer: str) -> list[Path]:
    target = PKG / layer
    return [target] if target.is_file() else sorted(target.rglob("*.py"))


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_point_one_way(layer: str) -> None:
    files = _files(layer)
    assert files, f"no files found for layer {layer}"
    bad = []
    for path in files:
        for name in _imports(path):
            for forbidden in FORBIDDEN[layer]:
                if name == forbidden or name.startswith(forbidden + "."):
                    bad.append(f"{path.relative_to(PKG)} imports {name}")
    assert not bad, "layering violated:\n" + "\n".join(bad)


OMEGACONF_HOMES = {
    "core/tao/schema.py",
    "core/tao/spec_needs.py",
    "core/tao/spec_nodes.py",
    "core/tao/spec_result.py",
    "core/tao/spec_values.py",
    "services/tao_loader.py",
}
"""The only modules that import omegaconf (and its YAML): the pure schema check in core (the
schema and the spec check's parts, core/tao/spec_*.py) and the loader that builds schemas.
Everything else, the CLI's parser and the TUI's start included, stays free of it
(services/tao.py reaches them lazily, when a schema is asked for)."""


def test_omegaconf_stays_in_the_tao_schema_modules() -> None:
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        rel = str(path.relative_to(PKG))
        for name in _imports(path):
            if name.split(".")[0] in ("omegaconf", "yaml") and rel not in OMEGACONF_HOMES:
                bad.append(f"{rel} imports {name}")
    assert not bad, "omegaconf outside the TAO schema modules:\n" + "\n".join(bad)
    for home in OMEGACONF_HOMES:
        assert any(n.split(".")[0] == "omegaconf" for n in _imports(PKG / home)), home


def test_nvidias_code_is_never_imported_by_name() -> None:
    # It runs only through services/tao_loader.py's verified finder, never by an import
    # statement that would reach an installed nvidia_tao_core (or its Flask dependencies).
    bad = [
        f"{path.relative_to(PKG)} imports {name}"
        for path in sorted(PKG.rglob("*.py"))
        for name in _imports(path)
        if name.split(".")[0].startswith("nvidia_tao")
    ]
    assert not bad, "\n".join(bad)
