"""The arguments of diff, revert and fork, one definition for ``odin`` and ``%odin`` (docs/revert-fork.md).

:data:`DIFF`, :data:`REVERT` and :data:`FORK` are their specs (:mod:`.spec`); each ``*_arguments``
function adds one to an argparse parser (the CLI's, or the magic's ``MagicArgumentParser``)."""

from __future__ import annotations

import argparse

from odin_magic.commands.spec import ODIN, add_arguments, arg

DIFF = (
    arg("which", nargs="?", metavar="STAGE|N",
        help="STAGE: that stage's latest execution; N: execution N (the history entry number, as in "
             "status and its gate evidence); nothing: the latest execution (at a pause, the paused stage's)"),
    arg("--run", metavar="ID", help="run id (default: the active or latest run)"),
)

REVERT = (
    arg("stage", nargs="?", metavar="STAGE", help="the stage (its latest execution)"),
    arg("--to", type=int, metavar="N", help="execution N instead (the history entry number)"),
    arg("--force", action="store_true", help="also revert files you changed by hand since"),
)

FORK = (
    arg("--from", dest="from_point", type=int, metavar="N",
        help="keep the first N history entries (default: all of them)"),
    arg("--run", metavar="ID", help="run to fork (default: the active or latest run)"),
    arg("--force", action="store_true", help="also restore files you changed by hand since"),
)


def diff_arguments(p: argparse.ArgumentParser) -> None:
    add_arguments(p, DIFF, ODIN)  # no argument of these is front-end-only: either front end adds the same


def revert_arguments(p: argparse.ArgumentParser) -> None:
    add_arguments(p, REVERT, ODIN)


def fork_arguments(p: argparse.ArgumentParser) -> None:
    add_arguments(p, FORK, ODIN)
