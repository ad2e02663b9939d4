"""The run-control commands of ``%odin``: run, approve, revise, step, answer (each drives in a background
thread and returns at once; ``--wait`` blocks), wait, stop, abandon, and the live view each drive shows.

:class:`RunMagics` is a part of :class:`~odin_magic.notebook.magics.OdinMagics`, which provides ``runner()``,
``use_widgets()``, ``charts``, ``wait_timeout``, ``_runners``, ``_load_loop`` and ``_cmd_status``.
"""

from __future__ import annotations

import argparse

from IPython.core.error import UsageError
from IPython.display import display

from odin_magic.core.errors import OdinError
from odin_magic.loop.defaults import DEFAULT_LOOP  # the notebook's default loop (seed 000)
from odin_magic.notebook.actions import NotebookRunner
from odin_magic.notebook.parser import usage_error
from odin_magic.render.displays import MessageDisplay, StatusDisplay, TextBlockDisplay


class RunMagics:
    """``%odin run | approve | revise | step | answer | question | wait | stop | abandon``."""

    def _cmd_run(self, args, force_start: bool = False):
        runner = self.runner()
        active = runner.active()
        dry_flags = args.dry or args.gates or args.approve_all or args.stage_delay or args.run_commands
        if args.task is not None or force_start or active is None:
            if active is not None:
                raise OdinError(
                    f"run {active.run_id} ({active.loop}) is still active ({active.status})",
                    hint="finish it (%odin run / %odin approve), or %odin abandon it first",
                )
            loop = args.loop or DEFAULT_LOOP
            if not (args.task or "").strip():  # refused before any view or panel appears
                raise UsageError(f'a new run needs a task: %odin run {loop} --task "what you are building"')
            from odin_magic.loop.params import apply_params, parse_assignments

            params = parse_assignments(args.param)
            loop_def = apply_params(self._load_loop(loop), params)  # a bad --param: refused before any view
            if not args.loop:  # say which loop a run without one starts
                print(f"odin: no loop given: starting the default loop {DEFAULT_LOOP} "
                      "(%odin list shows the others; %odin run LOOP --task ... picks one)")
            dry = None
            if dry_flags:
                from odin_magic.runs.state import DryOptions
                from odin_magic.workers.dry import parse_gate_script

                dry = DryOptions(gates=parse_gate_script(args.gates, loop_def), approve_all=args.approve_all,
                                 stage_delay=args.stage_delay or 0.0, run_commands=args.run_commands)
            runner.start(loop, args.task, dry=dry, ready=lambda: self._show_live(runner, loop_def, None),
                         params=params)
            message = f"odin: started {loop}" + (" (dry run)" if dry else "") + " in the background"
        else:
            if args.loop and args.loop != active.loop:
                raise OdinError(f"the active run {active.run_id} runs {active.loop}, not {args.loop}",
                                hint="continue it with %odin run, or %odin abandon it to start another")
            if dry_flags or args.param:
                raise UsageError("dry-run options and --param apply when a run starts; a run continues as it began")
            runner.continue_run(ready=self._live_for(runner, active))
            approving = active.status == "awaiting_approval"
            message = f"odin: {'approved ' + active.current_stage + ', ' if approving else ''}continuing {active.run_id}"
        return self._after_submit(runner, args, message)

    def _cmd_approve(self, args):
        runner = self.runner()
        active = runner.active()
        runner.approve(ready=self._live_for(runner, active))
        return self._after_submit(runner, args, f"odin: approved {active.current_stage if active else ''}")

    def _cmd_revise(self, args):
        runner = self.runner()
        feedback = " ".join(args.feedback).strip()
        runner.revise(feedback, ready=self._live_for(runner, runner.active()))
        return self._after_submit(runner, args, "odin: revising with your feedback")

    def _cmd_step(self, args):
        runner = self.runner()
        runner.step(args.stage, ready=self._live_for(runner, runner.active()))
        return self._after_submit(runner, args, f"odin: stepping {args.stage}")

    def _cmd_answer(self, args):
        runner = self.runner()
        from odin_magic.engine.roadmap_interview import interview_to_answer

        interview = interview_to_answer(runner.project_dir, runner.active(), self.settings(), tell=print)
        if interview is not None:  # no run waits for an answer; a roadmap phase's contract interview does
            return self._answer_contract(interview, " ".join(args.text))
        runner.answer(" ".join(args.text), ready=self._live_for(runner, runner.active()))
        return self._after_submit(runner, args, "odin: answer sent")

    def _cmd_question(self, args):
        """The waiting question as `odin question` shows it: the active run's interview's, or else a roadmap
        phase's contract interview's."""
        from odin_magic.engine.roadmap_interview import question_waiting

        waiting = question_waiting(self.runner().engine, self.settings(), tell=print)
        shown = TextBlockDisplay(f"{waiting.text}\n→ %odin answer ...")
        if waiting.interview is None or not self.use_widgets():
            return shown
        from odin_magic.notebook.contract_panel import show_contract_question

        display(shown)
        show_contract_question(waiting.interview, waiting.question)  # its buttons answer as %odin answer does
        return None

    def _answer_contract(self, interview, text: str):
        """The answer goes to the interview a roadmap phase's contract asks first; `%odin roadmap run` goes
        on once it is finished."""
        from odin_magic.notebook.contract_panel import answer_contract

        print(answer_contract(interview, text)[1])

    def _after_submit(self, runner: NotebookRunner, args, message: str):
        if getattr(args, "wait", False):
            shown = self._wait(runner, args.timeout)
            # the live view in this cell shows the status (its display is refreshed at pauses and ends): once
            return None if self._live_here(runner) else shown
        if not self.use_widgets():
            print(message)
        return None

    def _cmd_wait(self, args):
        return self._wait(self.runner(), args.timeout)

    def _wait(self, runner: NotebookRunner, timeout: float | None):
        timeout = timeout if timeout is not None else self.wait_timeout
        if not runner.drive.busy and not self._last_drive_is_current(runner):
            return self._cmd_status(argparse.Namespace(run=None))  # nothing driven here (since): where the run is
        try:
            outcome = runner.wait(timeout)
        except KeyboardInterrupt:  # the user stopped waiting, not the run
            raise UsageError("stopped waiting (interrupted); the run goes on in the background "
                             "(hint: %odin wait waits again, %odin stop ends it after the current step)") from None
        if outcome is None:
            raise UsageError(f"still driving after {timeout:g} s; %odin wait again, or %odin stop")
        if not outcome.ok:
            if isinstance(outcome.error, OdinError):
                raise usage_error(outcome.error)
            raise outcome.error
        state = outcome.result
        if state is None:
            return None
        state = runner.status(state.run_id)  # as it is now: e.g. abandoned since that drive ended
        loop = self._load_loop(state.loop, quiet=True)
        return self._status_display(runner, state, loop).with_metrics(self._metrics(runner, state, loop))

    def _status_display(self, runner: NotebookRunner, state, loop) -> StatusDisplay:
        """The run's status as %odin status shows it: with the waiting question and the last checks."""
        return StatusDisplay(state, loop, runner.pending_question(state), criteria=self._criteria(runner, state))

    def _live_here(self, runner: NotebookRunner) -> bool:
        """Whether this command showed the run's live view (widgets): a status returned too would show it twice."""
        shown = getattr(self, "_live_shown", None)
        return shown is not None and shown is runner.view

    @staticmethod
    def _last_drive_is_current(runner: NotebookRunner) -> bool:
        """Whether the last drive here is about the project's current run (not one a fork or a new start has
        since replaced)."""
        outcome = runner.drive.outcome
        if outcome is None:
            return False
        if not outcome.ok or outcome.result is None:
            return True  # its error (or its end) is what waiting shows
        try:
            current = runner.status(None)
        except OdinError:
            return True
        return current is None or current.run_id == outcome.result.run_id

    def _cmd_stop(self, args):
        runner = self.runner()
        if runner.stop():
            return MessageDisplay("odin: stop requested; the run ends after the current step and stays resumable "
                                  "(%odin run continues it)")
        return MessageDisplay("odin: nothing is driving; a paused run simply waits (%odin status)")

    def _cmd_abandon(self, args):
        state = self.runner().abandon()
        return MessageDisplay(f"odin: abandoned {state.run_id}")

    # -- live view ------------------------------------------------------------------------

    def _show_live(self, runner: NotebookRunner, loop, state) -> None:
        if self.use_widgets():
            from odin_magic.notebook.widgets import RunView, ViewSources

            sources = ViewSources(question=runner.pending_question, question_panel=runner.question_panel,
                                  run_dir_for=runner.run_dir, diff=runner.stage_diff,
                                  status=lambda st: self._status_display(runner, st, loop))
            view = RunView(loop, runner.project_dir, runner, state, state_source=runner.status, sources=sources)
            charts = []
            if self.charts:
                from odin_magic.render.charts import ChartHandle, run_chart_data
                from odin_magic.runs.metric_history import measured_stages

                stage_ids = loop.stage_ids() if loop else None
                charts.append(ChartHandle(lambda st: run_chart_data(st, stage_ids)))  # drawn when it changed
                interviews = [s.id for s in loop.stages if s.interview is not None] if loop else []
                if interviews:
                    charts.append(ChartHandle(lambda st: runner.interview_chart(st, interviews[0])))
                measured = measured_stages(loop) if loop else set()
                if measured:  # the figure per evaluation against baseline and target, re-drawn at each gate
                    charts.append(ChartHandle(runner.metric_chart_source(measured)))  # from the new evidence only
            runner.attach(view, charts)
            from odin_magic.notebook.background import install_stream_router

            install_stream_router(self._stray_output_sink)
            view.display_handle = display(view, display_id=True)  # text/plain: the text status
            self._live_shown = view
            for chart in charts:  # drawn now from the run's state, re-drawn in place as it goes
                if state is None:
                    chart.placeholder("charts appear at the run's first gate decision")
                else:
                    chart.show(state)
        else:
            from odin_magic.notebook.widgets import TextRunView

            runner.attach(TextRunView())

    def _stray_output_sink(self):
        """Where background threads' stray writes go: the busy run's Output widget (None: nowhere special)."""
        for runner in self._runners.values():
            view = runner.view
            if runner.drive.busy and view is not None and hasattr(view, "output"):
                return view._append
        return None

    def _live_for(self, runner: NotebookRunner, active):
        """For run/approve/revise/step/answer: show a fresh live view in this cell once the action is
        checked (the previous view retires)."""
        if active is None:
            return None  # the runner raises the clear error
        return lambda: self._show_live(runner, self._load_loop(active.loop, quiet=True), active)
