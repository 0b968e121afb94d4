"""Key binding tables generated from the screens' ``BINDINGS`` (so help never lies).

:func:`binding_tables` feeds the help screen; :func:`bindings_markdown` renders the same tables
for the README.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from textual.binding import Binding, BindingType
from textual.keys import format_key

from tao_slurm_tui.screens.context import APP_BINDINGS


@dataclass(frozen=True)
class KeyRow:
    """One row of a binding table."""

    keys: str
    description: str
    binding_id: str


def _bindings(bindings: Sequence[BindingType]) -> list[Binding]:
    out: list[Binding] = []
    for item in bindings:
        out.append(item if isinstance(item, Binding) else Binding(*item))
    return out


def display_keys(keys: str) -> str:
    """Human form of a key list: ``question_mark`` → ``?``, ``ctrl+p`` → ``ctrl+p``."""
    shown = []
    for key in keys.split(","):
        *mods, base = key.strip().split("+")
        shown.append("+".join([*mods, format_key(base)]))
    return " / ".join(shown)


def binding_tables(keymap: Mapping[str, str] | None = None) -> list[tuple[str, list[KeyRow]]]:
    """Every screen's bindings as (title, rows), with the user's keymap applied."""
    # Imported here: the screens import this module for the help screen.
    from tao_slurm_tui.screens.capacity import CapacityScreen
    from tao_slurm_tui.screens.compare import CompareScreen
    from tao_slurm_tui.screens.composer import ComposerScreen
    from tao_slurm_tui.screens.history import HistoryScreen
    from tao_slurm_tui.screens.job_output import JobOutputScreen
    from tao_slurm_tui.screens.job_view import JobViewScreen
    from tao_slurm_tui.screens.logs import LogsScreen
    from tao_slurm_tui.screens.onboarding import OnboardingScreen
    from tao_slurm_tui.screens.overview import OverviewScreen
    from tao_slurm_tui.screens.queue import QueueScreen
    from tao_slurm_tui.widgets.job_table import JobTable
    from tao_slurm_tui.widgets.log_view import LogView

    keymap = keymap or {}
    groups: list[tuple[str, Sequence[BindingType]]] = [
        ("Everywhere", APP_BINDINGS),
        ("Queue", [*QueueScreen.BINDINGS, *JobTable.BINDINGS]),
        ("Composer", ComposerScreen.BINDINGS),
        ("Logs", [*LogsScreen.BINDINGS, *LogView.BINDINGS]),
        ("Training runs and curves", JobViewScreen.BINDINGS),
        ("Compare runs", CompareScreen.BINDINGS),
        ("Set-up", OnboardingScreen.BINDINGS),
        ("GPUs free", CapacityScreen.BINDINGS),
        ("All clusters", OverviewScreen.BINDINGS),
        ("History", HistoryScreen.BINDINGS),
        ("Job output (history)", JobOutputScreen.BINDINGS),
    ]
    tables: list[tuple[str, list[KeyRow]]] = []
    for title, bindings in groups:
        rows = []
        for binding in _bindings(bindings):
            keys = keymap.get(binding.id or "", binding.key)
            description = binding.description or binding.tooltip or binding.action
            rows.append(KeyRow(display_keys(keys), description, binding.id or ""))
        tables.append((title, rows))
    return tables


def bindings_markdown(keymap: Mapping[str, str] | None = None) -> str:
    """The binding tables as Markdown (for the README)."""
    out: list[str] = []
    for title, rows in binding_tables(keymap):
        out += [f"### {title}", "", "| key | action | id (remap in `[keys]`) |", "|---|---|---|"]
        out += [f"| `{r.keys}` | {r.description} | `{r.binding_id}` |" for r in rows]
        out.append("")
    return "\n".join(out)
