"""How a :class:`~tao_slurm_tui.remote.connection.Connection` gets in when a person is needed.

- **Who is asked**: keyboard-interactive challenges (a one-time code) go to :attr:`LoginPolicy.
  prompter`, the front's (the dashboard's modal, the CLI's terminal); while one waits the
  connection's state is ``AWAITING_CODE``, and every command waits with it.
- **Asked once**: a login asks at most once per connect or reconnect (a wrong code is asked
  again inside that login, saying so). When the user declines or the code is refused, the
  policy *holds* that error: every later connect raises it at once, with no new login and no new
  question, until :meth:`LoginPolicy.release` (the user's manual refresh). A poll timer or a
  backoff loop can never become a storm of prompts.
- **Sharing first**: with :attr:`LoginPolicy.attach` set, a connect first looks for a dashboard
  of the same login that lends its connection (:mod:`~tao_slurm_tui.remote.share`): no new
  login, no new code.
"""

from __future__ import annotations

from collections.abc import Callable

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.remote.errors import CodeNotGiven
from tao_slurm_tui.remote.prompts import Answering, LoginPrompt, Prompter
from tao_slurm_tui.remote.share import ShareLink, _Lost, attach
from tao_slurm_tui.remote.state import ConnectionState

StateReport = Callable[[ConnectionState, str], None]


class LoginPolicy:
    """The asking and sharing side of one connection's logins."""

    def __init__(self, report: StateReport, current: Callable[[], tuple[ConnectionState, str]]):
        self._report = report
        self._current = current
        self.prompter: Prompter | None = None
        """Asks the user a keyboard-interactive question; None: nobody can be asked, and such a
        login fails with :class:`~tao_slurm_tui.remote.errors.CodeRequired`."""
        self.attach = False
        """Look for a dashboard sharing a connection of the same login first (CLI verbs and
        dashboards do; the set-up's one-host connections do not)."""
        self.serving = False
        """This connection is the one shared: it never attaches to a share itself."""
        self.shared_from = ""
        """Non-empty while the commands run over a dashboard's connection: whose."""
        self.note = ""
        """How the last login went when more than a key was needed (the doctor shows it)."""
        self.held: CodeNotGiven | None = None
        """The last login stopped at the one-time code: raised again until :meth:`release`."""

    def check(self) -> None:
        """Raise the held error, if any (no login, no question)."""
        if self.held is not None:
            raise self.held

    def failed(self, exc: Exception) -> None:
        """A connect failed for good; a stop at the one-time code is held."""
        if isinstance(exc, CodeNotGiven):
            self.held = exc

    def release(self) -> None:
        """The user asks to connect again: the next login may ask again."""
        self.held = None

    def answering(self, host: str, user: str, password: str | None) -> Answering:
        """The keyboard-interactive part of one login to ``host``."""
        prompter = self._ask if self.prompter is not None else None
        return Answering(host, user, prompter, password=password)

    def logged_in(self, answering: Answering) -> None:
        """A login of our own worked."""
        self.shared_from = ""
        self.note = answering.note()

    async def _ask(self, prompt: LoginPrompt) -> list[str] | None:
        assert self.prompter is not None
        before = self._current()
        self._report(
            ConnectionState.AWAITING_CODE,
            f"waiting for your one-time code for {prompt.user or 'you'}@{prompt.host}; "
            "everything that needs the cluster waits until you enter it",
        )
        try:
            return await self.prompter(prompt)
        finally:
            if self._current()[0] is ConnectionState.AWAITING_CODE:
                self._report(*before)

    async def shared(self, profile: Profile, client: _Lost) -> ShareLink | None:
        """A dashboard's shared connection of ``profile``'s login, when allowed and there."""
        if not self.attach or self.serving:
            return None
        link = await attach(profile, client)
        if link is not None:
            self.shared_from = link.owner
            self.note = f"over {link.owner}: no new login, no new code"
        return link

    def connected(self, verb: str, host: str | None, lost: str | None = None) -> str:
        """``connected to HOST`` (``... over the dashboard's connection (pid N)``); after a
        failover from the login host ``lost`` to another, it says so instead."""
        if lost and host and host != lost:
            return f"{lost} stopped answering; switched to the login host {host}"
        over = f" over {self.shared_from}" if self.shared_from else ""
        return f"{verb} to {host}{over}"
