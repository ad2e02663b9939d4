"""``odin roadmap run``: drive the roadmap phase by phase (docs/roadmap.md, odin_magic.engine.roadmap_driver).

Exit codes: 0 (complete, or paused for you: `odin roadmap run` again goes on), 1 (a phase is escalated or
blocked), 3 (--unattended: the first phase that needs a person; the report is written)."""

from __future__ import annotations

import argparse
from pathlib import Path


def cmd_roadmap_run(project: Path, args: argparse.Namespace) -> int:
    from odin_magic.cli.runs import print_event
    from odin_magic.engine.orchestrator import Engine
    from odin_magic.commands.roadmap_run import run_options
    from odin_magic.engine.roadmap_driver import RoadmapDriver
    from odin_magic.render.roadmap_run_text import roadmap_run_summary

    engine = Engine(project, listener=print_event)
    outcome = RoadmapDriver(engine, tell=lambda text: print(text, flush=True), options=run_options(args)).run()
    print(roadmap_run_summary(outcome.ending, outcome.phase, outcome.report, outcome.asks), flush=True)
    return outcome.exit_code

