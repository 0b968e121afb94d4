"""The doctor: ordered preflight checks, each with a status, a detail and one remediation.

Used by ``tao-slurm-tui doctor`` and by the TUI's onboarding screen (through the back end). The
order is the order a new user fixes things in:

1. profile complete (user, login hosts, partition) — local
2. private key present and private (or an ssh-agent) — local
3. host key known for each login host — local known_hosts; a host is contacted only to show
   the fingerprint of a key that is not known yet
4. key-only login, per login host (which ones work)
5. one remote round trip over the first working connection, running a script with marked
   sections (:mod:`tao_slurm_tui.core.preflight`): SLURM commands, account, partitions with
   their MaxTime, results dir writable, enroot credentials, Pyxis, the spec's input paths.

Statuses: ``pass``, ``fail``, ``warn`` (usable, worth a look) and ``skip``; the doctor "passes"
when nothing failed. Every failing result names one fix and, where the program can do it for the
user, an ``action`` id for the TUI's fix button
(:class:`~tao_slurm_tui.core.preflight.FixAction`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import asyncssh

from tao_slurm_tui.core import preflight, preflight_probe
from tao_slurm_tui.core.models import HostKeyInfo
from tao_slurm_tui.core.preflight import (
    CheckResult,
    CheckStatus,
    DoctorReport,
    FixAction,
    result,
    skipped,
)
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.quoting import home_path
from tao_slurm_tui.core.spec import SpecDraft, resolve
from tao_slurm_tui.errors import BadInput, OperationFailed
from tao_slurm_tui.remote.access import SSH, ClusterAccess
from tao_slurm_tui.remote.connection import (
    ConnectError,
    Connection,
    KeyLoadError,
    KeyPermissionError,
    RemoteError,
)
from tao_slurm_tui.remote.hostkeys import (
    host_key_target,
    keys_for_host,
    read_known_hosts,
)
from tao_slurm_tui.remote.keys import check_key_permissions
from tao_slurm_tui.services.sshsetup import (
    DEFAULT_KEY,
    LoginCheck,
    known_hosts_path,
    open_key_login,
    remediation_prompt,
)

__all__ = [
    "CheckResult",
    "CheckStatus",
    "DoctorReport",
    "FixAction",
    "SpecFacts",
    "check_host_keys",
    "check_ssh_key",
    "create_results_dir",
    "load_spec_facts",
    "run_doctor",
]

_DEFAULT_KEYS = ("~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/id_rsa")
"""Keys asyncssh (like OpenSSH) tries when the profile names none."""

_KEY_ACTIONS = {FixAction.INSTALL_KEY, FixAction.GENERATE_KEY, FixAction.FIX_PERMISSIONS}
"""Login failures the platform's manual SSH recipe addresses."""

PROBE_TIMEOUT = 120.0
"""Seconds the one remote probe may take (an unreachable slurmctld alone costs ~9 s per call)."""

ResultCallback = Callable[[CheckResult], None]
"""Called with each result as soon as it is known (the TUI fills its list progressively)."""


@dataclass(frozen=True)
class SpecFacts:
    """What the doctor needs from a job spec."""

    image: str = ""
    """The container image."""
    paths: tuple[str, ...] = ()
    """Cluster paths to ``test -e``: the inputs, then path-like ``[specs]`` values (converted)."""
    use_sqsh: bool = False
    """The spec converts its image to SQSH (``enroot import`` pulls it even without Pyxis)."""


# ----------------------------------------------------------------------------------- spec


def load_spec_facts(path: str | Path, profile: Profile | None = None) -> SpecFacts:
    """Read a spec's image and the cluster paths submit would ``test -e``.

    The spec must be a spec (:func:`tao_slurm_tui.core.spec.resolve`'s schema, with
    ``profile``'s defaults); whether it fits the profile's partitions is submit's question. Its
    paths are :meth:`~tao_slurm_tui.core.spec.JobSpec.paths_to_check` (inputs, then path-like
    ``[specs]`` values, converted from ``lustre://``), the same list ``submit`` checks.

    Raises:
        BadInput: the file cannot be read or is not a valid spec.
    """
    resolution = resolve(SpecDraft.from_file(Path(path).expanduser()), profile or Profile())
    spec = resolution.spec
    if spec is None:
        raise BadInput(resolution.schema_sentence() or resolution.sentence())
    return SpecFacts(spec.image, tuple(spec.paths_to_check()), spec.use_sqsh)


# ----------------------------------------------------------------------------------- local checks


def _agent_available(environ: Mapping[str, str]) -> bool:
    sock = environ.get("SSH_AUTH_SOCK", "")
    return bool(sock) and Path(sock).exists()


def check_ssh_key(profile: Profile, environ: Mapping[str, str] | None = None) -> CheckResult:
    """The private key exists, is private (not group/other readable) and loads; or an agent."""
    env = os.environ if environ is None else environ
    configured = bool(profile.ssh_key_path)
    if configured:
        key = Path(profile.ssh_key_path).expanduser()
    else:
        found = [Path(p).expanduser() for p in _DEFAULT_KEYS if Path(p).expanduser().exists()]
        if not found:
            return _no_key(env)
        key = found[0]
    return _key_file_problem(key) or _key_loads(key, env, configured=configured)


def _no_key(env: Mapping[str, str]) -> CheckResult:
    """No key configured and none in ~/.ssh: an agent will do, else generate one."""
    if _agent_available(env):
        return result("ssh_key", CheckStatus.PASS, "ssh-agent (SSH_AUTH_SOCK)")
    target = str(Path(DEFAULT_KEY).expanduser())
    return result(
        "ssh_key",
        CheckStatus.FAIL,
        "no ssh_key_path set, no key in ~/.ssh and no ssh-agent",
        f"Generate a key pair at {target} (press Generate, or run "
        f'ssh-keygen -t ed25519 -N "" -f {target}).',
        FixAction.GENERATE_KEY,
        target,
    )


def _key_file_problem(key: Path) -> CheckResult | None:
    """A failed result when the key file is missing, readable by others or no file."""
    if not key.exists():
        return result(
            "ssh_key",
            CheckStatus.FAIL,
            f"{key} does not exist",
            f"Generate a key pair there (press Generate, or run "
            f'ssh-keygen -t ed25519 -N "" -f {key}), or point ssh_key_path at your key.',
            FixAction.GENERATE_KEY,
            str(key),
        )
    try:
        check_key_permissions(key)
    except KeyPermissionError as exc:
        return result(
            "ssh_key",
            CheckStatus.FAIL,
            f"{key} is accessible by other users (mode {exc.mode:04o})",
            f"Run `chmod 600 {key}` (or press Fix).",
            FixAction.FIX_PERMISSIONS,
            str(key),
        )
    except KeyLoadError as exc:
        return result(
            "ssh_key",
            CheckStatus.FAIL,
            str(exc),
            "Point ssh_key_path at your private key.",
            FixAction.EDIT_PROFILE,
            str(key),
        )
    return None


def _key_loads(key: Path, env: Mapping[str, str], *, configured: bool) -> CheckResult:
    """The key loads without a passphrase (or, not configured, an agent holds it)."""
    try:
        loaded = asyncssh.read_private_key(key)
    except (asyncssh.KeyEncryptionError, asyncssh.KeyImportError) as exc:
        encrypted = isinstance(exc, asyncssh.KeyEncryptionError) or "assphrase" in str(exc)
        if not encrypted:
            return _unusable(key, exc)
        if _agent_available(env) and not configured:
            return result("ssh_key", CheckStatus.PASS, f"{key} has a passphrase; ssh-agent is used")
        return result(
            "ssh_key",
            CheckStatus.FAIL,
            f"{key} has a passphrase, which the program cannot ask for on every connection",
            f"Add it to ssh-agent (`ssh-add {key}`) and leave ssh_key_path empty.",
            FixAction.EDIT_PROFILE,
            str(key),
        )
    except OSError as exc:
        return _unusable(key, exc)
    algorithm = loaded.get_algorithm()
    return result("ssh_key", CheckStatus.PASS, f"{key} ({algorithm}, mode 0600 or stricter)")


def _unusable(key: Path, exc: Exception) -> CheckResult:
    return result(
        "ssh_key",
        CheckStatus.FAIL,
        f"{key} is not a usable private key ({exc})",
        "Point ssh_key_path at your private key, or generate a new pair.",
        FixAction.EDIT_PROFILE,
        str(key),
    )


async def check_host_keys(
    profile: Profile, *, access: ClusterAccess = SSH
) -> tuple[CheckResult, list[str]]:
    """Each login host's key is in known_hosts.

    Only hosts without an entry are contacted, to show the key's fingerprint for trusting it
    (a *changed* key surfaces in the login check, which refuses it).

    Returns:
        The result and the hosts that are known (the only ones worth a login attempt).
    """
    kh = known_hosts_path(profile)
    try:
        text = read_known_hosts(kh)
        survey = await _survey_host_keys(profile, text, access)
    except BadInput as exc:  # a directory, unreadable, a broken ~/.ssh/config: say the fix
        return result("host_keys", CheckStatus.FAIL, str(exc)), []
    known, unknown, unreachable = survey
    if not unknown and not unreachable:
        return result("host_keys", CheckStatus.PASS, f"known in {kh}: {', '.join(known)}"), known
    return _host_keys_missing(profile, str(kh), survey), known


_HostSurvey = tuple[list[str], list[tuple[str, HostKeyInfo]], list[tuple[str, str]]]
"""(known login hosts, (unknown login host, its key), (unreachable login host, why))."""


async def _survey_host_keys(
    profile: Profile, known_hosts: str, access: ClusterAccess
) -> _HostSurvey:
    """Which login hosts known_hosts knows; the key of each other one (or why it is unreachable).

    Raises:
        BadInput: ~/.ssh/config cannot be parsed.
    """
    known: list[str] = []
    unknown: list[tuple[str, HostKeyInfo]] = []
    unreachable: list[tuple[str, str]] = []
    for host in profile.hostnames:
        # An ~/.ssh/config alias is looked up as the login verifies it (HostName, Port).
        target, port = await host_key_target(profile, host)
        if keys_for_host(known_hosts, target, port):
            known.append(host)
            continue
        try:
            unknown.append((host, await access.host_key(profile, host)))
        except ConnectError as exc:
            reason = exc.failures[0][1] if exc.failures else str(exc)
            unreachable.append((host, reason))
    return known, unknown, unreachable


def _host_keys_missing(profile: Profile, kh: str, survey: _HostSurvey) -> CheckResult:
    """The failed result: trust the first unknown key, or fix the unreachable host's name."""
    known, unknown, unreachable = survey
    parts = [f"{_named(h, i)}: not in {kh} ({i.key_type} {i.fingerprint})" for h, i in unknown]
    parts += [f"{h}: unreachable ({r})" for h, r in unreachable]
    hosts = [
        {
            "host": i.host,
            "port": i.port,
            "key_type": i.key_type,
            "fingerprint": i.fingerprint,
            "public_key": i.public_key,
            "login_host": h,
        }
        for h, i in unknown
    ]
    if unknown:
        login_host, first = unknown[0]
        scan = f"ssh-keyscan{'' if first.port == 22 else f' -p {first.port}'}"
        fix = (
            f"Check the fingerprint {first.fingerprint} with your cluster admins, then trust it "
            f"(press Trust, or run {scan} {first.host} >> {kh})."
        )
        action, target = FixAction.TRUST_HOST, login_host
    else:
        fix = f"Check the login host names and port {profile.port} (and your VPN)."
        action, target = FixAction.EDIT_PROFILE, unreachable[0][0]
    return result(
        "host_keys",
        CheckStatus.FAIL,
        "; ".join(parts),
        fix,
        action,
        target,
        hosts=hosts,
        known=known,
    )


def _named(login_host: str, info: HostKeyInfo) -> str:
    """``alias (host:port)`` when ~/.ssh/config maps the login host elsewhere."""
    if login_host == info.host:
        return login_host
    return f"{login_host} ({info.host}:{info.port})"


def _login_result(
    profile: Profile, checks: Sequence[LoginCheck], not_tried: Sequence[str], note: str = ""
) -> CheckResult:
    ok = [c.host for c in checks if c.ok]
    bad = [c for c in checks if not c.ok]
    parts = []
    if ok:
        parts.append(f"works on {', '.join(ok)}" + (f" ({note})" if note else ""))
    parts += [f"{c.host}: {c.reason.rstrip('.')}" for c in bad]
    if not_tried:
        parts.append(f"not tried (host key unknown or host unreachable): {', '.join(not_tried)}")
    detail = "; ".join(parts) or "no login host to try"
    failed = [c.host for c in bad]
    if not bad and not not_tried and ok:
        return result("login", CheckStatus.PASS, detail, ok_hosts=ok)
    fix, action, target = _login_fix(profile, bad)
    status = CheckStatus.WARN if ok else CheckStatus.FAIL
    return result(
        "login",
        status,
        detail,
        fix,
        action,
        target,
        ok_hosts=ok,
        failed_hosts=failed,
        not_tried=list(not_tried),
    )


def _login_fix(profile: Profile, bad: Sequence[LoginCheck]) -> tuple[str, FixAction | None, str]:
    if not bad:
        return "Trust the host keys of the remaining login hosts first.", FixAction.TRUST_HOST, ""
    first = bad[0]
    if first.two_factor:
        return first.reason, None, first.host
    if first.error == "KeyPermissionError":
        key = str(Path(profile.ssh_key_path).expanduser())
        return f"Run `chmod 600 {key}` (or press Fix).", FixAction.FIX_PERMISSIONS, key
    if first.error == "KeyLoadError":
        return first.reason, FixAction.GENERATE_KEY, profile.ssh_key_path
    if first.error == "AuthenticationFailed":
        return (
            f"Install your public key on {first.host} with a one-time password login (press "
            "Install key), or follow the manual steps (ssh-copy-id).",
            FixAction.INSTALL_KEY,
            first.host,
        )
    if first.error == "UnknownHostKey":
        return "Trust the host key first.", FixAction.TRUST_HOST, first.host
    if first.error == "HostKeyChanged":
        return first.reason, None, first.host
    return (
        "Check the login host names, the port and your network or VPN.",
        FixAction.EDIT_PROFILE,
        "",
    )


# ----------------------------------------------------------------------------------- the doctor


async def run_doctor(
    profile: Profile,
    *,
    profile_name: str = "",
    spec_path: str | Path | None = None,
    spec: SpecFacts | None = None,
    connection: Connection | None = None,
    on_result: ResultCallback | None = None,
    environ: Mapping[str, str] | None = None,
    access: ClusterAccess = SSH,
) -> DoctorReport:
    """Run every check in order.

    Args:
        profile: the profile to check.
        profile_name: its name (for messages).
        spec_path: a job spec whose image and input paths are checked too (``doctor --spec``).
        spec: already loaded spec facts (instead of ``spec_path``).
        connection: an open connection to reuse for the remote checks (the TUI's); its host
            counts as a working login. Without one, a key-only connection is opened per login
            host and closed afterwards.
        on_result: called with each result as soon as it is known.
        environ: environment (for ``SSH_AUTH_SOCK``); default ``os.environ``.
        access: how the login hosts are reached (default: SSH).

    Raises:
        BadInput: the spec cannot be read.
    """
    report = DoctorReport()

    def emit(res: CheckResult) -> None:
        report.results.append(res)
        if on_result is not None:
            on_result(res)

    facts = spec if spec is not None or not spec_path else load_spec_facts(spec_path, profile)
    emit(preflight.evaluate_profile(profile.missing_required(), profile_name))
    emit(check_ssh_key(profile, environ))
    if not profile.hostnames or not profile.user:
        _skip_from(2, "the profile is incomplete", emit)
        return report

    host_result, known = await check_host_keys(profile, access=access)
    emit(host_result)
    logins = _Logins(profile, known, connection, access)
    try:
        login_result = await logins.try_each()
        emit(login_result)
        if logins.working is None:
            _skip_from(4, "no key-only login works yet", emit)
            if login_result.action in _KEY_ACTIONS:
                report.remediation = remediation_prompt(profile)
            return report
        report.host = logins.working.host
        for res in await _remote_checks(logins.working, profile, facts):
            emit(res)
    finally:
        await logins.close()
    return report


def _skip_from(index: int, why: str, emit: ResultCallback) -> None:
    """Skip the checks from the ``index``-th on (they need what failed)."""
    for check in list(preflight.CHECKS)[index:]:
        emit(skipped(check, why))


class _Logins:
    """The doctor's key-only login on each known login host, and the connection it goes on
    with (the caller's, when it works; else the first that logged in)."""

    def __init__(
        self,
        profile: Profile,
        known: Sequence[str],
        connection: Connection | None,
        access: ClusterAccess,
    ) -> None:
        self.profile = profile
        self.known = known
        self.connection = connection
        self.access = access
        self.working: Connection | None = None
        self._opened: list[Connection] = []

    async def try_each(self) -> CheckResult:
        """Log in to every known login host (reusing the caller's connection for its host)."""
        profile, connection = self.profile, self.connection
        if connection is not None and not connection.connected:
            # Warm up the caller's connection; if it cannot connect, the per-host login checks
            # below say why.
            with contextlib.suppress(RemoteError, BadInput):
                await connection.connect()
        reuse_host = connection.host if connection is not None and connection.connected else None
        checks: list[LoginCheck] = []
        for host in profile.hostnames:
            if host == reuse_host:
                checks.append(LoginCheck(host, True))
                continue
            if host not in self.known:
                continue
            login, conn = await open_key_login(profile, host, access=self.access)
            checks.append(login)
            if conn is not None:
                self._opened.append(conn)
                if self.working is None and reuse_host is None:
                    self.working = conn
                else:
                    await conn.close()
        if reuse_host is not None:
            self.working = connection
        not_tried = [h for h in profile.hostnames if h not in self.known and h != reuse_host]
        note = connection.login.note if reuse_host is not None and connection else ""  # a code?
        return _login_result(profile, checks, not_tried, note)

    async def close(self) -> None:
        """Close the connections the doctor opened (never the caller's)."""
        for conn in self._opened:
            await conn.close()


async def _remote_checks(
    conn: Connection, profile: Profile, facts: SpecFacts | None
) -> list[CheckResult]:
    """Run the probe script once and evaluate every remote check from its output."""
    parsed, error = await _run_probe(conn, profile, facts)
    if error:
        why = f"the remote checks failed: {error}"
        return [
            result(
                check,
                CheckStatus.FAIL,
                why,
                "Run the doctor again; if it persists, check the login host.",
            )
            for check in list(preflight.CHECKS)[4:]
        ]
    # The image is pulled only by Pyxis or by the SQSH conversion; with the bare-srun runtime
    # and no conversion a private image needs no credentials.
    private = bool(
        facts is not None
        and facts.image
        and (profile.container_runtime == "pyxis" or facts.use_sqsh)
        and preflight.image_is_private(facts.image)
    )
    out = [
        preflight.evaluate_tools(parsed.get("tools")),
        preflight.evaluate_account(
            profile.account, parsed.get("assoc"), parsed.get("defacct"), parsed.get("enforce")
        ),
        preflight.evaluate_partitions(profile.partitions, parsed.get("partitions")),
        preflight.evaluate_results_dir(profile.results_root, parsed.get("results")),
        preflight.evaluate_credentials(
            parsed.get("creds"), runtime=profile.container_runtime, private_image=private
        ),
        preflight.evaluate_pyxis(
            profile.container_runtime, parsed.get("pyxis"), parsed.get("node")
        ),
    ]
    if facts is None:
        out.append(skipped("inputs", "no spec given (doctor --spec SPEC.toml checks its inputs)"))
    else:
        inputs = preflight.evaluate_inputs(list(facts.paths), parsed.get("inputs"))
        out.append(inputs)
    return out


async def _run_probe(
    conn: Connection, profile: Profile, facts: SpecFacts | None
) -> tuple[dict[str, preflight_probe.Section], str]:
    """The probe's sections, or why it failed as a whole ('' when it answered)."""
    sections = preflight_probe.probe_sections(
        results_dir=profile.results_root,
        check_pyxis=profile.container_runtime == "pyxis",
        input_paths=list(facts.paths) if facts else [],
        partition=profile.partitions[0] if profile.partitions else "",
    )
    script = preflight_probe.build_probe_script(sections)
    try:
        res = await conn.run(
            ["bash", "-c", script], timeout=max(PROBE_TIMEOUT, profile.command_timeout)
        )
    except RemoteError as exc:
        return {}, str(exc)
    parsed = preflight_probe.parse_probe(res.stdout)
    if not parsed:
        return {}, (res.stderr.strip().splitlines() or [f"exit status {res.exit_status}"])[-1]
    return parsed, ""


# ----------------------------------------------------------------------------------- fixes


async def create_results_dir(connection: Connection, path: str) -> None:
    """``mkdir -p`` the base results dir on the cluster (the ``create_results_dir`` fix).

    Raises:
        OperationFailed: the directory could not be created.
    """
    res = await connection.run(f"mkdir -p -- {home_path(path)}", check=False)
    if not res.ok:
        last = next((ln for ln in reversed(res.stderr.splitlines()) if ln.strip()), "")
        raise OperationFailed(
            f"Could not create {path} on {res.host}"
            + (f" ({last.strip()})" if last else "")
            + "; choose a base_results_dir you can write to."
        )
