"""Create or edit a cluster profile and make the doctor's checks pass, one button at a time."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from textual import getters, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Button, Collapsible, Input, Label, Select

from tao_slurm_tui.core.preflight import CheckResult, CheckStatus
from tao_slurm_tui.core.profile import NAME_RE, REGISTRY_HOST_RE, Profile
from tao_slurm_tui.core.ssh_hosts import ssh_config_hosts
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.screens.confirm import ConfirmModal
from tao_slurm_tui.screens.context import UiContext
from tao_slurm_tui.screens.credentials import CredentialsModal
from tao_slurm_tui.screens.trust_host import TrustHostModal
from tao_slurm_tui.widgets.app_footer import AppFooter
from tao_slurm_tui.widgets.app_header import AppHeader
from tao_slurm_tui.widgets.check_row import CheckRow

_USER = re.compile(r"^[a-z_][a-z0-9_.-]*\$?\Z", re.IGNORECASE)
_HOST = re.compile(r"^[A-Za-z0-9.-]+\Z|^\[?[0-9a-fA-F:]+\]?\Z")

PROFILE_FIELDS: list[tuple[str, str, str, bool]] = [
    ("name", "Profile name", "sandbox", False),
    ("user", "User", "your cluster user name", False),
    ("hostnames", "Login hosts (comma list, failover order)", "login1.example.org", False),
    ("partition", "Partition(s)", "polar,polar3", False),
    ("ssh_key_path", "SSH key (empty: ssh-agent / ~/.ssh defaults)", "~/.ssh/id_ed25519", False),
    ("account", "Account", "(none)", True),
    ("base_results_dir", "Results root", "/lustre/fsw/users/you", True),
    ("port", "SSH port", "22", True),
    (
        "registry_hosts",
        "Registries for the NGC key (comma list)",
        "nvcr.io, authn.nvidia.com",
        True,
    ),
]
"""(field, label, placeholder, advanced) of the profile form, runtime aside."""


def profile_errors(values: dict[str, str]) -> dict[str, str]:
    """Inline problems of the profile form (pure)."""
    errors: dict[str, str] = {}
    if not NAME_RE.match(values.get("name", "")):
        errors["name"] = "Use 1-64 letters, digits, '.', '_' or '-'."
    user = values.get("user", "").strip()
    if not user:
        errors["user"] = "Required: the user you log in as."
    elif not _USER.match(user):
        errors["user"] = "Not a valid user name."
    hosts = [h.strip() for h in values.get("hostnames", "").split(",") if h.strip()]
    if not hosts:
        errors["hostnames"] = "Required: at least one login host."
    elif bad := [h for h in hosts if not _HOST.match(h)]:
        errors["hostnames"] = f"Not a host name: {bad[0]}."
    if not values.get("partition", "").strip():
        errors["partition"] = "Required: the partition(s) for GPU jobs."
    port = values.get("port", "").strip() or "22"
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        errors["port"] = "A port between 1 and 65535."
    root = values.get("base_results_dir", "").strip()
    if root and not root.startswith("/"):
        errors["base_results_dir"] = "Must be an absolute path on the cluster."
    registries = [h.strip() for h in values.get("registry_hosts", "").split(",") if h.strip()]
    if bad := [h for h in registries if not REGISTRY_HOST_RE.match(h)]:
        errors["registry_hosts"] = f"Not a registry host (no scheme or port): {bad[0]}."
    return errors


def ssh_config_host_choices(path: Path | None = None) -> list[str]:
    """The Host aliases of ``~/.ssh/config`` (none when it is missing or unreadable)."""
    path = path or Path("~/.ssh/config").expanduser()
    try:
        return ssh_config_hosts(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return []


class OnboardingScreen(Screen[None]):
    """Profile form on the left, the doctor's live check list with fix buttons on the right."""

    BINDINGS = [
        Binding("ctrl+s", "save", "Save profile", id="onboarding.save"),
        Binding("ctrl+r", "doctor", "Run doctor", id="onboarding.doctor"),
        Binding("escape", "back", "Back", id="onboarding.back"),
    ]

    checks = getters.query_one("#checks", VerticalScroll)
    doctor_status = getters.query_one("#doctor-status", Label)

    class ProfileSaved(Message):
        """The profile was saved to the config file (perhaps under a new name): a fact."""

        def __init__(self, screen: OnboardingScreen, profile_name: str) -> None:
            """Create the message.

            Args:
                screen: The set-up screen that saved it.
                profile_name: The profile's name.
            """
            super().__init__()
            self.screen = screen
            self.profile_name = profile_name

        @property
        def control(self) -> OnboardingScreen:
            """The set-up screen that saved the profile."""
            return self.screen

    def __init__(self, ctx: UiContext, *, run_doctor: bool = True) -> None:
        """Create the screen.

        Args:
            ctx: Back end, settings and clock.
            run_doctor: Run the checks when the screen opens.
        """
        super().__init__()
        self.ctx = ctx
        self.run_doctor = run_doctor
        self.results: list[CheckResult] = []

    def compose(self) -> ComposeResult:
        """Form, checks, footer."""
        profile = self.ctx.backend.profile
        values = self._profile_values(profile)
        yield AppHeader(self.ctx.backend, self.ctx.clock, "set-up")
        with Horizontal(id="body"):
            with VerticalScroll(id="profile-form"):
                yield Label("Cluster profile", classes="section", markup=False)
                for key, label, placeholder, advanced in PROFILE_FIELDS:
                    if not advanced:
                        yield from self._field(key, label, placeholder, values[key])
                    if key == "hostnames" and (hosts := ssh_config_host_choices()):
                        # A Host alias works as is: the connection reads ~/.ssh/config.
                        yield Select(
                            [(host, host) for host in hosts],
                            prompt="or pick a Host from ~/.ssh/config",
                            id="p-ssh-host",
                        )
                with Collapsible(
                    title="Advanced",
                    collapsed=not any(
                        values[k]
                        for k, _, _, adv in PROFILE_FIELDS
                        if adv and k not in ("port", "registry_hosts")
                    ),
                ):
                    for key, label, placeholder, advanced in PROFILE_FIELDS:
                        if advanced:
                            yield from self._field(key, label, placeholder, values[key])
                    yield Label("Container runtime", classes="field-label", markup=False)
                    yield Select(
                        [("pyxis (srun --container-image)", "pyxis"), ("none (bare srun)", "none")],
                        value=profile.container_runtime,
                        allow_blank=False,
                        id="p-container_runtime",
                    )
                yield Button("Save profile", id="save", variant="primary")
            with Vertical(id="doctor"):
                with Horizontal(id="doctor-head"):
                    yield Label("Doctor", classes="section", markup=False)
                    yield Label("", id="doctor-status", markup=False)
                    yield Button("Run checks", id="run")
                yield VerticalScroll(id="checks")
        yield AppFooter()

    @on(Select.Changed, "#p-ssh-host")
    def _ssh_host_chosen(self, event: Select.Changed) -> None:
        if isinstance(event.value, str):
            self.query_one("#p-hostnames", Input).value = event.value

    def _field(self, key: str, label: str, placeholder: str, value: str) -> ComposeResult:
        yield Label(label, classes="field-label", markup=False)
        yield Input(value, placeholder=placeholder, id=f"p-{key}", select_on_focus=False)
        yield Label("", id=f"pe-{key}", classes="field-error", markup=False)

    def _profile_values(self, profile: Profile) -> dict[str, str]:
        return {
            "name": self.ctx.backend.profile_name or "default",
            "user": profile.user,
            "hostnames": ", ".join(profile.hostnames),
            "partition": profile.partition,
            "ssh_key_path": profile.ssh_key_path,
            "account": profile.account,
            "base_results_dir": profile.base_results_dir,
            "port": str(profile.port),
            "registry_hosts": ", ".join(profile.registry_hosts),
        }

    def on_mount(self) -> None:
        """Validate the form, put the cursor in its first field and run the checks."""
        self._validate()
        # Typing starts in the form: unfocused, letters would reach the app's bindings.
        self.query_one("#p-name", Input).focus()
        if self.run_doctor:
            self.doctor()

    # ------------------------------------------------------------------ form
    def form_values(self) -> dict[str, str]:
        """What the form holds now."""
        values = {key: self.query_one(f"#p-{key}", Input).value for key, *_ in PROFILE_FIELDS}
        values["container_runtime"] = str(self.query_one("#p-container_runtime", Select).value)
        return values

    @on(Input.Changed, "#profile-form Input")
    def _validate(self) -> dict[str, str]:
        errors = profile_errors(self.form_values())
        for key, *_ in PROFILE_FIELDS:
            label = self.query_one(f"#pe-{key}", Label)
            label.update(errors.get(key, ""))
            label.set_class(key in errors, "-shown")
            self.query_one(f"#p-{key}", Input).set_class(key in errors, "-bad")
        return errors

    def _profile_from_form(self) -> Profile | None:
        values = self.form_values()
        if self._validate():
            return None
        data: dict[str, Any] = self.ctx.backend.profile.model_dump()
        data.update(
            user=values["user"].strip(),
            hostnames=values["hostnames"],
            partition=values["partition"].strip(),
            ssh_key_path=values["ssh_key_path"].strip(),
            account=values["account"].strip(),
            base_results_dir=values["base_results_dir"].strip(),
            port=int(values["port"].strip() or "22"),
            registry_hosts=values["registry_hosts"].strip() or Profile().registry_hosts,
            container_runtime=values["container_runtime"],
        )
        try:
            return Profile.model_validate(data)
        except ValidationError as error:
            first = error.errors()[0]
            self.notify(f"{first['loc'][0]}: {first['msg']}.", severity="error")
            return None

    def action_save(self) -> None:
        """Save the profile to the config file and re-run the checks."""
        profile = self._profile_from_form()
        if profile is None:
            self.notify("Fix the fields marked in red first.", severity="error")
            return
        name = self.form_values()["name"].strip()
        try:
            self.ctx.backend.save_profile(name, profile, make_default=True)
        except TaoError as error:
            self.notify(str(error), severity="error")
            return
        self.notify(f"Profile '{name}' saved.")
        self.post_message(self.ProfileSaved(self, name))
        self.doctor()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Save / Run checks."""
        if event.button.id == "save":
            self.action_save()
        elif event.button.id == "run":
            self.doctor()

    def action_doctor(self) -> None:
        """Run the checks again."""
        self.doctor()

    def action_back(self) -> None:
        """Back to the queue (always under the set-up: the app opens it first)."""
        self.dismiss()

    # ------------------------------------------------------------------ doctor
    @work(exclusive=True, group="doctor", exit_on_error=False)
    async def doctor(self) -> None:
        """Run every check and show the list."""
        self.doctor_status.update("running…")
        try:
            report = await self.ctx.backend.doctor()
        except TaoError as error:
            self.doctor_status.update("could not run")
            self.notify(str(error), title="Doctor", severity="error")
            return
        await self.show_results(report.results)

    async def show_results(self, results: list[CheckResult]) -> None:
        """Replace the check list with ``results``."""
        self.results = results
        failed = sum(r.status == CheckStatus.FAIL for r in results)
        warned = sum(r.status == CheckStatus.WARN for r in results)
        summary = f"{failed} to fix" if failed else "all good"
        self.doctor_status.update(f"{summary}, {warned} worth fixing" if warned else summary)
        self.doctor_status.set_class(bool(failed), "-failed")
        # Keyboard users: a row whose result did not change is kept as it is, with what was typed
        # into its field and the focus (a re-run must not pull the field from under the fingers).
        # A replaced row takes the focus with it; when it was in the list (or nowhere: a modal
        # just closed), it moves on to the next fix, so letters typed next reach no key binding.
        focused = self.focused
        in_checks = focused is None or self.checks in focused.ancestors_with_self
        rows = list(self.checks.query(CheckRow))
        if [row.result.check for row in rows] == [result.check for result in results]:
            changed = [(r, new) for r, new in zip(rows, results, strict=True) if r.result != new]
            old = [row for row, _ in changed]
            for row, result in changed:
                await self.checks.mount(CheckRow(result), after=row)
        else:
            old = rows
            await self.checks.mount_all(CheckRow(result) for result in results)
        # The focus moves before the old rows go, so Textual never hands it to the form.
        if in_checks and (focused is None or any(r in focused.ancestors_with_self for r in old)):
            self.focus_next_fix(skip=old)
        await self.checks.remove_children(old)

    def focus_next_fix(self, skip: Sequence[CheckRow] = ()) -> bool:
        """Focus the first fix of the list (its field, else its button), rows in ``skip`` (about
        to be removed) aside; False when none."""
        for row in self.checks.query(CheckRow):
            if row in skip:
                continue
            controls = [w for w in row.query("SecretInput, Button") if w.focusable]
            if controls:
                controls[0].focus()
                return True
        return False

    @on(CheckRow.FixRequested)
    def _fix(self, event: CheckRow.FixRequested) -> None:
        result = event.row.result
        action = result.action
        backend = self.ctx.backend
        if action == "trust_host":
            self.trust(result.target or (backend.profile.hostnames or [""])[0])
        elif action == "install_credentials":
            self.app.push_screen(CredentialsModal(backend), self._after_credentials)
        elif action == "fix_permissions":
            path = backend.profile.ssh_key_path or "your private key"
            question = f"Restrict {path} to you alone (chmod 600)?"
            self.app.push_screen(
                ConfirmModal(question, "Fix permissions"),
                self._after_permission_question,
            )
        elif action == "install_key":
            password = event.row.take_secret()
            if not password:
                self.notify("Type your cluster password to install the key.", severity="warning")
                return
            self.run_fix("install_key", password)
            del password
        elif action == "create_results_dir":
            self.run_fix("create_results_dir")
        elif action == "generate_key":
            self.run_fix("generate_key", event.row.take_secret() or None)
        elif action == "set_account":
            profile = backend.profile.model_copy(update={"account": result.target})
            self.query_one("#p-account", Input).value = result.target
            try:
                backend.save_profile(backend.profile_name, profile)
            except TaoError as error:
                self.notify(str(error), severity="error")
                return
            self.notify(f"Account set to {result.target}.")
            self.doctor()

    def _after_credentials(self, _installed: bool | None) -> None:
        self.doctor()

    def _after_permission_question(self, yes: bool | None) -> None:
        if yes:
            self.run_fix("fix_permissions")

    @work(exclusive=True, group="fix", exit_on_error=False)
    async def trust(self, host: str) -> None:
        """Fetch the host key, show it, and trust it only after the user confirms."""
        backend = self.ctx.backend
        try:
            key = await backend.fetch_host_key(host)
        except TaoError as error:
            self.notify(str(error), severity="error")
            return
        if await self.app.push_screen_wait(TrustHostModal(key)):
            await backend.trust_host(host)
            self.notify(f"{host} trusted.")
            self.doctor()

    # A fixed description: by default @work writes repr(args), the password or passphrase,
    # into the worker's description, which its repr, devtools and error reports show.
    @work(exclusive=True, group="fix", exit_on_error=False, description="run a set-up fix")
    async def run_fix(self, action: str, secret: str | None = None) -> None:
        """Run a fix through the back end (a secret is used once and dropped)."""
        backend = self.ctx.backend
        try:
            if action == "install_key":
                await backend.install_key(secret or "")
                message = "Public key installed; key-only login should work now."
            elif action == "generate_key":
                path = await backend.generate_key(secret)
                message = f"Key pair generated at {path}."
            elif action == "create_results_dir":
                path = await backend.create_results_dir()
                message = f"{path} created on the cluster."
            else:
                await backend.fix_key_permissions()
                message = "Key permissions fixed (0600)."
        except TaoError as error:
            self.notify(str(error), title="Fix failed", severity="error")
            return
        finally:
            secret = None
        self.notify(message)
        self.doctor()
