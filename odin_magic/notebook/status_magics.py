"""The status commands of ``%odin``: status, report, runs and doctor.

:class:`StatusMagics` is a part of :class:`~odin_magic.notebook.magics.OdinMagics`, which provides ``runner()``,
``use_widgets()``, ``_load_loop`` and ``_show_live``.
"""

from __future__ import annotations

from odin_magic.core.errors import OdinError
from odin_magic.notebook.actions import NotebookRunner
from odin_magic.render.displays import MessageDisplay, NoRunDisplay, RunsDisplay, StatusDisplay


class StatusMagics:
    """``%odin status | report | runs | doctor``."""

    def _cmd_status(self, args):
        runner = self.runner()
        try:
            state = runner.status(args.run)
        except OdinError:
            if args.run:
                raise
            return NoRunDisplay(str(runner.project_dir))
        if state is None:
            return NoRunDisplay(str(runner.project_dir))
        loop = self._load_loop(state.loop, quiet=True)
        waiting = state.status in ("awaiting_approval", "awaiting_answer")
        history = getattr(args, "history", False)
        if waiting and not args.run and not history and not runner.drive.busy and self.use_widgets():
            self._show_live(runner, loop, state)  # the approval (or question) panel, e.g. after a restart
            return None  # the live view shows the status (its text/plain is the text status): once
        from odin_magic.runs.store import being_driven  # a status is read: the store is loaded already

        driven = state.status != "running" or runner.drive.busy or being_driven(runner.run_dir(state.run_id))
        from odin_magic.notebook.parser import in_notebook
        from odin_magic.render.roadmap_view import phase_blocked_hint  # a phase's run: its blocked phase's word

        shown = StatusDisplay(state, loop, runner.pending_question(state), criteria=self._criteria(runner, state),
                              whole_history=history, driven=driven).with_metrics(self._metrics(runner, state, loop))
        return shown.with_phase_hint(in_notebook(phase_blocked_hint(runner.project_dir, state)))

    @staticmethod
    def _metrics(runner: NotebookRunner, state, loop) -> list:
        """The run's metric gates' series (those of its loop's measuring stages): lines and a chart."""
        from odin_magic.runs.metric_history import measured_stages, read_series

        return read_series(runner.run_dir(state.run_id), state.history, measured_stages(loop))

    @staticmethod
    def _criteria(runner: NotebookRunner, state) -> list[str]:
        from odin_magic.engine.completion import latest

        checked = latest(runner.run_dir(state.run_id), state.history)
        return checked.lines() if checked is not None else []

    def _cmd_report(self, args):
        from odin_magic.render.displays import ReportDisplay
        from odin_magic.render.run_report import REPORT_MD

        runner = self.runner()
        state = runner.status(args.run)
        path = runner.run_dir(state.run_id) / REPORT_MD
        if not path.is_file():
            return MessageDisplay(f"run {state.run_id} is {state.status}: its report is written when it ends "
                                  "(done, failed, abandoned or blocked)")
        return ReportDisplay(path)

    def _cmd_runs(self, args):
        from odin_magic.runs.store import being_driven  # the runs are read: the store is loaded already

        runner = self.runner()
        states = runner.runs()
        idle = frozenset(s.run_id for s in states if s.status == "running" and not runner.drive.busy
                         and not being_driven(runner.run_dir(s.run_id)))
        return RunsDisplay(states, idle=idle)

    def _cmd_doctor(self, args):
        from odin_magic.engine.doctor import diagnose
        from odin_magic.render.doctor import DoctorDisplay

        return DoctorDisplay(diagnose(self.project_dir).to_dict())  # the text `odin doctor` prints
