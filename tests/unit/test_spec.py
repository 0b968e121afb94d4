"""The job spec: defaults, every rule, and error messages naming field and what is allowed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tao_slurm_tui.core.profile import Profile
from tao_slurm_tui.core.spec import FIELDS, JobSpec, SpecDraft, resolve
from tao_slurm_tui.errors import BadInput

IMAGE = "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt"
PROFILE = Profile(user="u", hostnames=["h"], partition="polar", base_results_dir="/r")


def spec_errors(data: dict[str, Any]) -> dict[str, str]:
    """The problems by field (the composer's view) of ``data`` resolved on PROFILE."""
    return resolve(SpecDraft(data), PROFILE).by_field()


def validate_spec(data: dict[str, Any], *, source: str = "spec") -> JobSpec:
    """``data`` resolved on PROFILE (BadInput: the CLI's one sentence)."""
    return resolve(SpecDraft(data, source), PROFILE).require().spec


def load_spec(path: Path) -> JobSpec:
    """A spec file resolved on PROFILE, as ``render`` and ``submit`` read it."""
    return resolve(SpecDraft.from_file(path), PROFILE).require().spec


def minimal(**extra: Any) -> dict[str, Any]:
    return {
        "name": "dino-train-1",
        "image": IMAGE,
        "command": "dino train -e /specs/x.yaml",
        **extra,
    }


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "SPEC.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_platform_defaults() -> None:
    spec = JobSpec.model_validate(minimal())
    assert spec.num_nodes == 1
    assert spec.num_gpus == 4
    assert spec.cpus_per_task == 16
    assert spec.time_hours == 4
    assert spec.timeout_hours == 3.8
    assert spec.partition == ""
    assert spec.account == ""
    assert spec.container_mounts == []  # left out: the profile's (test_cluster_rules)
    assert spec.use_requeue is True
    assert spec.use_sqsh is True
    assert spec.inputs == [] and spec.env == {} and spec.specs == {}


def test_never_defaults_to_twelve_hours() -> None:
    spec = JobSpec.model_validate(minimal())
    assert spec.time_hours != 12
    assert spec.time_hours <= 4


def test_design_example_loads(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
name = "dino-train-1"
image = "nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt"
command = "dino train -e /specs/train.yaml"
num_nodes = 1
num_gpus = 4
cpus_per_task = 16
time_hours = 4
timeout_hours = 3.8
partition = "polar"
account = ""
container_mounts = ["/lustre"]
use_requeue = true
use_sqsh = true
inputs = ["lustre:///lustre/data/coco/train.json"]
[env]
[specs]
""",
    )
    spec = load_spec(path)
    assert spec.partition == "polar"
    assert spec.resolved_inputs() == ["/lustre/data/coco/train.json"]


@pytest.mark.parametrize("name", ["a", "dino-train_1.v2", "A" * 64])
def test_valid_names(name: str) -> None:
    assert JobSpec.model_validate(minimal(name=name)).name == name


@pytest.mark.parametrize("name", ["", "a b", "x/y", "A" * 65, "é", ".", "..", "a;b"])
def test_invalid_names(name: str) -> None:
    errors = spec_errors(minimal(name=name))
    assert set(errors) == {"name"}


def test_unknown_keys_are_errors_listing_the_allowed_fields() -> None:
    errors = spec_errors(minimal(num_gpu=2))
    assert "num_gpu" in errors
    assert "num_gpus" in errors["num_gpu"]
    assert "not a known field" in errors["num_gpu"]


@pytest.mark.parametrize("field", ["name", "image", "command"])
def test_required_fields(field: str) -> None:
    data = minimal()
    del data[field]
    assert spec_errors(data) == {field: "is required"}


def test_empty_command_is_refused() -> None:
    assert "command" in spec_errors(minimal(command="   "))


def test_timeout_must_be_below_time() -> None:
    errors = spec_errors(minimal(time_hours=4, timeout_hours=4))
    assert set(errors) == {"timeout_hours"}
    assert "below time_hours (4)" in errors["timeout_hours"]
    assert spec_errors(minimal(time_hours=2, timeout_hours=3))


def test_timeout_is_derived_when_only_time_is_given() -> None:
    spec = JobSpec.model_validate(minimal(time_hours=2))
    assert spec.timeout_hours == pytest.approx(1.9)
    assert JobSpec.model_validate(minimal(time_hours=2, timeout_hours=1.5)).timeout_hours == 1.5


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("num_nodes", 0),
        ("num_gpus", -1),
        ("cpus_per_task", 0),
        ("time_hours", 0),
        ("timeout_hours", -1),
        ("num_gpus", True),
        ("num_nodes", 1.5),
        ("num_gpus", "many"),
        ("time_hours", "long"),
        ("use_requeue", "maybe"),
        ("container_mounts", "/lustre"),
        ("inputs", "lustre:///x"),
        ("env", ["A=1"]),
        ("specs", "x"),
    ],
)
def test_bad_values_name_their_field(field: str, value: Any) -> None:
    errors = spec_errors(minimal(**{field: value}))
    assert field in errors, errors
    assert errors[field]


@pytest.mark.parametrize("bad", ["a100:4", "gpu a100", "-h100", "x" * 33, "a100;rm"])
def test_a_bad_gpu_type_says_what_a_type_looks_like(bad: str) -> None:
    errors = spec_errors(minimal(gpu_type=bad))
    assert (
        "such as a100 or h100" in errors["gpu_type"] and "empty for any type" in errors["gpu_type"]
    )


def test_gpu_type_is_optional_and_written_only_when_set() -> None:
    plain = JobSpec.model_validate(minimal())
    assert plain.gpu_type == "" and "gpu_type" not in plain.model_dump(mode="json")
    typed = JobSpec.model_validate(minimal(gpu_type="rtx_6000"))
    assert typed.model_dump(mode="json")["gpu_type"] == "rtx_6000"
    assert 'gpu_type = "rtx_6000"' in typed.to_toml()
    step = resolve(SpecDraft(minimal(gpu_type="rtx_6000")), PROFILE).require().steps[0]
    assert step.plan.shape.gres == "gpu:rtx_6000:4"


def test_numeric_strings_from_a_form_are_accepted() -> None:
    spec = JobSpec.model_validate(minimal(num_gpus="2", time_hours="1"))
    assert spec.num_gpus == 2 and spec.time_hours == 1


@pytest.mark.parametrize("partition", ["polar", "polar,batch", "polar, batch"])
def test_partitions(partition: str) -> None:
    spec = JobSpec.model_validate(minimal(partition=partition))
    assert " " not in spec.partition


@pytest.mark.parametrize("partition", ["po lar", "polar;x", "polar,,batch", "$(id)"])
def test_bad_partitions(partition: str) -> None:
    assert "partition" in spec_errors(minimal(partition=partition))


def test_bad_account() -> None:
    assert "account" in spec_errors(minimal(account="a b"))
    assert JobSpec.model_validate(minimal(account="tao")).account == "tao"


@pytest.mark.parametrize("mounts", [[], ["/lustre"], ["/lustre:/data"], ["/a:/b:ro", "/c"]])
def test_good_mounts(mounts: list[str]) -> None:
    assert JobSpec.model_validate(minimal(container_mounts=mounts)).container_mounts == mounts


@pytest.mark.parametrize("mount", ["lustre", "/a,/b", "/a b", "/a:b", "/a:/b:RO!", "/a:/b:c:d"])
def test_bad_mounts(mount: str) -> None:
    assert "container_mounts" in spec_errors(minimal(container_mounts=[mount]))


def test_inputs_are_checked_like_paths() -> None:
    errors = spec_errors(minimal(inputs=["lustre:///ok", "file:///home/me/x"]))
    assert "item 2" in errors["inputs"]
    assert "shared filesystem" in errors["inputs"]
    assert "inputs" in spec_errors(minimal(inputs=["data/rel"]))


def test_env_keys_must_be_shell_identifiers() -> None:
    assert "env" in spec_errors(minimal(env={"1BAD": "x"}))
    assert "env" in spec_errors(minimal(env={"A-B": "x"}))
    assert "env" in spec_errors(minimal(env={"A B": "x"}))
    assert not spec_errors(minimal(env={"_OK1": "x", "NCCL_DEBUG": "INFO"}))


def test_env_scalars_become_strings() -> None:
    spec = JobSpec.model_validate(minimal(env={"N": 3, "F": 0.5, "B": True}))
    assert spec.env == {"N": "3", "F": "0.5", "B": "true"}


@pytest.mark.parametrize("key", ["TAO_API_RESULTS_DIR", "WORLD_SIZE", "NODE_RANK", "MASTER_ADDR"])
def test_env_may_not_override_what_the_script_sets(key: str) -> None:
    assert "sets it itself" in spec_errors(minimal(env={key: "1"}))["env"]


def test_master_port_may_be_overridden() -> None:
    assert not spec_errors(minimal(env={"MASTER_PORT": "29600"}))


def test_env_refuses_the_ngc_key() -> None:
    assert "creds install" in spec_errors(minimal(env={"NGC_API_KEY": "x"}))["env"]


def test_image_forms_are_checked() -> None:
    for good in ("/lustre/i.sqsh", "nvcr.io#a/b:t", "docker://nvcr.io#a/b:t", "nvcr.io/a/b:t"):
        assert not spec_errors(minimal(image=good)), good
    message = spec_errors(minimal(image="bad image"))["image"]
    assert "registry#image:tag" in message


def test_paths_in_specs_are_validated_and_converted() -> None:
    specs = {
        "dataset": {
            "train": "lustre:///lustre/data/train.json",
            "media": ["slurm://eos/lustre/media", "/lustre/more"],
            "name": "coco",
            "epochs": 3,
        },
        "note": "relative/is/not/a/path/here",
    }
    spec = JobSpec.model_validate(minimal(specs=specs))
    resolved = spec.resolved_specs()
    assert resolved["dataset"]["train"] == "/lustre/data/train.json"
    assert resolved["dataset"]["media"] == ["/lustre/media", "/lustre/more"]
    assert resolved["dataset"]["name"] == "coco"
    assert resolved["note"] == "relative/is/not/a/path/here"
    assert spec.specs["dataset"]["train"].startswith("lustre://")  # the original is kept


def test_bad_path_in_specs_names_its_location() -> None:
    message = spec_errors(minimal(specs={"a": {"b": ["file:///x"]}}))["specs"]
    assert "specs.a.b[0]" in message


def test_paths_to_check_lists_inputs_and_spec_paths_once() -> None:
    spec = JobSpec.model_validate(
        minimal(
            inputs=["lustre:///lustre/a", "/lustre/b"],
            specs={"x": "/lustre/a", "y": "lustre:///lustre/c"},
        )
    )
    assert spec.paths_to_check() == ["/lustre/a", "/lustre/b", "/lustre/c"]


def test_spec_errors_reports_every_bad_field_at_once() -> None:
    errors = spec_errors(minimal(name="a b", num_gpus=-1, image="!", extra=1))
    assert set(errors) >= {"name", "num_gpus", "image", "extra"}


def test_valid_spec_has_no_errors() -> None:
    assert spec_errors(minimal()) == {}


def test_fields_list() -> None:
    assert FIELDS[:3] == ("name", "image", "command")
    assert "specs" in FIELDS


def test_toml_round_trip(tmp_path: Path) -> None:
    spec = JobSpec.model_validate(
        minimal(env={"Q": 'it\'s "quoted" $x'}, specs={"a": {"b": [1, 2]}}, time_hours=2)
    )
    path = write(tmp_path, spec.to_toml())
    assert load_spec(path) == spec


# --------------------------------------------------------------------------- load_spec errors


def test_load_spec_names_file_and_field(tmp_path: Path) -> None:
    path = write(tmp_path, f'name = "x"\nimage = "{IMAGE}"\ncommand = "c"\nnum_gpus = -2\n')
    with pytest.raises(BadInput) as info:
        load_spec(path)
    text = str(info.value)
    assert str(path) in text
    assert "'num_gpus'" in text
    assert "at least 0" in text
    assert text.endswith(".")
    assert info.value.exit_code == 2


def test_load_spec_bad_toml(tmp_path: Path) -> None:
    path = write(tmp_path, "name = \n")
    with pytest.raises(BadInput) as info:
        load_spec(path)
    assert "not valid TOML" in str(info.value)
    assert str(path) in str(info.value)


def test_load_spec_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BadInput) as info:
        load_spec(tmp_path / "nope.toml")
    assert "no such spec file" in str(info.value)


def test_load_spec_unknown_key(tmp_path: Path) -> None:
    path = write(tmp_path, f'name = "x"\nimage = "{IMAGE}"\ncommand = "c"\ngpus = 2\n')
    with pytest.raises(BadInput) as info:
        load_spec(path)
    assert "'gpus' is not a known field" in str(info.value)


def test_validate_spec_counts_further_problems() -> None:
    with pytest.raises(BadInput) as info:
        validate_spec(minimal(num_gpus=-1, num_nodes=0), source="form")
    assert str(info.value).startswith("form: field '")
    assert "1 more field with problems" in str(info.value)


def test_composer_messages_name_fields_by_their_labels() -> None:
    from tao_slurm_tui.widgets.spec_form import in_words

    assert in_words("time_hours = 10 is above the limit of partition 'polar'") == (
        "Wall time (h) = 10 is above the limit of partition 'polar'"
    )
    assert in_words("must be 1-64 letters (got 'bad name!')") == (
        "must be 1-64 letters (got 'bad name!')"
    )


def test_every_spec_field_has_a_place_in_the_composer() -> None:
    """A field the form does not know would be lost by Load then Save in the composer."""
    from tao_slurm_tui.core.spec import STEP_FIELDS
    from tao_slurm_tui.widgets.spec_form import FIELDS as FORM_FIELDS
    from tao_slurm_tui.widgets.steps_editor import _OTHER_KEYS, STEP_INPUTS

    # (The [tao] table has a form of its own: widgets/tao_form.py.)
    assert set(FIELDS) - {"then", "tao"} == {f.key for f in FORM_FIELDS}
    assert set(STEP_FIELDS) == {k for k, *_ in STEP_INPUTS} | set(_OTHER_KEYS)
