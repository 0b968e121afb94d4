"""``tao-slurm-tui tao networks [--json]`` and ``tao spec NETWORK ACTION`` as a researcher runs
them: no profile needed, a site's image settings, bad names, and a workstation offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tao_slurm_tui.cli import main
from tao_slurm_tui.services.tao_cache import WHEEL_ENV

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def local_wheel(tao_wheel: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The workstation's cache is empty (isolated XDG dirs): the wheel comes from a local copy,
    as on an offline site."""
    monkeypatch.setenv(WHEEL_ENV, str(tao_wheel))
    return tao_wheel


def test_networks_json_lists_every_network_with_actions_and_image(
    local_wheel: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tao", "networks", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert len(listed) == 34
    by_name = {n["network"]: n for n in listed}
    cls = by_name["classification_pyt"]
    assert cls["actions"][:2] == ["train", "distill"]
    assert cls["image"] == "nvcr.io/nvidia/tao/tao-toolkit:7.3.0-pyt"
    assert cls["images"]["gen_trt_engine"] == "nvcr.io/nvidia/tao/tao-toolkit:7.3.0-deploy"
    assert cls["container"] == "TAO_PYTORCH" and cls["tao_version"] == "7.3.0"
    for network in listed:
        assert network["actions"] and network["image"].startswith("nvcr.io/nvidia/tao/")


def test_networks_table(local_wheel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tao", "networks"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("TAO 7.3.0: 34 networks.")
    row = next(line for line in out.splitlines() if line.startswith("classification_pyt "))
    assert row.split()[:2] == ["classification_pyt", "TAO_PYTORCH"]
    assert "gen_trt_engine*" in row
    assert "TAO_DEPLOY   nvcr.io/nvidia/tao/tao-toolkit:7.3.0-deploy" in out
    assert "dinov3" in out.splitlines()[-1]  # not runnable, and said so


def test_a_site_mirror_and_a_per_kind_image(
    local_wheel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        'default_profile = "hpc"\n[profiles.hpc]\nuser = "alice"\nhostnames = ["login1"]\n'
        'tao_registry = "harbor.site.edu/nvcr"\n'
        '[profiles.hpc.tao_images]\nTAO_DEPLOY = "/lustre/images/tao-deploy.sqsh"\n'
    )
    assert main(["--config", str(config), "tao", "networks", "--json"]) == 0
    cls = {n["network"]: n for n in json.loads(capsys.readouterr().out)}["classification_pyt"]
    assert cls["image"] == "harbor.site.edu/nvcr/nvidia/tao/tao-toolkit:7.3.0-pyt"
    assert cls["images"]["gen_trt_engine"] == "/lustre/images/tao-deploy.sqsh"


def test_spec_prints_the_default_spec_of_an_action(
    local_wheel: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tao", "spec", "classification_pyt", "evaluate"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# classification_pyt evaluate: the default experiment spec of TAO 7.3.0")
    assert "evaluate.checkpoint" in out.split("\n\n", 1)[0]
    assert "  checkpoint: ???\n" in out
    assert "\nexport:" not in out and "\ntrain:" not in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["clasification_pyt", "train"], "did you mean 'classification_pyt'"),
        (["classification_pyt", "evalute"], "did you mean 'evaluate'? (its actions: train, "),
        (["dinov3", "train"], "'dinov3' is not a network tao-slurm-tui can run with TAO 7.3.0"),
    ],
)
def test_unknown_names_exit_2_with_the_valid_ones(
    local_wheel: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["tao", "spec", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err and captured.err.count("\n") == 1


def test_an_unknown_tao_version_in_the_profile_exits_2(
    local_wheel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[profiles.a]\nuser = "a"\nhostnames = ["h"]\ntao_version = "6.0.0"\n')
    assert main(["--config", str(config), "tao", "networks"]) == 2
    assert "TAO 6.0.0 is not a version this tao-slurm-tui knows (known: 7.3.0)" in (
        capsys.readouterr().err
    )


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tao_slurm_tui", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )


def test_offline_with_no_cache_exits_1_naming_the_setting(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", WHEEL_ENV.lower())}
    env.pop(WHEEL_ENV, None)
    # Nothing listens on port 9 here: the download fails at once, as on an offline machine.
    env.update(HTTPS_PROXY="http://127.0.0.1:9", https_proxy="http://127.0.0.1:9")
    result = _cli("tao", "networks", env=env)
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    err = result.stderr.strip()
    assert err.startswith("tao-slurm-tui: could not download nvidia-tao-core 7.3.0 (")
    assert WHEEL_ENV in err and "tao_wheel" in err and "\n" not in err


def test_the_other_verbs_never_load_the_tao_data(tmp_path: Path) -> None:
    # Building the parser imports every verb: none may import omegaconf (or NVIDIA's code), so
    # `--help`, `status` and friends start as fast as before.
    code = (
        "import sys\n"
        "from tao_slurm_tui.cli import build_parser\n"
        "build_parser().parse_args(['tao', 'networks'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('omegaconf', 'yaml', "
        "'nvidia_tao_core')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout
    assert out.strip() == "[]"


def test_a_warm_networks_listing_reads_only_the_index(local_wheel: Path, tmp_path: Path) -> None:
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    assert _cli("tao", "networks", env=env).returncode == 0  # first use: extract
    code = (
        "import sys\n"
        "from tao_slurm_tui.cli import main\n"
        "assert main(['tao', 'networks', '--json']) == 0\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'omegaconf', 'nvidia_tao_core'}),"
        " file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, check=True
    )
    assert result.stderr.strip() == "[]"
    assert len(json.loads(result.stdout)) == 34


def test_a_researchers_spec_file_from_typo_to_staged_yaml(
    local_wheel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The path the submit round takes: start from `tao spec`, edit, read the file, check."""
    from tao_slurm_tui.core.tao.schema import SpecSyntaxError
    from tao_slurm_tui.errors import BadInput
    from tao_slurm_tui.services.tao import open_tao, read_spec_file

    assert main(["tao", "spec", "classification_pyt", "train"]) == 0
    spec = tmp_path / "train.yaml"
    text = capsys.readouterr().out
    text = text.replace("  images_dir: ''", "  images_dir: /lustre/data/images", 2)
    text = text.replace("classes_file: ''", "classes_file: /lustre/data/classes.txt")
    spec.write_text(text.replace("  num_epochs: 10", "  num_epoch: 10"))
    tao = open_tao()
    check = tao.check("classification_pyt", "train", read_spec_file(spec))
    assert [p.sentence for p in check.problems] == [
        "train.num_epoch: unknown key in 'train'; did you mean 'train.num_epochs'?"
    ]
    with pytest.raises(BadInput, match=r"^train.yaml: train.num_epoch: unknown key"):
        check.raise_for_problems("train.yaml")
    spec.write_text(text)
    check = tao.check("classification_pyt", "train", read_spec_file(spec), {"train.num_epochs": 3})
    assert check.ok, check.summary()
    assert [p.path for p in check.dataset_paths] == [
        "/lustre/data/images",
        "/lustre/data/classes.txt",
        "/lustre/data/images",
    ]
    assert "num_epochs: 3" in check.to_yaml()
    with pytest.raises(BadInput, match="no such spec file"):
        read_spec_file(tmp_path / "missing.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n")
    with pytest.raises(SpecSyntaxError, match="must be a mapping"):
        read_spec_file(tmp_path / "list.yaml")
