"""The Textual application: screens over one back end object (which never imports Textual).

:func:`make_app` builds the app for the CLI, the tests and the screenshot script alike; the back
end is passed in (harlequin's layering), so the UI opens no connection itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import App
from textual.notifications import SeverityLevel
from textual.reactive import var
from textual.theme import Theme
from textual.widgets import Input, TextArea
from textual.worker import Worker, WorkerState

from tao_slurm_tui.config import Config, Settings
from tao_slurm_tui.core.shown import shown, shown_text
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.resources import styles_dir
from tao_slurm_tui.screens.context import APP_BINDINGS, UiContext
from tao_slurm_tui.screens.error import ErrorModal
from tao_slurm_tui.screens.job_shell import start_job_shell
from tao_slurm_tui.screens.palette import TaoCommands
from tao_slurm_tui.services.backend import Backend
from tao_slurm_tui.services.login_prompts import LoginPrompt
from tao_slurm_tui.services.notify import Notifier
from tao_slurm_tui.services.session import BackendFactory, backend_factory
from tao_slurm_tui.widgets import terminal_guard
from tao_slurm_tui.widgets.app_header import ConnectionStateChanged, SessionStatus
from tao_slurm_tui.widgets.theme import TAO_DARK, THEMES

if TYPE_CHECKING:
    from tao_slurm_tui.screens.composer import ComposerScreen
    from tao_slurm_tui.screens.onboarding import OnboardingScreen
    from tao_slurm_tui.screens.queue import QueueScreen

log = logging.getLogger(__name__)

STYLESHEETS = (
    "app",
    "queue",
    "composer",
    "logs",
    "onboarding",
    "modals",
    "help",
    "capacity",
    "history",
    "runs",
)
"""One .tcss per screen (every rule prefixed by the screen's class)."""


class TaoSlurmApp(App[None]):
    """tao-slurm-tui: queue, composer, logs and set-up over one back end."""

    TITLE = "tao-slurm-tui"
    CSS_PATH = [str(styles_dir() / f"{name}.tcss") for name in STYLESHEETS]
    COMMANDS = App.COMMANDS | {TaoCommands}
    BINDINGS = APP_BINDINGS
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    """Below 110 columns (80x24, 100x30) screens stack labels over fields and use compact
    buttons: see the ``-narrow`` rules in styles/."""

    session: var[SessionStatus] = var(SessionStatus("", "disconnected", None), init=False)
    """How the active back end stands (profile, connection, last poll): what every screen's
    header shows. Kept current by messages, never by asking the back end on a timer."""

    def __init__(
        self,
        backend: Backend,
        *,
        settings: Settings | None = None,
        clock: Callable[[], float] | None = None,
        backend_factory: BackendFactory | None = None,
        initial_spec: dict[str, Any] | None = None,
        cursor_blink: bool = True,
        new_profile: bool = False,
        save_settings: Callable[[Settings], None] | None = None,
    ) -> None:
        """Create the app (prefer :func:`make_app`).

        Args:
            backend: The only door to the cluster, store and config.
            settings: App settings (poll interval, keymap, theme).
            clock: 'Now' for displayed ages (frozen in tests).
            backend_factory: Builds another profile's back end (profile switching).
            initial_spec: Open the composer pre-filled with this spec over the queue.
            cursor_blink: Blink the text cursor of inputs; False draws it steadily (snapshots
                and screenshots must not depend on when they are taken).
            new_profile: The profile is not saved yet (first start): open the set-up screen.
            save_settings: Writes the settings (the chosen theme) to the config file.
        """
        super().__init__()
        terminal_guard.install()  # no control character in a rendered line reaches the terminal
        self.cursor_blink = cursor_blink
        settings = settings or Settings()
        self.ctx = UiContext(backend, settings, clock) if clock else UiContext(backend, settings)
        self.ctx.notifier = Notifier(settings.notify, self.write_escape)
        self.backend_factory = backend_factory
        self.initial_spec = initial_spec
        self.new_profile = new_profile
        """The profile is not in the config file yet: open on the set-up screen."""
        self.save_settings = save_settings
        """Writes the settings to the config file (the chosen theme); None: not saved."""
        self.ctx.save_settings = save_settings
        self.home: QueueScreen | None = None
        """The queue (the home screen at the bottom of the stack)."""
        self._unlisten: Callable[[], None] | None = None
        self.set_reactive(TaoSlurmApp.session, SessionStatus.of(backend))
        for theme in THEMES:
            self.register_theme(theme)
        self.theme = settings.theme if settings.theme in self.available_themes else TAO_DARK.name

    @property
    def backend(self) -> Backend:
        """The active back end."""
        return self.ctx.backend

    def on_mount(self) -> None:
        """Apply the keymap and open the queue (the home screen), the composer over it when a
        spec was given, and the set-up on top when the profile is incomplete.

        A complete profile opens on the queue without a doctor run (no extra round trip); if its
        first poll fails, the queue's toast points to the set-up (``d``).
        """
        # The composer and the set-up are imported only when they open (the queue is the first
        # frame; issue 23).
        from tao_slurm_tui.screens.queue import QueueScreen

        if self.ctx.settings.keys:
            self.set_keymap(self.ctx.settings.keys)
        self._adopt(self.backend)
        self.home = QueueScreen(self.ctx)
        self.push_screen(self.home)
        if self.initial_spec is not None:
            from tao_slurm_tui.screens.composer import ComposerScreen

            self.push_screen(ComposerScreen(self.ctx, self.initial_spec))
        if self.new_profile or self.backend.profile.missing_required():
            from tao_slurm_tui.screens.onboarding import OnboardingScreen

            self.push_screen(OnboardingScreen(self.ctx))
        self.theme_changed_signal.subscribe(self, self._theme_changed)

    # ------------------------------------------------------------------ session
    def _adopt(self, backend: Backend) -> None:
        """Make ``backend`` the app's: hear its connection, answer its one-time code questions
        here, and lend its connection to the commands started beside the dashboard."""
        self._listen(backend)
        backend.use_prompter(self.ask_login_question)
        self.run_worker(backend.share_connection(), group="share", exit_on_error=False)

    async def ask_login_question(self, prompt: LoginPrompt) -> list[str] | None:
        """The back end's prompter: the masked modal over whatever is on screen; the answers,
        or None when the user declined. Withdrawn when the login ends meanwhile (a drop, a
        quit): the waiting coroutine is then cancelled."""
        from tao_slurm_tui.screens.code_prompt import CodePromptModal

        answer: asyncio.Future[list[str] | None] = asyncio.get_running_loop().create_future()

        def answered(result: list[str] | None) -> None:
            if not answer.done():
                answer.set_result(result)

        modal = CodePromptModal(prompt)
        self.push_screen(modal, answered)
        try:
            return await answer
        except asyncio.CancelledError:
            if modal in self.screen_stack[-1:]:
                modal.dismiss(None)
            raise

    def _listen(self, backend: Backend) -> None:
        """Hear ``backend``'s connection changes (and no longer the previous back end's)."""
        if self._unlisten is not None:
            self._unlisten()
        self._unlisten = backend.add_listener(self._connection_changed)

    def _connection_changed(self, state: str) -> None:
        # Called inside the connection's own code (on the event loop's thread): only post the
        # fact; the headers follow when the message is handled.
        self.post_message(ConnectionStateChanged(state))

    async def on_unmount(self) -> None:
        """Stop listening to the back end and close it. Every way out comes here (ctrl+q,
        ``q`` then yes, an error, a test's end), after the screens and their workers are gone:
        no poll logs in again behind the close (one did when ``q`` quit with a poll due)."""
        if self._unlisten is not None:
            self._unlisten()
            self._unlisten = None
        try:
            await self.backend.close()
        except (TaoError, OSError) as exc:  # on the way out: said in the log, not raised
            log.warning("closing the connection on exit: %s", exc)

    def on_connection_state_changed(self, message: ConnectionStateChanged) -> None:
        """The connection changed state: every header shows it."""
        self.session = replace(self.session, connection=message.state)

    def on_queue_screen_refreshed(self, message: QueueScreen.Refreshed) -> None:
        """The queue reached the cluster: every header shows when (the home queue's only: a
        queue being replaced by a profile switch may still finish a poll)."""
        if message.control is self.home:
            self.session = replace(self.session, last_poll=message.polled_at)

    def on_onboarding_screen_profile_saved(self, message: OnboardingScreen.ProfileSaved) -> None:
        """The set-up saved the profile, perhaps under a new name: every header shows it."""
        self.session = replace(self.session, profile=message.profile_name)

    def _theme_changed(self, theme: Theme) -> None:
        """Remember the theme picked in the palette for the next start."""
        error = self.ctx.remember(theme=theme.name)
        if error:
            self.notify(f"The theme is used but not saved: {error}", severity="warning")

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Without blinking, a focused text field draws its cursor steadily.

        Only a focused field draws a cursor, so turning the blink off as focus arrives covers
        every Input and TextArea of every screen, including fields mounted later.
        """
        widget = event.widget
        if not self.cursor_blink and isinstance(widget, (Input, TextArea)):
            widget.cursor_blink = False

    def write_escape(self, sequence: str) -> None:
        """Write an escape sequence (a desktop notification) to the terminal between frames:
        through the driver, whose writer is the one thread that writes there, as Textual's own
        ``bell`` and ``copy_to_clipboard`` do."""
        if not self.is_headless and self._driver is not None:
            self._driver.write(sequence)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """A toast. Every toast of the app (``Widget.notify`` ends here) is plain text: messages
        quote job names, ``status.json`` and the cluster's errors, which are data, never markup;
        control characters are spelled out. ``markup`` is accepted and ignored."""
        del markup
        super().notify(
            shown_text(message),
            title=shown(title),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    # ------------------------------------------------------------------ errors
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place a failed worker is reported: a toast, or a modal for the unexpected."""
        if event.state is not WorkerState.ERROR:
            return
        self.report_error(event.worker.error)

    def report_error(self, error: BaseException | None) -> None:
        """Show ``error`` without a traceback: TaoError as a toast, anything else as a modal."""
        if isinstance(error, TaoError):
            self.notify(str(error), severity="error")
            return
        log.error("unexpected error", exc_info=error)
        name = type(error).__name__ if error else "Error"
        self.push_screen(
            ErrorModal(
                "Something went wrong",
                f"{name}: {error}. The app keeps running; if this repeats, run "
                "'tao-slurm-tui doctor' and report the problem.",
            )
        )

    # ------------------------------------------------------------------ actions
    def action_help(self) -> None:
        """Show every key binding."""
        from tao_slurm_tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.ctx))

    def action_new_job(self) -> None:
        """Open the composer with the profile's defaults."""
        from tao_slurm_tui.screens.composer import ComposerScreen

        if not isinstance(self.screen, ComposerScreen):
            self.push_screen(ComposerScreen(self.ctx))

    def on_composer_screen_job_submitted(self, message: ComposerScreen.JobSubmitted) -> None:
        """Put the queue's cursor on the job just submitted (it waits for the job's row)."""
        if self.home is not None:
            self.home.select_job(message.job_id)

    def action_doctor(self) -> None:
        """Open the set-up screen (profile + doctor)."""
        from tao_slurm_tui.screens.onboarding import OnboardingScreen

        if not isinstance(self.screen, OnboardingScreen):
            self.push_screen(OnboardingScreen(self.ctx))

    def action_capacity(self) -> None:
        """Where the GPUs are free on this cluster."""
        from tao_slurm_tui.screens.capacity import CapacityScreen

        if not isinstance(self.screen, CapacityScreen):
            self.push_screen(CapacityScreen(self.ctx))

    def action_overview(self) -> None:
        """Every configured cluster at a glance (one connection each, opened lazily)."""
        from tao_slurm_tui.screens.overview import OverviewScreen
        from tao_slurm_tui.services.overview import Overview

        if isinstance(self.screen, OverviewScreen):
            return
        factory = self.backend_factory

        def opened(name: str) -> Backend:
            # A cluster that asks for a one-time code asks here too, in the same modal.
            assert factory is not None
            backend = factory(name)
            backend.use_prompter(self.ask_login_question)
            return backend

        overview = Overview(self.backend, opened if factory is not None else None)

        def chosen(name: str | None) -> None:
            # Switching into a cluster reuses the connection the overview opened for it.
            if name:
                self.switch_profile(name, overview.take(name))
            self.run_worker(overview.close(), group="close", exit_on_error=False)

        self.push_screen(OverviewScreen(self.ctx, overview), chosen)

    def action_history(self) -> None:
        """Open the SLURM history (every job of the user, with usage)."""
        from tao_slurm_tui.screens.history import HistoryScreen

        if not isinstance(self.screen, HistoryScreen):
            self.push_screen(HistoryScreen(self.ctx))

    def action_queue(self) -> None:
        """Back to the queue (the home screen): every screen above it is dismissed."""
        if self.home is not None:
            self.home.pop_until_active()

    def action_logs(self) -> None:
        """Logs of the job selected in the queue."""
        home = self.home
        if home is not None:
            home.pop_until_active()
            # After the screens above it are gone (pop_until_active dismisses them later).
            self.call_later(home.action_logs)

    def action_shell(self) -> None:
        """A shell inside the job selected in the queue."""
        home = self.home
        if home is not None:
            home.pop_until_active()
            self.call_later(lambda: start_job_shell(home, self.ctx, home.table.cursor_job_id))

    def switch_profile(self, name: str, backend: Backend | None = None) -> None:
        """Use another profile: its back end (``backend`` if one is already open, else a new
        one), the queue rebuilt on it."""
        from tao_slurm_tui.screens.queue import QueueScreen

        if backend is None:
            if self.backend_factory is None:
                self.notify(
                    f"Restart with --profile {name} to use that profile.", severity="warning"
                )
                return
            try:
                backend = self.backend_factory(name)
            except TaoError as error:
                self.notify(str(error), severity="error")
                return
        old, self.ctx.backend = self.ctx.backend, backend
        self._adopt(backend)
        self.session = SessionStatus.of(backend)
        self.run_worker(old.close(), group="close", exit_on_error=False)
        old_home, self.home = self.home, QueueScreen(self.ctx)
        if old_home is None:
            self.push_screen(self.home)
        else:
            # Later, not now: this may run in a screen's dismiss callback, while it is popped.
            self.call_later(self._replace_home, old_home, self.home)
        self.notify(f"Profile '{name}' is active.")

    def _replace_home(self, old: QueueScreen, new: QueueScreen) -> None:
        """Dismiss every screen above the old queue, then put the new queue in its place."""
        old.pop_until_active()
        self.call_later(self.switch_screen, new)


def make_app(
    backend: Backend,
    *,
    settings: Settings | None = None,
    clock: Callable[[], float] | None = None,
    backend_factory: BackendFactory | None = None,
    initial_spec: dict[str, Any] | None = None,
    cursor_blink: bool = True,
    new_profile: bool = False,
    save_settings: Callable[[Settings], None] | None = None,
) -> TaoSlurmApp:
    """Build the app (shared by the CLI, the tests and the screenshot script).

    Args:
        backend: The back end (on a cluster, or demo mode's fake one).
        settings: App settings; defaults when None.
        clock: 'Now'; ``time.time`` when None.
        backend_factory: Builds another profile's back end, enabling 'switch profile'.
        initial_spec: A spec dict to open in the composer at start (``--spec``).
        cursor_blink: False draws text cursors steadily (tests and screenshots).
        new_profile: The profile is not in the config file yet: open on the set-up screen.
        save_settings: Writes the settings to the config file (the chosen theme is kept).
    """
    return TaoSlurmApp(
        backend,
        settings=settings,
        clock=clock,
        backend_factory=backend_factory,
        initial_spec=initial_spec,
        cursor_blink=cursor_blink,
        new_profile=new_profile,
        save_settings=save_settings,
    )


def build_tui(
    config: Config, profile: str | None = None, *, spec: dict[str, Any] | None = None
) -> TaoSlurmApp:
    """The app as ``tao-slurm-tui`` opens it (the journey test drives this very app)."""
    # An unknown or missing profile is a new one to set up here, not an error (first start).
    factory = backend_factory(config, allow_new=True)
    return make_app(
        factory(profile),
        settings=config.settings,
        backend_factory=factory,
        initial_spec=spec,
        new_profile=not config.has_profile(profile),
        save_settings=lambda _settings: config.save(),
    )


def run_app(
    config: Config, profile: str | None = None, *, spec: dict[str, Any] | None = None
) -> int:
    """Open the TUI on profile ``profile`` (None: the default one).

    ``TAO_SLURM_TUI_DEMO=1`` runs it on a fake cluster (no cluster needed).

    Args:
        config: The loaded config file.
        profile: ``--profile NAME`` if given.
        spec: A spec dict to open in the composer at start (``--spec``).
    """
    app = build_tui(config, profile, spec=spec)
    app.run()
    # Textual prints an uncaught exception's traceback and sets 1: the shell must see it.
    return app.return_code or 0
