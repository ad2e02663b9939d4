"""``odin new``: author a loop by answering seven questions (those of seed 000's loop authoring).

``--answers FILE`` answers them non-interactively; otherwise the terminal asks
each question (``--describe TEXT`` first asks a configured model to propose
answers, which Enter accepts).
"""

from __future__ import annotations

import argparse
import sys

from odin_magic.cli.common import add_command, project_dir
from odin_magic.commands import authoring as authoring_args
from odin_magic.core.errors import UsageError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "new",
        help="author a new loop by answering seven questions",
        description="Author a loop by answering seven questions (kind of work, stages, gates, "
        "on_fail, max_iterations, roles, deep interview). Writes .odin-loop/loops/NAME.yaml once it validates.",
    )
    add_command(p, authoring_args.NEW, handler=cmd_new)
    register_refine(subparsers)
    register_memory(subparsers)


def cmd_new(args: argparse.Namespace) -> int:
    from odin_magic.authoring import new_loop as au  # loads with the command, not with `odin --help`
    from odin_magic.authoring.terminal import TerminalInterview, input_line

    project = project_dir(args)
    au.check_name(args.name)
    target = au.loop_path(project, args.name)
    if target.exists() and not args.force:  # said before any question is asked
        raise UsageError(f"{target} already exists; odin new never overwrites a loop",
                         hint="pick another name, or pass --force to replace it")
    if args.answers:
        answers = au.load_answers(args.answers)
        path, text = au.write_loop(project, args.name, answers, force=args.force)
    else:
        proposal = None
        describe = " ".join(args.describe) if args.describe else None
        if describe:
            from odin_magic.workers.config import Settings

            settings = Settings.from_env()
            if au.model_configured(settings):
                proposal = au.propose_answers(describe, settings, au.proposal_client_factory(settings, project))
                print(f"(a model proposed answers for: {describe}; press Enter to accept each)")
            else:
                print("(no model configured: answer the questions yourself)", file=sys.stderr)
        path, text = TerminalInterview(input_line, print).run(project, args.name, proposal, args.force)
    print(text.rstrip())
    print(f"\nwrote {path}")
    from odin_magic.loop.catalog import builtin_loops_dir

    if (builtin_loops_dir() / f"{args.name}.yaml").is_file():
        print(f"note: this project loop overrides the built-in loop {args.name!r}")
    print(f'start it: odin run {args.name} --task "what you are building"   (or --dry to try it offline)')
    return 0


# -- odin refine ------------------------------------------------------------------------------


def register_refine(subparsers) -> None:
    p = subparsers.add_parser(
        "refine",
        help="learn from past runs and propose loop edits (apply ID / reject ID / list)",
        description="Aggregate every run of LOOP (default: every loop with runs) from the event logs, and save "
        "rule-based proposals as .odin-loop/refinements/<loop>-<n>.yaml. `odin refine apply ID` applies one "
        "(bumps the loop's version, keeps the previous one in .odin-loop/loops/.history/); `odin refine reject ID` "
        "rejects it; `odin refine list [LOOP]` lists them.",
    )
    add_command(p, authoring_args.REFINE, handler=cmd_refine)


def _now() -> str:
    from datetime import datetime

    return datetime.now().strftime("%Y-%m-%dT%H:%M:%S")


def cmd_refine(args: argparse.Namespace) -> int:
    import json

    from odin_magic.learning.refine import Refinements, refine
    from odin_magic.render.refine_view import decided_text, proposals_text, render_result

    project = project_dir(args)
    words = list(args.words)
    action = words[0] if words and words[0] in ("apply", "reject", "list") else None
    if action in ("apply", "reject"):
        if len(words) != 2:
            raise UsageError(f"usage: odin refine {action} ID", hint="`odin refine list` shows the proposal ids")
        refinements = Refinements(project)
        if action == "apply":
            proposal, path = refinements.apply(words[1], _now())
            print(decided_text(proposal, path, refinements.history_dir))
        else:
            print(decided_text(refinements.reject(words[1], _now())))
        return 0
    if action == "list":
        if len(words) > 2:
            raise UsageError("usage: odin refine list [LOOP]")
        proposals = Refinements(project).all(words[1] if len(words) == 2 else None)
        if args.json:
            print(json.dumps([p.model_dump(mode="json") for p in proposals], indent=2))
        else:
            print(proposals_text(proposals))
        return 0
    if len(words) > 1:
        raise UsageError("usage: odin refine [LOOP]  (or: apply ID, reject ID, list [LOOP])")
    from odin_magic.authoring.new_loop import model_for_refine

    settings, factory = model_for_refine(project) if args.model else (None, None)
    result = refine(project, words[0] if words else None, settings=settings, client_factory=factory)
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        print(render_result(result))
    return 0


# -- odin memory ------------------------------------------------------------------------------


def register_memory(subparsers) -> None:
    p = subparsers.add_parser(
        "memory",
        help="show, remove or clear the project memory (decisions and lessons later runs read)",
        description="Show the entries of .odin-loop/memory/decisions.md and lessons.md; `remove ID` edits one "
        "out; `clear --force` deletes them all (or only one kind with --kind).",
    )
    add_command(p, authoring_args.MEMORY, handler=cmd_memory)


def cmd_memory(args: argparse.Namespace) -> int:
    import json
    from dataclasses import asdict

    from odin_magic.learning.memory import Memory

    mem = Memory(project_dir(args))
    words = list(args.words)
    if words[:1] == ["remove"]:
        if len(words) != 2:
            raise UsageError("usage: odin memory remove ID", hint="`odin memory` lists the ids")
        entry = mem.remove(words[1])
        print(f"removed {entry.id} ({entry.kind}, stage {entry.stage}, run {entry.run_id})")
        return 0
    if words[:1] == ["clear"]:
        if len(words) != 1:
            raise UsageError("usage: odin memory clear [--kind decision|lesson] --force")
        if not args.force:
            raise UsageError(f"clear deletes {len(mem.entries(args.kind))} memory entries",
                             hint="add --force to delete them")
        print(f"cleared {mem.clear(args.kind)} entries")
        return 0
    if words:
        raise UsageError(f"unknown memory command {words[0]!r}", hint="odin memory [remove ID | clear --force]")
    entries = mem.entries(args.kind)
    if args.json:
        print(json.dumps([asdict(e) for e in entries], indent=2))
    else:
        from odin_magic.render.loop_text import memory_text

        print(memory_text(mem.dir, entries))
    return 0
