"""``odin deliver``: a done run as a branch of the user's repository, with pr.md (docs/delivery.md)."""

from __future__ import annotations

import argparse

from odin_magic.cli.common import add_command
from odin_magic.cli.runs import engine_for
from odin_magic.commands import delivery as delivery_args


def _cmd_deliver(args: argparse.Namespace) -> int:
    from odin_magic.engine.delivery import DeliverOptions, deliver  # git and the checkpoint store: only here
    from odin_magic.render.delivery_text import delivery_text

    options = DeliverOptions(branch=args.branch, squash=args.squash, force=args.force,
                             include_later=args.include_later, pr=args.pr, push=args.push,
                             commit=args.commit)
    print(delivery_text(deliver(engine_for(args), args.run, options)))
    return 0


def register(sub) -> None:
    p = sub.add_parser("deliver", help="make a branch of a done run's changes (one commit per stage execution, "
                       "or --squash) and its pull-request text pr.md; your branch, index and files are untouched")
    add_command(p, delivery_args.DELIVER, handler=_cmd_deliver)
