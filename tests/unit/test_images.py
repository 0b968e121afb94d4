"""Image references: the four accepted forms and the forms Pyxis, enroot and the cache need."""

from __future__ import annotations

import pytest

from tao_slurm_tui.core.images import ACCEPTED_FORMS, ImageError, check_image, parse_image
from tao_slurm_tui.errors import BadInput

TAO = "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt"
PYXIS = "nvcr.io#nvidia/tao/tao-toolkit:6.26.3-pyt"
ENROOT = "docker://nvcr.io#nvidia/tao/tao-toolkit:6.26.3-pyt"
CACHE = "nvcr.io_nvidia_tao_tao-toolkit_6.26.3-pyt.sqsh"


@pytest.mark.parametrize("form", [TAO, PYXIS, ENROOT])
def test_every_registry_form_of_one_image_derives_the_same_forms(form: str) -> None:
    ref = parse_image(form)
    assert ref.pyxis == PYXIS
    assert ref.enroot_uri == ENROOT
    assert ref.canonical == TAO
    assert ref.sqsh_name == CACHE
    assert not ref.is_latest
    assert not ref.is_sqsh


def test_issue_example_pyxis_form() -> None:
    assert parse_image("nvcr.io/a/b:t").pyxis == "nvcr.io#a/b:t"
    assert parse_image("nvcr.io/a/b:t").enroot_uri == "docker://nvcr.io#a/b:t"


def test_sqsh_file_is_used_as_is() -> None:
    ref = parse_image("/lustre/images/tao.sqsh")
    assert ref.is_sqsh
    assert ref.pyxis == "/lustre/images/tao.sqsh"
    assert ref.sqsh_cache_path("/cache") == "/lustre/images/tao.sqsh"
    assert not ref.is_latest
    with pytest.raises(ValueError):
        _ = ref.enroot_uri


def test_sqsh_via_lustre_uri() -> None:
    assert parse_image("lustre:///lustre/images/tao.sqsh").pyxis == "/lustre/images/tao.sqsh"


def test_docker_hub_images_have_no_registry_part() -> None:
    ref = parse_image("ubuntu:22.04")
    assert ref.pyxis == "ubuntu:22.04"
    assert ref.enroot_uri == "docker://ubuntu:22.04"
    assert ref.sqsh_name == "ubuntu_22.04.sqsh"
    assert parse_image("nvidia/cuda:12.4.0-base").pyxis == "nvidia/cuda:12.4.0-base"


def test_registry_with_port() -> None:
    ref = parse_image("localhost:5000/team/img:1.0")
    assert ref.registry == "localhost:5000"
    assert ref.pyxis == "localhost:5000#team/img:1.0"
    assert ref.sqsh_name == "localhost_5000_team_img_1.0.sqsh"


@pytest.mark.parametrize("value", ["nvcr.io/a/b:latest", "nvcr.io/a/b", "nvcr.io#a/b", "ubuntu"])
def test_latest_explicit_or_implied(value: str) -> None:
    ref = parse_image(value)
    assert ref.is_latest
    assert ref.tag == "latest"
    assert ref.pyxis.endswith(":latest")


def test_digest_pinned_image_is_not_latest() -> None:
    digest = "sha256:" + "a" * 64
    ref = parse_image(f"nvcr.io/a/b@{digest}")
    assert not ref.is_latest
    assert ref.pyxis == f"nvcr.io#a/b@{digest}"
    assert "#" not in ref.sqsh_name and "@" not in ref.sqsh_name and ":" not in ref.sqsh_name


def test_cache_path_joins_the_cache_dir() -> None:
    assert parse_image(TAO).sqsh_cache_path("/lustre/cache/") == f"/lustre/cache/{CACHE}"


@pytest.mark.parametrize(
    "value",
    [
        "",
        "   ",
        "Nvcr.io/A/B:t",
        "nvcr.io/a/b:t t",
        "nvcr.io/a/b:",
        "nvcr.io#",
        "nvcr.io#a#b",
        "bad host!#a/b:t",
        "relative/image.sqsh",
        "image.sqsh",
        "./x",
        "~/img.sqsh",
        "http://nvcr.io/a/b:t",
        "nvcr.io/a/b:t;rm -rf /",
        "nvcr.io/a/b:$(id)",
        "nvcr.io/a//b:t",
        "nvcr.io/a/b@sha256:short",
    ],
)
def test_malformed_images_are_rejected_with_the_accepted_forms(value: str) -> None:
    with pytest.raises(ImageError) as info:
        parse_image(value)
    assert ACCEPTED_FORMS in str(info.value)


def test_check_image_gives_bad_input() -> None:
    with pytest.raises(BadInput) as info:
        check_image("Not An Image")
    assert str(info.value).startswith("image: ")
    for form in ("/path/image.sqsh", "registry#image:tag", "docker://registry#image:tag"):
        assert form in str(info.value)
