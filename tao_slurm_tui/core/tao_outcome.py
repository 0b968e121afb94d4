"""Why a TAO run failed, in one sentence, from what it left behind (pure).

TAO 7.3 says why a run failed in one of two places:

- ``status.json``: a FAILURE line with TAO's prefix ("Configuration error: ...", "Parameter
  validation error: ...", "File system error: ...") for an error raised while the subtask runs;
- the log, when the run never started: a spec key or value the network's schema refuses fails in
  Hydra's composition, before TAO's code, and leaves **no** ``status.json`` at all. Hydra prints
  "Error merging 'spec.yaml' with schema" (or "Could not override 'train.num_epoch'."), then
  omegaconf's message and ``full_key: train.num_epoch``. TAO's launcher refuses a missing spec
  file with an ``ERROR:`` line.

:func:`failure_reason` picks the one to show; the monitor shows it instead of "the job ended
FAILED" when the failure is not one it retries.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tao_slurm_tui.core.status_json import Terminal, first_line

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

_HYDRA_HEAD = re.compile(
    r"^(Error merging '.*' with schema"
    r"|Error merging override .*"
    r"|Could not override '.*'\."
    r"|Error loading '.*'.*"
    r"|Error parsing override '.*'"
    r"|Could not delete from config\..*"
    r"|Cannot find primary config '.*'.*)\Z"
)
"""The first line of Hydra's message for a spec it could not compose."""

_LAUNCHER = re.compile(
    r"^ERROR: (The subtask `.*` requires the following argument.*"
    r"|The indicated experiment spec file `.*` doesn't exist!.*)\Z"
)
"""TAO's launcher refusing to start (no ``-e``, or a spec file that does not exist)."""

_DETAIL_SKIP = re.compile(
    r"^(To append to your config use |reference_type=|object_type=|See https://hydra)"
)


def _clean(line: str) -> str:
    return _ANSI.sub("", line).strip()


def hydra_error(lines: Sequence[str]) -> str:
    """Hydra's refusal of the experiment spec in the log, as one sentence ('' when there is
    none); the last one wins (a requeued run prints its own)."""
    cleaned = [_clean(line) for line in lines]
    heads = [i for i, line in enumerate(cleaned) if _HYDRA_HEAD.match(line)]
    if not heads:
        return ""
    start = heads[-1]
    head = cleaned[start].rstrip(".:")
    detail, full_key = "", ""
    for line in cleaned[start + 1 : start + 30]:
        if not line or line.startswith("Set the environment variable HYDRA_FULL_ERROR"):
            break
        if line.startswith("full_key:"):
            full_key = line.partition(":")[2].strip()
        elif not detail and not _DETAIL_SKIP.match(line):
            detail = line
    text = f"{head}: {detail}" if detail else head
    where = f" (full key {full_key})" if full_key else ""
    return (
        f"TAO refused the experiment spec before it started: {first_line(text)}{where}. "
        "Fix the spec and submit again."
    )


def launcher_error(lines: Sequence[str]) -> str:
    """TAO's launcher refusing to start, as one sentence ('' when it did not)."""
    for line in reversed([_clean(line) for line in lines]):
        match = _LAUNCHER.match(line)
        if match:
            return f"TAO did not start: {first_line(match.group(1))}"
    return ""


def failure_reason(terminal: Terminal | None, message: str, log_lines: Sequence[str] | None) -> str:
    """Why the TAO run failed: the FAILURE message of ``status.json`` (``terminal`` and
    ``message`` of its summary), else Hydra's or the launcher's refusal in the log; '' when
    neither says (then SLURM's state and the log patterns are all there is)."""
    if terminal == "FAILURE" and message:
        return message
    lines = log_lines or []
    return hydra_error(lines) or launcher_error(lines)
