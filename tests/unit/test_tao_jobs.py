"""TAO jobs in the spec (``[tao]``), resolved against NVIDIA's real schemas: the image and the
command from the catalogue, the experiment spec checked before anything is staged (each kind of
typo one sentence naming the full key, exit 2 on the CLI), what the product fills in, the dataset
paths the submit checks with ``test -e``, and the staged files."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tao_slurm_tui.cli import main
from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.spec import ResolveContext, SpecDraft, resolve
from tao_slurm_tui.core.spec.model import host_path
from tao_slurm_tui.core.spec.tao_run import hydra_value
from tao_slurm_tui.core.spec.tao_source import TaoContext
from tao_slurm_tui.core.tao.catalog import ImageSettings
from tao_slurm_tui.services.store import JobStore
from tao_slurm_tui.services.submit import Submitter
from tao_slurm_tui.services.tao import LoadedSchemasOnly, TaoCatalogue
from tao_slurm_tui.services.tao_cache import WHEEL_ENV, Release
from tests.unit.test_submit import FakeConn, no_sleep, ok

PROFILE = Profile(
    user="alice",
    hostnames=["login1"],
    partition="polar",
    base_results_dir="/lustre/alice",
    container_runtime="pyxis",
)

TRAIN_YAML = """\
dataset:
  num_classes: 2
  train_dataset:
    images_dir: /data/cls/train
  val_dataset:
    images_dir: /data/cls/val
  test_dataset:
    images_dir: /data/cls/test
  classes_file: /data/cls/classes.txt
train:
  num_epochs: 4
  checkpoint_interval: 1
"""


@pytest.fixture
def catalogue(tao_release: Release) -> TaoCatalogue:
    return TaoCatalogue(release=tao_release, images=ImageSettings())


@pytest.fixture
def spec_dir(tmp_path: Path) -> Path:
    (tmp_path / "train.yaml").write_text(TRAIN_YAML)
    return tmp_path


def job(**over: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "cls-1",
        "num_gpus": 2,
        "container_mounts": ["/lustre", "/lustre/data:/data"],
        "tao": {"network": "classification_pyt", "action": "train", "spec_file": "train.yaml"},
    }
    data.update(over)
    return data


def run(
    table: dict[str, Any], catalogue: TaoCatalogue, base: Path, profile: Profile = PROFILE
) -> Any:
    context = ResolveContext(tao=TaoContext(catalogue, profile.results_root))
    return resolve(SpecDraft(table, "job.toml", base), profile, context)


def test_a_tao_train_job_gets_tao_s_image_command_and_checked_spec(
    catalogue: TaoCatalogue, spec_dir: Path
) -> None:
    table = job()
    table["tao"]["spec"] = {"train": {"num_epochs": 2}, "dataset.batch_size": 16}
    resolved = run(table, catalogue, spec_dir)
    spec = resolved.require().spec
    assert spec.image == "nvcr.io/nvidia/tao/tao-toolkit:7.3.0-pyt"
    assert spec.command == (
        "classification_pyt train -e /lustre/alice/specs/cls-1.yaml "
        "results_dir=/lustre/alice/results/cls-1"
    )
    tao = spec.tao
    assert tao is not None and tao.version == "7.3.0"
    staged = yaml.safe_load(tao.experiment)
    # The file, then [tao.spec] over it, then what the product fills (the job's 2 GPUs).
    assert staged["train"]["num_epochs"] == 2 and staged["dataset"]["batch_size"] == 16
    assert staged["train"]["checkpoint_interval"] == 1
    assert staged["results_dir"] == "/lustre/alice/results/cls-1"
    assert (staged["train"]["num_gpus"], staged["train"]["gpu_ids"]) == (2, [0, 1])
    assert "export" not in staged  # only the tables train uses
    assert tao.datasets == {
        "dataset.train_dataset.images_dir": "/data/cls/train",
        "dataset.classes_file": "/data/cls/classes.txt",
        "dataset.val_dataset.images_dir": "/data/cls/val",
    }
    # Checked on the login host where the container's /data comes from.
    assert spec.labelled_paths() == {
        "/lustre/data/cls/train": "dataset.train_dataset.images_dir",
        "/lustre/data/cls/classes.txt": "dataset.classes_file",
        "/lustre/data/cls/val": "dataset.val_dataset.images_dir",
    }
    # The stored spec keeps what ran; the user's keys are what Save writes.
    assert tao.user_table() == {
        "network": "classification_pyt",
        "action": "train",
        "spec_file": "train.yaml",
        "spec": {"train": {"num_epochs": 2}, "dataset.batch_size": 16},
    }


def test_an_explicit_image_and_a_site_mirror(catalogue: TaoCatalogue, spec_dir: Path) -> None:
    mine = run(job(image="registry.site:5000/tao:sandbox"), catalogue, spec_dir)
    assert mine.require().spec.image == "registry.site:5000/tao:sandbox"
    mirror = TaoCatalogue(
        release=catalogue.release, images=ImageSettings(registry="harbor.site.edu/nvcr")
    )
    mirrored = run(job(), mirror, spec_dir).require().spec
    assert mirrored.image == "harbor.site.edu/nvcr/nvidia/tao/tao-toolkit:7.3.0-pyt"


@pytest.mark.parametrize(
    ("spec", "sentence"),
    [
        (
            {"train.num_epoch": 3},
            "job.toml: [tao] experiment spec: train.num_epoch: unknown key in 'train'; "
            "did you mean 'train.num_epochs'?",
        ),
        (
            {"train.num_epochs": "ten"},
            "job.toml: [tao] experiment spec: train.num_epochs: value 'ten' of type 'str' "
            "could not be converted to Integer.",
        ),
        (
            {"train.num_epochs": 0},
            "job.toml: [tao] experiment spec: train.num_epochs: 0 is below the minimum 1.",
        ),
        (
            {"dataset.classes_file": ""},
            "job.toml: [tao] experiment spec: dataset.classes_file: empty; train needs the "
            "path of a dataset on the cluster here.",
        ),
        (
            {"train.num_gpus": 8},
            "job.toml: [tao] experiment spec: train.num_gpus is 8 but the job asks for 2 "
            "GPU(s) per node (num_gpus); make them agree, or leave train.num_gpus out "
            "(tao-slurm-tui sets it).",
        ),
        (
            {"train.results_dir": "/elsewhere"},
            "job.toml: [tao] experiment spec: train.results_dir: set by tao-slurm-tui (TAO "
            "writes /lustre/alice/results/cls-1/train, where its status.json is read); "
            "remove it.",
        ),
    ],
)
def test_a_spec_typo_is_one_sentence_naming_the_key(
    catalogue: TaoCatalogue, spec_dir: Path, spec: dict[str, Any], sentence: str
) -> None:
    table = job()
    table["tao"]["spec"] = spec
    resolution = run(table, catalogue, spec_dir)
    assert resolution.job is None
    assert resolution.sentence() == sentence
    assert set(resolution.by_field()) == {"tao"}


def test_a_missing_mandatory_value_and_what_the_product_fills(
    catalogue: TaoCatalogue, spec_dir: Path
) -> None:
    table = job()
    table["tao"]["action"] = "evaluate"
    missing = run(table, catalogue, spec_dir)
    assert missing.sentence() == (
        "job.toml: [tao] experiment spec: evaluate.checkpoint: a mandatory value (???) that "
        "evaluate needs; set it."
    )
    # export: its ONNX file is one the action writes: it goes into the job's results.
    table = job()
    # (NVIDIA's catalogue names the dataset's root for export.)
    spec = {"export.checkpoint": "/lustre/m.pth", "dataset.root_dir": "/data/cls"}
    table["tao"].update(action="export", spec=spec)
    spec = run(table, catalogue, spec_dir).require().spec
    assert spec.tao is not None
    staged = yaml.safe_load(spec.tao.experiment)
    assert staged["export"]["onnx_file"] == "/lustre/alice/results/cls-1/export/model.onnx"
    assert "export -e /lustre/alice/specs/cls-1.yaml" in spec.command


@pytest.mark.parametrize(
    ("over", "field", "text"),
    [
        ({"command": "python train.py"}, "command", "must be left out of a [tao] job"),
        ({"specs": {"a": 1}}, "specs", "must be left out of a [tao] job"),
        ({"tao": {"network": "classification_pyt", "action": "train", "x": 1}}, "tao", "'x'"),
        ({"tao": {"network": "classification", "action": "train"}}, "tao", "classification_pyt"),
        ({"tao": {"network": "classification_pyt", "action": "trian"}}, "tao", "'train'"),
        ({"tao": {"network": "classification_pyt"}}, "tao", "needs 'action'"),
        ({"tao": {"network": "dino", "action": "train", "spec_file": "no.yaml"}}, "tao", "no.yaml"),
        ({"tao": "classification_pyt"}, "tao", "must be a table"),
        ({"num_gpus": 0}, "num_gpus", "runs on GPUs"),
    ],
)
def test_what_a_tao_job_may_not_say(
    catalogue: TaoCatalogue, spec_dir: Path, over: dict[str, Any], field: str, text: str
) -> None:
    resolution = run(job(**over), catalogue, spec_dir)
    problems = resolution.by_field()
    assert set(problems) == {field}, problems  # and nothing else: no stand-in is reported
    assert text in problems[field]


def test_the_ui_thread_never_builds_a_schema(
    catalogue: TaoCatalogue, spec_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tao_slurm_tui.services import tao_loader

    monkeypatch.setattr(tao_loader, "_schemas", {})  # this process built none yet
    context = ResolveContext(tao=TaoContext(LoadedSchemasOnly(catalogue), "/lustre/alice"))
    waiting = resolve(SpecDraft(job(), "job.toml", spec_dir), PROFILE, context)
    assert waiting.by_field() == {"tao": "[tao] the classification_pyt schema is still loading"}
    catalogue.schema("classification_pyt")  # a worker builds it
    assert resolve(SpecDraft(job(), "job.toml", spec_dir), PROFILE, context).job is not None


def test_mounts_map_container_paths_back_and_hydra_values_are_quoted() -> None:
    mounts = ["/lustre", "/lustre/data:/data", "/scratch/x:/data/x:ro"]
    assert host_path("/data/cls", mounts) == "/lustre/data/cls"
    assert host_path("/data/x/y", mounts) == "/scratch/x/y"  # the longest mount
    assert host_path("/database", mounts) == "/database"
    assert hydra_value("/lustre/a/b.pth") == "/lustre/a/b.pth"
    assert hydra_value("/lustre/a,b=c") == "'/lustre/a,b=c'"  # a comma would be a sweep
    assert hydra_value("/it's") == "'/it\\'s'"


def test_submit_checks_dataset_paths_and_stages_the_experiment_spec(
    catalogue: TaoCatalogue, spec_dir: Path, tmp_path: Path
) -> None:
    resolved = run(job(use_sqsh=False), catalogue, spec_dir).require()
    conn = FakeConn()
    conn.sbatch.append(ok("77"))
    sub = Submitter(conn, JobStore(tmp_path / "s.db"), "p", PROFILE, sleep=no_sleep)  # type: ignore[arg-type]
    asyncio.run(sub.submit(resolved))
    check = next(c for c in conn.commands if c.startswith('printf "NOW='))
    assert "/lustre/data/cls/train" in check and "/lustre/data/cls/classes.txt" in check
    staged, mode = conn.uploads["/lustre/alice/specs/cls-1.yaml"]
    assert mode == 0o644 and yaml.safe_load(staged)["train"]["num_epochs"] == 4
    entry = conn.uploads["/lustre/alice/entrypoints/job_cls-1.sh"][0]
    assert "classification_pyt train -e /lustre/alice/specs/cls-1.yaml" in entry

    # A dataset that is not there: refused before anything is staged, the key named.
    resolved = run(job(name="cls-2", use_sqsh=False), catalogue, spec_dir).require()
    conn = FakeConn()
    conn.missing = ["/lustre/data/cls/val"]
    sub = Submitter(conn, JobStore(tmp_path / "t.db"), "p", PROFILE, sleep=no_sleep)  # type: ignore[arg-type]
    with pytest.raises(Exception, match=r"/lustre/data/cls/val \(dataset.val_dataset.images_dir\)"):
        asyncio.run(sub.submit(resolved))
    assert not conn.uploads


def test_the_cli_refuses_a_typo_with_exit_2_and_renders_a_good_job(
    tao_wheel: Path,
    spec_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(WHEEL_ENV, str(tao_wheel))
    config = spec_dir / "config.toml"
    config.write_text(
        'default_profile = "c"\n[profiles.c]\nuser = "alice"\nhostnames = ["login1"]\n'
        'partition = "polar"\nbase_results_dir = "/lustre/alice"\n'
    )
    toml = spec_dir / "job.toml"
    toml.write_text(
        'name = "cls-1"\nnum_gpus = 1\n[tao]\nnetwork = "classification_pyt"\n'
        'action = "train"\nspec_file = "train.yaml"\n[tao.spec]\ntrain.num_epoch = 3\n'
    )
    assert main(["--config", str(config), "render", str(toml)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"tao-slurm-tui: {toml}: [tao] experiment spec: train.num_epoch: unknown key in "
        "'train'; did you mean 'train.num_epochs'?\n"
    )
    toml.write_text(toml.read_text().replace("num_epoch =", "num_epochs ="))
    assert main(["--config", str(config), "render", "--entrypoint", str(toml)]) == 0
    assert "classification_pyt train -e /lustre/alice/specs/cls-1.yaml" in capsys.readouterr().out
    assert main(["--config", str(config), "render", "--experiment", str(toml)]) == 0
    staged = yaml.safe_load(capsys.readouterr().out)
    assert staged["train"]["num_epochs"] == 3 and staged["train"]["num_gpus"] == 1
    json.dumps(staged)  # plain data


# ----------------------------------------------------------------------------------- pipelines


def pipeline(*steps: dict[str, Any], **over: Any) -> dict[str, Any]:
    table = job(**over)
    table["tao"]["spec"] = {"dataset.root_dir": "/data/cls"}  # export's dataset (NVIDIA's)
    table["then"] = list(steps)
    return table


def test_a_train_evaluate_export_pipeline_takes_the_train_checkpoint(
    catalogue: TaoCatalogue, spec_dir: Path
) -> None:
    table = pipeline(
        {"action": "evaluate", "num_gpus": 1},
        {"action": "export", "tao": {"spec": {"export.opset_version": 17}}},
        {"action": "report", "command": "ls $TAO_PREVIOUS_RESULTS_DIR", "num_gpus": 0},
    )
    steps = run(table, catalogue, spec_dir).require().steps
    assert [s.name for s in steps] == ["cls-1", "cls-1-evaluate", "cls-1-export", "cls-1-report"]
    evaluate, export, report = (s.spec for s in steps[1:])
    assert evaluate.tao is not None and export.tao is not None
    # evaluate: the job's spec file with its own GPUs, the newest *_latest.pth of train/
    # found when it starts (passed as the override), staged with the pattern meanwhile.
    assert evaluate.tao.model == "/lustre/alice/results/cls-1/train/*_latest.pth"
    staged = yaml.safe_load(evaluate.tao.experiment)
    assert staged["evaluate"]["checkpoint"] == "/lustre/alice/results/cls-1/train/*_latest.pth"
    assert staged["evaluate"]["num_gpus"] == 1 and staged["dataset"]["root_dir"] == "/data/cls"
    assert "ls -1t -- /lustre/alice/results/cls-1/train/*_latest.pth" in evaluate.command
    assert evaluate.command.splitlines()[-1] == (
        "classification_pyt evaluate -e /lustre/alice/specs/cls-1-evaluate.yaml "
        "results_dir=/lustre/alice/results/cls-1-evaluate \"evaluate.checkpoint='${tao_model_0}'\""
    )
    # export: the same train checkpoint (not evaluate's results), its own override, its ONNX
    # file in its own results.
    exported = yaml.safe_load(export.tao.experiment)["export"]
    assert exported["opset_version"] == 17
    assert exported["onnx_file"] == "/lustre/alice/results/cls-1-export/export/model.onnx"
    assert "/lustre/alice/results/cls-1/train/*_latest.pth" in export.command
    assert export.tao.step_table() == {"spec": {"export.opset_version": 17}}
    # A step with a command of its own is a step as before: no tao table of the job's.
    assert report.tao is None and report.command == "ls $TAO_PREVIOUS_RESULTS_DIR"


def test_a_chosen_checkpoint_and_one_the_spec_sets(catalogue: TaoCatalogue, spec_dir: Path) -> None:
    table = pipeline(
        {"action": "evaluate", "tao": {"checkpoint": "model_epoch_001.pth"}},
        {"action": "inference", "tao": {"checkpoint": "/lustre/models/best.pth"}},
        {"action": "export", "tao": {"spec": {"export.checkpoint": "/lustre/m.pth"}}},
    )
    evaluate, inference, export = (
        s.spec for s in run(table, catalogue, spec_dir).require().steps[1:]
    )
    assert evaluate.tao is not None and inference.tao is not None and export.tao is not None
    assert evaluate.tao.model == "/lustre/alice/results/cls-1/train/model_epoch_001.pth"
    assert "ls -1t" not in evaluate.command  # known now: in the staged spec, no lookup
    assert yaml.safe_load(inference.tao.experiment)["inference"]["checkpoint"] == (
        "/lustre/models/best.pth"
    )
    assert yaml.safe_load(export.tao.experiment)["export"]["checkpoint"] == "/lustre/m.pth"
    assert not export.tao.model and "ls -1t" not in export.command


def test_a_tao_step_s_problems_name_the_step(catalogue: TaoCatalogue, spec_dir: Path) -> None:
    cases = [
        (
            {"action": "evaluate", "tao": {"spec": {"evaluate.batch_sise": 8}}},
            "job.toml: step 2 ('evaluate'): [then.tao] experiment spec: evaluate.batch_sise: "
            "unknown key in 'evaluate'; did you mean 'evaluate.batch_size'?",
        ),
        (
            {"action": "evaluate", "tao": {"chekpoint": "x.pth"}},
            "job.toml: step 2 ('evaluate'): [then.tao] has unknown key 'chekpoint'; allowed: "
            "spec_file, spec, checkpoint.",
        ),
        (
            {"action": "report", "command": "true", "tao": {"spec": {}}},
            "job.toml: step 2 ('report'): [then.tao] is for a step that runs one of "
            "classification_pyt's actions (train, distill, quantize, evaluate, export, "
            "gen_trt_engine, inference) without a command; remove it or the command.",
        ),
    ]
    for step, sentence in cases:
        assert run(pipeline(step), catalogue, spec_dir).sentence() == sentence
    # No train before it: evaluate as the job itself has nothing to take.
    table = job()
    table["tao"]["action"] = "evaluate"
    table["then"] = [{"action": "export", "tao": {"spec": {"dataset.root_dir": "/d"}}}]
    assert "evaluate.checkpoint: a mandatory value" in run(table, catalogue, spec_dir).sentence()


def test_gen_trt_engine_takes_the_export_step_s_onnx_in_the_deploy_image(
    catalogue: TaoCatalogue, spec_dir: Path
) -> None:
    table = pipeline({"action": "export"}, {"action": "gen_trt_engine", "num_gpus": 1})
    resolution = run(table, catalogue, spec_dir)
    engine = resolution.require().steps[2].spec
    assert engine.image == "nvcr.io/nvidia/tao/tao-toolkit:7.3.0-deploy"
    assert engine.tao is not None and engine.tao.model == (
        "/lustre/alice/results/cls-1-export/export/model.onnx"
    )
    # An image the job names is every step's (the sandbox's registry, a site's mirror).
    mine = pipeline({"action": "export"}, {"action": "gen_trt_engine"}, image="reg.site/tao:x")
    steps = run(mine, catalogue, spec_dir).require().steps
    assert {s.spec.image for s in steps} == {"reg.site/tao:x"}


def test_a_resolved_or_stored_tao_spec_is_edited_as_its_user_wrote_it(
    catalogue: TaoCatalogue, spec_dir: Path
) -> None:
    from tao_slurm_tui.core.spec.tao_stage import editable

    table = pipeline(
        {"action": "evaluate", "tao": {"checkpoint": "model_epoch_001.pth"}},
        {"action": "export"},
        {"action": "gen_trt_engine"},
        {"action": "report", "command": "ls"},
    )
    stored = run(table, catalogue, spec_dir).require().spec.model_dump(mode="json")
    assert stored["command"].startswith("classification_pyt train")
    back = editable(stored)
    assert back["tao"] == table["tao"] and "command" not in back and "image" not in back
    assert back["then"][0]["tao"] == {"checkpoint": "model_epoch_001.pth"}
    assert "command" not in back["then"][2] and "image" not in back["then"][2]  # -deploy
    assert back["then"][3]["command"] == "ls"
    again = run(back, catalogue, spec_dir).require().spec.model_dump(mode="json")
    assert again == stored
    # An image of the user's own is kept; a table the user wrote is left as it is.
    mine = run(job(image="reg.site/tao:x"), catalogue, spec_dir).require().spec
    assert editable(mine.model_dump(mode="json"))["image"] == "reg.site/tao:x"
    written = job(command="python x.py")
    assert editable(written) == written


# ----------------------------------------------------------------------------------- the editor


def test_the_editor_shows_the_whole_spec_and_keeps_only_the_edits(
    catalogue: TaoCatalogue,
) -> None:
    from tao_slurm_tui.core.tao.spec_edit import (
        base_data,
        editor_text,
        key_lines,
        line_of,
        overrides_from,
        popular,
    )

    schema = catalogue.schema("classification_pyt")
    file_spec = yaml.safe_load(TRAIN_YAML)
    text = editor_text(schema, "train", file_spec, {"train.num_epochs": 7})
    assert text.startswith("# classification_pyt train: the default experiment spec")
    data = yaml.safe_load(text)
    assert data["train"]["num_epochs"] == 7 and data["dataset"]["num_classes"] == 2
    base = base_data(schema, "train", file_spec)
    assert overrides_from(data, base) == {"train.num_epochs": 7}
    edited = text.replace("  num_epochs: 7", "  num_epochs: 9").replace(
        "  batch_size: 8", "  batch_size: 4"
    )
    assert overrides_from(yaml.safe_load(edited), base) == {
        "dataset.batch_size": 4,
        "train.num_epochs": 9,
    }
    lines = key_lines(edited)
    assert edited.splitlines()[lines["train.num_epochs"] - 1] == "  num_epochs: 9"
    assert line_of("train.num_epoch", lines) == lines["train"]  # an unknown key: its table
    assert key_lines("a: [") == {}
    shown = popular(schema, "train", data)
    assert shown and all(s.info.popular for s in shown)
    assert shown[0].info.key.startswith("train.")
