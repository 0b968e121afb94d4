"""One TAO subtask, as TAO 7.3 runs it in the child process its launcher starts.

``python3 -m tao_sandbox.runner NETWORK SUBTASK --config-path DIR --config-name FILE [overrides]``

What happens, in TAO's order (nvidia-tao-pytorch 7.3.0, Lightning 2.5):

1. Hydra composes the spec: ``OmegaConf.structured(ExperimentConfig)`` of nvidia-tao-core merged
   with the YAML file, then the ``key=value`` overrides. A key the schema lacks or a value of the
   wrong type fails HERE, before any of TAO's code runs: Hydra prints "Error merging 'spec.yaml'
   with schema" (or "Could not override ...") and exits 1, and no ``status.json`` is written.
2. ``monitor_status``: ``results_dir`` becomes ``<results_dir>/<subtask>`` (unless
   ``<subtask>.results_dir`` is set), ``experiment.yaml`` is saved there, ``status.json`` gets
   STARTED; an error raised while the subtask runs becomes a FAILURE line with TAO's prefix
   ("Configuration error:", "Parameter validation error:", "File system error:", "Feature not
   implemented:") and is re-raised (Hydra prints the traceback, exit 1).
3. The subtask. ``train`` simulates Lightning's ``fit``: sanity check, epochs of batches, validation
   every ``validation_interval`` epochs, TAO's status callback, ``ModelCheckpoint`` every
   ``checkpoint_interval`` epochs (``model_epoch_XXX[_step_YYYYY].pth`` plus the
   ``<model>_latest.pth`` link), auto-resume from ``*_latest.pth``, TensorBoard events, and SIGTERM
   as Lightning handles it (stop after the batch, ``on_exception`` callbacks, exit 0 with no
   status line). ``TAO_SANDBOX_EPOCH_SECONDS`` sets the seconds per epoch.
"""

from __future__ import annotations

import glob
import importlib
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import time
import traceback
from typing import Any

from tao_sandbox import status as st
from tao_sandbox.events import EventWriter
from tao_sandbox.log import logger
from tao_sandbox.networks import NETWORKS, Network

CONFIG_JSON = "nvidia_tao_core/microservices/handlers/network_configs/{}.config.json"
HYDRA_HINT = "\nSet the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace."
LIGHTNING_VERSION = "2.5.1"


class HydraError(Exception):
    """A composition error: Hydra prints the message and exits 1 before the task runs."""


class MisconfigurationException(Exception):
    """Lightning's error for a device request the machine cannot satisfy."""


MisconfigurationException.__module__ = "lightning_fabric.utilities.exceptions"


class SIGTERMException(SystemExit):
    """Lightning raises it after the batch in which SIGTERM arrived (exit status 0)."""


SIGTERMException.__module__ = "pytorch_lightning.utilities.exceptions"


# ------------------------------------------------------------------------------- composition


def parse_hydra_args(argv: list[str]) -> tuple[str, str, list[str]]:
    """(config path, config name, overrides) from Hydra's command line."""
    path, name, overrides = "", "", []
    it = iter(argv)
    for arg in it:
        if arg in ("--config-path", "-cp"):
            path = next(it, "")
        elif arg in ("--config-name", "-cn"):
            name = next(it, "")
        elif arg.startswith("--config-path="):
            path = arg.split("=", 1)[1]
        elif arg.startswith("--config-name="):
            name = arg.split("=", 1)[1]
        else:
            overrides.append(arg)
    return path, name, overrides


def parse_value(text: str) -> Any:
    """A Hydra override value: null, bools, numbers, quoted strings, lists, dicts; else a string."""
    import yaml

    if text == "":
        return ""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if isinstance(value, (dict, list, int, float, bool, str)) or value is None:
        return value
    return text


def schema(network: str) -> Any:
    from omegaconf import OmegaConf

    module = importlib.import_module(f"nvidia_tao_core.config.{network}.default_config")
    return OmegaConf.structured(module.ExperimentConfig)


def compose(network: str, config_path: str, config_name: str, overrides: list[str]) -> Any:
    """The experiment config as Hydra builds it, or HydraError with Hydra's message."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    cfg = schema(network)
    spec = os.path.join(config_path, config_name)
    try:
        user = OmegaConf.load(spec)
    except FileNotFoundError as exc:
        raise HydraError(
            f"Cannot find primary config '{config_name}'. "
            "Check that it's in your config search path."
        ) from exc
    except Exception as exc:  # yaml errors
        raise HydraError(f"Error loading '{config_name}':\n{exc}") from exc
    try:
        cfg = OmegaConf.merge(cfg, user)
    except OmegaConfBaseException as exc:
        raise HydraError(f"Error merging '{config_name}' with schema\n{exc}") from exc
    OmegaConf.set_struct(cfg, True)
    for item in overrides:
        if item.startswith("hydra.") or item.startswith("hydra/"):
            continue
        if item.startswith("~"):
            key = item[1:].split("=", 1)[0]
            raise HydraError(
                f"Could not delete from config. '{key}' cannot be deleted from a structured config."
            )
        plus = 0
        while item.startswith("+"):
            plus += 1
            item = item[1:]
        if "=" not in item:
            raise HydraError(
                f"Error parsing override '{item}'\nmissing EQUAL at '<EOF>'\n"
                "See https://hydra.cc/docs/1.2/advanced/override_grammar/basic for details"
            )
        key, raw = item.split("=", 1)
        value = parse_value(raw)
        try:
            exists = (
                OmegaConf.select(cfg, key, default=KeyError, throw_on_missing=False) is not KeyError
            )
        except OmegaConfBaseException:
            exists = False
        if not exists and not plus:
            try:
                OmegaConf.update(cfg, key, value, merge=True)
            except OmegaConfBaseException as exc:
                raise HydraError(
                    f"Could not override '{key}'.\nTo append to your config use +{item}\n{exc}"
                ) from exc
            continue
        try:
            OmegaConf.update(cfg, key, value, merge=True, force_add=plus > 0)
        except OmegaConfBaseException as exc:
            raise HydraError(f"Error merging override {item}\n{exc}") from exc
    return cfg


# ------------------------------------------------------------------------------- monitor_status


def update_results_dir(cfg: Any, task: str) -> Any:
    """TAO's ``update_results_dir``: the subtask writes into ``<results_dir>/<task>``."""
    if cfg[task]["results_dir"]:
        cfg["results_dir"] = cfg[task]["results_dir"]
    elif cfg["results_dir"]:
        cfg["results_dir"] = os.path.join(cfg["results_dir"], task)
        cfg[task]["results_dir"] = cfg["results_dir"]
    else:
        raise ValueError(
            "You need to set at least one of following fields: results_dir, {mode}.results_dir"
        )
    print(f"{task.capitalize()} results will be saved at: {cfg['results_dir']}", flush=True)
    return cfg


def monitor_status(net: Network, mode: str, cfg: Any) -> None:
    from omegaconf import OmegaConf
    from omegaconf.errors import ConfigKeyError, MissingMandatoryValue, UnsupportedInterpolationType

    cfg = update_results_dir(cfg, task=mode)
    results_dir = cfg["results_dir"]
    os.makedirs(results_dir, exist_ok=True)
    OmegaConf.save(cfg, os.path.join(results_dir, "experiment.yaml"))
    slog = st.StatusLogger(os.path.join(results_dir, "status.json"))
    logger.status = slog
    slog.write(status=st.STARTED, message=f"Starting {net.titles[mode]} {mode}.")
    try:
        TASKS[mode](net, cfg, slog)
        slog.write(status=st.RUNNING, message=f"{mode.capitalize()} finished successfully.")
    except (KeyboardInterrupt, SystemError):
        slog.write(
            status=st.FAILURE,
            message=f"User/System interruption: {mode.capitalize()} was interrupted",
        )
    except (ConfigKeyError, MissingMandatoryValue, UnsupportedInterpolationType) as exc:
        slog.write(status=st.FAILURE, message=f"Configuration error: {exc}")
        raise
    except NotImplementedError as exc:
        slog.write(status=st.FAILURE, message=f"Feature not implemented: {exc}")
        raise
    except (ValueError, TypeError) as exc:
        slog.write(status=st.FAILURE, message=f"Parameter validation error: {exc}")
        raise
    except OSError as exc:
        slog.write(status=st.FAILURE, message=f"File system error: {exc}")
        raise


# ------------------------------------------------------------------------------- the data


def data_sources(network: str, action: str) -> list[str]:
    """The spec keys that are dataset paths for this action (nvidia-tao-core's network config)."""
    for root in sys.path:
        path = os.path.join(root, CONFIG_JSON.format(network))
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                return list(json.load(handle).get("data_sources", {}).get(action, {}))
    return []


IMAGE_EXT = (".jpg", ".jpeg", ".png", ".bmp")


def count_images(path: str) -> int:
    if os.path.isfile(path):
        return 1
    found = 0
    for _root, _dirs, files in os.walk(path):
        found += sum(1 for name in files if name.lower().endswith(IMAGE_EXT))
    return found


def _must_exist(path: Any) -> str:
    if not isinstance(path, str) or not os.path.exists(path):
        raise FileNotFoundError(
            2, "No such file or directory", path if isinstance(path, str) else str(path)
        )
    return path


def source_paths(value: Any) -> list[Any]:
    """The paths in a data-source value: a path, a list of sources, or a source (a mapping whose
    ``*_dir``/``*_file``/``classmap`` entries are paths)."""
    from omegaconf import OmegaConf

    if OmegaConf.is_list(value):
        return [p for item in value for p in source_paths(item)]
    if OmegaConf.is_dict(value):
        keys = [k for k in value if str(k).endswith(("_dir", "_file")) or k == "classmap"]
        return [p for k in keys for p in source_paths(value[k])]
    return [value]


def check_data(net: Network, action: str, cfg: Any) -> int:
    """Every dataset path the action reads must exist (a missing one is TAO's "File system
    error"); returns the number of samples of the first source (train: the epoch's size)."""
    from omegaconf import OmegaConf

    samples = 0
    for key in data_sources(net.name, action):
        value = OmegaConf.select(cfg, key)
        paths = source_paths(value) if value is not None else [""]
        for path in paths or [""]:
            _must_exist("" if path is None else path)
        if samples:
            continue
        first = value[0] if OmegaConf.is_list(value) and len(value) else value
        if OmegaConf.is_dict(first):
            samples = coco_images(str(first.get("json_file", ""))) or count_images(
                str(first.get("image_dir", ""))
            )
        elif isinstance(first, str) and os.path.isdir(first):
            samples = count_images(first)
    return samples


def coco_images(path: str) -> int:
    try:
        with open(path, encoding="utf-8") as handle:
            return len(json.load(handle).get("images", []))
    except (OSError, ValueError, AttributeError):
        return 0


# ------------------------------------------------------------------------------- checkpoints


def checkpoint_name(net: Network, epoch: int, step: int) -> str:
    """ModelCheckpoint's file name with TAO's ``CHECKPOINT_EQUALS_CHAR = "_"``."""
    if net.per_step_names:
        return f"model_epoch_{epoch:03d}_step_{step:05d}.pth"
    return f"model_epoch_{epoch:03d}.pth"


def latest_link(net: Network, results_dir: str) -> str:
    return os.path.join(results_dir, f"{net.checkpoint_prefix}_latest.pth")


def get_latest_checkpoint(results_dir: str) -> str | None:
    """TAO's ``get_latest_checkpoint``: the real path of the first ``*_latest.pth``."""
    found = glob.glob(os.path.join(results_dir, "*_latest.pth"))
    return os.path.realpath(found[0]) if found else None


def save_checkpoint(net: Network, results_dir: str, name: str, state: dict[str, Any]) -> str:
    """Write a checkpoint and point ``<model>_latest.pth`` at it (Lightning's ``save_last="link"``:
    a relative symlink)."""
    path = os.path.join(results_dir, name)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(state, handle)
    os.replace(tmp, path)
    link = latest_link(net, results_dir)
    if os.path.islink(link) or os.path.isfile(link):
        os.remove(link)
    os.symlink(os.path.relpath(path, results_dir), link)
    return path


def load_checkpoint(path: str) -> dict[str, Any]:
    """``torch.load``: a missing file is FileNotFoundError; a file that is no checkpoint fails to
    unpickle (not one of TAO's handled errors: no FAILURE line, only the traceback)."""
    import pickle

    with open(path, encoding="utf-8", errors="replace") as handle:
        text = handle.read()
    try:
        state = json.loads(text)
    except ValueError:
        state = None
    if not isinstance(state, dict) or "pytorch-lightning_version" not in state:
        raise pickle.UnpicklingError(f"invalid load key, '{text[:1] or 'x'}'.")
    return state


# ------------------------------------------------------------------------------- devices


def visible_gpus() -> int:
    devices = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    return len([d for d in devices.split(",") if d.strip()]) if devices.strip() else 0


def claim_gpus(cfg: Any, section: str) -> list[int]:
    """TAO sets ``<section>.num_gpus``/``gpu_ids`` from TAO_VISIBLE_DEVICES; Lightning then asks
    CUDA for them (there is no CPU fallback in TAO's trainers)."""
    raw = os.environ.get("TAO_VISIBLE_DEVICES", "0")
    gpus = [int(g) for g in raw.split(",") if g.strip()]
    cfg[section]["num_gpus"] = len(gpus)
    cfg[section]["gpu_ids"] = gpus
    have = visible_gpus()
    if have == 0:
        raise MisconfigurationException("No supported gpu backend found!")
    if max(gpus) >= have:
        raise MisconfigurationException(
            f"You requested gpu: {gpus}\n But your machine only has: {list(range(have))}"
        )
    return gpus


# ------------------------------------------------------------------------------- train


class Signals:
    """Lightning's signal connector: SIGTERM sets a flag read after each batch; under SLURM
    (SLURMEnvironment detected, auto-requeue on) SIGUSR1 saves an HPC checkpoint and requeues."""

    def __init__(self, results_dir: str, state: dict[str, Any]) -> None:
        self.sigterm = False
        self.results_dir = results_dir
        self.state = state
        job_name = os.environ.get("SLURM_JOB_NAME", "")
        self.slurm = "SLURM_NTASKS" in os.environ and job_name not in ("bash", "interactive")
        signal.signal(signal.SIGTERM, self._term)
        if self.slurm:
            signal.signal(signal.SIGUSR1, self._usr1)

    def _term(self, signum: int, _frame: object) -> None:
        logger.lightning(f"Received SIGTERM: {signum}")
        if self.slurm:
            logger.lightning(f"Bypassing SIGTERM: {signum}")
        self.sigterm = True

    def _usr1(self, signum: int, _frame: object) -> None:
        logger.lightning(f"Handling auto-requeue signal: {signum}")
        existing = glob.glob(os.path.join(self.results_dir, "hpc_ckpt_*.ckpt"))
        numbers = [int(m.group(1)) for p in existing if (m := re.search(r"hpc_ckpt_(\d+)", p))]
        path = os.path.join(self.results_dir, f"hpc_ckpt_{max(numbers, default=0) + 1}.ckpt")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(self.state, handle)
        job = os.environ.get("SLURM_JOB_ID", "")
        if os.environ.get("SLURM_ARRAY_JOB_ID"):
            job = f"{os.environ['SLURM_ARRAY_JOB_ID']}_{os.environ.get('SLURM_ARRAY_TASK_ID', '')}"
        logger.lightning(f"requeing job {job}...")
        try:
            result = subprocess.call(["scontrol", "requeue", job])
        except FileNotFoundError:
            result = subprocess.call(f"scontrol requeue {job}", shell=True)
        if result == 0:
            logger.lightning(f"Requeued SLURM job: {job}")
        else:
            logger.lightning(
                f"Requeuing SLURM job {job} failed with error code {result}", level="WARNING"
            )


def epoch_seconds() -> float:
    try:
        return max(0.05, float(os.environ.get("TAO_SANDBOX_EPOCH_SECONDS", "3")))
    except ValueError:
        return 3.0


def kpis(net: Network, seed: int, epoch: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(train, validation) KPIs of an epoch: a loss that falls, an accuracy or mAP that rises."""
    rnd = random.Random(seed * 1000 + epoch)
    train_loss = 2.2 * math.exp(-epoch / 5) + 0.05 + rnd.uniform(0, 0.03)
    val_loss = train_loss * 1.08 + rnd.uniform(0, 0.03)
    if net.detector:
        ap = min(0.62, 0.62 * (1 - math.exp(-(epoch + 1) / 4)) + rnd.uniform(0, 0.01))
        # DINO and RT-DETR write mAP as str(float) (pl_dino_model.py: str(mAP)).
        val = {"val_mAP": str(ap), "val_mAP50": str(min(0.85, ap * 1.4)), "val_loss": val_loss}
    else:
        val = {
            "val_loss": val_loss,
            "val_acc_1": min(0.98, 0.98 * (1 - math.exp(-(epoch + 1) / 3)) + rnd.uniform(0, 0.01)),
        }
    return {"train_loss": train_loss}, val


def train(net: Network, cfg: Any, slog: st.StatusLogger) -> None:
    from omegaconf import OmegaConf

    logger.info(f"Experiment configuration:\n{OmegaConf.to_yaml(obfuscated(cfg))}")
    results_dir = cfg["results_dir"]
    total = int(cfg.train.num_epochs)
    ck_interval = int(cfg.train.checkpoint_interval)
    val_interval = int(cfg.train.validation_interval)
    unit = cfg.train.get("checkpoint_interval_unit", "epoch")
    if unit == "epoch":
        assert ck_interval <= total, (
            f"Checkpoint interval {ck_interval} > Number of epochs {total}."
            f"Please set experiment_config.train.checkpoint_interval <= {total}"
        )
    assert val_interval <= total, (
        f"Validation interval {val_interval} > Number of epochs {total}."
        f"Please set experiment_config.train.validation_interval <= {total}"
    )
    resume = cfg.train.resume_training_checkpoint_path or None
    if not resume:
        resume = get_latest_checkpoint(results_dir)
    if resume:
        if resume.endswith(".tlt") or resume.endswith(".pth"):
            logger.info(f"Setting resume checkpoint to {resume}")
            slog.write(status=st.RUNNING, message=f"Resuming training from checkpoint: {resume}")
        else:
            raise ValueError(
                "Resume checkpoint has an invalid file format; it must be either a .tlt or a .pth"
            )
    gpus = claim_gpus(cfg, "train")
    precision = str(cfg.train.get("precision", "fp32")).lower()
    if precision not in ("fp16", "bf16", "fp32"):
        raise NotImplementedError(
            f"{precision} is not supported. Only bf16, fp16, and fp32 are supported"
        )
    samples = check_data(net, "train", cfg) or 1
    batch = max(1, int(cfg.dataset.batch_size) * max(1, len(gpus)))
    batches = max(1, math.ceil(samples / batch))

    epoch, step, done_in_epoch = 0, 0, 0
    if resume:
        state = load_checkpoint(resume)
        epoch, step = int(state["epoch"]), int(state["global_step"])
        done_in_epoch = int(state.get("batches_done_in_epoch", batches))
        if done_in_epoch >= batches:  # saved at an epoch end: go on with the next epoch
            epoch, done_in_epoch = epoch + 1, 0

    seed = int(cfg.train.seed)
    state: dict[str, Any] = {}
    sig = Signals(results_dir, state)
    events = EventWriter(os.path.join(results_dir, "lightning_logs", "version_1"))
    with open(
        os.path.join(results_dir, "lightning_logs", "version_1", "hparams.yaml"),
        "w",
        encoding="utf-8",
    ) as h:
        h.write("{}\n")
    per_batch = epoch_seconds() * 0.9 / batches
    per_val = epoch_seconds() * 0.1

    def snapshot(in_epoch: int) -> dict[str, Any]:
        state.clear()
        state.update(
            {
                "epoch": epoch,
                "global_step": step,
                "batches_done_in_epoch": in_epoch,
                "pytorch-lightning_version": LIGHTNING_VERSION,
                "network": net.name,
                "state_dict": {
                    "model.head.fc.weight": [round(math.sin(step + i), 6) for i in range(8)]
                },
            }
        )
        return state

    try:
        if epoch >= total:
            # Lightning: `Trainer.fit` stopped: `max_epochs` reached, no train-start/end hooks.
            logger.lightning(f"`Trainer.fit` stopped: `max_epochs={total}` reached.")
            return
        time.sleep(min(0.2, per_val))  # the sanity check: two validation batches, no status lines
        slog.write(status=st.STARTED, message="Starting Training Loop.")
        avg_batch, nsteps = 0.0, 0
        while epoch < total:
            started = time.time()
            for index in range(done_in_epoch, batches):
                t0 = time.time()
                time.sleep(per_batch)
                step += 1
                nsteps += 1
                avg_batch = (time.time() - t0 + (nsteps - 1) * avg_batch) / nsteps
                snapshot(index + 1)
                if index + 1 == batches and (epoch + 1) % val_interval == 0:
                    time.sleep(per_val)
                    _, val = kpis(net, seed, epoch)
                    slog.kpi = val
                    slog.write(status=st.RUNNING, message="Eval metrics generated.")
                    for key, value in val.items():
                        events.scalar(key, float(value), step)
                if sig.sigterm and (index + 1 < batches or epoch + 1 < total):
                    raise SIGTERMException
            done_in_epoch = 0
            took = time.time() - started
            slog.write(
                data={
                    "epoch": epoch,
                    "step": step,
                    "max_epoch": total - 1,
                    "max_step": total * batches,
                    "time_per_epoch": st.td(took),
                    "time_per_step": st.td(avg_batch),
                    "eta": st.td((total - 1 - epoch) * took),
                },
                message="Training loop in progress",
            )
            train_kpi, _ = kpis(net, seed, epoch)
            slog.kpi = train_kpi
            slog.write(status=st.RUNNING, message="Train metrics generated.")
            events.scalar("train_loss_epoch", train_kpi["train_loss"], step)
            events.scalar("epoch", float(epoch), step)
            if unit == "epoch" and (epoch + 1) % ck_interval == 0:
                save_checkpoint(
                    net, results_dir, checkpoint_name(net, epoch, step), snapshot(batches)
                )
            epoch += 1  # Lightning's current_epoch counts the completed epoch from here on
            if sig.sigterm:
                raise SIGTERMException
        slog.write(status=st.RUNNING, message="Training loop complete.")
    except SIGTERMException:
        # TAOExceptionCheckpoint saves only in a single-process run (world_size 1).
        if net.exception_checkpoint and len(gpus) * int(cfg.train.num_nodes) == 1:
            name = f"model_epoch_{epoch:03d}_step_{step:05d}.pth"
            save_checkpoint(net, results_dir, name, dict(state))
        raise
    finally:
        events.close()


def obfuscated(cfg: Any) -> Any:
    from omegaconf import OmegaConf

    config = OmegaConf.to_container(cfg)
    if isinstance(config, dict) and "encryption_key" in config:
        config["encryption_key"] = "*" * random.randint(3, 10)
    return config


# ------------------------------------------------------------------------------- other subtasks


def _load_model(cfg: Any, section: str, slog: st.StatusLogger) -> dict[str, Any]:
    path = cfg[section]["checkpoint"]  # MissingMandatoryValue when left ???
    slog.write(status=st.RUNNING, message=f"Loading checkpoint: {path}")
    return load_checkpoint(path)


def evaluate(net: Network, cfg: Any, slog: st.StatusLogger) -> None:
    state = _load_model(cfg, "evaluate", slog)
    claim_gpus(cfg, "evaluate")
    check_data(net, "evaluate", cfg)
    time.sleep(min(2.0, epoch_seconds() / 2))
    _, val = kpis(net, int(cfg.train.seed), int(state.get("epoch", 0)))
    if net.detector:
        slog.kpi = {"test_mAP": val["val_mAP"], "test_mAP50": val["val_mAP50"]}
    else:
        slog.kpi = {"test_acc_1": val["val_acc_1"]}
    slog.write(status=st.RUNNING, message="Test metrics generated.")


def export(net: Network, cfg: Any, slog: st.StatusLogger) -> None:
    checkpoint = cfg.export.checkpoint
    output = cfg.export.onnx_file
    state = load_checkpoint(checkpoint)
    if output.endswith(".etlt"):
        output = output.replace(".etlt", ".onnx")
    with open(output, "w", encoding="utf-8") as handle:  # FileNotFoundError when its dir is missing
        json.dump(
            {
                "format": "onnx-stand-in",
                "network": net.name,
                "from": checkpoint,
                "epoch": state.get("epoch"),
            },
            handle,
        )
    logger.info(f"ONNX file stored at {output}")


def inference(net: Network, cfg: Any, slog: st.StatusLogger) -> None:
    state = _load_model(cfg, "inference", slog)
    claim_gpus(cfg, "inference")
    check_data(net, "inference", cfg)
    time.sleep(min(2.0, epoch_seconds() / 2))
    out = os.path.join(cfg["results_dir"], "result.csv" if not net.detector else "results.json")
    with open(out, "w", encoding="utf-8") as handle:
        handle.write(
            json.dumps({"network": net.name, "checkpoint_epoch": state.get("epoch")}) + "\n"
        )


def not_in_sandbox(net: Network, cfg: Any, slog: st.StatusLogger) -> None:
    raise NotImplementedError("this subtask is not available in the sandbox's TAO stand-in")


TASKS = {
    "train": train,
    "evaluate": evaluate,
    "export": export,
    "inference": inference,
    "distill": not_in_sandbox,
    "quantize": not_in_sandbox,
    "convert": not_in_sandbox,
}


def default_specs(overrides: list[str]) -> int:
    """TAO's ``default_specs``: the network's defaults as YAML, to stdout or
    ``<results_dir>/experiment.yaml``."""
    from omegaconf import OmegaConf

    opts = dict(o.split("=", 1) for o in overrides if "=" in o)
    module = opts.get("module_name", "")
    if module not in NETWORKS:
        message = (
            f"Module '{module}' is not supported.\nSupported modules: {', '.join(sorted(NETWORKS))}"
        )
        logger.error(message)
        raise ValueError(message)
    text = OmegaConf.to_yaml(schema(module))
    results_dir = opts.get("results_dir")
    if results_dir and results_dir != "null":
        os.makedirs(results_dir, exist_ok=True)
        out = os.path.join(results_dir, "experiment.yaml")
        with open(out, "w", encoding="utf-8") as handle:
            handle.write(text)
        logger.info(f"Default specification file for {module} generated at '{out}'")
    else:
        print(text, end="")
    return 0


# ------------------------------------------------------------------------------- main


def main(argv: list[str]) -> int:
    network, subtask, rest = argv[0], argv[1], argv[2:]
    net = NETWORKS[network]
    config_path, config_name, overrides = parse_hydra_args(rest)
    try:
        if subtask == "default_specs":
            return default_specs(overrides)
        print(
            f"sys:1: UserWarning: \n'{config_name}' is validated against ConfigStore schema "
            "with the same name.\n"
            "This behavior is deprecated in Hydra 1.1 and will be removed in Hydra 1.2.\n"
            "See https://hydra.cc/docs/1.2/upgrades/1.0_to_1.1/automatic_schema_matching "
            "for migration instructions.",
            file=sys.stderr,
            flush=True,
        )
        try:
            cfg = compose(network, config_path, config_name, overrides)
        except HydraError as exc:
            print(f"{exc}\n{HYDRA_HINT}", file=sys.stderr, flush=True)
            return 1
        monitor_status(net, subtask, cfg)
    except SIGTERMException:
        return 0
    except Exception:
        shown = [o for o in overrides if not o.startswith("hydra")]
        print(f"Error executing job with overrides: {shown}", file=sys.stderr)
        traceback.print_exc()
        print(HYDRA_HINT, file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
