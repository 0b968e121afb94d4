"""Retry rules: the pattern table, the classifier, node exclusion and the generated bash check."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tao_slurm_tui.core.retry import (
    DEFAULT_MAX_RETRIES,
    INFRA_PATTERNS,
    NEVER_RETRY_PATTERNS,
    NGC_KEY_REFUSED,
    NGC_KEY_REFUSED_REASON,
    RUNTIME_CAUSES,
    LogPattern,
    bash_infra_check,
    classify,
    find_match,
    nodes_to_exclude,
    to_ere,
)

INFRA_SAMPLES = [(p.family, s) for p in INFRA_PATTERNS for s in p.samples]
NEVER_SAMPLES = [(p.family, s) for p in NEVER_RETRY_PATTERNS for s in p.samples]

# Lines of healthy or plainly broken runs that must not look like an infrastructure failure.
BENIGN = [
    "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>",
    "NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'",
    "node1:22:22 [0] NCCL WARN NET/Plugin : Plugin load returned 2 : libnccl-net.so",
    "Exporting the report, download it from the results page",
    "NVRM: Xid (PCI:0000:3b:00): 13, pid=1234, Graphics SM Warp Exception",
    "Traceback (most recent call last):",
    'RuntimeError: Error(s) in loading state_dict for Model: size mismatch for "head.weight"',
    "Epoch 3/10: loss=0.51",
    "Setting NCCL_TIMEOUT=1800",
]


def tail(*lines: str) -> list[str]:
    return ["Epoch 1/10: loss=0.9", *lines, "Epoch 2/10: loss=0.8"]


# ----------------------------------------------------------------------------------- table


@pytest.mark.parametrize(("family", "sample"), INFRA_SAMPLES)
def test_each_infra_sample_is_retried(family: str, sample: str) -> None:
    decision = classify("FAILED", tail("Traceback (most recent call last):", sample), 0)
    assert decision.retry, decision
    assert decision.family == family
    assert family in decision.reason
    assert decision.line == sample.strip()[:300]


@pytest.mark.parametrize(("family", "sample"), NEVER_SAMPLES)
def test_never_retry_samples_win_over_infra_signs(family: str, sample: str) -> None:
    # A CUDA OOM on one rank makes the others hit the NCCL watchdog: the OOM decides.
    lines = tail(sample, INFRA_PATTERNS[3].samples[0], "NCCL communicator was aborted on rank 2.")
    decision = classify("FAILED", lines, 0)
    assert not decision.retry
    assert decision.family == family
    causes = {cause.family: cause for cause in RUNTIME_CAUSES}
    if family == NGC_KEY_REFUSED:
        assert decision.reason == NGC_KEY_REFUSED_REASON
        assert "NGC key" in decision.reason and "set-up" in decision.reason
    elif family in causes:
        # The container runtime's failures say their cause and the field to change.
        assert decision.reason == causes[family].reason(sample.strip())
        assert decision.field == causes[family].field
    else:
        assert "program error" in decision.reason


@pytest.mark.parametrize("line", BENIGN)
def test_benign_lines_match_nothing(line: str) -> None:
    assert find_match([line], INFRA_PATTERNS) is None
    assert find_match([line], NEVER_RETRY_PATTERNS) is None


def test_every_family_has_samples() -> None:
    for pattern in [*INFRA_PATTERNS, *NEVER_RETRY_PATTERNS]:
        assert pattern.samples, pattern
    families = {p.family for p in INFRA_PATTERNS}
    for wanted in (
        "NCCL error",
        "NCCL timeout",
        "CUDA driver init failure",
        "no CUDA device",
        "GPU lost",
        "GPU Xid error",
        "GPU ECC error",
        "InfiniBand/RDMA error",
        "network link down",
        "OOM killer on the node",
    ):
        assert wanted in families


# ----------------------------------------------------------------------------------- classify


def test_cuda_oom_is_never_retried() -> None:
    lines = tail(
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB "
        "(GPU 0; 79.15 GiB total capacity)",
    )
    decision = classify("FAILED", lines, 0)
    assert not decision.retry and decision.family == "CUDA out of memory"


def test_plain_traceback_is_not_retried() -> None:
    decision = classify(
        "FAILED",
        tail("Traceback (most recent call last):", '  File "train.py", line 3', "RuntimeError: x"),
        0,
    )
    assert not decision.retry
    assert "without a sign of an infrastructure failure" in decision.reason


def test_program_exception_with_nccl_timeouts_on_other_ranks() -> None:
    decision = classify(
        "FAILED",
        tail(
            "KeyError: 'num_classes'",
            "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9)",
        ),
        0,
    )
    assert not decision.retry and decision.family == "program error"


@pytest.mark.parametrize("state", ["NODE_FAIL", "BOOT_FAIL"])
def test_node_failures_are_retried_without_a_log(state: str) -> None:
    decision = classify(state, None, 3)
    assert decision.retry and state in decision.reason


@pytest.mark.parametrize(
    ("state", "words"),
    [
        ("TIMEOUT", "time limit"),
        ("CANCELLED", "cancelled"),
        ("CANCELLED by 1001", "cancelled"),
        ("PREEMPTED", "preempted"),
        ("DEADLINE", "deadline"),
        ("COMPLETED", "not a failure"),
        ("RUNNING", "not a failure"),
    ],
)
def test_states_that_are_never_retried(state: str, words: str) -> None:
    # Even with an infrastructure sign in the log.
    decision = classify(state, tail("NCCL error in: ProcessGroupNCCL.cpp"), 0)
    assert not decision.retry and words in decision.reason


def test_unreadable_log_is_reported_not_retried() -> None:
    decision = classify("FAILED", None, 0)
    assert not decision.retry and "could not be read" in decision.reason


def test_out_of_memory_state_uses_the_log_rules() -> None:
    cgroup = "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=42.batch."
    assert not classify("OUT_OF_MEMORY", tail(cgroup), 0).retry
    node_oom = "Out of memory: Killed process 4242 (python) total-vm:123456kB"
    assert classify("OUT_OF_MEMORY", tail(node_oom), 0).retry


@pytest.mark.parametrize("state", ["FAILED", "NODE_FAIL"])
def test_budget(state: str) -> None:
    lines = tail("NCCL communicator was aborted on rank 2.")
    assert classify(state, lines, DEFAULT_MAX_RETRIES - 1).retry
    exhausted = classify(state, lines, DEFAULT_MAX_RETRIES)
    assert not exhausted.retry and "retry budget (10) is used up" in exhausted.reason
    assert not classify(state, lines, 2, max_retries=2).retry


# ----------------------------------------------------------------------------------- nodes


@pytest.mark.parametrize(
    ("failed", "count", "needed", "expected"),
    [
        (["vm"], 1, 1, []),  # the one-node sandbox: nothing can be excluded
        (["n1"], 4, 1, ["n1"]),
        (["n1", "n2", "n1"], 4, 2, ["n1", "n2"]),
        (["n1", "n2", "n3"], 4, 2, ["n1", "n2"]),  # keep enough for the request
        (["n1"], None, 1, []),  # unknown partition size: exclude nothing
        (["n1"], 0, 1, []),
        (["", "n2"], 3, 1, ["n2"]),
    ],
)
def test_nodes_to_exclude(
    failed: list[str], count: int | None, needed: int, expected: list[str]
) -> None:
    assert nodes_to_exclude(failed, count, needed) == expected


# ----------------------------------------------------------------------------------- ERE


def test_to_ere_translation() -> None:
    assert to_ere(r"a\d+\s\w*[\w.]") == "a[0-9]+[[:space:]][[:alnum:]_]*[[:alnum:]_.]"
    assert to_ere(r"\(x\)") == r"\(x\)"
    for bad in (r"\bword", r"(?:a)", r"a+?", "[abc", "x\\"):
        with pytest.raises(ValueError):
            to_ere(bad)


def test_all_patterns_translate() -> None:
    for pattern in [*INFRA_PATTERNS, *NEVER_RETRY_PATTERNS]:
        assert to_ere(pattern.regex)


# ----------------------------------------------------------------------------------- bash


BASH = shutil.which("bash")


def _bash_check(tmp_path: Path, files: dict[str, list[str]], args: list[str] | None = None) -> int:
    paths = []
    for name, lines in files.items():
        path = tmp_path / name
        path.write_text("".join(f"{line}\n" for line in lines))
        paths.append(str(path))
    script = bash_infra_check() + '\nset -euo pipefail\ntao_infra_failure "$@"\n'
    assert BASH is not None
    result = subprocess.run(
        [BASH, "-c", script, "check", *(args if args is not None else paths)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr
    if result.returncode == 0:
        assert result.stderr.startswith("tao_infra_failure: ")
    return result.returncode


def _python_check(lines: list[str]) -> bool:
    return classify("FAILED", lines, 0).retry


def test_bash_function_is_generated_from_the_one_list() -> None:
    text = bash_infra_check()
    assert text.count("tao_infra_failure() {") == 1
    for pattern in [*INFRA_PATTERNS, *NEVER_RETRY_PATTERNS]:
        ere = to_ere(pattern.regex)
        assert ere in text or repr(ere) in text or ere.replace("'", "'\"'\"'") in text


@pytest.mark.skipif(BASH is None, reason="bash is needed")
def test_bash_and_python_agree_on_every_sample(tmp_path: Path) -> None:
    cases: list[tuple[list[str], bool]] = []
    cases += [(tail(sample), True) for _, sample in INFRA_SAMPLES]
    cases += [(tail(sample, INFRA_SAMPLES[0][1]), False) for _, sample in NEVER_SAMPLES]
    cases += [(tail(line), False) for line in BENIGN]
    for i, (lines, expected) in enumerate(cases):
        assert _python_check(lines) is expected, lines
        got = _bash_check(tmp_path, {f"main{i}.out": lines}) == 0
        assert got is expected, lines


@pytest.mark.skipif(BASH is None, reason="bash is needed")
def test_bash_reads_the_tail_of_each_file(tmp_path: Path) -> None:
    nccl = "NCCL communicator was aborted on rank 2."
    oom = "torch.cuda.OutOfMemoryError: CUDA out of memory."
    # Infra sign in main.err, nothing in main.out.
    assert _bash_check(tmp_path, {"a.out": ["ok"], "a.err": [nccl]}) == 0
    # The CUDA OOM in the other file still wins.
    assert _bash_check(tmp_path, {"b.out": [oom], "b.err": [nccl]}) == 1
    # Only the last 500 lines count.
    old = [nccl] + ["Epoch ok"] * 500
    assert _bash_check(tmp_path, {"c.out": old}) == 1
    assert not _python_check(old[-500:])
    # Unreadable / missing files: no retry.
    assert _bash_check(tmp_path, {}, [str(tmp_path / "missing.out")]) == 1
    assert _bash_check(tmp_path, {}, []) == 1


def test_log_pattern_is_hashable_data() -> None:
    pattern = LogPattern("x", "y", ("y",))
    assert {pattern: 1}[pattern] == 1
