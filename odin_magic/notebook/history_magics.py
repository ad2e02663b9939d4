"""``%odin diff``, ``%odin revert`` and ``%odin fork``: the notebook side of checkpoints (docs/revert-fork.md).

Their arguments are the CLI's (:mod:`odin_magic.commands.history`);
:class:`~odin_magic.notebook.magics.OdinMagics` calls :func:`cmd_diff` / :func:`cmd_revert` / :func:`cmd_fork` with itself
and the parsed arguments.
"""

from __future__ import annotations

from odin_magic.render.displays import MessageDisplay


def cmd_diff(magics, args):
    from odin_magic.render.diff_view import DiffDisplay  # loads the checkpoint store: not at %load_ext

    return DiffDisplay(magics.runner().engine.diff(args.which, run_id=args.run, net=args.net))


def cmd_revert(magics, args):
    state = magics.runner().revert(args.stage, to=args.to, force=args.force)
    return MessageDisplay(f"reverted: run {state.run_id} continues from {state.current_stage} "
                          "(%odin run drives it; %odin diff shows what a stage changed)")


def cmd_fork(magics, args):
    state = magics.runner().fork(args.from_point, run_id=args.run, force=args.force)
    return MessageDisplay(f"forked: run {state.run_id} from {state.forked_from}, {state.status} at "
                          f"{state.current_stage} (%odin run drives it)")
