"""The CLI's output streams: nothing the cluster said reaches the terminal raw.

Every verb writes through :class:`ShownStream` (``CliContext.stdout``/``stderr`` are wrapped
when the context is made), so every output that is not ``--json`` -- log lines, status
messages, history names, node reasons, doctor details, error sentences quoting a remote
answer -- passes :func:`~tao_slurm_tui.core.shown.shown_text`: newline and tab stay, every
other control character is spelled out (``\\x1b``). ``--json`` output is ASCII-escaped by
``json.dumps`` and passes unchanged. Verbs still clean one-line fields themselves
(:func:`~tao_slurm_tui.core.shown.shown`) before laying out columns; the stream is the one
place that holds for everything, including a verb added later.
"""

from __future__ import annotations

import io
from typing import TextIO, cast

from tao_slurm_tui.core.shown import shown_text


class ShownStream(io.TextIOBase):
    """A text stream that writes only what :func:`shown_text` lets through to ``raw``."""

    def __init__(self, raw: TextIO) -> None:
        """Wrap ``raw`` (``sys.stdout``, a test's ``StringIO``)."""
        super().__init__()
        self.raw = raw
        """The stream written to."""

    def write(self, text: str) -> int:
        """Write ``text`` with its control characters spelled out; returns ``len(text)``."""
        self.raw.write(shown_text(text))
        return len(text)

    def flush(self) -> None:
        """Flush the wrapped stream, unless its owner closed it (this wrapper owns nothing: when
        the garbage collector closes it, ``io`` flushes it once more, after a test's captured
        stream or a finished ``sys.stdout`` may be gone)."""
        if not getattr(self.raw, "closed", False):
            self.raw.flush()

    def fileno(self) -> int:
        """The wrapped stream's file descriptor."""
        return self.raw.fileno()

    def isatty(self) -> bool:
        """Whether the wrapped stream is a terminal."""
        return self.raw.isatty()

    def writable(self) -> bool:
        """Always."""
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        """The wrapped stream's encoding."""
        return getattr(self.raw, "encoding", None) or "utf-8"


def shown_stream(raw: TextIO) -> TextIO:
    """``raw`` wrapped in a :class:`ShownStream` (once)."""
    if isinstance(raw, ShownStream):
        return cast(TextIO, raw)
    return cast(TextIO, ShownStream(raw))
