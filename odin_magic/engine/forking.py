"""Driving a fork: a new run from a point of a run (the plan is :mod:`odin_magic.engine.rewind`'s), made under
the project lock once the source run is abandoned, and undone when it fails half-way (the new run abandoned
with the reason, the source given back the fields it had)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator

import filelock

from odin_magic.core.errors import OdinError, RunLocked
from odin_magic.engine import rewind, tamper
from odin_magic.engine.requirements import damaged_blocks, one_run_at_a_time
from odin_magic.engine.session import Session, local_naive, stamp
from odin_magic.loop.schema import Loop
from odin_magic.runs.state import RunState
from odin_magic.runs.store import RunHandle
from odin_magic.runs.records import RecordType, StatePatch


@dataclass
class ForkUndo:
    """What a fork that fails half-way puts back (see :func:`undo_fork`)."""

    source_id: str
    was: dict[str, Any] | None = None  # the source's status, forked_to and ended_at before the fork abandoned it
    fork_id: str | None = None  # the new run, once its making began


def fork(engine, from_point: int | None, run_id: str | None, force: bool) -> RunState:
    """:meth:`Engine.fork <odin_magic.engine.orchestrator.Engine.fork>`: a new run from point ``from_point``
    of ``run_id`` (default: the active or latest run), the tree restored to that point."""
    with engine._driving():
        source = engine.status(run_id)
        point = rewind.fork_point(source, from_point)
        tamper.check_source(engine, source.run_id)  # a loop.json changed outside odin is not carried on
        loop = engine.loop_for(source.run_id)
        plan = rewind.plan(engine.checkpoints, source, point.target, point.current_stage, point.number, force)
        undo = ForkUndo(source.run_id)
        with undone_on_failure(engine, undo):
            handle = start_fork(engine, source, point, loop, undo)
            with engine._held(Session(handle, loop, None, {e.stage for e in point.entries if e.result == "pass"})) as s:
                rewind.copy_run_files(engine.store.run_dir(source.run_id), handle.run_dir)
                tree = rewind.apply(engine.checkpoints, plan)
                fields = rewind.forked_fields(point)
                fields["set"].update(tree=tree, forked_from=f"{source.run_id}@{point.number}")
                engine._record(s, RecordType.FORKED, source=source.run_id, point=point.number, kept=plan.kept, **fields)
                engine._emit("forked", s.state, stage=point.current_stage,
                             text=f"run {s.state.run_id} forked from {source.run_id} at point {point.number}; "
                                  f"`odin run` continues it from {point.current_stage}")
                return engine._snapshot(s)


@contextlib.contextmanager
def undone_on_failure(engine, undo: ForkUndo) -> Iterator[None]:
    """A fork's work: on any failure it is undone, and a locked project or a system error (a full disk, no
    permission) is one line, not a traceback."""
    try:
        yield
    except BaseException as exc:
        undo_fork(engine, undo, exc)
        if isinstance(exc, filelock.Timeout):
            raise RunLocked("another process is creating a run in this project", hint="try again") from None
        if isinstance(exc, OSError):
            raise OdinError(f"the fork failed: {exc}", hint="mend what the error names, then fork again; "
                            f"run {undo.source_id} is as it was") from None
        raise


def start_fork(engine, source: RunState, point: rewind.ForkPoint, loop: Loop, undo: ForkUndo) -> RunHandle:
    """The fork's new run, made under the project lock once the source is abandoned: one run at a time is
    active (a fork of a past run is refused while another run is). ``undo`` learns what to put back."""
    now = engine.clock()
    with engine.store.project_lock():
        active, damaged = engine._scan(tell=False)
        if active is not None and active.run_id != source.run_id:
            raise one_run_at_a_time(active)
        if active is None and damaged is not None and damaged[0] != source.run_id:
            raise damaged_blocks(*damaged)
        new_id = engine.store.new_run_id(local_naive(now), loop.name)
        undo.was = abandon_for_fork(engine, source.run_id, new_id)
        created = {"run_id": new_id, "loop": loop.name, "task": source.task, "started_at": stamp(now),
                   "current_stage": point.current_stage, "max_iterations": loop.max_iterations,
                   "dry": (source.dry.model_copy(update={"gates": [], "used": {}}).model_dump()
                           if source.dry is not None else None)}
        undo.fork_id = new_id
        return engine.store.create(created, loop.model_dump(mode="json"), stamp(now), engine.command)


def abandon_for_fork(engine, run_id: str, fork_id: str) -> dict[str, Any] | None:
    """Point the source run at the fork (an active run is abandoned: one run at a time is active; one that
    ended keeps its status); returns its fields as they were (read under its lock, for an undo), or None when
    it was already abandoned for a fork (left as it is)."""
    handle, _ = engine.store.open(run_id, engine.command, engine._now())
    try:
        state = handle.state
        if state.status == "abandoned" and state.forked_to is not None:
            return None
        was = {"status": state.status, "forked_to": state.forked_to, "ended_at": state.ended_at}
        if not state.active:  # a run that ended (done, failed, abandoned) keeps its ending: it only points on
            handle.record(RecordType.NOTICE, engine._now(), text=f"forked to {fork_id}",
                          set=StatePatch(forked_to=fork_id))
            return was
        ended = {"ended_at": engine._now()} if state.ended_at is None else {}
        handle.record(RecordType.ABANDONED, engine._now(),
                      set=StatePatch(status="abandoned", forked_to=fork_id, **ended))
        return was
    finally:
        handle.close()


def undo_fork(engine, undo: ForkUndo, exc: BaseException) -> None:
    """A fork that failed half-way, under the project lock (no run starts meanwhile): its new run (when its
    log began) is abandoned with the reason, then the source run (when the fork abandoned it) gets back
    the fields it had. A failure here is told as a notice: the fork's own failure, raised after, counts."""
    reason = f"the fork failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    steps = []
    if undo.fork_id is not None and engine.store.began(undo.fork_id):
        steps.append((undo.fork_id, "abandoned", {"status": "abandoned", "ended_at": engine._now(),
                                                  "failure_reason": reason}))
    if undo.was is not None:
        steps.append((undo.source_id, "fork_undone", undo.was))
    if not steps:
        return
    try:
        with engine.store.project_lock():
            for run_id, kind, fields in steps:  # each on its own: one that fails does not skip the other
                _record_undo(engine, run_id, kind, fields)
    except filelock.Timeout:
        engine._emit("notice", undo.source_id, text="the failed fork could not be undone: the project is locked "
                                                    f"by another process; run {undo.source_id} stays abandoned")


def _record_undo(engine, run_id: str, kind: str, fields: dict[str, Any]) -> None:
    """One step of an undo, recorded in ``run_id``'s log; a failure is told as a notice."""
    try:
        handle, _ = engine.store.open(run_id, engine.command, engine._now())
        try:
            handle.record(kind, engine._now(), set=fields)
        finally:
            handle.close()
    except (OSError, OdinError) as failed:
        engine._emit("notice", run_id, text=f"the failed fork could not be undone in run {run_id}: {failed}")
