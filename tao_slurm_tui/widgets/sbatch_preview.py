"""Live preview of the sbatch script a spec renders to."""

from __future__ import annotations

from collections.abc import Sequence

from textual.widgets import TextArea

from tao_slurm_tui.widgets.plain import plain_line


class SbatchPreview(TextArea):
    """A read-only, syntax-highlighted view of the rendered batch script."""

    DEFAULT_CSS = """
    SbatchPreview {
        height: 1fr;
        border: round $primary 50%;
        &.-invalid { border: round $error; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        """Create an empty preview."""
        super().__init__(
            "",
            language=None,
            read_only=True,
            show_line_numbers=False,
            # Long srun/export lines scroll sideways: wrapped shell lines read as two commands.
            soft_wrap=False,
            id=id,
        )
        self.border_title = "sbatch preview"

    def show_script(self, script: str) -> None:
        """Show a rendered script."""
        self.remove_class("-invalid")
        self.border_subtitle = ""
        if script != self.text:
            self.load_text(script)

    def show_problem(self, problem: str, *, alarm: bool = True, fields: Sequence[str] = ()) -> None:
        """Say why there is no script: a script of older values would read as the current one.

        Args:
            problem: Why (e.g. "2 fields to fix").
            alarm: Draw the border red (False while the user has not typed yet).
            fields: The fields to fix, by their labels: each is named, one a line.
        """
        self.set_class(alarm, "-invalid")
        self.border_subtitle = plain_line(problem)
        named = "".join(f"\n#  - {name}" for name in fields)
        # Short lines: the preview is ~30 columns wide at 80x24 and does not wrap.
        self.load_text(
            f"# No sbatch script yet:\n# {problem}:{named}\n# It appears once\n# the form is valid."
            if fields
            else f"# No sbatch script yet:\n# {problem}.\n# It appears once\n# the form is valid."
        )
