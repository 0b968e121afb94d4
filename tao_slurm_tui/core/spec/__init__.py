"""The job spec (``SPEC.toml``): a draft in, one :func:`resolve`, a resolved job out.

The whole public surface::

    draft = SpecDraft.from_file(path)            # or SpecDraft(form_values)
    resolution = resolve(draft, profile, ResolveContext(partition_limits=..., jobs=...))
    resolution.by_field()                        # the composer's inline errors
    job = resolution.require()                   # BadInput: the CLI's one sentence
    job.steps[0].plan                            # every value of its batch script

A :class:`ResolvedJob` is what submit, render, the start estimate and the store take; a stored
step comes back with :func:`stored_step` (no rule runs again). See
:mod:`tao_slurm_tui.core.spec.resolver` for the order of the rules and
:mod:`tao_slurm_tui.core.spec.rules` for where new ones plug in.
"""

from __future__ import annotations

from tao_slurm_tui.core.spec.draft import SpecDraft, default_spec, read_spec_text
from tao_slurm_tui.core.spec.model import (
    DEFAULT_IMAGE,
    FIELDS,
    RESERVED_ENV,
    STEP_FIELDS,
    JobSpec,
    StepSpec,
    TaoJob,
)
from tao_slurm_tui.core.spec.problems import Problem
from tao_slurm_tui.core.spec.resolver import (
    Resolution,
    ResolvedJob,
    ResolvedStep,
    resolve,
    stored_step,
)
from tao_slurm_tui.core.spec.rules import ResolveContext

__all__ = [
    "DEFAULT_IMAGE",
    "FIELDS",
    "RESERVED_ENV",
    "STEP_FIELDS",
    "JobSpec",
    "Problem",
    "Resolution",
    "ResolveContext",
    "ResolvedJob",
    "ResolvedStep",
    "SpecDraft",
    "StepSpec",
    "TaoJob",
    "default_spec",
    "read_spec_text",
    "resolve",
    "stored_step",
]
