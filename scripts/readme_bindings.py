#!/usr/bin/env python3
"""Write the app's key-binding tables into README.md between the bindings markers.

The tables come from the screens' BINDINGS (the same ones the help screen shows), so the README
stays true; tests/unit/test_readme.py fails when it is out of date.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from tao_slurm_tui.screens.help_tables import bindings_markdown

README = Path(__file__).resolve().parents[1] / "README.md"
START = "<!-- bindings:start"
END = "<!-- bindings:end -->"


def render(text: str) -> str:
    """README text with the generated tables between the markers."""
    pattern = re.compile(re.escape(START) + r".*?-->\n.*?" + re.escape(END), re.S)
    match = pattern.search(text)
    if match is None:
        raise SystemExit("README.md has no bindings markers")
    head = match.group(0).split("\n", 1)[0]
    block = f"{head}\n{bindings_markdown().strip()}\n{END}"
    return text[: match.start()] + block + text[match.end() :]


def main() -> int:
    """Rewrite README.md in place."""
    README.write_text(render(README.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
