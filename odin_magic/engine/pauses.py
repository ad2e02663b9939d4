"""Pauses and blocks: a paused stage approved, a pause or a block told, an unattended drive's pause turned
into a block, a blocked run continued (an environment block re-checks the gate alone)."""

from __future__ import annotations

from typing import Any

from odin_magic.engine import judging
from odin_magic.engine.requirements import done_text, never_ran
from odin_magic.engine.session import Session, history_entry
from odin_magic.runs import evidence as gate_evidence
from odin_magic.runs.records import RecordType, StatePatch
from odin_magic.runs.state import Blocked


def block_unattended(engine, s: Session, reason: str | None = None) -> None:
    """An unattended drive never waits for a person: a pause (or a stage its worker could not complete,
    ``reason``) ends the drive with the run blocked."""
    stage, why = s.state.current_stage, s.state.status.replace("_", " ")
    blocked = {"kind": "unattended", "stage": stage,
               "reason": reason or f"{stage} is {why}, and the run is unattended (nobody can answer)",
               "fix": "look at the run (`odin status`, `odin report`); `odin run` puts it back at its pause "
                      "for you to approve or revise"}
    engine._record(s, RecordType.BLOCKED, stage=stage, set=StatePatch(status="blocked", blocked=blocked))
    announce_block(engine, s)


def unblock(engine, s: Session) -> Blocked | None:
    """A blocked run continues (an ``unblocked`` record); the block it ended. A run blocked at its pause
    (unattended, or its loop.json changed and put back) goes back to the pause."""
    blocked = s.state.blocked
    last = s.state.history[-1] if s.state.history else None
    paused = last is not None and last.stage == s.state.current_stage and last.gate == "ai-pending" \
        and last.result == "pass"
    # the pause goes back to being a pause: the person now at the wheel decides it
    status = "awaiting_approval" if blocked is not None and blocked.kind in ("unattended", "tampered") and paused \
        else "running"
    # a person looked at a repeated failure: the no-progress count starts afresh, as the streak does
    fresh = {"no_progress": 0} if blocked is not None and blocked.kind == "repeated" else {}
    engine._record(s, RecordType.UNBLOCKED, stage=s.state.current_stage,
                   set=StatePatch(status=status, blocked=None, repeats=None, **fresh))
    engine._emit("unblocked", s.state, stage=s.state.current_stage,
                 text=f"{s.state.current_stage}: continuing after {blocked.kind if blocked else 'a block'}")
    return blocked


def announce_block(engine, s: Session) -> None:
    b = s.state.blocked
    engine._emit("blocked", s.state, stage=b.stage, text=f"{b.stage} blocked ({b.kind}): {b.reason}; to do: {b.fix}",
               data=b.model_dump())


def approve(engine, s: Session) -> None:
    st = s.state
    stage = s.loop.stage(st.current_stage)
    at = engine._now()
    entry = history_entry(stage, "pass", "approved", at)
    nxt = s.loop.next_stage_id(stage.id)
    changes: dict[str, Any] = {"feedback": None}
    if nxt is None:
        changes.update(status="done", ended_at=at)
    else:
        changes.update(status="running", current_stage=nxt)
    engine._record(s, RecordType.APPROVED, stage=stage.id, entry=entry, set=changes)
    engine._emit("approved", s.state, stage=stage.id, text=f"{stage.id} approved")
    if nxt is None:
        engine._emit("done", s.state, text=done_text(s.state, s.loop), data={"never_ran": never_ran(s.state, s.loop)})


def announce_pause(engine, s: Session) -> None:
    stage = s.state.current_stage
    risky = risky_at_pause(engine, s)
    concerns = s.state.concerns[-judging.CONCERNS_SHOWN:]
    carried = ("\n  concerns carried forward: " + "; ".join(f"{c.stage}: {c.text}" for c in concerns)) if concerns else ""
    engine._emit("paused", s.state, stage=stage, text=(
        f"✅ {stage} gate passed; awaiting approval: "
        "`odin approve` (or `odin run`) to advance, `odin revise TEXT` to re-run it with feedback" + carried
        + (f"\n  sign-off needed: it changed {', '.join(risky)} (the loop's risk globs)" if risky else "")),
        data={"concerns": [c.model_dump() for c in concerns]})


def risky_at_pause(engine, s: Session) -> list[str]:
    """The risky paths the paused stage changed (from its last evidence), for the pause text."""
    last = s.state.history[-1] if s.state.history else None
    if last is None or last.evidence is None or not s.loop.risk:
        return []
    try:
        return list(gate_evidence.read_entry(s.handle.run_dir, last).get("risky") or [])
    except (OSError, ValueError):
        return []
