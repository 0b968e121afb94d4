"""Find the packaged data directories (``styles/``, ``templates/``).

In a checkout they sit at the repository's top level; in an installed wheel hatchling's
``force-include`` puts them under ``tao_slurm_tui/_data/``. One resolver serves both.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


@cache
def data_dir(name: str) -> Path:
    """Return the directory holding the packaged data ``name`` ("styles" or "templates").

    Raises:
        FileNotFoundError: if neither the installed nor the checkout location exists.
    """
    candidates = (_PACKAGE_DIR / "_data" / name, _PACKAGE_DIR.parent / name)
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"packaged data directory {name!r} not found (looked in {tried})")


def templates_dir() -> Path:
    """Directory of the Jinja2 templates."""
    return data_dir("templates")


def styles_dir() -> Path:
    """Directory of the Textual ``.tcss`` stylesheets."""
    return data_dir("styles")
