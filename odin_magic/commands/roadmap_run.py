"""The arguments of ``roadmap run`` (added to ``roadmap``'s, one definition for ``odin`` and ``%odin``), and the
driver's options they make (docs/roadmap.md)."""

from __future__ import annotations

import argparse

from odin_magic.commands.spec import ODIN, arg

RUN = (
    arg("--unattended", only=ODIN, action="store_true",
        help="run: never wait for a person; exit 3 at the first phase that needs one (the report is written)"),
    arg("--retry", metavar="PHASE", help="run: give this escalated or blocked phase another try"),
    arg("--skip", metavar="PHASE", help="run: mark this phase skipped (it is not run)"),
    arg("--accept-contract", metavar="PHASE",
        help="run: accept this phase's contract as edited while a run was under way (its own run goes on; "
             "a phase not started yet starts under it)"),
)

#: Which action takes which of these options.
RUN_OPTIONS = {"unattended": ("--unattended", ("run",)), "retry": ("--retry", ("run",)), "skip": ("--skip", ("run",)),
               "accept_contract": ("--accept-contract", ("run",))}


def run_options(args: argparse.Namespace):
    """The driver's options from the `run` action's arguments (both front ends)."""
    from odin_magic.engine.roadmap_driver import RoadmapOptions

    return RoadmapOptions(unattended=bool(getattr(args, "unattended", False)), retry=getattr(args, "retry", None),
                          skip=getattr(args, "skip", None), accept_contract=getattr(args, "accept_contract", None))
