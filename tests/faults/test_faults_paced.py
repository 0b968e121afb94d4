"""The paced monitor (the queue screen's and ``status --watch``'s) through SLURM daemon faults.

It asks slurmctld only at its pace; an outage must still neither end a job wrongly nor stop the
monitoring: slurmctld stopped (squeue fails: the pace asks again after a while, the job stays
as it was), and slurmdbd stopped while the job ends (its ``end`` line asks squeue at once; the
finished state waits for accounting to agree, then the job ends Complete).
"""

from __future__ import annotations

import pytest

from tao_slurm_tui.core import pace
from tao_slurm_tui.core.models import TaoStatus
from tao_slurm_tui.errors import TaoError
from tests.faults import daemons
from tests.faults.test_faults import (
    assert_no_orphan,
    known_ids,
    one_sentence,
    slurmdbd_stopped_while_a_job_ends,
)
from tests.integration.monitor_helpers import PROFILE, Harness, unique

pytestmark = pytest.mark.slow


async def test_slurmctld_restarted_under_a_paced_monitor(paced: Harness) -> None:
    h = paced
    name = unique("fpctld")
    await h.submit(name, "sleep 600")
    await h.tick_until(name, lambda j: j.status is TaoStatus.RUNNING)
    daemons.stop("slurmctld")
    try:
        h.skew += pace.RUNNING_QUIET  # the pace is due: the tick asks the stopped controller
        failed = False
        try:
            result = await h.monitor.tick()
            assert result.asked
            # (The backup controller may answer in its place once it took over.)
            failed = "squeue failed" in result.warning
        except TaoError as exc:
            one_sentence(str(exc))
        job = h.store.require(PROFILE, name)
        assert job.status is TaoStatus.RUNNING, "a controller outage must not end the job"
        if failed:  # a failed answer is asked again after a while, not on every tick
            assert not (await h.monitor.tick()).asked
    finally:
        daemons.start("slurmctld")
    daemons.slurmctld_up()
    h.skew += pace.AFTER_FAILURE
    job = await h.tick_until(name, lambda j: j.status is TaoStatus.RUNNING, timeout=90)
    assert len(job.attempts) == 1 and job.retries == 0
    assert_no_orphan(name, known_ids(h, name))


async def test_slurmdbd_stopped_while_a_paced_job_ends(paced: Harness) -> None:
    # Its "end" line asks squeue at once; the finished state waits for accounting to agree.
    await slurmdbd_stopped_while_a_job_ends(paced, unique("fpdbd"))
