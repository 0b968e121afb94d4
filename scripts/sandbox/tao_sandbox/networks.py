"""The networks the stand-in carries, with what TAO 7.3's code for each says (nvidia-tao-pytorch
7.3.0: ``cv/<network>/scripts/*.py`` for the names in status lines, ``cv/<network>/model/pl_*``
for the checkpoint file names and the KPI keys)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Network:
    name: str
    #: ``@monitor_status(name=...)`` per subtask ("Starting <name> <mode>.").
    titles: dict[str, str]
    #: ``self.checkpoint_filename``: the latest checkpoint is ``<prefix>_latest.pth``.
    checkpoint_prefix: str
    #: ModelCheckpoint ``filename``: ``model_{epoch:03d}`` or ``..._{step:05d}`` after it.
    per_step_names: bool
    #: TAOExceptionCheckpoint among the callbacks (TAOLightningModule's default; classification_pyt
    #: overrides ``configure_callbacks`` without it, so it saves nothing on an interruption).
    exception_checkpoint: bool
    detector: bool
    #: Subtasks of ``cv/<network>/scripts`` (``default_specs`` is added by the launcher).
    subtasks: tuple[str, ...]


NETWORKS: dict[str, Network] = {
    "classification_pyt": Network(
        name="classification_pyt",
        titles={
            "train": "Classification",
            "evaluate": "Classification",
            "inference": "Classification",
            "export": "Classifier",
            "distill": "Class_pt",
            "quantize": "Class_pt",
        },
        checkpoint_prefix="classifier_model",
        per_step_names=False,
        exception_checkpoint=False,
        detector=False,
        subtasks=("distill", "evaluate", "export", "inference", "quantize", "train"),
    ),
    "dino": Network(
        name="dino",
        titles=dict.fromkeys(
            ("train", "evaluate", "inference", "export", "distill", "quantize"), "DINO"
        ),
        checkpoint_prefix="dino_model",
        per_step_names=True,
        exception_checkpoint=True,
        detector=True,
        subtasks=("convert", "distill", "evaluate", "export", "inference", "quantize", "train"),
    ),
    "rtdetr": Network(
        name="rtdetr",
        titles={
            **dict.fromkeys(("train", "evaluate", "inference", "export", "quantize"), "RT-DETR"),
            "distill": "RTDETR",
        },
        checkpoint_prefix="rtdetr_model",
        per_step_names=True,
        exception_checkpoint=True,
        detector=True,
        subtasks=("distill", "evaluate", "export", "inference", "quantize", "train"),
    ),
}
