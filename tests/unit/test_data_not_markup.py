"""Data is not markup: the UI's code builds no markup string, so nothing from outside is parsed.

Textual reads a ``str`` as markup in many places: ``Static``/``Label`` content and ``update``, a
``DataTable`` cell, a tooltip, a border title, a ``Button`` label, a toast. A job named
``exp[/data]`` ends the app there, ``[@click=app.quit]`` becomes a button. These checks read the
source of the widgets, the screens and the app (Python's ast) and refuse the shapes that let a
string from outside reach a markup parser or a terminal unspelled; the hostile-value tests
(tests/tui/test_hostile.py) show each path with real values.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import tao_slurm_tui

PACKAGE = Path(tao_slurm_tui.__file__).parent
UI = [
    *sorted([*(PACKAGE / "widgets").glob("*.py"), *(PACKAGE / "screens").glob("*.py")]),
    PACKAGE / "app.py",
]
SAFE_BUILDERS = {"plain", "plain_line", "shown", "shown_text", "log_line"}
"""Calls that make a value safe to show (core/shown.py, widgets/plain.py)."""


def _calls(path: Path) -> Iterator[tuple[str, ast.Call]]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            yield name, node


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(PACKAGE)}:{getattr(node, 'lineno', 0)}"


def _literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _safe(node: ast.expr) -> bool:
    """A string literal, or the result of one of the safe builders."""
    if _literal(node):
        return True
    if isinstance(node, ast.IfExp):
        return _safe(node.body) and _safe(node.orelse)
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        return name in SAFE_BUILDERS
    return False


def test_no_markup_is_ever_turned_on_or_parsed() -> None:
    bad = []
    for path in UI:
        for name, call in _calls(path):
            for keyword in call.keywords:
                off = isinstance(keyword.value, ast.Constant) and keyword.value.value is False
                # (app.py's notify passes markup=False on; it is the one exception by name.)
                ours = name == "notify" and path.name == "app.py"
                if keyword.arg == "markup" and not off and not ours:
                    bad.append(f"{_where(path, call)} {name}(markup=...)")
            if name in {"from_markup", "from_ansi", "render_str", "render_markup"}:
                bad.append(f"{_where(path, call)} {name}()")
    assert not bad, f"markup from strings; build plain Text (widgets/plain.py): {bad}"


def test_every_label_and_static_has_markup_off() -> None:
    # With markup off, a later .update(str) is plain too: the content need not be checked.
    # An OptionList's or SelectionList's prompts are markup the same way.
    bad = [
        _where(path, call)
        for path in UI
        for name, call in _calls(path)
        if name in {"Label", "Static", "OptionList", "SelectionList"}
        and not any(
            k.arg == "markup" and isinstance(k.value, ast.Constant) and k.value.value is False
            for k in call.keywords
        )
    ]
    assert not bad, f"Label/Static/OptionList without markup=False: {bad}"


def test_text_and_button_labels_from_values_go_through_the_safe_builders() -> None:
    # Text("literal") is ours; Text(value) keeps ESC and newlines: plain()/plain_line() spell
    # them out. A Button's label and a Notification's message are markup strings.
    bad = []
    for path in UI:
        for name, call in _calls(path):
            first = call.args[0] if call.args else None
            if name in {"Text", "Button"} and first is not None and not _safe(first):
                bad.append(f"{_where(path, call)} {name}({ast.unparse(first)[:40]})")
            if name == "Notification" and (first is None or not _safe(first)):
                bad.append(f"{_where(path, call)} Notification without shown_text")
            if name == "add_row":
                bad += [
                    f"{_where(path, call)} add_row({ast.unparse(arg)[:40]})"
                    for arg in call.args
                    if isinstance(arg, ast.JoinedStr)
                ]
    assert not bad, f"values shown without plain()/plain_line(): {bad}"


def test_titles_and_tooltips_are_literals_or_plain_text() -> None:
    bad = []
    for path in UI:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and target.attr in {"tooltip", "border_title", "border_subtitle"}
                        and not _safe(node.value)
                    ):
                        bad.append(f"{_where(path, node)} .{target.attr} = ...")
            if isinstance(node, ast.keyword) and node.arg == "tooltip":
                value = node.value
                literal_or_none = isinstance(value, ast.Constant) and value.value is None
                if not (_safe(value) or literal_or_none or isinstance(value, ast.IfExp)):
                    bad.append(f"{path.relative_to(PACKAGE)} tooltip={ast.unparse(value)[:40]}")
    assert not bad, f"titles/tooltips are markup strings; use plain_line(): {bad}"


def test_the_app_shows_every_toast_as_plain_text() -> None:
    from tao_slurm_tui.app import TaoSlurmApp

    source = ast.unparse(ast.parse(Path(tao_slurm_tui.app.__file__).read_text(encoding="utf-8")))
    assert "def notify" in source and "markup=False" in source
    assert TaoSlurmApp.notify.__qualname__ == "TaoSlurmApp.notify"
