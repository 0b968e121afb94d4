"""The remote commands of a submission and what they print, and the files it stages: pure.

Each command is built in exactly one place here and every argument goes through
:func:`~tao_slurm_tui.core.quoting.quote`; the parsers read only the marker lines the commands
print (``MISSING=``, ``LIVE=``, ``TAO_SUBMITTED=``, ``@@squeue``), so a login banner or a
chatty shell does not confuse them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from tao_slurm_tui.core.quoting import join, quote
from tao_slurm_tui.core.slurm_text import parse_sbatch_output
from tao_slurm_tui.core.spec import ResolvedStep
from tao_slurm_tui.services.images import SqshPlan

_SUBMITTED = "TAO_SUBMITTED="
_CANCELLED = "TAO_CANCELLED="


def check_paths_command(paths: Sequence[str]) -> str:
    """One round trip: ``MISSING=<path>`` for every path ``test -e`` does not find."""
    lines = ['printf "NOW=%s\\n" "$(date +%s)"']
    if paths:
        lines.append(
            f"for p in {' '.join(quote(p) for p in paths)}; do "
            'test -e "$p" || printf "MISSING=%s\\n" "$p"; done'
        )
    return "; ".join(lines)


def name_taken_command(user: str, name: str, staged: Sequence[str]) -> str:
    """One command: ``LIVE=<id>`` per live SLURM job of ``user`` named ``name`` and
    ``STAGED=<path>`` per staged file of that name that exists (for :func:`parse_taken`)."""
    squeue = join(["squeue", "-h", "-u", user, f"--name={name}", "-o", "%i"]) if user else "true"
    return (
        f'for i in $({squeue} 2>/dev/null); do printf "LIVE=%s\\n" "$i"; done; '
        f"for p in {' '.join(quote(p) for p in staged)}; do "
        'test -e "$p" && printf "STAGED=%s\\n" "$p"; done; true'
    )


def parse_taken(output: str) -> tuple[list[str], list[str]]:
    """(live SLURM ids, staged paths) reported by :func:`name_taken_command`."""
    live = [ln[5:] for ln in output.splitlines() if ln.startswith("LIVE=") and ln[5:].strip()]
    staged = [ln[7:] for ln in output.splitlines() if ln.startswith("STAGED=")]
    return live, staged


def parse_missing(output: str) -> list[str]:
    """Paths reported missing by :func:`check_paths_command`."""
    return [ln[len("MISSING=") :] for ln in output.splitlines() if ln.startswith("MISSING=")]


NO_NODE_FITS = "Batch job submission failed: Requested node configuration is not available"
"""What sbatch says of a request no node of the partition could ever hold."""


def sbatch_command(
    script: str, log_dir_prefix: str, extra: Sequence[str] = (), *, scancel_on_failure: bool = True
) -> str:
    """The one remote command: ``sbatch --test-only`` → ``sbatch --hold`` → ``mkdir -p <log
    dir>`` → ``scontrol release``.

    SLURM accepts a held job that no node could ever run (it then pends for ever with reason
    ``BadConstraints``: a GPU type no node has, more GPUs than a node holds), so the same
    request is tried with ``--test-only`` first, and that refusal ends the command as sbatch's
    own would (exit 1, ``sbatch: error: Requested node configuration is not available``). Any
    other answer of the test (busy, later) goes on to the real submission.

    ``log_dir_prefix`` is ``<base>/slurm-logs/<name>-``; the SLURM id completes it. If the
    directory cannot be made or the job released, the job is cancelled (a held job would wait
    forever, one without its log directory would die at launch) and the command exits 90.

    Output: ``TAO_SUBMITTED=<ID or ID;cluster>`` once sbatch accepted the job.
    """
    test = join(["sbatch", "--test-only", "--export=ALL", *extra, script])
    sbatch = join(["sbatch", "--parsable", "--export=ALL", "--hold", *extra, script])
    undo = 'scancel "$id"; printf "' + _CANCELLED + '%s\\n" "$id"; ' if scancel_on_failure else ""
    return (
        f"t=$({test} 2>&1); case $t in *'node configuration is not available'*) "
        f"echo 'sbatch: error: {NO_NODE_FITS}' >&2; exit 1;; esac; "
        f"out=$({sbatch}) || exit $?; "
        f'printf "{_SUBMITTED}%s\\n" "$out"; '
        'id="${out%%;*}"; '
        f'if ! mkdir -p -- {quote(log_dir_prefix)}"$id"; then {undo}exit 90; fi; '
        f'if ! scontrol release "$id"; then {undo}exit 91; fi'
    )


def parse_submitted(stdout: str) -> str:
    """The SLURM id from :func:`sbatch_command` output ('' when sbatch did not accept the job)."""
    for line in stdout.splitlines():
        if line.startswith(_SUBMITTED):
            try:
                return parse_sbatch_output(line[len(_SUBMITTED) :])
            except ValueError:
                return ""
    return ""


def reconcile_command(user: str, name: str, window_seconds: int) -> str:
    """One round trip on one login host: jobs of ``user`` named ``name`` (squeue + sacct).

    Output sections ``@@now``, ``@@squeue rc=N`` (``id|state|submit|reason``) and
    ``@@sacct rc=N`` (``id|state|submit|nodelist``, submitted in the last ``window_seconds``).
    """
    squeue = join(["squeue", "-h", "-t", "all", "-u", user, f"--name={name}", "-o", "%i|%T|%V|%r"])
    sacct = join(
        [
            "sacct", "-X", "-n", "-P", "-u", user, f"--name={name}",
            "-S", f"now-{max(1, int(window_seconds))}",
            "--format=JobID,State,Submit,NodeList",
        ]
    )  # fmt: skip
    return (
        'printf "@@now %s\\n" "$(date +%Y-%m-%dT%H:%M:%S)"; '
        f'o=$({squeue} 2>/dev/null); printf "@@squeue rc=%s\\n%s\\n" "$?" "$o"; '
        f'o=$({sacct} 2>/dev/null); printf "@@sacct rc=%s\\n%s\\n" "$?" "$o"'
    )


def _parse_time(text: str) -> datetime | None:
    try:
        return datetime.strptime(text.strip(), "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return None


def parse_reconcile(
    output: str, *, window_seconds: float, exclude_ids: Iterable[str] = ()
) -> tuple[bool, list[tuple[str, str]]]:
    """Candidates from :func:`reconcile_command` output.

    Args:
        output: the command's stdout.
        window_seconds: only jobs submitted at most this long ago count.
        exclude_ids: known attempts (never adopted again).

    Returns:
        (whether the host answered, ``[(slurm id, state)]`` newest first). Rejections that
        left a record (``BadConstraints``; ``FAILED`` with no node) are dropped.
    """
    excluded = {str(i) for i in exclude_ids}
    now: datetime | None = None
    answered = False
    section = ""
    found: dict[str, str] = {}
    for raw in output.splitlines():
        line = raw.strip()
        if line.startswith("@@now "):
            now = _parse_time(line[len("@@now ") :])
            continue
        if line.startswith("@@squeue") or line.startswith("@@sacct"):
            section = "squeue" if line.startswith("@@squeue") else "sacct"
            answered = answered or line.endswith("rc=0")
            continue
        if not line or not section:
            continue
        parts = line.split("|")
        if len(parts) < 4:
            continue
        job_id, state, submit, extra = parts[0].split(";")[0], parts[1], parts[2], parts[3]
        if not job_id.isdigit() or job_id in excluded:
            continue
        state_word = state.split(" ")[0]
        if section == "squeue":
            if "BadConstraints" in extra:
                continue
            when = _parse_time(submit)
            if (
                now is not None
                and when is not None
                and (now - when).total_seconds() > window_seconds
            ):
                continue
        elif state_word == "FAILED" and extra.strip().lower() in {"none assigned", ""}:
            continue
        found.setdefault(job_id, state_word)
    ordered = sorted(found.items(), key=lambda item: int(item[0]), reverse=True)
    return answered, ordered


def spec_file(step: ResolvedStep) -> str:
    """Content of ``specs/<id>.json``: ``[specs]`` with cluster paths converted."""
    return json.dumps(step.spec.resolved_specs(), indent=2, sort_keys=True) + "\n"


def env_file(step: ResolvedStep) -> str:
    """Content of ``env/<id>.json`` (written 0600)."""
    return json.dumps(step.spec.env, indent=2, sort_keys=True) + "\n"


def meta_file(
    step: ResolvedStep,
    profile_name: str,
    user: str,
    image: SqshPlan | None,
    created: float,
    after: str = "",
) -> str:
    """Content of ``meta/<id>.json``: what was submitted, from where, with which image
    (``after``: the previous pipeline step's SLURM id)."""
    meta: dict[str, Any] = {
        "id": step.name,
        "profile": profile_name,
        "user": user,
        "image": step.spec.image,
        "partition": step.plan.partition,
        "account": step.plan.account,
        "inputs": step.spec.resolved_inputs(),
        "created_at": created,
        "tool": "tao-slurm-tui",
    }
    if image is not None and image.action != "off":
        meta["sqsh"] = {
            "action": image.action,
            "path": image.sqsh_path,
            "conversion_job_id": image.conversion_job_id,
        }
    if step.pipeline_id:
        meta["pipeline"] = {
            "id": step.pipeline_id,
            "step": step.index + 1,
            "after_slurm_job_id": after,
        }
    return json.dumps(meta, indent=2, sort_keys=True) + "\n"
