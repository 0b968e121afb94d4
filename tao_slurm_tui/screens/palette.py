"""Command palette provider: the app's own commands (new job, queue, logs, doctor, ...)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Protocol, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from tao_slurm_tui.services.backend import Backend


class PaletteActions(Protocol):
    """What the palette needs of the app (the app is above the screens: no import of it)."""

    @property
    def backend(self) -> Backend:
        """The active back end."""
        ...

    def action_new_job(self) -> None:
        """Open the composer."""

    def action_queue(self) -> None:
        """Back to the queue."""

    def action_history(self) -> None:
        """Open the SLURM history."""

    def action_logs(self) -> None:
        """Logs of the selected job."""

    def action_shell(self) -> None:
        """A shell inside the selected running job."""

    def action_doctor(self) -> None:
        """Open the set-up screen."""

    def action_help(self) -> None:
        """Show every key binding."""

    def action_capacity(self) -> None:
        """Where GPUs are free on this cluster."""

    def action_overview(self) -> None:
        """Every configured cluster at a glance."""

    def switch_profile(self, name: str) -> None:
        """Use another profile."""


class TaoCommands(Provider):
    """Offers the app's verbs and one 'switch profile' command per profile."""

    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        app = cast(PaletteActions, self.app)
        commands: list[tuple[str, str, Callable[[], object]]] = [
            ("New job", "Open the composer with the profile's defaults", app.action_new_job),
            ("Queue", "Go to the job queue (home)", app.action_queue),
            ("Logs of selected job", "Follow main.out / main.err", app.action_logs),
            (
                "Shell in selected job",
                "On its node, inside its container (the app steps aside until you exit)",
                app.action_shell,
            ),
            (
                "History",
                "Every job of yours from SLURM accounting, with what it used",
                app.action_history,
            ),
            (
                "Set-up",
                "Edit the cluster profile; run the doctor's checks and fix what fails",
                app.action_doctor,
            ),
            ("GPUs free", "Capacity per partition: free GPUs, largest block", app.action_capacity),
            ("All clusters", "Your jobs and free GPUs on every profile", app.action_overview),
            ("Help", "Every key binding per screen", app.action_help),
        ]
        for name in app.backend.profile_names():
            if name != app.backend.profile_name:
                commands.append(
                    (
                        f"Switch profile: {name}",
                        f"Use the '{name}' cluster profile",
                        partial(app.switch_profile, name),
                    )
                )
        return commands

    async def discover(self) -> Hits:
        """Everything, before the user types."""
        for name, help_text, callback in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        """Fuzzy-match the commands."""
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
