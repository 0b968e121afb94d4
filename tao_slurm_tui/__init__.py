"""tao-slurm-tui: run NVIDIA TAO training containers on a SLURM GPU cluster over SSH."""

from __future__ import annotations

__version__ = "0.1.0"
