"""Is a job's command a TAO training, and where does it write its checkpoints?

The batch script checks the resume of a TAO training across wall-time slices (issue 21): after
the stop at ``timeout_hours`` it requeues the job only while the run wrote a checkpoint, or at
most :data:`MAX_NO_PROGRESS` times in a row when it did not. For that it
must know the directory TAO writes to: ``results_dir=<dir>`` on TAO's command line (the
checkpoints go to ``<dir>/train/``).

TAO's grammar is ``<network> train -e <spec.yaml> [key=value ...]`` (nvidia-tao-pytorch 7.3's
entrypoints); ``[tao]`` jobs get exactly that command. Any other command is not checked: its
checkpoints, if any, may be anywhere.

Pure: no I/O.
"""

from __future__ import annotations

import re
import shlex

from tao_slurm_tui.core.layout import JobPaths

MAX_NO_PROGRESS = 2
"""Runs in a row that restarted without progress before a training is not requeued again."""

_NETWORK_RE = re.compile(r"[a-z][a-z0-9_]{1,63}")
_SPEC_FLAGS = ("-e", "--experiment_spec_file")
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", ";;", "(", ")", "{", "}"})
_VARIABLES = ("TAO_API_RESULTS_DIR", "TAO_JOB_ID")
_SAFE_PATH_RE = re.compile(r"/[A-Za-z0-9._/+=:@,~-]*")


def is_tao_training(command: str) -> bool:
    """True when ``command`` runs a TAO network's ``train`` subtask with an experiment spec."""
    return _train_arguments(command) is not None


def checkpoint_dir(command: str, paths: JobPaths) -> str:
    """Where a TAO training writes its checkpoints (searched recursively), or '' when
    ``command`` is no TAO training.

    ``results_dir=`` may name ``$TAO_API_RESULTS_DIR`` and ``$TAO_JOB_ID`` (the batch script
    exports both); with any other variable, or a relative path, the script cannot know the
    directory and checks nothing (a wrong directory would stop a training that checkpoints);
    so without ``results_dir=`` (the experiment spec's own ``results_dir`` decides). TAO jobs
    of this tool always pass it.
    """
    arguments = _train_arguments(command)
    if arguments is None:
        return ""
    for argument in arguments:
        key, _, value = argument.partition("=")
        if key not in ("results_dir", "train.results_dir") or not value:
            continue
        for name in _VARIABLES:
            known = paths.results_root if name == "TAO_API_RESULTS_DIR" else paths.job_id
            value = value.replace("${" + name + "}", known).replace("$" + name, known)
        if _SAFE_PATH_RE.fullmatch(value) and "/../" not in value + "/":
            return value.rstrip("/") or "/"
        return ""  # somewhere the script cannot tell: no check rather than a wrong one
    return ""  # the spec file's results_dir: not known here


def _train_arguments(command: str) -> list[str] | None:
    """The arguments after ``<network> train`` when they name a spec; None otherwise."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        return None
    for index, word in enumerate(words[1:], start=1):
        if word != "train" or not _NETWORK_RE.fullmatch(words[index - 1]):
            continue
        if index >= 2 and words[index - 2] not in _SEPARATORS and words[index - 2] != "exec":
            continue  # `python train.py train ...`: the word before is no network at a start
        rest: list[str] = []
        for argument in words[index + 1 :]:
            if argument in _SEPARATORS:
                break
            rest.append(argument)
        if any(a in _SPEC_FLAGS or a.startswith("--experiment_spec_file=") for a in rest):
            return rest
    return None
