"""The TAO catalogue: every network of a TAO version, its actions, container and dataset keys.

Built from ``nvidia-tao-core``'s own data (docs/TAO.md, "What a network is"):

- ``microservices/handlers/network_configs/<entry>.config.json``: NVIDIA's catalogue. Each entry
  lists its ``actions``, its container kind (``api_params.image``), its spec backend and, per
  action, the spec keys that are dataset paths (``data_sources``) and the keys NVIDIA's service
  fills itself (``spec_params``: ``evaluate.checkpoint`` ← the parent model ...).
  ``actions_mapping`` sends an entry's actions to the network that runs them: ``depth_net_mono``
  and ``depth_net_stereo`` both run ``depth_net``; ``object_detection``'s data actions run
  ``annotations convert``, ``augmentation generate`` ... — the name a researcher types in the
  container.
- ``config/<network>/default_config.py``: the network's experiment-spec schema.

A *network* is a name the container runs (``<network> <action> -e spec.yaml``) that NVIDIA's
catalogue gives actions with a YAML spec **and** whose schema ships in the wheel. Entries without
actions, with a non-YAML spec, or without a schema are kept in :attr:`Catalog.skipped` with the
reason, so a user asking for one is told why it is not there.

Container kind of an action (NVIDIA's rule, ``handlers/actions.py``): ``gen_trt_engine`` and
``trtexec`` run in ``TAO_DEPLOY``; the data-services actions in ``TAO_DS``; an entry's
``image_override_per_action`` wins; otherwise the network's kind
(``NETWORK_CONTAINER_MAPPING``, else the entry's ``api_params.image``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tao_slurm_tui.core.quoting import join
from tao_slurm_tui.core.tao.names import did_you_mean
from tao_slurm_tui.core.tao.pins import VersionPin
from tao_slurm_tui.errors import BadInput

DEPLOY_ACTIONS = frozenset({"gen_trt_engine", "trtexec"})
"""Actions NVIDIA runs in the TensorRT (``-deploy``) container."""

PARENT_ROLES = frozenset({"parent_model", "parent_model_folder", "parent_model_or_ptm"})
"""``spec_params`` roles that NVIDIA fills with the previous step's model."""

# Keys of a data_sources entry that make it a value NVIDIA computes, not a path to a dataset.
_VALUE_SOURCES = ("value", "value_from_metadata", "check_key_exists")
_PATH_SOURCES = (
    "path",
    "path_from_format",
    "path_from_convert_job_spec",
    "path_from_model_type",
    "path_from_intent",
    "path_from_source",
)


class DataSource(BaseModel):
    """A spec key that names a dataset on the cluster for one action."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    """Dotted spec key, e.g. ``dataset.train_dataset.images_dir``."""
    fields: tuple[str, ...] = ()
    """For a list or table of datasets: the path fields of each item (``image_dir``,
    ``json_file``); empty when the value itself is the path (or a list of paths)."""
    required: bool = True
    """The action cannot run without it; otherwise it is checked only when set (NVIDIA marks it
    conditional or optional, or only some variants of the network use it)."""
    when: tuple[tuple[str, str], ...] = ()
    """Spec values that select the variant this key belongs to (``task = classify``): it applies
    only when the spec holds all of them."""

    def applies(self, value_of: Callable[[str], object]) -> bool:
        """True when the spec (``value_of``: dotted key → its value) selects this key's variant."""
        return all(str(value_of(k)) == v for k, v in self.when)


class TaoAction(BaseModel):
    """One action of a network: what the container runs and what its spec needs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """The action as NVIDIA's catalogue names it (``train``, ``retrain``, ``gen_trt_engine``)."""
    subtask: str
    """The container command's subtask (``retrain`` runs ``<network> train``)."""
    kind: str
    """Container kind it runs in (``TAO_PYTORCH``, ``TAO_DEPLOY``, ``TAO_DS`` ...)."""
    schema_class: str = ""
    """``module:Class`` when the action's script loads its own spec class (bevfusion's
    ``dataset_convert``); empty: the network's schema."""
    data_sources: tuple[DataSource, ...] = ()
    """The spec keys that must name datasets on the cluster."""
    fills: dict[str, str] = Field(default_factory=dict)
    """Spec key → the role NVIDIA's own service fills it with (``parent_model``: the previous
    step's model; ``create_onnx_file``: a file the action writes; ``resume_model`` ...)."""
    image_rewrites: tuple[tuple[str, str], ...] = ()
    """NVIDIA's per-network tag rule (``DOCKER_IMAGE_VERSION``): ``(release, override)``."""

    @property
    def section(self) -> str:
        """The spec table of this action's own settings (``evaluate`` for evaluate)."""
        return self.subtask

    @property
    def parent_model_keys(self) -> list[str]:
        """Keys NVIDIA fills with the previous step's model (a pipeline wires them)."""
        return [k for k, role in self.fills.items() if role in PARENT_ROLES]


class TaoNetwork(BaseModel):
    """A network: the name its container command takes, its schema and its actions."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """The command in the container (``classification_pyt``)."""
    kind: str
    """Container kind of its actions (apart from TensorRT ones)."""
    schema_class: str
    """Root dataclass in ``config/<name>/default_config.py`` (``ExperimentConfig``)."""
    actions: tuple[TaoAction, ...]
    """Its actions, in NVIDIA's order."""
    entries: tuple[str, ...]
    """The catalogue entries it comes from (``depth_net_mono``, ``depth_net_stereo``)."""

    @property
    def action_names(self) -> list[str]:
        """The names of its actions."""
        return [a.name for a in self.actions]

    def action(self, name: str) -> TaoAction:
        """The action ``name``.

        Raises:
            BadInput: no such action, with the nearest valid ones.
        """
        for action in self.actions:
            if action.name == name:
                return action
        hint = did_you_mean(name, self.action_names)
        names = ", ".join(self.action_names)
        raise BadInput(
            f"'{name}' is not an action of {self.name}"
            + (f"; {hint}" if hint else "")
            + f" (its actions: {names})."
        )


class Catalog(BaseModel):
    """Every network of one TAO version."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    """The TAO version (``7.3.0``)."""
    wheel_sha256: str
    """SHA-256 of the ``nvidia-tao-core`` wheel it was read from."""
    images: dict[str, str]
    """Container kind → the image this version pins for it (before site settings)."""
    networks: tuple[TaoNetwork, ...]
    """Every network, sorted by name."""
    skipped: dict[str, str] = Field(default_factory=dict)
    """Names NVIDIA's wheel mentions that are not networks here → why (one phrase)."""

    @property
    def names(self) -> list[str]:
        """The network names."""
        return [n.name for n in self.networks]

    def network(self, name: str) -> TaoNetwork:
        """The network ``name``.

        Raises:
            BadInput: not a network, with why (if the wheel mentions it) or the nearest names.
        """
        for network in self.networks:
            if network.name == name:
                return network
        if name in self.skipped:
            raise BadInput(
                f"'{name}' is not a network tao-slurm-tui can run with TAO {self.version}: "
                f"{self.skipped[name]}; 'tao-slurm-tui tao networks' lists the ones it can."
            )
        hint = did_you_mean(name, self.names)
        raise BadInput(
            f"'{name}' is not a TAO {self.version} network"
            + (f"; {hint}" if hint else "")
            + " ('tao-slurm-tui tao networks' lists them all)."
        )

    def image(self, network: str, action: str, settings: ImageSettings | None = None) -> str:
        """The image ``network action`` runs in, after the site's ``settings``.

        Raises:
            BadInput: unknown network or action.
        """
        act = self.network(network).action(action)
        return resolve_image(self.pinned_image(act), act.kind, settings or ImageSettings())

    def pinned_image(self, action: TaoAction) -> str:
        """The image NVIDIA's rules give ``action`` with this version's pins."""
        return apply_tag_rule(self.images[action.kind], action.image_rewrites)


def tao_command(
    network: TaoNetwork, action: TaoAction, spec_path: str, results_dir: str = ""
) -> str:
    """TAO's own command line for ``network action``: ``<network> <subtask> -e <spec>
    [results_dir=<dir>]`` (how nvidia-tao-pytorch's entrypoints take it; ``retrain`` runs
    ``train``), every argument shell-quoted."""
    argv = [network.name, action.subtask, "-e", spec_path]
    if results_dir:
        argv.append(f"results_dir={results_dir}")
    return join(argv)


# ------------------------------------------------------------------------------------ images


@dataclass(frozen=True)
class ImageSettings:
    """A site's image settings (profile ``tao_registry`` and ``tao_images``)."""

    registry: str = ""
    """Replaces ``nvcr.io`` in every pinned image (``mirror.site:5000/nvcr``); empty: keep."""
    overrides: Mapping[str, str] = field(default_factory=dict)
    """Container kind → the exact image to use instead (no rewriting)."""


PINNED_REGISTRY = "nvcr.io"
"""The registry of every image the pins name."""


def apply_tag_rule(image: str, rewrites: Iterable[tuple[str, str]]) -> str:
    """NVIDIA's ``DOCKER_IMAGE_VERSION`` rule (``handlers/actions.py``): for a network listed
    with ``(release, override)``, an image not already at ``override`` has ``release`` replaced by
    ``override`` in its name. It changes only images of that release (no-op for TAO 7.3.0)."""
    for release, override in rewrites:
        if override not in image:
            image = image.replace(release, override)
    return image


def resolve_image(pinned: str, kind: str, settings: ImageSettings) -> str:
    """The image a site runs for ``kind``: its override, else the pinned one with its registry."""
    if kind in settings.overrides:
        return settings.overrides[kind]
    if settings.registry and pinned.startswith(PINNED_REGISTRY + "/"):
        return settings.registry.rstrip("/") + pinned[len(PINNED_REGISTRY) :]
    return pinned


# ------------------------------------------------------------------------------------ build


@dataclass(frozen=True)
class CatalogSources:
    """The data read from the wheel that the catalogue is built from."""

    entries: Mapping[str, Mapping[str, Any]]
    """``network_configs/<entry>.config.json`` by entry name."""
    schema_roots: Mapping[str, str]
    """``config/<network>`` directory → its root schema class (networks with a schema)."""
    container_mapping: Mapping[str, str]
    """``constants.NETWORK_CONTAINER_MAPPING``: network → container kind."""
    data_services_actions: frozenset[str]
    """``constants._DATA_SERVICES_ACTIONS``: actions run in the data-services container."""
    image_versions: Mapping[str, Sequence[str]]
    """``docker_images.DOCKER_IMAGE_VERSION``: entry → ``(release, override)``."""


@dataclass
class _Contribution:
    entry: str
    original: str
    kind: str
    data_sources: Mapping[str, Any]
    fills: Mapping[str, str]
    rewrite: tuple[str, str] | None


def _target(entry: str, config: Mapping[str, Any], action: str) -> tuple[str, str]:
    """``get_microservices_network_and_action``: where an entry's action really runs."""
    if action == "validate_images":
        return "image", "validate"
    mapping = config.get("actions_mapping") or {}
    rule = mapping.get(action) or mapping.get("*") or {}
    return str(rule.get("network", entry)), str(rule.get("action", action))


def _kind(entry_kind: str, network: str, original: str, config: Mapping[str, Any], src: Any) -> str:
    override = (config.get("api_params") or {}).get("image_override_per_action") or {}
    if original in override:
        return str(override[original])
    if original in DEPLOY_ACTIONS:
        return "TAO_DEPLOY"
    if original in src.data_services_actions:
        return "TAO_DS"
    return str(src.container_mapping.get(network) or entry_kind)


def _per_action(table: Mapping[str, Any], original: str, mapped: str) -> Mapping[str, Any]:
    value = table.get(original)
    if value is None:
        value = table.get(mapped)
    return value if isinstance(value, Mapping) else {}


def _source_items(data_sources: Mapping[str, Any]) -> list[tuple[str, tuple[str, ...], bool]]:
    """(key, path fields, required) of the entries that are dataset paths."""
    items = []
    for key, rule in data_sources.items():
        if not isinstance(rule, Mapping) or any(v in rule for v in _VALUE_SOURCES):
            continue
        fields: tuple[str, ...] = ()
        if "mapping" in rule:
            mapping = rule["mapping"]
            fields = tuple(
                name
                for name, sub in mapping.items()
                if isinstance(sub, Mapping) and any(p in sub for p in _PATH_SOURCES)
            )
            if not fields:
                continue
        elif not any(p in rule for p in _PATH_SOURCES):
            continue
        required = not rule.get("optional") and "conditional" not in rule
        items.append((str(key), fields, required))
    return items


def _merge_sources(contribs: Sequence[_Contribution]) -> tuple[DataSource, ...]:
    # A value every entry of one network pins, differently (task = classify in one, segment in
    # the other), tells which variant a spec is: it scopes the dataset keys of that entry.
    shared = set.intersection(*(set(c.fills) for c in contribs))
    discriminators = sorted(k for k in shared if len({c.fills[k] for c in contribs}) > 1)
    per_entry = []
    for c in contribs:
        when = tuple((k, c.fills[k]) for k in discriminators)
        per_entry.append((when, _source_items(c.data_sources)))
    out: list[DataSource] = []
    for when, items in per_entry:
        for key, fields, required in items:
            everywhere = all(
                any(k == key and f == fields and r for k, f, r in other) for _, other in per_entry
            )
            source = (
                DataSource(key=key, fields=fields, required=True)
                if everywhere
                else DataSource(key=key, fields=fields, required=required and bool(when), when=when)
            )
            if source not in out:
                out.append(source)
    return tuple(out)


def build_catalog(version: str, pin: VersionPin, sources: CatalogSources) -> Catalog:
    """The catalogue of ``version`` from the wheel's data (pure): NVIDIA's entries gathered per
    network and action, each network built from them, and why every other name is left out."""
    gathered = _gather(sources)
    skipped = gathered.skipped
    networks = []
    for name in sorted(gathered.contributions):
        actions = [
            _action(name, action, contribs, pin)
            for action, contribs in gathered.contributions[name].items()
        ]
        missing = sorted({a.kind for a in actions} - set(pin.images))
        if missing:
            skipped[name] = f"no image is pinned for its container kind {', '.join(missing)}"
            continue
        main = [a.kind for a in actions if a.name not in DEPLOY_ACTIONS] or [actions[0].kind]
        networks.append(
            TaoNetwork(
                name=name,
                kind=str(sources.container_mapping.get(name) or main[0]),
                schema_class=sources.schema_roots[name],
                actions=tuple(actions),
                entries=tuple(gathered.entries_of[name]),
            )
        )
    catalogued = {n.name for n in networks}
    for name in sources.schema_roots:
        if name not in catalogued and name not in skipped:
            skipped[name] = (
                "its schema ships in nvidia-tao-core, but NVIDIA's catalogue names no container "
                "or actions for it"
            )
    for name in catalogued:
        skipped.pop(name, None)
    return Catalog(
        version=version,
        wheel_sha256=pin.wheel.sha256,
        images=dict(pin.images),
        networks=tuple(networks),
        skipped=dict(sorted(skipped.items())),
    )


@dataclass
class _Gathered:
    """NVIDIA's entries sorted by the network and action that run them."""

    contributions: dict[str, dict[str, list[_Contribution]]] = field(default_factory=dict)
    """network → action → what each entry says about it."""
    entries_of: dict[str, list[str]] = field(default_factory=dict)
    """network → the entries that contribute to it, in order."""
    skipped: dict[str, str] = field(default_factory=dict)
    """name → why it is not a network."""


def _gather(sources: CatalogSources) -> _Gathered:
    """Every entry's actions, sent to the network that runs them (``actions_mapping``); entries
    without actions, without a YAML spec or without a schema are skipped with the reason."""
    out = _Gathered()
    for entry in sorted(sources.entries):
        config = sources.entries[entry]
        api = config.get("api_params") or {}
        listed = [str(a) for a in api.get("actions") or []]
        backend = str(api.get("spec_backend", ""))
        if not listed:
            out.skipped[entry] = "NVIDIA's catalogue lists no actions for it"
            continue
        if backend != "yaml":
            what = backend.upper() if backend else "of no declared format"
            out.skipped[entry] = f"its experiment spec is {what}, not YAML"
            continue
        for original in listed:
            network, action = _target(entry, config, original)
            if network not in sources.schema_roots:
                out.skipped.setdefault(
                    network, "nvidia-tao-core ships no experiment-spec schema for it"
                )
                continue
            contrib = _contribution(entry, config, original, network, action, sources)
            out.contributions.setdefault(network, {}).setdefault(action, []).append(contrib)
            entries = out.entries_of.setdefault(network, [])
            if entry not in entries:
                entries.append(entry)
    return out


def _contribution(
    entry: str,
    config: Mapping[str, Any],
    original: str,
    network: str,
    action: str,
    sources: CatalogSources,
) -> _Contribution:
    """What ``entry`` says about ``network``'s ``action`` (its ``original`` action name)."""
    api = config.get("api_params") or {}
    rewrite = sources.image_versions.get(entry)
    fills = _per_action(config.get("spec_params") or {}, original, action)
    return _Contribution(
        entry=entry,
        original=original,
        kind=_kind(str(api.get("image", "")), network, original, config, sources),
        data_sources=_per_action(config.get("data_sources") or {}, original, action),
        fills={str(k): str(v) for k, v in fills.items()},
        rewrite=(str(rewrite[0]), str(rewrite[1])) if rewrite else None,
    )


def _action(
    network: str, action: str, contribs: Sequence[_Contribution], pin: VersionPin
) -> TaoAction:
    """One action of a network, from every entry that lists it."""
    fills: dict[str, str] = {}
    for c in contribs:
        for k, v in c.fills.items():
            fills.setdefault(k, v)
    return TaoAction(
        name=action,
        subtask="train" if action == "retrain" else action,
        kind=sorted({c.kind for c in contribs})[0],
        schema_class=pin.action_schemas.get(network, {}).get(action, ""),
        data_sources=_merge_sources(contribs),
        fills=fills,
        image_rewrites=tuple(dict.fromkeys(c.rewrite for c in contribs if c.rewrite)),
    )


def schema_root(class_names: Sequence[str]) -> str:
    """The root experiment class among a ``default_config.py``'s classes: ``ExperimentConfig``,
    else the last ``…ExperimentConfig`` (clip: ``CLIPExperimentConfig``), else the last
    ``…ExpConfig`` (vllm_caption); empty when there is none."""
    if "ExperimentConfig" in class_names:
        return "ExperimentConfig"
    for suffix in ("ExperimentConfig", "ExpConfig"):
        found = [c for c in class_names if c.endswith(suffix)]
        if found:
            return found[-1]
    return ""
