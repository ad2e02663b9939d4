"""What every ``odin`` subcommand module shares: the parser class that reports a mistake as one
line with a "did you mean", the ``--project`` option, a command's arguments added from its spec
(:mod:`odin_magic.commands`), the refusal of a loop that cannot run unattended, and the redacting
streams everything the CLI prints passes through."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from odin_magic.commands.spec import choice_message, did_you_mean_text, unknown_command
from odin_magic.core.errors import OdinError, UsageError
from odin_magic.core.secrets import redact_text


class RedactedStream:
    """A text stream (``sys.stdout``, ``sys.stderr``) whose every write has each configured secret redacted:
    the CLI never echoes one, whether an argument held it (argparse repeats a wrong one), a file (``odin diff``,
    ``odin validate``) or a message. A secret split over two writes is not recognised."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(redact_text(text) if isinstance(text, str) else text)
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):  # flush, fileno, isatty, encoding, ...: the stream's own
        return getattr(self.stream, name)


class OdinParser(argparse.ArgumentParser):
    """argparse, with "did you mean" for a misspelt command or option (Python 3.11 has none)."""

    def error(self, message: str):
        choice = re.match(r"argument (\S+): invalid choice: '([^']*)' \(choose from (.*)\)$", message)
        if choice and choice.group(1) == "COMMAND":
            word, choices = choice.group(2), re.findall(r"'([^']*)'", choice.group(3))
            message = unknown_command(word, choices, f"`{self.prog} --help`")
        super().error(choice_message(self, message))

    def reject_extras(self, extras: list[str]):
        """Report arguments this (sub)command does not take, suggesting the option meant."""
        options = [s for a in self._actions for s in a.option_strings]
        first = extras[0]
        if first.startswith("-"):
            word = first.split("=", 1)[0]
            self.error(f"unknown option {word}{did_you_mean_text(word, options)}; "
                       f"`{self.prog} --help` lists its options")
        self.error(f"unexpected argument(s): {' '.join(extras)}; `{self.prog} --help` shows what it takes")


def add_project(p: argparse.ArgumentParser, help: str = "project directory (default: the current directory)") -> None:
    """The ``--project DIR`` option every command takes."""
    p.add_argument("--project", default=".", metavar="DIR", help=help)


def add_command(p: argparse.ArgumentParser, spec: tuple, project_help: str | None = None, **defaults) -> None:
    """A subcommand's arguments from its spec (:mod:`odin_magic.commands`, shared with ``%odin``), ``--project``,
    and ``defaults`` (its ``handler``; ``drives_a_run`` when it drives a run)."""
    from odin_magic.commands.spec import ODIN, add_arguments  # argparse only: --help stays cheap

    add_arguments(p, spec, ODIN)
    if project_help is None:
        add_project(p)
    else:
        add_project(p, help=project_help)
    p.set_defaults(**defaults)


def project_dir(args: argparse.Namespace) -> Path:
    """``--project``, which must be an existing directory."""
    project = Path(args.project)
    if not project.is_dir():
        raise UsageError(f"no such project directory: {project} does not exist",
                         hint="pass an existing directory to --project")
    return project


def refuse_unless_schedulable(catalog, name: str, refusal: type[OdinError]) -> None:
    """Nothing when loop ``name`` never waits for a person (``odin validate --schedulable``); else its report
    on stderr and ``refusal`` (a run refused is 1, a schedule asked of such a loop a usage error, 2)."""
    report = catalog.validate(name, schedulable=True)
    if not report.ok:
        for problem in report.errors:  # what stands in the way, without validate's "INVALID" summary
            print(problem, file=sys.stderr)
        raise refusal(f"loop {name!r} cannot run unattended: it could wait for a person",
                      hint="make every gate `ai` and drop the interview; `odin validate --schedulable LOOP` "
                           "lists what stands in the way")
