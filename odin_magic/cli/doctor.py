"""``odin doctor``: what the engine will do in the project, checked before a run (for now: which command
the regression gate runs, and why)."""

from __future__ import annotations

import argparse
import json

from odin_magic.cli.common import add_command, project_dir
from odin_magic.commands import doctor as doctor_args


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "doctor",
        help="check the project: which test command the regression gate runs, and why",
        description="Check what the engine will do in the project before a run: the regression suite's "
        "command and why it was chosen (the loop's `regression:`, else the project's declared test command, "
        "else a guess), the other commands found, whether it can run here, and each loop whose `regression:` "
        "overrides it. Exit 0: no problem found; 1: a problem (e.g. the chosen command cannot run here).",
    )
    add_command(p, doctor_args.DOCTOR, handler=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    from odin_magic.engine.doctor import diagnose
    from odin_magic.render.doctor import render_doctor

    checked = diagnose(project_dir(args)).to_dict()
    print(json.dumps(checked, indent=2) if args.json else render_doctor(checked))
    return 1 if checked["problems"] else 0
