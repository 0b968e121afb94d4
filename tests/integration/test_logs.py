"""Log tailing against the real sandbox: across a client-side retry, and --tail."""

from __future__ import annotations

import asyncio

from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.services.backend import LogBatch
from tao_slurm_tui.services.logs import LogTailer, tail
from tests.integration.monitor_helpers import PROFILE, Harness, status_line, unique


async def test_logs_across_a_client_retry_show_both_attempts(h: Harness) -> None:
    name = unique("logretry")
    marker = '"$TAO_API_RESULTS_DIR/$TAO_JOB_ID/first-run-done"'
    command = (
        f'mkdir -p "$TAO_API_RESULTS_DIR/$TAO_JOB_ID"; if [ ! -e {marker} ]; then touch {marker}; '
        "echo 'first attempt says hi'; echo 'NCCL error: remote process exited' >&2; exit 1; fi; "
        f"echo 'second attempt says hi'; {status_line('SUCCESS', 'ok')}"
    )
    # requeue off: the batch script does not requeue itself, so the CLIENT retries (new SLURM id).
    job = await h.submit(name, command, use_requeue=False)
    tailer = LogTailer(h.conn, job, "out")

    async def refresh() -> JobRecord:
        await h.tick()
        return h.store.require(PROFILE, name)

    batches: list[LogBatch] = []
    # Bounded: two attempts, each may PEND ~2 minutes behind parallel tests.
    async with asyncio.timeout(420):
        async for batch in tailer.follow(
            refresh=refresh, refresh_every=1.0, min_interval=0.2, max_interval=1.0
        ):
            batches.append(batch)
    job = h.store.require(PROFILE, name)
    assert job.status is TaoStatus.COMPLETE, job.status_json()
    assert job.retries == 1 and len(job.attempts) == 2
    assert job.attempts[0].slurm_job_id != job.attempts[1].slurm_job_id
    assert "NCCL" in job.attempts[0].retry_reason or "NCCL" in job.attempts[1].retry_reason
    lines = [line for b in batches for line in b.lines]
    first = lines.index("first attempt says hi")
    second = lines.index("second attempt says hi")
    assert first < second
    separators = [b for b in batches if b.separator]
    assert len(separators) == 1
    assert job.attempts[1].slurm_job_id in (separators[0].separator or "")
    assert separators[0].attempt == 1
    # The separator comes after the first attempt's lines and before the second's.
    index = batches.index(separators[0])
    before = [line for b in batches[:index] for line in b.lines]
    assert "first attempt says hi" in before and "second attempt says hi" not in before

    # --tail reads only the end of the latest attempt.
    last = await tail(h.conn, job, "out", 1)
    assert last == ["second attempt says hi"]
    assert await tail(h.conn, job, "err", 5) == []
