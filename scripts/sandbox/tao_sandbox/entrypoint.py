"""A network's console script, as TAO 7.3's launcher (``nvidia_tao_pytorch/core/entrypoint.py``).

``<network> <subtask> -e <spec.yaml> [key=value ...]``: the subtask must be one of the network's;
without ``-e``, or with a spec file that does not exist, it prints an ``ERROR:`` line and exits 1
(``default_specs`` needs no spec). The spec path is split into ``--config-path`` (its real
directory) and ``--config-name``; every other argument (``results_dir=...`` too) is passed on as a
Hydra override to the subtask, which runs as a child process whose output (stdout and stderr
merged) is relayed to stdout. At the end the launcher logs "Execution status: PASS" (exit 0) or
"Execution status: FAIL" (exit 1) on stderr, in TAO's log format. The launcher itself does not
handle SIGTERM: under SLURM it dies with the step while the child finishes its batch.
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys

from tao_sandbox.log import tao_line
from tao_sandbox.networks import NETWORKS


def log(level: str, message: str) -> None:
    frame = sys._getframe(1)
    print(tao_line(level, message, f"entrypoint.py:{frame.f_lineno}"), file=sys.stderr, flush=True)


def gpu_ids(subtask: str, spec: str | None, unknown: list[str]) -> list[int]:
    """TAO_VISIBLE_DEVICES as TAO computes it: command-line overrides, else the spec's
    ``<subtask>.num_gpus``/``gpu_ids``, else one GPU."""
    num_gpus, ids = 1, [0]
    if subtask not in ("train", "evaluate", "inference", "distill"):
        return ids
    joined = " " + " ".join(unknown)
    if any(key in joined for key in ("num_gpus", "gpu_ids", "cuda_blocking")):
        if "num_gpus=" in joined:
            num_gpus = int(joined.split("num_gpus=")[1].split()[0])
        if "gpu_ids=" in joined:
            ids = list(ast.literal_eval(joined.split("gpu_ids=")[1].split()[0]))
    elif spec:
        import yaml

        with open(spec, encoding="utf-8") as handle:
            loaded = yaml.safe_load(handle) or {}
        section = (
            loaded.get("train" if subtask == "distill" else subtask)
            if isinstance(loaded, dict)
            else None
        )
        if isinstance(section, dict):
            num_gpus = int(section.get("num_gpus", num_gpus))
            ids = list(section.get("gpu_ids", ids))
    if num_gpus != len(ids):
        log("WARNING", f"Number of gpus {num_gpus} != len({ids}).")
        num_gpus = max(num_gpus, len(ids))
        ids = list(range(num_gpus)) if len(ids) != num_gpus else ids
        log("INFO", f"Using GPUs {ids} (total {num_gpus})")
    return ids


def main(network: str, argv: list[str] | None = None) -> int:
    net = NETWORKS[network]
    parser = argparse.ArgumentParser(
        network, add_help=True, description=f"Train Adapt Optimize entrypoint for {network}"
    )
    parser.add_argument(
        "subtask",
        default="train",
        choices=[*net.subtasks, "default_specs"],
        help="Subtask for a given task/model.",
    )
    parser.add_argument(
        "-e", "--experiment_spec_file", help="Path to the experiment spec file.", default=None
    )
    args, unknown = parser.parse_known_args(argv)
    spec = args.experiment_spec_file
    child = [sys.executable, "-m", "tao_sandbox.runner", network, args.subtask]
    if args.subtask == "default_specs":
        child.append(f"module_name={network}")
    else:
        if spec is None:
            print(
                f"ERROR: The subtask `{args.subtask}` requires the following argument: "
                "-e/--experiment_spec_file",
                flush=True,
            )
            return 1
        if not os.path.exists(spec):
            print(f"ERROR: The indicated experiment spec file `{spec}` doesn't exist!", flush=True)
            return 1
        path, name = os.path.split(spec)
        if path:
            child += ["--config-path", os.path.realpath(path)]
        child += ["--config-name", name]
    child += unknown
    env = dict(os.environ)
    ids = gpu_ids(args.subtask, spec, unknown)
    env["TAO_VISIBLE_DEVICES"] = str(ids)[1:-1]

    passed = False
    try:
        proc = subprocess.Popen(
            child,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            bufsize=1,
            universal_newlines=True,
            env=env,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
        proc.wait()
        if proc.returncode == 0:
            log("INFO", "Command completed successfully with return code 0")
            passed = True
        else:
            log("INFO", f"Command completed with return code {proc.returncode}")
    except (KeyboardInterrupt, SystemExit):
        log("ERROR", "Command was interrupted")
        passed = True
    except Exception as exc:
        log("ERROR", f"Command encountered an exception: {exc}")
    # The image carries nvidia-tao-core's config tree only, so TAO's telemetry is absent.
    log("INFO", "Telemetry module not available, skipping telemetry data.")
    log("WARNING", "Telemetry data couldn't be sent, but the command ran successfully.")
    log("WARNING", "[Error]: nvidia_tao_core.telemetry is not available")
    if not passed:
        log("WARNING", "Execution status: FAIL")
        return 1
    log("INFO", "Execution status: PASS")
    return 0
