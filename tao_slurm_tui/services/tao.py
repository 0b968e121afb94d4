"""The TAO catalogue of a profile: one object the CLI, the composer and the submit path share.

:func:`open_tao` gives a :class:`TaoCatalogue` for a profile's TAO version and image settings.
Opening it reads only the cached index (``tao networks`` needs nothing else); the first call on a
new workstation fetches and extracts the pinned wheel (services/tao_cache.py). Schemas are built
on first use per network (services/tao_loader.py), which runs NVIDIA's config dataclasses: call
:meth:`TaoCatalogue.schema` and :meth:`TaoCatalogue.check` from a worker thread in the TUI.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tao_slurm_tui.config import Config
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.spec import read_spec_text
from tao_slurm_tui.core.spec.tao_source import SchemaNotLoaded
from tao_slurm_tui.core.tao.catalog import Catalog, ImageSettings, TaoNetwork, resolve_image
from tao_slurm_tui.services.tao_cache import (
    CacheCorrupt,
    Downloader,
    Release,
    download,
    open_release,
    wheel_setting,
)

if TYPE_CHECKING:  # omegaconf is imported only when a schema is needed
    from tao_slurm_tui.core.tao.schema import TaoSchema
    from tao_slurm_tui.core.tao.spec_check import SpecCheck


def image_settings(profile: Profile) -> ImageSettings:
    """The profile's TAO image settings."""
    return ImageSettings(registry=profile.tao_registry, overrides=dict(profile.tao_images))


@dataclass
class TaoCatalogue:
    """The TAO catalogue and schemas of one TAO version, with a site's image settings."""

    release: Release
    """The cached release (catalogue index + NVIDIA's files)."""
    images: ImageSettings
    """The profile's image settings."""
    wheel: str = ""
    """Where a local wheel is (to rebuild a corrupt cache without the network)."""
    fetch: Downloader = download
    """How the wheel is downloaded when it must be."""

    @property
    def catalog(self) -> Catalog:
        """Every network of the version."""
        return self.release.catalog

    @property
    def version(self) -> str:
        """The TAO version."""
        return self.release.version

    def network(self, name: str) -> TaoNetwork:
        """The network ``name``.

        Raises:
            BadInput: not a network (the nearest names suggested).
        """
        return self.catalog.network(name)

    def image(self, network: str, action: str) -> str:
        """The image ``network action`` runs in, for this site.

        Raises:
            BadInput: unknown network or action.
        """
        return self.catalog.image(network, action, self.images)

    def network_image(self, network: TaoNetwork) -> str:
        """The image of the network's own container kind (its TensorRT actions run elsewhere)."""
        main = next((a for a in network.actions if a.kind == network.kind), network.actions[0])
        return self.catalog.image(network.name, main.name, self.images)

    def kind_images(self) -> dict[str, str]:
        """Container kind → image for this site, for the kinds the networks use."""
        kinds = sorted({a.kind for n in self.catalog.networks for a in n.actions})
        return {k: resolve_image(self.catalog.images[k], k, self.images) for k in kinds}

    def to_json(self) -> list[dict[str, Any]]:
        """One object per network: ``network``, ``actions``, ``image`` (its container's image),
        ``container`` (the kind), ``images`` (per action) and ``tao_version``."""
        return [
            {
                "network": n.name,
                "actions": n.action_names,
                "image": self.network_image(n),
                "container": n.kind,
                "images": {a.name: self.image(n.name, a.name) for a in n.actions},
                "tao_version": self.version,
            }
            for n in self.catalog.networks
        ]

    def schema(self, network: str) -> TaoSchema:
        """The experiment-spec schema of ``network`` (built on first use, then kept).

        Raises:
            BadInput: not a network.
            OperationFailed: NVIDIA's code could not build it, or the cache cannot be rebuilt.
        """
        from tao_slurm_tui.services.tao_loader import load_schema

        try:
            return load_schema(self.release, network)
        except CacheCorrupt:
            # A file changed under us since it was extracted: extract the release again.
            self.release = open_release(
                self.version,
                wheel=self.wheel,
                cache_root=self.release.root.parent,
                fetch=self.fetch,
                rebuild=True,
            )
            return load_schema(self.release, network)

    def check(
        self,
        network: str,
        action: str,
        spec: Mapping[str, Any] | None = None,
        overrides: Mapping[str, Any] | None = None,
    ) -> SpecCheck:
        """Check a spec for ``network action`` (:func:`.spec_check.check_spec`).

        Raises:
            BadInput: unknown network or action (the spec's own problems are in the result).
        """
        from tao_slurm_tui.core.tao.spec_check import check_spec

        self.network(network).action(action)
        return check_spec(self.schema(network), action, spec, overrides)

    def loaded_schema(self, network: str) -> TaoSchema | None:
        """The schema of ``network`` if it was built already (never builds it: for the UI
        thread)."""
        from tao_slurm_tui.services.tao_loader import loaded_schema

        return loaded_schema(self.release, network)

    def read_spec(self, path: Path) -> dict[str, Any]:
        """A local YAML experiment spec as plain data (:func:`read_spec_file`)."""
        return read_spec_file(path)

    def default_spec(self, network: str, action: str) -> str:
        """The default experiment spec of ``network action`` as YAML (``tao spec``).

        Raises:
            BadInput: unknown network or action.
        """
        from tao_slurm_tui.core.tao.spec_check import default_spec_yaml

        self.network(network).action(action)
        return default_spec_yaml(self.schema(network), action)


@dataclass
class LoadedSchemasOnly:
    """A catalogue whose :meth:`schema` never builds one (the UI thread's view): a schema not
    built yet raises :class:`SchemaNotLoaded`, and a worker builds it
    (:meth:`TaoCatalogue.schema`) before the next resolve."""

    catalogue: TaoCatalogue

    @property
    def version(self) -> str:
        """The TAO version."""
        return self.catalogue.version

    @property
    def catalog(self) -> Catalog:
        """Every network of the version."""
        return self.catalogue.catalog

    def image(self, network: str, action: str) -> str:
        """The image ``network action`` runs in, for this site."""
        return self.catalogue.image(network, action)

    def schema(self, network: str) -> TaoSchema:
        """The schema of ``network``, if built.

        Raises:
            SchemaNotLoaded: it is not built yet.
        """
        found = self.catalogue.loaded_schema(network)
        if found is None:
            raise SchemaNotLoaded(network)
        return found

    def read_spec(self, path: Path) -> dict[str, Any]:
        """A local YAML experiment spec as plain data."""
        return self.catalogue.read_spec(path)


def open_tao(
    config: Config | None = None,
    profile: Profile | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cache_root: Path | None = None,
    fetch: Downloader = download,
) -> TaoCatalogue:
    """The TAO catalogue for ``profile`` (its ``tao_version`` and image settings).

    Raises:
        BadInput: the profile pins a TAO version this product does not know, or the local wheel
            setting names nothing.
        OperationFailed: no cached release and the wheel cannot be obtained (offline: the
            sentence names ``TAO_SLURM_TUI_TAO_WHEEL`` and ``tao_wheel``).
    """
    prof = profile or Profile()
    wheel = wheel_setting(config.settings.tao_wheel if config else "", environ)
    release = open_release(prof.tao_version, wheel=wheel, cache_root=cache_root, fetch=fetch)
    return TaoCatalogue(release=release, images=image_settings(prof), wheel=wheel, fetch=fetch)


def read_spec_file(path: str | Path) -> dict[str, Any]:
    """A local YAML experiment spec as plain data (read the way TAO reads it).

    Raises:
        BadInput: the file is missing, unreadable, not UTF-8, not YAML or not a mapping.
    """
    from tao_slurm_tui.core.tao.schema import parse_spec_yaml

    file = Path(path).expanduser()
    return parse_spec_yaml(read_spec_text(file), str(file))
