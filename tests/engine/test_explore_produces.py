"""An explore stage may declare `produces` (issue 9, item 12): the explore worker keeps its read-only
tools and the engine writes its final report to the stage's single document. A loop with every agent
form validates and runs, through the real SDK against the local fake Messages API."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from odin_magic.workers.config import Settings
from odin_magic.engine.orchestrator import Engine
from odin_magic.loop.validation import validate_text
from odin_magic.workers.claude import REFUSALS_FILE, ClaudeWorker

from support.fake_messages import FakeMessages

EVERY_AGENT = """
name: every-agent
version: 1
description: Every agent form, with an explore survey that produces survey.md.
max_iterations: 3
stages:
  - id: survey
    agent: explore
    consumes: [src/]
    produces: [survey.md]
    gate: {mode: ai, check: survey.md maps the code}
  - id: plan
    agent: planner
    consumes: [survey.md]
    produces: [docs/plan.md]
    gate: {mode: ai, check: docs/plan.md has steps}
  - id: build
    agent: executor
    consumes: [docs/plan.md]
    produces: [src/]
    gate: {mode: ai, check: src/calc.py has add}
  - id: notes
    agent: inline
    produces: [docs/notes.md]
    gate: {mode: ai, check: docs/notes.md exists}
  - id: recheck
    agent: fresh
    consumes: [docs/notes.md]
    produces: [docs/recheck.md]
    gate: {mode: ai, check: docs/recheck.md exists}
  - id: attack
    agent: critic
    consumes: [docs/plan.md, src/]
    produces: [tests/]
    gate: {mode: ai, check: the tests exist}
  - id: review
    agent: {role: reviewer, fresh: true}
    consumes: [survey.md, src/]
    produces: [docs/review.md]
    gate: {mode: ai, check: docs/review.md lists findings}
  - id: audit
    agent: {role: explore, fresh: false}
    produces: [audit.md]
    gate: {mode: ai, check: audit.md lists the risks}
"""

SURVEY = "# Survey\n\n- src/calc.py:1 defines add(a, b)\n- no tests yet\n"


def test_a_loop_with_every_agent_form_and_an_explore_survey_validates():
    report = validate_text(textwrap.dedent(EVERY_AGENT), "every-agent.yaml", expected_name="every-agent")
    assert report.ok, report.format()
    assert not report.warnings


def test_it_runs_and_the_engine_writes_the_explore_reports(project: Path, write_loop):
    write_loop(EVERY_AGENT)
    (project / "src").mkdir()
    (project / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    run_dir = lambda: next((project / ".odin-loop" / "runs").iterdir())  # noqa: E731
    fake = FakeMessages()
    # survey (explore): it reads, tries to write its report itself (refused: no write tool), then answers
    fake.tool("read", {"file_path": "src/calc.py"})
    fake.tool("write", {"file_path": "survey.md", "content": "x"})
    fake.reply(SURVEY)
    fake.verdict(passed=True, reasons=["survey.md cites src/calc.py:1"])
    for stage, path, content in [("plan", "docs/plan.md", "1. add tests"), ("build", "src/calc.py", "def add(a, b):\n    return a + b\n"),
                                 ("notes", "docs/notes.md", "notes"), ("recheck", "docs/recheck.md", "ok")]:
        fake.tool("write", {"file_path": path, "content": content}).reply(f"{stage} done")
        fake.verdict(passed=True, reasons=[f"{stage} ok"])
    fake.tool("write", {"file_path": "tests/test_calc.py", "content": "def test_add(): pass\n"}).reply("harness done")
    fake.verdict(passed=True, reasons=["harness ok"])
    fake.tool("write", {"file_path": "docs/review.md", "content": "no findings"}).reply("review done")
    fake.verdict(passed=True, reasons=["review ok"])
    fake.reply("# Audit\n\n- risk: add has no type checks\n")  # explore, inline
    fake.verdict(passed=True, reasons=["audit.md lists a risk"])

    worker = ClaudeWorker(Settings(max_retries=1), client_factory=fake.factory(max_retries=1))
    events = []
    engine = Engine(project, worker=worker, listener=events.append)
    state = engine.start("every-agent", "build a tiny calculator")

    assert state.status == "done", (state.failure_reason, state.history)
    assert fake.pending == 0 and not fake.unexpected
    rd = run_dir()
    assert (rd / "survey.md").read_text() == SURVEY  # written by the engine from the explore report
    assert (rd / "audit.md").read_text().startswith("# Audit")
    started = [(e.data["agent"], e.data["fresh"]) for e in events if e.kind == "stage_started"]
    assert started == [("explore", True), ("planner", False), ("executor", False), ("inline", False),
                       ("fresh", True), ("critic", True), ("reviewer", True), ("explore", False)]
    assert [h.agent for h in state.history] == ["explore", None, None, None, "fresh", "critic", "reviewer", None]
    # the explore worker had no way to write: its write call was refused and recorded
    refusals = [json.loads(line) for line in (rd / REFUSALS_FILE).read_text().splitlines()]
    assert refusals and refusals[0]["stage"] == "survey" and "may not use the write tool" in refusals[0]["message"]
    # its brief said the engine saves the report; the next stage read the survey
    survey_brief = json.dumps(fake.bodies(purpose="work", stage="survey")[0].body["messages"])
    assert "the engine saves it" in survey_brief
    plan_brief = json.dumps(fake.bodies(purpose="work", stage="plan")[0].body["messages"])
    assert "src/calc.py:1 defines add" in plan_brief
