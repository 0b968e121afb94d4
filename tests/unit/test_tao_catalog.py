"""The TAO catalogue built from NVIDIA's own nvidia-tao-core wheel (the pinned one, downloaded
once per run): every network, its actions, container and image; the site's image settings."""

from __future__ import annotations

import json

import pytest

from tao_slurm_tui.core.tao.catalog import (
    Catalog,
    ImageSettings,
    apply_tag_rule,
    resolve_image,
    schema_root,
    tao_command,
)
from tao_slurm_tui.core.tao.pins import parse_pins, version_key
from tao_slurm_tui.core.tao.pydata import NotALiteral, class_names, module_literals
from tao_slurm_tui.errors import BadInput
from tao_slurm_tui.services.tao_cache import DOCKER_IMAGES, Release, load_pins


def test_every_network_has_actions_a_schema_class_and_a_pinned_image(tao_release: Release) -> None:
    catalog = tao_release.catalog
    assert catalog.version == load_pins().default == "7.3.0"
    assert len(catalog.networks) == 34
    for network in catalog.networks:
        assert network.actions, network.name
        assert network.schema_class.endswith(("ExperimentConfig", "ExpConfig")), network.name
        for action in network.actions:
            image = catalog.image(network.name, action.name)
            assert image.startswith("nvcr.io/nvidia/tao/tao-toolkit:7.3.0-"), (network, action)


def test_the_networks_a_researcher_types_in_the_container(tao_release: Release) -> None:
    catalog = tao_release.catalog
    names = set(catalog.names)
    # The CLI names, not NVIDIA's service entries: depth_net_mono/_stereo run depth_net, the
    # two changenet entries run visual_changenet, object_detection's data actions run these.
    assert {"classification_pyt", "dino", "rtdetr", "segformer", "depth_net"} <= names
    assert {"visual_changenet", "annotations", "augmentation", "analytics", "auto_label"} <= names
    assert not {"depth_net_mono", "visual_changenet_classify", "object_detection"} & names
    assert catalog.network("depth_net").entries == ("depth_net_mono", "depth_net_stereo")
    assert catalog.network("classification_pyt").action_names == [
        "train",
        "distill",
        "quantize",
        "evaluate",
        "export",
        "gen_trt_engine",
        "inference",
    ]
    # clip's root class is named differently; NVIDIA's catalogue knows it all the same.
    assert catalog.network("clip").schema_class == "CLIPExperimentConfig"
    assert catalog.network("annotations").action_names == ["convert"]


def test_retrain_runs_train_and_tensorrt_runs_in_the_deploy_image(tao_release: Release) -> None:
    catalog = tao_release.catalog
    ocdnet = catalog.network("ocdnet")
    assert ocdnet.action("retrain").subtask == "train"
    assert ocdnet.action("retrain").section == "train"
    assert catalog.image("ocdnet", "gen_trt_engine").endswith(":7.3.0-deploy")
    assert catalog.image("ocdnet", "train").endswith(":7.3.0-pyt")
    assert catalog.image("annotations", "convert").endswith(":7.3.0-data-services")
    assert catalog.image("vila", "train").endswith(":7.3.0-vila")


def test_taos_own_command_line(tao_release: Release) -> None:
    ocdnet = tao_release.catalog.network("ocdnet")
    assert (
        tao_command(ocdnet, ocdnet.action("evaluate"), "/r/specs/j.yaml", "/r/results/j")
        == "ocdnet evaluate -e /r/specs/j.yaml results_dir=/r/results/j"
    )
    assert (
        tao_command(ocdnet, ocdnet.action("retrain"), "/a b/s.yaml")
        == "ocdnet train -e '/a b/s.yaml'"
    )


def test_action_facts_for_pipelines_and_the_submit_check(tao_release: Release) -> None:
    cls = tao_release.catalog.network("classification_pyt")
    train = cls.action("train")
    assert [d.key for d in train.data_sources] == [
        "dataset.train_dataset.images_dir",
        "dataset.classes_file",
        "dataset.val_dataset.images_dir",
    ]
    assert all(d.required and not d.when for d in train.data_sources)
    assert cls.action("evaluate").parent_model_keys == ["evaluate.checkpoint"]
    assert cls.action("inference").parent_model_keys == [
        "inference.checkpoint",
        "inference.trt_engine",
    ]
    assert cls.action("export").fills["export.onnx_file"] == "create_onnx_file"
    dino = tao_release.catalog.network("dino").action("train")
    assert dino.data_sources[0].fields == ("image_dir", "json_file")


def test_variant_dataset_keys_carry_the_value_that_selects_them(tao_release: Release) -> None:
    train = tao_release.catalog.network("visual_changenet").action("train")
    by_key = {d.key: d for d in train.data_sources}
    assert by_key["dataset.segment.root_dir"].when == (("task", "segment"),)
    assert by_key["dataset.classify.train_dataset.csv_path"].when == (("task", "classify"),)
    values = {"task": "segment"}
    assert by_key["dataset.segment.root_dir"].applies(values.get)
    assert not by_key["dataset.classify.train_dataset.csv_path"].applies(values.get)


def test_names_that_are_not_networks_say_why(tao_release: Release) -> None:
    catalog = tao_release.catalog
    assert "TOML" in catalog.skipped["cosmos-rl"]
    assert "no container or actions" in catalog.skipped["dinov3"]
    assert "no actions" in catalog.skipped["vlm"]
    with pytest.raises(BadInput, match=r"'dinov3' is not a network .* can run with TAO 7.3.0"):
        catalog.network("dinov3")
    with pytest.raises(BadInput, match=r"did you mean 'classification_pyt'"):
        catalog.network("clasification_pyt")
    with pytest.raises(BadInput, match=r"did you mean 'evaluate'\? \(its actions: train, "):
        catalog.network("classification_pyt").action("evalute")
    with pytest.raises(BadInput, match=r"'zzz' is not a TAO 7.3.0 network \('tao-slurm-tui"):
        catalog.network("zzz")


def test_the_index_round_trips_as_json(tao_release: Release) -> None:
    catalog = tao_release.catalog
    again = Catalog.model_validate_json(catalog.model_dump_json())
    assert again == catalog
    # What `tao networks` reads on a warm start is exactly the index in the cache.
    on_disk = json.loads((tao_release.root / "index.json").read_text())
    assert [n["name"] for n in on_disk["networks"]] == catalog.names


# ----------------------------------------------------------------------------- images


def test_pinned_images_follow_the_wheels_own_tag_scheme(tao_release: Release) -> None:
    """Each pinned image is nvcr.io/nvidia/tao/tao-toolkit:<version>-<suffix> with the suffix
    of the wheel's own default image for that container kind (docker_images.py)."""
    pins = load_pins()
    defaults = module_literals(tao_release.read(DOCKER_IMAGES).decode(), ["DOCKER_IMAGE_MAPPER"])
    mapper = defaults["DOCKER_IMAGE_MAPPER"]
    assert isinstance(mapper, dict)
    for version, pin in pins.versions.items():
        for kind, image in pin.images.items():
            wheel_default = mapper[kind]
            assert isinstance(wheel_default, str)
            suffix = wheel_default.rsplit(":", 1)[1].split("-", 1)[1]
            assert image == f"nvcr.io/nvidia/tao/tao-toolkit:{version}-{suffix}"


def test_the_default_version_is_the_newest_known() -> None:
    pins = load_pins()
    assert pins.default == pins.newest == max(pins.versions, key=version_key)
    with pytest.raises(BadInput, match=r"TAO 6.0.0 is not a version .* \(known: 7.3.0\)"):
        pins.pin("6.0.0")
    with pytest.raises(ValueError, match="default"):
        parse_pins({"default": "9.9.9", "versions": {}})


def test_site_registry_and_per_kind_overrides() -> None:
    pinned = "nvcr.io/nvidia/tao/tao-toolkit:7.3.0-pyt"
    assert resolve_image(pinned, "TAO_PYTORCH", ImageSettings()) == pinned
    mirror = ImageSettings(registry="harbor.site.edu:5000/nvcr/")
    assert (
        resolve_image(pinned, "TAO_PYTORCH", mirror)
        == "harbor.site.edu:5000/nvcr/nvidia/tao/tao-toolkit:7.3.0-pyt"
    )
    both = ImageSettings(registry="harbor.site.edu", overrides={"TAO_PYTORCH": "/sq/tao.sqsh"})
    assert resolve_image(pinned, "TAO_PYTORCH", both) == "/sq/tao.sqsh"
    assert (
        resolve_image(pinned, "TAO_DEPLOY", both)
        == "harbor.site.edu/nvidia/tao/tao-toolkit:7.3.0-pyt"
    )


def test_nvidias_per_network_tag_rule() -> None:
    # DOCKER_IMAGE_VERSION: (release, override) rewrites images of that release only.
    assert (
        apply_tag_rule("x/tao-toolkit:6.25.7-pyt", [("6.25.7", "6.0.0")])
        == "x/tao-toolkit:6.0.0-pyt"
    )
    assert (
        apply_tag_rule("x/tao-toolkit:7.3.0-pyt", [("6.25.7", "6.0.0")])
        == "x/tao-toolkit:7.3.0-pyt"
    )
    assert apply_tag_rule("x/tao-toolkit:6.25.10-pyt", [("6.25.10", "6.25.10")]).endswith(
        "6.25.10-pyt"
    )


# ----------------------------------------------------------------------------- reading data


def test_module_literals_reads_nvidias_shapes_without_running_them() -> None:
    source = (
        "import os\n"
        "MAPPER = {\n"
        "    'A': os.getenv('IMAGE_A', default='reg/a:1-pyt'),\n"
        "    'B': os.getenv('IMAGE_B', os.getenv('IMAGE_A', 'reg/a:1-pyt')),\n"
        "}\n"
        "ACTIONS = set(['x', 'y'])\n"
        "VERSIONS: dict = {'n': ('6.25.7', '6.0.0')}\n"
        "OTHER = 1\n"
    )
    values = module_literals(source, ["MAPPER", "ACTIONS", "VERSIONS", "MISSING"])
    assert values == {
        "MAPPER": {"A": "reg/a:1-pyt", "B": "reg/a:1-pyt"},
        "ACTIONS": {"x", "y"},
        "VERSIONS": {"n": ("6.25.7", "6.0.0")},
    }
    with pytest.raises(NotALiteral):
        module_literals("X = open('/etc/passwd').read()\n", ["X"])
    with pytest.raises(NotALiteral):
        module_literals("X = __import__('os').system('true')\n", ["X"])


def test_schema_root_names() -> None:
    assert schema_root(["TrainConfig", "ExperimentConfig"]) == "ExperimentConfig"
    assert schema_root(["CLIPModelConfig", "CLIPExperimentConfig"]) == "CLIPExperimentConfig"
    assert (
        schema_root(["LLMParams", "VLLMCaptionInferenceExpConfig"])
        == "VLLMCaptionInferenceExpConfig"
    )
    assert schema_root(["Helper"]) == ""
    assert class_names("class A:\n    pass\nx = 1\nclass B(A):\n    pass\n") == ["A", "B"]
