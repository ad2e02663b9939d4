"""``%odin diff`` and ``%odin revert``: the notebook side of checkpoints (see docs/revert-fork.md).

:func:`add_parsers` adds their arguments to the ``%odin`` parser; :class:`~odin_magic.magics.OdinMagics`
calls :func:`cmd_diff` / :func:`cmd_revert` with itself and the parsed arguments.
"""

from __future__ import annotations

from typing import Any, Callable

from .display import MessageDisplay


def add_parsers(add: Callable[[str, str], Any]) -> None:
    d = add("diff", "Show what a stage execution changed (default: the latest; at a pause, the paused stage's), "
                    "one collapsible, coloured diff per file.")
    d.add_argument("which", nargs="?", metavar="STAGE|N")
    d.add_argument("--run", metavar="ID", help="run id (default: the active or latest run)")
    r = add("revert", "Restore the project tree to the checkpoint before a stage execution; the run continues "
                      "from that stage (files you changed by hand are kept unless --force).")
    r.add_argument("stage", nargs="?", metavar="STAGE")
    r.add_argument("--to", type=int, metavar="N", help="execution N (the history entry number)")
    r.add_argument("--force", action="store_true", help="also revert files you changed by hand since")


def cmd_diff(magics, args):
    return magics.runner().engine.diff(args.which, run_id=args.run)


def cmd_revert(magics, args):
    state = magics.runner().revert(args.stage, to=args.to, force=args.force)
    return MessageDisplay(f"reverted: run {state.run_id} continues from {state.current_stage} "
                          "(%odin run drives it; %odin diff shows what a stage changed)")
