"""GPU use of running jobs, live: the one remote command, its answer, and which jobs sit idle.

Pure. The services send :func:`gpu_command` for a few running jobs in ONE round trip: per job one
``srun --overlap --jobid`` step (it shares the job's CPUs, memory and GPUs instead of waiting
for free ones) running ``nvidia-smi --query-gpu`` once on each of the job's nodes, every step
bounded by ``timeout``, all steps side by side. :func:`parse_gpu_answer` turns the answer into
a :class:`GpuSample` per job; :class:`IdleTracker` remembers since when every GPU of a job has
been idle.

How SLURM and nvidia-smi really behave (checked on SLURM 22.05 and the sandbox's stand-in,
which speaks nvidia-smi's CSV):

- a step started with ``--jobid`` from the login host gets every GPU of the job on its nodes
  (``SLURM_STEP_GPUS``), so nvidia-smi lists exactly the job's GPUs, numbered from 0 per node
  under device confinement;
- ``--nodes=N --ntasks=N --ntasks-per-node=1`` must be given: ``--ntasks-per-node=1`` alone
  runs one task on the first node only;
- a job that ended or never started makes srun exit 1 with ``srun: error: Unable to confirm
  allocation for job ID: ...`` on stderr;
- ``--format=csv,noheader,nounits`` prints ``0, GPU-uuid, 87, 30000, 81920, NVIDIA A100-...``
  (``[N/A]`` where a figure is unknown, e.g. utilisation under MIG).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tao_slurm_tui.core import quoting

GPU_FIELDS = ("index", "uuid", "utilization.gpu", "memory.used", "memory.total", "name")
"""The ``--query-gpu`` fields in the order they come back (the free-text name last)."""

IDLE_UTILIZATION = 5
"""A GPU whose utilisation is under this many percent counts as idle."""

STEP_TIMEOUT = 20
"""Seconds one job's ``srun`` may take on the cluster before ``timeout`` ends it."""

MARK = "@@tao-gpu:"
"""Prefix of the line that starts one job's part of the answer (then ``ID RC``)."""

_NODE_SCRIPT = (
    "nvidia-smi --query-gpu={fields} --format=csv,noheader,nounits 2>&1 "
    '| sed "s/^/$SLURMD_NODENAME, /"'
)


@dataclass(frozen=True)
class GpuReading:
    """One GPU of a job as nvidia-smi reported it."""

    node: str
    """The node the GPU is in."""
    index: int
    """Its index as the job sees it (from 0 on each node)."""
    name: str
    """Model, e.g. ``NVIDIA A100-SXM4-80GB``."""
    utilization: int | None
    """Percent of the last sample period a kernel ran (None: not reported)."""
    memory_used: int | None
    """MiB in use (None: not reported)."""
    memory_total: int | None
    """MiB the GPU has (None: not reported)."""

    @property
    def idle(self) -> bool:
        """Utilisation known and under :data:`IDLE_UTILIZATION`."""
        return self.utilization is not None and self.utilization < IDLE_UTILIZATION


@dataclass(frozen=True)
class GpuSample:
    """One look at a job's GPUs."""

    slurm_job_id: str
    """The SLURM job sampled."""
    at: float
    """When (``time.time()`` of the answer)."""
    gpus: tuple[GpuReading, ...] = ()
    """Every GPU of the job, by node then index."""
    problem: str = ""
    """Why there are no figures (or not all of them), as a phrase; '' when complete."""

    @property
    def idle(self) -> bool:
        """Every GPU reported and idle (a sample with a problem is never idle: unknown)."""
        return bool(self.gpus) and not self.problem and all(gpu.idle for gpu in self.gpus)


@dataclass(frozen=True)
class GpuReport:
    """What the GPU pane shows for a job: the latest sample and how long the GPUs sat idle."""

    job_id: str
    """The TAO job."""
    sample: GpuSample
    """The latest sample."""
    idle_seconds: float | None = None
    """How long every GPU has been idle (None: not idle now, or not known)."""
    idle_limit: float | None = None
    """After how many seconds idle the queue flags the job (None: flagging is off)."""

    @property
    def flagged(self) -> bool:
        """The GPUs sat idle at least :attr:`idle_limit`."""
        return (
            self.idle_limit is not None
            and self.idle_seconds is not None
            and self.idle_seconds >= self.idle_limit
        )


def gpu_command(jobs: Sequence[tuple[str, int]], timeout: int = STEP_TIMEOUT) -> str:
    """The one command that samples the GPUs of ``jobs`` side by side.

    Args:
        jobs: (SLURM job id, node count) of each running job.
        timeout: seconds each job's step may take.

    Returns:
        An ``sh`` script: each job's step writes to its own temporary file, then every file is
        printed after a :data:`MARK` line carrying the job id and the step's exit status.
    """
    node_script = _NODE_SCRIPT.format(fields=",".join(GPU_FIELDS))
    lines = ["d=$(mktemp -d) || exit 1", "trap 'rm -rf \"$d\"' EXIT"]
    for job_id, nodes in jobs:
        if not job_id.isdigit() or nodes < 1:
            raise ValueError(f"not a running SLURM job: {job_id!r} on {nodes} nodes")
        argv = [
            "timeout", "-k", "5", str(timeout),
            "srun", "--overlap", f"--jobid={job_id}", f"--nodes={nodes}", f"--ntasks={nodes}",
            "--ntasks-per-node=1", "--quiet", "sh", "-c", node_script,
        ]  # fmt: skip
        out = f'"$d"/{job_id}'
        lines.append(f"( {quoting.join(argv)} >{out} 2>&1; echo $? >{out}.rc ) </dev/null &")
    lines.append("wait")
    for job_id, _ in jobs:
        out = f'"$d"/{job_id}'
        lines.append(f'echo "{MARK}{job_id} $(cat {out}.rc)"; cat {out}')
    return "\n".join(lines)


def _number(text: str) -> int | None:
    value = text.strip()
    return int(value) if value.isdigit() else None


def _reading(line: str) -> GpuReading | None:
    """``node, index, uuid, util, used, total, name`` → a reading (None: not such a line)."""
    parts = [p.strip() for p in line.split(",", len(GPU_FIELDS))]
    if len(parts) != len(GPU_FIELDS) + 1 or not parts[1].isdigit():
        return None
    node, index, _uuid, util, used, total, name = parts
    return GpuReading(node, int(index), name, _number(util), _number(used), _number(total))


def _problem(status: int, lines: list[str]) -> str:
    """Why a step gave no (or not every) figure, from its exit status and its other lines."""
    if status == 124:
        return f"nvidia-smi did not answer within {STEP_TIMEOUT} s"
    text = " ".join(line.strip() for line in lines if line.strip())
    for noise in ("srun: Check SLURM_JOB_ID environment variable.",):
        text = text.replace(noise, "").strip()
    if "Unable to confirm allocation" in text or "Invalid job id" in text:
        return "the job is not running any more"
    if "not found" in text and "nvidia-smi" in text:
        return "nvidia-smi is not installed on the job's nodes"
    if "NVIDIA-SMI has failed" in text:
        return "nvidia-smi cannot reach the GPU driver on the job's nodes"
    if text:
        return text[:200]
    return f"srun exited with status {status}" if status else ""


def parse_gpu_answer(text: str, at: float) -> dict[str, GpuSample]:
    """Each job's sample from :func:`gpu_command`'s output, by SLURM job id."""
    samples: dict[str, GpuSample] = {}
    sections: list[tuple[str, int, list[str]]] = []
    for line in text.splitlines():
        if line.startswith(MARK):
            job_id, _, rc = line[len(MARK) :].partition(" ")
            status = int(rc) if rc.strip().lstrip("-").isdigit() else 1
            sections.append((job_id.strip(), status, []))
        elif sections:
            sections[-1][2].append(line)
    for job_id, status, lines in sections:
        gpus: list[GpuReading] = []
        other: list[str] = []
        for line in lines:
            reading = _reading(line)
            if reading is None:
                other.append(line.partition(", ")[2] if _node_prefixed(line) else line)
            else:
                gpus.append(reading)
        problem = _problem(status, other) if status or other or not gpus else ""
        if not gpus and not problem:
            problem = "no GPU is allocated to the job"
        gpus.sort(key=lambda g: (g.node, g.index))
        samples[job_id] = GpuSample(job_id, at, tuple(gpus), problem)
    return samples


def _node_prefixed(line: str) -> bool:
    head, sep, _ = line.partition(", ")
    return bool(sep) and " " not in head and bool(head)


class IdleTracker:
    """Since when every GPU of each job has been idle (pure: times come with the samples).

    A job's idle run starts with the first idle sample and ends with any busy one; a sample
    with a problem (figures unknown) neither starts nor ends it.
    """

    def __init__(self) -> None:
        self._since: dict[str, float] = {}
        self._seen: dict[str, float] = {}
        self._latest: dict[str, GpuSample] = {}

    def record(self, sample: GpuSample) -> None:
        """Take one sample into account."""
        job = sample.slurm_job_id
        self._latest[job] = sample
        if sample.problem:
            return
        self._seen[job] = sample.at
        if sample.idle:
            self._since.setdefault(job, sample.at)
        else:
            self._since.pop(job, None)

    def idle_seconds(self, slurm_job_id: str) -> float | None:
        """How long the job's GPUs have been idle, up to its latest sample with figures
        (None: not idle)."""
        since = self._since.get(slurm_job_id)
        if since is None:
            return None
        return max(0.0, self._seen.get(slurm_job_id, since) - since)

    def latest(self, slurm_job_id: str) -> GpuSample | None:
        """The job's latest sample (None: never sampled)."""
        return self._latest.get(slurm_job_id)

    def keep_only(self, slurm_job_ids: Iterable[str]) -> None:
        """Forget jobs that are not running any more."""
        keep = set(slurm_job_ids)
        for table in (self._since, self._seen, self._latest):
            for job in [j for j in table if j not in keep]:
                del table[job]

    def idle_over(self, limit: float, jobs: Mapping[str, str]) -> dict[str, float]:
        """The jobs idle at least ``limit`` seconds: TAO id → idle seconds.

        Args:
            limit: seconds.
            jobs: SLURM job id → TAO id of the jobs to consider.
        """
        out: dict[str, float] = {}
        for slurm_id, job_id in jobs.items():
            idle = self.idle_seconds(slurm_id)
            if idle is not None and idle >= limit:
                out[job_id] = idle
        return out


def idle_words(seconds: float) -> str:
    """How long, in a few words: ``under a minute``, ``12 min``, ``2 h 05 min``."""
    minutes = int(seconds // 60)
    if minutes < 1:
        return "under a minute"
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"
