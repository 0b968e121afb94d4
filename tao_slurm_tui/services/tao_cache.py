"""NVIDIA's TAO data on this workstation: the pinned ``nvidia-tao-core`` wheel, verified and
extracted into the user cache, with the catalogue index built from it.

The wheel comes from the URL in ``tao_pins.json`` on first use, or from a local copy for sites
without internet (``TAO_SLURM_TUI_TAO_WHEEL`` or the config's ``tao_wheel``: the wheel file or a
directory holding it). Either way its SHA-256 must be the pinned one. Only the data the product
reads is extracted: ``nvidia_tao_core/config/**`` (the schemas), the network configs
(``microservices/handlers/network_configs/*.json``), ``docker_images.py`` and ``constants.py``
(read as data, never imported) and the licence.

Layout under ``<user cache>/tao-slurm-tui/tao/`` (directories 0700, files 0600)::

    7.3.0-<sha256[:16]>/   manifest.json  (format, version, wheel sha256, every file's sha256)
                           index.json     (the catalogue: what `tao networks` reads)
                           nvidia_tao_core/...

A release directory is built under a temporary name and renamed into place, so it is complete
or absent. Opening one checks it is a real directory of ours (no symlink anywhere: files are
opened with ``O_NOFOLLOW``) and that ``index.json`` has the hash the manifest records; every
file of NVIDIA's is checked against its hash again when it is read. Anything else is a corrupt
cache: it is removed and built again.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import http.client
import importlib.resources
import io
import json
import os
import secrets
import shutil
import stat
import time
import urllib.request
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from tao_slurm_tui.config import cache_dir
from tao_slurm_tui.core.tao.catalog import Catalog, CatalogSources, build_catalog, schema_root
from tao_slurm_tui.core.tao.pins import TaoPins, VersionPin, parse_pins
from tao_slurm_tui.core.tao.pydata import NotALiteral, class_names, module_literals
from tao_slurm_tui.errors import BadInput, OperationFailed

WHEEL_ENV = "TAO_SLURM_TUI_TAO_WHEEL"
"""Environment variable naming a local ``nvidia-tao-core`` wheel (or its directory)."""

INDEX_FORMAT = 1
"""Version of ``index.json``'s layout; a cache of another format gets a new index."""

PKG = "nvidia_tao_core"
CONFIG_DIR = f"{PKG}/config/"
NETWORK_CONFIGS = f"{PKG}/microservices/handlers/network_configs/"
DOCKER_IMAGES = f"{PKG}/microservices/handlers/docker_images.py"
CONSTANTS = f"{PKG}/microservices/constants.py"

STALE_SECONDS = 3600.0
"""A temporary build directory older than this was left by a process that died."""

Downloader = Callable[[str, int], bytes]
"""``download(url, max_bytes)`` → the body; raises OSError (``URLError``) on failure."""


class CacheCorrupt(Exception):
    """The cache directory is not what this product wrote (partial, changed, a symlink)."""


@functools.cache
def load_pins() -> TaoPins:
    """The packaged ``tao_pins.json``."""
    text = importlib.resources.files("tao_slurm_tui").joinpath("tao_pins.json").read_text("utf-8")
    return parse_pins(json.loads(text))


def default_cache_root() -> Path:
    """``<user cache dir>/tao``."""
    return cache_dir() / "tao"


def wheel_setting(configured: str = "", environ: Mapping[str, str] | None = None) -> str:
    """Where a local wheel is: ``TAO_SLURM_TUI_TAO_WHEEL`` if set, else the config's."""
    env = os.environ if environ is None else environ
    return env.get(WHEEL_ENV, "").strip() or configured.strip()


# ------------------------------------------------------------------------------ obtaining


def _how_offline(version: str, pin: VersionPin) -> str:
    return (
        f"on a workstation without internet, fetch {pin.wheel.name} elsewhere (pip download "
        f"--no-deps nvidia-tao-core=={version}), copy it here and point {WHEEL_ENV} (or "
        "tao_wheel in the config file) at it"
    )


def download(url: str, max_bytes: int) -> bytes:
    """GET ``url`` (proxies from the environment, 60 s timeout), at most ``max_bytes`` bytes.

    Raises:
        OSError: the request failed or the body is larger than ``max_bytes``.
    """
    request = urllib.request.Request(url, headers={"User-Agent": "tao-slurm-tui"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            body = bytes(response.read(max_bytes + 1))
    except http.client.HTTPException as exc:  # a connection cut mid-body
        raise OSError(f"the connection broke ({type(exc).__name__})") from None
    if len(body) > max_bytes:
        raise OSError(f"the file is larger than the pinned {max_bytes} bytes")
    return body


def _verify(data: bytes, version: str, pin: VersionPin, origin: str) -> bytes:
    digest = hashlib.sha256(data).hexdigest()
    if digest != pin.wheel.sha256:
        raise OperationFailed(
            f"{origin} is not the pinned nvidia-tao-core {version} wheel (its SHA-256 is "
            f"{digest[:16]}..., not {pin.wheel.sha256[:16]}...); "
            f"{_how_offline(version, pin)}."
        )
    return data


def obtain_wheel(
    version: str, pin: VersionPin, source: str = "", fetch: Downloader = download
) -> bytes:
    """The pinned wheel's bytes, from the local ``source`` (a file or a directory holding it)
    when given, else downloaded; its SHA-256 checked.

    Raises:
        BadInput: ``source`` names nothing.
        OperationFailed: no wheel (download failed, not in the directory) or the wrong one.
    """
    if source:
        path = Path(source).expanduser()
        if path.is_dir():
            path = path / pin.wheel.name
            if not path.is_file():
                raise OperationFailed(
                    f"{path.parent} (from {WHEEL_ENV} or tao_wheel) holds no {pin.wheel.name}; "
                    f"copy it there (pip download --no-deps nvidia-tao-core=={version})."
                )
        elif not path.exists():
            raise BadInput(
                f"{path} (from {WHEEL_ENV} or tao_wheel) does not exist; point it at "
                f"{pin.wheel.name} or a directory holding it."
            )
        try:
            return _verify(path.read_bytes(), version, pin, str(path))
        except OSError as exc:
            raise OperationFailed(f"cannot read {path}: {exc.strerror or exc}.") from None
    try:
        data = fetch(pin.wheel.url, pin.wheel.size)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise OperationFailed(
            f"could not download nvidia-tao-core {version} ({reason}); "
            f"{_how_offline(version, pin)}."
        ) from None
    return _verify(data, version, pin, f"the download of {pin.wheel.url}")


def ensure_wheel_file(directory: Path, version: str = "", fetch: Downloader = download) -> Path:
    """The pinned wheel as a file in ``directory`` (downloaded once, checked every time).

    For a site's offline directory and for the test suite's shared copy.

    Raises:
        OperationFailed: it cannot be downloaded or written.
    """
    name, pin = load_pins().pin(version)
    path = directory / pin.wheel.name
    if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == pin.wheel.sha256:
        return path
    data = obtain_wheel(name, pin, fetch=fetch)
    _mkdir_private(directory)
    tmp = directory / f".{pin.wheel.name}.{secrets.token_hex(4)}.tmp"
    _write_new(tmp, data)
    os.replace(tmp, path)
    return path


# ------------------------------------------------------------------------------ files


def _mkdir_private(path: Path) -> None:
    """``path`` as a real directory, mode 0700 (a symlink in its place is removed)."""
    with contextlib.suppress(FileNotFoundError):
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            os.unlink(path)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700, follow_symlinks=False)


def _write_new(path: Path, data: bytes) -> None:
    # No fsync: every file is checked against its hash when it is read, so a file a crash
    # left short is a corrupt cache, rebuilt; 230 fsyncs made the first use seconds slower.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _read_nofollow(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise CacheCorrupt(f"{path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _selected(name: str) -> bool:
    if name.endswith("/"):
        return False
    return (
        (name.startswith(CONFIG_DIR) and name.endswith(".py"))
        or (name.startswith(NETWORK_CONFIGS) and name.endswith(".json"))
        or name in (f"{PKG}/__init__.py", DOCKER_IMAGES, CONSTANTS)
        or (".dist-info/licenses/" in name or name.endswith(".dist-info/LICENSE"))
    )


def _safe_member(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or "\\" in name or not path.parts:
        raise OperationFailed(f"the nvidia-tao-core wheel holds an unsafe path {name!r}.")
    return path


def _remove(path: Path) -> None:
    """Remove ``path`` (a directory tree, a file or a symlink) without following links."""
    with contextlib.suppress(FileNotFoundError):
        if path.is_symlink() or not path.is_dir():
            path.unlink()
            return
        # Renamed first, so a concurrent reader never sees a half-removed release.
        trash = path.with_name(f".trash-{path.name}-{secrets.token_hex(4)}")
        os.rename(path, trash)
        shutil.rmtree(trash, ignore_errors=True)


# ------------------------------------------------------------------------------ release


@dataclass(frozen=True)
class Release:
    """One TAO version, extracted and verified in the cache."""

    version: str
    """The TAO version."""
    root: Path
    """Its directory in the cache."""
    files: Mapping[str, str]
    """Relative path → SHA-256 of every file taken from the wheel."""
    catalog: Catalog
    """The catalogue index."""

    def has(self, rel: str) -> bool:
        """True when the wheel's file ``rel`` was extracted."""
        return rel in self.files

    def read(self, rel: str) -> bytes:
        """The bytes of ``rel``, checked against the hash recorded when it was extracted.

        Raises:
            CacheCorrupt: missing, a symlink, or changed since.
        """
        expected = self.files.get(rel)
        if expected is None:
            raise CacheCorrupt(f"{rel} is not part of the release")
        data = _read_nofollow(self.root / rel)
        if hashlib.sha256(data).hexdigest() != expected:
            raise CacheCorrupt(f"{self.root / rel} changed since it was extracted")
        return data


def _sources(read: Callable[[str], bytes], files: Mapping[str, str]) -> CatalogSources:
    entries = {}
    roots = {}
    for rel in sorted(files):
        if rel.startswith(NETWORK_CONFIGS) and rel.endswith(".config.json"):
            name = rel[len(NETWORK_CONFIGS) : -len(".config.json")]
            entries[name] = json.loads(read(rel))
        parts = rel.split("/")
        if rel.startswith(CONFIG_DIR) and len(parts) == 4 and parts[3] == "default_config.py":
            root = schema_root(class_names(read(rel).decode("utf-8")))
            if root:
                roots[parts[2]] = root
    constants = module_literals(
        read(CONSTANTS).decode("utf-8"), ["NETWORK_CONTAINER_MAPPING", "_DATA_SERVICES_ACTIONS"]
    )
    docker = module_literals(read(DOCKER_IMAGES).decode("utf-8"), ["DOCKER_IMAGE_VERSION"])
    mapping = constants.get("NETWORK_CONTAINER_MAPPING") or {}
    services = constants.get("_DATA_SERVICES_ACTIONS") or set()
    versions = docker.get("DOCKER_IMAGE_VERSION") or {}
    assert isinstance(mapping, dict) and isinstance(services, set) and isinstance(versions, dict)
    return CatalogSources(
        entries=entries,
        schema_roots=roots,
        container_mapping={str(k): str(v) for k, v in mapping.items()},
        data_services_actions=frozenset(str(a) for a in services),
        image_versions={str(k): tuple(str(x) for x in v) for k, v in versions.items()},
    )


def build_index(
    version: str, pin: VersionPin, read: Callable[[str], bytes], files: Mapping[str, str]
) -> Catalog:
    """The catalogue from an extracted release's files.

    Raises:
        OperationFailed: NVIDIA's files are not in the shape this product reads.
    """
    try:
        return build_catalog(version, pin, _sources(read, files))
    except (KeyError, ValueError, SyntaxError, NotALiteral, AssertionError) as exc:
        raise OperationFailed(
            f"nvidia-tao-core {version}'s catalogue files are not in the shape this "
            f"tao-slurm-tui reads ({type(exc).__name__}: {exc}); report this as a bug."
        ) from None


def _write_index(directory: Path, version: str, pin: VersionPin, files: Mapping[str, str]) -> None:
    def read(rel: str) -> bytes:
        data = _read_nofollow(directory / rel)
        if hashlib.sha256(data).hexdigest() != files[rel]:
            raise CacheCorrupt(f"{directory / rel} changed since it was extracted")
        return data

    catalog = build_index(version, pin, read, files)
    index = catalog.model_dump_json(indent=1).encode("utf-8")
    manifest = {
        "format": INDEX_FORMAT,
        "version": version,
        "wheel_sha256": pin.wheel.sha256,
        "index_sha256": hashlib.sha256(index).hexdigest(),
        "files": dict(files),
    }
    for name, data in (
        ("index.json", index),
        ("manifest.json", json.dumps(manifest, indent=1, sort_keys=True).encode("utf-8")),
    ):
        tmp = directory / f".{name}.{secrets.token_hex(4)}.tmp"
        _write_new(tmp, data)
        os.replace(tmp, directory / name)


def _extract(root: Path, final: Path, version: str, pin: VersionPin, wheel: bytes) -> None:
    _mkdir_private(root)
    now = time.time()
    for old in root.glob(".tmp-*"):
        with contextlib.suppress(OSError):
            if now - os.lstat(old).st_mtime > STALE_SECONDS:
                _remove(old)
    tmp = root / f".tmp-{version}-{secrets.token_hex(4)}"
    tmp.mkdir(mode=0o700)
    try:
        files: dict[str, str] = {}
        with zipfile.ZipFile(io.BytesIO(wheel)) as archive:
            for info in archive.infolist():
                if not _selected(info.filename):
                    continue
                rel = _safe_member(info.filename)
                data = archive.read(info)
                target = tmp.joinpath(*rel.parts)
                for parent in reversed(target.relative_to(tmp).parents[:-1]):
                    with contextlib.suppress(FileExistsError):
                        (tmp / parent).mkdir(mode=0o700)
                _write_new(target, data)
                files[str(rel)] = hashlib.sha256(data).hexdigest()
        if CONSTANTS not in files or DOCKER_IMAGES not in files:
            raise OperationFailed(
                f"the nvidia-tao-core {version} wheel lacks {CONSTANTS} or {DOCKER_IMAGES}; "
                "report this as a bug."
            )
        _write_index(tmp, version, pin, files)
        try:
            os.rename(tmp, final)
        except OSError:
            if not final.is_dir():
                raise
            # Another process finished the same release first: theirs is as good as ours.
    finally:
        _remove(tmp)


def _open(final: Path, version: str, pin: VersionPin) -> Release:
    try:
        st = os.lstat(final)
    except FileNotFoundError:
        raise CacheCorrupt(f"{final} does not exist") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise CacheCorrupt(f"{final} is not a directory of this user")
    try:
        manifest = json.loads(_read_nofollow(final / "manifest.json"))
        files = {str(k): str(v) for k, v in manifest["files"].items()}
        if manifest["version"] != version or manifest["wheel_sha256"] != pin.wheel.sha256:
            raise CacheCorrupt(f"{final} holds another release")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CacheCorrupt(f"{final}/manifest.json is unreadable: {exc}") from None
    if manifest.get("format") != INDEX_FORMAT:
        _write_index(final, version, pin, files)  # an older tao-slurm-tui's index
        return _open(final, version, pin)
    index = _read_nofollow(final / "index.json")
    if hashlib.sha256(index).hexdigest() != manifest.get("index_sha256"):
        raise CacheCorrupt(f"{final}/index.json changed since it was written")
    try:
        catalog = Catalog.model_validate_json(index)
    except ValueError as exc:
        raise CacheCorrupt(f"{final}/index.json is unreadable: {exc}") from None
    return Release(version=version, root=final, files=files, catalog=catalog)


@contextlib.contextmanager
def _building(root: Path) -> Iterator[None]:
    """Hold the cache's build lock (``root/.build.lock``, an flock)."""
    fd = os.open(root / ".build.lock", os.O_WRONLY | os.O_CREAT, 0o600)
    with open(fd, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def open_release(
    version: str = "",
    *,
    wheel: str = "",
    cache_root: Path | None = None,
    fetch: Downloader = download,
    rebuild: bool = False,
) -> Release:
    """The release of TAO ``version`` (empty: the newest known), from the cache, or extracted
    from the wheel (``wheel``: a local copy; else downloaded) on first use, when the cached one
    is corrupt, or when ``rebuild`` says a file of it was found changed.

    Raises:
        BadInput: an unknown version, or a local wheel path that names nothing.
        OperationFailed: the wheel cannot be obtained or the cache cannot be written.
    """
    name, pin = load_pins().pin(version)
    root = cache_root or default_cache_root()
    final = root / f"{name}-{pin.wheel.sha256[:16]}"
    if not rebuild:
        try:
            return _open(final, name, pin)
        except CacheCorrupt:
            pass
    try:
        # One builder at a time (threads and processes): a second one waited for the first
        # and finds its release; it never removes a release another is reading.
        _mkdir_private(root)
        with _building(root):
            if not rebuild:
                with contextlib.suppress(CacheCorrupt):
                    return _open(final, name, pin)
            data = obtain_wheel(name, pin, wheel, fetch)
            _remove(final)
            _extract(root, final, name, pin, data)
            return _open(final, name, pin)
    except CacheCorrupt as exc:
        raise OperationFailed(f"the TAO cache at {root} cannot be used ({exc}).") from None
    except OSError as exc:
        raise OperationFailed(
            f"cannot write the TAO cache at {root} ({exc.strerror or exc}); free some space "
            "or fix the directory's permissions."
        ) from None
