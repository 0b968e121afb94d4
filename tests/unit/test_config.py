"""Config: models, env overrides, broken files, atomic writes, the CLI's config verb."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tao_slurm_tui.cli import main
from tao_slurm_tui.config import (
    Config,
    Settings,
    config_path,
    load_settings,
    save_settings,
    state_db_path,
)
from tao_slurm_tui.core.profile import LOGIN_FIELDS, Profile, apply_env
from tao_slurm_tui.errors import ConfigError

GOOD = """
default_profile = "sandbox"
[profiles.sandbox]
user = "slurmtest"
hostnames = ["127.0.0.1", "127.0.0.2"]
port = 2222
partition = "polar"
base_results_dir = "/home/slurmtest/tao"
container_runtime = "none"

[profiles.other]
user = "bob"
hostnames = ["login1"]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_defaults_are_the_platforms() -> None:
    p = Profile()
    assert (p.time_hours, p.timeout_hours, p.use_requeue) == (4.0, 3.8, True)
    assert p.partitions == ["polar", "polar3", "polar4", "grizzly"]
    assert p.container_runtime == "pyxis"
    assert p.max_gpus_per_node == 8
    assert Settings().poll_interval == 2.0


def test_xdg_dirs_are_honoured(_isolated_xdg: Path) -> None:
    assert config_path() == _isolated_xdg / "xdg_config_home" / "tao-slurm-tui" / "config.toml"
    assert state_db_path().is_relative_to(_isolated_xdg / "xdg_data_home")


def test_load_and_select_profiles(tmp_path: Path) -> None:
    cfg = Config.load(write(tmp_path, GOOD))
    assert cfg.profile_name() == "sandbox"
    prof = cfg.profile(environ={})
    assert prof.hostnames == ["127.0.0.1", "127.0.0.2"]
    assert prof.port == 2222
    assert cfg.profile("other", environ={}).user == "bob"


def test_unknown_profile_names_the_known_ones(tmp_path: Path) -> None:
    cfg = Config.load(write(tmp_path, GOOD))
    with pytest.raises(ConfigError, match=r"no profile named 'nope' \(known: other, sandbox\)"):
        cfg.profile("nope", environ={})


def test_env_overrides_every_platform_variable() -> None:
    env = {
        "SLURM_USER": "alice",
        "SLURM_HOSTNAME": "login1, login2,login3",
        "SLURM_PARTITION": "batch",
        "SSH_KEY_PATH": "/keys/id",
        "SLURM_BASE_RESULTS_DIR": "/lustre/alice",
        "SLURM_ACCOUNT": "proj",
        "SLURM_TIME_HOURS": "2.5",
        "SLURM_TIMEOUT_HOURS": "2",
        "SLURM_USE_REQUEUE": "false",
    }
    p = apply_env(Profile(user="x", hostnames=["h"]), env)
    assert p.user == "alice"
    assert p.hostnames == ["login1", "login2", "login3"]
    assert p.partition == "batch"
    assert p.ssh_key_path == "/keys/id"
    assert p.base_results_dir == "/lustre/alice"
    assert p.account == "proj"
    assert (p.time_hours, p.timeout_hours) == (2.5, 2.0)
    assert p.use_requeue is False


def test_env_only_profile_without_a_config_file(tmp_path: Path) -> None:
    cfg = Config.load(tmp_path / "missing.toml")
    prof = cfg.profile(environ={"SLURM_USER": "u", "SLURM_HOSTNAME": "h1,h2"})
    assert prof.hostnames == ["h1", "h2"]
    assert prof.missing_required() == []


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SLURM_USE_REQUEUE": "maybe"}, "SLURM_USE_REQUEUE='maybe' is not a boolean"),
        ({"SLURM_TIME_HOURS": "four"}, "SLURM_TIME_HOURS is invalid"),
        ({"SLURM_TIME_HOURS": "-1"}, "SLURM_TIME_HOURS is invalid"),
    ],
)
def test_bad_env_values_are_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        apply_env(Profile(), env)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[profiles.x\nuser=1", "not valid TOML"),
        ("[profiles.x]\nusr = 'a'", "key 'profiles.x.usr' is not a known setting"),
        ("[profiles.x]\nport = 'ssh'", "key 'profiles.x.port' is invalid"),
        ("poll_interval = 1", "key 'poll_interval' is invalid"),
        ("[profiles.x]\ncontainer_runtime = 'docker'", "key 'profiles.x.container_runtime'"),
    ],
)
def test_broken_files_give_one_clear_message(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert message in str(info.value)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)
    assert path.read_text() == text  # never overwritten


def test_missing_required_fields_are_listed() -> None:
    assert Profile().missing_required() == ["user", "hostnames"]
    assert Profile(user="u", hostnames=["h"], partition=" , ").missing_required() == ["partition"]


def test_cli_names_the_missing_required_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "default_profile = 'x'\n[profiles.x]\nport = 2222\n")
    spec = tmp_path / "spec.toml"
    spec.write_text("name = 'j'\nimage = 'nvcr.io/nvidia/a:1'\ncommand = 'true'\n")
    assert main(["--config", str(path), "submit", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "profile 'x' has no user, hostnames" in err and "SLURM_" in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_save_is_atomic_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "config.toml"
    settings = load_settings(write(tmp_path, GOOD))
    save_settings(settings, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_settings(path) == settings
    assert [p.name for p in path.parent.iterdir()] == ["config.toml"]  # no temp file left
    # Only non-default fields (plus the required ones) are written.
    assert "time_hours" not in path.read_text()


def test_upsert_profile_keeps_other_profiles(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    cfg = Config.load(path)
    cfg.upsert_profile("new", Profile(user="n", hostnames=["a", "b"]), make_default=True)
    again = Config.load(path)
    assert set(again.settings.profiles) == {"sandbox", "other", "new"}
    assert again.settings.default_profile == "new"
    with pytest.raises(ConfigError, match="profile name"):
        cfg.upsert_profile("bad name!", Profile())


def test_cli_config_path_and_broken_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "[profiles.x]\nbogus = 1\n")
    assert main(["--config", str(path), "config", "path"]) == 0
    assert str(path) in capsys.readouterr().out
    assert main(["--config", str(path), "status"]) == 2
    err = capsys.readouterr().err
    assert "key 'profiles.x.bogus' is not a known setting" in err
    assert "Traceback" not in err


def test_cli_set_profile_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.toml"
    argv = ["--config", str(path), "config", "set-profile", "s", "user=u", "hostnames=a,b"]
    assert main([*argv, "port=2222", "--default"]) == 0
    prof = Config.load(path).profile(environ={})
    assert (prof.user, prof.hostnames, prof.port) == ("u", ["a", "b"], 2222)
    assert main(["--config", str(path), "config", "set-profile", "s", "port=x"]) == 2
    assert "'port' is invalid" in capsys.readouterr().err
    assert main(["--config", str(path), "config", "set-profile", "s", "nokey=1"]) == 2


def test_module_entry_point_runs() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tao_slurm_tui", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ},
    )
    assert "render" in out.stdout and "doctor" in out.stdout


def test_set_profile_help_lists_every_key(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["config", "set-profile", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for key in Profile.model_fields:
        assert f"\n  {key} [" in out, key
    assert "example: tao-slurm-tui config set-profile" in out


def test_readme_documents_set_profile_and_creds_check() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert "`config set-profile NAME KEY=VALUE" in readme
    assert "`creds check`" in readme


def test_unknown_profile_is_a_draft_for_the_tui_and_an_error_for_verbs(tmp_path: Path) -> None:
    import getpass

    cfg = Config.load(tmp_path / "none.toml")
    assert not cfg.has_profile() and not cfg.has_profile("new")
    draft = cfg.profile("new", environ={}, allow_new=True)
    assert draft.user == getpass.getuser() and draft.hostnames == []
    env = {"SLURM_USER": "alice", "SLURM_HOSTNAME": "login1,login2"}
    from_env = cfg.profile("new", environ=env, allow_new=True)
    assert (from_env.user, from_env.hostnames) == ("alice", ["login1", "login2"])
    with pytest.raises(ConfigError) as info:
        cfg.profile("new", environ={})
    assert "'tao-slurm-tui'" in str(info.value) and "config set-profile new" in str(info.value)


def test_cli_verb_without_a_profile_names_both_ways_to_create_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "empty.toml"
    path.write_text("")  # a config file without profiles (a missing --config file is refused)
    assert main(["--config", str(path), "--profile", "lab", "doctor"]) == 2
    err = capsys.readouterr().err
    assert "run 'tao-slurm-tui' (no verb)" in err and "config set-profile lab" in err
    assert "Traceback" not in err


COMMENTED = """# My cluster settings -- kept in my dotfiles.
default_profile = "sandbox"  # the one I use most
poll_interval = 5

# The test cluster.
[profiles.sandbox]
user = "slurmtest"   # the shared test account
hostnames = ["127.0.0.1"]
port = 22  # written out although it is the default
partition = "polar"

[profiles.other]
# Bob's login.
user = "bob"
hostnames = ["login1"]
"""


def test_set_profile_writes_through_a_symlink_and_keeps_comments(tmp_path: Path) -> None:
    """issue 12: `config set-profile` replaced a symlinked config with a plain file and dropped
    every comment; now the symlink's target is rewritten (atomically) and the comments, order
    and layout of what did not change are kept."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "tao.toml"
    target.write_text(COMMENTED)
    link = tmp_path / "config.toml"
    link.symlink_to(target)
    argv = ["--config", str(link), "config", "set-profile"]
    assert main([*argv, "sandbox", "user=ana", "port=2222"]) == 0
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert sorted(p.name for p in dotfiles.iterdir()) == ["tao.toml"]  # no temp file left
    text = target.read_text()
    expected = COMMENTED.replace('user = "slurmtest"', 'user = "ana"').replace(
        "port = 22  #", "port = 2222  #"
    )
    assert text == expected, text
    # A new profile and a new default: appended, everything above unchanged.
    assert main([*argv, "new", "user=n", "hostnames=a,b", "--default"]) == 0
    text = target.read_text()
    assert text.startswith(expected.replace('"sandbox"  # the one', '"new"  # the one'))
    settings = load_settings(link)
    assert settings.default_profile == "new"
    assert settings.profiles["new"].hostnames == ["a", "b"]
    assert settings.profiles["sandbox"].user == "ana" and settings.profiles["other"].user == "bob"


def test_save_keeps_a_default_value_written_out_and_drops_a_changed_one(tmp_path: Path) -> None:
    """A profile value the user wrote although it is the default stays; one set back to the
    default is removed (the file stays short), its comment with it; the rest is untouched."""
    path = write(tmp_path, COMMENTED + "time_hours = 8  # long runs\n")
    cfg = Config.load(path)
    cfg.settings.profiles["other"] = cfg.settings.profiles["other"].model_copy(
        update={"time_hours": 4.0}  # back to the default
    )
    cfg.settings.poll_interval = 2.0  # the default: written in place
    cfg.save()
    text = path.read_text()
    assert text == COMMENTED.replace("poll_interval = 5", "poll_interval = 2.0"), text
    assert load_settings(path) == cfg.settings


def test_save_into_a_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "tao.toml"
    link = tmp_path / "config.toml"
    link.symlink_to(target)
    save_settings(Settings(profiles={"a": Profile(user="u", hostnames=["h"])}), link)
    assert link.is_symlink() and target.exists()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert load_settings(link).profiles["a"].user == "u"


@pytest.mark.parametrize(
    "text",
    [
        'profiles.a.user = "u"\nprofiles.a.hostnames = ["h"]\n',  # dotted keys
        'profiles = { a = { user = "u", hostnames = ["h"] } }\n',  # inline tables
        '[profiles]\n[profiles.a]\nuser = "u"\nhostnames = ["h"]\n[keys]\n"queue.cancel" = "x"\n',
    ],
)
def test_edits_in_any_layout_read_back_as_saved(tmp_path: Path, text: str) -> None:
    """Whatever layout the file has, what is saved is what is read back (where an edit in
    place cannot keep the meaning, the file is written anew)."""
    path = write(tmp_path, text)
    cfg = Config.load(path)
    cfg.upsert_profile("a", Profile(user="v", hostnames=["h2"], port=2222))
    cfg.upsert_profile("b", Profile(user="w", hostnames=["x"]), make_default=True)
    assert load_settings(path) == cfg.settings


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("user", "bob"),
        ("hostnames", ["login2"]),
        ("port", 2200),
        ("ssh_key_path", "/keys/other"),
        ("known_hosts", "/keys/known_hosts"),
        ("use_ssh_config", False),
        ("connect_timeout", 3.0),
    ],
)
def test_a_new_login_setting_is_another_login(field: str, value: object) -> None:
    """What a saved profile must re-dial for (the set-up screen's save)."""
    base = Profile(user="alice", hostnames=["login1"], partition="polar")
    assert field in LOGIN_FIELDS
    assert not base.logs_in_as(base.model_copy(update={field: value}))


def test_job_settings_are_the_same_login() -> None:
    """A new partition, account or results dir keeps the open connection."""
    base = Profile(user="alice", hostnames=["login1"], partition="polar")
    edited = base.model_copy(
        update={"partition": "batch", "account": "tao", "base_results_dir": "/r", "time_hours": 2}
    )
    assert base.logs_in_as(edited)
    assert base.logs_in_as(base)
