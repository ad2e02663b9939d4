"""``%odin diff``, ``%odin revert`` and ``%odin fork``: the notebook side of checkpoints (docs/revert-fork.md).

:func:`add_parsers` adds them to the ``%odin`` parser (their arguments are the CLI's: :mod:`.history_args`);
:class:`~odin_magic.notebook.magics.OdinMagics` calls :func:`cmd_diff` / :func:`cmd_revert` / :func:`cmd_fork` with itself
and the parsed arguments.
"""

from __future__ import annotations

from typing import Any, Callable

from odin_magic.render.displays import MessageDisplay
from odin_magic.commands.history import diff_arguments, fork_arguments, revert_arguments


def add_parsers(add: Callable[[str, str], Any]) -> None:
    diff_arguments(add("diff", "Show what a stage execution changed (default: the latest; at a pause, the paused "
                               "stage's), one collapsible, coloured diff per file."))
    revert_arguments(add("revert", "Restore the project tree to the checkpoint before a stage execution; the run "
                                   "continues from that stage (files you changed by hand are kept unless --force)."))
    fork_arguments(add("fork", "Start a new run from point N of a run: its first N history entries kept, the tree "
                               "restored to that point; the old run is abandoned with a pointer to the fork."))


def cmd_diff(magics, args):
    from odin_magic.render.diff_view import DiffDisplay  # the run's models load with the command, not %load_ext

    return DiffDisplay(magics.runner().engine.diff(args.which, run_id=args.run))


def cmd_revert(magics, args):
    state = magics.runner().revert(args.stage, to=args.to, force=args.force)
    return MessageDisplay(f"reverted: run {state.run_id} continues from {state.current_stage} "
                          "(%odin run drives it; %odin diff shows what a stage changed)")


def cmd_fork(magics, args):
    state = magics.runner().fork(args.from_point, run_id=args.run, force=args.force)
    return MessageDisplay(f"forked: run {state.run_id} from {state.forked_from}, {state.status} at "
                          f"{state.current_stage} (%odin run drives it)")
