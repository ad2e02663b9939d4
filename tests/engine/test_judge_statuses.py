"""Judge statuses (issue 11, item 5; seed 002): DONE / DONE_WITH_CONCERNS / NEEDS_CONTEXT / BLOCKED.

The REAL engine, Claude worker and SDK against the offline scripted Messages API.
"""

from __future__ import annotations

import json

from odin_magic.render.text import render_status
from odin_magic.loop.roles import POLICIES
from odin_magic.workers.base import Verdict
from odin_magic.runs import evidence as gate_evidence

from support.scripted_runs import Events, scripted_engine

TWO_STAGES = """
name: judged
max_iterations: 5
stages:
  - id: build
    produces: [src/]
    gate: {mode: ai, check: src/app.py prints hello}
  - id: review
    agent: reviewer
    consumes: [src/]
    produces: [review.md]
    gate: {mode: ai+human, check: the review is sound}
"""

WORK = """
stages:
  build:
    - tools: [{write: {file_path: src/app.py, content: "print('hello')\\n"}}]
    - text: built
  review:
    - tools: [{write: {file_path: "{run_dir}/review.md", content: "fine\\n"}}]
    - text: reviewed
  build.context:
    - tools: [{read: {file_path: src/app.py}}]
    - text: "FINDINGS: src/app.py prints hello with print(); the project targets Python 3.12."
"""


def judge_requests(model):
    return [b for b in model.requests if "output_config" in b]


def position(engine, state) -> dict:
    return json.loads((engine.run_dir(state.run_id) / "scripted-model.json").read_text())


def test_a_verdict_without_a_status_is_done():
    assert Verdict.model_validate({"passed": True}).status == "DONE"
    assert "status" in Verdict.model_json_schema()["required"]  # the model is asked for it


def test_passed_true_with_a_blocking_finding_fails(project, write_loop):
    write_loop(TWO_STAGES)
    engine, _ = scripted_engine(project, WORK + """
judge:
  build:
    - {status: DONE, passed: true, blocking: ["app.py has no newline handling"]}
    - {status: DONE, passed: true}
  review: {status: DONE, passed: true}
""")
    state = engine.start("judged", "t")
    first = state.history[0]
    assert (first.stage, first.result, first.failure) == ("build", "fail", "recoverable")
    assert "blocking" in first.reason and "newline handling" in first.reason
    assert state.status == "awaiting_approval"


def test_needs_context_runs_one_read_only_explorer_then_judges_again(project, write_loop):
    write_loop(TWO_STAGES)
    events = Events()
    engine, model = scripted_engine(project, WORK + """
judge:
  build:
    - {status: NEEDS_CONTEXT, passed: false, questions: ["Which Python version does the project target?"]}
    - {status: DONE, passed: true, reasons: ["prints hello; 3.12 per the explorer"]}
  review: {status: DONE, passed: true}
""", events)
    state = engine.start("judged", "t")
    assert [(e.stage, e.result) for e in state.history] == [("build", "pass"), ("review", "pass")]
    assert state.total_iterations == 0
    pos = position(engine, state)
    assert pos["attempts"].get("build.context") == 1 and pos["attempts"]["build"] == 1
    assert pos["answers"]["judge/build"] == 2
    explore = [b for b in model.requests if "output_config" not in b
               and "Which Python version" in json.dumps(b.get("messages"))]
    assert explore, "the explorer was asked the judge's question"
    # the explore role's policy: read, glob and grep only (any other tool call is refused)
    assert json.dumps(POLICIES["explore"].describe())[1:-1] in json.dumps(explore[0]["messages"])
    second = judge_requests(model)[1]
    assert "FINDINGS: src/app.py prints hello" in json.dumps(second["messages"])
    evidence = gate_evidence.read(engine.run_dir(state.run_id), state.history[0].evidence)
    assert "FINDINGS" in evidence["context"] and evidence["verdict"]["status"] == "DONE"


def test_needs_context_twice_fails_the_gate_after_one_explorer(project, write_loop):
    write_loop(TWO_STAGES)
    engine, _ = scripted_engine(project, WORK + """
judge:
  build:
    - {status: NEEDS_CONTEXT, passed: false, questions: ["what is hello?"]}
    - {status: NEEDS_CONTEXT, passed: false, questions: ["still unsure"]}
    - {status: DONE, passed: true}
  review: {status: DONE, passed: true}
""")
    state = engine.start("judged", "t")
    first = state.history[0]
    assert first.result == "fail" and "could not decide without more context" in first.reason
    assert position(engine, state)["attempts"]["build.context"] == 1  # once per gate evaluation


def test_done_with_concerns_passes_and_the_concerns_are_carried_forward(project, write_loop):
    write_loop(TWO_STAGES)
    events = Events()
    engine, model = scripted_engine(project, WORK + """
judge:
  build: {status: DONE_WITH_CONCERNS, passed: true, non_blocking: ["no test covers app.py"]}
  review: {status: DONE, passed: true}
""", events)
    state = engine.start("judged", "t")
    assert state.status == "awaiting_approval" and state.current_stage == "review"
    assert [(c.stage, c.text) for c in state.concerns] == [("build", "no test covers app.py")]
    # shown at the next pause, in status, and handed to the later judge
    pause = [e for e in events if e.kind == "paused"][-1]
    assert "no test covers app.py" in pause.text
    assert "concerns build: no test covers app.py" in render_status(state)
    assert "no test covers app.py" in json.dumps(judge_requests(model)[-1]["messages"])


def test_blocked_pauses_for_the_human_without_a_loopback(project, write_loop):
    write_loop(TWO_STAGES)
    events = Events()
    engine, _ = scripted_engine(project, WORK + """
judge:
  build:
    - {status: BLOCKED, passed: false, blocking: ["the spec asks for both Python 2 and 3.12 only"]}
    - {status: DONE, passed: true}
  review: {status: DONE, passed: true}
""", events)
    (project / "src").mkdir()
    (project / "src" / "keep.py").write_bytes(b"# was here before\n")
    state = engine.start("judged", "t")
    assert state.status == "blocked" and state.total_iterations == 0
    assert state.blocked.kind == "judge" and "Python 2 and 3.12" in state.blocked.reason
    # the stage's work is reverted to its checkpoint: app.py is gone, what was there stays
    assert not (project / "src" / "app.py").exists()
    assert (project / "src" / "keep.py").read_bytes() == b"# was here before\n"
    assert "reverted: 1 file(s)" in state.blocked.reason
    assert state.history[-1].failure == "blocked"
    state = engine.run()  # the human resolved it: the stage runs again
    assert state.status == "awaiting_approval" and state.current_stage == "review"


DRY_LOOP = """
name: drystat
max_iterations: 3
stages:
  - id: a
    produces: [docs/a.md]
    gate: {mode: ai, check: a exists}
  - id: b
    produces: [docs/b.md]
    gate: {mode: ai, check: b exists}
"""


def test_the_dry_worker_scripts_statuses(project, write_loop):
    from odin_magic.engine.orchestrator import Engine
    from odin_magic.runs.state import DryOptions

    write_loop(DRY_LOOP)
    engine = Engine(project)
    state = engine.start("drystat", "t", dry=DryOptions(gates=["a:concerns", "b:blocked"]))
    assert [(c.stage, c.text) for c in state.concerns] == [("a", "dry run: scripted concern (a:concerns)")]
    assert state.status == "blocked" and state.blocked.kind == "judge" and state.total_iterations == 0
    assert not (project / "docs" / "b.md").exists() and (project / "docs" / "a.md").exists()  # b reverted
    assert engine.run().status == "done"
