"""The arguments of diff, revert and fork, one definition for ``odin`` and ``%odin`` (docs/revert-fork.md).

Each function adds them to an argparse parser (the CLI's, or the magic's ``MagicArgumentParser``)."""

from __future__ import annotations

import argparse


def diff_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("which", nargs="?", metavar="STAGE|N",
                   help="STAGE: that stage's latest execution; N: execution N (the history entry number, as in "
                        "status and its gate evidence); nothing: the latest execution (at a pause, the paused stage's)")
    p.add_argument("--run", metavar="ID", help="run id (default: the active or latest run)")


def revert_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("stage", nargs="?", metavar="STAGE", help="the stage (its latest execution)")
    p.add_argument("--to", type=int, metavar="N", help="execution N instead (the history entry number)")
    p.add_argument("--force", action="store_true", help="also revert files you changed by hand since")


def fork_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--from", dest="from_point", type=int, metavar="N",
                   help="keep the first N history entries (default: all of them)")
    p.add_argument("--run", metavar="ID", help="run to fork (default: the active or latest run)")
    p.add_argument("--force", action="store_true", help="also restore files you changed by hand since")
