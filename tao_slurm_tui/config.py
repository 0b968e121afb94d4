"""Configuration files: the settings file that holds the cluster profiles, and the app's paths.

The file is TOML (``config.toml`` under the platform config dir, ``XDG_CONFIG_HOME`` honoured,
``--config PATH`` overrides). It is read with :mod:`tomllib` and written with :mod:`tomli_w`
atomically (temp file + rename, mode 0600). The profile model and the environment overrides live
in :mod:`tao_slurm_tui.core.profile`; this module only reads and writes files.

A broken file never produces a traceback: :class:`ConfigError` carries one sentence naming the
file, the key and what is wrong, and the file is left untouched.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import tempfile
import tomllib
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any, Literal

import platformdirs
import tomli_w
import tomlkit
import tomlkit.exceptions
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tao_slurm_tui.core.profile import NAME_RE, Profile, apply_env
from tao_slurm_tui.errors import ConfigError

__all__ = ["APP_NAME", "Config", "ConfigError", "NotifySettings", "Profile", "Settings"]

APP_NAME = "tao-slurm-tui"


class NotifySettings(BaseModel):
    """Desktop notifications: which job events, and how they reach the desktop."""

    model_config = ConfigDict(extra="forbid")

    enabled: Literal["auto", "always", "never"] = "auto"
    """``auto``: on, except under CI (``CI=true``); ``always``; ``never``."""
    via: Literal["auto", "osc9", "osc777", "osc99", "notify-send"] = "auto"
    """How: the terminal's own escape sequence (OSC 9, OSC 777 or kitty's OSC 99, passed
    through tmux), or ``notify-send`` on a desktop session; ``auto`` picks by the terminal
    (kitty, iTerm2, WezTerm, foot, ...) and falls back to ``notify-send`` on a local desktop,
    else OSC 9."""
    started: bool = True
    """A job started running."""
    finished: bool = True
    """A job ended and TAO says it completed."""
    failed: bool = True
    """A job ended in an error (and is not retried)."""
    canceled: bool = False
    """A job was canceled (off: mostly you did it yourself)."""
    retried: bool = True
    """A job failed on the infrastructure and was submitted again."""
    walltime: bool = True
    """A running job's wall time runs out in :attr:`walltime_minutes`."""
    walltime_minutes: float = Field(default=15.0, gt=0)
    """How long before the wall time runs out to say so (jobs with a shorter limit are not
    warned)."""


class Settings(BaseModel):
    """The whole config file."""

    model_config = ConfigDict(extra="forbid")

    default_profile: str = ""
    """Profile used when ``--profile`` is not given."""
    poll_interval: float = Field(default=2.0, ge=2.0)
    """Seconds between queue polls (at least 2). A poll reads the jobs' run events on the login
    host; slurmctld is asked at its own pace (core/pace.py), not on every poll."""
    theme: str = "tao-dark"
    """Textual theme name."""
    show_finished: bool = True
    """The queue shows finished jobs (``f`` toggles it; kept for the next start)."""
    queue_sort: str = ""
    """The queue's sort (``s``, ``S``; kept for the next start): a column key, with ``-``
    before it for the other way round; empty: submitted, newest first."""
    keys: dict[str, str] = Field(default_factory=dict)
    """Binding id → key(s), e.g. ``"queue.cancel" = "x"``; remaps the app's bindings."""
    profiles: dict[str, Profile] = Field(default_factory=dict)
    """Named cluster profiles."""
    gpu_idle_minutes: float = Field(default=30.0, ge=0)
    """Flag a running job in the queue when every GPU of it stayed under 5 % utilisation this
    many minutes (the running jobs are sampled now and then with one ``srun --overlap`` each;
    0: never)."""
    gpu_refresh: float = Field(default=15.0, ge=5.0)
    """Seconds between GPU figures while the details pane shows a running job (at least 5)."""
    notify: NotifySettings = Field(default_factory=NotifySettings)
    """Desktop notifications when jobs start, end, fail, are retried or run out of time."""
    tao_wheel: str = ""
    """A local copy of the pinned ``nvidia-tao-core`` wheel (the file, or a directory holding
    it) for a workstation without internet (``TAO_SLURM_TUI_TAO_WHEEL`` overrides); empty:
    downloaded from PyPI on first use."""


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


STATE_DB_VARIABLE = "TAO_SLURM_TUI_STATE_DB"
"""Puts the state DB elsewhere (a local disk, when the home is on a network file system whose
locks do not reach other machines)."""


def state_db_path(environ: Mapping[str, str] | None = None) -> Path:
    """Path of the SQLite state database: ``$TAO_SLURM_TUI_STATE_DB``, or ``state.db`` in the
    data dir."""
    override = (os.environ if environ is None else environ).get(STATE_DB_VARIABLE, "")
    if override.strip():
        return Path(override).expanduser()
    return data_dir() / "state.db"


RUNTIME_DIR_VARIABLE = "TAO_SLURM_TUI_RUNTIME_DIR"
"""Overrides :func:`runtime_dir` (tests; a site whose runtime dir is on a file system without
sockets)."""


def runtime_dir() -> Path:
    """Per-user runtime files: the sockets of shared connections (``docs/MFA.md``).

    ``$XDG_RUNTIME_DIR/tao-slurm-tui`` on Linux (a tmpfs only the user can enter, emptied at
    logout), ``~/Library/Caches/TemporaryItems/tao-slurm-tui`` on macOS. Where there is no such
    dir (no login session: a container, ``su``), or its path is too long for a socket address
    (about 100 bytes), ``<tmp>/tao-slurm-tui-<uid>``; the caller checks that it is the user's
    own and closed to others.
    """
    override = os.environ.get(RUNTIME_DIR_VARIABLE)
    if override:
        return Path(override)
    path = Path(platformdirs.user_runtime_dir(APP_NAME, appauthor=False))
    if not path.parent.is_dir() or len(os.fsencode(path)) > 60:
        path = Path(tempfile.gettempdir()) / f"{APP_NAME}-{os.getuid()}"
    return path


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
    except RecursionError:
        raise ConfigError(_TOO_DEEP.format(path=path)) from None
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, path)) from None
    except RecursionError:
        raise ConfigError(_TOO_DEEP.format(path=path)) from None


_TOO_DEEP = (
    "{path}: the TOML is nested too deeply to read (thousands of arrays or tables inside each "
    "other); a config needs only a few levels, so fix the file."
)


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
    """Write ``content`` to ``path`` via a temp file in the same dir + rename, with ``mode``.

    The temp file has a random name and is created exclusively (``mkstemp``: a file or a
    symlink planted under its name is never followed), gets ``mode`` before any byte is
    written, and replaces ``path`` itself (a symlink at ``path`` is replaced, not followed).
    Directories it creates are private (0700).
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
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


def create_private(path: Path) -> bool:
    """Create ``path`` empty with mode 0600 (and its directories 0700) if it does not exist;
    True when it did not. Exclusive and ``O_NOFOLLOW``: nothing planted under the name (a
    symlink) is followed; a file another process created first is left as it is."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.exists():
        return False
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, flags, 0o600))
    return True


def save_settings(settings: Settings, path: Path) -> None:
    """Write the config atomically with mode 0600, editing the file in place.

    A symlinked config (dotfiles) stays a symlink: its target is rewritten. An existing file
    keeps its comments, order and layout; only the values that changed are touched.
    """
    target = Path(os.path.realpath(path))
    data = _dump(settings)
    try:
        current = target.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        current = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the config file to update it ({exc}).") from None
    if current.strip():
        try:
            doc = tomlkit.parse(current)
        except tomlkit.exceptions.TOMLKitError:
            doc = None  # unreadable anyway (it was loaded before): written anew below
        if doc is not None:
            profile = Profile().model_dump(mode="json")
            defaults = {
                **Settings().model_dump(mode="json"),
                "profiles": dict.fromkeys(settings.profiles, profile),
            }
            _sync(doc, data, settings.model_dump(mode="json"), defaults)
            text = tomlkit.dumps(doc)
            # An edit tomlkit cannot place in this layout (dotted keys before a new table) would
            # change the meaning: then the file is written anew, correct but without comments.
            if _reads_as(text, settings):
                write_atomic(target, text.encode("utf-8"))
                return
    write_atomic(target, tomli_w.dumps(data).encode("utf-8"))


def _sync(
    table: MutableMapping[str, Any],
    data: dict[str, Any],
    full: dict[str, Any],
    defaults: dict[str, Any],
) -> None:
    """Make the TOML ``table`` hold ``data`` (the short dump), touching only what differs.

    ``full`` holds every value, ``defaults`` what a missing key means. A key at its default
    value is not added to a table that leaves it out, and stays where the file writes it out;
    a key changed back to its default goes.
    """
    for key in list(table):
        if key in data:
            continue
        if key not in full or _plain(table[key]) != full[key]:
            del table[key]
    for key, value in data.items():
        old = table.get(key)
        if isinstance(value, dict) and isinstance(old, MutableMapping):
            _sync(old, value, full.get(key) or {}, defaults.get(key) or {})
        elif old is None:
            if key not in defaults or value != defaults[key]:
                table[key] = value
        elif _plain(old) != value:
            table[key] = value


def _reads_as(text: str, settings: Settings) -> bool:
    """True when ``text`` loads as exactly ``settings``."""
    try:
        return Settings.model_validate(tomllib.loads(text)) == settings
    except (tomllib.TOMLDecodeError, ValidationError, RecursionError):
        return False


def _plain(item: Any) -> Any:
    """A tomlkit item as plain Python values."""
    return item.unwrap() if hasattr(item, "unwrap") else item


# ----------------------------------------------------------------------------------- facade


def how_to_create(name: str) -> str:
    """The one sentence on creating a profile, for every verb that lacks one."""
    return (
        f"run 'tao-slurm-tui' (no verb) to create it on the set-up screen, or in a script: "
        f"'tao-slurm-tui config set-profile {name} user=USER hostnames=LOGIN_HOST "
        "partition=PARTITION --default'."
    )


def _local_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME/USER (some containers)
        return ""


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
        self,
        requested: str | None = None,
        environ: Mapping[str, str] | None = None,
        *,
        allow_new: bool = False,
    ) -> Profile:
        """The selected profile with environment overrides applied.

        An unknown profile name is an error unless the environment alone describes a cluster
        (``SLURM_USER`` and ``SLURM_HOSTNAME`` set), as the platform's scripts expect.

        Args:
            requested: ``--profile NAME``; None: the default one.
            environ: The environment (default ``os.environ``).
            allow_new: An unknown name is a new profile to set up (the TUI's first start):
                a draft with the local user name, under the environment's overrides.

        Raises:
            ConfigError: unknown profile, or a bad environment override.
        """
        name = self.profile_name(requested)
        env = os.environ if environ is None else environ
        base = self.settings.profiles.get(name)
        if base is None:
            if allow_new:
                # What is known on day one: the local user name is the usual cluster one.
                return apply_env(Profile(user=_local_user()), env)
            if requested or (self.settings.profiles and self.settings.default_profile):
                known = ", ".join(sorted(self.settings.profiles)) or "none yet"
                raise ConfigError(
                    f"{self.path}: no profile named '{name}' (known: {known}); "
                    f"{how_to_create(name)}"
                )
            base = Profile()
        return apply_env(base, env)

    def has_profile(self, requested: str | None = None) -> bool:
        """True when the selected profile is saved in the file (not a draft)."""
        return self.profile_name(requested) in self.settings.profiles

    def upsert_profile(self, name: str, profile: Profile, *, make_default: bool = False) -> None:
        """Add or replace profile ``name`` and save the file atomically.

        Raises:
            ConfigError: ``name`` is not a valid profile name.
        """
        if not NAME_RE.match(name):
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
