"""``odin diff | revert | fork``: what a stage changed, and going back to a checkpoint (docs/revert-fork.md)."""

from __future__ import annotations

import argparse

from odin_magic.cli.common import add_command
from odin_magic.commands import history as history_args
from odin_magic.cli.runs import engine_for, exit_code


def _cmd_diff(args: argparse.Namespace) -> int:
    print(engine_for(args).diff(args.which, run_id=args.run, net=args.net).text())
    return 0


def _cmd_revert(args: argparse.Namespace) -> int:
    state = engine_for(args).revert(args.stage, to=args.to, force=args.force)
    print(f"run {state.run_id}: {state.status} at {state.current_stage}")
    return exit_code(state)


def _cmd_fork(args: argparse.Namespace) -> int:
    state = engine_for(args).fork(args.from_point, run_id=args.run, force=args.force)
    print(f"run {state.run_id} ({state.status} at {state.current_stage}), forked from {state.forked_from}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("diff", help="print the unified diff of a stage execution (default: the latest; "
                       "STAGE: its latest execution; --net: all of them)")
    add_command(p, history_args.DIFF, handler=_cmd_diff)

    p = sub.add_parser("revert", help="restore the tree to the checkpoint before a stage execution; "
                       "the run continues from that stage")
    add_command(p, history_args.REVERT, handler=_cmd_revert)

    p = sub.add_parser("fork", help="start a new run from a point of a run (its history up to N, the tree "
                       "restored there); the old run is abandoned with a pointer to the fork")
    add_command(p, history_args.FORK, handler=_cmd_fork)
