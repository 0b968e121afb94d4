"""An empty value for any option or argument of any verb is bad input, never "the default".

``--profile ''`` used to pick the default profile and ``history --state ''`` every state, so a
script whose variable came out empty (``--profile "$CLUSTER"``) quietly ran against the wrong
cluster. Every option that takes a value, of every verb, is tried here with '': exit 2, one
sentence naming the option and what to give, nothing written.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest

from tao_slurm_tui.cli import build_parser, main


def _parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """The top parser and every verb's (and sub-verb's), with the words that reach them."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def _cases() -> Iterator[tuple[str, list[str], str]]:
    """(id, argv, what the message must name) for every value of every verb given as ''."""
    for path, parser in _parsers(build_parser()):
        values = [a for a in parser._actions if a.nargs != 0 and a.help != argparse.SUPPRESS]
        values = [a for a in values if not isinstance(a, argparse._SubParsersAction)]
        positionals = [a for a in values if not a.option_strings]
        for action in values:
            # Every positional before this one gets a plausible value; this one gets ''.
            argv = list(path)
            for positional in positionals:
                if positional is action:
                    argv.append("")
                    break
                if positional.nargs in (None, 1):
                    argv.append("x")
            if action.option_strings:
                name = max(action.option_strings, key=len)
                argv += [name, ""]
            else:
                name = f"{action.metavar or action.dest} argument"
            yield f"{' '.join(path) or 'top'}:{name}", argv, name


CASES = list(_cases())


def test_every_verb_has_its_options_tried() -> None:
    ids = {case_id for case_id, _, _ in CASES}
    for expected in (
        "top:--profile",
        "top:--config",
        "top:--spec",
        "status:ID argument",
        "history:--since",
        "history:--state",
        "history:--name",
        "logs:--tail",
        "cancel:--pipeline",
        "doctor:--spec",
        "render:SPEC.toml argument",
        "config set-profile:KEY=VALUE argument",
    ):
        assert expected in ids


@pytest.mark.parametrize(("argv", "name"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_an_empty_value_is_bad_input(
    argv: list[str], name: str, _isolated_xdg: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = sorted(_isolated_xdg.rglob("*"))
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"tao-slurm-tui: {name.split()[0]}") or name in lines[0]
    assert "is empty; give" in lines[0] and lines[0].endswith("."), lines[0]
    assert sorted(_isolated_xdg.rglob("*")) == before  # no config, state DB or cache written
