"""A fast, bounded log view: only the visible lines are drawn (Textual's Line API).

Lines arrive in batches (:meth:`LogView.write_lines`), never one message per line; the buffer is
a bounded deque (oldest lines dropped); rendering a frame touches only the rows on screen, so
10,000 new lines a second cost an append and one refresh. Search highlights every match and
walks through them; attempt separators are drawn as rules.
"""

from __future__ import annotations

from collections import deque

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.cache import LRUCache
from textual.events import MouseScrollUp
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tao_slurm_tui.core.shown import log_line, shown

DEFAULT_MAX_LINES = 20_000
"""Lines kept per pane; older ones are dropped."""


class LogView(ScrollView, can_focus=True):
    """Bounded, searchable, follow-able lines with attempt separators."""

    class Changed(Message):
        """The lines or the search changed (a fact: a status line may say so). Pending ones
        are coalesced: a flood of batches is one message per look at the queue."""

        def __init__(self, view: LogView) -> None:
            """Create the message.

            Args:
                view: The view that changed.
            """
            super().__init__()
            self.view = view

        @property
        def control(self) -> LogView:
            """The view that changed."""
            return self.view

        def can_replace(self, message: Message) -> bool:
            """A newer one of the same view says the same and more."""
            return isinstance(message, LogView.Changed) and message.view is self.view

    COMPONENT_CLASSES = {"log-view--match", "log-view--current-match", "log-view--separator"}
    """
    | Class | Description |
    | :- | :- |
    | `log-view--match` | Every search match. |
    | `log-view--current-match` | The match the cursor is on. |
    | `log-view--separator` | Attempt separator rules. |
    """

    DEFAULT_CSS = """
    LogView {
        background: $surface;
        color: $foreground;
        overflow: auto auto;
        &:focus { background-tint: $foreground 5%; }
        & > .log-view--match { background: $warning 35%; }
        & > .log-view--current-match { background: $accent; color: $text; text-style: bold; }
        & > .log-view--separator { color: $primary; text-style: bold; }
    }
    """

    BINDINGS = [
        Binding("end", "follow", "Follow", show=False, id="logs.end"),
    ]

    follow: reactive[bool] = reactive(True)
    """Scroll to every new line as it arrives."""
    new_lines: reactive[int] = reactive(0)
    """Lines that arrived while not following (the "N new lines" hint)."""

    def __init__(
        self,
        max_lines: int = DEFAULT_MAX_LINES,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """Create an empty view.

        Args:
            max_lines: Lines kept; older ones are dropped.
            name: Widget name.
            id: Widget id.
            classes: CSS classes.
        """
        super().__init__(name=name, id=id, classes=classes)
        self.max_lines = max_lines
        self._lines: deque[tuple[str, bool]] = deque(maxlen=max_lines)
        self._dropped = 0
        """Lines dropped so far: absolute line number = dropped + index."""
        self._width = 0
        self._term = ""
        self._matches: list[int] = []
        """Absolute numbers of lines matching the search term, ascending."""
        self._current = -1
        self._cache: LRUCache[tuple[int, int], Strip] = LRUCache(512)
        self._jumping = False
        """True while a search moves the view (reaching the end then must not follow)."""
        self._frame_style: Style | None = None
        """``rich_style`` for the frame being drawn (a CSS walk each time: once per frame)."""

    # ------------------------------------------------------------------ content
    @property
    def line_count(self) -> int:
        """Lines held now."""
        return len(self._lines)

    @property
    def dropped(self) -> int:
        """Lines dropped from the start to bound memory."""
        return self._dropped

    @property
    def lines(self) -> list[str]:
        """The lines held (a copy; for tests and export)."""
        return [text for text, _ in self._lines]

    def write_lines(self, lines: list[str], separator: str | None = None) -> None:
        """Append a batch of lines, after a separator rule if given.

        Args:
            lines: Raw lines without newlines.
            separator: Text of an attempt separator to draw before them.
        """
        # A job's output is data: escape sequences dropped, control characters spelled out.
        batch: list[tuple[str, bool]] = [(log_line(line), False) for line in lines]
        if separator is not None:
            batch.insert(0, (shown(separator), True))
        if not batch:
            return
        overflow = max(0, len(self._lines) + len(batch) - self.max_lines)
        start = self._dropped + len(self._lines)
        self._lines.extend(batch)
        self._dropped += overflow
        self._width = max(self._width, max(cell_len(text) for text, _ in batch[-1000:]))
        if self._term:
            needle = self._term.lower()
            for offset, (text, _) in enumerate(batch):
                if needle in text.lower():
                    self._matches.append(start + offset)
            if overflow:
                self._forget_dropped_matches()
        self.virtual_size = Size(self._width, len(self._lines))
        if self.follow:
            # After the refresh: the new virtual size must be laid out before max_scroll_y is right.
            self.scroll_end(animate=False, immediate=False, x_axis=False)
        else:
            self.new_lines += len(batch)
            if overflow:
                # Keep the same text under the reader's eyes while old lines are dropped.
                self.scroll_to(y=max(0, self.scroll_y - overflow), animate=False, immediate=True)
        self.refresh()
        self.post_message(self.Changed(self))

    def clear(self) -> None:
        """Drop every line and the search."""
        self._lines.clear()
        self._dropped = 0
        self._width = 0
        self._matches.clear()
        self._current = -1
        self._cache.clear()
        self.virtual_size = Size(0, 0)
        self.refresh()
        self.post_message(self.Changed(self))

    # ------------------------------------------------------------------ follow
    # Following is Textual's anchor, held or released: every layout pass scrolls an anchored
    # view to its end, also one where a scrollbar appears (no Resize comes) or a batch, a hint
    # or a tab lands after a deferred scroll_end. `scroll_end` takes a released anchor back;
    # Textual's own scroll keys release it, as `_unfollow` stops following.
    def on_mount(self) -> None:
        """Anchored to the end from the start (released if not following)."""
        self.anchor()
        if not self.follow:
            self.release_anchor()

    def watch_follow(self, follow: bool) -> None:
        """Jump to the end when following starts (taking the anchor back); release it when
        following stops."""
        if follow:
            self.new_lines = 0
            self.scroll_end(animate=False, immediate=False, x_axis=False)
        elif self.is_mounted:
            self.release_anchor()

    def on_resize(self) -> None:
        """Stay at the end while following (the anchor follows only the next layout)."""
        if self.follow:
            self.scroll_end(animate=False, immediate=False, x_axis=False)

    def action_follow(self) -> None:
        """Follow new lines again."""
        self.follow = True

    def action_toggle_follow(self) -> None:
        """Toggle following."""
        self.follow = not self.follow

    def _unfollow(self) -> None:
        if self.follow and self.max_scroll_y > 0:
            self.follow = False

    def action_scroll_up(self) -> None:
        """Scroll up one line (stops following)."""
        self._unfollow()
        super().action_scroll_up()

    def action_page_up(self) -> None:
        """Scroll up one page (stops following)."""
        self._unfollow()
        super().action_page_up()

    def action_scroll_home(self) -> None:
        """Go to the first line (stops following)."""
        self._unfollow()
        super().action_scroll_home()

    def on_mouse_scroll_up(self, event: MouseScrollUp) -> None:
        """The wheel scrolls back: stop following (Textual's own handler scrolls)."""
        self._unfollow()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """Scrolled back down to the last line by hand (keys, wheel, scrollbar): follow again."""
        super().watch_scroll_y(old_value, new_value)
        if (
            not self.follow
            and not self._jumping
            and new_value > old_value
            and new_value >= self.max_scroll_y
            and self.max_scroll_y > 0
        ):
            self.follow = True

    # ------------------------------------------------------------------ search
    @property
    def search_term(self) -> str:
        """The active search term ('' for none)."""
        return self._term

    @property
    def match_count(self) -> int:
        """Matches of the search term among the lines held."""
        self._forget_dropped_matches()
        return len(self._matches)

    @property
    def current_match(self) -> int | None:
        """Index (0-based) of the current match among :attr:`match_count`, if any."""
        return self._current if 0 <= self._current < len(self._matches) else None

    def search(self, term: str) -> int:
        """Highlight every line containing ``term`` (case-insensitive), go to the first one.

        Returns:
            The number of matches.
        """
        self._term = term
        self._cache.clear()
        self._matches = []
        self._current = -1
        if term:
            needle = term.lower()
            self._matches = [
                self._dropped + i
                for i, (text, _) in enumerate(self._lines)
                if needle in text.lower()
            ]
            if self._matches:
                self._go_to(0)
        self.refresh()
        self.post_message(self.Changed(self))
        return len(self._matches)

    def next_match(self, step: int = 1) -> None:
        """Go to the next (``step=1``) or previous (``step=-1``) match, wrapping around."""
        self._forget_dropped_matches()
        if not self._matches:
            return
        current = self._current if self._current >= 0 else -1
        self._go_to((current + step) % len(self._matches))
        self.post_message(self.Changed(self))

    def _go_to(self, index: int) -> None:
        self._current = index
        self._cache.clear()
        self.follow = False
        line = self._matches[index] - self._dropped
        # A match among the last lines scrolls to the end: that is a search, not a wish to follow.
        self._jumping = True
        try:
            self.scroll_to(
                y=max(0, line - self.scrollable_content_region.height // 2),
                animate=False,
                immediate=True,
            )
        finally:
            self._jumping = False
        self.release_anchor()  # a search reads where it jumped, even at the end: no anchor
        self.refresh()

    def show_line(self, index: int) -> None:
        """Stop following and put line ``index`` (of the lines held) a third of the way down
        the view, with what led to it above (a failed job's log opens at its first error)."""
        self.follow = False
        self.release_anchor()
        context = max(1, self.scrollable_content_region.height // 3)
        self._jumping = True
        try:
            self.scroll_to(y=max(0, index - context), animate=False, immediate=True)
        finally:
            self._jumping = False
        self.refresh()

    def _forget_dropped_matches(self) -> None:
        if self._matches and self._matches[0] < self._dropped:
            keep = [m for m in self._matches if m >= self._dropped]
            self._current = max(-1, self._current - (len(self._matches) - len(keep)))
            self._matches = keep

    # ------------------------------------------------------------------ rendering
    def notify_style_update(self) -> None:
        """Styles changed: cached strips are stale."""
        super().notify_style_update()
        self._cache.clear()

    def render_lines(self, crop: Region) -> list[Strip]:
        """Draw the visible rows, looking the widget's style up once for all of them."""
        self._frame_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._frame_style = None

    def render_line(self, y: int) -> Strip:
        """Draw one visible row (the Line API: nothing off screen is drawn)."""
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        rich_style = self._frame_style or self.rich_style
        if index >= len(self._lines):
            return Strip.blank(width, rich_style)
        absolute = self._dropped + index
        key = (absolute, width)
        strip = self._cache.get(key)
        if strip is None:
            strip = self._render_full(index, absolute, width, rich_style)
            self._cache[key] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, rich_style)

    def _render_full(self, index: int, absolute: int, width: int, rich_style: Style) -> Strip:
        text, is_separator = self._lines[index]
        if is_separator:
            style = self.get_component_rich_style("log-view--separator")
            label = f"── {text} "
            rule = label + "─" * max(0, max(width, self._width) - cell_len(label))
            return Strip([Segment(rule, rich_style + style)], cell_len(rule))
        line = Text(shown(text), no_wrap=True, end="")  # (made by log_line/shown: as it is)
        line.stylize(rich_style)
        if self._term:
            needle = self._term.lower()
            low = text.lower()
            current = self.current_match is not None and self._matches[self._current] == absolute
            style = self.get_component_rich_style(
                "log-view--current-match" if current else "log-view--match"
            )
            start = low.find(needle)
            while start >= 0:
                line.stylize(style, start, start + len(needle))
                start = low.find(needle, start + len(needle))
        return Strip(line.render(self.app.console), cell_len(text))
