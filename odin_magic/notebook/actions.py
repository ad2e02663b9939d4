"""The notebook's handle on one project's runs: an engine, its background drive, and the live view.

:class:`NotebookRunner` is what the magics and the widgets' buttons call. It
checks what can be checked at once (so that a cell gets its error at once),
then hands the engine call to the :class:`BackgroundDrive`; the engine's events
fan out to the current view. It is also the ``RunActions`` the widgets use.
"""

from __future__ import annotations

import threading
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from odin_magic.notebook.background import BackgroundDrive, Coalescer, DriveOutcome, EventFanout
from odin_magic.core.errors import NoActiveRun, OdinError, RunRefused
from odin_magic.notebook.parser import in_notebook

if TYPE_CHECKING:  # the engine and the models load with the first engine, not with `%load_ext`
    from odin_magic.notebook.foreground import Foreground
    from odin_magic.runs.state import DryOptions, RunState


#: Charts are redrawn at most this often (seconds) while a run drives; the drive's end redraws them at once.
CHART_INTERVAL = 1.0
CHART_SETTLE_TIMEOUT = 60.0

EngineFactory = Callable[..., Any]  # (project_dir, listener=...) -> Engine
WorkerFactory = Callable[[Path], Any]  # project_dir -> the model worker (Claude or scripted)
Ready = Callable[[], None]  # called once an action is checked, just before it drives (shows the live view)
PAUSES = ("awaiting_approval", "awaiting_answer")
#: How long an action waits for a drive that has announced its pause to end (it only reports and re-draws).
SETTLE_TIMEOUT = 120.0


class NotebookRunner:
    def __init__(self, project_dir: Path, engine_factory: EngineFactory, worker_factory: WorkerFactory | None = None,
                 foreground: Foreground | None = None):
        self.project_dir = Path(project_dir)
        self.fanout = EventFanout()
        #: the kernel's requests, which a background drive gives way to (None: not in a kernel; see foreground.py)
        self.foreground = foreground
        self.drive = BackgroundDrive()
        self._engine_factory = engine_factory
        self._worker_factory = worker_factory
        self._engine = None
        self.view = None  # the live view (widgets.RunView / TextRunView) the events go to
        self.charts = []  # charts.ChartHandle objects, re-drawn off the drive's thread (see _redraw_charts)
        self.chart_redraws = Coalescer(self._redraw_charts, interval=CHART_INTERVAL, name="odin-charts")
        self._chart_run: str | None = None  # the run the charts show (the latest gate's)
        self._chart_final: RunState | None = None  # the state a drive ended with, drawn as it is
        self.drive.on_finish(self._finished)
        self.fanout.subscribe(self._chart_event)

    # -- engines -------------------------------------------------------------------------

    @property
    def engine(self):
        """The driving engine (created on first use, with the fan-out as its listener)."""
        if self._engine is None:
            self._engine = self._engine_factory(self.project_dir, listener=self._deliver)
        return self._engine

    def _deliver(self, event) -> None:
        """The engine's listener: the event goes to every subscriber. On the drive's thread, the drive gives way
        to a cell or widget message the kernel is handling before and after (foreground.py says why)."""
        if self.foreground is not None:
            self.foreground.give_way()
        self.fanout(event)
        if self.foreground is not None:
            self.foreground.give_way()

    def reader(self):
        """The engine for reads: it answers status/runs/active while it drives (live state)."""
        return self.engine

    def ensure_model_worker(self, dry: bool) -> None:
        """Build the model worker now, in the cell, so that a missing key or bad setting is reported here."""
        if not dry and self.engine.worker is None and self._worker_factory is not None:
            self.engine.worker = self._worker_factory(self.project_dir)

    def reset_worker(self) -> None:
        """Forget the model worker after a settings change; the next real drive builds a new one."""
        if self._engine is not None and not self.drive.busy:
            self._engine.worker = None

    # -- queries -------------------------------------------------------------------------

    def active(self) -> RunState | None:
        return self.reader().active()

    def status(self, run_id: str | None = None) -> RunState:
        return self.reader().status(run_id)

    def run_dir(self, run_id: str) -> Path:
        return self.engine.run_dir(run_id)

    def runs(self) -> list[RunState]:
        return list(self.reader().runs())

    # -- views ---------------------------------------------------------------------------

    def attach(self, view, charts=()) -> None:
        """Make ``view`` the live view: events go to it; the previous view retires (it freezes), and its charts
        make way for this view's, unless its run had ended (the last view of a run keeps its charts)."""
        old = self.view
        if old is not None:
            self.fanout.unsubscribe(old.handle_event)
            ended = getattr(old, "ended", False)
            retire = getattr(old, "retire", None)
            if retire:
                retire()
            if not ended:
                for chart in self.charts:
                    getattr(chart, "retire", lambda: None)()
        self.view = view
        self.charts = list(charts)
        if view is not None:
            self.fanout.subscribe(view.handle_event)

    def _chart_event(self, event) -> None:
        """A gate decision asks for a redraw of the charts: done off the drive's thread, at most once every
        CHART_INTERVAL seconds, so that a chart never delays a transition (the drive's end redraws them too)."""
        if event.kind in ("gate_passed", "gate_failed") and self.charts:
            self._chart_run, self._chart_final = event.run_id, None
            self.chart_redraws.request()

    def _redraw_charts(self) -> None:
        if self.foreground is not None:  # a drawing holds the interpreter for a while: not while a cell runs
            self.foreground.give_way()
        charts, run_id, final = list(self.charts), self._chart_run, self._chart_final
        if charts and run_id is not None:
            state = final or self.engine.status(run_id)  # else a snapshot of the live state, the drive going on
            for chart in charts:
                chart.update(state)

    def _finished(self, outcome: DriveOutcome) -> None:
        from odin_magic.runs.state import RunState  # loaded by the drive that just ended

        view = self.view
        if outcome.ok and isinstance(outcome.result, RunState):
            if view is not None:
                view.show_state(outcome.result)
            if self.charts:  # the final figures, drawn before the drive is reported finished (%odin wait)
                self._chart_run, self._chart_final = outcome.result.run_id, outcome.result
                self.chart_redraws.request(now=True)
                self.chart_redraws.settle(CHART_SETTLE_TIMEOUT)
        elif not outcome.ok and view is not None:
            err = outcome.error
            if isinstance(err, OdinError):
                view.show_error(in_notebook(str(err)))
            else:
                view.show_error(f"{outcome.label} failed: {err!r}")
                append = getattr(view, "append_stderr", None)
                if append:
                    append("".join(traceback.format_exception(err)))

    # -- actions (in the background) --------------------------------------------------

    def _submit(self, label: str, call, ready: Ready | None, at_pause: tuple[str, ...] = ()) -> None:
        """Everything checked: let the front end show its view (``ready``), then drive in the background.

        ``at_pause``: the pause statuses the action answers (approve: ``awaiting_approval``, ...). When the
        drive is busy but the run already stands at such a pause, the drive is only finishing announcing it
        (the panel has appeared): wait for that to end instead of refusing the click."""
        if at_pause and self.drive.busy and self._paused_in(at_pause):
            self.drive.wait(SETTLE_TIMEOUT)
        self.drive.refuse_if_busy()  # before ``ready``: a refused action shows no view
        if ready is not None:
            ready()
        self.drive.submit(label, self._in_kernel(call))

    def _in_kernel(self, call):
        """``call`` with the interpreter's switch interval shortened while it drives, in a kernel (foreground.py)."""
        if self.foreground is None:
            return call

        def driving():
            from odin_magic.notebook.foreground import short_switch_interval

            with short_switch_interval():
                return call()

        return driving

    def _paused_in(self, statuses: tuple[str, ...]) -> bool:
        try:
            return self.engine.status().status in statuses  # the driving session's live state
        except OdinError:
            return False

    def start(self, loop: str, task: str, dry: DryOptions | None = None, ready: Ready | None = None,
              params: dict[str, str] | None = None) -> None:
        """Start a run; returns once the run exists (so ``status`` sees it), driving on in the background."""
        from odin_magic.engine.orchestrator import require_task

        require_task(task)  # before any view appears
        self.ensure_model_worker(dry is not None)
        created = threading.Event()

        def on_event(event) -> None:
            if event.kind == "run_started":
                created.set()

        def call():
            try:
                return self.engine.start(loop, task, dry=dry, params=params)
            finally:
                created.set()

        self.fanout.subscribe(on_event)
        try:
            self._submit("run", call, ready)
            created.wait()
        finally:
            self.fanout.unsubscribe(on_event)
        outcome = self.drive.outcome
        if outcome is not None and not outcome.ok and isinstance(outcome.error, OdinError):
            raise outcome.error  # refused before it began (e.g. another process started a run)

    def continue_run(self, ready: Ready | None = None) -> None:
        self._require_active()
        self._submit("run", lambda: self.engine.run(), ready, at_pause=PAUSES)

    # The checks are the engine's own (engine.require_*), made here so that the cell gets the error at once.

    def approve(self, ready: Ready | None = None) -> None:
        self._require_status("approve")
        self._submit("approve", lambda: self.engine.approve(), ready, at_pause=("awaiting_approval",))

    def revise(self, feedback: str, ready: Ready | None = None) -> None:
        from odin_magic.engine.orchestrator import require_text

        require_text(feedback, "revise")
        self._require_status("revise")
        self._submit("revise", lambda: self.engine.revise(feedback), ready, at_pause=("awaiting_approval",))

    def _require_status(self, action: str) -> None:
        """The engine's check, with whether a process drives the run now (a running run nothing drives is ready)."""
        from odin_magic.engine.orchestrator import require_status
        from odin_magic.runs.store import being_driven

        state = self._require_active()
        require_status(state, action, driven=being_driven(self.engine.run_dir(state.run_id)))

    def step(self, stage: str, ready: Ready | None = None) -> None:
        """Step ``stage`` of the active run (refused at a pause), or of the latest run when it failed (reopened)."""
        from odin_magic.engine.orchestrator import require_not_paused, require_stage

        state = self.active() or self._latest_failed()
        if state is None:
            self._require_active()  # raises the clear error
        self.ensure_model_worker(state.dry is not None)
        require_stage(self.engine.loop_for(state.run_id), stage)
        require_not_paused(state)
        self._submit(f"step {stage}", lambda: self.engine.step(stage), ready)

    def answer(self, text: str, ready: Ready | None = None) -> None:
        """Answer the interview's waiting question."""
        from odin_magic.engine.orchestrator import require_text

        require_text(text, "answer")
        self._require_status("answer")
        self._submit("answer", lambda: self.engine.answer(text), ready, at_pause=("awaiting_answer",))

    def revert(self, stage: str | None = None, to: int | None = None, force: bool = False) -> RunState:
        """Revert a stage execution (see Engine.revert), at once: it performs no stage. Refused while driving."""
        return self._at_once(lambda: self.engine.revert(stage, to=to, force=force))

    def fork(self, from_point: int | None = None, run_id: str | None = None, force: bool = False) -> RunState:
        """Fork a run (see Engine.fork), at once: it performs no stage. Refused while driving."""
        return self._at_once(lambda: self.engine.fork(from_point, run_id=run_id, force=force))

    def _at_once(self, action: Callable[[], RunState]) -> RunState:
        if self.drive.busy and self._paused_in(("awaiting_approval", "blocked")):
            self.drive.wait(SETTLE_TIMEOUT)  # the drive is only finishing announcing the pause
        self.drive.refuse_if_busy()
        state = action()
        if self.view is not None:
            self.view.show_state(state)
        return state

    def stage_diff(self, state: RunState):
        """The latest stage execution's diff of ``state``'s run (the paused stage's, at a pause), or None."""
        try:
            return self.engine.diff(run_id=state.run_id)
        except OdinError:
            return None

    def pending_question(self, state: RunState) -> str | None:
        """The interview's waiting question as text (None when no interview waits, or none is installed)."""
        from odin_magic.interview.runner import waiting_question

        return waiting_question(self.engine.run_dir(state.run_id), state)

    def question_panel(self, state: RunState):
        """The interview's own question panel (options, you decide, skip, ...) sending through ``answer``;
        None when no interview question waits (or its state cannot be read)."""
        if state.status != "awaiting_answer":
            return None
        from odin_magic.interview.runner import interview_state
        from odin_magic.notebook.interview_panel import QuestionPanel

        try:
            iv = interview_state(self.engine.run_dir(state.run_id), state.current_stage)
        except OdinError:
            return None
        if iv is None or iv.pending is None:
            return None
        return QuestionPanel(iv.pending, lambda text: self.answer(text), stage=state.current_stage, state=iv)

    def interview_chart(self, state: RunState, stage_id: str):
        """What the interview's convergence chart draws (ambiguity per round against the threshold), from its
        saved state."""
        from odin_magic.interview.runner import interview_state
        from odin_magic.notebook.interview_panel import convergence_data

        try:
            iv = interview_state(self.engine.run_dir(state.run_id), stage_id)
        except OdinError:  # an unreadable interview.json: the empty chart (status reports the damage)
            iv = None
        return convergence_data(iv, state.interview.threshold if state.interview else 0.15)

    def metric_chart_source(self, stages: set[str] | None = None):
        """A live view's metric chart (the figure per evaluation against baseline and target), called with the
        run's state at each gate decision: it reads only the evidence added since (see LiveMetricChart)."""
        from odin_magic.render.metric_chart import LiveMetricChart

        return LiveMetricChart(lambda run_id: self.engine.run_dir(run_id), stages)

    def abandon(self) -> RunState:
        if self.drive.busy:
            raise RunRefused("the run is driving in the background", hint="%odin stop first, then %odin abandon")
        if self.engine.blocking_damage() is None:  # a damaged run that may be active can be abandoned too
            self._require_active()
        state = self.engine.abandon()
        if self.view is not None:
            self.view.show_state(state)  # the run ended: its live view freezes
        return state

    def stop(self) -> bool:
        """Ask the driving engine to end after the current step. False when nothing is driving."""
        if not self.drive.busy:
            return False
        self.engine.request_stop()
        return True

    def wait(self, timeout: float | None = None) -> DriveOutcome | None:
        return self.drive.wait(timeout)

    def _latest_failed(self) -> RunState | None:
        try:
            latest = self.reader().status()
        except NoActiveRun:
            return None
        return latest if latest.status == "failed" else None

    def _require_active(self) -> RunState:
        state = self.active()
        if state is None:
            from odin_magic.engine.requirements import roadmap_waits

            if (refusal := roadmap_waits(self.project_dir)) is not None:  # the roadmap waits for a person
                raise refusal
            raise NoActiveRun(f"no active run in {self.project_dir}",
                              hint='start one: %odin run LOOP --task "..." (%odin runs lists past runs)')
        self.ensure_model_worker(state.dry is not None)
        return state
