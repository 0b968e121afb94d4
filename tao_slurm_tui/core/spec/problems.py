"""What is wrong with a spec, by field, and the one sentence the command line prints for it.

A :class:`Problem` belongs to one spec key (``then`` for a ``[[then]]`` step, ``""`` for
something outside the spec such as the profile's results dir). Its text is one of three forms,
so the composer can show it under the field and the CLI can print one sentence:

* a *phrase* that follows the field's name (``must be at least 0 (got -1)``): the sentence is
  ``<source>: field 'num_gpus' must be at least 0 (got -1).``;
* a *located* phrase that names its place itself (``step 2 ('evaluate'): field 'num_gpus' ...``):
  the sentence is ``<source>: step 2 ('evaluate'): ...``;
* a *sentence* that stands alone (the wall time above a partition's MaxTime, a name already
  taken): printed as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from tao_slurm_tui.core.spec.model import FIELDS, STEP_FIELDS
from tao_slurm_tui.errors import BadInput

ProblemForm = Literal["phrase", "located", "sentence"]
"""How a problem's text reads (see the module's docstring)."""

SCHEMA = "schema"
"""The :attr:`Problem.rule` of a problem with the spec itself (not with the profile or the
cluster): a file with one is not a spec at all."""


@dataclass(frozen=True)
class Problem:
    """One thing to fix in a spec."""

    field: str
    """The spec key it belongs to (``then`` for a follow-up step; ``""``: not a spec field)."""
    text: str
    """What is wrong and what is allowed, in the :attr:`form` given."""
    form: ProblemForm = "phrase"
    """How :attr:`text` reads: after the field's name, naming its own place, or alone."""
    rule: str = SCHEMA
    """What found it: :data:`SCHEMA` (the spec itself, a step merged with its parent
    included), ``plan`` (a value no ``#SBATCH`` line can carry), or a rule's name."""

    def sentence(self, source: str) -> str:
        """The problem as a sentence naming ``source`` (the spec file), without the final
        period."""
        if self.form == "sentence":
            return self.text.rstrip(".")
        if self.form == "located":
            return f"{source}: {self.text}"
        return f"{source}: field '{self.field}' {self.text}"


class Refused(BadInput):
    """Bad input that belongs to fields of the spec: the sentence, and the problems by field
    (a form marks them; found after resolving, by what only the cluster can say)."""

    def __init__(self, problems: Sequence[Problem], source: str) -> None:
        super().__init__(one_sentence(problems, source))
        self.problems = tuple(problems)
        """What to fix, field by field."""


def by_field(problems: Iterable[Problem]) -> dict[str, str]:
    """Field → the first problem's text (the composer shows one message per field)."""
    out: dict[str, str] = {}
    for problem in problems:
        out.setdefault(problem.field, problem.text)
    return out


def one_sentence(problems: Sequence[Problem], source: str) -> str:
    """The first problem as one sentence, with how many other fields have problems."""
    first = problems[0]
    more = len(by_field(problems)) - 1
    suffix = f" ({more} more field{'s' if more > 1 else ''} with problems)" if more else ""
    text = f"{first.sentence(source)}{suffix}"
    return text if text.endswith(("?", "!")) else f"{text}."


# ----------------------------------------------------------------------------------- pydantic

_TYPE_WORDS = {
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be a table",
}

_BOUND_WORDS = {
    "greater_than_equal": "at least",
    "greater_than": "above",
    "less_than_equal": "at most",
    "less_than": "below",
}


def _message(error: ErrorDetails) -> str:
    """One pydantic error as a phrase following the field's name."""
    kind = error["type"]
    ctx = error.get("ctx") or {}
    loc = error["loc"]
    item = ""
    if len(loc) > 1:
        item = f"item {int(loc[1]) + 1} " if isinstance(loc[1], int) else f"key {loc[1]!r} "
    if kind == "extra_forbidden":
        return f"is not a known field; allowed fields: {', '.join(FIELDS)}"
    if kind == "missing":
        return "is required"
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    if kind in _BOUND_WORDS:
        limit = next(iter(ctx.values()), "?")
        return f"must be {_BOUND_WORDS[kind]} {limit} (got {error.get('input')!r})"
    if kind in _TYPE_WORDS:
        got = error.get("input")
        shown = "" if isinstance(got, dict | list) else f" (got {got!r})"
        return f"{item}{_TYPE_WORDS[kind]}{shown}"
    return f"{item}is invalid: {error['msg']}"


def _step_message(error: ErrorDetails, data: Mapping[str, Any]) -> str:
    """``step N ('action'): field 'x' ...`` for an error inside a ``[[then]]`` table."""
    loc = error["loc"]
    index = int(loc[1])
    action = ""
    steps = data.get("then")
    if isinstance(steps, list) and index < len(steps) and isinstance(steps[index], Mapping):
        name = steps[index].get("action")
        action = f" ({name!r})" if isinstance(name, str) and name else ""
    inner: ErrorDetails = {**error, "loc": tuple(loc[2:])}
    if error["type"] == "extra_forbidden":
        message = f"is not a known field of a [[then]] step; allowed: {', '.join(STEP_FIELDS)}"
    else:
        message = _message(inner)
    return f"step {index + 2}{action}: field '{loc[2]}' {message}"


def schema_problems(exc: ValidationError, data: Mapping[str, Any]) -> list[Problem]:
    """Every field pydantic refused in ``data``, in the spec's order, one problem a field."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for error in exc.errors():
        loc = error["loc"]
        field = str(loc[0]) if loc else "spec"
        if field in seen:
            continue
        seen.add(field)
        if field == "then" and len(loc) >= 3 and isinstance(loc[1], int):
            problems.append(Problem(field, _step_message(error, data), "located"))
        else:
            problems.append(Problem(field, _message(error)))
    return problems


def first_field_problem(exc: ValidationError) -> tuple[str, str]:
    """(field, phrase) of the first field pydantic refused (for a step's own checks)."""
    error = exc.errors()[0]
    loc = error["loc"]
    return (str(loc[0]) if loc else "spec"), _message(error)
