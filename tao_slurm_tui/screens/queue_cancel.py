"""The queue's cancel: asked before (a pipeline's step: this step or the whole pipeline),
scancel through the back end in a worker, and the jobs it changed announced as any tick's."""

from __future__ import annotations

from textual import work

from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.core.pipelines import Pipeline
from tao_slurm_tui.screens.queue_habits import QueueHabits
from tao_slurm_tui.services.backend import Transition, transitions


class QueueCancel(QueueHabits):
    """Base of :class:`~tao_slurm_tui.screens.queue.QueueScreen`: cancelling a job or a
    pipeline from the queue."""

    all_jobs: dict[str, JobRecord]
    """The snapshot shown (the queue's reactive)."""

    def _pipeline(self, pipeline_id: str) -> Pipeline | None:
        """The pipeline of that id in the snapshot (the queue's)."""
        raise NotImplementedError

    def _announce(self, events: list[Transition]) -> None:
        """Toast what changed (the queue's)."""
        raise NotImplementedError

    def action_cancel_job(self) -> None:
        """Cancel the selected job after confirmation."""
        job = self._selected()
        if job is None:
            return
        if job.status.terminal:
            self.notify(f"{job.id} already ended ({job.status}).", severity="warning")
            return

        from tao_slurm_tui.screens.confirm import ConfirmModal
        from tao_slurm_tui.screens.pipeline_cancel import CancelChoice, PipelineCancelModal

        pipeline = self._pipeline(job.pipeline_id)
        if pipeline is not None and len(pipeline.steps) > 1:

            def chosen(choice: CancelChoice | None) -> None:
                if choice == "step":
                    self.cancel_job(job.id)
                elif choice == "pipeline":
                    self.cancel_pipeline(job.pipeline_id)

            self.app.push_screen(PipelineCancelModal(job, pipeline), chosen)
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.cancel_job(job.id)

        question = f"Cancel {job.id}? Every SLURM attempt of it will be scancelled."
        self.app.push_screen(ConfirmModal(question, "Cancel job", danger=True), confirmed)

    @work(group="cancel", exit_on_error=False)
    async def cancel_job(self, job_id: str) -> None:
        """scancel through the back end, then show the result (a pipeline's step takes the
        steps after it along)."""
        job = await self.ctx.backend.cancel(job_id)
        self._after_cancel([job])

    @work(group="cancel", exit_on_error=False)
    async def cancel_pipeline(self, pipeline_id: str) -> None:
        """scancel every step of the pipeline that has not ended."""
        self._after_cancel(await self.ctx.backend.cancel_pipeline(pipeline_id))

    def _after_cancel(self, jobs: list[JobRecord]) -> None:
        before = self.all_jobs
        changed = {job.id: job for job in jobs}
        pipelines = {job.pipeline_id for job in jobs if job.pipeline_id}
        if pipelines:
            # The later steps changed too: take every step as the back end has it now.
            changed |= {j.id: j for j in self.ctx.backend.jobs() if j.pipeline_id in pipelines}
        self.all_jobs = before | changed
        self._announce(transitions(before, list(changed.values())))
