"""``%odin roadmap run``: drive the roadmap phase by phase in the kernel (docs/roadmap.md).

The drive runs in the foreground of the cell (the runner's live view shows each run's events); the
cell's display is what `odin roadmap run` prints besides those events. Refused while a run drives in
the background. With widgets, a pause before a phase also shows the phase's contract with Start / Skip /
Edit contract (:mod:`.roadmap_panel`) below that text, and a pause at a phase's contract interview its question
panel (:mod:`.contract_panel`)."""

from __future__ import annotations

import argparse

from IPython.core.error import UsageError

from odin_magic.render.displays import TextBlockDisplay


def cmd_roadmap_run(magics, args):
    from odin_magic.commands.roadmap_run import run_options

    outcome, shown = drive_roadmap(magics, run_options(args))
    if outcome.ending != "paused" or not magics.use_widgets():
        return shown
    from IPython.display import display

    if outcome.asks:  # at the phase's contract interview: its question panel, answering as %odin answer does
        from odin_magic.engine.roadmap_interview import ContractInterview
        from odin_magic.notebook.contract_panel import show_contract_question

        display(shown)
        show_contract_question(ContractInterview(magics.project_dir, outcome.phase, magics.settings()))
        return None
    if outcome.contract is None:
        return shown

    from odin_magic.notebook.roadmap_panel import PhasePanel

    def again(skip):
        return drive_again(magics, args, skip)

    display(shown)
    display(PhasePanel(magics.project_dir, outcome.phase, outcome.contract, again).widget)
    return None


def drive_again(magics, args, skip):
    """What Start (``skip`` None) and Skip do: `%odin roadmap run` (``--skip PHASE``) with the cell's arguments."""
    again = argparse.Namespace(**{**vars(args), "skip": skip, "retry": None, "accept_contract": None})
    return cmd_roadmap_run(magics, again)


def drive_roadmap(magics, options):
    """Run the driver with the notebook's engine and settings: its outcome and the text `odin roadmap run` prints."""
    from odin_magic.engine.roadmap_driver import RoadmapDriver
    from odin_magic.render.roadmap_run_text import roadmap_run_text

    runner = magics.runner()
    runner.drive.refuse_if_busy()
    runner.ensure_model_worker(False)  # the notebook's settings (`%odin config script=...`): a missing key said here
    options.settings = magics.settings()  # a contract proposal asks the same model
    try:
        outcome = RoadmapDriver(runner.engine, options=options).run()
    except KeyboardInterrupt:  # the interrupt button, as Ctrl-C in `odin roadmap run`: one line, no traceback
        from odin_magic.engine.requirements import interrupted

        raise UsageError(interrupted(runner.engine, "%odin roadmap run")) from None
    return outcome, TextBlockDisplay(roadmap_run_text(outcome.lines, outcome.ending, outcome.phase, outcome.report,
                                                       outcome.asks))
