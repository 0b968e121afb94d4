"""The TAO versions this product knows: ``tao_slurm_tui/tao_pins.json`` as typed values.

One file pins everything a TAO version needs: the ``nvidia-tao-core`` wheel (url, sha256,
size), the container image per container kind, and the few actions whose container script loads
another spec class than the network's ``ExperimentConfig``. The sandbox's TAO stand-in image
reads the same file, so the product and the container use the same wheel. Reading the file is
the services' job; this module only says what it holds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tao_slurm_tui.errors import BadInput

VERSION_RE = re.compile(r"^[0-9]+(?:\.[0-9]+){1,3}\Z")
"""A TAO version as the pins spell it: ``7.3.0``."""


def version_key(version: str) -> tuple[int, ...]:
    """``"7.10.0"`` → ``(7, 10, 0)``: versions compare as numbers, not text."""
    return tuple(int(part) for part in version.split("."))


class WheelPin(BaseModel):
    """One wheel file, pinned by content."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9_.+-]+\.whl$")
    """File name of the wheel (what a site copies to its offline directory)."""
    url: str = Field(pattern=r"^https://")
    """Where it is downloaded from on first use."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """Its SHA-256: nothing else is ever read or run."""
    size: int = Field(gt=0)
    """Its size in bytes (a download that grows past it is stopped)."""


class VersionPin(BaseModel):
    """What the product knows about one TAO version."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    wheel: WheelPin
    """The ``nvidia-tao-core`` wheel of this version."""
    images: dict[str, str]
    """Container kind (``TAO_PYTORCH``, ``TAO_DEPLOY``, ``TAO_DS`` ...) → image of this version."""
    action_schemas: dict[str, dict[str, str]] = Field(default_factory=dict)
    """network → action → ``module:Class`` under ``nvidia_tao_core/config/<network>/`` for an
    action whose container script loads that class instead of the network's root schema."""


class TaoPins(BaseModel):
    """The whole pins file."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    default: str
    """The version used when a profile does not pin one: the newest the product knows."""
    versions: dict[str, VersionPin]
    """Every known version."""

    @field_validator("versions")
    @classmethod
    def _version_names(cls, value: dict[str, VersionPin]) -> dict[str, VersionPin]:
        for name in value:
            if not VERSION_RE.match(name):
                raise ValueError(f"{name!r} is not a version like 7.3.0")
        return value

    def pin(self, version: str = "") -> tuple[str, VersionPin]:
        """The pin of ``version`` (empty: the default) as ``(version, pin)``.

        Raises:
            BadInput: a version this product does not know.
        """
        name = version or self.default
        found = self.versions.get(name)
        if found is None:
            known = ", ".join(sorted(self.versions, key=version_key))
            raise BadInput(
                f"TAO {name} is not a version this tao-slurm-tui knows (known: {known}); set the "
                "profile's tao_version to one of them, or leave it empty for the newest."
            )
        return name, found

    @property
    def newest(self) -> str:
        """The highest version in the file."""
        return max(self.versions, key=version_key)


def parse_pins(data: Mapping[str, Any]) -> TaoPins:
    """Validate the pins file's content.

    Raises:
        ValueError: the packaged file is malformed (a bug in this product, not user input).
    """
    try:
        pins = TaoPins.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"tao_pins.json is malformed: {exc}") from None
    if pins.default not in pins.versions:
        raise ValueError(f"tao_pins.json: default {pins.default!r} is not among its versions")
    return pins
