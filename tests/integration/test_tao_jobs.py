"""TAO jobs end to end on the sandbox: ``[tao]`` specs resolved against NVIDIA's schema, staged,
run by Pyxis in the TAO 7.3 stand-in image, and followed by the real monitor reading what TAO
writes (``results/<id>/<subtask>/status.json``, 0-based epochs, no SUCCESS line, FAILURE
messages, Hydra's refusal in the log).

- ``examples/tao-pipeline.toml``: train → evaluate → export reaches Complete, each later step
  taking the train step's ``*_latest.pth`` without a path in the spec;
- a dataset path that is not on the cluster is refused before anything is staged, its key named;
- a run TAO fails shows TAO's FAILURE message; a spec Hydra refuses (no status.json) shows
  Hydra's words.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tao_slurm_tui.config import Profile
from tao_slurm_tui.core.layout import JobPaths
from tao_slurm_tui.core.models import JobRecord, TaoStatus
from tao_slurm_tui.core.spec import ResolveContext, ResolvedJob, SpecDraft, resolve
from tao_slurm_tui.core.spec.tao_source import TaoContext
from tao_slurm_tui.core.tao.catalog import ImageSettings
from tao_slurm_tui.errors import BadInput
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.services.tao import TaoCatalogue
from tao_slurm_tui.services.tao_cache import Release
from tests import sandbox
from tests.integration.conftest import harness
from tests.integration.monitor_helpers import PROFILE, Harness, unique

pytestmark = pytest.mark.slow

EXAMPLES = sandbox.REPO / "examples"
RUN = 600.0
"""A TAO job pulls the image (a first pull on a busy 2-core machine takes a minute) and may pend
behind parallel tests for its GPU; a pipeline is three of them."""


@pytest.fixture
def pyxis_profile(cluster: None) -> Profile:
    """The sandbox as a Pyxis cluster (its TAO stand-in runs in containers)."""
    host = str(sandbox.info()["registry"]).rsplit(":", 1)[0]
    return sandbox.sandbox_profile(
        container_runtime="pyxis", registry_hosts=["nvcr.io", "authn.nvidia.com", host]
    )


@pytest.fixture
async def th(pyxis_profile: Profile, tmp_path: Path) -> AsyncIterator[Harness]:
    with sandbox.ngc_credentials():
        async with harness(pyxis_profile, JobStore(tmp_path / "state.db")) as hh:
            yield hh


@pytest.fixture
def catalogue(tao_release: Release) -> TaoCatalogue:
    return TaoCatalogue(release=tao_release, images=ImageSettings())


async def resolved(h: Harness, catalogue: TaoCatalogue, draft: SpecDraft) -> ResolvedJob:
    """``draft`` resolved as the back end does it for ``submit``."""
    context = ResolveContext(
        partition_limits=await h.submitter.partition_limits(),
        jobs={j.id: j for j in h.store.list_jobs(PROFILE)},
        profile_name=PROFILE,
        tao=TaoContext(catalogue, h.profile.results_root),
    )
    return resolve(draft, h.profile, context).require()


def example(file: str, **over: Any) -> SpecDraft:
    """An example spec of the repository as a user would submit it, fast epochs."""
    draft = SpecDraft.from_file(EXAMPLES / file)
    table = {**draft.table, **over}
    table["env"] = {**table.get("env", {}), "TAO_SANDBOX_EPOCH_SECONDS": "1"}
    return SpecDraft(table, draft.source, draft.base_dir)


def status_lines(job: JobRecord, subtask: str) -> list[dict[str, Any]]:
    path = Path(JobPaths(sandbox.RESULTS, job.id).subtask_status_json(subtask))
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def test_a_train_evaluate_export_pipeline_runs_with_its_checkpoints_wired(
    th: Harness, catalogue: TaoCatalogue
) -> None:
    name = unique("taopipe")
    draft = example("tao-pipeline.toml", name=name)
    job = await resolved(th, catalogue, draft)
    await th.submitter.submit(job)

    def ended(_: JobRecord) -> bool:
        return all(s.status.terminal for s in th.store.pipeline(PROFILE, name))

    await th.tick_until(f"{name}-export", ended, timeout=RUN, interval=2)
    train, evaluate, export = th.store.pipeline(PROFILE, name)
    assert [s.status for s in (train, evaluate, export)] == [TaoStatus.COMPLETE] * 3, [
        s.status_json() for s in (train, evaluate, export)
    ]
    # The train step as TAO 7.3 leaves it: 0-based epochs shown as epochs done, no SUCCESS line.
    assert train.progress.epoch_text == "3/3" and train.message == "Train finished successfully."
    assert all(line["status"] != "SUCCESS" for line in status_lines(train, "train"))
    checkpoint = Path(JobPaths(sandbox.RESULTS, train.id).subtask_dir("train"))
    latest = next(checkpoint.glob("*_latest.pth"))
    # evaluate and export loaded the train step's latest checkpoint, found when they started.
    loaded = [ln["message"] for ln in status_lines(evaluate, "evaluate") if "message" in ln]
    assert f"Loading checkpoint: {latest}" in loaded
    assert "test_acc_1" in evaluate.progress.kpi
    assert evaluate.message == "Evaluate finished successfully."
    onnx = Path(JobPaths(sandbox.RESULTS, export.id).subtask_dir("export")) / "model.onnx"
    assert json.loads(onnx.read_text())["from"] == str(latest)


async def test_a_missing_dataset_is_refused_before_anything_is_staged(
    th: Harness, catalogue: TaoCatalogue
) -> None:
    name = unique("taonodata")
    draft = example(
        "tao-classification.toml",
        name=name,
        tao={
            "network": "classification_pyt",
            "action": "train",
            "spec_file": "tao/classification_pyt.yaml",
            "spec": {"dataset.val_dataset.images_dir": "/home/slurmtest/datasets/nope"},
        },
    )
    job = await resolved(th, catalogue, draft)
    with pytest.raises(BadInput) as refused:
        await th.submitter.submit(job)
    assert (
        "1 dataset path does not exist on the cluster: /home/slurmtest/datasets/nope "
        "(dataset.val_dataset.images_dir); stage the data" in str(refused.value)
    )
    assert ".." not in str(refused.value)
    assert th.store.get(PROFILE, name) is None
    assert not Path(JobPaths(sandbox.RESULTS, name).tao_spec_yaml).exists()


async def test_tao_s_failure_and_hydra_s_refusal_are_the_reasons_shown(
    th: Harness, catalogue: TaoCatalogue
) -> None:
    # TAO's own FAILURE line: evaluate a checkpoint that is not there.
    gone = unique("taofail")
    draft = example(
        "tao-classification.toml",
        name=gone,
        tao={
            "network": "classification_pyt",
            "action": "evaluate",
            "spec_file": "tao/classification_pyt.yaml",
            "spec": {"evaluate.checkpoint": "/home/slurmtest/datasets/nope.pth"},
        },
    )
    await th.submitter.submit(await resolved(th, catalogue, draft))
    # A spec typo that reaches TAO (a command of one's own): Hydra refuses, no status.json.
    typo = unique("taohydra")
    spec = "/home/slurmtest/datasets/specs/classification_pyt-train.yaml"
    command = (
        f'classification_pyt train -e {spec} results_dir="$TAO_API_RESULTS_DIR/$TAO_JOB_ID" '
        "train.num_epoch=3"
    )
    free = example("tao-classification.toml", name=typo, command=command)
    free = SpecDraft({k: v for k, v in free.table.items() if k != "tao"}, free.source)
    await th.submitter.submit(await resolved(th, catalogue, free))

    failed = await th.tick_until(gone, lambda j: j.status.terminal, timeout=RUN, interval=2)
    assert failed.status is TaoStatus.ERROR, failed.status_json()
    assert failed.message == (
        "File system error: [Errno 2] No such file or directory: "
        "'/home/slurmtest/datasets/nope.pth'"
    )
    refused = await th.tick_until(typo, lambda j: j.status.terminal, timeout=RUN, interval=2)
    assert refused.status is TaoStatus.ERROR, refused.status_json()
    assert not Path(JobPaths(sandbox.RESULTS, typo).results_dir, "train").exists()
    assert refused.message == (
        "TAO refused the experiment spec before it started: Could not override "
        "'train.num_epoch': Key 'num_epoch' not in 'TrainExpConfig' (full key train.num_epoch). "
        "Fix the spec and submit again."
    )
