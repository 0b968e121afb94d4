"""What the spec check finds: problems with their full keys, dataset paths, the merged spec.

The result types of :func:`~.spec_check.check_spec` (docs/TAO.md, "The spec check").
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from omegaconf import DictConfig

from tao_slurm_tui.core.tao.schema import to_yaml
from tao_slurm_tui.errors import BadInput


class ProblemKind(StrEnum):
    """What is wrong with a key."""

    UNKNOWN_KEY = "unknown key"
    WRONG_TYPE = "wrong type"
    OUT_OF_RANGE = "out of range"
    NOT_AN_OPTION = "not an option"
    NO_MATCH = "no match"
    BAD_REFERENCE = "bad reference"
    MISSING = "missing value"
    NEEDS_DATASET = "needs a dataset"


@dataclass(frozen=True)
class SpecProblem:
    """One problem of a spec."""

    key: str
    """The full dotted key (``dataset.train_data_sources[0].image_dir``)."""
    kind: ProblemKind
    """What kind of problem it is."""
    message: str
    """One phrase saying what is wrong and what to do."""

    @property
    def sentence(self) -> str:
        """``key: message`` (no final full stop)."""
        return f"{self.key}: {self.message}"


@dataclass(frozen=True)
class DatasetPath:
    """A dataset path the action reads, to be checked on the cluster (``test -e``)."""

    key: str
    """The spec key that holds it (with the list index for a list of datasets)."""
    path: str
    """The path as written in the spec (a path inside the container)."""


@dataclass(frozen=True)
class SpecCheck:
    """The result of :func:`check_spec`."""

    version: str
    """TAO version of the schema."""
    network: str
    """The network."""
    action: str
    """The action."""
    problems: tuple[SpecProblem, ...]
    """Every problem found, in the order of the spec's keys."""
    dataset_paths: tuple[DatasetPath, ...]
    """Dataset paths the action needs (values that are set; empty required ones are problems)."""
    config: DictConfig
    """The merged spec (the schema's defaults under the user's values)."""
    sections: tuple[str, ...]
    """Top-level keys staged: the ones the action uses plus any the user set."""

    @property
    def ok(self) -> bool:
        """True when there is no problem."""
        return not self.problems

    def summary(self) -> str:
        """One sentence: the first problem, and how many more (with their keys)."""
        if not self.problems:
            return f"the {self.network} {self.action} spec is valid"
        first = self.problems[0].sentence
        rest = [p.key for p in self.problems[1:]]
        if not rest:
            return first
        shown = ", ".join(rest[:5]) + (" ..." if len(rest) > 5 else "")
        return f"{first} (and {len(rest)} more: {shown})"

    def raise_for_problems(self, origin: str = "") -> None:
        """Raise :class:`BadInput` with :meth:`summary` when there is a problem.

        Raises:
            BadInput: the spec has a problem; ``origin`` (a file name) prefixes the sentence.
        """
        if self.problems:
            prefix = f"{origin}: " if origin else ""
            raise BadInput(f"{prefix}{self.summary()}.")

    def to_yaml(self) -> str:
        """The merged spec as YAML for staging: the tables the action uses and any the user set,
        interpolations kept for the container to resolve."""
        return to_yaml(self.config, list(self.sections))
