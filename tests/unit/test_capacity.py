"""Capacity: the one remote command, its parsers, and the numbers added up (pure core)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tao_slurm_tui.core.capacity import (
    CapacityUnavailable,
    NodeState,
    array_tasks,
    node_state,
    parse_capacity_output,
    parse_job_line,
    parse_node_line,
)
from tao_slurm_tui.core.capacity_command import (
    MARK,
    NODE_FIELDS,
    NODE_REDUCE_AWK,
    SECTIONS,
    capacity_command,
    split_sections,
)
from tao_slurm_tui.core.capacity_report import CapacityReport, build_report
from tao_slurm_tui.core.slurm_fields import (
    gpus_from_tres,
    parse_gres,
    parse_key_values,
    parse_tres,
    pick_fields,
)
from tests.capacity_data import GOLDEN, scaled_output

SYNTHETIC = (GOLDEN / "synthetic.txt").read_text(encoding="utf-8")


def report_of(text: str, user: str = "") -> CapacityReport:
    return build_report(parse_capacity_output(text, user=user))


# ----------------------------------------------------------------------------------- pieces


@pytest.mark.parametrize(
    ("text", "counts"),
    [
        ("gpu:a100:8(S:0-1)", {"a100": 8}),
        ("gpu:4", {"": 4}),
        ("gpu:a100:4(S:0),gpu:v100:2(S:1)", {"a100": 4, "v100": 2}),
        ("gpu:a100:2(IDX:0-1),gpu:v100:0(IDX:N/A)", {"a100": 2, "v100": 0}),
        ("gres:gpu:2", {"": 2}),
        ("gres/gpu:a100:3", {"a100": 3}),
        ("gpu", {"": 1}),
        ("gpu:a100", {"a100": 1}),
        ("shard:8,gpu:2", {"": 2}),
        ("(null)", {}),
        ("N/A", {}),
        ("", {}),
        ("gpu:a100:lots", {}),
    ],
)
def test_parse_gres(text: str, counts: dict[str, int]) -> None:
    assert parse_gres(text) == counts


def test_parse_tres_units_and_gpus() -> None:
    tres = parse_tres("cpu=8,mem=4G,node=2,billing=8,gres/gpu=4,gres/gpu:a100=3,bad,x=y")
    assert tres == {
        "cpu": 8,
        "mem": 4096,
        "node": 2,
        "billing": 8,
        "gres/gpu": 4,
        "gres/gpu:a100": 3,
    }
    assert parse_tres("mem=1000") == {"mem": 1000}
    assert gpus_from_tres(tres) == {"a100": 3, "": 1}
    assert gpus_from_tres({"cpu": 4}) is None
    assert gpus_from_tres({"gres/gpu": 0}) == {}


@pytest.mark.parametrize(
    ("raw", "state"),
    [
        ("IDLE", NodeState.IDLE),
        ("MIXED", NodeState.MIXED),
        ("ALLOCATED", NodeState.ALLOCATED),
        ("ALLOCATED+COMPLETING", NodeState.ALLOCATED),
        ("IDLE+DRAIN", NodeState.DRAINED),
        ("DRAINED", NodeState.DRAINED),
        ("MIXED+DRAIN", NodeState.DRAINING),
        ("ALLOCATED+DRAIN", NodeState.DRAINING),
        ("DOWN*", NodeState.DOWN),
        ("DOWN+DRAIN", NodeState.DOWN),
        ("IDLE*", NodeState.DOWN),
        ("IDLE+NOT_RESPONDING", NodeState.DOWN),
        ("IDLE+CLOUD+POWERED_DOWN", NodeState.IDLE),
        ("IDLE+RESERVED", NodeState.IDLE),
        ("MIXED+MAINT", NodeState.DRAINING),
        ("WEIRD_NEW_STATE", NodeState.DOWN),
    ],
)
def test_node_state(raw: str, state: NodeState) -> None:
    assert node_state(raw) is state


def test_key_values_keep_spaces_in_values() -> None:
    fields = parse_key_values(
        "NodeName=n1 OS=Linux 6.1.0 #1 SMP PREEMPT_DYNAMIC Debian State=IDLE "
        "Reason=GPU fell off the bus [root@2026-11-30T21:58:02]"
    )
    assert fields["OS"] == "Linux 6.1.0 #1 SMP PREEMPT_DYNAMIC Debian"
    assert fields["Reason"] == "GPU fell off the bus [root@2026-11-30T21:58:02]"


def _recorded_node_lines() -> list[str]:
    lines = []
    for path in sorted(GOLDEN.glob("*.txt")):
        section = split_sections(path.read_text(encoding="utf-8")).get("nodes")
        if section is not None:
            lines += [ln for ln in section.text.splitlines() if ln.startswith("NodeName=")]
    return lines


def test_pick_fields_reads_what_the_full_split_reads_on_every_recorded_line() -> None:
    lines = _recorded_node_lines()
    assert len(lines) >= 8
    keys = ("NodeName", "State", "Gres", "GresUsed", "AllocTRES", "CfgTRES", "Partitions")
    for line in lines:
        full = parse_key_values(line)
        picked = pick_fields(line, keys, "Reason")
        assert picked == {k: full[k] for k in (*keys, "Reason") if k in full}, line


def test_pick_fields_edges() -> None:
    line = (
        "NodeName=n1 GresUsed=gpu:a100:1(IDX:0) Gres=gpu:a100:2  CPUAlloc=1 AllocTRES= "
        "State=IDLE+DRAIN Reason=operator said State=DOWN Gres=gpu:9 [root@2026-11-30T21:58:02]"
    )
    fields = pick_fields(
        line, ("NodeName", "Gres", "GresUsed", "AllocTRES", "State", "X"), "Reason"
    )
    # A key is not matched inside a longer one (Gres vs GresUsed); an empty value stays empty;
    # the first occurrence wins, so the reason's "State=DOWN" does not shadow the node's state.
    assert fields == {
        "NodeName": "n1",
        "Gres": "gpu:a100:2",
        "GresUsed": "gpu:a100:1(IDX:0)",
        "AllocTRES": "",
        "State": "IDLE+DRAIN",
        "Reason": "operator said",
    }
    assert pick_fields("  ", ("NodeName",), "Reason") == {}
    assert pick_fields("NodeName=last", ("NodeName",)) == {"NodeName": "last"}


def test_node_line_reason_without_who_and_when() -> None:
    node = parse_node_line("NodeName=g1 CPUTot=8 Gres=gpu:2 State=DOWN Reason=cable pulled")
    assert node is not None
    assert (node.reason, node.reason_by, node.reason_time) == ("cable pulled", "", "")
    assert node.state is NodeState.DOWN


def test_nodes_share_cached_parses_but_not_their_dicts() -> None:
    line = "NodeName={} CPUTot=8 Gres=gpu:a100:4 State=MIXED CfgTRES=gres/gpu=4 AllocTRES={}"
    a = parse_node_line(line.format("a", "gres/gpu=1"))
    b = parse_node_line(line.format("b", "gres/gpu=1"))
    c = parse_node_line(line.format("c", ""))
    assert a is not None and b is not None and c is not None
    assert a.gpus_alloc == b.gpus_alloc == {"a100": 1} and c.gpus_alloc == {}
    assert a.gpus_alloc is not b.gpus_alloc and a.gpus is not b.gpus
    a.gpus_alloc["a100"] = 99  # a caller mutating one node's dict leaves the next parse alone
    again = parse_node_line(line.format("d", "gres/gpu=1"))
    assert again is not None and again.gpus_alloc == {"a100": 1}


def test_job_line_keeps_padding_out_and_counts_arrays_only_when_pending() -> None:
    job = parse_job_line(" 9_[1-4]|u|a|q|p|pending|1|1|gpu:1||N/A|(Priority) \n")
    assert job is not None
    assert (job.job_id, job.state, job.tasks, job.reason, job.gpus) == (
        "9_[1-4]",
        "PENDING",
        4,
        "Priority",
        4,
    )
    running = parse_job_line("9_3|u|a|q|p|RUNNING|1|1|gpu:1|n1|N/A|None")
    assert running is not None and running.tasks == 1


def test_node_line_reason_split_and_untyped_alloc_on_single_type() -> None:
    node = parse_node_line(
        "NodeName=g7 CPUAlloc=8 CPUTot=16 Gres=gpu:v100:4 RealMemory=100 AllocMem=40 "
        "State=MIXED+DRAIN Partitions=batch CfgTRES=cpu=16,gres/gpu=4 "
        "AllocTRES=cpu=8,gres/gpu=2 Reason=driver update [admin@2026-11-30T22:01:00]"
    )
    assert node is not None
    assert node.gpus == {"v100": 4}
    assert node.gpus_alloc == {"v100": 2}
    assert (node.reason, node.reason_by, node.reason_time) == (
        "driver update",
        "admin",
        "2026-11-30T22:01:00",
    )
    assert (node.cpus_free, node.mem_free_mb) == (8, 60)
    assert node.state is NodeState.DRAINING


def test_node_line_older_slurm_gres_used() -> None:
    node = parse_node_line(
        "NodeName=g1 CPUAlloc=2 CPUTot=8 Gres=gpu:a100:4 GresUsed=gpu:a100:3(IDX:0-2) "
        "State=MIXED Partitions=p"
    )
    assert node is not None and node.gpus_alloc == {"a100": 3}


def test_node_line_without_any_allocation_info_is_derived_later() -> None:
    node = parse_node_line("NodeName=g1 CPUTot=8 Gres=gpu:2 State=IDLE Partitions=p")
    assert node is not None and node.gpus_alloc is None


@pytest.mark.parametrize(
    ("job_id", "tasks"),
    [("12", 1), ("12_3", 1), ("12_[1-10%2]", 10), ("12_[1,3,5-7]", 5), ("12_[0-9:3]", 4)],
)
def test_array_tasks(job_id: str, tasks: int) -> None:
    assert array_tasks(job_id) == tasks


def test_job_line_gpus_nodes_times_per_node() -> None:
    job = parse_job_line(
        "110|alice|tao|normal|polar,batch|PENDING|2|32|gres:gpu:8|(null)|N/A|Resources"
    )
    assert job is not None
    assert (job.gpus, job.partitions, job.start, job.reason) == (
        16,
        ("polar", "batch"),
        "",
        "Resources",
    )
    running = parse_job_line("7|bob|a|q|p|RUNNING|2|4|gres:gpu:1|n[1-2]|2026-11-30T22:00:00|None")
    assert running is not None and running.node_list == ("n1", "n2") and running.reason == ""


@pytest.mark.parametrize(
    "line",
    ["", "garbage", "x|y", "abc|u|a|q|p|RUNNING|1|1|gpu:1|n1|N/A|None", "1|u|a|q|p|R$$|1|1|||N|"],
)
def test_job_line_garbage_is_none(line: str) -> None:
    assert parse_job_line(line) is None


# ----------------------------------------------------------------------------------- sections


def test_command_runs_every_section_once_in_one_string() -> None:
    command = capacity_command()
    for tool in ("scontrol show node -o", "scontrol show partition -o", "squeue -h", "sacctmgr"):
        assert tool in command
    assert command.count("scontrol show node") == 1
    assert command.count("squeue") == 1


AWKS = [
    pytest.param(awk, id="-".join(awk))
    for awk in (["mawk"], ["gawk"], ["gawk", "--posix"], ["busybox", "awk"], ["awk"])
    if shutil.which(awk[0])
]
"""Every awk on this machine: the command takes mawk where the login host has it, else awk
(gawk on most clusters, busybox on a minimal image)."""


@pytest.mark.parametrize("awk", AWKS)
def test_node_lines_reduced_on_the_login_host_parse_the_same(awk: list[str]) -> None:
    """The awk of the command (run here as the login host runs it) keeps what is read."""
    lines = _recorded_node_lines()
    error = "slurm_load_node error: Unable to contact slurm controller (connect failure)"
    reduced = subprocess.run(
        [*awk, "-v", "K=" + " ".join(NODE_FIELDS), NODE_REDUCE_AWK],
        input="\n".join([*lines, error]) + "\n",
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.splitlines()
    assert len(reduced) == len(lines) + 1 and reduced[-1] == error  # not a node line: as is
    for full, short in zip(lines, reduced, strict=False):
        assert len(short) < len(full) / 2
        assert "CPULoad=" not in short and "FreeMem=" not in short  # what changes every time
        parse_node_line.cache_clear()
        assert parse_node_line(short) == parse_node_line(full), short


def test_command_sources_replace_a_tool_and_keep_the_rest() -> None:
    command = capacity_command({"nodes": "cat /tmp/nodes.txt"})
    assert "scontrol show node" not in command and "cat /tmp/nodes.txt" in command
    assert "squeue -h" in command and NODE_REDUCE_AWK in command


@pytest.mark.parametrize("status", [0, 3])
def test_command_run_here_reduces_the_nodes_and_keeps_every_exit_status(
    tmp_path: Path, status: int
) -> None:
    """The whole command under sh, each tool replaced: the node lines come back reduced (in
    the background job that reads them), with the tool's own exit status and its stderr."""
    lines = _recorded_node_lines()
    (tmp_path / "nodes").write_text("\n".join(lines) + "\n", encoding="utf-8")
    nodes = f"cat {tmp_path}/nodes; echo 'scontrol: warning' >&2; (exit {status})"
    sources = {name: f"echo {name}-out; (exit 7)" for name in SECTIONS}
    sources["nodes"] = nodes
    done = subprocess.run(
        ["sh", "-c", capacity_command(sources)],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    sections = split_sections(done.stdout)
    assert list(sections) == list(SECTIONS)
    assert sections["nodes"].rc == status
    got = sections["nodes"].text.splitlines()
    assert got[-1] == "scontrol: warning" and len(got) == len(lines) + 1
    for full, short in zip(lines, got, strict=False):
        assert "CPULoad=" not in short
        parse_node_line.cache_clear()
        assert parse_node_line(short) == parse_node_line(full)
    for name in SECTIONS:
        if name != "nodes":
            assert (sections[name].text.strip(), sections[name].rc) == (f"{name}-out", 7)
    assert [p.name for p in tmp_path.iterdir()] == ["nodes"]  # its temporary directory is gone


def test_split_sections_cut_off_answer() -> None:
    text = f"{MARK}user\nalice\n{MARK}rc 0\n{MARK}nodes\nNodeName=x State=IDLE\n"
    sections = split_sections(text)
    assert sections["user"].ok and sections["user"].text == "alice"
    assert sections["nodes"].rc is None and not sections["nodes"].ok


def test_no_node_section_is_one_sentence() -> None:
    failing = f"{MARK}user\nalice\n{MARK}rc 0\n{MARK}nodes\nbash: scontrol: command not found\n"
    with pytest.raises(CapacityUnavailable, match=r"scontrol: command not found\)\.$"):
        parse_capacity_output(failing + f"{MARK}rc 127\n")
    with pytest.raises(CapacityUnavailable, match="no answer"):
        parse_capacity_output("")


# ----------------------------------------------------------------------------------- the report


def test_synthetic_partitions() -> None:
    report = report_of(SYNTHETIC)
    assert report.user == "alice"
    polar = report.partition("polar")
    assert polar is not None and polar.default and polar.max_time == "04:00:00"
    assert [(t.kind, t.total, t.allocated, t.free, t.unavailable) for t in polar.gpu_types] == [
        ("a100", 32, 11, 13, 8)
    ]
    assert dict(polar.nodes) == {
        NodeState.IDLE: 1,
        NodeState.MIXED: 1,
        NodeState.ALLOCATED: 1,
        NodeState.DRAINING: 0,
        NodeState.DRAINED: 1,
        NodeState.DOWN: 0,
    }
    assert polar.largest_block is not None
    assert (polar.largest_block.node, polar.largest_block.gpus, polar.largest_block.kind) == (
        "gpu01",
        8,
        "a100",
    )
    assert (polar.cpus_total, polar.cpus_free) == (64, 16 + 12)
    assert (polar.running_jobs, polar.running_gpus) == (2, 11)
    assert (polar.pending_jobs, polar.pending_gpus) == (2, 18)

    batch = report.partition("batch")
    assert batch is not None
    by_type = {t.kind: (t.total, t.allocated, t.free, t.unavailable) for t in batch.gpu_types}
    assert by_type == {"a100": (32, 11, 13, 8), "v100": (12, 3, 2, 7)}
    assert (batch.pending_jobs, batch.pending_gpus) == (11, 26)
    assert report.gpus_free == 15

    cpuq = report.partition("cpuq")
    assert cpuq is not None and cpuq.gpus_total == 0 and cpuq.largest_block is None


def test_synthetic_unavailable_mine_and_limits() -> None:
    report = report_of(SYNTHETIC)
    assert [(n.name, n.state, n.reason) for n in report.unavailable] == [
        ("gpu04", NodeState.DRAINED, "Xid 79 GPU fell off the bus"),
        ("gpu05", NodeState.DRAINING, "reboot for driver"),
        ("gpu06", NodeState.DOWN, "Not responding"),
    ]
    mine = report.mine
    assert (mine.running_jobs, mine.running_gpus, mine.pending_jobs, mine.pending_gpus) == (
        2,
        4,
        11,
        26,
    )
    limits = {(lim.scope, lim.kind, lim.resource): (lim.limit, lim.used) for lim in report.limits}
    assert limits == {
        ("QOS high", "GrpTRES", "gres/gpu"): (6, 2),
        ("QOS high", "MaxTRESPerUser", "gres/gpu"): (4, 0),
        ("QOS high", "MaxJobsPerUser", "jobs"): (2, 0),
        ("account tao", "GrpTRES", "gres/gpu"): (12, 6),
        ("account tao", "GrpTRES", "cpu"): (128, 14),
        ("association tao/alice", "GrpTRES", "gres/gpu"): (6, 4),
        ("association tao/alice", "MaxJobs", "jobs"): (4, 2),
    }
    assert report.accounting and report.notes == []


def test_json_contract_round_trips() -> None:
    data = json.loads(json.dumps(report_of(SYNTHETIC).to_json()))
    polar = next(p for p in data["partitions"] if p["name"] == "polar")
    assert polar["gpus"]["by_type"]["a100"] == {
        "total": 32,
        "allocated": 11,
        "free": 13,
        "unavailable": 8,
        "largest_free_block": 8,
    }
    batch = next(p for p in data["partitions"] if p["name"] == "batch")
    assert batch["gpus"]["by_type"]["v100"]["largest_free_block"] == 2
    assert polar["largest_free_block"]["gpus"] == 8
    assert polar["nodes"]["drained"] == 1
    assert data["mine"]["pending_gpus"] == 26
    assert data["unavailable_nodes"][0]["reason"] == "Xid 79 GPU fell off the bus"
    assert {"scope", "kind", "resource", "limit", "used", "reached"} <= set(data["limits"][0])


def test_garbage_lines_skipped_and_counted() -> None:
    noisy = SYNTHETIC.replace(
        f"{MARK}rc 0\n{MARK}partitions", f"half a line Node\x00Name=\n{MARK}rc 0\n{MARK}partitions"
    ).replace("101|alice|tao|normal|polar|RUNNING", "101|alice|tao")
    report = report_of(noisy)
    assert report.notes == ["2 line(s) of SLURM's answer could not be read and were skipped."]
    polar = report.partition("polar")
    assert polar is not None and polar.running_jobs == 1


def test_no_accounting_and_no_squeue_still_shows_nodes() -> None:
    text = SYNTHETIC
    for section in ("jobs", "qos", "assoc"):
        start = text.index(f"{MARK}{section}\n")
        end = text.index(f"{MARK}rc 0", start)
        text = (
            text[:start]
            + f"{MARK}{section}\nslurm_load_jobs error: Unable to contact\n{MARK}rc 1"
            + text[end + len(f"{MARK}rc 0") :]
        )
    report = report_of(text)
    assert not report.accounting and report.limits == []
    assert len(report.notes) == 2 and "squeue did not answer" in report.notes[0]
    assert "Unable to contact" in report.notes[0]
    polar = report.partition("polar")
    assert polar is not None and polar.gpus_free == 13 and polar.pending_jobs == 0


def test_allocation_derived_from_jobs_when_nodes_do_not_say() -> None:
    text = (
        f"{MARK}user\nu\n{MARK}rc 0\n{MARK}nodes\n"
        "NodeName=n1 CPUAlloc=4 CPUTot=8 Gres=gpu:t4:4 State=MIXED Partitions=p RealMemory=10\n"
        "NodeName=n2 CPUAlloc=8 CPUTot=8 Gres=gpu:t4:4 State=ALLOCATED Partitions=p\n"
        f"{MARK}rc 0\n{MARK}partitions\n{MARK}rc 0\n{MARK}jobs\n"
        "5|u|a|q|p|RUNNING|2|12|gres:gpu:2|n[1-2]|2026-11-30T22:00:00|None\n"
        f"{MARK}rc 0\n"
    )
    report = report_of(text)
    p = report.partition("p")
    assert p is not None
    assert [(t.kind, t.allocated, t.free) for t in p.gpu_types] == [("t4", 4, 4)]
    # n2 has free GPUs but no free CPU: n1's two are what a job can actually get.
    assert p.largest_block is not None and (p.largest_block.node, p.largest_block.gpus) == (
        "n1",
        2,
    )
    assert report.mine.running_gpus == 4


@pytest.mark.parametrize("nodes", [1, 2, 7, 8, 9, 100])
def test_scaled_output_has_exactly_the_nodes_asked_for(nodes: int) -> None:
    raw = parse_capacity_output(scaled_output(SYNTHETIC, nodes))
    assert len(raw.nodes) == nodes
    assert len({n.name for n in raw.nodes}) == nodes
    names = {n.name for n in raw.nodes}
    # Running jobs are copied only onto nodes that exist in the scaled answer.
    assert all(set(j.node_list) <= names for j in raw.jobs if j.running)


def test_scaled_output_keeps_per_node_numbers() -> None:
    big = report_of(scaled_output(SYNTHETIC, 1000))
    batch = big.partition("batch")
    assert batch is not None
    nodes_in_batch = sum(batch.nodes.values())
    assert nodes_in_batch > 800
    small = report_of(SYNTHETIC).partition("batch")
    assert small is not None
    # Every replayed copy of a node is the same node again: totals scale with the copies.
    copies = nodes_in_batch // sum(small.nodes.values())
    assert batch.gpus_total >= small.gpus_total * copies
    assert batch.largest_block is not None and batch.largest_block.gpus == 8


def _cold_report(text: str) -> CapacityReport:
    parse_node_line.cache_clear()
    parse_job_line.cache_clear()
    return report_of(text)


def test_a_warm_refresh_adds_up_what_a_cold_one_does() -> None:
    """Node figures are remembered by node (the line cache hands back the same node): a refresh
    where one node changed must still give what a first refresh gives, and so must one where
    nothing changed."""
    text = scaled_output(SYNTHETIC, 60)
    first = _cold_report(text)
    assert report_of(text) == first  # nothing changed: everything remembered
    # gpu02's copy -k3 gets 5 more GPUs, then all 8: its figures must follow.
    for alloc in ("gres/gpu=8,gres/gpu:a100=8", "gres/gpu=3,gres/gpu:a100=3"):
        changed = re.sub(
            r"(NodeName=gpu02-k3 .*?AllocTRES=cpu=4,mem=16G,)gres/gpu=3,gres/gpu:a100=3",
            rf"\g<1>{alloc}",
            text,
        )
        assert changed != text or alloc.endswith("=3")
        warm = report_of(changed)
        assert warm == _cold_report(changed)
        report_of(text)  # back to the original lines, warm again
    busy = report_of(
        re.sub(
            r"(NodeName=gpu02-k3 .*?)gres/gpu=3,gres/gpu:a100=3",
            r"\g<1>gres/gpu=8,gres/gpu:a100=8",
            text,
        )
    )
    assert busy.gpus_free == first.gpus_free - 5


# ----------------------------------------------------------------------------------- the CLI


def test_cli_table_names_everything_a_researcher_asks() -> None:
    from tao_slurm_tui.commands.capacity import format_report

    text = format_report(report_of(SYNTHETIC))
    lines = text.splitlines()
    assert lines[0] == "15 GPUs free on the cluster (* marks the default partition)."
    polar = next(ln for ln in lines if ln.startswith("polar*"))
    assert "13/32" in polar and "a100 13/32" in polar and "8 a100 on gpu01" in polar
    assert "1/1/1/1" in polar and "2 (18 GPUs)" in polar
    assert any("gpu04" in ln and "Xid 79 GPU fell off the bus" in ln for ln in lines)
    assert "Your jobs (alice): 2 running with 4 GPUs, 11 pending asking for 26 GPUs." in lines
    assert "  account tao: GrpTRES gres/gpu=12 (6/12 used)" in lines


def test_cli_unreachable_cluster_is_one_sentence_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    from tao_slurm_tui.cli import main

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    import asyncssh

    key = tmp_path / "id_ed25519"
    asyncssh.generate_private_key("ssh-ed25519").write_private_key(str(key))
    key.chmod(0o600)
    config = tmp_path / "config.toml"
    config.write_text(
        'default_profile = "x"\n[profiles.x]\nuser = "u"\nhostnames = ["127.0.0.1"]\n'
        f'port = {port}\nssh_key_path = "{key}"\npartition = "polar"\n'
        "connect_timeout = 2\n"
    )
    code = main(["--config", str(config), "capacity", "--json"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.startswith("tao-slurm-tui: ") and err.count("\n") == 1
    assert "Traceback" not in err


# ----------------------------------------------------------------------------------- recorded


def test_recorded_sandbox_idle() -> None:
    """Recorded on the sandbox (SLURM 22.05.8, one node with gpu:4, nothing running)."""
    report = report_of((GOLDEN / "sandbox-idle.txt").read_text(encoding="utf-8"))
    assert report.user == "slurmtest"
    assert [p.name for p in report.partitions] == ["polar", "batch"]
    for p in report.partitions:
        assert (p.gpus_total, p.gpus_allocated, p.gpus_free) == (4, 0, 4)
        assert p.largest_block is not None and p.largest_block.gpus == 4
        assert (p.cpus_free, p.mem_free_mb) == (8, 8192)
    assert report.limits == [] and report.accounting and report.notes == []


def test_recorded_sandbox_busy() -> None:
    """Recorded with a running 2-GPU job, a pending 3-GPU one, a held one in two partitions
    and a pending array of five."""
    report = report_of((GOLDEN / "sandbox-busy.txt").read_text(encoding="utf-8"))
    polar, batch = report.partition("polar"), report.partition("batch")
    assert polar is not None and batch is not None
    assert (polar.gpus_allocated, polar.gpus_free) == (2, 2)
    assert polar.largest_block is not None and polar.largest_block.gpus == 2
    assert polar.nodes[NodeState.MIXED] == 1
    assert (polar.running_jobs, polar.running_gpus) == (1, 2)
    assert (polar.pending_jobs, polar.pending_gpus) == (6, 6)
    assert (batch.pending_jobs, batch.pending_gpus) == (2, 4)
    mine = report.mine
    assert (mine.running_jobs, mine.running_gpus, mine.pending_jobs, mine.pending_gpus) == (
        1,
        2,
        7,
        9,
    )


def test_gpu_type_problem_names_the_types_a_partition_has() -> None:
    from tao_slurm_tui.core.capacity_report import gpu_type_problem

    report = report_of(SYNTHETIC)
    kinds = {p.name: sorted(t.kind for t in p.gpu_types) for p in report.partitions}
    polar_kinds = [k for k in kinds["polar"] if k]
    assert polar_kinds, kinds
    assert gpu_type_problem(report, ["polar"], polar_kinds[0]) == ""
    assert gpu_type_problem(report, ["polar"], "") == ""
    assert gpu_type_problem(report, ["no-such-partition"], "v100") == ""  # nothing known
    problem = gpu_type_problem(report, ["polar"], "v100")
    assert problem.startswith("No node of partition 'polar' has GPU type 'v100' (it has ")
    assert polar_kinds[0] in problem and problem.endswith("leave it empty for any type.")
    everywhere = gpu_type_problem(report, [], "b200")
    assert everywhere.startswith("No node of partitions ")
