"""``python -m tao_slurm_tui`` — the same entry point as the ``tao-slurm-tui`` console script."""

from __future__ import annotations

import sys

from tao_slurm_tui.cli import main

if __name__ == "__main__":
    sys.exit(main())
