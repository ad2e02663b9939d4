"""The arguments of ``roadmap`` (show, new, validate, run, accept, discard), one definition for ``odin`` and
``%odin`` (docs/roadmap.md).

A proposal of ``roadmap new`` waits in ``.odin-loop/roadmap.proposed.md`` when the notebook made it (its panel's
Accept / Discard); ``roadmap accept`` / ``discard`` decide it in either front end. The terminal's ``new`` asks
y/N instead (or ``--yes``)."""

from __future__ import annotations

import argparse

from odin_magic.commands.roadmap_run import RUN, RUN_OPTIONS
from odin_magic.commands.spec import ODIN, arg
from odin_magic.core.errors import UsageError

#: The actions, the same in both front ends; the first is the default.
ACTIONS = ("show", "new", "validate", "run", "accept", "discard")

ROADMAP = (
    arg("action", nargs="?", default="show", choices=ACTIONS, metavar="ACTION",
        help="show (the default): milestones and phases with status, cost and run; new: propose one; "
             "validate: check the file; run: drive it phase by phase; accept / discard: the proposal waiting "
             "(a notebook's `roadmap new`)"),
    arg("file", nargs="?", metavar="FILE", help="validate: the roadmap file to check (default: .odin-loop/roadmap.md)"),
    arg("--from", dest="from_spec", metavar="SPEC", help="new: propose the roadmap from this spec (e.g. spec.md)"),
    arg("--from-run", dest="from_run", metavar="RUN", help="new: propose it from a finished run's spec.md"),
    arg("--answers", metavar="FILE", help="new: propose it from a file of answers (what to build, its parts)"),
    arg("--force", action="store_true", help="new / accept: replace an existing roadmap"),
    arg("--yes", only=ODIN, action="store_true", help="new: write the proposal without asking"),
    *RUN,
)

#: Which action takes which option (an option given to another action is a usage error).
_OPTIONS = {"from_spec": ("--from", ("new",)), "from_run": ("--from-run", ("new",)),
            "answers": ("--answers", ("new",)), "force": ("--force", ("new", "accept")),
            "yes": ("--yes", ("new",)), "file": ("FILE", ("validate",)), **RUN_OPTIONS}


def check_options(args: argparse.Namespace, prog: str) -> None:
    """A :class:`UsageError` naming an option given to an action that does not take it."""
    for dest, (shown, actions) in _OPTIONS.items():
        if getattr(args, dest, None) and args.action not in actions:
            raise UsageError(f"{shown} is for `{prog} roadmap {' / '.join(actions)}`, not {args.action}",
                             hint=f"`{prog} roadmap --help` lists the actions and their options")
