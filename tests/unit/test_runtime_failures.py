"""Container-runtime failures told after the fact: the cause, the field to change, the SQSH
conversion's fate, and where main.err explains itself -- on main.err files the sandbox's Pyxis
and enroot wrote (``recorded/pyxis``: plain ``srun --container-image`` jobs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tao_slurm_tui.core.retry import classify, first_error
from tao_slurm_tui.core.runtime_failures import (
    IMAGE_IMPORT_FAILED,
    IMAGE_NOT_FOUND,
    MOUNT_MISSING,
    NGC_KEY_REFUSED,
)

RECORDED = Path(__file__).parent / "recorded" / "pyxis"

HOOK_404 = (
    "[tao-slurm-tui] ERROR: image not found in the registry: tao-registry.internal:5000 has no "
    "nvidia/tao/tao-toolkit:nosuchtag (HTTP 404 MANIFEST_UNKNOWN: manifest unknown); fix the "
    "image name or tag"
)
"""What the batch script's tao_pull_check adds after such a failure (checked on the sandbox by
tests/integration/test_pyxis.py)."""

FALLBACK = (
    "[tao-slurm-tui] WARNING: the SQSH image /home/u/tao/sqsh/x_nosuchtag.sqsh is missing or "
    "invalid (did its conversion job fail?); falling back to the registry image "
    "tao-registry.internal:5000#nvidia/tao/tao-toolkit:nosuchtag"
)


def lines(name: str) -> list[str]:
    return (RECORDED / name).read_text(encoding="utf-8").splitlines()


def test_an_image_typo_says_not_found_in_the_registrys_words_and_names_image() -> None:
    log = [FALLBACK, *lines("image-typo.err"), HOOK_404]
    decision = classify("FAILED", log, 0)
    assert not decision.retry
    assert (decision.family, decision.field) == (IMAGE_NOT_FOUND, "image")
    assert decision.reason.startswith(
        "Image not found in the registry (tao-registry.internal:5000 has no "
        "nvidia/tao/tao-toolkit:nosuchtag; MANIFEST_UNKNOWN: manifest unknown): fix Image (its "
        "name or tag), then resubmit."
    )
    # The SQSH conversion's fate: it failed first, and the job fell back to the registry.
    assert "Its SQSH conversion job failed too (no /home/u/tao/sqsh/x_nosuchtag.sqsh)" in (
        decision.reason
    )


def test_without_the_registrys_answer_the_import_failure_is_still_named() -> None:
    decision = classify("FAILED", lines("repository-missing.err"), 0)
    assert (decision.family, decision.field) == (IMAGE_IMPORT_FAILED, "image")
    assert "Pyxis could not import the image" in decision.reason
    assert "without a sign of an infrastructure failure" not in decision.reason


def test_a_missing_mount_source_names_the_path_and_mounts() -> None:
    decision = classify("FAILED", lines("mount-missing.err"), 0)
    assert (decision.family, decision.field) == (MOUNT_MISSING, "container_mounts")
    assert decision.reason == (
        "Pyxis could not mount /lustre: the source path does not exist on the node. Remove it "
        "from Mounts or fix the path, then resubmit."
    )


def test_a_refused_key_keeps_its_sentence() -> None:
    log = [*lines("image-typo.err"), "[tao-slurm-tui] ERROR: the registry nvcr.io refused the "
           "NGC key (HTTP 401): run set-up -> NGC key"]  # fmt: skip
    decision = classify("FAILED", log, 0)
    assert decision.family == NGC_KEY_REFUSED and "set-up → NGC key" in decision.reason


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("mount-missing.err", "source path does not exist: /lustre"),
        ("repository-missing.err", "failed to import docker image"),
    ],
)
def test_main_err_opens_at_the_line_that_explains(name: str, expected: str) -> None:
    log = lines(name)
    index = first_error(log)
    assert index is not None and expected in log[index]
    # Far from the end: enroot's log follows it.
    assert index < len(log) - 5


def test_first_error_falls_back_to_the_first_line_saying_error() -> None:
    log = ["loading", "step 1", "Traceback (most recent call last):", "  File x", "boom"]
    assert first_error(log) == 2
    assert first_error(["all good", "done"]) is None
