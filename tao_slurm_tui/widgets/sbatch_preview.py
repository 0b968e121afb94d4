"""Live preview of the sbatch script a spec renders to."""

from __future__ import annotations

from textual.widgets import TextArea


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

    def show_problem(self, problem: str) -> None:
        """Keep the last good script, flag it stale and say why."""
        self.add_class("-invalid")
        self.border_subtitle = problem
