"""A command's arguments as data: declared once, added to the ``odin`` parser and to the ``%odin`` parser.

An :class:`Arg` is what one ``parser.add_argument`` call takes. Most arguments are the same in both front
ends; an argument that makes sense in one front end only names it in ``only``:

- ``odin`` only: ``--unattended`` (cron and CI, where no person is there), ``--json`` (machine-readable
  output for scripts; the notebook returns display objects), and the terminal's ways of naming things
  (e.g. ``odin report RUN``).
- ``%odin`` only: ``--wait`` and ``--timeout`` (the notebook drives in the background and returns at once;
  the terminal always blocks until the run pauses or ends).

``--project`` is not in the specs: the terminal's is an option of every command (``cli.add_project``), the
notebook's a setting (``%odin config project=DIR``).

Help texts are %-formatted by argparse: they hold no ``%`` (write ``odin`` for the command, not ``%odin``).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

#: The front ends, as their commands are spelt.
ODIN = "odin"
MAGIC = "%odin"
FRONT_ENDS = (ODIN, MAGIC)


@dataclass(frozen=True)
class Arg:
    """One argument: ``names`` and ``options`` as ``add_argument`` takes them; ``only``: the one front end
    that offers it (None: both)."""

    names: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)
    only: str | None = None

    def offered_by(self, front_end: str) -> bool:
        return self.only is None or self.only == front_end


def arg(*names: str, only: str | None = None, **options: Any) -> Arg:
    """An :class:`Arg`, written like an ``add_argument`` call."""
    if only is not None and only not in FRONT_ENDS:
        raise ValueError(f"only= must be one of {FRONT_ENDS}, not {only!r}")
    return Arg(tuple(names), dict(options), only)


def add_arguments(parser: argparse.ArgumentParser, spec: tuple[Arg, ...], front_end: str) -> None:
    """Add to ``parser`` every argument of ``spec`` that ``front_end`` offers."""
    if front_end not in FRONT_ENDS:
        raise ValueError(f"front_end must be one of {FRONT_ENDS}, not {front_end!r}")
    for a in spec:
        if a.offered_by(front_end):
            parser.add_argument(*a.names, **a.options)


def did_you_mean_text(word: str, choices) -> str:
    """`` (did you mean 'status'?)`` when a choice is close to ``word``, else nothing: both front ends say it so."""
    from odin_magic.loop.validation import did_you_mean  # only when something is misspelt: --help stays cheap

    close = did_you_mean(word, list(choices))
    return f" (did you mean {close!r}?)" if close else ""


def unknown_command(word: str, choices, listing: str) -> str:
    """The one line either front end says for a command it does not have; ``listing`` is how to list them."""
    return f"unknown command {word!r}{did_you_mean_text(word, choices)}; {listing} lists the commands"


def choice_message(parser: argparse.ArgumentParser, message: str) -> str:
    """argparse's "invalid choice" for a positional of ``parser`` (an action, such as ``roadmap rnu``) said as a
    misspelt command is: ``unknown action 'rnu' (did you mean 'run'?); `odin roadmap --help` lists the actions``;
    any other message as it is."""
    import re

    m = re.match(r"argument (\S+): invalid choice: '([^']*)'", message)
    action = m and next((a for a in parser._actions if not a.option_strings and a.choices is not None
                         and m.group(1) in (a.metavar, a.dest)), None)
    if not action or m.group(1) == "COMMAND":
        return message
    name = (action.metavar or action.dest).lower()
    return (f"unknown {name} {m.group(2)!r}{did_you_mean_text(m.group(2), action.choices)}; "
            f"`{parser.prog} --help` lists the {name}s")
