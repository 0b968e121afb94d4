"""The spec check on NVIDIA's real schemas (classification_pyt, dino, rtdetr, segformer ...):
every kind of problem with its full dotted key, values at the edges, the action's mandatory
values and dataset paths, and the YAML that is staged."""

from __future__ import annotations

import pytest

from tao_slurm_tui.core.tao.schema import (
    FieldInfo,
    SpecSyntaxError,
    TaoSchema,
    parse_override,
    parse_spec_yaml,
)
from tao_slurm_tui.core.tao.spec_check import (
    DatasetPath,
    ProblemKind,
    SpecCheck,
    check_spec,
    default_spec_yaml,
    metadata_problem,
)
from tao_slurm_tui.errors import BadInput
from tao_slurm_tui.services.tao_cache import Release
from tao_slurm_tui.services.tao_loader import load_schema

CLS_TRAIN_DATA = {
    "dataset": {
        "train_dataset": {"images_dir": "/lustre/data/cls/train"},
        "val_dataset": {"images_dir": "/lustre/data/cls/val"},
        "classes_file": "/lustre/data/cls/classes.txt",
    }
}


@pytest.fixture
def cls(tao_release: Release) -> TaoSchema:
    return load_schema(tao_release, "classification_pyt")


def problems(check: SpecCheck) -> dict[str, tuple[ProblemKind, str]]:
    return {p.key: (p.kind, p.message) for p in check.problems}


def test_a_complete_train_spec_is_valid_and_lists_its_datasets(cls: TaoSchema) -> None:
    check = check_spec(cls, "train", CLS_TRAIN_DATA, {"train.num_epochs": 3})
    assert check.ok, check.summary()
    assert check.dataset_paths == (
        DatasetPath("dataset.train_dataset.images_dir", "/lustre/data/cls/train"),
        DatasetPath("dataset.classes_file", "/lustre/data/cls/classes.txt"),
        DatasetPath("dataset.val_dataset.images_dir", "/lustre/data/cls/val"),
    )
    assert check.config.train.num_epochs == 3


def test_unknown_keys_name_the_nearest_valid_key(cls: TaoSchema) -> None:
    spec = {"train": {"num_epoch": 3, "batch_size": 4}, "trian": {"seed": 1}, **CLS_TRAIN_DATA}
    found = problems(check_spec(cls, "train", spec))
    assert found["train.num_epoch"] == (
        ProblemKind.UNKNOWN_KEY,
        "unknown key in 'train'; did you mean 'train.num_epochs'?",
    )
    # The right name in the wrong table: where it does live.
    kind, message = found["train.batch_size"]
    assert kind is ProblemKind.UNKNOWN_KEY and "'dataset.batch_size'" in message
    assert found["trian"][1] == "unknown key in the spec; did you mean 'train'?"
    assert set(found) == {"train.num_epoch", "train.batch_size", "trian"}


def test_wrong_types_are_reported_as_omegaconf_converts_them(cls: TaoSchema) -> None:
    spec = {
        **CLS_TRAIN_DATA,
        "train": {"num_epochs": "ten", "gpu_ids": [0, "one"], "cudnn": {"benchmark": "maybe"}},
        "dataset": {**CLS_TRAIN_DATA["dataset"], "batch_size": 2.5},
    }
    found = problems(check_spec(cls, "train", spec))
    assert found["train.num_epochs"] == (
        ProblemKind.WRONG_TYPE,
        "value 'ten' of type 'str' could not be converted to Integer",
    )
    assert found["train.gpu_ids[1]"][0] is ProblemKind.WRONG_TYPE
    assert found["train.cudnn.benchmark"][0] is ProblemKind.WRONG_TYPE
    assert found["dataset.batch_size"][0] is ProblemKind.WRONG_TYPE
    # A string that converts is fine, as in TAO: "10" is 10.
    assert check_spec(cls, "train", CLS_TRAIN_DATA, {"train.num_epochs": "10"}).ok


def test_a_table_given_a_value_and_a_value_given_a_table(cls: TaoSchema) -> None:
    found = problems(
        check_spec(cls, "train", CLS_TRAIN_DATA, {"train.optim": 5, "train.num_epochs": {"a": 1}})
    )
    assert found["train.optim"][0] is ProblemKind.WRONG_TYPE
    assert found["train.num_epochs"][0] is ProblemKind.WRONG_TYPE


def test_ranges_options_and_patterns_from_nvidias_metadata(cls: TaoSchema) -> None:
    overrides = {
        "train.num_epochs": 0,  # valid_min 1
        "train.optim.momentum": 1.5,  # valid_max 1.0
        "train.optim.optim": "adm",  # valid_options adamw,adam,sgd
        "train.precision": "FP16",  # options are matched without case: TAO lower-cases them
        "quantize.device": "gpu",  # regex ^(cuda|cpu|trt|cuda:[0-9]+)$
        "export.input_channel": 2,  # ordered_int options 1,3
    }
    found = problems(check_spec(cls, "train", CLS_TRAIN_DATA, overrides))
    assert found["train.num_epochs"] == (ProblemKind.OUT_OF_RANGE, "0 is below the minimum 1")
    assert found["train.optim.momentum"] == (ProblemKind.OUT_OF_RANGE, "1.5 is above the maximum 1")
    assert found["train.optim.optim"] == (
        ProblemKind.NOT_AN_OPTION,
        "'adm' is not one of 'adamw', 'adam' or 'sgd'",
    )
    assert found["quantize.device"][0] is ProblemKind.NO_MATCH
    assert found["export.input_channel"][0] is ProblemKind.NOT_AN_OPTION
    assert "train.precision" not in found
    assert check_spec(cls, "train", CLS_TRAIN_DATA, {"quantize.device": "cuda:1"}).ok


def test_values_at_the_edges(cls: TaoSchema) -> None:
    # valid_max 'inf': any size is fine; an option explained in brackets ("KL (KL
    # divergence)") is matched by its name; a huge epoch count is in range.
    edge = {"train.num_epochs": 10**9, "distill.loss_type": "CE", "dataset.num_classes": 0}
    assert check_spec(cls, "train", CLS_TRAIN_DATA, edge).ok
    assert problems(check_spec(cls, "train", CLS_TRAIN_DATA, {"distill.loss_type": "KLD"}))[
        "distill.loss_type"
    ][1].startswith("'KLD' is not one of 'KL', 'CE'")
    # inf itself: a YAML .inf is a float, refused by an int field by omegaconf's conversion.
    assert (
        problems(check_spec(cls, "train", CLS_TRAIN_DATA, {"train.num_epochs": float("inf")}))[
            "train.num_epochs"
        ][0]
        is ProblemKind.WRONG_TYPE
    )
    info = FieldInfo(key="k", default=None, valid_min=0, valid_max="inf", valid_options=())
    assert metadata_problem("k", float("inf"), info) is None
    assert metadata_problem("k", [[1, 2], [3, -1]], info) == metadata_problem("k", -1, info)
    assert metadata_problem("k", [[1, 2], [3, 4]], info) is None
    listed = FieldInfo(key="k", default=None, valid_options=("epoch", "step"))
    assert metadata_problem("k", ["epoch", ["step", "iter"]], listed) is not None
    assert metadata_problem("k", None, listed) is None


def test_nested_lists_are_typed_to_the_element(tao_release: Release) -> None:
    centerpose = load_schema(tao_release, "centerpose")
    found = problems(check_spec(centerpose, "train", {"dataset": {"flip_idx": [[1, 5], [3, "x"]]}}))
    assert found["dataset.flip_idx[1][1]"][0] is ProblemKind.WRONG_TYPE


def test_a_default_value_is_never_refused(tao_release: Release) -> None:
    """NVIDIA's metadata contradicts some defaults (segformer evaluate.batch_size = -1 under
    valid_min 1): the container takes its default, so repeating it is not a problem."""
    segformer = load_schema(tao_release, "segformer")
    data = {"dataset": {"segment": {"root_dir": "/lustre/seg"}}, "evaluate": {"checkpoint": "/m"}}
    assert check_spec(segformer, "evaluate", data, {"evaluate.batch_size": -1}).ok
    found = problems(check_spec(segformer, "evaluate", data, {"evaluate.batch_size": -2}))
    assert found["evaluate.batch_size"] == (ProblemKind.OUT_OF_RANGE, "-2 is below the minimum 1")


def test_interpolations(cls: TaoSchema, monkeypatch: pytest.MonkeyPatch) -> None:
    # A reference is resolved and its value checked; a reference to no key is a problem; a
    # resolver (${oc.env:...}) is the container's to compute and is never run here.
    monkeypatch.setenv("TAO_TEST_NOT_A_NUMBER", "abc")
    overrides = {
        "dataset.batch_size": 0,
        "train.num_epochs": "${dataset.batch_size}",
        "train.clip_grad_norm": "${train.nope}",
        "train.checkpoint_interval": "${oc.env:TAO_TEST_NOT_A_NUMBER}",
        "results_dir": "${oc.env:TAO_TEST_UNSET_VARIABLE}/run",
        "dataset.classes_file": "${results_dir}/classes.txt",
    }
    check = check_spec(cls, "train", CLS_TRAIN_DATA, overrides)
    found = problems(check)
    assert found["train.num_epochs"] == (ProblemKind.OUT_OF_RANGE, "0 is below the minimum 1")
    assert found["train.clip_grad_norm"] == (
        ProblemKind.BAD_REFERENCE,
        "interpolation key 'train.nope' not found",
    )
    assert set(found) == {"dataset.batch_size", "train.num_epochs", "train.clip_grad_norm"}
    # A path computed by a resolver is not tested on the cluster.
    assert "dataset.classes_file" not in [p.key for p in check.dataset_paths]
    # The staged YAML keeps the interpolations for the container to resolve.
    staged = check.to_yaml()
    assert "num_epochs: ${dataset.batch_size}" in staged
    assert "results_dir: ${oc.env:TAO_TEST_UNSET_VARIABLE}/run" in staged


def test_the_mandatory_values_an_action_needs(cls: TaoSchema, tao_release: Release) -> None:
    # evaluate.checkpoint matters for evaluate, not for train; export's for export only.
    assert check_spec(cls, "train", CLS_TRAIN_DATA).ok
    evaluate = problems(check_spec(cls, "evaluate", _eval_data()))
    assert evaluate == {
        "evaluate.checkpoint": (
            ProblemKind.MISSING,
            "a mandatory value (???) that evaluate needs; set it",
        )
    }
    export = problems(check_spec(cls, "export", {"dataset": {"root_dir": "/lustre/data"}}))
    assert set(export) == {"export.checkpoint", "export.onnx_file"}
    # inference.checkpoint and inference.trt_engine are both filled from the parent model by
    # NVIDIA's service: one of them is needed.
    inference = problems(check_spec(cls, "inference", _eval_data()))
    assert inference["inference.checkpoint"][1].endswith("set it or inference.trt_engine")
    assert "inference.trt_engine" not in inference
    engine_only = check_spec(cls, "inference", _eval_data(), {"inference.trt_engine": "/m.engine"})
    assert engine_only.ok
    # A ??? in a shared table matters when NVIDIA names it a dataset of the action.
    segformer = load_schema(tao_release, "segformer")
    assert problems(check_spec(segformer, "train"))["dataset.segment.root_dir"][1].endswith(
        "set it to the path of a dataset on the cluster"
    )


def test_int8_calibration_values_matter_only_for_int8(tao_release: Release) -> None:
    rtdetr = load_schema(tao_release, "rtdetr")
    engine = {"gen_trt_engine": {"onnx_file": "/r/model.onnx", "trt_engine": "/r/model.engine"}}
    assert check_spec(rtdetr, "gen_trt_engine", engine).ok
    int8 = check_spec(
        rtdetr, "gen_trt_engine", engine, {"gen_trt_engine.tensorrt.data_type": "int8"}
    )
    assert set(problems(int8)) == {
        "gen_trt_engine.tensorrt.calibration.cal_image_dir",
        "gen_trt_engine.tensorrt.calibration.cal_cache_file",
    }
    int8_dirs = {
        "gen_trt_engine.tensorrt.data_type": "INT8",
        "gen_trt_engine.tensorrt.calibration.cal_image_dir": ["/lustre/cal/a", "/lustre/cal/b"],
        "gen_trt_engine.tensorrt.calibration.cal_cache_file": "/r/cal.bin",
    }
    ready = check_spec(rtdetr, "gen_trt_engine", engine, int8_dirs)
    assert ready.ok, ready.summary()
    assert [p.key for p in ready.dataset_paths] == [
        "gen_trt_engine.tensorrt.calibration.cal_image_dir[0]",
        "gen_trt_engine.tensorrt.calibration.cal_image_dir[1]",
    ]
    header = default_spec_yaml(rtdetr, "gen_trt_engine").split("\nmodel_name:", 1)[0]
    assert (
        "Fill in before submitting (???): gen_trt_engine.onnx_file, gen_trt_engine.trt_engine."
        in header
    )
    assert "# Needed only for INT8 (gen_trt_engine.tensorrt.data_type: INT8):" in header


def test_lists_of_datasets_carry_their_index(tao_release: Release) -> None:
    dino = load_schema(tao_release, "dino")
    spec = {
        "dataset": {
            "train_data_sources": [
                {"image_dir": "/d/a/images", "json_file": "/d/a/ann.json"},
                {"image_dir": "", "json_file": "/d/b/ann.json"},
            ],
            "val_data_sources": [{"image_dir": "/d/v/images", "json_file": "/d/v/ann.json"}],
        }
    }
    check = check_spec(dino, "train", spec)
    assert problems(check) == {
        "dataset.train_data_sources[1].image_dir": (
            ProblemKind.NEEDS_DATASET,
            "empty; train needs the path of a dataset on the cluster here",
        )
    }
    assert [p.key for p in check.dataset_paths] == [
        "dataset.train_data_sources[0].image_dir",
        "dataset.train_data_sources[0].json_file",
        "dataset.train_data_sources[1].json_file",
        "dataset.val_data_sources[0].image_dir",
        "dataset.val_data_sources[0].json_file",
    ]
    # evaluate's test set is a table that is null by default: it must be given.
    evaluate = problems(check_spec(dino, "evaluate", None, {"evaluate.checkpoint": "/m.pth"}))
    assert evaluate["dataset.test_data_sources.image_dir"][0] is ProblemKind.NEEDS_DATASET


def test_variant_datasets_follow_the_specs_task(tao_release: Release) -> None:
    changenet = load_schema(tao_release, "visual_changenet")
    segment = problems(check_spec(changenet, "train", {"task": "segment"}))
    assert set(segment) == {"dataset.segment.root_dir"}
    classify = problems(check_spec(changenet, "train", {"task": "classify"}))
    assert "dataset.segment.root_dir" not in classify
    assert "dataset.classify.train_dataset.csv_path" in classify


def test_an_action_with_its_own_schema(tao_release: Release) -> None:
    # bevfusion's dataset_convert script loads BEVFusionDataConvertExpConfig, not the
    # network's ExperimentConfig: train's keys are unknown there.
    bevfusion = load_schema(tao_release, "bevfusion")
    check = check_spec(bevfusion, "dataset_convert", {"root_dir": "/lustre/nusc"})
    assert check.ok, check.summary()
    assert problems(check_spec(bevfusion, "dataset_convert", {"train": {}}))["train"][0] is (
        ProblemKind.UNKNOWN_KEY
    )


def test_every_problem_is_found_not_just_the_first(cls: TaoSchema) -> None:
    spec = {"train": {"num_epoch": 1, "num_epochs": -3, "optim": {"lr": "fast"}}}
    check = check_spec(cls, "evaluate", spec)
    keys = [p.key for p in check.problems]
    assert {"train.num_epoch", "train.num_epochs", "train.optim.lr", "evaluate.checkpoint"} <= set(
        keys
    )
    summary = check.summary()
    assert summary.startswith(f"{check.problems[0].sentence} (and {len(keys) - 1} more: ")
    with pytest.raises(BadInput, match=r"^train.yaml: "):
        check.raise_for_problems("train.yaml")


def test_the_staged_yaml_reads_back_as_the_same_spec(cls: TaoSchema) -> None:
    check = check_spec(
        cls, "train", CLS_TRAIN_DATA, {"train.num_epochs": 7, "evaluate.batch_size": 2}
    )
    assert check.ok
    staged = check.to_yaml()
    again = check_spec(cls, "train", parse_spec_yaml(staged, "staged.yaml"))
    assert again.ok and again.to_yaml() == staged
    assert again.config.train.num_epochs == 7
    # The tables train uses, plus evaluate because the user set it; never export's.
    assert set(check.sections) >= {"model", "dataset", "train", "evaluate"}
    assert "export" not in check.sections and "gen_trt_engine" not in check.sections


def test_default_spec_for_an_action(cls: TaoSchema) -> None:
    text = default_spec_yaml(cls, "evaluate")
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert header[0].startswith("# classification_pyt evaluate: the default experiment spec")
    assert any("Fill in before submitting (???): evaluate.checkpoint." in h for h in header)
    body = parse_spec_yaml(text)
    assert body["evaluate"]["checkpoint"] == "???"
    assert "export" not in body and "train" not in body and "gen_trt_engine" not in body
    assert {"model", "dataset", "evaluate"} <= set(body)
    with pytest.raises(BadInput, match="not an action of classification_pyt"):
        default_spec_yaml(cls, "nonsense")


NETWORKS = [
    "action_recognition analytics annotations augmentation auto_label bevfusion centerpose",
    "classification_pyt clip deformable_detr depth_net dino grounding_dino image mae mal",
    "mask2former mask_grounding_dino ml_recog nvdinov2 nvpanoptix3d ocdnet ocrnet oneformer",
    "optical_inspection pointpillars pose_classification re_identification rtdetr segformer",
    "sparse4d stylegan_xl vila visual_changenet",
]


def test_the_list_below_is_every_network(tao_release: Release) -> None:
    assert " ".join(NETWORKS).split() == tao_release.catalog.names


@pytest.mark.parametrize("network", " ".join(NETWORKS).split())
def test_every_default_spec_builds(tao_release: Release, network: str) -> None:
    """Every action of every network prints a spec that reads back, and NVIDIA's defaults only
    ever lack values (never a wrong type, range or option)."""
    schema = load_schema(tao_release, network)
    for action in schema.network.actions:
        text = default_spec_yaml(schema, action.name)
        assert "# Also:" not in text, text.split("\n# Also:", 1)[1][:200]
        body = parse_spec_yaml(text, f"{network} {action.name}")
        assert body, (network, action.name)


def _eval_data() -> dict[str, object]:
    return {
        "dataset": {
            "val_dataset": {"images_dir": "/lustre/data/val"},
            "test_dataset": {"images_dir": "/lustre/data/test"},
            "classes_file": "/lustre/data/classes.txt",
        }
    }


# ----------------------------------------------------------------------------- reading text


def test_spec_yaml_is_read_as_tao_reads_it() -> None:
    data = parse_spec_yaml("train:\n  optim:\n    lr: 1e-3\n  num_epochs: ${x}\ncheckpoint: ???\n")
    assert data == {"train": {"optim": {"lr": 0.001}, "num_epochs": "${x}"}, "checkpoint": "???"}
    assert parse_spec_yaml("") == {}
    with pytest.raises(SpecSyntaxError, match=r"at line 2, column 1: found duplicate key"):
        parse_spec_yaml("a: 1\na: 2\n", "train.yaml")
    with pytest.raises(SpecSyntaxError, match=r"^train.yaml must be a mapping"):
        parse_spec_yaml("- 1\n- 2\n", "train.yaml")
    with pytest.raises(SpecSyntaxError, match=r"not valid YAML at line 2"):
        parse_spec_yaml("a: [1\n", "train.yaml")


def test_overrides_are_read_like_hydras() -> None:
    assert parse_override("train.num_epochs=20") == ("train.num_epochs", 20)
    assert parse_override("model.backbone.type=fan_tiny") == ("model.backbone.type", "fan_tiny")
    assert parse_override("train.gpu_ids=[0,1]") == ("train.gpu_ids", [0, 1])
    assert parse_override("results_dir=") == ("results_dir", "")
    assert parse_override("train.optim.lr=1e-4") == ("train.optim.lr", 0.0001)
    with pytest.raises(SpecSyntaxError, match="is not KEY=VALUE"):
        parse_override("train.num_epochs")


def test_dotted_and_nested_overrides_merge_after_the_file(cls: TaoSchema) -> None:
    spec = {**CLS_TRAIN_DATA, "train": {"num_epochs": 5, "optim": {"lr": 0.1}}}
    check = check_spec(
        cls, "train", spec, {"train": {"optim": {"momentum": 0.5}}, "train.num_epochs": 9}
    )
    assert check.ok
    assert (check.config.train.num_epochs, check.config.train.optim.lr) == (9, 0.1)
    assert check.config.train.optim.momentum == 0.5
