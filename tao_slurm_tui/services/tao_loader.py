"""Build a network's schema by running NVIDIA's config dataclasses from the verified cache.

``nvidia_tao_core/config/<network>/default_config.py`` and the modules it imports are plain
dataclass definitions (``dataclasses``, ``typing``, ``omegaconf``). They are executed through a
finder of our own on ``sys.meta_path`` that serves only the ``nvidia_tao_core`` package of one
cached release: each module's bytes are read with ``O_NOFOLLOW``, checked against the SHA-256
recorded when the pinned wheel was extracted, compiled and executed — no ``.pyc`` is written or
read, so nothing but the hash-checked source ever runs. A module outside the extracted config
tree (``microservices``, Flask ...) is not found: an import of one fails instead of reaching
for whatever is installed (the finder answers for the whole ``nvidia_tao_core`` name).

The modules stay in ``sys.modules`` under their own names, as NVIDIA's absolute imports need;
switching to another TAO version unloads the first one's modules first.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
import types
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from tao_slurm_tui.core.tao.catalog import Catalog
from tao_slurm_tui.core.tao.schema import TaoSchema
from tao_slurm_tui.errors import OperationFailed
from tao_slurm_tui.services.tao_cache import PKG, CacheCorrupt, Release

_LOCK = threading.RLock()
_loaded: Release | None = None
_schemas: dict[tuple[str, str], TaoSchema] = {}


class _VerifiedLoader(importlib.abc.Loader):
    def __init__(self, release: Release, rel: str) -> None:
        self.release = release
        self.rel = rel

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        source = self.release.read(self.rel)
        origin = str(self.release.root / self.rel)
        code = compile(source, origin, "exec", dont_inherit=True)
        exec(code, module.__dict__)


class _VerifiedFinder(importlib.abc.MetaPathFinder):
    """Serves ``nvidia_tao_core`` and its submodules from one release, nothing else."""

    def __init__(self, release: Release) -> None:
        self.release = release

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != PKG and not fullname.startswith(PKG + "."):
            return None
        rel = fullname.replace(".", "/")
        if fullname != PKG and not fullname.startswith(f"{PKG}.config"):
            # Only the schemas run; microservices code (even the two tables read as data) is
            # never imported, and no other finder may look for it either.
            raise ModuleNotFoundError(f"{fullname} is not part of the schemas", name=fullname)
        root = self.release.root
        if self.release.has(f"{rel}/__init__.py"):
            init = f"{rel}/__init__.py"
            spec = importlib.machinery.ModuleSpec(
                fullname,
                _VerifiedLoader(self.release, init),
                origin=str(root / init),
                is_package=True,
            )
            spec.submodule_search_locations = [str(root / rel)]
        elif self.release.has(f"{rel}.py"):
            spec = importlib.machinery.ModuleSpec(
                fullname, _VerifiedLoader(self.release, f"{rel}.py"), origin=str(root / f"{rel}.py")
            )
        else:
            raise ModuleNotFoundError(f"{fullname} is not in the verified release", name=fullname)
        spec.has_location = spec.origin is not None
        return spec


def _unload() -> None:
    for name in [n for n in sys.modules if n == PKG or n.startswith(PKG + ".")]:
        del sys.modules[name]
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _VerifiedFinder)]


def _forget() -> None:
    global _loaded
    _unload()
    _schemas.clear()
    _loaded = None


def _activate(release: Release) -> None:
    """Make ``nvidia_tao_core`` importable from ``release`` (and only from it)."""
    global _loaded
    if _loaded is not None and _loaded.root == release.root:
        return
    present = sys.modules.get(PKG)
    if present is not None and _loaded is None:
        raise OperationFailed(
            f"another {PKG} is already imported in this Python process "
            f"({getattr(present, '__file__', None) or 'unknown location'}); run tao-slurm-tui "
            "in its own environment."
        )
    _unload()
    sys.meta_path.insert(0, _VerifiedFinder(release))
    _loaded = release


def _structured(release: Release, module: str, class_name: str) -> DictConfig:
    try:
        loaded = importlib.import_module(f"{PKG}.config.{module}")
        cls = getattr(loaded, class_name)
        config = OmegaConf.structured(cls)
    except CacheCorrupt:
        raise
    except Exception as exc:  # NVIDIA's code: any failure is reported, never a traceback
        raise OperationFailed(
            f"nvidia-tao-core {release.version}'s schema {module}:{class_name} cannot be built "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); "
            "report this as a bug."
        ) from None
    if not isinstance(config, DictConfig):
        raise OperationFailed(f"{module}:{class_name} is not a table of settings.")
    return config


def loaded_schema(release: Release, network: str) -> TaoSchema | None:
    """The schema of ``network`` if this process built it already (never builds it)."""
    with _LOCK:
        return _schemas.get((str(release.root), network))


def load_schema(release: Release, network: str) -> TaoSchema:
    """The schema of ``network`` in ``release`` (built once per process).

    Raises:
        BadInput: not a network of the release (with the nearest names).
        CacheCorrupt: a module changed since it was extracted (the caller rebuilds the cache).
        OperationFailed: NVIDIA's code could not build it.
    """
    catalog: Catalog = release.catalog
    net = catalog.network(network)
    with _LOCK:
        key = (str(release.root), net.name)
        if key in _schemas:
            return _schemas[key]
        _activate(release)
        try:
            root = _structured(release, f"{net.name}.default_config", net.schema_class)
            action_roots = {}
            for action in net.actions:
                if action.schema_class:
                    module, _, cls = action.schema_class.partition(":")
                    action_roots[action.name] = _structured(release, f"{net.name}.{module}", cls)
        except CacheCorrupt:
            _forget()  # half-imported modules of a changed file must not be reused
            raise
        schema = TaoSchema(
            version=release.version, network=net, root=root, action_roots=action_roots
        )
        _schemas[key] = schema
        return schema


def loaded_from() -> Path | None:
    """The release directory whose modules are loaded (for tests and diagnostics)."""
    return _loaded.root if _loaded else None
