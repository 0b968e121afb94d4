"""Obtaining NVIDIA's data: the pinned wheel downloaded or taken from a local copy, verified,
extracted into the user cache (0700/0600, no symlinks followed), a corrupt cache rebuilt, and
NVIDIA's config modules run only from hash-checked bytes."""

from __future__ import annotations

import os
import stat
import sys
import urllib.error
from collections.abc import Callable
from pathlib import Path

import pytest

from tao_slurm_tui.errors import BadInput, OperationFailed
from tao_slurm_tui.services import tao_loader
from tao_slurm_tui.services.tao import open_tao
from tao_slurm_tui.services.tao_cache import (
    WHEEL_ENV,
    CacheCorrupt,
    default_cache_root,
    load_pins,
    open_release,
    wheel_setting,
)
from tao_slurm_tui.services.tao_loader import load_schema

VERSION = load_pins().default
PIN = load_pins().versions[VERSION]


class Fetcher:
    """A download that serves the real wheel's bytes (or fails), counting the requests."""

    def __init__(self, data: bytes | None = None, error: Exception | None = None) -> None:
        self.data = data
        self.error = error
        self.urls: list[str] = []

    def __call__(self, url: str, max_bytes: int) -> bytes:
        self.urls.append(url)
        if self.error is not None:
            raise self.error
        assert self.data is not None and len(self.data) <= max_bytes
        return self.data


@pytest.fixture
def wheel_bytes(tao_wheel: Path) -> bytes:
    return tao_wheel.read_bytes()


def _modes(root: Path) -> set[tuple[str, int]]:
    out = set()
    for path in [root, *root.rglob("*")]:
        st = os.lstat(path)
        assert not stat.S_ISLNK(st.st_mode), path
        out.add(("dir" if stat.S_ISDIR(st.st_mode) else "file", stat.S_IMODE(st.st_mode)))
    return out


def test_first_use_downloads_once_then_reads_the_cache(wheel_bytes: bytes, tmp_path: Path) -> None:
    fetch = Fetcher(wheel_bytes)
    release = open_release(cache_root=tmp_path / "tao", fetch=fetch)
    assert fetch.urls == [PIN.wheel.url]
    assert release.version == VERSION and len(release.catalog.networks) == 34
    assert release.root == tmp_path / "tao" / f"{VERSION}-{PIN.wheel.sha256[:16]}"
    assert _modes(tmp_path / "tao") == {("dir", 0o700), ("file", 0o600)}
    # Only what the product reads was extracted: no microservices code beyond the two tables.
    assert not [f for f in release.files if "/microservices/" in f and f.endswith(".py")][2:]
    again = open_release(cache_root=tmp_path / "tao", fetch=fetch)
    assert fetch.urls == [PIN.wheel.url] and again.catalog == release.catalog


def test_the_default_cache_is_under_the_user_cache_dir(
    wheel_bytes: bytes, _isolated_xdg: Path
) -> None:
    release = open_release(fetch=Fetcher(wheel_bytes))
    assert default_cache_root() == _isolated_xdg / "xdg_cache_home" / "tao-slurm-tui" / "tao"
    assert release.root.parent == default_cache_root()


def test_a_local_wheel_file_or_directory_needs_no_network(tao_wheel: Path, tmp_path: Path) -> None:
    offline = Fetcher(error=urllib.error.URLError("no route to host"))
    by_file = open_release(wheel=str(tao_wheel), cache_root=tmp_path / "a", fetch=offline)
    by_dir = open_release(wheel=str(tao_wheel.parent), cache_root=tmp_path / "b", fetch=offline)
    assert offline.urls == [] and by_file.catalog == by_dir.catalog


def test_the_environment_variable_wins_over_the_config() -> None:
    assert wheel_setting("/from/config", {WHEEL_ENV: "/from/env"}) == "/from/env"
    assert wheel_setting("/from/config", {}) == "/from/config"
    assert wheel_setting("", {WHEEL_ENV: "  "}) == ""


def test_offline_with_no_cache_is_one_sentence_naming_the_settings(tmp_path: Path) -> None:
    offline = Fetcher(
        error=urllib.error.URLError("[Errno -3] Temporary failure in name resolution")
    )
    with pytest.raises(OperationFailed) as caught:
        open_release(cache_root=tmp_path, fetch=offline)
    message = str(caught.value)
    assert message.startswith(f"could not download nvidia-tao-core {VERSION} (")
    assert WHEEL_ENV in message and "tao_wheel" in message
    assert f"pip download --no-deps nvidia-tao-core=={VERSION}" in message
    assert message.count(". ") == 0 and message.endswith(".")
    assert not list(tmp_path.iterdir()) or not any(
        p.name.startswith(f"{VERSION}-") for p in tmp_path.iterdir()
    )


def test_a_wrong_or_missing_local_wheel(tmp_path: Path, wheel_bytes: bytes) -> None:
    fake = tmp_path / PIN.wheel.name
    fake.write_bytes(wheel_bytes[:-10] + b"0123456789")
    with pytest.raises(OperationFailed, match=r"is not the pinned nvidia-tao-core .* SHA-256"):
        open_release(wheel=str(fake), cache_root=tmp_path / "c")
    with pytest.raises(BadInput, match=r"does not exist; point it at nvidia_tao_core-"):
        open_release(wheel=str(tmp_path / "nope.whl"), cache_root=tmp_path / "c")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(OperationFailed, match=rf"{empty} .* holds no {PIN.wheel.name}"):
        open_release(wheel=str(empty), cache_root=tmp_path / "c")
    # A download that is not the pinned file is refused the same way.
    with pytest.raises(OperationFailed, match="the download of https://"):
        open_release(cache_root=tmp_path / "c", fetch=Fetcher(b"not a wheel"))


def _rebuilds(
    wheel_bytes: bytes, tmp_path: Path, damage: Callable[[Path], None]
) -> tuple[Fetcher, Path]:
    root = tmp_path / "tao"
    fetch = Fetcher(wheel_bytes)
    release = open_release(cache_root=root, fetch=fetch)
    damage(release.root)
    rebuilt = open_release(cache_root=root, fetch=fetch)
    assert rebuilt.catalog == release.catalog
    return fetch, rebuilt.root


def test_a_partial_or_corrupt_cache_is_fetched_again(wheel_bytes: bytes, tmp_path: Path) -> None:
    fetch, _ = _rebuilds(wheel_bytes, tmp_path / "1", lambda r: (r / "manifest.json").unlink())
    assert len(fetch.urls) == 2
    fetch, _ = _rebuilds(
        wheel_bytes, tmp_path / "2", lambda r: (r / "index.json").write_text('{"networks": []}')
    )
    assert len(fetch.urls) == 2
    fetch, _ = _rebuilds(
        wheel_bytes, tmp_path / "3", lambda r: (r / "manifest.json").write_text("{not json")
    )
    assert len(fetch.urls) == 2


def test_a_symlink_in_place_of_the_release_is_never_followed(
    wheel_bytes: bytes, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"

    def swap(root: Path) -> None:
        root.rename(elsewhere)
        root.symlink_to(elsewhere, target_is_directory=True)

    fetch, root = _rebuilds(wheel_bytes, tmp_path, swap)
    assert len(fetch.urls) == 2
    assert not root.is_symlink() and root.is_dir()
    assert (elsewhere / "index.json").is_file()  # the link was removed, not its target


def test_an_old_index_format_is_rebuilt_without_the_network(
    wheel_bytes: bytes, tmp_path: Path
) -> None:
    import json

    def old_format(root: Path) -> None:
        manifest = json.loads((root / "manifest.json").read_text())
        manifest["format"] = 0
        (root / "manifest.json").write_text(json.dumps(manifest))

    fetch, root = _rebuilds(wheel_bytes, tmp_path, old_format)
    assert len(fetch.urls) == 1
    assert json.loads((root / "manifest.json").read_text())["format"] == 1


def test_stale_temporary_directories_are_cleared(wheel_bytes: bytes, tmp_path: Path) -> None:
    root = tmp_path / "tao"
    root.mkdir(mode=0o700)
    stale = root / f".tmp-{VERSION}-dead"
    stale.mkdir()
    os.utime(stale, (1, 1))
    fresh = root / f".tmp-{VERSION}-busy"  # another process's build in progress
    fresh.mkdir()
    open_release(cache_root=root, fetch=Fetcher(wheel_bytes))
    assert not stale.exists() and fresh.exists()


def test_nvidias_modules_run_only_from_verified_bytes(tao_wheel: Path, tmp_path: Path) -> None:
    release = open_release(wheel=str(tao_wheel), cache_root=tmp_path / "tao")
    schema = load_schema(release, "rtdetr")
    assert schema.root.train.num_epochs > 0
    module = sys.modules["nvidia_tao_core.config.rtdetr.default_config"]
    assert module.__spec__ is not None
    assert type(module.__spec__.loader).__name__ == "_VerifiedLoader"
    assert tao_loader.loaded_from() == release.root
    assert not list(release.root.rglob("__pycache__")) and not list(release.root.rglob("*.pyc"))
    # Nothing outside the extracted config tree is importable through it.
    for name in ("nvidia_tao_core.microservices.app", "nvidia_tao_core.microservices.constants"):
        with pytest.raises(ModuleNotFoundError):
            __import__(name)
    # A module changed after extraction is refused before it runs.
    target = release.root / "nvidia_tao_core/config/segformer/default_config.py"
    target.write_text("raise SystemExit('must never run')\n")
    with pytest.raises(CacheCorrupt, match="changed since it was extracted"):
        load_schema(release, "segformer")


def test_a_changed_module_makes_the_catalogue_extract_again(
    tao_wheel: Path, tmp_path: Path
) -> None:
    tao = open_tao(environ={WHEEL_ENV: str(tao_wheel)}, cache_root=tmp_path / "tao")
    target = tao.release.root / "nvidia_tao_core/config/mal/default_config.py"
    target.write_text("raise SystemExit('must never run')\n")
    schema = tao.schema("mal")
    assert schema.network.name == "mal"
    assert (
        "SystemExit"
        not in (tao.release.root / "nvidia_tao_core/config/mal/default_config.py").read_text()
    )


def test_two_processes_building_at_once_both_get_the_release(
    wheel_bytes: bytes, tmp_path: Path
) -> None:
    import threading

    root = tmp_path / "tao"
    results: list[object] = []

    def build() -> None:
        try:
            results.append(open_release(cache_root=root, fetch=Fetcher(wheel_bytes)).catalog)
        except Exception as exc:  # the assertion below shows it
            results.append(exc)

    threads = [threading.Thread(target=build) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 3 and all(r == results[0] for r in results), results
    assert [p.name for p in root.iterdir() if not p.name.startswith(".")] == [
        f"{VERSION}-{PIN.wheel.sha256[:16]}"
    ]
