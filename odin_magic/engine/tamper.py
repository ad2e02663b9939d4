"""What the engine owns, checked where no sandbox keeps workers out of it: the run's ``loop.json`` and its
gate evidence.

Without a sandbox (``sandbox: off``, or no bubblewrap) a worker's ``bash`` can rewrite
``$ODIN_RUN_DIR/loop.json``, e.g. delete the next stage's ``gate.run`` or ``scope``. The run records
the file's sha256 in its ``created`` record (:meth:`odin_magic.runs.store.RunHandle.loop_changed`);
the engine compares it when it opens the run to drive it (a resume, an approve, an answer), as each
stage starts, before the last stage's gate is recorded (the run would end unseen), and before a fork
copies it. A mismatch stops the run as ``blocked`` (kind ``tampered``) with the file named: the changed
loop is never executed.

Likewise the gate evidence (``gates/evidence.jsonl``): every line the history names must be the line the
engine wrote (its sha256 and length are in the history entry; :mod:`odin_magic.runs.evidence_seal`, an
incremental check). It is checked when the run is opened to drive it and before each gate's evidence is
appended (so before every gate is recorded); a deleted, truncated or rewritten line blocks the run
(``tampered``) with the file named.
"""

from __future__ import annotations

from odin_magic.core.errors import RunRefused
from odin_magic.engine.session import Session
from odin_magic.runs.records import RecordType, StatePatch
from odin_magic.runs.store import RunHandle, loop_changed

FIX = ("revert it (put back the loop the run started with) and `odin run` continues; "
       "or `odin abandon` and start a new run")
EVIDENCE_FIX = ("restore the file as the engine wrote it (from a backup or a copy) and `odin run` continues; "
                "or `odin abandon` and start a new run")


class LoopTampered(RunRefused):
    """The run's loop.json is not the loop the run started with: the run is blocked, nothing is executed."""


def _block(engine, handle: RunHandle, why: str, fix: str = FIX) -> None:
    """Record the block (once: a run already blocked for it is not blocked again) and tell it."""
    st = handle.state
    if st.status == "blocked" and st.blocked is not None and st.blocked.kind == "tampered" and st.blocked.reason == why:
        return
    blocked = {"kind": "tampered", "stage": st.current_stage, "reason": why, "fix": fix}
    with engine._view_lock:
        handle.record(RecordType.BLOCKED, engine._now(), stage=st.current_stage,
                      set=StatePatch(status="blocked", blocked=blocked))
    b = handle.state.blocked
    engine._emit("blocked", handle.state, stage=b.stage, text=f"{b.stage} blocked ({b.kind}): {b.reason}; to do: {b.fix}",
                 data=b.model_dump())


def check_on_open(engine, handle: RunHandle) -> None:
    """Before the run's loop drives anything: :class:`LoopTampered` (the run blocked) when loop.json changed."""
    why, fix = handle.loop_changed(), FIX
    if why is None:
        why, fix = handle.evidence.seal.problem(handle.state.history), EVIDENCE_FIX
    if why is None:
        return
    _block(engine, handle, why, fix)
    raise LoopTampered(f"run {handle.run_id} is blocked: {why}", hint=fix)


def check_source(engine, run_id: str) -> None:
    """Before a run's loop is copied into a fork: :class:`LoopTampered` when its loop.json changed."""
    why = loop_changed(engine.store.run_dir(run_id))
    if why is not None:
        raise LoopTampered(f"run {run_id} cannot be forked: {why}", hint=FIX)


def loop_intact(engine, s: Session) -> bool:
    """As a stage starts: True when loop.json is the run's own loop; else the run is blocked (False)."""
    why = s.handle.loop_changed()
    if why is None:
        return True
    _block(engine, s.handle, why)
    return False


def evidence_intact(engine, s: Session) -> bool:
    """Before a gate's evidence is appended: True when every line the history names is as written; else the
    run is blocked (False) and nothing is recorded."""
    why = s.handle.evidence.seal.problem(s.state.history)
    if why is None:
        return True
    _block(engine, s.handle, why, EVIDENCE_FIX)
    return False
