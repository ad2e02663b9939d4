"""Stage execution: one stage performed by its worker (or, for a deep-interview stage, the interview
runner) between two checkpoints, then its gate (:mod:`odin_magic.engine.gate_pipeline`) and the gate's
record (:mod:`odin_magic.engine.gate_record`)."""

from __future__ import annotations

import os
from pathlib import Path

from odin_magic.core.confine import Confinement, PathEscapes
from odin_magic.engine import (
    frozen, gate_pipeline, gate_record, gates, judge_compare, reporting_stage as reporting, retry_brief, tamper
)
from odin_magic.engine.session import InterviewRunner, Session, WorkerFailed
from odin_magic.interview.awaiting import AwaitingAnswer
from odin_magic.learning import memory
from odin_magic.loop.artifacts import Placement, confine, placements, project_relative
from odin_magic.loop.schema import Stage
from odin_magic.render.text import continues
from odin_magic.runs.checkpoints import StageCheckpoint
from odin_magic.runs.records import RecordType, StatePatch
from odin_magic.workers.base import StageJob, StageResult, WorkerError, WorkerEvent

Places = tuple[dict[str, Placement], dict[str, Placement]]
#: the worker events of a tool call (made, or refused before it ran)
TOOL_EVENTS = ("tool", "tool_refused")


def run_stage(engine, s: Session, stage: Stage, stepping: bool, perform: bool = True) -> None:
    """Perform ``stage`` (unless ``perform`` is False: only its gate is evaluated again) and gate it; nothing
    when the run's loop.json changed since the run started (the run is then blocked), checked as the stage
    starts and, for the last stage, before its gate is recorded (a change would otherwise go unseen)."""
    last = _unchanged_tree(engine, s)
    if not tamper.loop_intact(engine, s):
        return
    st = s.state
    agent = stage.resolved_agent
    produces, consumes = stage_placements(engine, s, stage)
    for p in produces.values():
        (p.path if p.is_dir else p.path.parent).mkdir(parents=True, exist_ok=True)
    job = stage_job(engine, s, stage, (produces, consumes))

    tools: list[str] = []  # the execution's tool calls (its worker's, an explorer's for its judge)

    def sink(ev: WorkerEvent) -> None:
        if ev.kind in TOOL_EVENTS:
            tools.append(ev.text)
        engine._emit("worker", s.state, stage=ev.stage, text=ev.text, data={"kind": ev.kind})

    runner = interview_runner_for(engine, s, stage)  # a deep-interview stage goes to the interview runner
    before, fresh = checkpoint_before(engine, s, stage, last) if perform and engine.takes_checkpoints else (None, False)
    found = artifact_stats(produces) if fresh else None  # a resumed execution's work may have begun before
    earlier = judge_compare.earlier_versions(stage, produces) if fresh else None  # a compare gate's before
    if perform:
        engine._emit("stage_started", st, stage=stage.id, text=stage.display_title,
                     data={"agent": agent.label, "fresh": agent.fresh, "step": stepping, "feedback": st.feedback})
    result = _performed(engine, s, job, sink, runner, perform)
    if result is None or engine._add_usage(s, stage.id, result.usage):
        return
    stage_placements(engine, s, stage)  # the stage's work may have put a link where an artifact belongs
    saved = reporting.save_report(stage, produces, result.report) if perform else None
    if saved:
        sink(WorkerEvent("info", stage.id, f"the {agent.label} report was saved as {saved}"))
    # a worker that called no tool wrote nothing but its artifacts: when they are as they were, nothing changed
    quiet = found is not None and not tools and not saved and runner is None and found == artifact_stats(produces)
    ckpt = checkpoint_after(engine, before, quiet) if before is not None else None
    worked = len(tools)  # the tool calls before the checkpoint after the work: the gate's own come after
    gate = gate_pipeline.stage_gate(engine, s, gate_pipeline.Execution(
        job, (produces, consumes), runner, ckpt, sink, stepping=stepping, edit_checks=result.edit_checks,
        earlier=earlier))
    decided = gate_pipeline.run_gate(gate)
    if decided is None:
        return  # the gate's usage put the run over budget
    if s.loop.next_stage_id(stage.id) is None and not tamper.loop_intact(engine, s):
        return  # the last stage changed loop.json: no next stage would see it, so the run is blocked, not done
    _record(engine, s, gate, *decided)
    if ckpt is not None and len(tools) == worked and runner is None and s.state.status != "blocked" \
            and _left_alone(*decided):
        engine.unchanged_tree = (s, ckpt.after)  # the next stage of this drive starts from it


def _performed(engine, s: Session, job: StageJob, sink, runner: InterviewRunner | None,
               perform: bool) -> StageResult | None:
    """The stage's work (an empty result when it is not performed); None when the stage ends here (an
    interview question, or a worker's failure that put the run over budget)."""
    st, stage = s.state, job.stage
    try:
        return (StageResult() if not perform else
                runner(s, job, sink) if runner is not None else s.worker.perform(job, sink))
    except AwaitingAnswer as asking:
        asked(engine, s, stage, asking)
        return None
    except WorkerError as exc:
        if engine._add_usage(s, stage.id, exc.usage):
            return None  # what the stage spent before failing put the run over budget
        said = str(exc).replace("`odin run` (or %odin run)", f"`{continues(st)}` (or {continues(st, '%odin')})")
        engine._emit("stopped", st, stage=stage.id, text=f"stage {stage.id} could not be completed: {said}")
        raise WorkerFailed(
            f"stage {stage.id!r} of run {st.run_id} could not be completed: {said}",
            hint=f"the run is still running; `{continues(st)}` retries the stage",
        ) from None


def _record(engine, s: Session, gate: gate_pipeline.StageGate, outcome, done_check) -> None:
    """The evaluation's evidence, then its record (and, when the checks before done failed, why)."""
    st, stage, produces = s.state, gate.stage, gate.produces
    if not tamper.evidence_intact(engine, s):
        return  # a command changed the evidence the history names: the run is blocked, nothing is recorded
    at = engine._now()
    number = len(st.history) + 1
    evidence = s.handle.evidence.append(outcome.evidence(stage.id, number, at))
    produced = {
        entry: project_relative(p.path, engine.project_dir, p.is_dir)
        for entry, p in produces.items() if p.exists()
    }
    not_done = done_check is not None and not done_check.passed
    if outcome.passed:
        frozen.freeze(engine, s, stage, number)
    gate_record.record_gate(engine, s, gate_record.GateRecord(
        stage, outcome, evidence, at, produced=produced, stepping=gate.stepping, ckpt=gate.ckpt,
        hold_at=done_check.code_stage if not_done and not done_check.environment else stage.id if not_done else None))
    if not_done:
        gate_record.record_not_done(engine, s, stage, done_check, evidence, at)


def stage_job(engine, s: Session, stage: Stage, places: Places) -> StageJob:
    """What the worker is told about this execution of ``stage``."""
    st = s.state
    produces, consumes = places
    last_failure = retry_brief.last_failure(s.handle.run_dir, st.history)  # the stage, the command, the real error
    return StageJob(
        loop=s.loop, stage=stage, task=st.task, run_id=st.run_id, project_dir=engine.project_dir,
        run_dir=s.handle.run_dir, agent=stage.resolved_agent, consumes={k: v.path for k, v in consumes.items()},
        produces={k: v.path for k, v in produces.items()}, feedback=st.feedback,
        last_failure=last_failure, attempt=st.iterations.get(stage.id, 0),
        memory=memory.relevant(engine.project_dir, stage, s.loop, tell=lambda text: _forged(engine, s, stage, text)),
        spent=st.usage.total,
    )


def _forged(engine, s: Session, stage: Stage, text: str) -> None:
    """Memory entries odin did not write were left out of the stage's brief: recorded and told."""
    engine._record(s, RecordType.NOTICE, stage=stage.id, text=text)
    engine._emit("notice", s.state, stage=stage.id, text=text)


def interview_runner_for(engine, s: Session, stage: Stage) -> InterviewRunner | None:
    """The runner for a deep-interview stage of a real run (dry runs treat it like any stage)."""
    if stage.interview is None or s.state.dry is not None:
        return None
    if engine.interview_runner is None:
        from odin_magic.interview.claude import make_interview_model
        from odin_magic.interview.runner import DeepInterviewRunner

        settings = getattr(s.worker, "settings", None)
        if settings is None:
            from odin_magic.workers.config import Settings

            settings = Settings.from_env()
        project_dir = engine.project_dir
        engine.interview_runner = DeepInterviewRunner(
            lambda: make_interview_model(settings, project_dir), record=engine.record_interview, clock=engine.clock)
    return engine.interview_runner


def asked(engine, s: Session, stage: Stage, asking: AwaitingAnswer) -> None:
    """The interview waits for an answer: record usage and the summary, pause as awaiting_answer."""
    if engine._add_usage(s, stage.id, asking.usage):
        return
    engine._record(s, RecordType.AWAITING_ANSWER, stage=stage.id,
                   set=StatePatch(status="awaiting_answer", current_stage=stage.id),
                   interview=asking.summary.model_dump(exclude_none=True))
    engine._emit("question", s.state, stage=stage.id, text=asking.text,
                 data={"question": asking.question.model_dump(mode="json")})
    engine._emit("awaiting_answer", s.state, stage=stage.id,
                 text=f"{stage.id} waits for your answer: `odin answer TEXT` (`odin question` shows it again)")


def stage_placements(engine, s: Session, stage: Stage) -> Places:
    """Where the stage's produces and consumes live; refused (a clear error naming the link, the run
    stays resumable) when one's real path leaves the project and the run dir through a symbolic link."""
    run_dir = s.handle.run_dir
    if stage.id not in s.places:  # where they live by name does not change during a drive; the links may
        s.places[stage.id] = (placements(stage.produces, engine.project_dir, run_dir, stage.id),
                              placements(stage.consumes, engine.project_dir, run_dir, stage.id))
    produces, consumes = s.places[stage.id]
    if s.confinement is None:
        s.confinement = Confinement((engine.project_dir, run_dir))
    try:
        confine({**consumes, **produces}, s.confinement, engine.project_dir, stage.id)
    except PathEscapes as exc:
        engine._emit("stopped", s.state, stage=stage.id, text=exc.message)
        raise
    return produces, consumes


def checkpoint_before(engine, s: Session, stage: Stage, last: str | None = None) -> tuple[str, bool]:
    """The checkpoint before this stage execution, and whether it is the tree as it is now (not a resumed
    execution's: a crash, a worker failure or an interview question keeps the one recorded when it began);
    ``last``, the drive's last checkpoint when nothing has run since, is taken again as it is (no snapshot)."""
    pending = s.state.checkpoint
    if pending is not None and pending.stage == stage.id and engine.checkpoints.exists(pending.before):
        return pending.before, False
    before = last or engine.checkpoints.snapshot()
    # no fsync of its own: the stage's gate record, appended after it to the same log, makes both durable
    # (one fsync per transition); a power cut before that re-runs the stage, which takes its checkpoint anew
    engine._record(s, RecordType.CHECKPOINT, save=False, sync=False, stage=stage.id,
                   set=StatePatch(checkpoint={"stage": stage.id, "before": before}))
    return before, True


def checkpoint_after(engine, before: str, quiet: bool = False) -> StageCheckpoint:
    """The checkpoint after the stage's work; ``quiet``: the work could change nothing, its before is its after."""
    if quiet:
        return StageCheckpoint(before, before, [])
    after = engine.checkpoints.snapshot(rules_from=before)  # the .gitignore files as the stage found them
    return StageCheckpoint(before, after, engine.checkpoints.changes(before, after))


def _unchanged_tree(engine, s: Session) -> str | None:
    """The drive's last checkpoint when nothing has run since it, forgotten as it is read (the stage about to run
    may change anything); never another drive's: between two drives, anyone may have changed the files."""
    kept, engine.unchanged_tree = engine.unchanged_tree, None
    return kept[1] if kept is not None and kept[0] is s else None


def _left_alone(outcome: gates.GateOutcome, done_check) -> bool:
    """The gate changed nothing in the project: it ran no command (gate, measure, mutants, the checks before done) and
    put nothing back (a frozen artifact, a change out of scope)."""
    return not outcome.commands and outcome.mutation is None and outcome.metric is None and not outcome.reverted \
        and done_check is None


def artifact_stats(produces: dict[str, Placement]) -> list[tuple]:
    """The stage's artifacts in the project tree as they are on disk: each file's and folder's kind, size, times
    and inode (a folder's files too), to tell whether the stage wrote any."""
    out: list[tuple] = []
    for p in produces.values():
        if p.in_run_dir:
            continue  # the run dir is no part of a checkpoint
        out.append((p.entry, _stat(p.path)))
        if p.is_dir and p.path.is_dir() and not p.path.is_symlink():
            for root, dirs, files in os.walk(p.path):
                dirs.sort()
                out.extend((os.path.join(root, name), _stat(Path(root, name))) for name in sorted(dirs + files))
    return out


def _stat(path: Path) -> tuple | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino
