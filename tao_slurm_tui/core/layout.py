"""The remote layout of one job under ``base_results_dir`` (a stable contract: ARCHITECTURE.md).

::

    <base>/specs/<id>.json            the spec's [specs] table
    <base>/specs/<id>.yaml            a [tao] job's experiment spec (TAO's -e file)
    <base>/env/<id>.json              environment (mode 0600: may hold secrets)
    <base>/meta/<id>.json             metadata (slurm ids, image, profile)
    <base>/entrypoints/job_<id>.sh    the spec's command, run by bash in the container
    <base>/sbatch/job_<id>.sbatch     the batch script
    <base>/slurm-logs/<job-name>-<slurm-id>/main.out|main.err
    <base>/slurm-logs/<job-name>-<slurm-id>/events    run starts and ends (the batch script)
    <base>/results/<id>/              the job's results dir (TAO_API_RESULTS_DIR=<base>/results)
    <base>/results/<id>/<subtask>/    what TAO writes there: status.json, experiment.yaml,
                                      checkpoints (train/<model>_latest.pth), lightning_logs/

The SLURM job name is the job id, so ``%x-%j`` in ``--output`` expands to ``<id>-<slurm-id>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tao_slurm_tui.core.profile import NAME_RE

_SLURM_ID_RE = re.compile(r"^[0-9]+(?:_[0-9]+)?\Z")


@dataclass(frozen=True)
class JobPaths:
    """Every remote path of one job. Pure string arithmetic, no I/O."""

    base: str
    """``base_results_dir`` (absolute, no trailing slash)."""
    job_id: str
    """The stable job id (= spec name = SLURM job name)."""

    def __post_init__(self) -> None:
        base = self.base.rstrip("/") or "/"
        if not base.startswith("/"):
            raise ValueError(f"base_results_dir must be an absolute path (got {self.base!r})")
        if not NAME_RE.match(self.job_id) or self.job_id in {".", ".."}:
            raise ValueError(f"job id {self.job_id!r} is not a valid job name")
        object.__setattr__(self, "base", base)

    def _join(self, *parts: str) -> str:
        prefix = "" if self.base == "/" else self.base
        return "/".join((prefix, *parts))

    # ------------------------------------------------------------------ directories

    @property
    def specs_dir(self) -> str:
        """``<base>/specs``."""
        return self._join("specs")

    @property
    def env_dir(self) -> str:
        """``<base>/env``."""
        return self._join("env")

    @property
    def meta_dir(self) -> str:
        """``<base>/meta``."""
        return self._join("meta")

    @property
    def entrypoints_dir(self) -> str:
        """``<base>/entrypoints``."""
        return self._join("entrypoints")

    @property
    def sbatch_dir(self) -> str:
        """``<base>/sbatch``."""
        return self._join("sbatch")

    @property
    def logs_root(self) -> str:
        """``<base>/slurm-logs``."""
        return self._join("slurm-logs")

    @property
    def results_root(self) -> str:
        """``<base>/results``: the value of ``TAO_API_RESULTS_DIR`` (containers append the id)."""
        return self._join("results")

    @property
    def results_dir(self) -> str:
        """``<base>/results/<id>``."""
        return self._join("results", self.job_id)

    @property
    def staging_dirs(self) -> tuple[str, ...]:
        """Directories to create before staging (``mkdir -p``)."""
        return (
            self.specs_dir,
            self.env_dir,
            self.meta_dir,
            self.entrypoints_dir,
            self.sbatch_dir,
            self.logs_root,
            self.results_dir,
        )

    # ------------------------------------------------------------------ files

    @property
    def spec_json(self) -> str:
        """``<base>/specs/<id>.json``."""
        return self._join("specs", f"{self.job_id}.json")

    @property
    def tao_spec_yaml(self) -> str:
        """``<base>/specs/<id>.yaml``: a ``[tao]`` job's experiment spec, checked and staged."""
        return self._join("specs", f"{self.job_id}.yaml")

    @property
    def env_json(self) -> str:
        """``<base>/env/<id>.json`` (write with mode 0600)."""
        return self._join("env", f"{self.job_id}.json")

    @property
    def meta_json(self) -> str:
        """``<base>/meta/<id>.json``."""
        return self._join("meta", f"{self.job_id}.json")

    @property
    def entrypoint(self) -> str:
        """``<base>/entrypoints/job_<id>.sh``."""
        return self._join("entrypoints", f"job_{self.job_id}.sh")

    @property
    def sbatch(self) -> str:
        """``<base>/sbatch/job_<id>.sbatch``."""
        return self._join("sbatch", f"job_{self.job_id}.sbatch")

    @property
    def status_json(self) -> str:
        """``<base>/results/<id>/status.json``: where a command that is not TAO's may write
        one. TAO itself writes :meth:`subtask_status_json`; the monitor reads both."""
        return self._join("results", self.job_id, "status.json")

    def subtask_dir(self, subtask: str) -> str:
        """``<base>/results/<id>/<subtask>``: where TAO 7.3 writes a subtask's files when
        ``results_dir=<base>/results/<id>`` (its ``update_results_dir`` appends the subtask)."""
        if not subtask or "/" in subtask or subtask in {".", ".."}:
            raise ValueError(f"not a TAO subtask: {subtask!r}")
        return self._join("results", self.job_id, subtask)

    def subtask_status_json(self, subtask: str) -> str:
        """``<base>/results/<id>/<subtask>/status.json``: TAO's status file of that subtask."""
        return f"{self.subtask_dir(subtask)}/status.json"

    # ------------------------------------------------------------------ logs

    @property
    def log_dir_pattern(self) -> str:
        """``<base>/slurm-logs/%x-%j``: the log directory as SLURM's filename pattern."""
        return self._join("slurm-logs", "%x-%j")

    @property
    def out_pattern(self) -> str:
        """``--output`` value."""
        return f"{self.log_dir_pattern}/main.out"

    @property
    def err_pattern(self) -> str:
        """``--error`` value."""
        return f"{self.log_dir_pattern}/main.err"

    def log_dir(self, slurm_job_id: str) -> str:
        """``<base>/slurm-logs/<id>-<slurm id>`` of one attempt (must exist before it starts).

        Raises:
            ValueError: ``slurm_job_id`` is not a SLURM job id.
        """
        slurm_job_id = str(slurm_job_id).split(";", 1)[0].strip()
        if not _SLURM_ID_RE.match(slurm_job_id):
            raise ValueError(f"not a SLURM job id: {slurm_job_id!r}")
        return self._join("slurm-logs", f"{self.job_id}-{slurm_job_id}")

    def main_out(self, slurm_job_id: str) -> str:
        """``main.out`` of one attempt."""
        return f"{self.log_dir(slurm_job_id)}/main.out"

    def main_err(self, slurm_job_id: str) -> str:
        """``main.err`` of one attempt."""
        return f"{self.log_dir(slurm_job_id)}/main.err"

    def requeue_reason(self, slurm_job_id: str) -> str:
        """``requeue.reason`` of one attempt: one line per self-requeue (timeout/infra)."""
        return f"{self.log_dir(slurm_job_id)}/requeue.reason"

    def run_events(self, slurm_job_id: str) -> str:
        """``events`` of one attempt: a line when each run starts and when it ends, written by
        the batch script (:mod:`tao_slurm_tui.core.run_events`)."""
        return f"{self.log_dir(slurm_job_id)}/events"

    def requeue_stop(self, slurm_job_id: str) -> str:
        """``requeue.stop`` of one attempt: the monitor's reason the batch script must not
        requeue a training that makes no progress (read at the next timeout)."""
        return f"{self.log_dir(slurm_job_id)}/requeue.stop"
