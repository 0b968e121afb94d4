"""Benchmark: what knowing TAO costs a researcher's workstation.

Side by side in one run (no cluster needed):

- **first use**: download the pinned nvidia-tao-core wheel from PyPI + verify + extract + build
  the catalogue index, against the same from a local copy of the wheel (an offline site);
- **warm `tao networks`**: a new process listing the catalogue from the cached index, against
  `config path` (a verb that reads nothing: the interpreter and CLI start-up floor), and against
  what the index saves: a process that imports every network's schema to list them;
- **one schema**: `tao spec classification_pyt train` in a new process (NVIDIA's modules
  compiled from the verified cache, omegaconf imported), against warm `tao networks`;
- **the spec check**: one `check_spec` of a classification_pyt train spec, in-process.

``.venv/bin/python bench/tao.py``. Writes the table into bench/RESULTS.md (section "tao").
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _sandbox import REPO, fmt_s, table, write_results

from tao_slurm_tui.services.tao_cache import download, ensure_wheel_file, load_pins, open_release
from tao_slurm_tui.services.tao_loader import load_schema

RUNS = 15


def cli_seconds(commands: list[list[str]], env: dict[str, str], runs: int = RUNS) -> list[float]:
    """Median wall time of each ``tao-slurm-tui ARGS`` in a new interpreter, the commands
    interleaved run by run so that each sees the same machine load."""
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for i, args in enumerate(commands):
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "tao_slurm_tui", *args],
                env=env,
                cwd=REPO,
                check=True,
                capture_output=True,
            )
            times[i].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def python_seconds(code: str, env: dict[str, str], runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        wheel = ensure_wheel_file(root / "wheels")
        first, offline, fetches = [], [], []
        for i in range(5):  # interleaved: the same machine load for both columns
            start = time.perf_counter()
            open_release(cache_root=root / f"download{i}")
            first.append(time.perf_counter() - start)
            start = time.perf_counter()
            open_release(wheel=str(wheel), cache_root=root / f"local{i}")
            offline.append(time.perf_counter() - start)
            start = time.perf_counter()
            download(load_pins().versions[load_pins().default].wheel.url, 2**22)
            fetches.append(time.perf_counter() - start)
        env = dict(os.environ, XDG_CACHE_HOME=str(root / "xdg"), TAO_SLURM_TUI_TAO_WHEEL=str(wheel))
        env.pop("XDG_CONFIG_HOME", None)
        cli_seconds([["tao", "networks"]], env, runs=1)  # extract into this XDG cache
        floor, warm, spec = cli_seconds(
            [
                ["config", "path"],
                ["tao", "networks"],
                ["tao", "spec", "classification_pyt", "train"],
            ],
            env,
        )
        every = python_seconds(
            "from tao_slurm_tui.services.tao_cache import open_release\n"
            "from tao_slurm_tui.services.tao_loader import load_schema\n"
            "r = open_release()\n"
            "for n in r.catalog.networks:\n"
            "    load_schema(r, n.name)\n",
            env,
        )
        release = open_release(wheel=str(wheel), cache_root=root / "local0")
        start = time.perf_counter()
        schema = load_schema(release, "classification_pyt")
        in_process = time.perf_counter() - start
        from tao_slurm_tui.core.tao.spec_check import check_spec

        data = {
            "dataset": {
                "train_dataset": {"images_dir": "/lustre/train"},
                "val_dataset": {"images_dir": "/lustre/val"},
                "classes_file": "/lustre/classes.txt",
            },
            "train": {"num_epochs": 20, "optim": {"lr": 0.001}},
        }
        checks = []
        for _ in range(20):
            start = time.perf_counter()
            check_spec(schema, "train", data)
            checks.append(time.perf_counter() - start)
    check = statistics.median(checks)
    rows = [
        [
            "first use: download + verify + extract + index",
            fmt_s(statistics.median(first)),
            f"local wheel (offline site): {fmt_s(statistics.median(offline))}; "
            f"the download alone: {fmt_s(statistics.median(fetches))}",
            f"{statistics.median(first) / statistics.median(offline):.2f}x",
        ],
        [
            "warm `tao networks` (new process, cached index)",
            fmt_s(warm),
            f"`config path` (start-up floor): {fmt_s(floor)}",
            f"{(warm - floor) * 1000:+.0f} ms vs the floor",
        ],
        [
            "warm `tao networks`",
            fmt_s(warm),
            f"a process importing all 34 schemas to list them: {fmt_s(every)}",
            f"{every / warm:.1f}x faster",
        ],
        [
            "`tao spec classification_pyt train` (new process)",
            fmt_s(spec),
            f"warm `tao networks`: {fmt_s(warm)}",
            f"{(spec - warm) * 1000:+.0f} ms for omegaconf + one schema",
        ],
        [
            "classification_pyt schema, in-process (first build)",
            fmt_s(in_process),
            "",
            "",
        ],
        ["one `check_spec` (classification_pyt train)", fmt_s(check), "", ""],
    ]
    text = (
        f"## TAO catalogue (`bench/tao.py`)\n\nMeasured {time.strftime('%Y-%m-%d %H:%M')} "
        f"(load average {load:.1f}), every row in one run; medians of 5 (first use), 3 (all "
        f"schemas) or {RUNS} (processes, interleaved) or 20 (checks).\n\n"
        + table(["what", "ours", "side by side", "ratio"], rows)
    )
    print(text)
    write_results("tao", text)


if __name__ == "__main__":
    main()
