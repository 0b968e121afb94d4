"""Short procedures and one-job modules (issue 22): a guard, so the shape stays.

- No module of the package is longer than :data:`MAX_MODULE_LINES` lines.
- No function or method is longer than :data:`MAX_FUNCTION_LINES` lines (decorators, signature
  and docstring included) unless the reason is written at its top: its docstring, a comment
  right above it, or a comment before its first statement says ``Long because: ...``.

A long function is not wrong in itself (a table, a template, one linear script); one whose phases
are inline is, and the written reason is what tells the two apart for the next reader.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "tao_slurm_tui"

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60
REASON = "Long because:"

# Files other branches of issue 22 are reshaping while this guard lands (h-resolve: the one
# resolve step and the submit phases; h-fakeremote: the fake remote replacing the fake back
# end). The lead deletes each line when its branch merges; an entry that is no longer needed
# fails test_the_allow_list_holds_only_what_still_needs_it, so none outlives its reason.
ALLOWED_WHILE_OTHERS_WORK: frozenset[str] = frozenset()


@dataclass(frozen=True)
class TooLong:
    """One module or function over its limit."""

    where: str
    """``path`` or ``path:line name``."""
    lines: int


def _relative(path: Path) -> str:
    return path.relative_to(PKG).as_posix()


def _modules() -> list[Path]:
    return sorted(PKG.rglob("*.py"))


def _has_reason(node: ast.FunctionDef | ast.AsyncFunctionDef, source: list[str]) -> bool:
    """The docstring, the comment lines right above the def (or its decorators), or a comment
    between the signature and the first statement names the reason."""
    if REASON in (ast.get_docstring(node) or ""):
        return True
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    above = first - 2  # 0-based index of the line above
    while above >= 0 and source[above].strip().startswith("#"):
        if REASON in source[above]:
            return True
        above -= 1
    body_start = node.body[0].lineno - 1
    return any(
        REASON in line and line.strip().startswith("#")
        for line in source[node.lineno - 1 : body_start]
    )


def _long_functions(path: Path, name: str = "") -> list[TooLong]:
    """The functions of ``path`` over the limit without a reason, named ``name:line def``."""
    name = name or _relative(path)
    text = path.read_text(encoding="utf-8")
    source = text.splitlines()
    found: list[TooLong] = []
    for node in ast.walk(ast.parse(text, str(path))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        length = (node.end_lineno or node.lineno) - first + 1
        if length > MAX_FUNCTION_LINES and not _has_reason(node, source):
            found.append(TooLong(f"{name}:{node.lineno} {node.name}", length))
    return found


def _module_lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_is_longer_than_the_limit() -> None:
    long = [
        TooLong(_relative(p), n)
        for p in _modules()
        if (n := _module_lines(p)) > MAX_MODULE_LINES
        and _relative(p) not in ALLOWED_WHILE_OTHERS_WORK
    ]
    assert not long, (
        f"modules over {MAX_MODULE_LINES} lines (split them by job, as remote/connection.py "
        f"and remote/transfer.py are): {long}"
    )


def test_no_function_is_longer_than_the_limit_without_a_reason() -> None:
    long = [
        f
        for p in _modules()
        if _relative(p) not in ALLOWED_WHILE_OTHERS_WORK
        for f in _long_functions(p)
    ]
    assert not long, (
        f"functions over {MAX_FUNCTION_LINES} lines: name their phases as calls, or write "
        f"'{REASON} ...' at their top: {long}"
    )


def test_the_allow_list_holds_only_what_still_needs_it() -> None:
    """An allow-listed file that exists and already fits the limits must leave the list."""
    stale = [
        name
        for name in sorted(ALLOWED_WHILE_OTHERS_WORK)
        if (path := PKG / name).exists()
        and _module_lines(path) <= MAX_MODULE_LINES
        and not _long_functions(path)
    ]
    assert not stale, f"remove from ALLOWED_WHILE_OTHERS_WORK (they fit now): {stale}"


def test_the_guard_sees_a_long_function_and_its_reason(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    cases = {
        "plain.py": (f"def f():\n{body}\n", 1),
        "docstring.py": (f'def f():\n    """Long because: a table."""\n{body}\n', 0),
        "above.py": (f"# Long because: one linear script.\n@staticmethod\ndef f():\n{body}\n", 0),
        "inside.py": (f"def f(\n    a: int,\n):\n    # Long because: a template.\n{body}\n", 0),
        "short.py": ("def f():\n    return 1\n", 0),
    }
    for name, (text, expected) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        found = _long_functions(path, name)
        assert len(found) == expected, (name, found)
