"""The CLI ends quietly when its reader goes away (``tao-slurm-tui VERB | head``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_closed_stdout_pipe_is_not_a_traceback(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'name = "pipe-test"\nimage = "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt"\n'
        'command = "true"\npartition = "polar"\n'
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "tao_slurm_tui", "render", str(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ},
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first write
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "Traceback" not in err and "BrokenPipeError" not in err
