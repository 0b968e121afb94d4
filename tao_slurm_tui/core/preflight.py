"""Preflight ("doctor") rules: the one remote probe script and what its output means.

Pure: builds the probe script from plain values, parses its marked sections and turns them into
:class:`CheckResult` values. The services layer runs the script over the one connection
(:mod:`tao_slurm_tui.services.onboarding`); unit tests feed recorded output.

Statuses: ``pass`` (fine), ``fail`` (blocks use; the CLI exits 1), ``warn`` (works but worth a look,
e.g. enroot credentials missing while only public images are used) and ``skip`` (not applicable, or
an earlier check failed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from tao_slurm_tui.core.preflight_probe import NODE_CHECK_SECONDS, SLURM_TOOLS, Section, first_error
from tao_slurm_tui.core.quoting import quote
from tao_slurm_tui.core.secrets import CREDENTIALS_PATH


class CheckStatus(StrEnum):
    """Outcome of one check."""

    PASS = "pass"
    FAIL = "fail"
    WARN = "warn"
    SKIP = "skip"


class FixAction(StrEnum):
    """Machine-usable id of the remediation, for the TUI's fix buttons."""

    GENERATE_KEY = "generate_key"
    INSTALL_KEY = "install_key"
    TRUST_HOST = "trust_host"
    FIX_PERMISSIONS = "fix_permissions"
    INSTALL_CREDENTIALS = "install_credentials"
    SET_ACCOUNT = "set_account"
    EDIT_PROFILE = "edit_profile"
    CREATE_RESULTS_DIR = "create_results_dir"
    EDIT_SPEC = "edit_spec"


@dataclass(frozen=True)
class CheckResult:
    """One line of the doctor's report."""

    check: str
    """Stable id (``profile``, ``ssh_key``, ``host_keys``, ``login``, ``slurm_tools``, ...)."""
    title: str
    """Short human name of the check."""
    status: CheckStatus
    """pass / fail / warn / skip."""
    detail: str
    """What was found, in one line."""
    fix: str = ""
    """One remediation the user can act on (empty when nothing to do)."""
    action: FixAction | None = None
    """Which fix button the TUI offers, if any."""
    target: str = ""
    """What the action applies to: the host for ``trust_host``, the account for
    ``set_account``, the directory for ``create_results_dir``, the key for ``generate_key`` /
    ``fix_permissions``; empty otherwise."""
    data: Mapping[str, Any] = field(default_factory=dict)
    """Extra facts for the fix (detected account, host key fingerprints, the path to create)."""

    @property
    def failed(self) -> bool:
        """True when this check blocks use."""
        return self.status is CheckStatus.FAIL

    def to_json(self) -> dict[str, Any]:
        """``{"check","status","detail","fix"}`` plus ``title`` and ``action``."""
        return {
            "check": self.check,
            "status": str(self.status),
            "detail": self.detail,
            "fix": self.fix,
            "title": self.title,
            "action": str(self.action) if self.action else None,
            "target": self.target,
        }


@dataclass
class DoctorReport:
    """Every check's result, in order."""

    results: list[CheckResult] = field(default_factory=list)
    """The results in the order they ran."""
    host: str | None = None
    """The login host the remote checks ran on (None when no login worked)."""
    remediation: str = ""
    """The platform's manual SSH set-up prompt, filled in, when no key-only login worked."""

    @property
    def ok(self) -> bool:
        """True when no check failed (``warn`` and ``skip`` are fine)."""
        return not any(r.failed for r in self.results)

    def get(self, check: str) -> CheckResult | None:
        """The result of the check with id ``check``."""
        return next((r for r in self.results if r.check == check), None)

    def to_json(self) -> list[dict[str, Any]]:
        """The ``doctor --json`` list: ``{"check","status","detail","fix", ...}`` per check."""
        return [r.to_json() for r in self.results]


#: Check id → title, in the order the doctor runs and reports them.
CHECKS: dict[str, str] = {
    "profile": "Profile complete",
    "ssh_key": "SSH private key",
    "host_keys": "Host keys known",
    "login": "Key-only login",
    "slurm_tools": "SLURM commands",
    "account": "Account",
    "partitions": "Partitions",
    "results_dir": "Results directory",
    "enroot_credentials": "Enroot credentials",
    "pyxis": "Pyxis container support",
    "inputs": "Spec input paths",
}


def result(
    check: str,
    status: CheckStatus,
    detail: str,
    fix: str = "",
    action: FixAction | None = None,
    target: str = "",
    **data: Any,
) -> CheckResult:
    """Build a :class:`CheckResult` with the title of ``check``."""
    return CheckResult(check, CHECKS[check], status, detail, fix, action, target, data)


def skipped(check: str, why: str) -> CheckResult:
    """A ``skip`` result for ``check``."""
    return result(check, CheckStatus.SKIP, why)


# ----------------------------------------------------------------------------------- evaluation


def evaluate_profile(missing: Sequence[str], profile_name: str = "") -> CheckResult:
    """The profile has user, login hosts and partition."""
    if not missing:
        return result("profile", CheckStatus.PASS, "user, login hosts and partition are set")
    names = ", ".join(missing)
    where = f" of profile '{profile_name}'" if profile_name else ""
    return result(
        "profile",
        CheckStatus.FAIL,
        f"missing: {names}",
        f"Fill in {names}{where} on the set-up screen (d in tao-slurm-tui) or in config.toml.",
        FixAction.EDIT_PROFILE,
        missing=list(missing),
    )


def evaluate_tools(section: Section | None) -> CheckResult:
    """``squeue``, ``sbatch``, ``sacct`` and ``scancel`` are on the login host's PATH and answer."""
    if section is None:
        return skipped("slurm_tools", "no answer from the login host")
    found: dict[str, tuple[str, str]] = {}
    for line in section.lines:
        parts = line.split("|", 2)
        if len(parts) == 3 and parts[0] in SLURM_TOOLS:
            found[parts[0]] = (parts[1], parts[2])
    missing = [t for t in SLURM_TOOLS if not found.get(t, ("", ""))[0]]
    if missing:
        names = ", ".join(missing)
        return result(
            "slurm_tools",
            CheckStatus.FAIL,
            f"not found on the login host: {names}",
            "Use a login host with the SLURM client installed, or ask your admin to put "
            f"{names} on the PATH of non-interactive SSH sessions.",
            FixAction.EDIT_PROFILE,
            missing=missing,
        )
    silent = [t for t in SLURM_TOOLS if not found[t][1]]
    if silent:
        names = ", ".join(silent)
        return result(
            "slurm_tools",
            CheckStatus.FAIL,
            f"{names} did not answer --version",
            "Check the SLURM client on the login host with your admin.",
        )
    version = found["squeue"][1]
    return result("slurm_tools", CheckStatus.PASS, f"{', '.join(SLURM_TOOLS)} answer ({version})")


def _account_lines(section: Section | None) -> list[str]:
    if section is None or section.rc != 0:
        return []
    return [ln.strip() for ln in section.lines if ln.strip() and "error" not in ln.lower()]


def _enforces_associations(section: Section | None) -> bool:
    if section is None:
        return False
    for line in section.lines:
        key, _, value = line.partition("=")
        if key.strip().lower() == "accountingstorageenforce":
            return any(
                w in value.lower() for w in ("associations", "limits", "qos", "safe", "wckeys")
            )
    return False


def evaluate_account(
    account: str,
    assoc: Section | None,
    default: Section | None,
    enforce: Section | None,
) -> CheckResult:
    """The profile's account, or the one SLURM would use, is valid.

    Decision: an empty account passes when the user has a default account (SLURM charges it) and
    the detected account is offered as the fix; it fails only when the site enforces associations
    and SLURM has no default to fall back on.
    """
    accounts = sorted(set(_account_lines(assoc)))
    defaults = _account_lines(default)
    default_account = defaults[0] if defaults else ""
    if account:
        return _named_account(account, accounts, default_account)
    return _unset_account(accounts, default_account, _enforces_associations(enforce))


def _named_account(account: str, accounts: list[str], default_account: str) -> CheckResult:
    """The profile names an account: one of the user's, or not verifiable."""
    if not accounts:
        return result(
            "account",
            CheckStatus.PASS,
            f"'{account}' (not verified: sacctmgr shows no associations)",
        )
    if account in accounts:
        return result("account", CheckStatus.PASS, f"'{account}' is one of your accounts")
    return result(
        "account",
        CheckStatus.FAIL,
        f"'{account}' is not one of your accounts ({', '.join(accounts)})",
        f"Set account to one of: {', '.join(accounts)}.",
        FixAction.SET_ACCOUNT,
        target=default_account or accounts[0],
        accounts=accounts,
    )


def _unset_account(accounts: list[str], default_account: str, enforced: bool) -> CheckResult:
    """No account in the profile: SLURM's default, one of the user's, or none needed."""
    if default_account:
        return result(
            "account",
            CheckStatus.PASS,
            f"not set; SLURM charges your default account '{default_account}'",
            f'Optionally set account = "{default_account}" in the profile.',
            FixAction.SET_ACCOUNT,
            target=default_account,
            accounts=accounts or [default_account],
        )
    if accounts:
        status = CheckStatus.FAIL if enforced else CheckStatus.PASS
        return result(
            "account",
            status,
            f"not set; you have no default account (accounts: {', '.join(accounts)})",
            f'Set account = "{accounts[0]}" (or another of yours) in the profile.',
            FixAction.SET_ACCOUNT,
            target=accounts[0],
            accounts=accounts,
        )
    if enforced:
        return result(
            "account",
            CheckStatus.FAIL,
            "the site enforces accounts but sacctmgr shows none for you",
            "Ask your cluster admin for a SLURM account, then set it in the profile.",
            FixAction.SET_ACCOUNT,
            accounts=[],
        )
    return skipped("account", "no accounting associations; none needed")


_PART_FIELD = re.compile(r"(\w+)=(\S*)")


def parse_partitions(text: str) -> dict[str, dict[str, str]]:
    """``scontrol show partition -o`` output → partition name → its fields."""
    parts: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        fields = dict(_PART_FIELD.findall(line))
        name = fields.get("PartitionName")
        if name:
            parts[name] = fields
    return parts


def evaluate_partitions(wanted: Sequence[str], section: Section | None) -> CheckResult:
    """Every configured partition exists; report its MaxTime and state."""
    if not wanted:
        return skipped("partitions", "no partition configured")
    if section is None:
        return skipped("partitions", "no answer from the login host")
    table = parse_partitions(section.text)
    if not table:
        return result(
            "partitions",
            CheckStatus.FAIL,
            f"could not list partitions: {first_error(section)}",
            "Check that the SLURM controller answers (scontrol ping) with your admin.",
        )
    missing = [p for p in wanted if p not in table]
    limits = {p: table[p].get("MaxTime", "?") for p in wanted if p in table}
    shown = ", ".join(f"{p} (MaxTime {t})" for p, t in limits.items())
    if missing:
        return result(
            "partitions",
            CheckStatus.FAIL,
            f"unknown partition(s): {', '.join(missing)}" + (f"; found {shown}" if shown else ""),
            f"Set partition to existing ones (available: {', '.join(sorted(table))}).",
            FixAction.EDIT_PROFILE,
            missing=missing,
            available=sorted(table),
            max_time=limits,
        )
    down = [p for p in wanted if table[p].get("State", "UP") != "UP"]
    if down:
        return result(
            "partitions",
            CheckStatus.WARN,
            f"{shown}; not UP: {', '.join(down)}",
            "Jobs will wait until the partition is UP again; pick another or ask your admin.",
            FixAction.EDIT_PROFILE,
            max_time=limits,
        )
    return result("partitions", CheckStatus.PASS, shown, max_time=limits)


def evaluate_results_dir(path: str, section: Section | None) -> CheckResult:
    """The base results dir exists and is writable (or can be created)."""
    if section is None:
        return skipped("results_dir", "no answer from the login host")
    first = section.lines[0] if section.lines else ""
    if first == "writable":
        return result("results_dir", CheckStatus.PASS, f"{path} exists and is writable")
    if first == "readonly":
        return result(
            "results_dir",
            CheckStatus.FAIL,
            f"{path} is not writable for you",
            "Set base_results_dir to a directory you own (e.g. under your home or Lustre dir).",
            FixAction.EDIT_PROFILE,
            target=path,
        )
    kind, _, parent = first.partition("|")
    if kind == "creatable":
        return result(
            "results_dir",
            CheckStatus.FAIL,
            f"{path} does not exist",
            f"Create it: mkdir -p {quote(path)}",
            FixAction.CREATE_RESULTS_DIR,
            target=path,
        )
    if kind == "blocked":
        return result(
            "results_dir",
            CheckStatus.FAIL,
            f"{path} does not exist and {parent} is not writable for you",
            "Set base_results_dir to a directory you can write to.",
            FixAction.EDIT_PROFILE,
            target=path,
        )
    return result(
        "results_dir",
        CheckStatus.FAIL,
        f"could not check {path}: {first_error(section)}",
        "Set base_results_dir to a directory you can write to.",
        FixAction.EDIT_PROFILE,
        target=path,
    )


def evaluate_credentials(
    section: Section | None, *, runtime: str, private_image: bool
) -> CheckResult:
    """Enroot credentials exist; needed only for private images under Pyxis.

    Missing credentials are a ``warn`` (public images pull anonymously), a ``fail`` when the spec's
    image is private, and a ``skip`` with the bare-``srun`` runtime (nothing is pulled).
    """
    if section is None:
        return skipped("enroot_credentials", "no answer from the login host")
    present = bool(section.lines) and section.lines[0] == "present"
    if present:
        return result("enroot_credentials", CheckStatus.PASS, f"{CREDENTIALS_PATH} is present")
    fix = (
        "Install your NGC key: tao-slurm-tui creds install "
        "(or the set-up screen, d in tao-slurm-tui)."
    )
    if runtime == "none" and not private_image:
        return result(
            "enroot_credentials",
            CheckStatus.SKIP,
            f"{CREDENTIALS_PATH} missing; not needed with container_runtime = none",
            fix,
            FixAction.INSTALL_CREDENTIALS,
        )
    if private_image:
        return result(
            "enroot_credentials",
            CheckStatus.FAIL,
            f"{CREDENTIALS_PATH} missing and the spec's image is private",
            fix,
            FixAction.INSTALL_CREDENTIALS,
        )
    return result(
        "enroot_credentials",
        CheckStatus.WARN,
        f"{CREDENTIALS_PATH} missing; only public images will pull",
        fix,
        FixAction.INSTALL_CREDENTIALS,
    )


def evaluate_pyxis(
    runtime: str, section: Section | None, node: Section | None = None
) -> CheckResult:
    """``srun --help`` lists ``--container-image`` on the login host, and a compute node (one
    ``srun`` task) has ``enroot`` and the Pyxis plugin."""
    if runtime != "pyxis":
        return skipped("pyxis", f"container_runtime = {runtime}: jobs run with a bare srun")
    if section is None:
        return skipped("pyxis", "no answer from the login host")
    state = section.lines[0] if section.lines else ""
    if state != "present":
        detail = (
            "srun is not on the PATH"
            if state == "nosrun"
            else "srun --help does not list --container-image (no Pyxis plugin)"
        )
        return result(
            "pyxis",
            CheckStatus.FAIL,
            detail,
            'Ask your admin for Pyxis, or set container_runtime = "none" to run on bare metal.',
            FixAction.EDIT_PROFILE,
        )
    login = "srun --help lists --container-image"
    if node is None:
        return result("pyxis", CheckStatus.PASS, login)
    return _pyxis_on_node(login, node)


def _pyxis_on_node(login: str, node: Section) -> CheckResult:
    """What the one-task ``srun`` found on a compute node: enroot and the Pyxis plugin."""
    facts: dict[str, list[str]] = {}
    for line in node.lines:
        key, _, rest = line.partition("|")
        if key in ("node", "enroot", "pyxis") and key not in facts:
            facts[key] = rest.split("|")
    if "node" not in facts:
        why = " ".join(node.lines)[-300:] or f"srun exited with status {node.rc}"
        return result(
            "pyxis",
            CheckStatus.WARN,
            f"{login}, but no compute node could be checked: {why}",
            "Run the doctor again when a node of the partition is free (the check waits "
            f"{NODE_CHECK_SECONDS} s for one).",
        )
    host = facts["node"][0] or "a compute node"
    enroot = facts.get("enroot", ["", ""])
    pyxis = facts.get("pyxis", ["", "no"])
    if not enroot[0]:
        return result(
            "pyxis",
            CheckStatus.FAIL,
            f"{login}, but enroot is not on the PATH of jobs on {host}",
            "Ask your admin to install enroot on the compute nodes (Pyxis runs it there), or "
            'set container_runtime = "none".',
            FixAction.EDIT_PROFILE,
        )
    if pyxis[-1] != "yes":
        where = f" ({pyxis[0]} is missing)" if pyxis[0] else ""
        return result(
            "pyxis",
            CheckStatus.FAIL,
            f"{login}, but the Pyxis plugin is not installed on {host}{where}",
            "Ask your admin to install Pyxis on the compute nodes, or set "
            'container_runtime = "none".',
            FixAction.EDIT_PROFILE,
        )
    version = enroot[1] if len(enroot) > 1 and enroot[1] else "?"
    return result(
        "pyxis",
        CheckStatus.PASS,
        f"{login}; on {host}: enroot {version} and the Pyxis plugin",
    )


def evaluate_inputs(paths: Sequence[str], section: Section | None) -> CheckResult:
    """Every input path of the spec exists on the cluster (``test -e``)."""
    if not paths:
        return skipped("inputs", "the spec lists no input paths")
    if section is None:
        return skipped("inputs", "no answer from the login host")
    ok: set[int] = set()
    for line in section.lines:
        idx, _, state = line.partition("|")
        if state == "ok" and idx.isdigit():
            ok.add(int(idx))
    missing = [p for i, p in enumerate(paths) if i not in ok]
    if missing:
        return result(
            "inputs",
            CheckStatus.FAIL,
            f"missing on the cluster: {', '.join(missing)}",
            "Correct the paths in the spec's inputs, or stage the data onto shared storage.",
            FixAction.EDIT_SPEC,
            missing=missing,
        )
    return result(
        "inputs",
        CheckStatus.PASS,
        "the input path exists" if len(paths) == 1 else f"all {len(paths)} input paths exist",
    )


def image_is_private(image: str) -> bool:
    """Whether pulling ``image`` needs registry credentials (an NGC org other than ``nvidia``).

    ``nvcr.io/nvidia/...`` is NGC's public catalog; other nvcr.io orgs (``nvstaging``,
    ``nvidian``, team orgs) need the NGC key. Other registries: unknown, assumed public.
    """
    image = image.strip()
    for prefix in ("docker://", "nvcr.io#", "nvcr.io/"):
        if image.startswith(prefix):
            rest = image[len(prefix) :]
            if prefix == "docker://":
                return image_is_private(rest)
            org = rest.split("/", 1)[0]
            return org != "nvidia"
    return False
