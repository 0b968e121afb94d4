"""A cluster profile (the model) and the platform's environment overrides.

Pure: :mod:`tao_slurm_tui.config` reads and writes the file that holds profiles; this module only
says what a profile is. :func:`apply_env` is the one place the platform's environment variables
(``SLURM_USER``, ``SLURM_TIME_HOURS``, ...) override a profile, for every front (the caller passes
the environment in).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tao_slurm_tui.core.images import ImageError, parse_image
from tao_slurm_tui.errors import ConfigError

NAME_PATTERN = r"[A-Za-z0-9._-]{1,64}"
"""A profile name or a job id: 1-64 letters, digits, ``.``, ``_``, ``-``."""

NAME_RE = re.compile(rf"^{NAME_PATTERN}\Z")

REGISTRY_HOST_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?\Z")
""":data:`NAME_PATTERN` anchored."""

_SLURM_WORD_RE = re.compile(r"^[A-Za-z0-9._-]+\Z")

TAO_VERSION_RE = re.compile(r"^[0-9]+(?:\.[0-9]+){1,3}\Z")
"""A TAO version as a profile pins it: ``7.3.0``."""

_TAO_KIND_RE = re.compile(r"^[A-Z][A-Z0-9_]*\Z")

DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"
"""known_hosts file used when the profile does not name one."""

#: The packaged default partition list of the platform: all are 4-hour queues.
DEFAULT_PARTITIONS = "polar,polar3,polar4,grizzly"

LOGIN_FIELDS = (
    "user",
    "hostnames",
    "port",
    "ssh_key_path",
    "known_hosts",
    "use_ssh_config",
    "connect_timeout",
)
"""The fields that decide where and how a connection logs in (:meth:`Profile.logs_in_as`)."""

#: Where results go when the profile does not say (the platform's convention).
DEFAULT_RESULTS_TEMPLATE = "/lustre/fsw/portfolios/edgeai/users/{user}"


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
    forward_agent: bool = False
    """Forward the local ssh-agent to the login hosts. The tool never needs it, and a forwarded
    agent lets anything running as you (or root) on a login host use your keys, so it is off
    whatever ``ForwardAgent`` says in ``~/.ssh/config``; set it only if your own commands on
    the cluster need your keys."""
    partition: str = DEFAULT_PARTITIONS
    """Partition(s) for GPU jobs, comma separated (``SLURM_PARTITION``)."""
    account: str = ""
    """Account charged by ``#SBATCH --account`` (``SLURM_ACCOUNT``); empty: none."""
    base_results_dir: str = ""
    """Shared-filesystem root for job files and results (``SLURM_BASE_RESULTS_DIR``)."""
    container_runtime: Literal["pyxis", "none"] = "pyxis"
    """``pyxis`` runs ``srun --container-image``; ``none`` runs the command on bare metal."""
    container_mounts: list[str] | None = None
    """Pyxis mounts a job gets when its spec names none (``/lustre``, ``/src:/dst``); unset:
    ``/lustre`` when the results root is on it (the platform's shared file system), else none
    (the job's results dir is mounted anyway). A default the cluster cannot satisfy fails every
    job at its start, so it comes from here, not from the program."""
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
    tao_version: str = ""
    """TAO version whose catalogue, images and spec schemas this profile uses (``7.3.0``);
    empty: the newest this tao-slurm-tui knows (``tao networks`` shows it)."""
    tao_registry: str = ""
    """Registry, optionally with a path, that replaces ``nvcr.io`` in TAO's images for a site
    mirror (``harbor.site.edu/nvcr``); empty: pull from nvcr.io."""
    tao_images: dict[str, str] = Field(default_factory=dict)
    """TAO container kind → the image to run instead (``TAO_PYTORCH``, ``TAO_DEPLOY``, ``TAO_DS``
    as ``tao networks`` names them); in ``config set-profile`` a comma list of KIND=IMAGE."""

    @field_validator("hostnames", mode="before")
    @classmethod
    def _split_hosts(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [h.strip() for h in value.split(",") if h.strip()]
        return value

    @field_validator("container_mounts", mode="before")
    @classmethod
    def _mounts(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [m.strip() for m in value.split(",") if m.strip()]
        for mount in value if isinstance(value, list) else []:
            parts = mount.split(":") if isinstance(mount, str) else []
            if not (
                1 <= len(parts) <= 3
                and all(p.startswith("/") for p in parts[:2])
                and not any(c.isspace() or c in ",'\"$`\\" for c in mount)
            ):
                raise ValueError(
                    f"{mount!r} is not a mount: write /src or /src:/dst[:flags], absolute paths "
                    "without spaces"
                )
        return value

    @field_validator("user", "hostnames")
    @classmethod
    def _one_word(cls, value: Any) -> Any:
        # They go into commands and logins as they are: a trailing newline is a typo that
        # would break them far from here.
        for word in value if isinstance(value, list) else [value]:
            if any(c.isspace() or not c.isprintable() for c in word):
                raise ValueError(
                    f"must be one word, without spaces or control characters (got {word!r})"
                )
        return value

    @field_validator("tao_version")
    @classmethod
    def _tao_version(cls, value: str) -> str:
        value = value.strip(" ")
        if value and not TAO_VERSION_RE.match(value):
            raise ValueError(
                f"must be a TAO version like 7.3.0, or empty for the newest (got {value!r})"
            )
        return value

    @field_validator("tao_registry")
    @classmethod
    def _tao_registry(cls, value: str) -> str:
        value = value.strip(" ").rstrip("/")
        if not value:
            return value
        try:
            ref = parse_image(f"{value}/nvidia/tao/tao-toolkit:1")
        except ImageError:
            ref = None
        if ref is None or not ref.registry or "#" in value or "://" in value:
            raise ValueError(
                f"must be a registry host with an optional path, like harbor.site.edu/nvcr "
                f"(got {value!r})"
            )
        return value

    @field_validator("tao_images", mode="before")
    @classmethod
    def _tao_images(cls, value: Any) -> Any:
        if isinstance(value, str):
            pairs: dict[str, str] = {}
            for item in (p.strip() for p in value.split(",")):
                if not item:
                    continue
                kind, sep, image = item.partition("=")
                if not sep:
                    raise ValueError(
                        f"{item!r} is not KIND=IMAGE, e.g. TAO_PYTORCH=reg/tao:7.3.0-pyt"
                    )
                pairs[kind.strip()] = image.strip()
            value = pairs
        if isinstance(value, dict):
            for kind, image in value.items():
                if not isinstance(kind, str) or not _TAO_KIND_RE.match(kind):
                    raise ValueError(
                        f"{kind!r} is not a TAO container kind (TAO_PYTORCH, TAO_DEPLOY ...)"
                    )
                if not isinstance(image, str):
                    raise ValueError(f"the image for {kind} must be text")
                try:
                    parse_image(image)
                except ImageError as exc:
                    raise ValueError(f"{kind}: {exc}") from None
        return value

    @field_validator("registry_hosts", mode="before")
    @classmethod
    def _split_registry_hosts(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [h.strip() for h in value.split(",") if h.strip()]
        if isinstance(value, list):
            for host in value:
                if not isinstance(host, str) or not REGISTRY_HOST_RE.match(host):
                    raise ValueError(
                        f"{host!r} is not a registry host name; write it without scheme or port,"
                        " e.g. nvcr.io"
                    )
        return value

    # Everything below ends up in #SBATCH lines or remote paths (the job's and the SQSH
    # conversion's): refused here, before anything is written on the cluster.

    @field_validator("base_results_dir", "sqsh_cache_dir")
    @classmethod
    def _absolute_remote_path(cls, value: str) -> str:
        if value and (not value.startswith("/") or any(ord(c) < 32 for c in value)):
            raise ValueError(
                f"must be an absolute path on the cluster's shared filesystem, like "
                f"/lustre/.../{{user}} ('~' and relative paths are not expanded there; "
                f"got {value!r})"
            )
        return value

    @field_validator("account")
    @classmethod
    def _slurm_word(cls, value: str) -> str:
        if value and not _SLURM_WORD_RE.match(value):
            raise ValueError(f"must be letters, digits, '.', '_' or '-' (got {value!r})")
        return value

    @field_validator("partition", "conversion_partition")
    @classmethod
    def _partition_list(cls, value: str) -> str:
        for part in value.split(","):
            word = part.strip(" ")  # spaces around commas only: a newline is not a space here
            if word and not _SLURM_WORD_RE.match(word):
                raise ValueError(
                    f"must be partition names (letters, digits, '.', '_' or '-') separated by "
                    f"commas (got {value!r})"
                )
        return value

    @field_validator("time_hours", "timeout_hours")
    @classmethod
    def _at_least_a_minute(cls, value: float) -> float:
        if value < 1 / 60:
            raise ValueError(f"must be at least one minute (0.0167 hours; got {value:g})")
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

    @property
    def default_mounts(self) -> list[str]:
        """The mounts a job gets when its spec names none (:attr:`container_mounts`)."""
        if self.container_mounts is not None:
            return list(self.container_mounts)
        root = self.results_root
        return ["/lustre"] if root == "/lustre" or root.startswith("/lustre/") else []

    @property
    def known_hosts_path(self) -> Path:
        """The known_hosts file the host keys are checked against (``~`` expanded)."""
        return Path(self.known_hosts or DEFAULT_KNOWN_HOSTS).expanduser()

    def logs_in_as(self, other: Profile) -> bool:
        """True when a connection opened for this profile is the one ``other`` would open too
        (same login hosts, port, user, key, known_hosts, ssh_config use and connect timeout)."""
        return all(getattr(self, name) == getattr(other, name) for name in LOGIN_FIELDS)

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


def apply_env(profile: Profile, environ: Mapping[str, str]) -> Profile:
    """Return a copy of ``profile`` with the platform's environment variables applied.

    The one place environment overrides are applied (the application layer opens every
    profile through :meth:`tao_slurm_tui.config.Config.profile`, which calls this).

    Raises:
        ConfigError: a variable holds a value the field cannot take.
    """
    env = environ
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
