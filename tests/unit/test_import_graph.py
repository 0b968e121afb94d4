"""The import graph of ``tao_slurm_tui``, computed from the source: one arrow direction, no loops.

docs/ARCHITECTURE.md draws the layers; this test keeps the code to the drawing:

- every import (module level, inside functions, under ``TYPE_CHECKING`` alike) points from a
  layer to the same or a lower one: core ← config ← remote ← services ← widgets ← screens ← app
  ← commands/cli;
- the imports form no cycle, at module level or through imports inside functions (and each
  module can be imported on its own);
- no CLI command imports ``remote``: every verb goes through the application layer.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "tao_slurm_tui"
NAME = "tao_slurm_tui"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "resources", "core"),
    ("config",),
    ("remote",),
    ("services",),
    ("widgets",),
    ("screens",),
    ("app",),
    ("commands", "cli", "__main__"),
)
"""Lowest first: a module may import its own layer and the layers before it, never after."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _layer(module: str) -> int:
    first = module.split(".")[1] if "." in module else ""
    for rank, names in enumerate(LAYERS):
        if first in names:
            return rank
    if module == NAME:
        return 0
    raise AssertionError(f"{module} belongs to no layer; add it to LAYERS and ARCHITECTURE.md")


def _resolve(module: str, node: ast.ImportFrom | ast.Import) -> list[str]:
    """Package modules an import statement names (``from pkg import mod`` counts as ``pkg.mod``)."""
    targets: list[str] = []
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.startswith(NAME)]
    base = node.module or ""
    if node.level:
        package = module.split(".")
        if MODULES[module].name != "__init__.py":
            package = package[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, base] if base else package)
    if not base.startswith(NAME):
        return []
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        targets.append(sub if sub in MODULES else base)
    return targets


def _edges(*, module_level_only: bool) -> set[tuple[str, str]]:
    edges: set[tuple[str, str]] = set()
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        nodes: list[ast.AST] = []
        if module_level_only:
            stack: list[ast.stmt] = list(tree.body)
            while stack:
                stmt = stack.pop()
                if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test):
                    continue  # never executed: not part of the runtime graph
                if isinstance(stmt, ast.If | ast.Try):
                    for block in ("body", "orelse", "finalbody", "handlers"):
                        for child in getattr(stmt, block, []):
                            stack.extend(
                                child.body if isinstance(child, ast.ExceptHandler) else [child]
                            )
                    continue
                nodes.append(stmt)
        else:
            nodes = list(ast.walk(tree))
        for node in nodes:
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _resolve(module, node):
                    if target != module and target in MODULES:
                        edges.add((module, target))
    return edges


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        _layer(module)


def test_imports_point_one_way() -> None:
    upward = sorted(
        f"{src} -> {dst}"
        for src, dst in _edges(module_level_only=False)
        if _layer(dst) > _layer(src)
    )
    assert not upward, "imports against the layer order:\n" + "\n".join(upward)


def _cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    graph: dict[str, list[str]] = {}
    for src, dst in edges:
        graph.setdefault(src, []).append(dst)
    # Tarjan's strongly connected components: any component with two modules is a loop.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, []):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles() -> None:
    # Module level (what Python executes on import), and even through imports inside functions
    # (a screen importing another lazily to walk the stack is a loop in disguise).
    for module_level_only in (True, False):
        loops = _cycles(_edges(module_level_only=module_level_only))
        assert not loops, "import loops:\n" + "\n".join(" <-> ".join(c) for c in loops)


def test_the_cycle_finder_finds_a_cycle() -> None:
    # The finder itself must work, or the test above would pass on anything.
    assert _cycles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [["a", "b", "c"]]
    assert _cycles({("a", "b"), ("b", "c")}) == []


def test_no_cli_command_imports_remote() -> None:
    bad = sorted(
        f"{src} -> {dst}"
        for src, dst in _edges(module_level_only=False)
        if (src.startswith(f"{NAME}.commands") or src == f"{NAME}.cli")
        and dst.startswith(f"{NAME}.remote")
    )
    assert not bad, "CLI verbs must go through the application layer:\n" + "\n".join(bad)


def test_each_module_imports_alone() -> None:
    # Each module imported first into an interpreter with no package module loaded yet: an
    # import loop that only bites in one order shows here.
    code = (
        "import importlib, sys\n"
        f"for module in {sorted(MODULES)!r}:\n"
        f"    for name in [n for n in sys.modules if n.split('.')[0] == {NAME!r}]:\n"
        "        del sys.modules[name]\n"
        "    importlib.import_module(module)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]


def test_graph_sees_the_package() -> None:
    # Sanity: the graph has the arrows the layers rely on.
    edges = _edges(module_level_only=False)
    assert (f"{NAME}.services.cluster", f"{NAME}.remote.connection") in edges
    assert (f"{NAME}.commands.status", f"{NAME}.services.backend") in edges
    assert importlib.import_module(NAME)
