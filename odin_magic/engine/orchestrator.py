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
import sys
import tempfile
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

import filelock
from pydantic import ValidationError

from odin_magic.core.errors import NoActiveRun, OdinError, RunLocked
from odin_magic.core.secrets import protect_process, redact
from odin_magic.engine import forking, pauses, rewind, run_end, sandboxing, stage as stage_run, tamper
from odin_magic.engine.requirements import (  # noqa: F401 - handed on: the front ends import them from here
    damaged_blocks, no_active_run, nothing_to_act_on, one_run_at_a_time, require_not_paused, require_stage, require_status,
    require_task, require_text
)
from odin_magic.render.text import continues
from odin_magic.engine.session import (  # noqa: F401 - handed on: Session, WorkerFailed, InterviewRunner
    Clock, InterviewRunner, Session, WorkerFailed, copy_state, local_naive, stamp
)
from odin_magic.learning import memory
from odin_magic.loop.catalog import LoopCatalog
from odin_magic.loop.params import apply_params
from odin_magic.loop.schema import Loop
from odin_magic.runs import diffs
from odin_magic.runs.checkpoints import Checkpoints
from odin_magic.runs.events import EngineEvent, Listener
from odin_magic.runs.fold import revert_reason
from odin_magic.runs.state import DryOptions, InterviewSummary, RunState, Usage
from odin_magic.runs.store import ABANDONED_MARK, LOOP_NAME, Loaded, RunCorrupt, RunStore, command_line
from odin_magic.runs.records import RecordType, StatePatch
from odin_magic.workers.base import Worker, drive_ended
from odin_magic.workers.dry import DryWorker, parse_gate_script


@dataclass(frozen=True)
class EngineOptions:
    """The Engine's rarely given keywords."""

    command: str | None = None  # the command line recorded with the run (default: this process's)
    interview_runner: InterviewRunner | None = None  # performs deep-interview stages (default: the Claude one)
    reports: bool = True  # write report.md / report.ipynb when a drive leaves its run ended or blocked
    checkpoints: bool = True  # checkpoint the project around each stage (off: nothing to restore, `odin simulate`)


class Engine:
    """Drives runs of a project's loops (see the module docstring and docs/architecture.md, "Engine API").

    ``options`` are :class:`EngineOptions`' keywords: ``command``, ``interview_runner``, ``reports``,
    ``checkpoints``."""

    def __init__(self, project_dir: Path | str, worker: Worker | None = None, clock: Clock | None = None,
                 listener: Listener | None = None, **options: Any):
        opts = EngineOptions(**options)
        command, interview_runner, reports = opts.command, opts.interview_runner, opts.reports
        self.project_dir = Path(project_dir).resolve()
        self.store = RunStore(self.project_dir)
        self.catalog = LoopCatalog(self.project_dir)
        self.worker = worker
        self.clock: Clock = clock or datetime.now
        self.listener = listener
        self.command = command or command_line()
        self.interview_runner = interview_runner
        self.reports = reports  # write report.md / report.ipynb when a drive leaves its run ended or blocked
        self.takes_checkpoints = opts.checkpoints
        self.unchanged_tree: tuple[Session, str] | None = None  # a drive's last checkpoint, nothing run since (stage.py)
        self.unattended = False  # never wait for a person: a pause blocks the run (odin run --unattended)
        self._stop = threading.Event()
        self._drive_lock = threading.Lock()
        self._view_lock = threading.RLock()
        self._session: Session | None = None
        self._checkpoints: Checkpoints | None = None

    # -- public API ---------------------------------------------------------

    def start(self, loop_name: str, task: str, dry: DryOptions | bool | None = None, *, loop: Loop | None = None, params: dict[str, str] | None = None) -> RunState:
        """Create a run of ``loop_name`` for ``task`` (``params``: --param values) and drive it; refused while a run is active."""
        task = require_task(task)
        loop = apply_params(loop or self.catalog.load(loop_name), params)  # the run keeps the loop with the values in it
        if dry is True:
            dry = DryOptions()
        elif dry is False:
            dry = None
        if dry is not None:
            parse_gate_script(",".join(dry.gates), loop)  # every item names a stage of this loop
            worker: Worker = DryWorker(dry, self._stop)
        else:
            worker = self._model_worker()
        unsandboxed = sandboxing.check(loop)  # `sandbox: bwrap` where bwrap cannot run: refused before a run exists
        with self._driving():
            now = self.clock()
            at = stamp(now)
            try:
                with self.store.project_lock():
                    active, damaged = self._scan(tell=False)
                    if active is not None:
                        raise one_run_at_a_time(active)
                    if damaged is not None:
                        raise damaged_blocks(*damaged)
                    run_id = self.store.new_run_id(local_naive(now), loop.name)
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
                sandboxing.tell(self, s, unsandboxed)
                return self._drive(s)

    def run(self) -> RunState:
        """Continue the active run; at a pause this approves the paused stage first (seed 000, step 1)."""
        with self._driving(), self._open_active() as s:
            if s.state.status == "awaiting_approval":
                pauses.approve(self, s)
            elif s.state.status == "awaiting_answer":
                self._ask_again(s)
            elif s.state.status == "blocked":
                self._unblock(s)
            return self._drive(s)

    def answer(self, text: str) -> RunState:
        """Answer the deep interview's waiting question, then drive on (the next question, or the gate)."""
        text = require_text(text, "answer")
        with self._driving(), self._open_active(action="answer") as s:
            self._ask_again(s, answer=text)
            return self._drive(s)

    def approve(self) -> RunState:
        with self._driving(), self._open_active(action="approve") as s:
            pauses.approve(self, s)
            return self._drive(s)

    def revise(self, feedback: str) -> RunState:
        """Re-run the paused stage with ``feedback`` handed to its worker, then gate it again."""
        feedback = require_text(feedback, "revise")
        with self._driving(), self._open_active(action="revise") as s:
            self._record(s, RecordType.REVISED, stage=s.state.current_stage,
                         set=StatePatch(status="running", feedback=feedback))
            self._emit("revised", s.state, stage=s.state.current_stage, text=feedback)
            return self._drive(s)

    def step(self, stage_id: str) -> RunState:
        """Run exactly one stage and its gate without advancing; current_stage becomes ``stage_id``.

        Refused while the run waits for the user (approve, revise, answer or abandon first). Without an
        active run, the most recent run when it failed is reopened (a ``reopened`` record) and stepped."""
        with self._driving(), self._open_active(reopen_failed=True) as s:
            require_stage(s.loop, stage_id)
            require_not_paused(s.state)
            self._record(s, RecordType.STEP, stage=stage_id, set=StatePatch(current_stage=stage_id, status="running"))
            if self._check_timeout(s):
                return self._snapshot(s)
            stage_run.run_stage(self, s, s.loop.stage(stage_id), stepping=True)
            if s.state.status == "awaiting_approval":
                pauses.announce_pause(self, s)
            return self._snapshot(s)

    def abandon(self) -> RunState:
        with self._driving():
            active, damaged = self._scan(tell=False)
            if active is None and damaged is not None:
                return self._abandon_damaged(*damaged)
        with self._driving(), self._open_active(need_worker=False) as s:
            self._record(s, RecordType.ABANDONED, set=StatePatch(status="abandoned", ended_at=self._now()))
            self._emit("abandoned", s.state, text=f"run {s.state.run_id} abandoned")
            return self._snapshot(s)

    # -- checkpoints: diff, revert, fork (odin_magic/runs/diffs.py, odin_magic/engine/rewind.py) --------------

    def diff(self, selector: str | None = None, run_id: str | None = None, net: bool = False) -> diffs.StageDiff:
        """What a stage execution changed: ``selector`` is a stage id, an execution number, or None (the latest);
        ``net``: the stage's net change over all its executions."""
        state = self.status(run_id)
        return diffs.stage_diff(self.checkpoints, state, selector, net=net, run_dir=self.run_dir(state.run_id))

    def revert(self, selector: str | None = None, to: int | None = None, force: bool = False) -> RunState:
        """Restore the tree to the checkpoint before a stage execution; the run continues from that stage.
        Files changed by hand since the run last left the tree are kept (named in the event) unless ``force``."""
        with self._driving(), self._open_active(need_worker=False, reopen_failed=True) as s:
            plan = rewind.revert_plan(self.checkpoints, s.state, selector, to, force)
            tree = rewind.apply(self.checkpoints, plan)
            self._record(s, RecordType.REVERTED, stage=plan.stage, to=plan.target, execution=plan.number,
                         reason=revert_reason(plan.stage, plan.number),
                         restored=plan.restore, kept=plan.kept, set=StatePatch(
                             current_stage=plan.stage, status="running", blocked=None, repeats=None, checkpoint=None,
                             feedback=None, tree=tree, failure_reason=None, ended_at=None))
            kept = f"; kept your changes to {', '.join(plan.kept)} (--force reverts them too)" if plan.kept else ""
            self._emit("reverted", s.state, stage=plan.stage, data={"restored": plan.restore, "kept": plan.kept},
                       text=f"reverted to before execution {plan.number} ({plan.stage}): {len(plan.restore)} file(s) "
                            f"restored{kept}; `odin run` continues from {plan.stage}")
            return self._snapshot(s)

    def fork(self, from_point: int | None = None, run_id: str | None = None, force: bool = False) -> RunState:
        """A new run from point ``from_point`` (history entries kept) of ``run_id`` (default: the active or
        latest run), the tree restored to that point; the old run is abandoned with a pointer to the fork.
        Refused while another run is active. A fork that fails half-way is undone (see forking)."""
        return forking.fork(self, from_point, run_id, force)

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
                return copy_state(s.state)
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
            live = copy_state(self._session.state) if self._session else None
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
                return copy_state(self._session.state)
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
        self._record(session, RecordType.INTERVIEW, save=True, interview=summary.model_dump(exclude_none=True))

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
    def _open_active(self, need_worker: bool = True, reopen_failed: bool = False,
                     action: str | None = None) -> Iterator[Session]:
        """The active run, opened for driving; with ``reopen_failed``, else the latest run when it failed.
        ``action`` (approve, revise, answer) is refused before a worker is made when the run is not waiting
        for it (a running run needs no API key to be told so)."""
        active, damaged = self._scan_loaded(tell=False)  # opening repairs the run and tells, below
        if active is None and reopen_failed:
            active = self._latest_failed()
        if active is None and damaged is not None:
            raise damaged_blocks(*damaged)
        if active is None:
            raise self._no_active_run()
        handle, notice = self.store.open(active.state.run_id, self.command, self._now(), known=active)
        try:
            reopening = reopen_failed and handle.state.status == "failed"
            if not handle.state.active and not reopening:  # changed between the scan and the lock
                raise NoActiveRun(f"run {handle.run_id} is {handle.state.status}", hint="`odin runs` lists the runs")
            if action is not None:
                require_status(handle.state, action, driven=False)  # opened: no other process drives it
            loop = self.loop_for(handle.run_id)  # one that cannot be read is damage (RunCorrupt), not tampering
            if need_worker:  # a loop.json changed since the run started is never executed: the run is blocked
                tamper.check_on_open(self, handle)
            worker = self._worker_for(handle.state) if need_worker else None
        except BaseException:
            handle.close()
            raise
        passed = {e.stage for e in handle.state.history if e.result == "pass"}
        with self._held(Session(handle, loop, worker, passed)) as session:
            if notice:
                self._record(session, RecordType.NOTICE, text=notice)
                self._emit("notice", session.state, text=notice)
            if reopening:
                self._reopen(session)
            yield session

    def _latest_run(self) -> Loaded | None:
        return next(iter(reversed(list(self._readable_runs()))), None)

    def _no_active_run(self) -> NoActiveRun:
        latest = self._latest_run()
        return nothing_to_act_on(self.project_dir, latest.state if latest is not None else None)

    def _latest_failed(self) -> Loaded | None:
        """The project's most recent run when it failed (the one a step may reopen), else None."""
        latest = self._latest_run()
        return latest if latest is not None and latest.state.status == "failed" else None

    def _reopen(self, s: Session) -> None:
        """A failed run becomes running again (recorded as a ``reopened`` record, with why it had failed)."""
        was = s.state.failure_reason or "failed"
        self._record(s, RecordType.REOPENED, stage=s.state.current_stage, was=was,
                     set=StatePatch(status="running", failure_reason=None, ended_at=None))
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
            run_end.finish(self, session)  # deliver: and the report, while the run is still locked
            session.handle.close()
            drive_ended(session.worker)  # a recording (ODIN_RECORD) renders its YAML
            self._remember(session)

    def _remember(self, s: Session) -> None:
        """A run that ended (not a dry one) leaves its decisions and lessons in the project's memory."""
        if s.state is None or s.state.dry is not None or s.state.status not in ("done", "failed", "abandoned"):
            return
        try:
            memory.record_run(self.project_dir, s.handle.run_dir, s.loop)
        except (OSError, OdinError, ValueError) as exc:  # memory is a help, never a reason for a run to fail
            self._emit("notice", s.state, text=f"the project memory could not be written: {exc}")

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
                pauses.block_unattended(self, s)
                break
            if st.status == "awaiting_approval":
                if approving:
                    pauses.approve(self, s)
                    continue
                pauses.announce_pause(self, s)
                break
            if st.status != "running":  # done, failed, abandoned, or awaiting_answer (already announced)
                break
            if self._stop.is_set():
                self._emit("stopped", st, stage=st.current_stage,
                           text=f"stopped before stage {st.current_stage}; `{continues(st)}` resumes the run")
                break
            if self._check_timeout(s):
                break
            try:
                stage_run.run_stage(self, s, s.loop.stage(st.current_stage), stepping=False)
            except WorkerFailed as exc:
                if not self.unattended:
                    raise
                pauses.block_unattended(self, s, reason=exc.message)  # nobody to retry it now: blocked, report written
                break
        return self._snapshot(s)

    def _ask_again(self, s: Session, answer: str | None = None) -> None:
        """Run the waiting interview stage again (with the user's ``answer``): timed like any stage."""
        if not self._check_timeout(s):
            s.answer = answer
            stage_run.run_stage(self, s, s.loop.stage(s.state.current_stage), stepping=False)

    def _unblock(self, s: Session) -> None:
        """Continue a blocked run: an environment block re-checks the gate alone (the work is done)."""
        blocked = pauses.unblock(self, s)
        if blocked is not None and blocked.kind == "environment" and not self._check_timeout(s):
            stage_run.run_stage(self, s, s.loop.stage(blocked.stage), stepping=False, perform=False)

    # -- checkpoints (odin_magic/runs/checkpoints.py) ------------------------------------

    @property
    def checkpoints(self) -> Checkpoints:
        if self._checkpoints is None:
            self._checkpoints = Checkpoints(self.project_dir)
        return self._checkpoints

    # -- termination ------------------------------------------------------------

    def _fail(self, s: Session, reason: str, stage: str | None = None) -> None:
        self._record(s, RecordType.FAILED, stage=stage,
                     set=StatePatch(status="failed", failure_reason=reason, ended_at=self._now()))
        self._emit("failed", s.state, stage=stage, text=reason)

    def _check_timeout(self, s: Session) -> bool:
        limit = s.loop.timeout_seconds
        if not limit:
            return False
        started = datetime.fromisoformat(s.state.started_at)
        elapsed = (local_naive(self.clock()) - started).total_seconds()
        if elapsed <= limit:
            return False
        self._fail(s, f"timed out: the run has taken {elapsed:.0f} s, more than timeout_seconds {limit:g}",
                   s.state.current_stage)
        return True

    def _add_usage(self, s: Session, stage_id: str, usage: Usage) -> bool:
        """Record usage; True when it put the run over budget (the run is then failed)."""
        if usage == Usage():
            return False
        self._record(s, RecordType.USAGE, stage=stage_id, usage=usage.model_dump())
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
        return stamp(self.clock())

    def _record(self, s: Session, type: RecordType, save: bool | None = None, sync: bool = True, **fields: Any) -> None:
        """Append one event; state.json is refreshed when the handle's policy says so and when the drive ends."""
        with self._view_lock:
            s.handle.record(type, self._now(), save=save, sync=sync, **fields)

    def _snapshot(self, s: Session) -> RunState:
        with self._view_lock:
            return copy_state(s.state)

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
        engine = Engine(tmp, listener=listener, command="odin simulate", reports=False, checkpoints=False)
        state = engine.start(loop.name, f"simulate {loop.name}", dry=DryOptions(gates=script, approve_all=True), loop=loop)
    return {
        "path": [e.stage for e in state.history if e.gate != "approved"],
        "status": state.status,
        "iterations": state.iterations,
        "total_iterations": state.total_iterations,
        "history": [e.model_dump(mode="json", exclude_none=True) for e in state.history],
        **({"failure_reason": state.failure_reason} if state.failure_reason else {}),
    }
