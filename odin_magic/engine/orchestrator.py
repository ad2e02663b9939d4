"""The Engine: seed 000's hybrid drive over a run's event log.

Each public call (``start``, ``run``, ``approve``, ``revise``, ``step``,
``abandon``) takes the run's driver lock, drives until the run pauses,
finishes, fails or is stopped, and returns the :class:`RunState`. Every state
change is one event-log record (see :mod:`odin_magic.runs.store`); in particular a
gate evaluation — its history entry, counters, next stage, status and the dry
script's consumption — is ONE record, so a crash can never leave half of it.
A crash mid-stage leaves ``current_stage`` unchanged: the stage re-runs on resume.

Threading: one driver at a time per Engine (and per run, across processes,
through the file lock) plus any number of concurrent readers (``status``,
``runs``, ``active``). ``request_stop()`` ends the drive after the current
step; the run stays ``running`` and resumable.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import filelock
from pydantic import ValidationError

from odin_magic.engine import (
    completion, gates, judging, mutation, reporting_stage as reporting, rewind, routing, scope
)
from odin_magic.runs import diffs
from odin_magic.learning import memory
from odin_magic.render import run_report as runreport
from odin_magic.runs import evidence as gate_evidence
from odin_magic.loop.artifacts import Placement, confine, placements, project_relative
from odin_magic.core.confine import Confinement, PathEscapes
from odin_magic.loop.catalog import LoopCatalog
from odin_magic.runs.checkpoints import Checkpoints, StageCheckpoint
from odin_magic.core.errors import NoActiveRun, OdinError, RunLocked, RunRefused, UsageError
from odin_magic.runs.events import EngineEvent, Listener
from odin_magic.interview.awaiting import AwaitingAnswer
from odin_magic.loop.schema import Loop, Stage
from odin_magic.core.secrets import protect_process, redact
from odin_magic.runs.state import DryOptions, InterviewSummary, RunState, Usage
from odin_magic.runs.store import (
    ABANDONED_MARK, LOOP_NAME, Loaded, RunCorrupt, RunHandle, RunStore, command_line
)
from odin_magic.workers.base import JudgeJob, StageJob, StageResult, Worker, WorkerError, WorkerEvent
from odin_magic.workers.dry import DryWorker, parse_gate_script

Clock = Callable[[], datetime]

#: An interview runner performs a stage that declares ``interview``; it gets the
#: engine's session (to record the interview summary) and returns a StageResult.
InterviewRunner = Callable[["Session", StageJob, Callable[[WorkerEvent], None]], StageResult]


class WorkerFailed(OdinError):
    """A stage could not be completed by its worker; the run stays resumable."""


def _local_naive(dt: datetime) -> datetime:
    return dt.astimezone().replace(tzinfo=None) if dt.tzinfo else dt


def _stamp(dt: datetime) -> str:
    return _local_naive(dt).strftime("%Y-%m-%dT%H:%M:%S")


def _history_entry(stage: Stage, result: str, gate: str, at: str) -> dict[str, Any]:
    """A history entry's common fields; ``agent`` only for a stage that ran in a fresh context."""
    entry: dict[str, Any] = {"stage": stage.id, "result": result, "gate": gate, "at": at}
    if stage.resolved_agent.fresh:
        entry["agent"] = stage.resolved_agent.label
    return entry


def _copy_state(state: RunState) -> RunState:
    """A snapshot for readers, cheap even with a long history.

    The fold (:func:`odin_magic.runs.store.apply`) only appends history entries and
    replaces or updates containers, so the snapshot gets its own containers and
    shares the (never modified) history entries: treat them as read-only.
    """
    return state.model_copy(update={
        "history": list(state.history),
        "iterations": dict(state.iterations),
        "artifacts": dict(state.artifacts),
        "dry": state.dry.model_copy(update={"used": dict(state.dry.used)}) if state.dry is not None else None,
    })


# -- what an action needs (shared with front ends that check before driving in the background) --------

#: The status each pause-bound action applies to.
_NEEDS_STATUS = {"approve": "awaiting_approval", "revise": "awaiting_approval", "answer": "awaiting_answer"}


def require_status(state: RunState, action: str) -> None:
    """Raise :class:`RunRefused` when ``action`` (approve, revise, answer) does not apply to ``state``."""
    if state.status == _NEEDS_STATUS[action]:
        return
    where = f"run {state.run_id} is {state.status}"
    asking = "the interview waits for an answer: `answer TEXT` (`question` shows it)"
    if action == "approve":
        raise RunRefused(f"{where}, not waiting for approval",
                         hint=asking if state.status == "awaiting_answer" else "`run` continues it; `status` shows where it is")
    if action == "revise":
        raise RunRefused(f"{where}, not paused for review: revise applies to a stage awaiting approval",
                         hint=asking if state.status == "awaiting_answer" else "`step STAGE` re-runs any stage")
    raise RunRefused(f"no interview question is waiting ({where})",
                     hint="answers are for a deep-interview stage's questions; `status` shows the run")


def require_text(text: str | None, action: str) -> str:
    """The stripped feedback (``revise``) or answer (``answer``); empty is a :class:`UsageError`."""
    if text and text.strip():
        return text.strip()
    if action == "revise":
        raise UsageError("revise needs feedback: what should change", hint='revise "make the spec cover errors"')
    raise UsageError("the answer is empty", hint='answer "your answer" (or: you decide, skip)')


def require_task(task: str | None) -> str:
    """The stripped task; empty or whitespace only is a :class:`UsageError`."""
    task = (task or "").strip()
    if not task:
        raise UsageError("a run needs a task: one line saying what you are building", hint="--task TEXT")
    return task


def one_run_at_a_time(active: RunState) -> RunRefused:
    """The refusal to start a run while ``active`` is still active."""
    return RunRefused(
        f"run {active.run_id} (loop {active.loop}) is still {active.status}; one run per project at a time",
        hint=("answer its question with `odin answer TEXT`" if active.status == "awaiting_answer"
              else "finish it with `odin run` (or `odin approve` at a pause)") + ", or give it up with `odin abandon`",
    )


def damaged_blocks(run_id: str, damage: RunCorrupt) -> RunRefused:
    """The refusal to start or continue while a damaged run may still be active."""
    return RunRefused(
        f"run {run_id} is damaged and may still be active: {damage.message}",
        hint=f"give it up with `odin abandon` (its files stay), or move .odin-loop/runs/{run_id} away; "
             "then start a new run",
    )


def require_stage(loop: Loop, stage_id: str) -> None:
    """Raise :class:`UsageError` when ``loop`` has no stage ``stage_id``."""
    ids = loop.stage_ids()
    if stage_id not in ids:
        raise UsageError(f"loop {loop.name!r} has no stage {stage_id!r}", hint=f"its stages: {', '.join(ids)}")


def require_not_paused(state: RunState) -> None:
    """Raise :class:`RunRefused` when ``state`` waits for the user: a step must not skip an approval or a question."""
    if state.status == "awaiting_approval":
        raise RunRefused(
            f"run {state.run_id} waits for your approval of stage {state.current_stage}; "
            "a step now would skip that approval",
            hint="approve it (`approve`), send it back with feedback (`revise TEXT`), or give the run up "
                 "(`abandon`) first")
    if state.status == "awaiting_answer":
        raise RunRefused(
            f"run {state.run_id} waits for your answer to stage {state.current_stage}'s question; "
            "a step now would skip it",
            hint="answer it (`answer TEXT`), or give the run up (`abandon`) first")


def never_ran(state: RunState, loop: Loop) -> list[str]:
    """The stages of ``loop`` with no gate evaluation in ``state``'s history (skipped by steps)."""
    seen = {e.stage for e in state.history}
    return [sid for sid in loop.stage_ids() if sid not in seen]


def done_text(state: RunState, loop: Loop) -> str:
    """The done message; it names the stages that never ran (a run that steps skipped ahead)."""
    skipped = never_ran(state, loop)
    return f"run {state.run_id} done" + (f"; never ran: {', '.join(skipped)}" if skipped else "")


@dataclass
class Session:
    """One drive of one run: the locked run, its loop, the worker, what has passed."""

    handle: RunHandle
    loop: Loop
    worker: Worker | None  # None when the action performs no stage (abandon)
    passed: set[str] = field(default_factory=set)
    answer: str | None = None  # the user's reply to a waiting interview question (read by the runner)
    confinement: Confinement | None = None  # the project and the run dir, resolved as the drive first needs them
    places: dict[str, tuple[dict[str, Placement], dict[str, Placement]]] = field(default_factory=dict)  # by stage

    @property
    def state(self) -> RunState:
        return self.handle.state


@dataclass
class _ForkUndo:
    """What a fork that fails half-way puts back (see Engine._undo_fork)."""

    source_id: str
    was: dict[str, Any] | None = None  # the source's status, forked_to and ended_at before the fork abandoned it
    fork_id: str | None = None  # the new run, once its making began


class Engine:
    def __init__(
        self,
        project_dir: Path | str,
        worker: Worker | None = None,
        clock: Clock | None = None,
        listener: Listener | None = None,
        command: str | None = None,
        interview_runner: InterviewRunner | None = None,
        reports: bool = True,
    ):
        self.project_dir = Path(project_dir).resolve()
        self.store = RunStore(self.project_dir)
        self.catalog = LoopCatalog(self.project_dir)
        self.worker = worker
        self.clock: Clock = clock or datetime.now
        self.listener = listener
        self.command = command or command_line()
        self.interview_runner = interview_runner
        self.reports = reports  # write report.md / report.ipynb when a drive leaves its run ended or blocked
        self.unattended = False  # never wait for a person: a pause blocks the run (odin run --unattended)
        self._stop = threading.Event()
        self._drive_lock = threading.Lock()
        self._view_lock = threading.RLock()
        self._session: Session | None = None
        self._checkpoints: Checkpoints | None = None

    # -- public API ---------------------------------------------------------

    def start(self, loop_name: str, task: str, dry: DryOptions | bool | None = None, *, loop: Loop | None = None) -> RunState:
        """Create a run of ``loop_name`` for ``task`` and drive it. Refused while another run is active."""
        task = require_task(task)
        if loop is None:
            loop = self.catalog.load(loop_name)
        if dry is True:
            dry = DryOptions()
        elif dry is False:
            dry = None
        if dry is not None:
            parse_gate_script(",".join(dry.gates), loop)  # every item names a stage of this loop
            worker: Worker = DryWorker(dry, self._stop)
        else:
            worker = self._model_worker()
        with self._driving():
            now = self.clock()
            at = _stamp(now)
            try:
                with self.store.project_lock():
                    active, damaged = self._scan(tell=False)
                    if active is not None:
                        raise one_run_at_a_time(active)
                    if damaged is not None:
                        raise damaged_blocks(*damaged)
                    run_id = self.store.new_run_id(_local_naive(now), loop.name)
                    created = {
                        "run_id": run_id,
                        "loop": loop.name,
                        "task": task,
                        "started_at": at,
                        "current_stage": loop.stages[0].id,
                        "max_iterations": loop.max_iterations,
                        "dry": dry.model_dump() if dry is not None else None,
                    }
                    handle = self.store.create(created, loop.model_dump(mode="json"), at, self.command)
            except filelock.Timeout:
                raise RunLocked("another process is creating a run in this project", hint="try again") from None
            with self._held(Session(handle, loop, worker)) as s:
                self._emit("run_started", s.state, text=f"{loop.name}: {task}", data={"dry": dry is not None})
                return self._drive(s)

    def run(self) -> RunState:
        """Continue the active run; at a pause this approves the paused stage first (seed 000, step 1)."""
        with self._driving(), self._open_active() as s:
            if s.state.status == "awaiting_approval":
                self._approve(s)
            elif s.state.status == "awaiting_answer":
                self._ask_again(s)
            elif s.state.status == "blocked":
                self._unblock(s)
            return self._drive(s)

    def answer(self, text: str) -> RunState:
        """Answer the deep interview's waiting question, then drive on (the next question, or the gate)."""
        text = require_text(text, "answer")
        with self._driving(), self._open_active() as s:
            require_status(s.state, "answer")
            self._ask_again(s, answer=text)
            return self._drive(s)

    def approve(self) -> RunState:
        with self._driving(), self._open_active() as s:
            require_status(s.state, "approve")
            self._approve(s)
            return self._drive(s)

    def revise(self, feedback: str) -> RunState:
        """Re-run the paused stage with ``feedback`` handed to its worker, then gate it again."""
        feedback = require_text(feedback, "revise")
        with self._driving(), self._open_active() as s:
            require_status(s.state, "revise")
            self._record(s, "revised", stage=s.state.current_stage, set={"status": "running", "feedback": feedback})
            self._emit("revised", s.state, stage=s.state.current_stage, text=feedback)
            return self._drive(s)

    def step(self, stage_id: str) -> RunState:
        """Run exactly one stage and its gate without advancing; current_stage becomes ``stage_id``.

        Refused while the run waits for the user (approve, revise, answer or abandon first). Without an
        active run, the most recent run when it failed is reopened (a ``reopened`` record) and stepped."""
        with self._driving(), self._open_active(reopen_failed=True) as s:
            require_stage(s.loop, stage_id)
            require_not_paused(s.state)
            self._record(s, "step", stage=stage_id, set={"current_stage": stage_id, "status": "running"})
            if self._check_timeout(s):
                return self._snapshot(s)
            self._run_stage(s, s.loop.stage(stage_id), stepping=True)
            if s.state.status == "awaiting_approval":
                self._announce_pause(s)
            return self._snapshot(s)

    def abandon(self) -> RunState:
        with self._driving():
            active, damaged = self._scan(tell=False)
            if active is None and damaged is not None:
                return self._abandon_damaged(*damaged)
        with self._driving(), self._open_active(need_worker=False) as s:
            self._record(s, "abandoned", set={"status": "abandoned", "ended_at": self._now()})
            self._emit("abandoned", s.state, text=f"run {s.state.run_id} abandoned")
            return self._snapshot(s)

    # -- checkpoints: diff, revert, fork (odin_magic/runs/diffs.py, odin_magic/engine/rewind.py) --------------

    def diff(self, selector: str | None = None, run_id: str | None = None) -> diffs.StageDiff:
        """What a stage execution changed: ``selector`` is a stage id, an execution number, or None (the latest)."""
        return diffs.stage_diff(self.checkpoints, self.status(run_id), selector)

    def revert(self, selector: str | None = None, to: int | None = None, force: bool = False) -> RunState:
        """Restore the tree to the checkpoint before a stage execution; the run continues from that stage.
        Files changed by hand since the run last left the tree are kept (named in the event) unless ``force``."""
        with self._driving(), self._open_active(need_worker=False, reopen_failed=True) as s:
            plan = rewind.revert_plan(self.checkpoints, s.state, selector, to, force)
            tree = rewind.apply(self.checkpoints, plan)
            self._record(s, "reverted", stage=plan.stage, to=plan.target, execution=plan.number,
                         restored=plan.restore, kept=plan.kept, set={
                             "current_stage": plan.stage, "status": "running", "blocked": None, "repeats": None,
                             "checkpoint": None, "feedback": None, "tree": tree, "failure_reason": None,
                             "ended_at": None})
            kept = f"; kept your changes to {', '.join(plan.kept)} (--force reverts them too)" if plan.kept else ""
            self._emit("reverted", s.state, stage=plan.stage, data={"restored": plan.restore, "kept": plan.kept},
                       text=f"reverted to before execution {plan.number} ({plan.stage}): {len(plan.restore)} file(s) "
                            f"restored{kept}; `odin run` continues from {plan.stage}")
            return self._snapshot(s)

    def fork(self, from_point: int | None = None, run_id: str | None = None, force: bool = False) -> RunState:
        """A new run from point ``from_point`` (history entries kept) of ``run_id`` (default: the active or
        latest run), the tree restored to that point; the old run is abandoned with a pointer to the fork.
        Refused while another run is active. A fork that fails half-way is undone (:meth:`_undo_fork`)."""
        with self._driving():
            source = self.status(run_id)
            point = rewind.fork_point(source, from_point)
            loop = self.loop_for(source.run_id)
            plan = rewind.plan(self.checkpoints, source, point.target, point.current_stage, point.number, force)
            undo = _ForkUndo(source.run_id)
            with self._undone_on_failure(undo):
                handle = self._start_fork(source, point, loop, undo)
                with self._held(Session(handle, loop, None, {e.stage for e in point.entries if e.result == "pass"})) as s:
                    rewind.copy_run_files(self.store.run_dir(source.run_id), handle.run_dir)
                    tree = rewind.apply(self.checkpoints, plan)
                    fields = rewind.forked_fields(point)
                    fields["set"].update(tree=tree, forked_from=f"{source.run_id}@{point.number}")
                    self._record(s, "forked", source=source.run_id, point=point.number, kept=plan.kept, **fields)
                    self._emit("forked", s.state, stage=point.current_stage,
                               text=f"run {s.state.run_id} forked from {source.run_id} at point {point.number}; "
                                    f"`odin run` continues it from {point.current_stage}")
                    return self._snapshot(s)

    @contextlib.contextmanager
    def _undone_on_failure(self, undo: _ForkUndo) -> Iterator[None]:
        """A fork's work: on any failure it is undone, and a locked project or a system error (a full disk, no
        permission) is one line, not a traceback."""
        try:
            yield
        except BaseException as exc:
            self._undo_fork(undo, exc)
            if isinstance(exc, filelock.Timeout):
                raise RunLocked("another process is creating a run in this project", hint="try again") from None
            if isinstance(exc, OSError):
                raise OdinError(f"the fork failed: {exc}", hint="mend what the error names, then fork again; "
                                f"run {undo.source_id} is as it was") from None
            raise

    def _start_fork(self, source: RunState, point: rewind.ForkPoint, loop: Loop, undo: _ForkUndo) -> RunHandle:
        """The fork's new run, made under the project lock once the source is abandoned: one run at a time is
        active (a fork of a past run is refused while another run is). ``undo`` learns what to put back."""
        now = self.clock()
        with self.store.project_lock():
            active, damaged = self._scan(tell=False)
            if active is not None and active.run_id != source.run_id:
                raise one_run_at_a_time(active)
            if active is None and damaged is not None and damaged[0] != source.run_id:
                raise damaged_blocks(*damaged)
            new_id = self.store.new_run_id(_local_naive(now), loop.name)
            undo.was = self._abandon_for_fork(source.run_id, new_id)
            created = {"run_id": new_id, "loop": loop.name, "task": source.task, "started_at": _stamp(now),
                       "current_stage": point.current_stage, "max_iterations": loop.max_iterations,
                       "dry": (source.dry.model_copy(update={"gates": [], "used": {}}).model_dump()
                               if source.dry is not None else None)}
            undo.fork_id = new_id
            return self.store.create(created, loop.model_dump(mode="json"), _stamp(now), self.command)

    def _abandon_for_fork(self, run_id: str, fork_id: str) -> dict[str, Any] | None:
        """Mark the source run abandoned with a pointer to the fork; returns its fields as they were (read under
        its lock, for an undo), or None when it was already abandoned for a fork (left as it is)."""
        handle, _ = self.store.open(run_id, self.command, self._now())
        try:
            state = handle.state
            if state.status == "abandoned" and state.forked_to is not None:
                return None
            was = {"status": state.status, "forked_to": state.forked_to, "ended_at": state.ended_at}
            ended = {"ended_at": self._now()} if state.ended_at is None else {}
            handle.record("abandoned", self._now(), set={"status": "abandoned", "forked_to": fork_id, **ended})
            return was
        finally:
            handle.close()

    def _undo_fork(self, undo: _ForkUndo, exc: BaseException) -> None:
        """A fork that failed half-way, under the project lock (no run starts meanwhile): its new run (when its
        log began) is abandoned with the reason, then the source run (when the fork abandoned it) gets back
        the fields it had. A failure here is told as a notice: the fork's own failure, raised after, counts."""
        reason = f"the fork failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        steps = []
        if undo.fork_id is not None and self.store.began(undo.fork_id):
            steps.append((undo.fork_id, "abandoned", {"status": "abandoned", "ended_at": self._now(),
                                                      "failure_reason": reason}))
        if undo.was is not None:
            steps.append((undo.source_id, "fork_undone", undo.was))
        if not steps:
            return
        try:
            with self.store.project_lock():
                for run_id, kind, fields in steps:  # each on its own: one that fails does not skip the other
                    try:
                        handle, _ = self.store.open(run_id, self.command, self._now())
                        try:
                            handle.record(kind, self._now(), set=fields)
                        finally:
                            handle.close()
                    except (OSError, OdinError) as failed:
                        self._emit("notice", run_id, text=f"the failed fork could not be undone in run {run_id}: "
                                                          f"{failed}")
        except filelock.Timeout:
            self._emit("notice", undo.source_id, text="the failed fork could not be undone: the project is locked "
                                                      f"by another process; run {undo.source_id} stays abandoned")

    def request_stop(self) -> None:
        """End the current drive after the current step; the run stays running and resumable."""
        self._stop.set()

    @property
    def driving(self) -> bool:
        return self._drive_lock.locked()

    def status(self, run_id: str | None = None) -> RunState:
        """The run ``run_id``, else the active run, else the latest run."""
        with self._view_lock:
            s = self._session
            if s is not None and (run_id is None or run_id == s.state.run_id):
                return _copy_state(s.state)
        if run_id is not None:
            return self._read(run_id).state
        chosen = None
        for loaded in self._readable_runs():  # oldest first: the active run, else the last one read
            chosen = loaded
            if loaded.state.active:
                break
        if chosen is None:
            raise NoActiveRun(f"no runs in {self.project_dir}", hint="start one with `odin run LOOP --task TEXT`")
        self._notice_if(chosen)
        return chosen.state

    def runs(self, damaged: list[tuple[str, RunCorrupt]] | None = None) -> list[RunState]:
        """Every readable run of the project, newest first (an unreadable one is told as a notice, and
        kept in ``damaged`` when given)."""
        out = []
        with self._view_lock:
            live = _copy_state(self._session.state) if self._session else None
        for loaded in self._readable_runs(damaged):
            if live is not None and live.run_id == loaded.state.run_id:
                out.append(live)
            else:
                self._notice_if(loaded)
                out.append(loaded.state)
        return out[::-1]

    def active(self) -> RunState | None:
        with self._view_lock:
            if self._session is not None and self._session.state.active:
                return _copy_state(self._session.state)
        return self._find_active()

    def loop_for(self, run_id: str) -> Loop:
        """The loop as it was when the run started (the run's own copy); unreadable is :class:`RunCorrupt`."""
        data = self.store.loop_data(run_id)
        try:
            # lax: a run started before loop types were strict keeps the values it was started with
            return Loop.model_validate(data, strict=False)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "the top level"
            raise RunCorrupt(
                f"{self.store.run_dir(run_id) / LOOP_NAME}: the run's copy of its loop is not a valid loop "
                f"({exc.error_count()} error(s); first, at {where}: {first['msg']})",
                hint="restore it from a backup, or move the run's directory away",
            ) from None

    def run_dir(self, run_id: str) -> Path:
        return self.store.run_dir(run_id)

    def record_interview(self, session: Session, summary: InterviewSummary) -> None:
        """For an interview runner: persist the interview's convergence (seed 000's write contract)."""
        # seed 000: after every round (``accepted`` only once the user accepted the residual ambiguity)
        self._record(session, "interview", save=True, interview=summary.model_dump(exclude_none=True))

    # -- opening runs ---------------------------------------------------------

    @contextlib.contextmanager
    def _driving(self) -> Iterator[None]:
        if not self._drive_lock.acquire(blocking=False):
            s = self._session
            which = f" run {s.state.run_id}" if s else ""
            raise RunLocked(f"this engine is already driving{which}", hint="wait for it, or request_stop() first")
        protect_process()  # the driver's environment (the key) is no child's to read, where the OS allows
        try:
            self._stop.clear()
            yield
        finally:
            self._drive_lock.release()

    @contextlib.contextmanager
    def _open_active(self, need_worker: bool = True, reopen_failed: bool = False) -> Iterator[Session]:
        """The active run, opened for driving; with ``reopen_failed``, else the latest run when it failed."""
        active, damaged = self._scan_loaded(tell=False)  # opening repairs the run and tells, below
        if active is None and reopen_failed:
            active = self._latest_failed()
        if active is None and damaged is not None:
            raise damaged_blocks(*damaged)
        if active is None:
            raise NoActiveRun(
                f"no active run in {self.project_dir}",
                hint="start one with `odin run LOOP --task TEXT` (`odin runs` lists past runs)",
            )
        handle, notice = self.store.open(active.state.run_id, self.command, self._now(), known=active)
        try:
            reopening = reopen_failed and handle.state.status == "failed"
            if not handle.state.active and not reopening:  # changed between the scan and the lock
                raise NoActiveRun(f"run {handle.run_id} is {handle.state.status}", hint="`odin runs` lists the runs")
            loop = self.loop_for(handle.run_id)
            worker = self._worker_for(handle.state) if need_worker else None
        except BaseException:
            handle.close()
            raise
        passed = {e.stage for e in handle.state.history if e.result == "pass"}
        with self._held(Session(handle, loop, worker, passed)) as session:
            if notice:
                self._record(session, "notice", text=notice)
                self._emit("notice", session.state, text=notice)
            if reopening:
                self._reopen(session)
            yield session

    def _latest_failed(self) -> Loaded | None:
        """The project's most recent run when it failed (the one a step may reopen), else None."""
        latest = None
        for loaded in self._readable_runs():
            latest = loaded
        return latest if latest is not None and latest.state.status == "failed" else None

    def _reopen(self, s: Session) -> None:
        """A failed run becomes running again (recorded as a ``reopened`` record, with why it had failed)."""
        was = s.state.failure_reason or "failed"
        self._record(s, "reopened", stage=s.state.current_stage, was=was,
                     set={"status": "running", "failure_reason": None, "ended_at": None})
        self._emit("reopened", s.state, stage=s.state.current_stage,
                   text=f"run {s.state.run_id} reopened (it had failed: {was})")

    @contextlib.contextmanager
    def _held(self, session: Session) -> Iterator[Session]:
        """``session`` as the one readers see while it drives; its run is closed after (state saved, lock released)."""
        with self._view_lock:
            self._session = session
        try:
            yield session
        finally:
            with self._view_lock:
                self._session = None
            if self.reports and session.state is not None and session.state.status in runreport.END_STATUSES:
                self._write_report(session)  # while the run is still locked: no later drive's report is overwritten
            session.handle.close()
            self._remember(session)

    def _remember(self, s: Session) -> None:
        """A run that ended (not a dry one) leaves its decisions and lessons in the project's memory."""
        if s.state is None or s.state.dry is not None or s.state.status not in ("done", "failed", "abandoned"):
            return
        try:
            memory.record_run(self.project_dir, s.handle.run_dir, s.loop)
        except (OSError, OdinError, ValueError) as exc:  # memory is a help, never a reason for a run to fail
            self._emit("notice", s.state, text=f"the project memory could not be written: {exc}")

    def _write_report(self, s: Session) -> None:
        """The run's report (see runreport); a failure to write it is told, never fatal to the run."""
        try:
            path = runreport.write_report(s.state, s.loop, s.handle.run_dir)
        except Exception as exc:  # noqa: BLE001 - a report must not break a run that has ended
            self._emit("notice", s.state, text=f"the run's report could not be written: {exc!r}")
            return
        self._emit("report", s.state, text=f"report: {path} (and {path.with_suffix('.ipynb').name})",
                   data={"path": str(path)})

    def _find_active(self, tell: bool = True) -> RunState | None:
        return self._scan(tell)[0]

    def _scan(self, tell: bool = True) -> tuple[RunState | None, tuple[str, RunCorrupt] | None]:
        """The active run; else a damaged run that may still be active (it blocks a new run)."""
        loaded, damaged = self._scan_loaded(tell)
        return (loaded.state if loaded is not None else None), damaged

    def _scan_loaded(self, tell: bool = True) -> tuple[Loaded | None, tuple[str, RunCorrupt] | None]:
        """:meth:`_scan`, the active run as loaded (opening it then reads its state.json no more)."""
        damaged: list[tuple[str, RunCorrupt]] = []
        for loaded in self._readable_runs(damaged):
            if loaded.state.active:
                if tell:
                    self._notice_if(loaded)
                return loaded, None
        return None, next(((rid, exc) for rid, exc in damaged if exc.may_be_active), None)

    def blocking_damage(self) -> tuple[str, RunCorrupt] | None:
        """A damaged run that may still be active when no readable run is: ``(run_id, damage)``."""
        active, damaged = self._scan(tell=False)
        return damaged if active is None else None

    def _abandon_damaged(self, run_id: str, damage: RunCorrupt) -> RunState:
        """Give up a damaged run: a mark beside it (its log is not written), so it no longer blocks."""
        at = self._now()
        self.store.mark_abandoned(run_id, at, self.command)
        known = damage.last_known
        if known is not None:
            state = known.model_copy(update={"status": "abandoned", "ended_at": at})
        else:
            state = RunState(run_id=run_id, loop="(unknown)", task="(unknown)", started_at=at,
                             current_stage="(unknown)", max_iterations=0, status="abandoned", ended_at=at,
                             failure_reason=damage.message)
        self._emit("abandoned", state, text=f"damaged run {run_id} abandoned (its files stay; {ABANDONED_MARK} marks it)")
        return state

    def _readable_runs(self, damaged: list[tuple[str, RunCorrupt]] | None = None) -> Iterator[Loaded]:
        """The project's runs, oldest first; an unreadable one is skipped and told (it must not hide the
        rest), and kept in ``damaged`` when given."""
        def unreadable(run_id: str, exc: RunCorrupt) -> None:
            if damaged is not None:
                damaged.append((run_id, exc))
            if not exc.abandoned:  # an abandoned one is listed by `odin runs`, and told no more
                self._emit("notice", run_id, text=f"run {run_id} is damaged: it cannot be read and is left out: {exc}")

        return self.store.iter_runs(unreadable)

    def _read(self, run_id: str) -> Loaded:
        loaded = self.store.load(run_id)
        self._notice_if(loaded)
        return loaded

    def _notice_if(self, loaded: Loaded) -> None:
        if loaded.notice:
            self._emit("notice", loaded.state, text=loaded.notice)

    def _worker_for(self, state: RunState) -> Worker:
        if state.dry is not None:
            return DryWorker(state.dry, self._stop)
        return self._model_worker()

    def _model_worker(self) -> Worker:
        if self.worker is None:
            from odin_magic.workers.config import Settings
            from odin_magic.workers.factory import make_worker  # the model SDK loads only for real runs

            self.worker = make_worker(Settings.from_env(), self.project_dir)
        return self.worker

    # -- the drive ------------------------------------------------------------

    def _drive(self, s: Session) -> RunState:
        while True:
            st = s.state
            approving = st.dry is not None and st.dry.approve_all
            if self.unattended and (st.status == "awaiting_answer" or st.status == "awaiting_approval" and not approving):
                self._block_unattended(s)
                break
            if st.status == "awaiting_approval":
                if approving:
                    self._approve(s)
                    continue
                self._announce_pause(s)
                break
            if st.status != "running":  # done, failed, abandoned, or awaiting_answer (already announced)
                break
            if self._stop.is_set():
                self._emit("stopped", st, stage=st.current_stage,
                           text=f"stopped before stage {st.current_stage}; `odin run` resumes the run")
                break
            if self._check_timeout(s):
                break
            try:
                self._run_stage(s, s.loop.stage(st.current_stage), stepping=False)
            except WorkerFailed as exc:
                if not self.unattended:
                    raise
                self._block_unattended(s, reason=exc.message)  # nobody to retry it now: blocked, report written
                break
        return self._snapshot(s)

    def _block_unattended(self, s: Session, reason: str | None = None) -> None:
        """An unattended drive never waits for a person: a pause (or a stage its worker could not complete,
        ``reason``) ends the drive with the run blocked."""
        stage, why = s.state.current_stage, s.state.status.replace("_", " ")
        blocked = {"kind": "unattended", "stage": stage,
                   "reason": reason or f"{stage} is {why}, and the run is unattended (nobody can answer)",
                   "fix": "look at the run (`odin status`, `odin report`); `odin run` puts it back at its pause "
                          "for you to approve or revise"}
        self._record(s, "blocked", stage=stage, set={"status": "blocked", "blocked": blocked})
        self._announce_block(s)

    def _ask_again(self, s: Session, answer: str | None = None) -> None:
        """Run the waiting interview stage again (with the user's ``answer``): timed like any stage."""
        if not self._check_timeout(s):
            s.answer = answer
            self._run_stage(s, s.loop.stage(s.state.current_stage), stepping=False)

    def _unblock(self, s: Session) -> None:
        """Continue a blocked run: an environment block re-checks the gate alone (the work is done)."""
        blocked = s.state.blocked
        last = s.state.history[-1] if s.state.history else None
        paused = last is not None and last.stage == s.state.current_stage and last.gate == "ai-pending" \
            and last.result == "pass"
        # an unattended drive's pause goes back to being a pause: the person now at the wheel decides it
        status = "awaiting_approval" if blocked is not None and blocked.kind == "unattended" and paused else "running"
        self._record(s, "unblocked", stage=s.state.current_stage,
                     set={"status": status, "blocked": None, "repeats": None})
        self._emit("unblocked", s.state, stage=s.state.current_stage,
                   text=f"{s.state.current_stage}: continuing after {blocked.kind if blocked else 'a block'}")
        if blocked is not None and blocked.kind == "environment" and not self._check_timeout(s):
            self._run_stage(s, s.loop.stage(blocked.stage), stepping=False, perform=False)

    def _interview_runner_for(self, s: Session, stage: Stage) -> InterviewRunner | None:
        """The runner for a deep-interview stage of a real run (dry runs treat it like any stage)."""
        if stage.interview is None or s.state.dry is not None:
            return None
        if self.interview_runner is None:
            from odin_magic.interview.claude import make_interview_model
            from odin_magic.interview.runner import DeepInterviewRunner

            settings = getattr(s.worker, "settings", None)
            if settings is None:
                from odin_magic.workers.config import Settings

                settings = Settings.from_env()
            project_dir = self.project_dir
            self.interview_runner = DeepInterviewRunner(
                lambda: make_interview_model(settings, project_dir), record=self.record_interview, clock=self.clock)
        return self.interview_runner

    def _asked(self, s: Session, stage: Stage, asking: AwaitingAnswer) -> None:
        """The interview waits for an answer: record usage and the summary, pause as awaiting_answer."""
        if self._add_usage(s, stage.id, asking.usage):
            return
        self._record(s, "awaiting_answer", stage=stage.id, set={"status": "awaiting_answer", "current_stage": stage.id},
                     interview=asking.summary.model_dump(exclude_none=True))
        self._emit("question", s.state, stage=stage.id, text=asking.text,
                   data={"question": asking.question.model_dump(mode="json")})
        self._emit("awaiting_answer", s.state, stage=stage.id,
                   text=f"{stage.id} waits for your answer: `odin answer TEXT` (`odin question` shows it again)")

    def _placements(self, s: Session, stage: Stage) -> tuple[dict[str, Placement], dict[str, Placement]]:
        """Where the stage's produces and consumes live; refused (a clear error naming the link, the run
        stays resumable) when one's real path leaves the project and the run dir through a symbolic link."""
        run_dir = s.handle.run_dir
        if stage.id not in s.places:  # where they live by name does not change during a drive; the links may
            s.places[stage.id] = (placements(stage.produces, self.project_dir, run_dir, stage.id),
                                  placements(stage.consumes, self.project_dir, run_dir, stage.id))
        produces, consumes = s.places[stage.id]
        if s.confinement is None:
            s.confinement = Confinement((self.project_dir, run_dir))
        try:
            confine({**consumes, **produces}, s.confinement, self.project_dir, stage.id)
        except PathEscapes as exc:
            self._emit("stopped", s.state, stage=stage.id, text=exc.message)
            raise
        return produces, consumes

    def _run_stage(self, s: Session, stage: Stage, stepping: bool, perform: bool = True) -> None:
        """Perform ``stage`` (unless ``perform`` is False: only its gate is evaluated again) and gate it."""
        st = s.state
        run_dir = s.handle.run_dir
        agent = stage.resolved_agent
        produces, consumes = self._placements(s, stage)
        for p in produces.values():
            (p.path if p.is_dir else p.path.parent).mkdir(parents=True, exist_ok=True)
        last_failure = st.history[-1].reason if st.history and st.history[-1].result == "fail" else None
        job = StageJob(
            loop=s.loop, stage=stage, task=st.task, run_id=st.run_id, project_dir=self.project_dir,
            run_dir=run_dir, agent=agent, consumes={k: v.path for k, v in consumes.items()},
            produces={k: v.path for k, v in produces.items()}, feedback=st.feedback,
            last_failure=last_failure, attempt=st.iterations.get(stage.id, 0),
            memory=memory.relevant(self.project_dir, stage, s.loop), spent=st.usage.total,
        )

        def sink(ev: WorkerEvent) -> None:
            self._emit("worker", s.state, stage=ev.stage, text=ev.text, data={"kind": ev.kind})

        runner = self._interview_runner_for(s, stage)  # a deep-interview stage goes to the interview runner
        before = self._checkpoint_before(s, stage) if perform else None
        if perform:
            self._emit("stage_started", st, stage=stage.id, text=stage.display_title,
                       data={"agent": agent.label, "fresh": agent.fresh, "step": stepping, "feedback": st.feedback})
        try:
            result = (StageResult() if not perform else
                      runner(s, job, sink) if runner is not None else s.worker.perform(job, sink))
        except AwaitingAnswer as asking:
            self._asked(s, stage, asking)
            return
        except WorkerError as exc:
            if self._add_usage(s, stage.id, exc.usage):
                return  # what the stage spent before failing put the run over budget
            self._emit("stopped", st, stage=stage.id, text=f"stage {stage.id} could not be completed: {exc}")
            raise WorkerFailed(
                f"stage {stage.id!r} of run {st.run_id} could not be completed: {exc}",
                hint="the run is still running; `odin run` retries the stage",
            ) from None
        if self._add_usage(s, stage.id, result.usage):
            return
        self._placements(s, stage)  # the stage's work may have put a link where an artifact belongs
        if perform and (saved := reporting.save_report(stage, produces, result.report)):
            sink(WorkerEvent("info", stage.id, f"the {agent.label} report was saved as {saved}"))
        ckpt = self._checkpoint_after(before) if before is not None else None

        def judge_job(commands) -> JudgeJob:
            return JudgeJob(
                loop=s.loop, stage=stage, task=st.task, run_id=st.run_id, project_dir=self.project_dir,
                run_dir=run_dir, artifacts={k: v.path for k, v in produces.items()}, commands=commands,
                concerns=[f"{c.stage}: {c.text}" for c in st.concerns[-judging.CONCERNS_SHOWN:]],
                memory=job.memory,
            )

        def find_context(job: JudgeJob, verdict) -> tuple[str, Usage]:
            found = s.worker.perform(judging.explore_job(job, verdict), sink)
            return found.summary, found.usage

        def on_command(ev) -> None:
            self._emit("gate_command", s.state, stage=stage.id, text=ev.cmd,
                       data={"exit_code": ev.exit_code, "timed_out": ev.timed_out, "duration_s": ev.duration_s})

        run_commands = st.dry is None or st.dry.run_commands
        judge = runner if runner is not None and hasattr(runner, "judge") else s.worker
        out_of_scope = self._enforce_scope(stage, ckpt, run_dir) if ckpt is not None else None
        env = gates.CommandEnv(self.project_dir, run_dir, st.run_id, stage.id)
        try:
            outcome = out_of_scope or gates.evaluate(
                stage, produces, judge_job, judge, sink,
                env=env, cwd=self.project_dir, run_commands=run_commands, on_command=on_command,
                find_context=find_context,
            )
        except WorkerError as exc:
            if self._add_usage(s, stage.id, exc.usage):
                return
            self._emit("stopped", st, stage=stage.id, text=f"the judge of stage {stage.id} failed: {exc}")
            raise WorkerFailed(
                f"the gate of stage {stage.id!r} could not be judged: {exc}",
                hint="the run is still running; `odin run` re-runs the stage and its gate",
            ) from None
        outcome.edit_checks = result.edit_checks
        outcome.changes = [c.to_dict() for c in ckpt.changes] if ckpt is not None else []
        outcome.risky = scope.risky(s.loop, ckpt.changes) if ckpt is not None else []
        if outcome.verdict is not None:
            self._emit("gate_verdict", st, stage=stage.id, text="pass" if outcome.passed else "fail",
                       data=outcome.verdict.model_dump())
        if self._add_usage(s, stage.id, outcome.judge_usage):
            return
        if outcome.passed and run_commands and stage.gate.mutate and stage.gate.commands:
            self._prove_gate(s, stage, outcome, self._mutation_targets(s, consumes, produces, ckpt), env)
        done_check = None
        finishing = not stepping or stage.gate.pauses or bool(outcome.risky)  # a stepped pause is approved to done
        if outcome.passed and finishing and s.loop.next_stage_id(stage.id) is None:
            done_check = self._check_done(s, stage, run_commands, judge_job, sink, env, on_command,
                                          outcome_changed=any(not c["path"].endswith(".ipynb") for c in outcome.changes))
            outcome.completion = done_check.to_dict()
            if self._add_usage(s, stage.id, done_check.judge_usage):
                return
        at = self._now()
        number = len(st.history) + 1
        evidence = s.handle.evidence.append(outcome.evidence(stage.id, number, at))
        produced = {
            entry: project_relative(p.path, self.project_dir, p.is_dir)
            for entry, p in produces.items() if p.exists()
        }
        not_done = done_check is not None and not done_check.passed
        self._record_gate(s, stage, outcome, evidence, produced, stepping, at, ckpt,
                          hold_at=done_check.code_stage if not_done and not done_check.environment else
                          stage.id if not_done else None)
        if not_done:
            self._record_not_done(s, stage, done_check, evidence, at)

    def _mutation_targets(self, s: Session, consumes, produces, ckpt: StageCheckpoint | None) -> list[str]:
        """What mutants may touch: the Python files the run has changed so far (from its first checkpoint to
        this stage's), else, without checkpoints, those under the stage's project-tree artifacts."""
        first = next((e.checkpoint for e in s.state.history if e.checkpoint), None) or (ckpt.before if ckpt else None)
        if ckpt is None or first is None:
            return mutation.targets(self.project_dir, [*consumes.values(), *produces.values()])
        return [c.path for c in self.checkpoints.changes(first, ckpt.after)
                if c.kind != "deleted" and c.path.endswith(".py") and not mutation.is_test_file(c.path)]

    def _prove_gate(self, s: Session, stage: Stage, outcome: gates.GateOutcome, files: list[str],
                    env: Mapping[str, str]) -> None:
        """The discrimination sensor: the gate's commands must fail on mutants of the code (see mutation)."""
        self._emit("worker", s.state, stage=stage.id, text="mutation: checking that the gate's commands can fail",
                   data={"kind": "info"})
        try:
            report = mutation.run_mutants(
                self.project_dir, files, stage.gate.commands, env, gates.run_command,
                baseline_s=sum(c.duration_s for c in outcome.commands), min_kill_ratio=s.loop.min_kill_ratio)
        except (OSError, shutil.Error) as exc:  # e.g. a file the scratch copy cannot read: not proven, said so
            report = mutation.MutationReport(min_kill_ratio=s.loop.min_kill_ratio,
                                             note=f"not proven: the project could not be copied for mutants: {exc}")
        outcome.mutation = report.to_dict()
        self._emit("worker", s.state, stage=stage.id, text=f"mutation: {report.summary()}", data={"kind": "info"})
        if not report.passed:
            outcome.passed, outcome.reason = False, report.reason()

    def _check_done(self, s: Session, stage: Stage, run_commands: bool, judge_job, sink,
                    env: Mapping[str, str], on_command, outcome_changed: bool) -> completion.CompletionReport:
        """Before the run may end: its acceptance criteria and the project's suite (see completion)."""
        changed = completion.changed_stages(s.handle.run_dir, s.state.history)
        code = completion.code_stage(s.loop, stage.id, changed + ([stage.id] if outcome_changed else []))
        code_artifacts = placements(code.produces, self.project_dir, s.handle.run_dir, code.id) if code else {}

        def criterion_job(synthetic: Stage) -> JudgeJob:
            job = judge_job([])
            return replace(job, stage=synthetic, artifacts={**job.artifacts, **{k: v.path for k, v in code_artifacts.items()}})

        def run(command):
            ev = gates.run_command(command, self.project_dir, env)
            on_command(ev)  # shown like the gate's own commands
            return ev

        try:
            report = completion.verify_completion(  # criteria are judged by the worker's judge, never an interview's
                s.loop, s.handle.run_dir, self.project_dir, run if run_commands else None,
                completion.criterion_judge(s.worker, criterion_job, sink), code, dry=s.state.dry is not None)
        except WorkerError as exc:
            self._add_usage(s, stage.id, exc.usage)
            self._emit("stopped", s.state, stage=stage.id, text=f"an acceptance criterion could not be judged: {exc}")
            raise WorkerFailed(f"an acceptance criterion of run {s.state.run_id} could not be judged: {exc}",
                               hint="the run is still running; `odin run` re-runs the last stage and its checks") from None
        self._emit("completion", s.state, stage=stage.id, text="\n".join(report.lines()), data=report.to_dict())
        return report

    def _record_not_done(self, s: Session, stage: Stage, report: completion.CompletionReport,
                         evidence: gate_evidence.EvidenceRef, at: str) -> None:
        """The last gate passed but the run may not end: blocked (environment), else a failure of the code stage."""
        if report.environment:
            blocked = {"kind": "environment", "stage": stage.id, "reason": "before done: " + report.reason(),
                       "fix": report.fix() + "; then `odin run` re-checks (no loopback was spent)"}
            self._record(s, "blocked", stage=stage.id, set={"status": "blocked", "blocked": blocked,
                                                             "current_stage": stage.id})
            self._announce_block(s)
            return
        code = s.loop.stage(report.code_stage)
        failure = gates.GateOutcome(False, "before done: " + (report.reason() or "not verified"))
        self._record_gate(s, code, failure, evidence, {}, False, at)

    # -- checkpoints (odin_magic/runs/checkpoints.py) ------------------------------------

    @property
    def checkpoints(self) -> Checkpoints:
        if self._checkpoints is None:
            self._checkpoints = Checkpoints(self.project_dir)
        return self._checkpoints

    def _checkpoint_before(self, s: Session, stage: Stage) -> str:
        """The checkpoint before this stage execution: a resumed execution (a crash, a worker failure,
        an interview question) keeps the one recorded when it began."""
        pending = s.state.checkpoint
        if pending is not None and pending.stage == stage.id and self.checkpoints.exists(pending.before):
            return pending.before
        before = self.checkpoints.snapshot()
        # no fsync of its own: the stage's gate record, appended after it to the same log, makes both durable
        # (one fsync per transition); a power cut before that re-runs the stage, which takes its checkpoint anew
        self._record(s, "checkpoint", save=False, sync=False, stage=stage.id,
                     set={"checkpoint": {"stage": stage.id, "before": before}})
        return before

    def _checkpoint_after(self, before: str) -> StageCheckpoint:
        after = self.checkpoints.snapshot()
        return StageCheckpoint(before, after, self.checkpoints.changes(before, after))

    def _enforce_scope(self, stage: Stage, ckpt: StageCheckpoint, run_dir: Path) -> gates.GateOutcome | None:
        """Revert what the stage changed outside its scope (odin_magic/engine/scope.py); the failed gate, or None."""
        if not ckpt.changes:
            return None
        rule = scope.rule_for(stage, self.project_dir, run_dir)
        bad = scope.violations(rule, ckpt.changes)
        if not bad:
            return None
        self.checkpoints.restore(ckpt.before, paths=[c.path for c in bad])
        return gates.GateOutcome(False, scope.violation_reason(rule, bad), reverted=[c.path for c in bad])

    def _record_gate(self, s: Session, stage: Stage, outcome: gates.GateOutcome,
                     evidence: gate_evidence.EvidenceRef, produced: dict[str, str], stepping: bool, at: str,
                     ckpt: StageCheckpoint | None = None, hold_at: str | None = None) -> None:
        """Record a gate outcome and where it sends the run; ``hold_at``: a pass that neither pauses nor
        ends the run (the checks before done failed): it waits at that stage, and the next record says why
        (a crash before it resumes there, at the stage whose work the checks send it back to)."""
        st = s.state
        passed, reason = outcome.passed, outcome.reason
        pauses = stage.gate.pauses or bool(outcome.risky)  # a risky change needs a human's sign-off
        entry = _history_entry(stage, "pass" if passed else "fail", "ai-pending" if pauses and not hold_at else "ai", at)
        if not passed:
            entry["reason"] = reason
        entry["evidence"] = evidence.path
        if ckpt is not None:
            entry.update(checkpoint=ckpt.before, after=ckpt.after)
        changes: dict[str, Any] = {"feedback": None, "status": "running", "checkpoint": None}
        if ckpt is not None:
            changes["tree"] = ckpt.after
        if produced:
            changes["artifacts"] = produced
        if st.dry is not None and isinstance(s.worker, DryWorker) and s.worker.used(stage.id) is not None:
            changes["dry_used"] = {stage.id: s.worker.used(stage.id)}  # the script's position, not its rest
        if passed:
            if stage.id not in s.passed:
                changes["no_progress"] = 0
            if routing.streak_after_pass(st.repeats, stage.id):
                changes["repeats"] = None
            if hold_at:
                changes["current_stage"] = hold_at
            elif pauses:
                changes.update(status="awaiting_approval", current_stage=stage.id)
            elif stepping:
                changes["current_stage"] = stage.id
            else:
                nxt = s.loop.next_stage_id(stage.id)
                if nxt is None:
                    changes.update(status="done", ended_at=at)
                else:
                    changes["current_stage"] = nxt
        else:
            route = routing.route(stage.id, reason, outcome.commands, outcome.missing, st.repeats, s.loop.max_repeats,
                                  judge_status=outcome.judge_status)
            entry["failure"] = route.failure
            if route.failure == "blocked" and ckpt is not None:  # BLOCKED: undo the stage, then ask the human
                undone = self.checkpoints.restore(ckpt.before, paths=[
                    c.path for c in ckpt.changes if not scope.protected(c.path)])
                route.blocked.reason += f" (the stage's changes were reverted: {len(undone)} file(s))"
            changes.update(self._failure_changes(s, stage, route, reason, stepping, at))
        concerns = [{"stage": stage.id, "text": c} for c in judging.concerns_of(outcome.verdict)] if passed else []
        self._record(s, "gate", stage=stage.id, entry=entry, set=changes, evidence_sha256=evidence.sha256,
                     **({"concerns": concerns} if concerns else {}))
        if passed:
            s.passed.add(stage.id)
            self._emit("gate_passed", s.state, stage=stage.id, text=entry["gate"],
                       data={"evidence": evidence.path, "changes": outcome.changes})
        else:
            self._emit("gate_failed", s.state, stage=stage.id, text=reason or "",
                       data={"evidence": evidence.path, "next_stage": s.state.current_stage,
                             "iterations": s.state.iterations.get(stage.id, 0),
                             "loops_back": s.state.status == "running", "changes": outcome.changes})
        if s.state.status == "done":
            self._emit("done", s.state, text=done_text(s.state, s.loop), data={"never_ran": never_ran(s.state, s.loop)})
        elif s.state.status == "failed":
            self._emit("failed", s.state, stage=stage.id, text=s.state.failure_reason or "")
        elif s.state.status == "blocked":
            self._announce_block(s)

    def _failure_changes(self, s: Session, stage: Stage, route: routing.Route, reason: str | None,
                         stepping: bool, at: str) -> dict[str, Any]:
        """Where a failed gate sends the run: blocked (environment: no loopback spent), failed (a cap),
        blocked after counting (repeated), or the loopback."""
        st = s.state
        if route.failure in ("environment", "blocked"):  # no loopback: the human resolves it, then `run`
            return {"status": "blocked", "blocked": route.blocked.model_dump(), "current_stage": stage.id}
        total, stuck = st.total_iterations + 1, st.no_progress + 1
        changes: dict[str, Any] = {"iterations": {stage.id: st.iterations.get(stage.id, 0) + 1},
                                   "total_iterations": total, "no_progress": stuck,
                                   "repeats": route.streak.model_dump()}
        if total > st.max_iterations:
            changes.update(status="failed", ended_at=at, failure_reason=(
                f"total_iterations {total} exceeded max_iterations {st.max_iterations}; "
                f"blocked at stage {stage.id}: {reason}"))
        elif s.loop.max_no_progress and stuck >= s.loop.max_no_progress:
            changes.update(status="failed", ended_at=at, failure_reason=(
                f"no progress: {stuck} consecutive loopbacks without a new gate passing "
                f"(max_no_progress {s.loop.max_no_progress}); last failure at stage {stage.id}: {reason}"))
        else:  # a step stays on the stepped stage (seed 000); the drive loops back
            changes["current_stage"] = stage.id if stepping else (stage.gate.on_fail or stage.id)
            if route.blocked is not None:  # repeated: pause for the human instead of looping on
                changes.update(status="blocked", blocked=route.blocked.model_dump())
        return changes

    def _announce_block(self, s: Session) -> None:
        b = s.state.blocked
        self._emit("blocked", s.state, stage=b.stage, text=f"{b.stage} blocked ({b.kind}): {b.reason}; to do: {b.fix}",
                   data=b.model_dump())

    def _approve(self, s: Session) -> None:
        st = s.state
        stage = s.loop.stage(st.current_stage)
        at = self._now()
        entry = _history_entry(stage, "pass", "approved", at)
        nxt = s.loop.next_stage_id(stage.id)
        changes: dict[str, Any] = {"feedback": None}
        if nxt is None:
            changes.update(status="done", ended_at=at)
        else:
            changes.update(status="running", current_stage=nxt)
        self._record(s, "approved", stage=stage.id, entry=entry, set=changes)
        self._emit("approved", s.state, stage=stage.id, text=f"{stage.id} approved")
        if nxt is None:
            self._emit("done", s.state, text=done_text(s.state, s.loop), data={"never_ran": never_ran(s.state, s.loop)})

    # -- termination ------------------------------------------------------------

    def _fail(self, s: Session, reason: str, stage: str | None = None) -> None:
        self._record(s, "failed", stage=stage, set={"status": "failed", "failure_reason": reason, "ended_at": self._now()})
        self._emit("failed", s.state, stage=stage, text=reason)

    def _check_timeout(self, s: Session) -> bool:
        limit = s.loop.timeout_seconds
        if not limit:
            return False
        started = datetime.fromisoformat(s.state.started_at)
        elapsed = (_local_naive(self.clock()) - started).total_seconds()
        if elapsed <= limit:
            return False
        self._fail(s, f"timed out: the run has taken {elapsed:.0f} s, more than timeout_seconds {limit:g}",
                   s.state.current_stage)
        return True

    def _add_usage(self, s: Session, stage_id: str, usage: Usage) -> bool:
        """Record usage; True when it put the run over budget (the run is then failed)."""
        if usage == Usage():
            return False
        self._record(s, "usage", stage=stage_id, usage=usage.model_dump())
        total = s.state.usage.total
        self._emit("usage", s.state, stage=stage_id, data={"stage": usage.model_dump(), "total": total.model_dump()})
        budget = s.loop.budget
        why = budget.exceeded(total.total_tokens, total.cost_usd) if budget is not None else None
        if why is None:
            return False
        self._fail(s, f"over budget: {why}", stage_id)
        return True

    # -- plumbing -----------------------------------------------------------------

    def _now(self) -> str:
        return _stamp(self.clock())

    def _record(self, s: Session, type: str, save: bool | None = None, sync: bool = True, **fields: Any) -> None:
        """Append one event; state.json is refreshed when the handle's policy says so and when the drive ends."""
        with self._view_lock:
            s.handle.record(type, self._now(), save=save, sync=sync, **fields)

    def _snapshot(self, s: Session) -> RunState:
        with self._view_lock:
            return _copy_state(s.state)

    def _announce_pause(self, s: Session) -> None:
        stage = s.state.current_stage
        risky = self._risky_at_pause(s)
        concerns = s.state.concerns[-judging.CONCERNS_SHOWN:]
        carried = ("\n  concerns carried forward: " + "; ".join(f"{c.stage}: {c.text}" for c in concerns)) if concerns else ""
        self._emit("paused", s.state, stage=stage, text=(
            f"✅ {stage} gate passed; awaiting approval: "
            "`odin approve` (or `odin run`) to advance, `odin revise TEXT` to re-run it with feedback" + carried
            + (f"\n  sign-off needed: it changed {', '.join(risky)} (the loop's risk globs)" if risky else "")),
            data={"concerns": [c.model_dump() for c in concerns]})

    def _risky_at_pause(self, s: Session) -> list[str]:
        """The risky paths the paused stage changed (from its last evidence), for the pause text."""
        last = s.state.history[-1] if s.state.history else None
        if last is None or last.evidence is None or not s.loop.risk:
            return []
        try:
            return list(gate_evidence.read(s.handle.run_dir, last.evidence).get("risky") or [])
        except (OSError, ValueError):
            return []

    def _emit(self, kind: str, run: RunState | str, stage: str | None = None, text: str = "",
              data: dict[str, Any] | None = None) -> None:
        if self.listener is None:
            return
        run_id = run if isinstance(run, str) else run.run_id
        text, data = redact((text, data or {}))  # a live view never shows a secret
        try:
            self.listener(EngineEvent(kind=kind, run_id=run_id, stage=stage, text=text, data=data))
        except Exception as exc:  # a broken live view must not break the run
            print(f"odin: event listener failed on {kind!r}: {exc!r}", file=sys.stderr)


def simulate(project_dir: Path | str, loop_name: str, gate_spec: str | None = None,
             listener: Listener | None = None) -> dict[str, Any]:
    """Dry-run ``loop_name`` (resolved in ``project_dir``) in a throwaway directory, approving every human gate."""
    loop = LoopCatalog(Path(project_dir)).load(loop_name)
    script = parse_gate_script(gate_spec, loop)
    with tempfile.TemporaryDirectory(prefix="odin-simulate-") as tmp:
        engine = Engine(tmp, listener=listener, command="odin simulate", reports=False)
        state = engine.start(loop.name, f"simulate {loop.name}", dry=DryOptions(gates=script, approve_all=True), loop=loop)
    return {
        "path": [e.stage for e in state.history if e.gate != "approved"],
        "status": state.status,
        "iterations": state.iterations,
        "total_iterations": state.total_iterations,
        "history": [e.model_dump(mode="json", exclude_none=True) for e in state.history],
        **({"failure_reason": state.failure_reason} if state.failure_reason else {}),
    }
