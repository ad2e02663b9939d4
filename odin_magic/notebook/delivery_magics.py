"""``%odin deliver``: a done run as a branch of the user's repository, with pr.md (docs/delivery.md).

Its arguments are the CLI's (:mod:`odin_magic.commands.delivery`); it is refused while a run drives in the
background (a checkpoint of the tree is taken to find what changed after the run)."""

from __future__ import annotations

from odin_magic.render.displays import TextBlockDisplay


def cmd_deliver(magics, args):
    from odin_magic.engine.delivery import DeliverOptions, deliver  # git and the checkpoint store: only here
    from odin_magic.render.delivery_text import delivery_text

    runner = magics.runner()
    runner.drive.refuse_if_busy()
    options = DeliverOptions(branch=args.branch, squash=args.squash, force=args.force,
                             include_later=args.include_later, pr=args.pr, push=args.push,
                             commit=args.commit)
    return TextBlockDisplay(delivery_text(deliver(runner.engine, args.run, options)))
