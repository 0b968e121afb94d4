"""Secrets in memory: the NGC key wrapped so that no ``repr``, traceback or log shows it.

Pure: checks the key's shape and keeps it in a :class:`Secret`; the services layer sends it to
the cluster on stdin only (:mod:`tao_slurm_tui.services.credentials`).
"""

from __future__ import annotations

from tao_slurm_tui.errors import BadInput

CREDENTIALS_PATH = "~/.config/enroot/.credentials"
"""The file enroot reads, on the login host (home directories are shared with compute nodes)."""


class Secret:
    """A secret string whose ``repr``/``str`` never show it (safe in tracebacks with locals)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value: str | None = value

    def reveal(self) -> str:
        """The secret itself; use it inline, never keep it in a variable.

        Raises:
            BadInput: the secret was already cleared.
        """
        if self._value is None:
            raise BadInput("The secret was already used and cleared; enter it again.")
        return self._value

    def clear(self) -> None:
        """Drop the reference to the value (best effort: Python strings cannot be wiped)."""
        self._value = None

    def __repr__(self) -> str:
        return "Secret('********')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)


def validate_ngc_key(key: str | Secret) -> Secret:
    """Check an NGC API key the user typed or piped; surrounding whitespace is dropped.

    Returns:
        The key, stripped, wrapped in a :class:`Secret`.

    Raises:
        BadInput: empty, or a space, tab, line break or control character inside (the message
            never repeats the value).
    """
    raw = key.reveal() if isinstance(key, Secret) else key
    stripped = raw.strip()
    del raw
    if not stripped:
        raise BadInput(
            "The NGC key is empty; paste the API key from ngc.nvidia.com (Setup > API Key)."
        )
    if any(ch.isspace() for ch in stripped):
        raise BadInput(
            "The NGC key contains a space, tab or line break; paste it again as one line."
        )
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in stripped):
        raise BadInput("The NGC key contains a control character; paste it again as plain text.")
    return Secret(stripped)
