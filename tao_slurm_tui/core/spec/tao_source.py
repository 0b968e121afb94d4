"""What the ``[tao]`` stage knows of a TAO version: a :class:`TaoSource` (services/tao.py's
catalogue) and where the profile puts a job's files (:class:`TaoContext`).

Its own module so that the stage (tao_stage), one run (tao_run) and the pipeline's steps
(tao_steps) all name it without importing each other in a loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tao_slurm_tui.core.tao.catalog import Catalog


class SchemaNotLoaded(Exception):
    """The network's schema is not built yet (the composer builds it in a worker first)."""


class TaoSource(Protocol):
    """What the stage needs of a TAO version (services/tao.py's ``TaoCatalogue``)."""

    @property
    def version(self) -> str:
        """The TAO version."""
        ...

    @property
    def catalog(self) -> Catalog:
        """Every network of the version."""
        ...

    def image(self, network: str, action: str) -> str:
        """The image ``network action`` runs in, for this site."""
        ...

    def schema(self, network: str) -> Any:
        """The network's :class:`~tao_slurm_tui.core.tao.schema.TaoSchema`.

        Raises:
            SchemaNotLoaded: not built yet, and building it must not happen here.
        """
        ...

    def read_spec(self, path: Path) -> dict[str, Any]:
        """A local YAML experiment spec as plain data.

        Raises:
            BadInput: missing, unreadable, not YAML or not a mapping.
        """
        ...


@dataclass(frozen=True)
class TaoContext:
    """The TAO knowledge a resolve has: the version's catalogue and schemas, and where the
    profile puts a job's files (the command and the staged spec name them)."""

    source: TaoSource
    """The catalogue and schemas of the profile's TAO version."""
    results_root: str
    """The profile's ``base_results_dir``."""


__all__ = ["SchemaNotLoaded", "TaoContext", "TaoSource"]
