"""A gate evaluation's record: its history entry, counters, next stage and status in ONE event-log record
(with the dry script's position), and where it sends the run: on, to a pause, done, a loopback, blocked
or failed (:mod:`odin_magic.engine.routing` classifies a failure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from odin_magic.engine import completion, frozen, gates, judging, pauses, routing, scope
from odin_magic.engine.requirements import done_text, never_ran
from odin_magic.engine.session import Session, history_entry
from odin_magic.loop.schema import Stage
from odin_magic.runs import evidence as gate_evidence
from odin_magic.runs.checkpoints import StageCheckpoint
from odin_magic.runs.records import RecordType, StatePatch
from odin_magic.workers.base import script_position


@dataclass(frozen=True)
class GateRecord:
    """One gate evaluation to record. ``hold_at``: a pass that neither pauses nor ends the run (the checks
    before done failed): it waits at that stage, and the next record says why (a crash before it resumes
    there, at the stage whose work the checks send it back to)."""

    stage: Stage
    outcome: gates.GateOutcome
    evidence: gate_evidence.EvidenceRef
    at: str
    produced: dict[str, str] = field(default_factory=dict)
    stepping: bool = False
    ckpt: StageCheckpoint | None = None
    hold_at: str | None = None

    @property
    def pauses(self) -> bool:
        return self.stage.gate.pauses or bool(self.outcome.risky)  # a risky change needs a human's sign-off


def record_gate(engine, s: Session, rec: GateRecord) -> None:
    """Record a gate outcome and where it sends the run, then tell it."""
    stage, outcome, ckpt = rec.stage, rec.outcome, rec.ckpt
    passed = outcome.passed
    gate = "ai-pending" if rec.pauses and not rec.hold_at else "ai"
    entry = history_entry(stage, "pass" if passed else "fail", gate, rec.at)
    if not passed:
        entry["reason"] = outcome.reason
    entry.update(evidence=rec.evidence.path, evidence_sha256=rec.evidence.sha256, evidence_bytes=rec.evidence.size)
    if ckpt is not None:
        entry.update(checkpoint=ckpt.before, after=ckpt.after)
    changes: dict[str, Any] = {"feedback": None, "status": "running", "checkpoint": None}
    if ckpt is not None:
        changes["tree"] = ckpt.after
    if rec.produced:
        changes["artifacts"] = rec.produced
    position = script_position(s.worker, stage.id) if s.state.dry is not None else None
    if position is not None:
        changes["dry_used"] = {stage.id: position}  # the script's position, not its rest
    if passed:
        changes.update(_pass_changes(s, rec))
    else:
        changes.update(_fail_changes(engine, s, rec, entry))
    concerns = [{"stage": stage.id, "text": c} for c in judging.concerns_of(outcome.verdict)] if passed else []
    unfrozen = frozen.unfrozen(s.state, passed, changes)  # a loopback to a stage unfreezes its artifacts
    engine._record(s, RecordType.GATE, stage=stage.id, entry=entry, set=changes,  # the hash is in the entry
                   **({"concerns": concerns} if concerns else {}), **({"unfrozen": unfrozen} if unfrozen else {}))
    _tell(engine, s, rec, entry)


def _pass_changes(s: Session, rec: GateRecord) -> dict[str, Any]:
    """Where a passed gate sends the run: held, paused, stepped, on to the next stage, or done."""
    st, stage = s.state, rec.stage
    changes: dict[str, Any] = {}
    if stage.id not in s.passed:
        changes["no_progress"] = 0
    if routing.streak_after_pass(st.repeats, stage.id):
        changes["repeats"] = None
    if rec.hold_at:
        changes["current_stage"] = rec.hold_at
    elif rec.pauses:
        changes.update(status="awaiting_approval", current_stage=stage.id)
    elif rec.stepping:
        changes["current_stage"] = stage.id
    else:
        nxt = s.loop.next_stage_id(stage.id)
        if nxt is None:
            changes.update(status="done", ended_at=rec.at)
        else:
            changes["current_stage"] = nxt
    return changes


def _fail_changes(engine, s: Session, rec: GateRecord, entry: dict[str, Any]) -> dict[str, Any]:
    """A failed gate: its route (``entry`` learns its class); a BLOCKED judge's stage is undone first (what was
    changed outside the run is kept)."""
    outcome, ckpt = rec.outcome, rec.ckpt
    route = routing.route(rec.stage.id, routing.Failure.of(outcome), s.state.repeats, s.loop.max_repeats)
    entry["failure"] = route.failure
    if route.failure == "blocked" and ckpt is not None:  # BLOCKED: undo the stage, then ask the human
        outside = {c["path"] for c in outcome.changes if c.get("outside")}  # not the stage's (attribution)
        undone = engine.checkpoints.restore(ckpt.before, paths=[
            c.path for c in ckpt.changes if not scope.protected(c.path) and c.path not in outside])
        route.blocked.reason += f" (the stage's changes were reverted: {len(undone)} file(s))"
    return failure_changes(s, rec, route)


def _tell(engine, s: Session, rec: GateRecord, entry: dict[str, Any]) -> None:
    """The recorded gate's events: passed or failed, then done, failed or blocked when the run is."""
    stage, outcome, evidence = rec.stage, rec.outcome, rec.evidence
    if outcome.passed:
        s.passed.add(stage.id)
        engine._emit("gate_passed", s.state, stage=stage.id, text=entry["gate"],
                     data={"evidence": evidence.path, "changes": outcome.changes})
    else:
        engine._emit("gate_failed", s.state, stage=stage.id, text=outcome.reason or "",
                     data={"evidence": evidence.path, "next_stage": s.state.current_stage,
                           "iterations": s.state.iterations.get(stage.id, 0),
                           "loops_back": s.state.status == "running", "changes": outcome.changes})
    if s.state.status == "done":
        engine._emit("done", s.state, text=done_text(s.state, s.loop), data={"never_ran": never_ran(s.state, s.loop)})
    elif s.state.status == "failed":
        engine._emit("failed", s.state, stage=stage.id, text=s.state.failure_reason or "")
    elif s.state.status == "blocked":
        pauses.announce_block(engine, s)


def failure_changes(s: Session, rec: GateRecord, route: routing.Route) -> dict[str, Any]:
    """Where a failed gate sends the run, checked in this order: blocked (environment, judge: no loopback
    spent); failed (``max_iterations``: no loopback is left); blocked after counting (repeated: the same
    failure ``max_repeats`` times, a person must look); failed (``max_no_progress``: different failures
    and no new gate passing); else the loopback. Repeated comes before no progress: the same failure
    over and over is the more particular diagnosis (see docs/routing.md, "Which limit speaks first")."""
    st, stage, reason, at = s.state, rec.stage, rec.outcome.reason, rec.at
    if route.failure in ("environment", "blocked"):  # no loopback: the human resolves it, then `run`
        return {"status": "blocked", "blocked": route.blocked.model_dump(), "current_stage": stage.id}
    total, stuck = st.total_iterations + 1, st.no_progress + 1
    changes: dict[str, Any] = {"iterations": {stage.id: st.iterations.get(stage.id, 0) + 1},
                               "total_iterations": total, "no_progress": stuck,
                               "repeats": route.streak.model_dump()}
    loops_to = stage.id if rec.stepping else (stage.gate.on_fail or stage.id)  # a step stays on its stage (seed 000)
    if total > st.max_iterations:
        changes.update(status="failed", ended_at=at, failure_reason=(
            f"total_iterations {total} exceeded max_iterations {st.max_iterations}; "
            f"blocked at stage {stage.id}: {reason}"))
    elif route.blocked is not None:  # repeated: pause for the human instead of looping on (`run` goes on there)
        changes.update(status="blocked", blocked=route.blocked.model_dump(), current_stage=loops_to)
    elif s.loop.max_no_progress and stuck >= s.loop.max_no_progress:
        changes.update(status="failed", ended_at=at, failure_reason=(
            f"no progress: {stuck} consecutive loopbacks without a new gate passing "
            f"(max_no_progress {s.loop.max_no_progress}); last failure at stage {stage.id}: {reason}"))
    else:  # the drive loops back
        changes["current_stage"] = loops_to
    return changes


def record_not_done(engine, s: Session, stage: Stage, report: completion.CompletionReport,
                    evidence: gate_evidence.EvidenceRef, at: str) -> None:
    """The last gate passed but the run may not end: blocked (environment), else a failure of the code stage."""
    if report.environment:
        blocked = {"kind": "environment", "stage": stage.id, "reason": "before done: " + report.reason(),
                   "fix": report.fix() + "; then `odin run` re-checks (no loopback was spent)"}
        engine._record(s, RecordType.BLOCKED, stage=stage.id,
                       set=StatePatch(status="blocked", blocked=blocked, current_stage=stage.id))
        pauses.announce_block(engine, s)
        return
    code = s.loop.stage(report.code_stage)
    failure = gates.GateOutcome(False, "before done: " + (report.reason() or "not verified"))
    record_gate(engine, s, GateRecord(code, failure, evidence, at))
