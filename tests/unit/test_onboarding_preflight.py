"""The doctor's pure rules: probe script, section parsing, and each check's verdict."""

from __future__ import annotations

import subprocess

from tao_slurm_tui.core import preflight, preflight_probe
from tao_slurm_tui.core.preflight import CheckStatus, FixAction
from tao_slurm_tui.core.preflight_probe import Section

SCONTROL_PARTITIONS = (
    "PartitionName=polar AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL AllocNodes=ALL Default=YES "
    "QoS=N/A DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO "
    "MaxNodes=UNLIMITED MaxTime=04:00:00 MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED Nodes=vm "
    "PriorityJobFactor=1 PriorityTier=1 RootOnly=NO ReqResv=NO OverSubscribe=NO "
    "OverTimeLimit=NONE PreemptMode=OFF State=UP TotalCPUs=8 TotalNodes=1\n"
    "PartitionName=batch AllowGroups=ALL AllowAccounts=ALL MaxTime=2-00:00:00 Nodes=vm "
    "State=UP TotalCPUs=8 TotalNodes=1\n"
    "PartitionName=maint AllowGroups=ALL MaxTime=UNLIMITED Nodes=vm State=DOWN\n"
)

RECORDED_PROBE = f"""
@@tao-doctor begin tools
squeue|/usr/bin/squeue|slurm-wlm 22.05.8
sbatch|/usr/bin/sbatch|slurm-wlm 22.05.8
sacct|/usr/bin/sacct|slurm-wlm 22.05.8
scancel|/usr/bin/scancel|slurm-wlm 22.05.8

@@tao-doctor end tools 0

@@tao-doctor begin assoc
tao
research

@@tao-doctor end assoc 0

@@tao-doctor begin defacct
tao

@@tao-doctor end defacct 0

@@tao-doctor begin enforce
AccountingStorageEnforce = associations,limits

@@tao-doctor end enforce 0

@@tao-doctor begin partitions
{SCONTROL_PARTITIONS}
@@tao-doctor end partitions 0

@@tao-doctor begin results
writable

@@tao-doctor end results 0

@@tao-doctor begin creds
missing

@@tao-doctor end creds 0

@@tao-doctor begin inputs
0|ok
1|missing

@@tao-doctor end inputs 0
"""


def sec(*lines: str, rc: int = 0) -> Section:
    return Section(rc, tuple(lines))


def test_parse_probe_splits_sections_with_rc() -> None:
    parsed = preflight_probe.parse_probe(RECORDED_PROBE)
    assert set(parsed) == {
        "tools",
        "assoc",
        "defacct",
        "enforce",
        "partitions",
        "results",
        "creds",
        "inputs",
    }
    assert parsed["assoc"].lines == ("tao", "research")
    assert parsed["partitions"].rc == 0
    assert len(parsed["partitions"].lines) == 3


def test_parse_probe_drops_unterminated_section() -> None:
    parsed = preflight_probe.parse_probe("@@tao-doctor begin tools\nsqueue|/x|v\n")
    assert parsed == {}


def test_probe_script_runs_in_bash_and_parses() -> None:
    # The script is plain bash: run it locally with fake sections and read it back.
    sections = {"one": "echo hello; echo world >&2", "two": "false", "three": "echo 'a|b'"}
    script = preflight_probe.build_probe_script(sections)
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout
    parsed = preflight_probe.parse_probe(out)
    assert parsed["one"] == Section(0, ("hello", "world"))
    assert parsed["two"].rc == 1
    assert parsed["three"].lines == ("a|b",)


def test_probe_sections_include_only_what_applies() -> None:
    base = preflight_probe.probe_sections(results_dir=None, check_pyxis=False)
    assert "pyxis" not in base and "inputs" not in base and "results" not in base
    full = preflight_probe.probe_sections(
        results_dir="/home/u/tao", check_pyxis=True, input_paths=["/a b", "/c'd"]
    )
    assert {"pyxis", "inputs", "results"} <= set(full)
    # Paths are quoted: a space or quote in a path stays one word.
    assert "'/a b'" in full["inputs"]


def test_inputs_and_results_bodies_run_locally(tmp_path: object) -> None:
    import pathlib

    root = pathlib.Path(str(tmp_path))
    (root / "exists dir").mkdir()
    sections = preflight_probe.probe_sections(
        results_dir=str(root / "new" / "sub"),
        check_pyxis=False,
        input_paths=[str(root / "exists dir"), str(root / "nope")],
    )
    script = preflight_probe.build_probe_script(
        {k: v for k, v in sections.items() if k in ("results", "inputs")}
    )
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True).stdout
    parsed = preflight_probe.parse_probe(out)
    assert parsed["inputs"].lines == ("0|ok", "1|missing")
    assert parsed["results"].lines == (f"creatable|{root}",)
    res = preflight.evaluate_results_dir(str(root / "new" / "sub"), parsed["results"])
    assert res.status is CheckStatus.FAIL and res.action is FixAction.CREATE_RESULTS_DIR
    assert "mkdir -p" in res.fix


def test_profile_check() -> None:
    assert preflight.evaluate_profile([]).status is CheckStatus.PASS
    res = preflight.evaluate_profile(["user", "partition"], "lab")
    assert res.status is CheckStatus.FAIL
    assert res.action is FixAction.EDIT_PROFILE
    assert "user, partition" in res.detail and "lab" in res.fix


def test_tools_check() -> None:
    parsed = preflight_probe.parse_probe(RECORDED_PROBE)
    ok = preflight.evaluate_tools(parsed["tools"])
    assert ok.status is CheckStatus.PASS and "22.05.8" in ok.detail
    missing = preflight.evaluate_tools(sec("squeue|/usr/bin/squeue|slurm 22", "sbatch||"))
    assert missing.status is CheckStatus.FAIL
    assert "sbatch" in missing.detail and "sacct" in missing.detail
    assert preflight.evaluate_tools(None).status is CheckStatus.SKIP


def test_account_empty_with_default_passes_and_offers_it() -> None:
    res = preflight.evaluate_account("", sec("tao", "research"), sec("tao"), sec())
    assert res.status is CheckStatus.PASS
    assert res.action is FixAction.SET_ACCOUNT and res.target == "tao"
    assert "default account 'tao'" in res.detail


def test_account_wrong_fails_with_choices() -> None:
    res = preflight.evaluate_account("nosuch", sec("tao", "research"), sec("tao"), sec())
    assert res.status is CheckStatus.FAIL
    assert res.target == "tao" and "research" in res.fix


def test_account_needed_without_default_under_enforcement() -> None:
    enforce = sec("AccountingStorageEnforce = associations,limits")
    res = preflight.evaluate_account("", sec("a1", "a2"), sec(), enforce)
    assert res.status is CheckStatus.FAIL and res.target == "a1"
    relaxed = preflight.evaluate_account(
        "", sec("a1"), sec(), sec("AccountingStorageEnforce = none")
    )
    assert relaxed.status is CheckStatus.PASS


def test_account_without_accounting_is_skipped() -> None:
    res = preflight.evaluate_account(
        "", sec("sacctmgr: error: Problem talking to the database", rc=1), sec(rc=1), sec()
    )
    assert res.status is CheckStatus.SKIP
    assert preflight.evaluate_account("x", sec(rc=1), None, None).status is CheckStatus.PASS


def test_partitions_check() -> None:
    section = sec(*SCONTROL_PARTITIONS.splitlines())
    ok = preflight.evaluate_partitions(["polar", "batch"], section)
    assert ok.status is CheckStatus.PASS
    assert "polar (MaxTime 04:00:00)" in ok.detail and "batch (MaxTime 2-00:00:00)" in ok.detail
    bad = preflight.evaluate_partitions(["polar", "nosuch"], section)
    assert bad.status is CheckStatus.FAIL and bad.action is FixAction.EDIT_PROFILE
    assert "nosuch" in bad.detail and "batch, maint, polar" in bad.fix
    down = preflight.evaluate_partitions(["maint"], section)
    assert down.status is CheckStatus.WARN
    unreachable = preflight.evaluate_partitions(
        ["polar"],
        sec("slurm_load_partitions: Unable to contact slurm controller (connect failure)", rc=1),
    )
    assert unreachable.status is CheckStatus.FAIL and "Unable to contact" in unreachable.detail


def test_results_dir_check() -> None:
    assert preflight.evaluate_results_dir("/r", sec("writable")).status is CheckStatus.PASS
    ro = preflight.evaluate_results_dir("/r", sec("readonly"))
    assert ro.status is CheckStatus.FAIL and ro.action is FixAction.EDIT_PROFILE
    blocked = preflight.evaluate_results_dir("/x/y", sec("blocked|/"))
    assert blocked.status is CheckStatus.FAIL and "/ is not writable" in blocked.detail


def test_credentials_check_statuses() -> None:
    present = sec("present")
    missing = sec("missing")
    ev = preflight.evaluate_credentials
    assert ev(present, runtime="pyxis", private_image=True).status is CheckStatus.PASS
    assert ev(missing, runtime="none", private_image=False).status is CheckStatus.SKIP
    warn = ev(missing, runtime="pyxis", private_image=False)
    assert warn.status is CheckStatus.WARN and warn.action is FixAction.INSTALL_CREDENTIALS
    assert ev(missing, runtime="pyxis", private_image=True).status is CheckStatus.FAIL


def test_pyxis_check() -> None:
    assert preflight.evaluate_pyxis("none", None).status is CheckStatus.SKIP
    assert preflight.evaluate_pyxis("pyxis", sec("present")).status is CheckStatus.PASS
    res = preflight.evaluate_pyxis("pyxis", sec("missing"))
    assert res.status is CheckStatus.FAIL and 'container_runtime = "none"' in res.fix


def test_inputs_check() -> None:
    assert preflight.evaluate_inputs([], None).status is CheckStatus.SKIP
    res = preflight.evaluate_inputs(["/a", "/b"], sec("0|ok", "1|missing"))
    assert res.status is CheckStatus.FAIL and res.action is FixAction.EDIT_SPEC
    assert "/b" in res.detail and "/a" not in res.detail
    assert preflight.evaluate_inputs(["/a"], sec("0|ok")).status is CheckStatus.PASS


def test_private_images() -> None:
    assert not preflight.image_is_private("nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt")
    assert preflight.image_is_private("nvcr.io/nvstaging/tao/tao-toolkit:dev")
    assert preflight.image_is_private("nvcr.io#nvidian/foo:1")
    assert not preflight.image_is_private("ubuntu:22.04")


def test_json_shape() -> None:
    res = preflight.evaluate_pyxis("pyxis", sec("missing"))
    data = res.to_json()
    assert {"check", "status", "detail", "fix"} <= set(data)
    assert (
        data["check"] == "pyxis" and data["status"] == "fail" and data["action"] == "edit_profile"
    )


def test_pyxis_check_on_a_compute_node() -> None:
    login = sec("present")
    ok = sec("node|tao-n2", "enroot|/usr/local/bin/enroot|4.1.2", "pyxis|/x/spank_pyxis.so|yes")
    res = preflight.evaluate_pyxis("pyxis", login, ok)
    assert res.status is CheckStatus.PASS and "tao-n2" in res.detail and "4.1.2" in res.detail
    no_enroot = sec("node|tao-n2", "enroot||", "pyxis|/x/spank_pyxis.so|yes")
    res = preflight.evaluate_pyxis("pyxis", login, no_enroot)
    assert res.status is CheckStatus.FAIL and "enroot is not on the PATH" in res.detail
    no_pyxis = sec("node|tao-n2", "enroot|/e|4.1.2", "pyxis|/x/spank_pyxis.so|no")
    res = preflight.evaluate_pyxis("pyxis", login, no_pyxis)
    assert res.status is CheckStatus.FAIL and "/x/spank_pyxis.so is missing" in res.detail
    busy = sec("srun: error: Unable to allocate resources: Immediate execution impossible")
    res = preflight.evaluate_pyxis("pyxis", login, busy)
    assert res.status is CheckStatus.WARN and "Immediate execution impossible" in res.detail


def test_node_section_runs_one_task_on_the_partition() -> None:
    sections = preflight_probe.probe_sections(results_dir=None, check_pyxis=True, partition="polar")
    assert "--partition=polar" in sections["node"] and "--immediate=" in sections["node"]
    assert sections["node"].endswith("</dev/null")
