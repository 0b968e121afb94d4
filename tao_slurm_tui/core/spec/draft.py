"""A spec as the user wrote it: the composer's form or a ``SPEC.toml``, possibly invalid.

A :class:`SpecDraft` is a table (what ``tomllib`` or the form gives) plus where it came from:
the name sentences use for it and the directory relative paths in it are read from. Reading a
file can fail only on the file itself (missing, binary, not TOML, nested too deeply); whether
the table is a valid spec is :func:`tao_slurm_tui.core.spec.resolve`'s question.

Reading a file is the one piece of I/O here (``from_file``, :func:`read_spec_text`), at the edge
where a front hands a path in; nothing else in :mod:`tao_slurm_tui.core.spec` touches a file.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.spec.model import DEFAULT_IMAGE, TIMEOUT_FRACTION
from tao_slurm_tui.errors import BadInput

MAX_DEPTH = 64
"""Deepest nesting of tables and arrays a spec may have (a TAO experiment spec needs a few);
deeper documents are refused before anything walks them recursively."""


@dataclass(frozen=True)
class SpecDraft:
    """What the form or a TOML file holds, not yet checked."""

    table: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """The spec's keys as written (unknown keys included: resolving names them)."""
    source: str = "spec"
    """How a sentence about it names it: the file's path, or ``spec``."""
    base_dir: Path | None = None
    """The directory relative paths in the spec are read from (a spec file's directory; for
    the ``[tao]`` table's ``spec_file``); None: the current directory."""

    def asks_for_gpu_type(self) -> bool:
        """Whether the job or one of its ``[[then]]`` steps names a GPU type: only then has
        the GPU-type rule anything to judge, so only then need a front fetch the capacity."""
        steps = self.table.get("then")
        tables = [self.table, *(steps if isinstance(steps, list) else [])]
        return any(isinstance(t, Mapping) and t.get("gpu_type") for t in tables)

    @classmethod
    def from_text(
        cls, text: str, *, source: str = "spec", base_dir: Path | None = None
    ) -> SpecDraft:
        """Parse TOML text.

        Raises:
            BadInput: not TOML, or nested too deeply to read.
        """
        try:
            table = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise BadInput(
                f"{source}: not valid TOML ({exc}); fix the file and try again."
            ) from None
        except RecursionError:
            raise BadInput(too_deep(source)) from None
        if _depth(table) > MAX_DEPTH:
            raise BadInput(too_deep(source))
        return cls(table, source, base_dir)

    @classmethod
    def from_file(cls, path: str | Path) -> SpecDraft:
        """Read a ``SPEC.toml`` file (relative paths in it are then read from its directory).

        Raises:
            BadInput: missing, a directory, unreadable, not UTF-8 text, not TOML, or nested too
                deeply (one sentence naming the file).
        """
        file = Path(path)
        return cls.from_text(read_spec_text(file), source=str(file), base_dir=file.parent)


def too_deep(source: str) -> str:
    """The sentence for a TOML document nested too deeply to read (arrays in arrays ...)."""
    return (
        f"{source}: the TOML is nested too deeply to read (more than {MAX_DEPTH} arrays or "
        "tables inside each other); a spec needs only a few levels, so fix the file."
    )


def read_spec_text(path: str | Path) -> str:
    """The text of a local spec file (a ``SPEC.toml``, or the YAML experiment spec a ``[tao]``
    table names).

    Raises:
        BadInput: missing, a directory, unreadable, or not UTF-8 text (a binary file).
    """
    file = Path(path)
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise BadInput(f"{file}: no such spec file; check the path.") from None
    except IsADirectoryError:
        raise BadInput(f"{file}: is a directory, not a spec file.") from None
    except OSError as exc:
        raise BadInput(f"{file}: cannot read the spec file ({exc.strerror}).") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{file}: the spec file is not UTF-8 text.") from None


def _depth(tree: Any) -> int:
    """Nesting depth of tables and arrays, walked without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(tree, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, Mapping):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, level + 1)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


# ----------------------------------------------------------------------------------- profile


PROFILE_DEFAULTS = ("time_hours", "timeout_hours", "use_requeue", "container_mounts")
"""Spec fields whose default comes from the profile (and so from ``SLURM_TIME_HOURS``,
``SLURM_TIMEOUT_HOURS``, ``SLURM_USE_REQUEUE``; the mounts from its results root) when the
spec leaves them out."""


def with_profile_defaults(table: Mapping[str, Any], profile: Profile) -> dict[str, Any]:
    """``table`` with the profile's wall time, timeout and requeue for the keys it leaves out.

    A spec that sets ``time_hours`` alone keeps the derived timeout (:data:`TIMEOUT_FRACTION`);
    a profile whose timeout is not below its wall time gets the derived one too.
    """
    out = dict(table)
    out.setdefault("use_requeue", profile.use_requeue)
    out.setdefault("container_mounts", profile.default_mounts)
    if "time_hours" not in out:
        out["time_hours"] = profile.time_hours
        if "timeout_hours" not in out:
            out["timeout_hours"] = (
                profile.timeout_hours
                if profile.timeout_hours < profile.time_hours
                else round(profile.time_hours * TIMEOUT_FRACTION, 4)
            )
    return out


def default_spec(profile: Profile, *, name: str = "") -> dict[str, Any]:
    """A new job with the profile's defaults (the composer's empty form)."""
    return {
        "name": name,
        "image": DEFAULT_IMAGE,
        "command": "",
        "num_nodes": 1,
        "num_gpus": 4,
        "cpus_per_task": 16,
        "time_hours": profile.time_hours,
        "timeout_hours": profile.timeout_hours,
        "partition": profile.partitions[0] if profile.partitions else "",
        "account": profile.account,
        "container_mounts": profile.default_mounts,
        "use_requeue": profile.use_requeue,
        "use_sqsh": True,
        "inputs": [],
        "env": {},
        "specs": {},
    }
