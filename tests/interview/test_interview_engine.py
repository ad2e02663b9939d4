"""A deep interview inside a real run: the engine pauses for answers, records the summary, gates by the stop condition.

The Claude worker runs the other stages over the offline scripted Messages API;
the worker script's ``interview:`` section is the interview script.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from odin_magic.workers.config import Settings
from odin_magic.engine.orchestrator import Engine, WorkerFailed
from odin_magic.core.errors import RunRefused
from odin_magic.interview.topology import TopologyEditError
from odin_magic.workers.claude import ClaudeWorker
from odin_magic.workers.scripted import ScriptedModel, load_script

from support.interview_loops import TALK_LOOP as LOOP
from support.interview_loops import TALK_SCRIPT as SCRIPT

@pytest.fixture
def engine(project):
    (project / ".odin-loop" / "loops").mkdir(parents=True)
    (project / ".odin-loop" / "loops" / "talk.yaml").write_text(textwrap.dedent(LOOP))
    (project / "script.yaml").write_text(textwrap.dedent(SCRIPT))
    settings = Settings(model="claude-test", script=project / "script.yaml", max_retries=0)
    fake = ScriptedModel(load_script(project / "script.yaml"))
    events = []
    eng = Engine(project, worker=ClaudeWorker(settings, client_factory=fake.client_factory(max_retries=0)),
                 listener=events.append)
    eng.events = events
    return eng


def test_an_interview_run_pauses_for_each_answer_and_then_for_approval(engine, project):
    state = engine.start("talk", "csv review")
    assert (state.status, state.current_stage) == ("awaiting_answer", "interview")
    question = [e for e in engine.events if e.kind == "question"][-1]
    assert question.data["question"]["kind"] == "topology" and "C1 Ingestion, C2 Export" in question.text
    with pytest.raises(RunRefused):
        engine.approve()
    with pytest.raises(TopologyEditError):
        engine.answer("defer Reporting")
    assert engine.status().status == "awaiting_answer"
    state = engine.answer("confirm")
    assert state.status == "awaiting_answer" and state.interview.rounds == 0
    state = engine.answer("CSV from two banks")
    assert state.interview.model_dump(exclude_none=True) == {
        "threshold": 0.15, "rounds": 1, "ambiguity": 1.0, "topology": ["Ingestion", "Export"]}
    assert [e for e in engine.events if e.kind == "question"][-1].data["question"]["kind"] == "challenge"
    engine.answer("yes, the accountant needs it")
    engine.answer("the accountant, monthly")
    # round 3 asks again (no early exit before round 3); then the stop condition holds
    state = engine.answer("by bank reference")
    assert state.status == "awaiting_approval" and state.current_stage == "interview"
    assert state.interview.rounds == 3 and state.interview.ambiguity == 0.13
    assert [h.gate for h in state.history] == ["ai-pending"]
    verdict = [e for e in engine.events if e.kind == "gate_verdict"][-1].data
    assert verdict["passed"] and "run ambiguity 0.13 <= threshold 0.15" in verdict["reasons"]
    run_dir = engine.run_dir(state.run_id)
    on_disk = json.loads((run_dir / "state.json").read_text())
    assert on_disk["interview"] == {"threshold": 0.15, "rounds": 3, "ambiguity": 0.13,
                                    "topology": ["Ingestion", "Export"]}
    assert "## Convergence" in (run_dir / "spec.md").read_text()
    assert state.usage.by_stage["interview"].input_tokens > 0  # the interview's model calls are accounted
    state = engine.approve()
    assert state.status == "done"
    assert [h.gate for h in state.history] == ["ai-pending", "approved", "ai"]


def test_a_new_engine_resumes_the_waiting_question(engine, project):
    engine.start("talk", "csv review")
    engine.answer("confirm")
    again = Engine(project, worker=engine.worker)
    events = []
    again.listener = events.append
    state = again.run()  # at a question, run shows the question again; it does not approve anything
    assert state.status == "awaiting_answer"
    assert [e.data["question"]["round"] for e in events if e.kind == "question"] == [1]
    assert again.answer("CSV from two banks").interview.rounds == 1


def test_the_terminal_answers_with_odin_answer(engine, project, capsys, monkeypatch):
    from odin_magic import cli

    monkeypatch.setenv("ODIN_SCRIPT", str(project / "script.yaml"))
    monkeypatch.delenv("ODIN_INTERVIEW_SCRIPT", raising=False)
    engine.start("talk", "csv review")
    capsys.readouterr()
    assert cli.main(["question", "--project", str(project)]) == 0
    assert "Round 0 | Topology" in capsys.readouterr().out
    assert cli.main(["status", "--project", str(project)]) == 0
    status = capsys.readouterr().out
    assert "⏸ waiting for your answer:\nRound 0 | Topology" in status and "answer: confirm | merge A, B" in status
    assert cli.main(["answer", "defer", "Reporting", "--project", str(project)]) == 1
    assert "no component named 'Reporting'" in capsys.readouterr().err
    assert cli.main(["answer", "confirm", "--project", str(project)]) == 0
    out = capsys.readouterr().out
    assert "Round 1 | Component: Ingestion | Targeting: goal | Ambiguity: 100%\nWhich formats arrive?" in out
    assert 'odin answer "..."' in out


def test_an_ai_gated_interview_goes_straight_on_and_a_failed_gate_asks_again(engine, project):
    loops = project / ".odin-loop" / "loops"
    (loops / "quick.yaml").write_text(textwrap.dedent(LOOP).replace("name: talk", "name: quick").replace(
        "{mode: ai+human, check: the stop condition holds}", "{mode: ai, check: the stop condition holds}"))
    (loops / "capped.yaml").write_text(textwrap.dedent(LOOP).replace("name: talk", "name: capped").replace(
        "challenges: [contrarian@2]", "challenges: [], hard_cap: 1"))
    engine.start("quick", "csv review")
    for reply in ("confirm", "CSV", "yes, it is needed", "the accountant"):
        state = engine.answer(reply)
    state = engine.answer("by bank reference")
    assert state.status == "done", state
    assert [(h.stage, h.result, h.gate) for h in state.history] == [("interview", "pass", "ai"), ("build", "pass", "ai")]

    engine.start("capped", "csv review")
    engine.answer("confirm")
    state = engine.answer("CSV")  # hard cap 1: the interview stops with Export still vague
    assert [(h.stage, h.result) for h in state.history] == [("interview", "fail")]
    assert "run ambiguity 1.00 > threshold 0.15 (worst: Export)" in state.history[0].reason
    # the loopback retries the stage: the same interview goes on for another block of rounds
    assert (state.status, state.current_stage, state.iterations) == ("awaiting_answer", "interview", {"interview": 1})
    question = [e for e in engine.events if e.kind == "question"][-1].data["question"]
    assert (question["round"], question["component"]) == (2, "Export")


def test_revise_at_the_approval_pause_continues_the_interview(engine, project):
    engine.start("talk", "csv review")
    for reply in ("confirm", "CSV from two banks", "yes, the accountant needs it", "the accountant", "same ref"):
        state = engine.answer(reply)
    assert state.status == "awaiting_approval"
    state = engine.revise("Export must also cover XLSX")
    assert (state.status, state.current_stage) == ("awaiting_answer", "interview")
    question = [e for e in engine.events if e.kind == "question"][-1].data["question"]
    assert question["round"] == 4
    briefs_feedback = json.loads((engine.run_dir(state.run_id) / "interview.json").read_text())["feedback"]
    assert briefs_feedback == ["Export must also cover XLSX"]
    state = engine.answer("XLSX too, same columns")
    assert state.status == "awaiting_approval" and state.interview.rounds == 4


PLAIN_SCRIPT = """
stages:
  interview:
    - text: asking in prose
      tools:
        - write: {file_path: "{run_dir}/spec.md", content: "# Spec"}
        - write: {file_path: "{run_dir}/interview-log.md", content: "# Log"}
  build:
    - text: built it
default_verdict: {passed: true, reasons: [fine]}
"""


def test_a_deep_interview_stage_is_an_interview_even_when_a_script_has_turns_for_it(
        project, tmp_path, monkeypatch):
    """Stage turns never stand in for a deep interview: a script without an interview: section gets a clear,
    resumable error naming what to add. Its relative path resolves in the project, wherever the cwd is."""
    (project / ".odin-loop" / "loops").mkdir(parents=True)
    (project / ".odin-loop" / "loops" / "talk.yaml").write_text(textwrap.dedent(LOOP))
    (project / "plain.yaml").write_text(textwrap.dedent(PLAIN_SCRIPT))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("ODIN_INTERVIEW_SCRIPT", raising=False)
    settings = Settings(model="claude-test", script="plain.yaml", max_retries=0)
    fake = ScriptedModel(load_script(project / "plain.yaml"))
    engine = Engine(project, worker=ClaudeWorker(settings, client_factory=fake.client_factory(max_retries=0)))
    with pytest.raises(WorkerFailed, match=r"plain\.yaml has no answer for interview-propose.*"
                       r"add answers\.interview-propose\.interview"):
        engine.start("talk", "csv review")
    state = engine.status()
    assert (state.status, state.current_stage) == ("running", "interview")  # resumable, nothing performed
    assert not (engine.run_dir(state.run_id) / "spec.md").exists()


def test_the_run_times_out_while_an_interview_question_waits(engine, project):
    from datetime import datetime, timedelta

    loop_file = project / ".odin-loop" / "loops" / "talk.yaml"
    loop_file.write_text(loop_file.read_text().replace("max_iterations: 5", "max_iterations: 5\ntimeout_seconds: 60"))
    now = [datetime(2026, 6, 14, 14, 35, 1)]
    engine.clock = lambda: now[0]
    assert engine.start("talk", "csv review").status == "awaiting_answer"
    assert engine.answer("confirm").status == "awaiting_answer"  # within the time
    now[0] += timedelta(minutes=5)  # the user came back later than the loop allows
    state = engine.answer("CSV from two banks")
    assert state.status == "failed" and state.failure_reason.startswith("timed out")
    assert state.interview.rounds == 0  # the answer was not taken


def test_refusals_at_a_waiting_question_point_to_answer(engine, project):
    assert engine.start("talk", "csv review").status == "awaiting_answer"
    for action in (engine.approve, lambda: engine.revise("shorter"), lambda: engine.start("talk", "again")):
        with pytest.raises(RunRefused) as refused:
            action()
        assert "answer" in refused.value.hint, refused.value
