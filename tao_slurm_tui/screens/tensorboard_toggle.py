"""``t`` on a TAO training (the queue, the job view): start TensorBoard in the job's allocation
and show (and copy) its local URL, or stop it when it runs."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from textual.app import App
from textual.dom import DOMNode

from tao_slurm_tui.core.models import JobRecord
from tao_slurm_tui.errors import TaoError
from tao_slurm_tui.services.backend import Backend


def toggle_tensorboard(node: DOMNode, backend: Backend, job: JobRecord) -> None:
    """Start or stop ``job``'s TensorBoard in a worker of ``node``; a refusal or failure is an
    error toast with its sentence (a screen's worker errors do not reach the app's handler:
    Textual's ``Worker.StateChanged`` does not bubble)."""
    app = node.app
    if backend.tensorboard_url(job.id):

        async def stop() -> None:
            await backend.stop_tensorboard(job.id)
            app.notify(f"TensorBoard for {job.id} stopped.", title="TensorBoard", timeout=4)

        node.run_worker(_said(app, stop()), group="tensorboard", exit_on_error=False)
        return

    async def start() -> None:
        app.notify(
            f"Starting TensorBoard in {job.id}'s allocation (the image may be imported first)…",
            title="TensorBoard",
            timeout=8,
        )
        url = await backend.start_tensorboard(job.id)
        app.copy_to_clipboard(url)
        app.notify(
            f"TensorBoard for {job.id}: {url} (copied; only this machine can open it). "
            "Press t again to stop it; it stops with the job.",
            title="TensorBoard",
            timeout=20,
        )

    node.run_worker(_said(app, start()), group="tensorboard", exit_on_error=False)


async def _said(app: App[Any], work: Coroutine[Any, Any, None]) -> None:
    """Run ``work``; its one-sentence failure becomes an error toast."""
    try:
        await work
    except TaoError as error:
        app.notify(str(error), title="TensorBoard", severity="error", timeout=10)
