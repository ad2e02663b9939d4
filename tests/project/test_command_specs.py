"""One command spec for both front ends (issue 19): every command ``odin`` and ``%odin`` both offer takes the
same arguments with the same help texts, except those its spec flags as one front end's
(``odin_magic.commands.spec``: ``--unattended`` and ``--json`` the terminal's, ``--wait``/``--timeout`` the
notebook's)."""

from __future__ import annotations

import argparse

import pytest

from odin_magic.cli import build_parser
from odin_magic.commands import SHARED
from odin_magic.commands.spec import MAGIC, ODIN
from odin_magic.notebook.parser import SUBPARSERS as MAGIC_COMMANDS


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


ODIN_COMMANDS = _commands(build_parser())
BOTH = sorted(set(ODIN_COMMANDS) & set(MAGIC_COMMANDS))


def _arguments(parser: argparse.ArgumentParser, skip: set[str]) -> dict[str, tuple]:
    """Each argument (an option's strings, or a positional's dest) → what it shows and takes."""
    out = {}
    for a in parser._actions:
        key = "/".join(a.option_strings) or a.dest
        if isinstance(a, argparse._HelpAction) or key in skip:
            continue
        out[key] = (a.help, a.metavar, a.nargs, a.choices, a.type, a.default, a.const, a.dest)
    return out


def _only(command: str, front_end: str) -> set[str]:
    return {"/".join(n for n in a.names if n.startswith("-")) or a.options.get("dest", a.names[0])
            for a in SHARED[command] if a.only == front_end}


def test_every_command_both_front_ends_offer_has_one_spec():
    assert BOTH == sorted(SHARED)


@pytest.mark.parametrize("command", BOTH)
def test_both_front_ends_take_the_same_arguments_with_the_same_help(command):
    terminal = _arguments(ODIN_COMMANDS[command], {"--project"} | _only(command, ODIN))
    notebook = _arguments(MAGIC_COMMANDS[command], _only(command, MAGIC))
    assert terminal == notebook


@pytest.mark.parametrize("command", ["run", "step", "approve", "revise", "answer"])
def test_the_front_end_only_options_are_where_they_make_sense(command):
    notebook = {s for a in MAGIC_COMMANDS[command]._actions for s in a.option_strings}
    terminal = {s for a in ODIN_COMMANDS[command]._actions for s in a.option_strings}
    assert {"--wait", "--timeout"} <= notebook and not {"--wait", "--timeout"} & terminal
    assert ("--unattended" in terminal) == (command == "run") and "--unattended" not in notebook


def test_a_front_end_only_argument_keeps_its_help_where_it_is_offered():
    for command in BOTH:
        for front_end, parsers in ((ODIN, ODIN_COMMANDS), (MAGIC, MAGIC_COMMANDS)):
            helps = {s: a.help for a in parsers[command]._actions for s in a.option_strings}
            for spec in SHARED[command]:
                if spec.only == front_end and spec.names[0].startswith("-"):
                    assert helps[spec.names[0]] == spec.options.get("help")
    json_helps = {ODIN_COMMANDS[c]._option_string_actions["--json"].help for c in ("status", "runs", "simulate")}
    assert None not in json_helps
