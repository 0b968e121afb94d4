"""Counted nouns (issue 26: "1 jobs", "1 GPUs", "1 input path(s)")."""

from __future__ import annotations

from tao_slurm_tui.core.capacity_report import FreeBlock
from tao_slurm_tui.core.start_estimate import block_hint
from tao_slurm_tui.core.words import plural


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert plural(1, "job") == "1 job"
    assert [plural(n, "GPU") for n in (0, 2)] == ["0 GPUs", "2 GPUs"]
    assert plural(3, "input path") == "3 input paths"
    assert plural(2, "child", "children") == "2 children"


def test_the_free_block_hint_counts_one_gpu_as_one() -> None:
    block = FreeBlock(gpus=1, node="gpu01", kind="a100", cpus_free=8, mem_free_mb=1024)
    assert block_hint(1, 1, block).startswith("1 node x 1 GPU fits a free block now")
    assert block_hint(1, 2, block, "a100") == (
        "The largest free block is 1 a100 GPU (gpu01); 2 a100 GPUs per node waits."
    )
