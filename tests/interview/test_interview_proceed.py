"""Issue 10 item 9: `proceed` after the soft-cap warning ends the interview with the user's
acceptance of the residual ambiguity (the gate passes, no loopback, not asked again), and a
`defer` that would defer every component is refused at once."""

from __future__ import annotations

import re
import threading

import pytest

from odin_magic.engine.orchestrator import Engine
from odin_magic.interview import ScriptedInterviewModel
from odin_magic.interview.runner import DeepInterviewRunner, interview_state
from odin_magic.interview.topology import TopologyEditError, apply_topology_edits, parse_topology_answer
from odin_magic.render.text import render_status
from odin_magic.runs.state import DryOptions
from odin_magic.workers.dry import DryWorker

from support.interview_loops import STUCK, TALK_LOOP


class Events(list):
    def __call__(self, event):
        self.append(event)


@pytest.fixture
def engine(project, write_loop):
    write_loop(TALK_LOOP.replace("challenges: [contrarian@2]", "challenges: []"))
    events = Events()
    engine = Engine(project, worker=DryWorker(DryOptions(), threading.Event()), listener=events)
    engine.interview_runner = DeepInterviewRunner(ScriptedInterviewModel.from_yaml(STUCK),
                                                  record=engine.record_interview)
    engine.events = events
    return engine


def answer_to_round_eleven(engine):
    state = engine.start("talk", "import CSV files")
    state = engine.answer("confirm")
    for n in range(1, 11):
        state = engine.answer(f"answer {n}")
    assert state.status == "awaiting_answer" and state.interview.rounds == 10  # round 11 asks; proceed is offered
    return state


def test_proceed_passes_the_gate_as_accepted_with_no_loopback(engine):
    answer_to_round_eleven(engine)
    state = engine.answer("proceed")
    assert state.status == "awaiting_approval" and state.current_stage == "interview"
    assert state.total_iterations == 0 and state.iterations == {}  # no loopback spent
    last = state.history[-1]
    assert (last.stage, last.result, last.gate) == ("interview", "pass", "ai-pending")
    verdict = [e for e in engine.events if e.kind == "gate_verdict"][-1].data
    assert verdict["passed"] and verdict["reasons"][0].startswith("accepted by the user at ambiguity 0.50 (target 0.15)")
    run_dir = engine.run_dir(state.run_id)
    spec = (run_dir / "spec.md").read_text()
    open_questions = spec.split("## Open Questions", 1)[1].split("\n## ", 1)[0]
    assert "[Ingestion] residual ambiguity 0.50 above the target 0.15 (weakest: goal 0.50) — accepted by the user" \
        in open_questions
    assert "accepted by the user at ambiguity 0.50" in (run_dir / "interview-log.md").read_text()
    assert state.interview.accepted is True
    status = render_status(state, engine.loop_for(state.run_id))
    assert "ambiguity 0.50 vs threshold 0.15 (above threshold, accepted by the user)" in status

    questions = len([e for e in engine.events if e.kind == "question"])
    state = engine.approve()  # the next stage runs; the interview is not asked again
    assert state.status == "done" and state.total_iterations == 0
    assert len([e for e in engine.events if e.kind == "question"]) == questions
    assert interview_state(run_dir).rounds[-1].number == 10


def test_revise_after_proceed_reopens_the_interview(engine):
    answer_to_round_eleven(engine)
    engine.answer("proceed")
    state = engine.revise("Ingestion also takes XLSX")
    assert state.status == "awaiting_answer"  # the interview continues with the feedback
    iv = interview_state(engine.run_dir(state.run_id))
    assert iv.accepted_ambiguity is None and iv.stopped_by is None
    assert state.interview.accepted is None  # no longer accepted: the interview asks again


@pytest.mark.parametrize("answer", ["defer Ingestion, Export", "defer Ingestion; defer Export"])
def test_deferring_every_component_is_refused_at_once(answer):
    from test_interview_topology import proposed

    st = proposed("Ingestion", "Export")
    with pytest.raises(TopologyEditError, match=re.escape("every component is deferred")):
        apply_topology_edits(st, parse_topology_answer(answer))  # no `confirm` needed to be refused
    assert [c.status for c in st.components] == ["active", "active"]


def test_the_interview_refuses_deferring_everything_at_round_zero(engine):
    state = engine.start("talk", "import CSV files")
    with pytest.raises(TopologyEditError, match="every component is deferred"):
        engine.answer("defer Ingestion, Export")
    iv = interview_state(engine.run_dir(state.run_id))
    assert iv.pending.kind == "topology" and all(c.status == "active" for c in iv.components)
