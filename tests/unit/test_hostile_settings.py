"""Hostile values at the edges that are not text on screen: validation anchors, agent
forwarding, KPIs that would grow the state DB, cache files a symlink could redirect."""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path
from typing import Any

import asyncssh
import pytest

import tao_slurm_tui
from tao_slurm_tui.config import write_atomic
from tao_slurm_tui.core.models import Attempt, JobRecord, TaoStatus
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.spec import SpecDraft, resolve
from tao_slurm_tui.core.status_json import MAX_KPI_KEYS, MAX_MESSAGE_CHARS
from tao_slurm_tui.core.tao.pins import WheelPin
from tao_slurm_tui.remote.login import connect_options
from tao_slurm_tui.remote.remembered import REMEMBER_FILE, remember_host
from tao_slurm_tui.services.job_update import JobUpdate
from tao_slurm_tui.services.store import JobStore

try:  # Python 3.11+
    import re._parser as sre_parse  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover
    import sre_parse  # type: ignore[no-redef]

PACKAGE = Path(tao_slurm_tui.__file__).parent

# ----------------------------------------------------------------------------- anchors


def _pattern_text(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # an f-string: its literal parts, a word per value
        return "".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values)
    return None


def _ends_with_dollar(parsed: Any) -> bool:
    for op, arg in parsed:
        if op == sre_parse.AT and arg == sre_parse.AT_END:
            return True
        items = arg if isinstance(arg, (list, tuple)) else [arg]
        for item in items:
            if isinstance(item, sre_parse.SubPattern) and _ends_with_dollar(item):
                return True
            if isinstance(item, (list, tuple)):
                for sub in item:
                    if isinstance(sub, sre_parse.SubPattern) and _ends_with_dollar(sub):
                        return True
    return False


def test_no_regex_of_ours_anchors_with_a_dollar() -> None:
    # `$` matches before a trailing newline: re.match(r"^[a-z]+$", "x\n") accepts "x\n", the
    # batch script's directive line breaks and sbatch ignores what follows. Use fullmatch or
    # \Z. (pydantic's pattern= runs on Rust's regex, where $ is the end: checked below.)
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            owner = node.func.value
            if not (isinstance(owner, ast.Name) and owner.id == "re" and node.args):
                continue
            text = _pattern_text(node.args[0])
            flags = ast.unparse(node)
            if text is None or "MULTILINE" in flags or "re.M" in flags:
                continue
            if _ends_with_dollar(sre_parse.parse(text)):
                bad.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not bad, f"use fullmatch or \\Z instead of $: {bad}"


BASE_SPEC = {"name": "ok", "image": "nvcr.io/nvidia/tao/tao-toolkit:5.0.0-pyt", "command": "true"}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "x\n"),
        ("name", "x\n#SBATCH --time=99-00:00:00"),
        ("gpu_type", "a100\n"),
        ("partition", "polar\n"),
        ("account", "lab\n"),
        ("image", "nvcr.io/nvidia/tao/tao-toolkit:5.0.0-pyt\n"),
        ("dependency", "afterok:1\n"),
        ("env", {"KEY\n": "v"}),
        ("container_mounts", ["/data:/data:ro\n"]),
    ],
)
def test_a_spec_value_with_a_trailing_newline_is_refused_in_one_sentence(
    field: str, value: Any
) -> None:
    table = {**BASE_SPEC, field: value, **({"num_gpus": 1} if field == "gpu_type" else {})}
    profile = Profile(user="u", hostnames=["h"], partition="polar", base_results_dir="/r")
    resolution = resolve(SpecDraft(table), profile)
    assert resolution.job is None, f"{field}={value!r} was accepted"
    sentence = resolution.sentence()
    assert "\n" not in sentence.rstrip("\n") and sentence.strip().endswith((".", ")"))
    assert field.split("_")[0] in sentence or repr(value)[:8] in sentence


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("user", "alice\n"),
        ("hostnames", ["login1\n"]),
        ("partition", "polar\n"),
        ("conversion_partition", "cpu\n"),
        ("account", "lab\n"),
        ("tao_version", "7.3.0\n"),
        ("registry_hosts", ["nvcr.io\n"]),
        ("base_results_dir", "/lustre/u\n"),
    ],
)
def test_a_profile_value_with_a_trailing_newline_is_refused(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=re.escape(field)):
        Profile.model_validate({field: value})


def test_pydantic_patterns_refuse_a_trailing_newline() -> None:
    good = {"name": "x-1.0-py3-none-any.whl", "url": "https://x", "sha256": "a" * 64, "size": 1}
    WheelPin.model_validate(good)
    for key in ("name", "sha256"):
        with pytest.raises(ValueError):
            WheelPin.model_validate({**good, key: good[key] + "\n"})


# ----------------------------------------------------------------------------- agent


def test_forward_agent_from_ssh_config_is_not_honoured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "ssh_config"
    config.write_text("Host *\n  ForwardAgent yes\n  ForwardX11Trusted yes\n")
    monkeypatch.setenv("SSH_AUTH_SOCK", str(tmp_path / "agent.sock"))
    profile = Profile(user="u", hostnames=["h"], use_ssh_config=True)
    ours = connect_options(profile, "h", keepalive_interval=30, password=None)
    assert ours["agent_forwarding"] is False and ours["x11_forwarding"] is False
    ours["config"] = [str(config)]
    honoured = asyncssh.SSHClientConnectionOptions(host="h", config=[str(config)])
    assert honoured.agent_forward_path is not None  # what asyncssh alone would do
    options = asyncssh.SSHClientConnectionOptions(host="h", **_buildable(ours))
    assert options.agent_forward_path is None and not options.x11_forwarding
    asked = connect_options(
        profile.model_copy(update={"forward_agent": True}),
        "h",
        keepalive_interval=30,
        password=None,
    )
    asked["config"] = [str(config)]
    assert asyncssh.SSHClientConnectionOptions(host="h", **_buildable(asked)).agent_forward_path


def _buildable(options: dict[str, Any]) -> dict[str, Any]:
    # The options asyncssh.connect gets, less the ones that need a server to mean anything.
    skip = {"keepalive_interval", "keepalive_count_max", "connect_timeout", "login_timeout"}
    return {k: v for k, v in options.items() if k not in skip}


# ----------------------------------------------------------------------------- KPIs


def _hostile_status(poll: int) -> str:
    kpis = {f"k{poll}_{i}_{'x' * 200}": "v" * 5000 for i in range(50)}
    lines = [
        {"status": "RUNNING", "message": "m" * 100_000, "eta": "e" * 1000, "kpi": kpis},
        {"status": "RUNNING", "kpi": {"nested": {"a": list(range(10_000))}, "list": [1] * 9999}},
        {"status": "RUNNING", "epoch": poll, "max_epoch": 100, "kpi": {"loss": 1 / (poll + 1)}},
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)


def test_a_hostile_status_json_does_not_grow_the_record_or_the_state_db(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "state.db")
    job = JobRecord(
        id="j", profile="p", submitted=True, status=TaoStatus.RUNNING, base_results_dir="/r",
        attempts=[Attempt(number=0, slurm_job_id="7", state="RUNNING")],
    )  # fmt: skip
    store.create_job(job)
    sizes = []
    for poll in range(40):
        update = JobUpdate.of(store.require("p", "j"), None)
        update.fold_status(_hostile_status(poll))
        store.update_job("p", "j", progress=update.job.progress)
        blob = json.dumps(store.require("p", "j").progress.to_dict())
        sizes.append(len(blob))
    progress = store.require("p", "j").progress
    assert len(progress.kpi) <= MAX_KPI_KEYS and "loss" in progress.kpi
    assert all(isinstance(v, int | float | str) for v in progress.kpi.values())
    assert len(progress.message or "") <= MAX_MESSAGE_CHARS and len(progress.eta or "") <= 64
    assert max(sizes) < 16 * 1024  # bounded, and steady (names and numbers vary a little):
    assert max(sizes[10:]) - min(sizes[10:]) < 100
    store.close()
    (tmp_path / "state.db-wal").unlink(missing_ok=True)
    first = (tmp_path / "state.db").stat().st_size
    store = JobStore(tmp_path / "state.db")
    for poll in range(40, 80):
        update = JobUpdate.of(store.require("p", "j"), None)
        update.fold_status(_hostile_status(poll))
        store.update_job("p", "j", progress=update.job.progress)
    store.close()
    assert (tmp_path / "state.db").stat().st_size <= first + 64 * 1024


# ----------------------------------------------------------------------------- cache files


def test_atomic_writes_are_private_and_follow_no_planted_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    cache = tmp_path / "cache"
    cache.mkdir()
    target = cache / "login-hosts.json"
    # The old fixed temp name, planted as a symlink to the victim.
    (cache / "login-hosts.tmp").symlink_to(victim)
    target.symlink_to(victim)  # and the file itself
    write_atomic(target, b"{}")
    assert victim.read_text() == "keep"
    assert not target.is_symlink() and target.read_bytes() == b"{}"
    assert target.stat().st_mode & 0o777 == 0o600
    fresh = tmp_path / "new" / "sub" / "f.json"
    write_atomic(fresh, b"x")
    assert fresh.parent.stat().st_mode & 0o777 == 0o700


def test_the_remembered_login_host_is_written_atomically_0600(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    cache = tmp_path / "xdg" / "tao-slurm-tui"
    cache.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (cache / "login-hosts.tmp").symlink_to(victim)
    remember_host(Profile(user="u", hostnames=["a", "b"]), "b")
    assert victim.read_text() == "keep"
    path = cache / REMEMBER_FILE
    assert json.loads(path.read_text()) and path.stat().st_mode & 0o777 == 0o600
    assert not [p for p in cache.iterdir() if p.name.startswith(f".{REMEMBER_FILE}")]


def test_a_new_state_db_is_created_0600(tmp_path: Path) -> None:
    os.umask(0o022)
    store = JobStore(tmp_path / "data" / "state.db")
    store.create_job(JobRecord(id="j", profile="p"))
    store.close()
    assert (tmp_path / "data" / "state.db").stat().st_mode & 0o777 == 0o600
