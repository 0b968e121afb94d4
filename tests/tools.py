"""Local programs some tests drive besides Python: skipped with a reason where missing.

``make test`` installs them (its ``test-tools`` step runs apt-get, as root); ``make test-unit``
does not, so a contributor without root still runs every other unit and TUI test. In CI
(``CI=true``) a missing program fails instead: there ``make test`` installed it, and a test that
silently skipped would hide that it did not.
"""

from __future__ import annotations

import os
import shutil

import pytest


def in_ci() -> bool:
    """True when the suite runs in CI (``CI`` set to 1/true/yes)."""
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require(*programs: str) -> None:
    """Skip the calling test (fail it in CI) unless every program is on the PATH."""
    missing = [p for p in programs if shutil.which(p) is None]
    if not missing:
        return
    names = " ".join(missing)
    why = f"{names} not installed (`make test` installs it; as root: apt-get install {names})"
    if in_ci():
        pytest.fail(why)
    pytest.skip(why)
