"""A masked input for secrets (the NGC key, a one-time password).

It never shows any character of the value, not even partly (every character is drawn as the
same mask glyph), offers no way to copy or cut it out, has no suggester or history, and clears
itself when told (success, failure) and when it is unmounted. :meth:`SecretInput.take` hands the
value over and clears the widget in one step, so callers do not keep a copy around.
"""

from __future__ import annotations

from textual.widgets import Input

MASK = "•"
"""The glyph drawn for every character of the secret (Textual's password mask)."""


class SecretInput(Input):
    """An :class:`~textual.widgets.Input` that keeps its value to itself."""

    ALLOW_SELECT = False

    DEFAULT_CSS = """
    SecretInput {
        width: 1fr;
    }
    """

    def __init__(
        self,
        *,
        placeholder: str = "",
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """Create an empty secret field.

        Args:
            placeholder: Text shown while the field is empty (never the secret).
            name: Widget name.
            id: Widget id.
            classes: CSS classes.
        """
        super().__init__(
            placeholder=placeholder,
            password=True,
            name=name,
            id=id,
            classes=classes,
            select_on_focus=False,
        )

    def validate_password(self, password: bool) -> bool:
        """Always masked: Textual's password mode draws one mask glyph (:data:`MASK`) per
        character and nothing else (no highlighter; this field has no suggester)."""
        return True

    @property
    def selected_text(self) -> str:
        """Never reveal a selection of the secret."""
        return ""

    def action_copy(self) -> None:
        """Copying a secret out is not allowed."""
        self.notify("Copying a secret is disabled.", severity="warning")

    def action_cut(self) -> None:
        """Cutting a secret out is not allowed."""
        self.notify("Cutting a secret is disabled.", severity="warning")

    def take(self) -> str:
        """Return the value and clear the field (the caller passes it on and drops it)."""
        value = self.value
        self.clear()
        return value

    def wipe(self) -> None:
        """Forget the value (on success, on failure, on close)."""
        self.clear()

    def on_unmount(self) -> None:
        """Clear the value when the field leaves the screen."""
        self.value = ""
