"""The sbatch script: golden renders, every directive rule, and bash round trips.

Goldens live in ``tests/unit/golden/``; regenerate them with
``TAO_UPDATE_GOLDEN=1 .venv/bin/pytest tests/unit/test_render.py`` and read the diff.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tao_slurm_tui.core.launch import LaunchExtras
from tao_slurm_tui.core.partitions import PartitionLimits
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.render import (
    SINGLE_NODE_UNSET,
    export_lines,
    render_entrypoint,
    render_sbatch,
)
from tao_slurm_tui.core.spec import ResolveContext, ResolvedStep, SpecDraft, resolve
from tao_slurm_tui.errors import BadInput

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("TAO_UPDATE_GOLDEN", "") not in ("", "0")
BASE = "/lustre/fsw/portfolios/edgeai/users/tao"
IMAGE = "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt"

# A fixed stand-in for core.retry's function, so the goldens do not change with its patterns.
STUB_INFRA = """tao_infra_failure() {
    grep -h -m 1 -E 'NCCL WARN|Xid' "$@" 2>/dev/null | sed 's/^/tao_infra_failure: /' >&2
    grep -q -E 'NCCL WARN|Xid' "$@" 2>/dev/null
}"""


def make_spec(**extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "dino-train-1",
        "image": IMAGE,
        "command": "dino train -e /specs/train.yaml",
        "partition": "polar",
    }
    data.update(extra)
    return data


def make_profile(**extra: Any) -> Profile:
    data: dict[str, Any] = {
        "user": "tao",
        "hostnames": ["login1"],
        "partition": "polar,polar3,polar4,grizzly",
        "base_results_dir": BASE,
    }
    data.update(extra)
    return Profile.model_validate(data)


def step_of(
    spec: dict[str, Any] | None = None,
    profile: Profile | None = None,
    *,
    base: str | None = None,
    partition_limits: PartitionLimits | None = None,
) -> ResolvedStep:
    """The spec resolved (BadInput: the CLI's sentence), its first step."""
    profile = profile or make_profile()
    if base is not None:
        profile = profile.model_copy(update={"base_results_dir": base})
    context = ResolveContext(partition_limits=partition_limits)
    return resolve(SpecDraft(spec or make_spec()), profile, context).require().steps[0]


def render(
    spec: dict[str, Any] | None = None,
    profile: Profile | None = None,
    *,
    base: str | None = None,
    partition_limits: PartitionLimits | None = None,
    infra_check: str | None = STUB_INFRA,
    **extras: Any,
) -> str:
    step = step_of(spec, profile, base=base, partition_limits=partition_limits)
    return render_sbatch(step.plan, LaunchExtras.checked(**extras), infra_check=infra_check)


# --------------------------------------------------------------------------- goldens

CASES: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    # name: (spec fields, profile fields, render kwargs)
    "single_node": ({"env": {"NCCL_DEBUG": "INFO"}}, {}, {}),
    "multi_node": ({"num_nodes": 2, "num_gpus": 4}, {}, {}),
    "exclusive_computed": ({"num_gpus": 16}, {}, {}),
    "gpu_type": ({"num_gpus": 2, "gpu_type": "h100"}, {}, {}),
    "requeue_off": ({"use_requeue": False}, {}, {}),
    "tao_train": (
        {"command": "classification_pyt train -e /specs/t.yaml results_dir=$TAO_API_RESULTS_DIR/x"},
        {},
        {},
    ),
    "account_set": ({"account": "edgeai"}, {}, {}),
    "image_sqsh": ({"image": "/lustre/images/tao-toolkit.sqsh"}, {}, {}),
    "image_pyxis_hash": ({"image": "nvcr.io#nvidia/tao/tao-toolkit:6.26.3-pyt"}, {}, {}),
    "image_docker_uri": ({"image": "docker://nvcr.io#nvidia/tao/tao-toolkit:6.26.3-pyt"}, {}, {}),
    "image_registry_path": ({"image": "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt"}, {}, {}),
    "runtime_none": (
        {"num_gpus": 1, "cpus_per_task": 1, "time_hours": 1, "container_mounts": []},
        {"container_runtime": "none", "base_results_dir": "/home/slurmtest/tao"},
        {},
    ),
    "retry_attempt": (
        {"time_hours": 2},
        {"base_results_dir": "/home/me/tao"},
        {
            "exclude_nodes": ["gpu-b03", "gpu-b04"],
            "dependency": "afterok:1234",
            "image_override": "/lustre/cache/nvcr.io_nvidia_tao_tao-toolkit_6.26.3-pyt.sqsh",
        },
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str) -> None:
    spec_fields, profile_fields, kwargs = CASES[case]
    text = render(make_spec(**spec_fields), make_profile(**profile_fields), **kwargs)
    path = GOLDEN / f"{case}.sbatch"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing golden {path.name}; run with TAO_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8")


def test_golden_entrypoint() -> None:
    spec = make_spec(command='for f in a b; do\n  echo "$f" | tr a-z A-Z > /tmp/out.$f\ndone')
    text = render_entrypoint(step_of(spec).spec)
    path = GOLDEN / "entrypoint.sh"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_no_stray_goldens() -> None:
    expected = {f"{case}.sbatch" for case in CASES} | {"entrypoint.sh"}
    assert {p.name for p in GOLDEN.iterdir() if p.is_file()} == expected


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*")), ids=lambda p: p.name)
def test_every_golden_passes_bash_syntax_check(path: Path) -> None:
    result = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


# --------------------------------------------------------------------------- directives


def directives(text: str) -> list[str]:
    return [line[len("#SBATCH ") :] for line in text.splitlines() if line.startswith("#SBATCH ")]


def test_single_node_directives() -> None:
    d = directives(render())
    assert d == [
        "--job-name=dino-train-1",
        "--partition=polar",
        "--nodes=1",
        "--ntasks-per-node=1",
        "--gres=gpu:4",
        "--cpus-per-task=64",
        "--wait-all-nodes=1",
        "--time=04:00:00",
        f"--output={BASE}/slurm-logs/%x-%j/main.out",
        f"--error={BASE}/slurm-logs/%x-%j/main.err",
        "--open-mode=append",
        "--requeue",
    ]


def test_gpu_type_is_asked_for_in_the_gres_and_kept_by_the_start_estimate() -> None:
    from tao_slurm_tui.core.start_estimate import script_request

    typed = render(make_spec(num_gpus=2, gpu_type="h100"))
    assert "--gres=gpu:h100:2" in directives(typed)
    request = script_request(typed)
    assert (request.gpu_type, request.gpus_per_node) == ("h100", 2)
    whole = directives(render(make_spec(num_gpus=16, gpu_type="a100")))
    assert "--gres=gpu:a100:8" in whole and "--exclusive" in whole and "--nodes=2" in whole
    assert "--gres=gpu:4" in directives(render())  # no type: any GPU, as before
    assert not any(d.startswith("--gres") for d in directives(render(make_spec(num_gpus=0))))


def test_directives_come_before_any_command() -> None:
    lines = render().splitlines()
    last = max(i for i, line in enumerate(lines) if line.startswith("#SBATCH"))
    assert all(not line.strip() or line.startswith("#") for line in lines[:last])


def test_multi_node_directives() -> None:
    d = directives(render(make_spec(num_nodes=3, num_gpus=2)))
    assert "--nodes=3" in d and "--ntasks=3" in d and "--ntasks-per-node=1" in d
    assert "--gres=gpu:2" in d
    assert "--cpus-per-task=16" in d
    assert "--exclusive" not in d


def test_computed_exclusive_nodes() -> None:
    d = directives(render(make_spec(num_gpus=16)))
    assert "--nodes=2" in d and "--ntasks=2" in d and "--gres=gpu:8" in d and "--exclusive" in d


def test_profile_node_size_and_cpu_cap() -> None:
    profile = make_profile(max_gpus_per_node=4, max_cpus_per_task=32)
    d = directives(render(make_spec(num_gpus=4), profile))
    assert "--exclusive" in d and "--cpus-per-task=32" in d


def test_no_gpus_means_no_gres() -> None:
    assert not any(x.startswith("--gres") for x in directives(render(make_spec(num_gpus=0))))


def test_time_and_timeout() -> None:
    text = render(make_spec(time_hours=2.5, timeout_hours=2.25))
    assert "--time=02:30:00" in directives(text)
    assert "timeout 135m srun" in text


def test_partition_and_account_fall_back_to_the_profile() -> None:
    spec = make_spec(partition="")
    d = directives(render(spec, make_profile(account="prof-acct")))
    assert "--partition=polar,polar3,polar4,grizzly" in d
    assert "--account=prof-acct" in d
    d = directives(render(make_spec(account="mine"), make_profile(account="prof-acct")))
    assert "--account=mine" in d
    assert not any(x.startswith("--account") for x in directives(render()))


def test_no_partition_anywhere_is_bad_input() -> None:
    with pytest.raises(BadInput, match="partition"):
        render(make_spec(partition=""), make_profile(partition=""))


def test_requeue_directive_follows_the_spec() -> None:
    assert "--requeue" in directives(render())
    off = render(make_spec(use_requeue=False))
    assert "--no-requeue" in directives(off) and "--requeue" not in directives(off)
    assert "scontrol requeue" not in off and "tao_infra_failure" not in off


def test_exclude_and_dependency() -> None:
    d = directives(render(exclude_nodes=["n1", "n[2-3]"], dependency="afterok:42"))
    assert "--exclude=n1,n[2-3]" in d
    assert "--dependency=afterok:42" in d
    plain = directives(render())
    assert not any(x.startswith(("--exclude", "--dependency")) for x in plain)


@pytest.mark.parametrize(
    "kwargs",
    [{"exclude_nodes": ["n1 n2"]}, {"dependency": "afterok:1;rm"}, {"base": "relative/dir"}],
)
def test_unsafe_values_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(BadInput):
        render(**kwargs)


@pytest.mark.parametrize("base", ["/home/my user/tao", "/data/%u", "/x/'y'"])
def test_base_dirs_an_sbatch_line_cannot_carry(base: str) -> None:
    with pytest.raises(BadInput, match="base_results_dir"):
        render(base=base)


def test_wall_time_above_the_packaged_limit_is_bad_input() -> None:
    with pytest.raises(BadInput) as info:
        render(make_spec(time_hours=12))
    assert "'polar'" in str(info.value) and "4 h" in str(info.value)


def test_wall_time_checked_against_given_limits() -> None:
    spec = make_spec(partition="batch", time_hours=24)
    assert "--time=1-00:00:00" in directives(render(spec, partition_limits={"batch": 2 * 86400}))
    with pytest.raises(BadInput, match="'batch'"):
        render(spec, partition_limits={"batch": 3600})


def test_output_paths_and_results_dir() -> None:
    text = render(base="/home/slurmtest/tao/")
    d = directives(text)
    assert "--output=/home/slurmtest/tao/slurm-logs/%x-%j/main.out" in d
    assert "--error=/home/slurmtest/tao/slurm-logs/%x-%j/main.err" in d
    assert "export TAO_API_RESULTS_DIR=/home/slurmtest/tao/results" in text
    assert "/home/slurmtest/tao/entrypoints/job_dino-train-1.sh" in text


# --------------------------------------------------------------------------- launch


def srun_argv(text: str) -> list[str]:
    """The srun command line of a rendered script, split like bash would."""
    match = re.search(r"^timeout \d+m (srun .*?) </dev/null$", text, re.M | re.S)
    assert match, text
    return shlex.split(match.group(1).replace("\\\n", " "))


def test_pyxis_launch() -> None:
    argv = srun_argv(render(make_spec(env={"A": "1", "B": "2"})))
    assert argv[0] == "srun"
    assert "--container-image=nvcr.io#nvidia/tao/tao-toolkit:6.26.3-pyt" in argv
    assert "--container-mounts=/lustre" in argv  # the base is under /lustre: covered
    assert "--container-env=TAO_JOB_ID,TAO_API_RESULTS_DIR,A,B" in argv
    assert "--cpus-per-task=64" in argv
    assert argv[-4:-1] == ["--", "bash", "-c"]


def test_pyxis_mounts_the_base_dir_when_not_covered() -> None:
    # No /lustre by default where the results root is not on it: the results dir alone.
    argv = srun_argv(render(base="/home/me/tao"))
    assert "--container-mounts=/home/me/tao" in argv
    argv = srun_argv(render(make_spec(container_mounts=["/lustre"]), base="/home/me/tao"))
    assert "--container-mounts=/lustre,/home/me/tao" in argv
    argv = srun_argv(render(make_spec(container_mounts=["/lustre:/data"])))
    assert f"--container-mounts=/lustre:/data,{BASE}" in argv


def test_runtime_none_has_no_container_options() -> None:
    argv = srun_argv(render(profile=make_profile(container_runtime="none")))
    assert not any(a.startswith("--container") for a in argv)
    assert argv[-4:-1] == ["--", "bash", "-c"]


def test_image_override_replaces_the_image() -> None:
    argv = srun_argv(render(image_override="/lustre/cache/x.sqsh"))
    assert "--container-image=/lustre/cache/x.sqsh" in argv


def test_multi_node_exports_and_container_env() -> None:
    text = render(make_spec(num_nodes=2, num_gpus=8))
    assert "export WORLD_SIZE=2" in text
    assert "export NUM_GPU_PER_NODE=8" in text
    assert "export MASTER_PORT=29500" in text
    assert 'MASTER_ADDR=$(scontrol show hostname "$SLURM_JOB_NODELIST" | head -n 1)' in text
    # NODE_RANK is never exported by the batch script: only inside the step.
    assert "export NODE_RANK=$SLURM_NODEID" not in text
    env = next(a for a in srun_argv(text) if a.startswith("--container-env="))
    assert env.endswith("WORLD_SIZE,NUM_GPU_PER_NODE,MASTER_PORT,MASTER_ADDR")


def test_master_port_from_env() -> None:
    text = render(make_spec(num_nodes=2, env={"MASTER_PORT": "29777"}))
    assert "export MASTER_PORT=29777" in text
    assert "export MASTER_PORT=29500" not in text


def test_single_node_has_no_rendezvous() -> None:
    text = render()
    assert "WORLD_SIZE=" not in text and "MASTER_ADDR" not in text


def test_default_infra_check_comes_from_core_retry() -> None:
    from tao_slurm_tui.core import retry

    text = render_sbatch(step_of().plan)
    assert retry.bash_infra_check().strip() in text


# --------------------------------------------------------------------------- bash round trips

NASTY = {
    "SINGLE": "it's",
    "DOUBLE": 'say "hi"',
    "DOLLAR": "$HOME and ${PATH} and $(id)",
    "BACKTICK": "`whoami`",
    "SPACES": "  lead and trail  ",
    "BACKSLASH": "C:\\path\\to\\n",
    "NEWLINE": "line1\nline2\n",
    "GLOB": "* ? [a-z]",
    "SEMI": "a; rm -rf / && echo x | cat > /dev/null",
    "EMPTY": "",
    "UNICODE": "héllo ✓",
    "BANG": "!! !$",
}


def env_block(text: str) -> str:
    start = text.index("{ _tao_xtrace=")
    end = text.index("unset _tao_xtrace", start) + len("unset _tao_xtrace")
    return text[start:end] + "\n"


def source_and_dump(
    block: str, keys: list[str], tmp_path: Path, *, xtrace: bool
) -> tuple[dict[str, str], str]:
    script = tmp_path / "env.sh"
    script.write_text(block, encoding="utf-8")
    dump = 'for k in "$@"; do printf "%s=%s\\0" "$k" "${!k}"; done'
    prefix = "set -x; " if xtrace else ""
    result = subprocess.run(
        ["bash", "-c", f"{prefix}source {shlex.quote(str(script))}; set +x; {dump}", "bash", *keys],
        capture_output=True,
        check=True,
        env={"PATH": os.environ["PATH"], "HOME": "/nonexistent-home"},
    )
    out: dict[str, str] = {}
    for item in result.stdout.decode("utf-8").split("\0")[:-1]:
        key, _, value = item.partition("=")
        out[key] = value
    return out, result.stderr.decode("utf-8")


def test_env_round_trip_through_bash(tmp_path: Path) -> None:
    spec = make_spec(env=NASTY)
    values, _ = source_and_dump(env_block(render(spec)), list(NASTY), tmp_path, xtrace=False)
    assert values == NASTY


def test_export_lines_round_trip_directly(tmp_path: Path) -> None:
    block = "\n".join(export_lines(NASTY)) + "\n"
    values, _ = source_and_dump(block, list(NASTY), tmp_path, xtrace=False)
    assert values == NASTY


def test_env_values_never_reach_a_trace(tmp_path: Path) -> None:
    secret = "s3cr3t-value-$x"
    spec = make_spec(env={"TOKENISH": secret})
    values, stderr = source_and_dump(env_block(render(spec)), ["TOKENISH"], tmp_path, xtrace=True)
    assert values == {"TOKENISH": secret}
    assert "s3cr3t" not in stderr
    # Tracing is switched back on afterwards (the `set +x` of the dumper shows up in the trace).
    assert "+ set +x" in stderr


def step_command(text: str) -> str:
    argv = srun_argv(text)
    assert argv[-3:-1] == ["bash", "-c"]
    return argv[-1]


def run_step(text: str, entrypoint: Path, env: dict[str, str]) -> str:
    command = step_command(text).replace(
        str(Path(BASE) / "entrypoints" / "job_dino-train-1.sh"), str(entrypoint)
    )
    result = subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": os.environ["PATH"], **env},
    )
    return result.stdout


def test_node_rank_comes_from_slurm_nodeid_inside_the_step(tmp_path: Path) -> None:
    entry = tmp_path / "entry.sh"
    entry.write_text('echo "rank=$NODE_RANK world=$WORLD_SIZE"\n', encoding="utf-8")
    text = render(make_spec(num_nodes=2))
    for node in ("0", "1"):
        out = run_step(text, entry, {"SLURM_NODEID": node, "WORLD_SIZE": "2"})
        assert out == f"rank={node} world=2\n"


def test_single_node_step_unsets_per_task_variables(tmp_path: Path) -> None:
    entry = tmp_path / "entry.sh"
    entry.write_text('for v in "$@"; do :; done; env | cut -d= -f1 | sort\n', encoding="utf-8")
    slurm_env = {name: "0" for name in SINGLE_NODE_UNSET}
    slurm_env |= {"SLURM_JOB_ID": "7", "TAO_API_RESULTS_DIR": "/r"}
    out = run_step(render(), entry, slurm_env).split()
    for name in ("SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID", "RANK", "LOCAL_RANK"):
        assert name not in out
    assert "SLURM_JOB_ID" in out and "TAO_API_RESULTS_DIR" in out


# ------------------------------------------------------------------- whole script, fake SLURM

FAKE_SRUN = """#!/bin/bash
# Fake srun: record the call, run what follows `--` as node 0, or exit with $FAKE_RC.
echo "srun $*" >>"$FAKE_CALLS"
if [ -n "${FAKE_RC:-}" ]; then exit "$FAKE_RC"; fi
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done
shift
SLURM_NODEID=0 exec "$@"
"""
FAKE_DATE = """#!/bin/bash
# Fake date: `date +%s` advances by $FAKE_ELAPSED per call; anything else is the real date.
if [ "${1:-}" = "+%s" ]; then
    now=$(cat "$FAKE_CLOCK" 2>/dev/null || echo 1000)
    echo "$now"
    echo $(( now + ${FAKE_ELAPSED:-0} )) >"$FAKE_CLOCK"
    exit 0
fi
exec REAL_DATE "$@"
"""
FAKE_SCONTROL = """#!/bin/bash
echo "scontrol $*" >>"$FAKE_CALLS"
if [ "$1 $2" = "show hostname" ]; then printf 'node1\\nnode2\\n'; fi
if [ "$1 $2" = "show hostnames" ]; then printf '%s\\n' "$3" | tr ',' '\\n'; fi
if [ "$1 $2" = "show job" ]; then echo "ExcNodeList=${FAKE_EXCLUDED:-(null)}"; fi
if [ "$1" = requeue ] && [ -n "${FAKE_SCONTROL_FAILS:-}" ]; then
    echo "scontrol: error: Invalid job id specified" >&2; exit 1
fi
# Like SLURM: requeueing a running job sends SIGTERM to its batch script (our parent).
if [ "$1" = requeue ]; then kill -TERM "$PPID"; fi
"""

FAKE_SINFO = """#!/bin/bash
echo "sinfo $*" >>"$FAKE_CALLS"
echo "${FAKE_PARTITION_NODES:-4}"
"""


def run_script(
    tmp_path: Path,
    spec: dict[str, Any],
    *,
    fake_rc: str = "",
    log: str = "",
    restart_count: str = "0",
    infra_check: str | None = STUB_INFRA,
    elapsed_seconds: int = 0,
    requeue_reasons: str = "",
    env: dict[str, str] | None = None,
) -> tuple[int, str, str, Path]:
    base = tmp_path / "base"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    real_date = shutil.which("date")
    assert real_date
    fakes = (
        ("srun", FAKE_SRUN),
        ("scontrol", FAKE_SCONTROL),
        ("sinfo", FAKE_SINFO),
        ("date", FAKE_DATE.replace("REAL_DATE", real_date)),
    )
    for name, body in fakes:
        (bindir / name).write_text(body, encoding="utf-8")
        (bindir / name).chmod(0o755)
    step = step_of(spec, make_profile(container_runtime="none"), base=str(base))
    text = render_sbatch(step.plan, infra_check=infra_check)
    entry = base / "entrypoints" / f"job_{step.name}.sh"
    entry.parent.mkdir(parents=True)
    entry.write_text(render_entrypoint(step.spec), encoding="utf-8")
    logdir = base / "slurm-logs" / f"{step.name}-77"
    logdir.mkdir(parents=True, exist_ok=True)
    (logdir / "main.out").write_text(log, encoding="utf-8")
    if requeue_reasons:
        (logdir / "requeue.reason").write_text(requeue_reasons, encoding="utf-8")
    script = tmp_path / "job.sbatch"
    script.write_text(text, encoding="utf-8")
    calls = tmp_path / "calls"
    calls.touch()
    result = subprocess.run(
        ["bash", str(script)],
        capture_output=True,
        text=True,
        check=False,
        env={
            "PATH": f"{bindir}:{os.environ['PATH']}",
            "FAKE_CALLS": str(calls),
            "FAKE_RC": fake_rc,
            "SLURM_JOB_ID": "77",
            "SLURM_JOB_NODELIST": "node[1-2]",
            "SLURM_RESTART_COUNT": restart_count,
            "FAKE_CLOCK": str(tmp_path / "clock"),
            "FAKE_ELAPSED": str(elapsed_seconds),
            "SLURMD_NODENAME": "node1",
            "SLURM_JOB_PARTITION": "polar",
            "SLURM_JOB_NUM_NODES": "1",
            **(env or {}),
        },
    )
    (tmp_path / "stderr").write_text(result.stderr, encoding="utf-8")  # (the script's main.err)
    return result.returncode, result.stdout, calls.read_text(encoding="utf-8"), logdir


def test_script_runs_the_entrypoint_with_the_environment(tmp_path: Path) -> None:
    spec = make_spec(
        command='echo "greeting=$GREETING results=$TAO_API_RESULTS_DIR" | tr a-z A-Z',
        env={"GREETING": "it's $fine"},
    )
    rc, out, calls, logdir = run_script(tmp_path, spec)
    assert rc == 0
    assert f"GREETING=IT'S $FINE RESULTS={str(tmp_path).upper()}/BASE/RESULTS" in out
    assert "scontrol requeue" not in calls
    assert not (logdir / "requeue.reason").exists()
    assert (tmp_path / "base" / "results" / spec["name"]).is_dir()


FULL_TIMEOUT = 228 * 60  # the default timeout_hours of 3.8 h


def test_timeout_exit_requeues_with_a_reason(tmp_path: Path) -> None:
    rc, _, calls, logdir = run_script(
        tmp_path, make_spec(), fake_rc="124", elapsed_seconds=FULL_TIMEOUT
    )
    assert rc == 124
    assert "scontrol requeue 77" in calls
    assert "timeout after 228 minutes" in (logdir / "requeue.reason").read_text()


def test_a_command_exiting_124_early_is_a_failure_not_a_timeout(tmp_path: Path) -> None:
    rc, out, calls, logdir = run_script(tmp_path, make_spec(), fake_rc="124", elapsed_seconds=3)
    assert rc == 124
    assert "scontrol requeue" not in calls
    assert "was stopped" not in out
    assert not (logdir / "requeue.reason").exists()


def test_timeout_without_requeue_does_not_requeue(tmp_path: Path) -> None:
    rc, _, calls, _ = run_script(
        tmp_path, make_spec(use_requeue=False), fake_rc="124", elapsed_seconds=FULL_TIMEOUT
    )
    assert rc == 124
    assert "scontrol requeue" not in calls


def test_infrastructure_failure_requeues_with_the_matched_line(tmp_path: Path) -> None:
    log = "epoch 1\nnode3:12:34 [0] NCCL WARN NET/IB : Got completion from peer with error 12\n"
    rc, _, calls, logdir = run_script(tmp_path, make_spec(), fake_rc="1", log=log)
    assert rc == 1
    assert "scontrol requeue 77" in calls
    reason = (logdir / "requeue.reason").read_text()
    assert "infrastructure failure: node3:12:34 [0] NCCL WARN" in reason
    assert "restart=0 rc=1" in reason


def test_program_failure_is_not_requeued(tmp_path: Path) -> None:
    rc, _, calls, logdir = run_script(
        tmp_path, make_spec(), fake_rc="1", log="Traceback\nKeyError: x\n"
    )
    assert rc == 1
    assert "scontrol requeue" not in calls
    assert not (logdir / "requeue.reason").exists()


def test_retry_budget_stops_self_requeue(tmp_path: Path) -> None:
    log = "NCCL WARN Got completion from peer with error 12\n"
    earlier = "2026-01-01T00:00:00 restart=0 rc=1 infrastructure failure: NCCL error\n" * 10
    rc, _, calls, _ = run_script(
        tmp_path, make_spec(), fake_rc="1", log=log, restart_count="10", requeue_reasons=earlier
    )
    assert rc == 1
    assert "scontrol requeue" not in calls


def test_timeout_requeues_do_not_spend_the_infrastructure_budget(tmp_path: Path) -> None:
    log = "NCCL WARN Got completion from peer with error 12\n"
    timeouts = "2026-01-01T00:00:00 restart=0 rc=124 timeout after 228 minutes\n" * 12
    rc, _, calls, _ = run_script(
        tmp_path, make_spec(), fake_rc="1", log=log, restart_count="12", requeue_reasons=timeouts
    )
    assert rc == 1
    assert "scontrol requeue 77" in calls


def test_timeout_requeues_have_their_own_cap(tmp_path: Path) -> None:
    timeouts = "2026-01-01T00:00:00 restart=0 rc=124 timeout after 228 minutes\n" * 5
    run = run_script(
        tmp_path, make_spec(), fake_rc="124", elapsed_seconds=FULL_TIMEOUT, requeue_reasons=timeouts
    )
    assert run[0] == 124
    assert "scontrol requeue" not in run[2]


def test_infrastructure_requeue_excludes_the_failed_node(tmp_path: Path) -> None:
    # ExcNodeList can change only while the job is pending: requeue first, update on SIGTERM.
    log = "NCCL WARN Got completion from peer with error 12\n"
    rc, out, calls, _ = run_script(
        tmp_path, make_spec(), fake_rc="1", log=log, env={"FAKE_EXCLUDED": "node7"}
    )
    assert rc == 1
    lines = calls.splitlines()
    requeue = lines.index("scontrol requeue 77")
    assert "scontrol update JobId=77 ExcNodeList=node7,node1" in lines[requeue + 1 :]
    assert "will not run on node1 again" in out


def test_no_exclusion_when_too_few_nodes_would_be_left(tmp_path: Path) -> None:
    log = "NCCL WARN Got completion from peer with error 12\n"
    rc, out, calls, _ = run_script(
        tmp_path, make_spec(), fake_rc="1", log=log, env={"FAKE_PARTITION_NODES": "1"}
    )
    assert rc == 1
    assert "scontrol requeue 77" in calls
    assert "ExcNodeList" not in calls.replace("show job", "")
    assert "not excluding node1" in out


def test_timeout_requeue_keeps_the_node(tmp_path: Path) -> None:
    rc, _, calls, _ = run_script(tmp_path, make_spec(), fake_rc="124", elapsed_seconds=FULL_TIMEOUT)
    assert rc == 124
    assert "scontrol requeue 77" in calls and "update" not in calls


def test_real_retry_patterns_drive_the_hook(tmp_path: Path) -> None:
    log = "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4)\n"
    rc, _, calls, logdir = run_script(tmp_path, make_spec(), fake_rc="1", log=log, infra_check=None)
    assert rc == 1
    assert "scontrol requeue 77" in calls
    assert "Watchdog" in (logdir / "requeue.reason").read_text()


def test_multi_node_script_exports_master_addr(tmp_path: Path) -> None:
    spec = make_spec(num_nodes=2, command='echo "addr=$MASTER_ADDR rank=$NODE_RANK"')
    rc, out, calls, _ = run_script(tmp_path, spec)
    assert rc == 0
    assert "addr=node1 rank=0" in out
    assert "srun --nodes=2 --ntasks=2" in calls


# --------------------------------------------------------------------------- entrypoint and plan


def test_entrypoint_is_the_command_run_by_bash() -> None:
    text = render_entrypoint(step_of(make_spec(command="a | b > c")).spec)
    assert text.startswith("#!/bin/bash\n")
    assert text.endswith("\na | b > c\n")


def test_plan_exposes_computed_values() -> None:
    plan = step_of(make_spec(num_gpus=16)).plan
    assert plan.shape.nodes == 2 and plan.shape.exclusive
    assert plan.time_limit == "04:00:00"
    assert plan.timeout_minutes == 228
    assert plan.paths.sbatch == f"{BASE}/sbatch/job_dino-train-1.sbatch"
