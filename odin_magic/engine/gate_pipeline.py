"""The gate pipeline of a stage execution: one :class:`~odin_magic.engine.gates.GateOutcome`, built once by
checks run in order, each adding its part to the shared :class:`~odin_magic.engine.gates.GateParts`:

frozen (a frozen artifact the stage changed is restored and fails the gate) → scope (changes outside the
stage's scope are reverted and fail the gate) → produces → commands → the metric (a ``measure:``
against its baseline: :mod:`odin_magic.engine.metric_gate`) → the
judge (:mod:`odin_magic.engine.gates`) → the judge comparison (``compare: baseline``:
:mod:`odin_magic.engine.judge_compare`) → mutation (a passing gate's commands must fail on mutants) →
completion (the last stage: the checks before done).

A check that decides the gate stops the pipeline; the later ones do not run. A check whose usage puts the
run over budget ends the stage without a gate record (:class:`OverBudget`).
"""

from __future__ import annotations

import functools
import shutil
from dataclasses import dataclass, field, replace
from typing import Any

from odin_magic.engine import (
    attribution, completion, frozen, gates, judge_compare, judge_context, judging, metric_gate, mutation, scope
)
from odin_magic.engine.session import InterviewRunner, Session, WorkerFailed
from odin_magic.loop.artifacts import Placement, placements
from odin_magic.loop.sandboxing import stage_sandbox
from odin_magic.loop.schema import Stage
from odin_magic.loop.contract import CONTRACTS_DIR
from odin_magic.runs.checkpoints import StageCheckpoint
from odin_magic.runs.roadmap_progress import new_run_fix, phase_of_task
from odin_magic.runs.state import Usage
from odin_magic.workers.base import EventSink, JudgeJob, StageJob, WorkerError


class OverBudget(Exception):
    """A check's usage put the run over budget: the run has failed, the stage ends without a gate record."""


@dataclass(frozen=True)
class Execution:
    """The stage execution being gated: its job, where its artifacts are, what it did."""

    job: StageJob
    places: tuple[dict[str, Placement], dict[str, Placement]]  # produces, consumes
    runner: InterviewRunner | None  # the interview runner that performed it (and may judge it)
    ckpt: StageCheckpoint | None  # its checkpoints, when it was performed
    sink: EventSink
    stepping: bool = False
    edit_checks: list[dict] = field(default_factory=list)  # the worker's fast-fail checks of what it wrote
    earlier: dict[str, str | None] | None = None  # compared run-dir artifacts before it (judge_compare.earlier_versions)


@dataclass(frozen=True, kw_only=True)
class StageGate(gates.GateContext):
    """What the engine's checks need besides the gate's own: the engine, the drive, the execution."""

    engine: Any  # the Engine (its records, events and checkpoints)
    session: Session
    execution: Execution
    done: list = field(default_factory=list)  # the checks before done, once they ran (one CompletionReport)

    @property
    def ckpt(self) -> StageCheckpoint | None:
        return self.execution.ckpt

    @property
    def stepping(self) -> bool:
        return self.execution.stepping


def stage_gate(engine, s: Session, execution: Execution) -> StageGate:
    """The gate's context for ``execution`` of its stage in the drive ``s``."""
    st, job = s.state, execution.job
    stage, produces, sink = job.stage, execution.places[0], execution.sink

    @functools.cache
    def inputs() -> str:  # assembled once per gate, when a judge first needs them
        return judge_context.assemble(judge_context.Sources(
            stage, engine.project_dir, s.handle.run_dir, {k: v.path for k, v in execution.places[1].items()},
            judge_context.execution_diff(engine.checkpoints, execution.ckpt), tuple(job.produces.values())))

    runner = execution.runner
    judge = runner if runner is not None and hasattr(runner, "judge") else s.worker
    reads_inputs = getattr(judge, "judge_reads_inputs", True)  # a judge that never reads them (dry): not assembled

    def judge_job(commands, with_inputs: bool = True) -> JudgeJob:
        return JudgeJob(
            loop=s.loop, stage=stage, task=st.task, run_id=st.run_id, project_dir=engine.project_dir,
            run_dir=s.handle.run_dir, artifacts={k: v.path for k, v in produces.items()}, commands=commands,
            concerns=[f"{c.stage}: {c.text}" for c in st.concerns[-judging.CONCERNS_SHOWN:]],
            memory=job.memory, inputs=inputs() if with_inputs and reads_inputs else None,
        )

    def find_context(job: JudgeJob, verdict) -> tuple[str, Usage]:
        found = s.worker.perform(judging.explore_job(job, verdict), sink)
        return found.summary, found.usage

    def on_command(ev) -> None:
        engine._emit("gate_command", s.state, stage=stage.id, text=ev.cmd,
                     data={"exit_code": ev.exit_code, "timed_out": ev.timed_out, "duration_s": ev.duration_s})

    sandbox = stage_sandbox(s.loop, stage, engine.project_dir, s.handle.run_dir, produces)
    return StageGate(
        stage=stage, produces=produces, judge_job=judge_job, sink=sink, judge=judge,
        env=gates.CommandEnv(engine.project_dir, s.handle.run_dir, st.run_id, stage.id, sandbox),
        cwd=engine.project_dir,
        run_commands=st.dry is None or st.dry.run_commands, on_command=on_command, find_context=find_context,
        engine=engine, session=s, execution=execution)


def run_gate(gate: StageGate) -> tuple[gates.GateOutcome, completion.CompletionReport | None] | None:
    """The gate's outcome and the checks before done (when they ran); None when the run went over budget."""
    parts = gates.GateParts(edit_checks=gate.execution.edit_checks)
    try:
        gates.run_checks(CHECKS, gate, parts)
    except OverBudget:
        return None
    return parts.outcome(), (gate.done[0] if gate.done else None)


def check_scope(gate: StageGate, parts: gates.GateParts, restored: tuple[str, ...] = ()) -> bool:
    """What the stage changed, its risky files; changes outside its scope are reverted (but those already
    ``restored``) and fail the gate. Changes made outside the run (see attribution) are listed, never reverted."""
    ckpt, engine, run_dir = gate.ckpt, gate.engine, gate.session.handle.run_dir
    if ckpt is None:
        return True
    found = attribution.attribute(ckpt.changes, engine.project_dir, run_dir, gate.stage.id)  # changed outside the run:
    parts.changes = found.annotated(ckpt.changes)  # shown as such, never reverted nor blamed on the stage
    parts.risky = scope.risky(gate.session.loop, found.stage)
    if not found.stage:
        return True
    rule = scope.rule_for(gate.stage, engine.project_dir, run_dir)
    runner = scope.runner_changes(found.stage, engine.checkpoints, ckpt)
    theirs = {p.casefold() for p in frozen.guarded(engine.project_dir, gate.session, gate.stage)}  # any case:
    guarded = frozenset(c.path for c in found.stage  # pytest finds tests/Conftest.py on a case-insensitive disk
                        if c.path.casefold() in theirs and (c.path in runner or not c.path.endswith(scope.PYPROJECT)))
    bad = scope.violations(rule, found.stage, guarded, runner)
    if not bad:
        return True
    parts.reverted = [c.path for c in bad if c.path not in restored]
    if parts.reverted:
        engine.checkpoints.restore(ckpt.before, paths=parts.reverted)
    return parts.fail(scope.violation_reason(rule, bad, guarded, runner, _scope_of(gate.session.state.task)))


def _scope_of(task: str) -> str:
    """Where the run's scope is declared: a roadmap phase's contract (its loop's scope is the contract's), whose
    change applies to a new run; else the stage's."""
    phase = phase_of_task(task)
    if phase is None:
        return "the stage's scope"
    return f"the scope of {CONTRACTS_DIR}/{phase}.yaml; {new_run_fix(phase)}"


def check_frozen(gate: StageGate, parts: gates.GateParts) -> bool:
    """Frozen artifacts (see frozen) the stage changed are put back and fail the gate; its out-of-scope
    changes are reverted too."""
    broken = frozen.check(gate.engine, gate.session, gate.stage)
    if broken is None:
        return True
    reason, restored = broken
    scoped = check_scope(gate, parts, tuple(restored))
    parts.reverted = [*restored, *parts.reverted]
    return parts.fail(reason if scoped else f"{reason}; {parts.reason}")


def check_judge(gate: StageGate, parts: gates.GateParts) -> bool:
    """The gate's judge (:func:`odin_magic.engine.gates.check_judge`); its verdict told, its usage counted."""
    s, stage, engine = gate.session, gate.stage, gate.engine
    try:
        gates.check_judge(gate, parts)
    except WorkerError as exc:
        if engine._add_usage(s, stage.id, exc.usage):
            raise OverBudget() from None
        engine._emit("stopped", s.state, stage=stage.id, text=f"the judge of stage {stage.id} failed: {exc}")
        raise WorkerFailed(
            f"the gate of stage {stage.id!r} could not be judged: {exc}",
            hint="the run is still running; `odin run` re-runs the stage and its gate",
        ) from None
    engine._emit("gate_verdict", s.state, stage=stage.id, text="pass" if parts.passed else "fail",
                 data=parts.verdict.model_dump())
    if engine._add_usage(s, stage.id, parts.judge_usage):
        raise OverBudget()
    return parts.passed


def check_compare(gate: StageGate, parts: gates.GateParts) -> bool:
    """The judge comparison (``compare: baseline``, see judge_compare), once the judge passed the gate."""
    s, stage, engine = gate.session, gate.stage, gate.engine
    try:
        return judge_compare.check_compare(gate, parts)
    except judge_compare.OverBudgetSignal:
        raise OverBudget() from None
    except WorkerError as exc:
        if engine._add_usage(s, stage.id, exc.usage):
            raise OverBudget() from None
        engine._emit("stopped", s.state, stage=stage.id, text=f"the judge comparison of stage {stage.id} failed: {exc}")
        raise WorkerFailed(f"the gate of stage {stage.id!r} could not be compared: {exc}",
                           hint="the run is still running; `odin run` re-runs the stage and its gate") from None


def check_mutation(gate: StageGate, parts: gates.GateParts) -> bool:
    """The discrimination sensor: a passing gate's commands must fail on mutants of the code (see mutation)."""
    stage, s, engine = gate.stage, gate.session, gate.engine
    if not (gate.run_commands and stage.gate.mutate and stage.gate.commands):
        return True
    engine._emit("worker", s.state, stage=stage.id, text="mutation: checking that the gate's commands can fail",
                 data={"kind": "info"})
    try:
        report = mutation.run_mutants(
            engine.project_dir, mutation_targets(gate), stage.gate.commands, gate.env, gates.run_command,
            settings=mutation.MutationSettings(baseline_s=sum(c.duration_s for c in parts.commands),
                                               min_kill_ratio=s.loop.min_kill_ratio))
    except (OSError, shutil.Error) as exc:  # e.g. a file the scratch copy cannot read: not proven, said so
        report = mutation.MutationReport(min_kill_ratio=s.loop.min_kill_ratio,
                                         note=f"not proven: the project could not be copied for mutants: {exc}")
    parts.mutation = report.to_dict()
    engine._emit("worker", s.state, stage=stage.id, text=f"mutation: {report.summary()}", data={"kind": "info"})
    return True if report.passed else parts.fail(report.reason())


def mutation_targets(gate: StageGate) -> dict[str, list | None]:
    """What mutants may touch: the Python files the run has changed so far (from its first checkpoint to
    this stage's), each with its changed line ranges (the hunks of that diff); else, without checkpoints,
    those under the stage's project-tree artifacts, each wholly (None)."""
    s, ckpt, engine = gate.session, gate.ckpt, gate.engine
    produces, consumes = gate.execution.places
    first = next((e.checkpoint for e in s.state.history if e.checkpoint), None) or (ckpt.before if ckpt else None)
    if ckpt is None or first is None:
        return dict.fromkeys(mutation.targets(engine.project_dir, [*consumes.values(), *produces.values()]))
    files = [c.path for c in engine.checkpoints.changes(first, ckpt.after)
             if c.kind != "deleted" and c.path.endswith(".py") and not mutation.is_test_file(c.path)]
    lines = engine.checkpoints.changed_lines(first, ckpt.after, files) if files else {}
    return {f: lines.get(f, []) for f in files}


def check_completion(gate: StageGate, parts: gates.GateParts) -> bool:
    """Before the run may end (a pass of the last stage that ends it): its acceptance criteria and the
    project's suite (see completion). Their failure does not fail this gate: the record holds the run."""
    stage, s = gate.stage, gate.session
    finishing = not gate.stepping or stage.gate.pauses or bool(parts.risky)  # a stepped pause is approved to done
    if not finishing or s.loop.next_stage_id(stage.id) is not None:
        return True
    report = check_done(gate, outcome_changed=any(
        not c["path"].endswith(".ipynb") and not c.get("outside") for c in parts.changes))
    parts.completion = report.to_dict()
    gate.done.append(report)
    if gate.engine._add_usage(s, stage.id, report.judge_usage):
        raise OverBudget()
    return True


def check_done(gate: StageGate, outcome_changed: bool) -> completion.CompletionReport:
    """The run's acceptance criteria and the project's suite (see completion), told as a ``completion`` event."""
    s, stage, engine = gate.session, gate.stage, gate.engine
    changed = completion.changed_stages(s.handle.run_dir, s.state.history)
    code = completion.code_stage(s.loop, stage.id, changed + ([stage.id] if outcome_changed else []))
    code_artifacts = placements(code.produces, engine.project_dir, s.handle.run_dir, code.id) if code else {}

    def criterion_job(synthetic: Stage) -> JudgeJob:
        job = gate.judge_job([], with_inputs=False)  # a criterion is judged on its own, not the stage's inputs
        return replace(job, stage=synthetic, artifacts={**job.artifacts, **{k: v.path for k, v in code_artifacts.items()}})

    def run(command):
        ev = gates.run_command(command, engine.project_dir, gate.env)
        gate.on_command(ev)  # shown like the gate's own commands
        return ev

    check = completion.CompletionCheck(s.loop, s.handle.run_dir, engine.project_dir, code, dry=s.state.dry is not None)
    try:  # criteria are judged by the worker's judge, never an interview's
        report = completion.verify_completion(
            check, run if gate.run_commands else None, completion.criterion_judge(s.worker, criterion_job, gate.sink))
    except WorkerError as exc:
        engine._add_usage(s, stage.id, exc.usage)
        engine._emit("stopped", s.state, stage=stage.id, text=f"an acceptance criterion could not be judged: {exc}")
        raise WorkerFailed(f"an acceptance criterion of run {s.state.run_id} could not be judged: {exc}",
                           hint="the run is still running; `odin run` re-runs the last stage and its checks") from None
    engine._emit("completion", s.state, stage=stage.id, text="\n".join(report.lines()), data=report.to_dict())
    return report


#: The checks of a stage execution's gate, in order (the first four decide or stop; see the module docstring).
CHECKS: tuple[gates.Check, ...] = (check_frozen, check_scope, gates.check_produces, gates.check_commands,
                                   metric_gate.check_metric, check_judge, check_compare, check_mutation,
                                   check_completion)
