"""Data paths: shared-filesystem URIs are converted, local-looking paths refused."""

from __future__ import annotations

import pytest

from tao_slurm_tui.core.storage import (
    PathError,
    cluster_path,
    convert_path,
    looks_like_cluster_path,
)
from tao_slurm_tui.errors import BadInput


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("lustre:///lustre/data/coco/train.json", "/lustre/data/coco/train.json"),
        ("LUSTRE:///lustre/x", "/lustre/x"),
        ("slurm:///lustre/fsw/a", "/lustre/fsw/a"),
        ("slurm://eos/lustre/fsw/a", "/lustre/fsw/a"),
        ("/lustre/data/x", "/lustre/data/x"),
        ("/home/slurmtest/data//x", "/home/slurmtest/data/x"),
        ("  /lustre/x  ", "/lustre/x"),
    ],
)
def test_accepted_paths_convert(value: str, expected: str) -> None:
    assert convert_path(value) == expected


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("file:///home/me/data", "file://"),
        ("data/train.json", "relative"),
        ("./data", "relative"),
        ("~/data", "home directory"),
        ("s3://bucket/key", "s3://"),
        ("lustre://lustre/data", "three slashes"),
        ("slurm://cluster", "absolute"),
        ("lustre:///", "absolute"),
        ("", "empty"),
    ],
)
def test_local_looking_paths_are_refused_with_the_reason(value: str, why: str) -> None:
    with pytest.raises(PathError) as info:
        convert_path(value)
    message = str(info.value)
    assert why in message
    assert "shared filesystem" in message or "three slashes" in message


def test_cluster_path_raises_bad_input_naming_the_field() -> None:
    with pytest.raises(BadInput) as info:
        cluster_path("file:///tmp/x", field="inputs")
    text = str(info.value)
    assert text.startswith("inputs: ")
    assert "lustre:///" in text
    assert text.endswith(".")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("/lustre/x", True),
        ("lustre:///x", True),
        ("slurm://c/x", True),
        ("file:///x", True),
        ("relative/x", False),
        ("dino", False),
        ("https://example.com/x", False),
        (3, False),
        (None, False),
    ],
)
def test_looks_like_cluster_path(value: object, expected: bool) -> None:
    assert looks_like_cluster_path(value) is expected
