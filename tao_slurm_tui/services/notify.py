"""Desktop notifications of job events, for the TUI and ``status --watch`` alike.

:class:`Notifier` takes the events a refresh found (:func:`~tao_slurm_tui.services.backend.
transitions`: started, finished, failed, canceled, retried; and its own wall-time warnings,
:meth:`Notifier.wall_time`), keeps the ones the settings ask for, and sends each the way this
terminal or desktop takes it (:mod:`tao_slurm_tui.core.notify`): an escape sequence through
``emit`` (the TUI writes it between its frames, the CLI to the controlling terminal), or
``notify-send``. Off by default under CI (``CI=true``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping

from tao_slurm_tui.config import NotifySettings
from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.core.notify import (
    ci_environment,
    escape_sequence,
    notify_send_argv,
    session,
    wall_time_left,
)
from tao_slurm_tui.services.backend import Transition

TITLES = {
    "started": "Job started",
    "finished": "Job finished",
    "failed": "Job failed",
    "canceled": "Job canceled",
    "retried": "Job retried",
    "walltime": "Wall time running out",
}
"""The notification's title per event kind."""


def _spawn(argv: list[str]) -> None:
    # Fire and forget: a desktop that is slow to answer must not hold up the queue.
    with contextlib.suppress(OSError):
        subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )


def terminal_writer() -> Callable[[str], None] | None:
    """A writer to the controlling terminal (``/dev/tty``), for the CLI: its stdout may be a
    pipe (``status --watch --json | jq``) that an escape sequence must not enter. None
    without a terminal."""
    try:
        fd = os.open("/dev/tty", os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None

    def write(sequence: str) -> None:
        with contextlib.suppress(OSError):
            os.write(fd, sequence.encode("utf-8"))

    return write


class Notifier:
    """Sends the job events the settings ask for (see the module docstring)."""

    def __init__(
        self,
        settings: NotifySettings,
        emit: Callable[[str], None] | None,
        *,
        environ: Mapping[str, str] | None = None,
        spawn: Callable[[list[str]], None] = _spawn,
    ) -> None:
        """Create the notifier.

        Args:
            settings: The config's ``[notify]`` table.
            emit: Writes an escape sequence to the user's terminal (None: no terminal).
            environ: The environment (default ``os.environ``): CI, tmux, the terminal.
            spawn: Starts ``notify-send`` (tests record it instead).
        """
        self.settings = settings
        self.emit = emit
        env = os.environ if environ is None else environ
        installed = shutil.which("notify-send") is not None
        self.session = session(env, settings.via, notify_send=installed)
        self.enabled = settings.enabled == "always" or (
            settings.enabled == "auto" and not ci_environment(env)
        )
        self._spawn = spawn
        self._warned: set[tuple[str, str]] = set()
        """(job id, SLURM id) of each attempt warned about its wall time."""
        self._sent = 0

    def wanted(self, kind: str) -> bool:
        """The settings ask for events of this kind."""
        return self.enabled and bool(getattr(self.settings, kind, False))

    def wall_time(self, jobs: Iterable[JobRecord]) -> list[Transition]:
        """Running jobs whose wall time ends within ``walltime_minutes``, once per attempt
        (a job whose whole limit is shorter than that is not warned)."""
        window = self.settings.walltime_minutes * 60
        events: list[Transition] = []
        for job in jobs:
            left = wall_time_left(job)
            key = (job.id, job.slurm_job_id)
            if left is None or key in self._warned:
                continue
            seconds, limit = left
            if limit > window and seconds <= window:
                self._warned.add(key)
                minutes = max(1, round(seconds / 60))
                events.append(
                    Transition(
                        job.id,
                        "walltime",
                        f"{job.id} has {minutes} min of wall time left; SLURM stops it then.",
                    )
                )
        return events

    def send(self, events: Iterable[Transition]) -> int:
        """Notify the events the settings ask for; how many were sent."""
        sent = 0
        for event in events:
            if not self.wanted(event.kind):
                continue
            title = TITLES.get(event.kind, "tao-slurm-tui")
            if self.session.method == "notify-send":
                self._spawn(notify_send_argv(title, event.message))
            elif self.emit is not None:
                self._sent += 1
                ident = f"tao-{self._sent}"
                self.emit(
                    escape_sequence(
                        self.session.method, title, event.message, ident, tmux=self.session.tmux
                    )
                )
            else:
                continue
            sent += 1
        return sent
