"""``odin roadmap``: show the project's roadmap, validate it, or have the model propose one (docs/roadmap.md)."""

from __future__ import annotations

import argparse
import sys

from odin_magic.cli.common import add_command, project_dir
from odin_magic.commands import roadmap as roadmap_args


def register(sub) -> None:
    p = sub.add_parser("roadmap", help="show the roadmap (.odin-loop/roadmap.md) with each phase's status, cost "
                       "and run; validate it; propose one (new --from SPEC)",
                       description="Show the project's roadmap: milestones with their progress, each phase with "
                       "its status, iterations, cost and run. `odin roadmap validate [FILE]` lists every problem "
                       "at its line; `odin roadmap new --from SPEC` (or --from-run RUN, --answers FILE) has the "
                       "model propose one and writes it once you accept.")
    add_command(p, roadmap_args.ROADMAP, handler=cmd_roadmap)


def cmd_roadmap(args: argparse.Namespace) -> int:
    roadmap_args.check_options(args, "odin")
    project = project_dir(args)
    from odin_magic.cli.roadmap_run import cmd_roadmap_run

    if args.action == "run":  # Ctrl-C says which run is saved and that `odin roadmap run` goes on with it
        args.drives_a_run, args.resumed_by = True, "odin roadmap run"
    return {"show": _show, "new": _new, "validate": _validate, "run": cmd_roadmap_run, "accept": _accept,
            "discard": _discard}[args.action](project, args)


def _show(project, args) -> int:
    from odin_magic.render.roadmap_view import roadmap_display

    print(roadmap_display(project).text())
    return 0


def _validate(project, args) -> int:
    from odin_magic.render.roadmap_view import validate_roadmap

    text, ok = validate_roadmap(project, args.file)
    print(text)
    return 0 if ok else 1


def _new(project, args) -> int:
    from odin_magic.authoring import roadmap_new as rn
    from odin_magic.loop.roadmap import ROADMAP_FILE
    from odin_magic.render.roadmap_view import proposal_text
    from odin_magic.workers.config import Settings

    rn.refuse_overwrite(project, args.force)  # said before the model is asked
    source = rn.source_of(project, spec=args.from_spec, run=args.from_run, answers=args.answers)
    settings, factory = rn.model_for_roadmap(project, Settings.from_env())
    text = rn.propose_roadmap(source, settings, factory)
    print(proposal_text(text, ROADMAP_FILE))
    if not args.yes and not _accepted():
        print("\ndiscarded: nothing written (--yes writes it without asking)")
        return 1
    path = rn.write_roadmap(project, text, args.force)
    print(f"\nwrote {path}\nshow it: odin roadmap")
    return 0


def _accept(project, args) -> int:
    """The proposal a notebook's `%odin roadmap new` left waiting (.odin-loop/roadmap.proposed.md), written."""
    from odin_magic.authoring.roadmap_new import accept_proposal

    print(f"wrote {accept_proposal(project, args.force)}\nshow it: odin roadmap")
    return 0


def _discard(project, args) -> int:
    from odin_magic.authoring.roadmap_new import discard_proposal

    discard_proposal(project)
    print("discarded: nothing written")
    return 0


def _accepted() -> bool:
    try:
        answer = input("\nwrite it? [y/N] ")
    except EOFError:
        print(file=sys.stderr)
        return False
    return answer.strip().lower() in ("y", "yes")
