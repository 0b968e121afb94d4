"""Start estimate before submitting: sbatch --test-only runs, their answers and the hints."""

from __future__ import annotations

from tao_slurm_tui.core.capacity_report import FreeBlock
from tao_slurm_tui.core.start_estimate import (
    MARK,
    Variant,
    block_hint,
    describe,
    estimate_command,
    hints,
    in_words,
    parse_estimates,
    short_time,
    variants,
)

RUNS = variants("polar", ["polar", "batch"], 4, 4 * 3600)


def answer(*bodies: str, now: str = "2026-11-30T22:00:00") -> str:
    lines = [f"{MARK}now {now}"]
    for i, body in enumerate(bodies):
        lines += [f"{MARK}run {i}", body, f"{MARK}rc 0"]
    return "\n".join(lines) + "\n"


def test_variants_as_is_first_then_partitions_gpus_time() -> None:
    assert [(v.kind, v.label, v.args) for v in RUNS] == [
        ("as_is", "as is", ()),
        ("partition", "batch", ("--partition", "batch")),
        ("gpus", "2 GPUs per node", ("--gres=gpu:2",)),
        ("time", "2 h wall time", ("--time", "02:00:00")),
    ]
    # One GPU and a short job: nothing smaller worth asking; a comma list tries each alone.
    small = variants("polar,batch", ["polar", "batch"], 1, 3600)
    assert [v.label for v in small] == ["as is", "polar", "batch"]


def test_command_is_one_round_trip_with_the_script_on_stdin() -> None:
    command = estimate_command(RUNS)
    assert command.count("sbatch --test-only") == len(RUNS)
    assert "sbatch --test-only --partition batch" in command
    assert 'cat > "$f"' in command and "rm -f" in command
    assert "#SBATCH" not in command  # the script travels on stdin, never in the command


def test_parse_now_later_and_refusal() -> None:
    out = answer(
        "sbatch: Job 45 to start at 2026-11-30T23:59:00 using 8 processors on nodes n1 "
        "in partition polar",
        "sbatch: Job 46 to start at 2026-11-30T22:00:01 using 8 processors on nodes n3 "
        "in partition batch",
        "sbatch: error: Batch job submission failed: Requested node configuration is not available",
        "",
    )
    est = parse_estimates(out, RUNS)
    assert [e.wait_seconds for e in est[:2]] == [7140, 1]
    assert est[0].partition == "polar" and est[1].nodes == "n3"
    assert est[1].now and not est[0].now
    assert est[2].error == "Requested node configuration is not available."
    assert est[3].error == "no answer."
    assert describe(est[0]) == "11-30 23:59 (in ~2 h)"
    assert describe(est[1]) == "now on n3"
    assert describe(est[2]).startswith("cannot start: Requested node")
    assert hints(est) == ["batch: now"]


def test_missing_runs_and_garbage_do_not_crash() -> None:
    est = parse_estimates("garbage\n@@tao-est:run x\n", RUNS)
    assert len(est) == len(RUNS)
    assert all(e.error == "SLURM gave no answer." for e in est)
    assert hints(est) == []


def test_hints_when_less_is_sooner_and_none_when_not() -> None:
    later = "sbatch: Job 1 to start at 2026-11-30T{} using 1 processors on nodes n1 in partition p"
    est = parse_estimates(
        answer(
            later.format("23:00:00"),
            later.format("23:10:00"),
            later.format("22:00:00"),
            later.format("22:20:00"),
        ),
        RUNS,
    )
    assert hints(est) == ["2 GPUs per node: now", "2 h wall time: in ~20 min"]
    same = parse_estimates(answer(*[later.format("22:00:00")] * 4), RUNS)
    assert hints(same) == []


def test_words() -> None:
    assert [in_words(s) for s in (None, 0, 90, 300, 5400, 7200, 86400 * 3)] == [
        "",
        "now",
        "now",
        "in ~5 min",
        "in ~2 h",
        "in ~2 h",
        "in ~3 d",
    ]
    assert short_time("2026-05-10T14:30:00") == "05-10 14:30"
    assert short_time("N/A") == ""


def test_block_hint() -> None:
    block = FreeBlock(8, "gpu01", "a100", 16, 65536)
    assert block_hint(1, 4, block) == "1 node x 4 GPUs fits a free block now (gpu01: 8 a100 free)."
    assert block_hint(1, 16, FreeBlock(2, "g2", "", 4, 10)) == (
        "The largest free block is 2 GPUs (g2); 16 GPUs per node waits."
    )
    assert block_hint(1, 4, None) == "No node has a free GPU right now."
    assert block_hint(2, 4, block) == ""
    assert block_hint(1, 0, block) == ""
    assert Variant("as_is", "as is").args == ()


def test_recorded_sandbox_test_only() -> None:
    """Recorded on the sandbox with 2 of 4 GPUs busy: everything waits for the running job."""
    from tests.capacity_data import GOLDEN

    text = (GOLDEN / "sandbox-test-only.txt").read_text(encoding="utf-8")
    est = parse_estimates(text, RUNS)
    assert [e.wait_seconds for e in est] == [1197, 1197, 600, 1197]
    assert [e.partition for e in est] == ["polar", "batch", "polar", "polar"]
    assert describe(est[0]) == "11-30 23:09 (in ~20 min)"
    assert hints(est) == ["2 GPUs per node: in ~10 min"]


def test_typed_request_keeps_its_type_in_the_fewer_gpus_variant() -> None:
    typed = variants("polar", ["polar"], 4, 3600, gpu_type="h100")
    assert [(v.label, v.args) for v in typed if v.kind == "gpus"] == [
        ("2 h100 GPUs per node", ("--gres=gpu:h100:2",))
    ]


def test_script_request_reads_the_gpu_type() -> None:
    from tao_slurm_tui.core.start_estimate import script_request

    head = "#!/bin/bash\n#SBATCH --partition=polar\n#SBATCH --nodes=1\n#SBATCH --time=01:00:00\n"
    assert script_request(head + "#SBATCH --gres=gpu:a100:4\n").gpu_type == "a100"
    untyped = script_request(head + "#SBATCH --gres=gpu:4\n")
    assert (untyped.gpus_per_node, untyped.gpu_type) == (4, "")
    per_node = script_request(head + "#SBATCH --gpus-per-node=h100:2\n")
    assert (per_node.gpus_per_node, per_node.gpu_type) == (2, "h100")
    # Two types at once: no single type to keep, the count is the sum.
    mixed = script_request(head + "#SBATCH --gres=gpu:a100:1,gpu:h100:1\n")
    assert (mixed.gpus_per_node, mixed.gpu_type) == (2, "")
    assert script_request(head + "#SBATCH --gpus-per-node=lots\n").gpus_per_node == 0


def test_typed_block_hint_uses_that_types_block() -> None:
    from tao_slurm_tui.core.capacity import parse_capacity_output
    from tao_slurm_tui.core.capacity_report import build_report
    from tao_slurm_tui.core.start_estimate import Estimate, Request, start_estimate_of
    from tests.capacity_data import GOLDEN

    report = build_report(parse_capacity_output((GOLDEN / "synthetic.txt").read_text()))
    batch = report.partition("batch")
    assert batch is not None and set(batch.blocks) == {"a100", "v100"}
    # gpu05 (MIXED+DRAIN) takes no job: gpu07 has 2 of its 4 v100 free; gpu01 all 8 a100.
    assert (batch.blocks["v100"].node, batch.blocks["v100"].gpus) == ("gpu07", 2)
    assert (batch.blocks["a100"].node, batch.blocks["a100"].gpus) == ("gpu01", 8)
    est = [Estimate(Variant("as_is", "as is"), "2026-11-30T22:00:00", 0)]
    v100 = start_estimate_of(est, Request("batch", 1, 4, 3600, "v100"), report)
    assert (
        v100.block == "The largest free block is 2 v100 GPUs (gpu07); 4 v100 GPUs per node waits."
    )
    any_type = start_estimate_of(est, Request("batch", 1, 4, 3600), report)
    assert any_type.block.startswith("1 node x 4 GPUs fits a free block now (gpu01: 8 a100")
    none = start_estimate_of(est, Request("batch", 1, 1, 3600, "h100"), report)
    assert none.block == "No node has a free h100 GPU right now."


def test_a_refused_request_gets_no_free_block_hint() -> None:
    """The issue's estimate box said "cannot start: More processors requested than permitted"
    and "1 node x 4 GPUs fits a free block now" at once."""
    from tao_slurm_tui.core.capacity import parse_capacity_output
    from tao_slurm_tui.core.capacity_report import build_report
    from tao_slurm_tui.core.start_estimate import Estimate, Request, start_estimate_of
    from tests.capacity_data import GOLDEN

    report = build_report(parse_capacity_output((GOLDEN / "synthetic.txt").read_text()))
    why = "More processors requested than permitted"
    refused = [Estimate(Variant("as_is", "as is"), error=why)]
    estimate = start_estimate_of(refused, Request("batch", 1, 4, 3600), report)
    assert estimate.headline == "cannot start: More processors requested than permitted"
    assert estimate.block == ""
