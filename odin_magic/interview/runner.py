"""The engine's side of a deep interview: perform the stage one answer at a time, and gate it.

:class:`DeepInterviewRunner` plugs into ``Engine(interview_runner=...)``. The
engine calls it as it would a worker's ``perform`` for every stage with
``interview.mode: deep``; it returns a :class:`StageResult` once the
interview has finished, or raises :class:`AwaitingAnswer` while a question
waits for the user (the run pauses with status ``awaiting_answer``). The
engine hands the user's reply over through ``session.answer`` (set by
``Engine.answer(text)``; read and cleared here). ``judge`` replaces the
model judge for these stages: the gate is the computed stop condition.

Reads for front ends (status, widgets, charts): :func:`interview_state`,
:func:`pending_question`, :func:`waiting_question`, :func:`convergence_points`.
"""

from __future__ import annotations

import os

from pathlib import Path
from typing import Any, Callable

from odin_magic.core.errors import OdinError
from odin_magic.runs.state import InterviewSummary, RunState
from odin_magic.workers.base import (
    EventSink, JudgeJob, JudgeResult, StageJob, StageResult, Verdict, WorkerError, WorkerEvent
)
from odin_magic.interview.awaiting import AwaitingAnswer, render_question  # noqa: F401  (raised here; defined apart so the engine imports it cheaply)
from odin_magic.interview.convergence import stop_check
from odin_magic.interview.models import InterviewState, PendingQuestion
from odin_magic.interview.protocol import InterviewModel
from odin_magic.interview.session import InterviewPlace, InterviewSession, load_state, state_path


ModelSource = InterviewModel | Callable[[], InterviewModel]


class DeepInterviewRunner:
    """``interview_runner`` for :class:`~odin_magic.engine.orchestrator.Engine`.

    ``model`` is an :class:`InterviewModel`, or a zero-argument factory called
    on first use (so a missing API key is reported when an interview starts,
    not when the engine is built). ``record`` receives ``(session, summary)``
    after every step — the engine's ``record_interview`` — so state.json's
    ``interview`` object follows every round.
    """

    def __init__(
        self,
        model: ModelSource,
        record: Callable[[Any, InterviewSummary], None] | None = None,
        clock: Callable[[], Any] | None = None,
    ):
        self._model_source = model
        self._model: InterviewModel | None = None
        self._record = record
        self._clock = clock

    @property
    def model(self) -> InterviewModel:
        if self._model is None:
            src = self._model_source
            self._model = src if isinstance(src, InterviewModel) else src()
        return self._model

    def open(self, job: StageJob, sink: EventSink | None = None) -> InterviewSession:
        def emit(kind: str, text: str, data: dict) -> None:
            if sink is not None and kind in ("notice", "interview_round", "interview_done"):
                sink(WorkerEvent(kind="info", stage=job.stage.id, text=text))

        place = InterviewPlace(run_dir=job.run_dir, project_dir=job.project_dir, stage=job.stage, task=job.task,
                               produces=job.produces)
        return InterviewSession.open(place, self.model, clock=self._clock, emit=emit)

    def __call__(self, session: Any, job: StageJob, sink: EventSink) -> StageResult:
        answer = getattr(session, "answer", None)
        if answer is not None:
            session.answer = None  # consumed: a failure below leaves the question waiting
        return self.perform(job, sink, answer=answer, session=session)

    def perform(self, job: StageJob, sink: EventSink, answer: str | None = None, session: Any = None) -> StageResult:
        iv = self.open(job, sink)
        st = iv.state
        was_done = iv.done
        if iv.done and not answer:
            fresh_feedback = job.feedback and job.feedback not in st.feedback
            if fresh_feedback or job.attempt != st.attempt:
                st.attempt = job.attempt
                iv.reopen(job.feedback if fresh_feedback else None)
        elif job.feedback and job.feedback not in st.feedback:
            st.feedback.append(job.feedback)
        st.attempt = job.attempt
        try:
            question = iv.answer(answer) if answer else iv.start()
        except WorkerError as exc:  # the calls that succeeded before the failing one were paid for too
            exc.usage = iv.take_usage() + exc.usage
            raise
        finally:
            if self._record is not None and session is not None:
                self._record(session, iv.summary())
        usage = iv.take_usage()
        if question is not None:
            raise AwaitingAnswer(question, usage, iv.summary())
        check = iv.stop_check()
        summary = (
            f"interview finished ({st.stopped_by}) after {st.round} rounds; ambiguity {check.ambiguity:.2f} "
            f"(target {st.threshold:.2f}); stop condition {'holds' if check.holds else 'does not hold'}"
        )
        if not was_done or answer:
            add_to_run_thread(job, iv, summary)
        return StageResult(summary=summary, usage=usage)

    def judge(self, job: JudgeJob, events: EventSink) -> JudgeResult:
        """The gate of a deep-interview stage: the computed stop condition (then ai+human approval applies)."""
        return JudgeResult(verdict=interview_verdict(job.run_dir, job.stage.id, job.commands))


def add_to_run_thread(job: StageJob, iv: InterviewSession, summary: str) -> None:
    """Give the run's inline thread the interview, as an inline stage's turns would (later inline stages see it)."""
    from odin_magic.workers.conversation import RunThread

    st = iv.state
    lines = [f"# Stage {job.stage.id}: {job.stage.display_title} (a deep interview, run by the engine)",
             "", f"Task of the run: {job.task}", "", "The interview, round by round:"]
    for r in st.rounds:
        if r.challenge and r.challenge.probe:
            lines.append(f"- round {r.number} challenge ({r.challenge.kind}): {r.challenge.probe} -> {r.challenge.answer}")
        by = " (auto-answer, an assumption)" if r.answered_by == "auto" else ""
        lines.append(f"- round {r.number} [{r.component} / {r.dimension}] Q: {r.question} A{by}: {r.answer}")
    # the spec itself reaches a later stage once: in its consumes, read fresh (not here as well)
    where = os.path.relpath(iv.spec_path, job.project_dir) if iv.spec_path.is_file() else None
    lines += ["", f"The interview wrote {where}: a stage that consumes spec.md is given it fresh; "
              "read it there, not from memory." if where else "The interview wrote no spec.md."]
    thread = RunThread.load(job.run_dir)
    thread.add_segment(job.stage.id, [
        {"role": "user", "content": [{"type": "text", "text": "\n".join(lines)}]},
        {"role": "assistant", "content": [{"type": "text", "text": summary.capitalize() + "."}]},
    ], summary)
    thread.save()


def interview_verdict(run_dir: Path, stage_id: str, commands=()) -> Verdict:
    state = interview_state(run_dir, stage_id)
    if state is None:
        reason = f"no interview state for stage {stage_id!r} in {run_dir}"
        return Verdict(passed=False, reasons=[reason], blocking=[reason])
    check = stop_check(state)
    reasons = check.reasons()
    blocking = []
    if state.phase != "done":
        blocking.append(f"the interview is not finished (round {state.round})")
    elif state.stopped_by == "user" and state.accepted_ambiguity is not None:  # `proceed`: the user accepts it
        failed = [f"gate command failed: {c.cmd}" for c in commands if not c.ok]
        accepted = (f"accepted by the user at ambiguity {state.accepted_ambiguity:.2f} "
                    f"(target {state.threshold:.2f}); the residual ambiguity is listed under Open Questions")
        return Verdict(passed=not failed, reasons=[accepted] + reasons, blocking=failed,
                       non_blocking=[q.text for q in state.open_questions if not q.resolved])
    if not check.ambiguity_ok:
        blocking.append(reasons[0])
    if check.missing_criteria:
        blocking.append(reasons[1])
    blocking += [f"blocking open question: {q}" for q in check.blocking]
    blocking += [f"gate command failed: {c.cmd}" for c in commands if not c.ok]
    non_blocking = [q.text for q in state.open_questions if not q.blocking and not q.resolved]
    return Verdict(passed=not blocking, reasons=reasons, blocking=blocking, non_blocking=non_blocking)


def interview_state(run_dir: Path, stage_id: str = "interview") -> InterviewState | None:
    """The stage's interview as last saved, or None; an unreadable file is an OdinError."""
    return load_state(state_path(run_dir, stage_id))


def pending_question(run_dir: Path, stage_id: str = "interview") -> PendingQuestion | None:
    """The stage's waiting question, or None; an unreadable interview state is an OdinError."""
    state = interview_state(run_dir, stage_id)
    return state.pending if state else None


def waiting_question(run_dir: Path, state: RunState) -> str | None:
    """The question ``state`` waits on, rendered as a terminal shows it; None when it waits for none.

    An interview state that cannot be read yields a line saying so (views show it
    in place of the question; ``odin answer`` reports the error itself).
    """
    if state.status != "awaiting_answer":
        return None
    try:
        question = pending_question(run_dir, state.current_stage)
    except OdinError as exc:
        return f"(the waiting question cannot be shown: {exc})"
    return render_question(question) if question is not None else None


def convergence_points(state: InterviewState) -> list[tuple[int, float, str | None]]:
    """(round, run ambiguity, fired challenge) per answered round, for the live chart."""
    out = []
    for r in state.rounds:
        fired = r.challenge.kind if r.challenge and r.challenge.probe else None
        out.append((r.number, r.ambiguity, fired))
    return out
