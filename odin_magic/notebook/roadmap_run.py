"""``%odin roadmap run``: drive the roadmap phase by phase in the kernel (docs/roadmap.md).

The drive runs in the foreground of the cell (the runner's live view shows each run's events); the
cell's display is what `odin roadmap run` prints besides those events. Refused while a run drives in
the background."""

from __future__ import annotations

from odin_magic.render.displays import TextBlockDisplay


def cmd_roadmap_run(magics, args):
    from odin_magic.commands.roadmap_run import run_options
    from odin_magic.engine.roadmap_driver import RoadmapDriver
    from odin_magic.render.roadmap_run_text import roadmap_run_text

    runner = magics.runner()
    runner.drive.refuse_if_busy()
    runner._ensure_model_worker(False)  # the notebook's settings (`%odin config script=...`): a missing key said here
    options = run_options(args)
    options.settings = magics.settings()  # a contract proposal asks the same model
    outcome = RoadmapDriver(runner.engine, options=options).run()
    return TextBlockDisplay(roadmap_run_text(outcome.lines, outcome.ending, outcome.phase, outcome.report))
