"""What only the cluster can settle, judged before anything is staged: the partition exists, one
node has the GPUs, CPUs and memory the job asks of it, the mount sources and inputs exist -- on
the sandbox's recorded answers; and the mount default comes from the profile."""

from __future__ import annotations

from typing import Any

import pytest

from tao_slurm_tui.core.cluster_facts import (
    PartitionFacts,
    parse_node_shapes,
    parse_partitions,
)
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.spec import Resolution, ResolveContext, SpecDraft, resolve
from tao_slurm_tui.core.spec.problems import Refused
from tao_slurm_tui.core.spec.rules import Subject, path_problems
from tao_slurm_tui.widgets.spec_form import in_words

# What the sandbox answered (scripts/sandbox-cluster, SLURM 22.05): three 8-CPU nodes with four
# GPUs each, in two partitions.
SCONTROL = (
    "PartitionName=polar AllowGroups=ALL Default=YES QoS=N/A DefaultTime=01:00:00 "
    "MaxTime=04:00:00 MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED Nodes=tao-n[1-3] State=UP "
    "TotalCPUs=24 TotalNodes=3 SelectTypeParameters=NONE JobDefaults=(null) "
    "DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED\n"
    "PartitionName=batch AllowGroups=ALL Default=NO QoS=N/A MaxTime=2-00:00:00 "
    "MaxCPUsPerNode=UNLIMITED Nodes=tao-n[1-3] State=UP DefMemPerNode=UNLIMITED "
    "MaxMemPerNode=UNLIMITED\n"
)
NODES = (
    "polar*|8|8192|gpu:a100:4|2\n"
    "polar*|8|8192|gpu:h100:4|1\n"
    "batch|8|8192|gpu:a100:4|2\n"
    "batch|8|8192|gpu:h100:4|1\n"
)
SANDBOX = parse_partitions(SCONTROL, NODES)

PROFILE = Profile(user="u", hostnames=["h"], partition="polar", base_results_dir="/home/u/tao")

GOOD: dict[str, Any] = {
    "name": "fits-1",
    "image": "reg.example:5000/nvidia/tao/tao-toolkit:sandbox",
    "command": "true",
    "partition": "polar",
    "num_gpus": 1,
    "cpus_per_task": 2,
}


def check(table: dict[str, Any], profile: Profile = PROFILE, **context: Any) -> Resolution:
    context.setdefault("partitions", SANDBOX)
    return resolve(SpecDraft(table), profile, ResolveContext(**context))


def test_sinfo_and_scontrol_are_read_as_the_sandbox_prints_them() -> None:
    assert sorted(SANDBOX) == ["batch", "polar"]
    polar = SANDBOX["polar"]
    assert [(n.cpus, n.memory_mb, n.gpus, n.count) for n in polar.nodes] == [
        (8, 8192, {"a100": 4}, 2),
        (8, 8192, {"h100": 4}, 1),
    ]
    assert polar.def_mem_per_node_mb is None and polar.max_cpus_per_node is None
    assert PartitionFacts.from_json(polar.to_json()) == polar
    assert parse_node_shapes("garbage\npolar|x|1|gpu:1|1\n") == {}


def test_a_fitting_job_passes() -> None:
    assert check(GOOD).job is not None


def test_unknown_partition_is_named_with_the_ones_the_cluster_has() -> None:
    problems = check({**GOOD, "partition": "gpu"}).by_field()
    assert problems == {
        "partition": (
            "The cluster has no partition 'gpu' (it has batch, polar); choose one of those."
        )
    }
    # Without the cluster's answer nothing is judged (SLURM has the last word).
    assert check({**GOOD, "partition": "gpu"}, partitions=None).job is not None


def test_the_profiles_unknown_partition_says_where_to_fix_it() -> None:
    profile = PROFILE.model_copy(update={"partition": "polar4"})
    problems = check({**GOOD, "partition": ""}, profile).by_field()
    assert "The profile's partition 'polar4' does not exist" in problems["partition"]


def test_default_cpus_times_gpus_on_an_8_cpu_node_names_cpus_per_task() -> None:
    # The case: 16 CPUs per task with 4 GPUs asks for 64 CPUs on one node.
    resolution = check({**GOOD, "num_gpus": 4, "cpus_per_task": 16})
    message = resolution.by_field()["cpus_per_task"]
    assert message == (
        "cpus_per_task = 16 asks for 64 CPUs on one node (16 CPUs per task × 4 GPUs: the one "  # noqa: RUF001
        "task on the node runs every GPU's process), but the nodes of partition 'polar' have "
        "at most 8; set cpus_per_task to at most 2."
    )
    assert in_words(message).startswith("CPUs per task = 16 asks for 64 CPUs")
    assert resolution.sentence().startswith("cpus_per_task = 16 asks for 64 CPUs")
    # One GPU: the task asks for its own CPUs only.
    single = check({**GOOD, "num_gpus": 1, "cpus_per_task": 16}).by_field()["cpus_per_task"]
    assert "asks for 16 CPUs on one node, but" in single and "at most 8." in single


def test_more_gpus_than_a_node_has_names_num_gpus_and_the_cpu_rule_stays_silent() -> None:
    problems = check({**GOOD, "num_gpus": 6, "cpus_per_task": 16}).by_field()
    assert list(problems) == ["num_gpus"]
    assert (
        "asks for 6 GPUs on one node, but no node of partition 'polar' has more than 4"
        in (problems["num_gpus"])
    )
    typed = check({**GOOD, "num_gpus": 4, "gpu_type": "h100"}).by_field()
    assert typed == {}
    # A type no node has is the GPU-type rule's (with a capacity report), not this one's.
    assert check({**GOOD, "gpu_type": "v100"}).by_field() == {}


def test_memory_defaults_per_cpu_are_counted() -> None:
    facts = parse_partitions(
        "PartitionName=polar MaxTime=04:00:00 DefMemPerCPU=4096 MaxCPUsPerNode=UNLIMITED\n",
        "polar*|8|8192|gpu:a100:4|2\n",
    )
    problems = check({**GOOD, "cpus_per_task": 4}, partitions=facts).by_field()
    assert problems["cpus_per_task"].startswith(
        "cpus_per_task = 4 gets the job 16384 MB of memory on one node (DefMemPerCPU 4096 MB × "  # noqa: RUF001
        "4 CPUs), more than the 8192 MB of the largest node"
    )
    assert check({**GOOD, "cpus_per_task": 2}, partitions=facts).job is not None


def test_max_cpus_per_node_caps_what_one_node_gives() -> None:
    facts = parse_partitions(
        "PartitionName=polar MaxTime=04:00:00 MaxCPUsPerNode=4\n", "polar*|8|8192|gpu:4|2\n"
    )
    problems = check({**GOOD, "cpus_per_task": 6}, partitions=facts).by_field()
    assert "have at most 4; set cpus_per_task to at most 4." in problems["cpus_per_task"]


def test_a_pipeline_step_is_judged_on_its_own_resources() -> None:
    table = {**GOOD, "then": [{"action": "big", "command": "true", "num_gpus": 8}]}
    problems = check(table).problems
    assert [p.field for p in problems] == ["then"]
    assert problems[0].text.startswith("step 2 ('big'): num_gpus = 8 asks for 8 GPUs on one node")


def test_missing_mount_sources_and_inputs_are_named_by_field() -> None:
    table = {**GOOD, "container_mounts": ["/lustre", "/data:/data"], "inputs": ["/data/train"]}
    paths = {"/lustre": False, "/data": True, "/data/train": False}
    problems = check(table, paths=paths).by_field()
    assert problems["container_mounts"].startswith(
        "container_mounts: source /lustre does not exist on the cluster, so Pyxis would stop "
        "the job as it starts"
    )
    assert problems["inputs"].startswith(
        "inputs: 1 input path does not exist on the cluster: /data/train;"
    )
    assert in_words(problems["container_mounts"]).startswith("Mounts: source /lustre")
    # Paths nobody asked about are not judged.
    assert check(table, paths={}).job is not None


def test_the_check_phase_refuses_with_the_forms_words() -> None:
    spec = check({**GOOD, "container_mounts": ["/lustre"]}).job
    assert spec is not None
    problems = path_problems(Subject(spec.steps[0].spec), PROFILE, {"/lustre": False})
    refused = Refused(problems, "job.toml")
    assert refused.exit_code == 2 and [p.field for p in refused.problems] == ["container_mounts"]
    assert str(refused).startswith("container_mounts: source /lustre does not exist")


@pytest.mark.parametrize(
    ("root", "mounts"),
    [
        ("/lustre/fsw/portfolios/edgeai/users/ana", ["/lustre"]),
        ("", ["/lustre"]),  # the platform's default results root is on /lustre
        ("/home/ana/tao", []),
        ("/scratch/ana", []),
    ],
)
def test_the_mount_default_comes_from_the_profile(root: str, mounts: list[str]) -> None:
    profile = Profile(user="ana", base_results_dir=root)
    assert profile.default_mounts == mounts
    job = check({**GOOD}, profile, partitions=None).job
    assert job is not None and job.spec.container_mounts == mounts
    chosen = profile.model_copy(update={"container_mounts": ["/data"]})
    assert chosen.default_mounts == ["/data"]
    with pytest.raises(ValueError, match="is not a mount"):
        Profile(container_mounts="data")
