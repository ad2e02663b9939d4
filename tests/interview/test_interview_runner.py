"""The engine-facing interview runner: one answer per call, the pause, the computed gate."""

from __future__ import annotations

import pytest

from odin_magic.interview import ScriptedInterviewModel
from odin_magic.interview.runner import (
    AwaitingAnswer, DeepInterviewRunner, convergence_points, interview_state, interview_verdict,
    pending_question, render_question
)
from odin_magic.interview.topology import TopologyEditError
from odin_magic.runs.state import Usage
from odin_magic.workers.base import CommandEvidence, WorkerError

from support.interview_loops import TALK_LOOP as LOOP
from support.stage_jobs import Events, judge_job, loop_from, stage_job

SCRIPT = """
goal: Review imports
components: [Ingestion]
rounds:
  2:
    challenge: {probe: "Do we need imports at all?"}
  default:
    assessment:
      scores: {Ingestion: {goal: .9, constraints: .9, criteria: .9}}
      criteria: {Ingestion: ["Given a CSV of 3 rows, when imported, then 3 rows are stored"]}
"""


class EngineSession:
    """What the engine hands the runner: only ``answer`` is read (and cleared)."""

    answer: str | None = None


def answer_in_turn(runner: DeepInterviewRunner, job, answers) -> None:
    """Perform the stage once per answer (None: nothing new), through the pauses between questions."""
    session = EngineSession()
    for text in answers:
        session.answer = text
        try:
            runner(session, job, Events())
        except AwaitingAnswer:
            pass


def test_the_runner_pauses_at_every_question_and_finishes_with_a_result(project):
    loop = loop_from(LOOP)
    recorded = []
    runner = DeepInterviewRunner(ScriptedInterviewModel.from_yaml(SCRIPT),
                                 record=lambda session, summary: recorded.append(summary))
    job = stage_job(loop, "interview", project)
    events = Events()
    session = EngineSession()
    with pytest.raises(AwaitingAnswer) as wait:
        runner(session, job, events)
    assert wait.value.question.kind == "topology"
    assert "answer: confirm | merge A, B" in wait.value.text
    # a bad topology edit is the user's error; the question stays waiting
    session.answer = "defer Nothing"
    with pytest.raises(TopologyEditError):
        runner(session, job, events)
    assert session.answer is None and pending_question(job.run_dir).kind == "topology"
    answers = iter(["confirm", "a", "No, they are the point", "b", "c"])
    result = None
    while result is None:
        session.answer = next(answers)
        try:
            result = runner(session, job, events)
        except AwaitingAnswer as w:
            assert w.summary == recorded[-1]
    assert "interview finished (converged) after 3 rounds" in result.summary
    assert [s.rounds for s in recorded][-1] == 3 and recorded[-1].ambiguity == 0.1
    assert any("round 1: ambiguity 0.10" in t for t in events.of("info"))
    state = interview_state(job.run_dir)
    assert convergence_points(state) == [(1, 0.1, None), (2, 0.1, "contrarian"), (3, 0.1, None)]
    verdict = runner.judge(judge_job(loop, "interview", project), events).verdict
    assert verdict.passed and verdict.blocking == []
    assert "run ambiguity 0.10 <= threshold 0.15" in verdict.reasons
    # the stage runs again with nothing new (a crash before the gate was recorded): no question, same result
    assert runner(EngineSession(), job, events).summary == result.summary


def test_a_failing_model_call_carries_what_the_step_spent_before_it(project):
    class ChallengeFails(ScriptedInterviewModel):
        """The scripted model, but the contrarian's call fails after spending 7 input tokens."""

        def challenge(self, brief, kind):
            err = WorkerError("the API went away")
            err.usage = Usage(input_tokens=7)
            raise err

    runner = DeepInterviewRunner(ChallengeFails.from_yaml(SCRIPT))
    job = stage_job(loop_from(LOOP), "interview", project)
    session = EngineSession()
    for text in (None, "confirm"):
        session.answer = text
        with pytest.raises(AwaitingAnswer):
            runner(session, job, Events())
    session.answer = "a"  # scores round 1, asks round 2's question, and its challenge fails
    with pytest.raises(WorkerError) as failed:
        runner(session, job, Events())
    spent = failed.value.usage
    assert spent.input_tokens > 7 and spent.output_tokens > 0  # round 1's score and round 2's question


def test_a_failed_gate_or_a_revision_reopens_the_interview(project):
    loop = loop_from(LOOP)
    runner = DeepInterviewRunner(ScriptedInterviewModel.from_yaml(SCRIPT))
    job = stage_job(loop, "interview", project)
    answer_in_turn(runner, job, (None, "confirm", "a", "x", "b", "c"))
    assert interview_state(job.run_dir).phase == "done"
    revised = stage_job(loop, "interview", project, feedback="cover XLSX too")
    with pytest.raises(AwaitingAnswer) as wait:
        runner(EngineSession(), revised, Events())
    assert wait.value.question.round == 4
    assert interview_state(job.run_dir).feedback == ["cover XLSX too"]


def test_the_computed_gate_fails_honestly(project):
    loop = loop_from(LOOP)
    job = stage_job(loop, "interview", project)
    verdict = interview_verdict(job.run_dir, "interview")
    assert not verdict.passed and "no interview state" in verdict.blocking[0]
    with pytest.raises(AwaitingAnswer):  # waiting at round 0: a gate judged now must fail
        DeepInterviewRunner(ScriptedInterviewModel.from_yaml(SCRIPT))(EngineSession(), job, Events())
    verdict = interview_verdict(job.run_dir, "interview")
    assert not verdict.passed and "the interview is not finished (round 0)" in verdict.blocking
    stuck = """
components: [Ingestion]
rounds:
  default:
    assessment:
      scores: {Ingestion: {goal: .5, constraints: .5, criteria: .5}}
      open_questions: [{text: "Which currency?", blocking: true}]
"""
    runner = DeepInterviewRunner(ScriptedInterviewModel.from_yaml(stuck))
    loop = loop_from(LOOP.replace("challenges: [contrarian@2]", "challenges: [], hard_cap: 3"))
    job = stage_job(loop, "interview", project, run_id="20260101-000001-stuck")
    answer_in_turn(runner, job, (None, "confirm", "a", "b", "c"))
    failing = CommandEvidence(cmd="false", exit_code=1, timed_out=False, duration_s=0, stdout_tail="", stderr_tail="")
    verdict = runner.judge(judge_job(loop, "interview", project, [failing], run_id=job.run_id), Events()).verdict
    assert not verdict.passed
    assert verdict.blocking == [
        "run ambiguity 0.50 > threshold 0.15 (worst: Ingestion)",
        "no testable acceptance criterion for: Ingestion",
        "blocking open question: Which currency?",
        "gate command failed: false",
    ]
    assert verdict.non_blocking == ["[Ingestion] residual ambiguity 0.50 above the target 0.15 (weakest: goal 0.50)"]


def test_render_question_lists_options_and_commands():
    from odin_magic.interview.models import Candidate, PendingQuestion

    q = PendingQuestion(kind="question", round=2, text="Which parser?", component="Ingestion", dimension="constraints",
                        ambiguity=0.42, options=[Candidate(answer="csv module", why="stdlib", confidence="high"),
                                                 Candidate(answer="pandas")], allow_auto=True)
    assert render_question(q) == (
        "Round 2 | Component: Ingestion | Targeting: constraints | Ambiguity: 42%\n"
        "Which parser?\n"
        "  1) csv module [high] — stdlib\n"
        "  2) pandas [medium]\n"
        "answer: your answer | a number to pick an option | `you decide` | `skip`"
    )


def test_a_finished_interview_joins_the_run_thread_once(project):
    from odin_magic.workers.conversation import RunThread

    loop = loop_from(LOOP)
    runner = DeepInterviewRunner(ScriptedInterviewModel.from_yaml(SCRIPT))
    job = stage_job(loop, "interview", project)
    answer_in_turn(runner, job, (None, "confirm", "a", "No, they are the point", "b", "c"))
    runner(EngineSession(), job, Events())  # performed again with nothing new: no second segment
    thread = RunThread.load(job.run_dir)
    assert [s.stage for s in thread.segments] == ["interview"]
    user, assistant = thread.segments[0].messages
    text = user["content"][0]["text"]
    assert "round 2 challenge (contrarian): Do we need imports at all? -> No, they are the point" in text
    # the spec reaches a later stage once, through its consumes (read fresh): the thread names it only
    assert "## Acceptance Criteria" not in text and "spec.md is given it fresh" in text
    assert assistant["content"][0]["text"].startswith("Interview finished (converged) after 3 rounds")


def test_an_unreadable_interview_state_is_said_where_the_question_would_be(project):
    from odin_magic.interview.runner import waiting_question
    from odin_magic.interview.session import InterviewError
    from odin_magic.runs.state import RunState

    job = stage_job(loop_from(LOOP), "interview", project)
    with pytest.raises(AwaitingAnswer):
        DeepInterviewRunner(ScriptedInterviewModel.from_yaml(SCRIPT))(EngineSession(), job, Events())
    state = RunState(run_id=job.run_id, loop="talk", task="t", started_at="2026-06-14T14:35:01",
                     status="awaiting_answer", current_stage="interview", max_iterations=5)
    assert waiting_question(job.run_dir, state).startswith("Round 0 | Topology")
    (job.run_dir / "interview.json").write_text('{"stage": "interview", "ta')
    with pytest.raises(InterviewError, match="cannot be read"):
        pending_question(job.run_dir)
    shown = waiting_question(job.run_dir, state)
    assert shown.startswith("(the waiting question cannot be shown:") and "interview.json" in shown
