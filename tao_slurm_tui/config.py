"""Configuration: cluster profiles and app settings.

The file is TOML (``config.toml`` under the platform config dir, ``XDG_CONFIG_HOME`` honoured,
``--config PATH`` overrides). It is read with :mod:`tomllib` and written with :mod:`tomli_w`
atomically (temp file + rename, mode 0600). The platform's environment variables
(``SLURM_USER``, ``SLURM_HOSTNAME``, ...) override the selected profile.

A broken file never produces a traceback: :class:`ConfigError` carries one sentence naming the
file, the key and what is wrong, and the file is left untouched.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import platformdirs
import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

APP_NAME = "tao-slurm-tui"

#: The packaged default partition list of the platform: all are 4-hour queues.
DEFAULT_PARTITIONS = "polar,polar3,polar4,grizzly"

#: Where results go when the profile does not say (the platform's convention).
DEFAULT_RESULTS_TEMPLATE = "/lustre/fsw/portfolios/edgeai/users/{user}"

_REGISTRY_HOST_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")


class ConfigError(Exception):
    """A configuration problem, explained in one sentence for the user."""


class Profile(BaseModel):
    """One SLURM cluster reached over SSH."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    user: str = ""
    """SSH user name on the login hosts (``SLURM_USER``)."""
    hostnames: list[str] = Field(default_factory=list)
    """Login hosts, tried in this order on connect failure (``SLURM_HOSTNAME``, comma list)."""
    port: int = Field(default=22, ge=1, le=65535)
    """SSH port of the login hosts."""
    ssh_key_path: str = ""
    """Private key for key-only login (``SSH_KEY_PATH``); empty: ``~/.ssh`` keys and the agent."""
    known_hosts: str = ""
    """known_hosts file to verify host keys against; empty: ``~/.ssh/known_hosts``."""
    use_ssh_config: bool = True
    """Read ``~/.ssh/config`` (Host aliases, Port, User, IdentityFile)."""
    partition: str = DEFAULT_PARTITIONS
    """Partition(s) for GPU jobs, comma separated (``SLURM_PARTITION``)."""
    account: str = ""
    """Account charged by ``#SBATCH --account`` (``SLURM_ACCOUNT``); empty: none."""
    base_results_dir: str = ""
    """Shared-filesystem root for job files and results (``SLURM_BASE_RESULTS_DIR``)."""
    container_runtime: Literal["pyxis", "none"] = "pyxis"
    """``pyxis`` runs ``srun --container-image``; ``none`` runs the command on bare metal."""
    time_hours: float = Field(default=4.0, gt=0)
    """Default wall time of a job in hours (``SLURM_TIME_HOURS``)."""
    timeout_hours: float = Field(default=3.8, gt=0)
    """Default time the container command may run before it is stopped (``SLURM_TIMEOUT_HOURS``)."""
    use_requeue: bool = True
    """``#SBATCH --requeue`` by default (``SLURM_USE_REQUEUE``)."""
    max_gpus_per_node: int = Field(default=8, ge=1)
    """GPUs of one node; asking for this many or more makes the request exclusive nodes."""
    max_cpus_per_task: int = Field(default=128, ge=1)
    """Cap for ``cpus_per_task x num_gpus`` on a single node."""
    sqsh_cache_dir: str = ""
    """Where converted SQSH images are cached; empty: ``<base_results_dir>/sqsh``."""
    conversion_partition: str = ""
    """Partition of the SQSH conversion job; empty: the first of ``partition``."""
    require_sqsh: bool = False
    """Stop instead of falling back to the registry image when a conversion fails."""
    force_reconvert_latest: bool = False
    """Convert ``:latest`` images again instead of reusing the cached SQSH."""
    max_timeout_requeues: int = Field(default=5, ge=0)
    """Self-requeues after the command ran for ``timeout_hours`` (apart from the retry budget of
    infrastructure failures)."""
    sqsh_conversion_minutes: int = Field(default=120, ge=1)
    """Wall time of a SQSH conversion job in minutes (capped by the partition's MaxTime)."""
    registry_hosts: list[str] = Field(default_factory=lambda: ["nvcr.io", "authn.nvidia.com"])
    """Registry hosts (no port) the NGC key is written for in the enroot credentials (comma list
    in ``config set-profile``); add a site's own NGC-style registry here."""
    connect_timeout: float = Field(default=10.0, gt=0)
    """Seconds to wait for one login host before trying the next."""
    command_timeout: float = Field(default=60.0, gt=0)
    """Default seconds a remote command may take."""

    @field_validator("hostnames", mode="before")
    @classmethod
    def _split_hosts(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [h.strip() for h in value.split(",") if h.strip()]
        return value

    @field_validator("registry_hosts", mode="before")
    @classmethod
    def _split_registry_hosts(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [h.strip() for h in value.split(",") if h.strip()]
        if isinstance(value, list):
            for host in value:
                if not isinstance(host, str) or not _REGISTRY_HOST_RE.match(host):
                    raise ValueError(
                        f"{host!r} is not a registry host name; write it without scheme or port,"
                        " e.g. nvcr.io"
                    )
        return value

    @property
    def partitions(self) -> list[str]:
        """The configured partitions as a list."""
        return [p.strip() for p in self.partition.split(",") if p.strip()]

    @property
    def results_root(self) -> str:
        """``base_results_dir`` or the platform's per-user default."""
        if self.base_results_dir:
            return self.base_results_dir.rstrip("/") or "/"
        return DEFAULT_RESULTS_TEMPLATE.format(user=self.user or "USER")

    def missing_required(self) -> list[str]:
        """Names of required fields that are empty (user, hostnames, partition)."""
        missing = []
        if not self.user:
            missing.append("user")
        if not self.hostnames:
            missing.append("hostnames")
        if not self.partitions:
            missing.append("partition")
        return missing


class Settings(BaseModel):
    """The whole config file."""

    model_config = ConfigDict(extra="forbid")

    default_profile: str = ""
    """Profile used when ``--profile`` is not given."""
    poll_interval: float = Field(default=10.0, ge=2.0)
    """Seconds between queue polls (at least 2)."""
    theme: str = "tao-dark"
    """Textual theme name."""
    keys: dict[str, str] = Field(default_factory=dict)
    """Binding id → key(s), e.g. ``"queue.cancel" = "x"``; remaps the app's bindings."""
    profiles: dict[str, Profile] = Field(default_factory=dict)
    """Named cluster profiles."""


# ----------------------------------------------------------------------------------- paths


def config_path(override: str | os.PathLike[str] | None = None) -> Path:
    """Path of the config file: ``override`` or ``<user config dir>/config.toml``."""
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)) / "config.toml"


def data_dir() -> Path:
    """Platform data dir (``XDG_DATA_HOME`` honoured); holds the state DB."""
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def cache_dir() -> Path:
    """Platform cache dir (``XDG_CACHE_HOME`` honoured); holds partition-limit caches."""
    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))


def state_db_path() -> Path:
    """Path of the SQLite state database."""
    return data_dir() / "state.db"


# ----------------------------------------------------------------------------------- errors


def _describe(error: ValidationError, path: Path) -> str:
    first = error.errors()[0]
    loc = ".".join(str(part) for part in first["loc"])
    kind = first["type"]
    if kind == "extra_forbidden":
        what = "is not a known setting (check its spelling)"
    elif kind == "missing":
        what = "is required"
    else:
        what = f"is invalid: {first['msg']}"
        if "input" in first and not isinstance(first["input"], dict | list):
            what += f" (got {first['input']!r})"
    more = len(error.errors()) - 1
    suffix = f" ({more} more problem{'s' if more > 1 else ''} after this one)" if more else ""
    return f"{path}: key '{loc}' {what}{suffix}."


# ----------------------------------------------------------------------------------- load/save


def load_settings(path: Path) -> Settings:
    """Read the config file; a missing file is an empty config.

    Raises:
        ConfigError: the file is not valid TOML or does not fit the schema.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Settings()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror}.") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: the config file is not UTF-8 text.") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}. Fix the file and try again.") from None
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, path)) from None


def _dump(settings: Settings) -> dict[str, Any]:
    data = settings.model_dump(mode="json")
    # Keep the file short: write profile fields that differ from the defaults, plus the
    # required ones so a user sees what to fill in.
    defaults = Profile().model_dump(mode="json")
    profiles: dict[str, Any] = {}
    for name, prof in data.get("profiles", {}).items():
        profiles[name] = {
            k: v
            for k, v in prof.items()
            if k in ("user", "hostnames", "partition") or v != defaults.get(k)
        }
    data["profiles"] = profiles
    return data


def write_atomic(path: Path, content: bytes, mode: int = 0o600) -> None:
    """Write ``content`` to ``path`` via a temp file in the same dir + rename, with ``mode``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def save_settings(settings: Settings, path: Path) -> None:
    """Write the config atomically with mode 0600."""
    write_atomic(path, tomli_w.dumps(_dump(settings)).encode("utf-8"))


# ----------------------------------------------------------------------------------- env overrides

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}

ENV_OVERRIDES: dict[str, str] = {
    "SLURM_USER": "user",
    "SLURM_HOSTNAME": "hostnames",
    "SLURM_PARTITION": "partition",
    "SSH_KEY_PATH": "ssh_key_path",
    "SLURM_BASE_RESULTS_DIR": "base_results_dir",
    "SLURM_ACCOUNT": "account",
    "SLURM_TIME_HOURS": "time_hours",
    "SLURM_TIMEOUT_HOURS": "timeout_hours",
    "SLURM_USE_REQUEUE": "use_requeue",
}
"""Platform environment variable → profile field it overrides."""


def apply_env(profile: Profile, environ: Mapping[str, str] | None = None) -> Profile:
    """Return a copy of ``profile`` with the platform's environment variables applied.

    Raises:
        ConfigError: a variable holds a value the field cannot take.
    """
    env = os.environ if environ is None else environ
    updates: dict[str, Any] = {}
    for var, field in ENV_OVERRIDES.items():
        value = env.get(var)
        if value is None or value == "":
            continue
        if field == "use_requeue":
            low = value.strip().lower()
            if low not in _TRUE | _FALSE:
                raise ConfigError(
                    f"environment variable {var}={value!r} is not a boolean; use true or false."
                )
            updates[field] = low in _TRUE
        else:
            updates[field] = value
    if not updates:
        return profile
    try:
        return Profile.model_validate({**profile.model_dump(), **updates})
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else "?"
        var = next((v for v, f in ENV_OVERRIDES.items() if f == field), field)
        raise ConfigError(
            f"environment variable {var} is invalid: {first['msg']} (got {env.get(var)!r})."
        ) from None


# ----------------------------------------------------------------------------------- facade

_NAME_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class Config:
    """The loaded config file plus the chosen profile, as the CLI and the TUI use it."""

    def __init__(self, path: Path, settings: Settings) -> None:
        self.path = path
        """Where the config lives (and is saved)."""
        self.settings = settings
        """The parsed file."""

    @classmethod
    def load(cls, override: str | os.PathLike[str] | None = None) -> Config:
        """Load the config file (``override`` or the platform default)."""
        path = config_path(override)
        return cls(path, load_settings(path))

    def profile_name(self, requested: str | None = None) -> str:
        """Name of the profile to use: ``requested``, the default, or the only one."""
        if requested:
            return requested
        if self.settings.default_profile:
            return self.settings.default_profile
        if len(self.settings.profiles) == 1:
            return next(iter(self.settings.profiles))
        return "default"

    def profile(
        self, requested: str | None = None, environ: Mapping[str, str] | None = None
    ) -> Profile:
        """The selected profile with environment overrides applied.

        An unknown profile name is an error unless the environment alone describes a cluster
        (``SLURM_USER`` and ``SLURM_HOSTNAME`` set), as the platform's scripts expect.

        Raises:
            ConfigError: unknown profile, or a bad environment override.
        """
        name = self.profile_name(requested)
        env = os.environ if environ is None else environ
        base = self.settings.profiles.get(name)
        if base is None:
            if requested or (self.settings.profiles and self.settings.default_profile):
                known = ", ".join(sorted(self.settings.profiles)) or "none yet"
                raise ConfigError(
                    f"{self.path}: no profile named '{name}' (known: {known}); "
                    "create it in the onboarding screen or pick another with --profile."
                )
            base = Profile()
        return apply_env(base, env)

    def upsert_profile(self, name: str, profile: Profile, *, make_default: bool = False) -> None:
        """Add or replace profile ``name`` and save the file atomically.

        Raises:
            ConfigError: ``name`` is not a valid profile name.
        """
        if not _NAME_RE.match(name):
            raise ConfigError(
                f"profile name {name!r} is invalid: use 1-64 letters, digits, '.', '_' or '-'."
            )
        self.settings.profiles[name] = profile
        if make_default or not self.settings.default_profile:
            self.settings.default_profile = name
        save_settings(self.settings, self.path)

    def save(self) -> None:
        """Save the settings atomically (mode 0600)."""
        save_settings(self.settings, self.path)
