"""Staging and exactly-once submission of resolved jobs (see :mod:`.submitter`).

One module per phase: :mod:`.check`, :mod:`.stage`, :mod:`.image`, and :mod:`.once` (the
exactly-once sbatch of submit-and-record); :mod:`.commands` builds every remote command and
staged file; :mod:`.submitter` runs the phases in order.
"""

from __future__ import annotations

from tao_slurm_tui.services.submit.commands import (
    NO_NODE_FITS,
    check_paths_command,
    name_taken_command,
    parse_missing,
    parse_reconcile,
    parse_submitted,
    parse_taken,
    reconcile_command,
    sbatch_command,
)
from tao_slurm_tui.services.submit.once import SbatchOnce, SbatchRejected
from tao_slurm_tui.services.submit.submitter import Submitter

__all__ = [
    "NO_NODE_FITS",
    "SbatchOnce",
    "SbatchRejected",
    "Submitter",
    "check_paths_command",
    "name_taken_command",
    "parse_missing",
    "parse_reconcile",
    "parse_submitted",
    "parse_taken",
    "reconcile_command",
    "sbatch_command",
]
