"""What a real model is sent and what its calls do (issue 25), through the real SDK against the local fake
Messages API: paths that mean what they say, only the tools a role may use, briefs without a success line
to game, thinking, a judge that reasons before its verdict, retries that carry the real error."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from odin_magic.core.errors import ConfigError
from odin_magic.engine.orchestrator import Engine
from odin_magic.loop.validation import validate_text
from odin_magic.loop.roles import POLICIES
from odin_magic.workers.claude import ClaudeWorker
from odin_magic.workers.config import Settings
from odin_magic.workers.scripted import message_body, reply_response

from support.fake_messages import FakeMessages
from support.stage_jobs import Events, judge_job, loop_from, perform_calls, stage_job, tool_results

LOOP = """
name: requests
max_iterations: 3
stages:
  - id: build
    agent: executor
    produces: [src/, notes.md]
    gate: {mode: ai, check: src exists}
  - id: plan
    agent: planner
    produces: [plan.md]
    gate: {mode: ai, check: plan.md maps the spec}
  - id: look
    agent: explore
    gate: {mode: ai, check: looked}
  - id: attack
    agent: critic
    produces: [harness-report.md]
    gate: {mode: ai, check: harness-report.md lists no blocking gap}
  - id: review
    agent: reviewer
    produces: [review.md]
    gate: {mode: ai, check: review.md lists no blocking finding}
"""


def perform(project: Path, stage_id: str, calls: list[tuple[str, dict]], **settings):
    """Perform ``stage_id`` with a model making ``calls``, one per turn; (fake, job, tool results, events)."""
    fake, job, events = perform_calls(loop_from(LOOP), stage_id, project, calls, **settings)
    results = [(bool(block.get("is_error")), json.dumps(block["content"])) for block in tool_results(fake)]
    return fake, job, results, events


# -- item 4: paths mean what they say -------------------------------------------------------------------


def test_run_and_project_variables_in_a_file_path_are_the_real_directories(project: Path):
    fake, job, results, _ = perform(project, "build", [
        ("write", {"file_path": "$ODIN_RUN_DIR/notes.md", "content": "in the run dir"}),
        ("write", {"file_path": "${ODIN_PROJECT_DIR}/src/y.py", "content": "y = 1\n"}),
        ("edit", {"file_path": "${ODIN_RUN_DIR}/notes.md", "old_string": "in", "new_string": "still in"}),
        ("read", {"file_path": "$ODIN_RUN_DIR/notes.md"}),
        ("glob", {"pattern": "*.md", "path": "$ODIN_RUN_DIR"}),
    ])
    assert all(not is_error for is_error, _ in results), results
    assert (job.run_dir / "notes.md").read_text() == "still in the run dir"
    assert (project / "src" / "y.py").read_text() == "y = 1\n"
    assert "still in the run dir" in results[3][1] and "notes.md" in results[4][1]
    assert not any("$" in p.name or p.name.startswith("{") for p in project.rglob("*"))  # no literal folder


def test_any_other_dollar_or_a_tilde_is_refused_naming_the_real_paths(project: Path):
    fake, job, results, events = perform(project, "build", [
        ("write", {"file_path": "$HOME/x.md", "content": "x"}),
        ("write", {"file_path": "~/y.md", "content": "y"}),
        ("read", {"file_path": "${RUN_DIR}/notes.md"}),
    ])
    assert all(is_error and "refused" in content for is_error, content in results), results
    for _, content in results:
        assert str(job.run_dir) in content and str(project) in content  # the real path to use instead
    assert "$HOME" in results[0][1] and "'~'" in results[1][1] and "${RUN_DIR}" in results[2][1]
    assert len(events.of("tool_refused")) == 3
    assert not any("$" in p.name or p.name == "~" for p in project.rglob("*"))


def test_a_role_is_offered_only_the_tools_it_may_use_and_its_brief_names_only_those(project: Path):
    for role, stage_id in (("executor", "build"), ("planner", "plan"), ("explore", "look"),
                           ("critic", "attack"), ("reviewer", "review")):
        fake, _, _, _ = perform(project, stage_id, [])
        body = fake.requests[0].body
        assert sorted(t["name"] for t in body["tools"]) == sorted(POLICIES[role].tools), role
        brief = json.dumps(body["messages"][-1]["content"]) + json.dumps(body["system"])
        assert ("bash" in brief) == ("bash" in POLICIES[role].tools), (role, brief)


def test_a_tool_the_role_is_not_offered_is_answered_with_an_error_and_recorded(project: Path):
    _, job, results, events = perform(project, "plan", [("bash", {"command": "touch escaped.txt"})])
    assert results[0][0] and not (project / "escaped.txt").exists()
    refused = events.of("tool_refused")
    assert refused and "the planner role may not use the bash tool" in refused[0]
    assert "may not use the bash tool" in (job.run_dir / "tool-refusals.jsonl").read_text()


def test_a_hard_link_to_a_file_elsewhere_leads_nowhere(project: Path, tmp_path: Path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "f.py").write_text("secret = 1\n")
    (outside / "g.py").write_text("other = 1\n")
    (project / "src").mkdir(exist_ok=True)
    os.link(outside / "f.py", project / "src" / "f.py")
    os.link(outside / "g.py", project / "src" / "g.py")
    os.chmod(project / "src" / "g.py", 0o640)
    _, _, results, _ = perform(project, "build", [
        ("write", {"file_path": "src/f.py", "content": "secret = 2\n"}),
        ("edit", {"file_path": "src/g.py", "old_string": "other = 1", "new_string": "other = 2"}),
    ])
    assert all(not is_error for is_error, _ in results), results
    assert (outside / "f.py").read_text() == "secret = 1\n" and (outside / "g.py").read_text() == "other = 1\n"
    assert (project / "src" / "f.py").read_text() == "secret = 2\n"
    assert (project / "src" / "g.py").read_text() == "other = 2\n"
    assert (project / "src" / "g.py").stat().st_nlink == 1 and (project / "src" / "g.py").stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in (project / "src").iterdir()) == ["f.py", "g.py"]  # no temporary file left


# -- item 5: incentives ------------------------------------------------------------------------------------


def test_reviewer_and_critic_briefs_carry_no_success_line_but_what_their_findings_do(project: Path):
    for stage_id, check in (("review", "lists no blocking finding"), ("attack", "lists no blocking gap")):
        fake, _, _, _ = perform(project, stage_id, [])
        body = fake.requests[0].body
        sent = json.dumps(body["messages"][-1]["content"]) + json.dumps(body["system"])
        assert check not in sent and "Gate: " not in sent, stage_id
        assert "the engine loops back" in sent and "on every finding you label blocking" in sent
        assert "Report every real problem" in sent
    fake, _, _, _ = perform(project, "plan", [])  # other roles still see the check they work to
    assert "Gate: plan.md maps the spec" in json.dumps(fake.requests[0].body["messages"][-1]["content"])


# -- item 3: thinking ---------------------------------------------------------------------------------------

THINKING_LOOP = """
name: thinking
max_iterations: 3
stages:
  - id: plain
    gate: {mode: ai, check: done}
  - id: look
    agent: explore
    consumes: [notes.md]
    gate: {mode: ai, check: looked}
  - id: quiet
    agent: executor
    thinking: false
    gate: {mode: ai, check: done}
  - id: deep
    agent: explore
    consumes: [notes.md]
    thinking: 8000
    gate: {mode: ai, check: done}
"""


def thinking_sent(project: Path, stage_id: str, loop_text: str = THINKING_LOOP, **settings) -> dict | None:
    job = stage_job(loop_from(loop_text), stage_id, project)
    fake = FakeMessages()
    fake.reply("done")
    ClaudeWorker(Settings(**settings), client_factory=fake.factory()).perform(job, Events())
    assert not fake.unexpected, fake.unexpected  # the fake rejects what the API would (budget >= max_tokens)
    return fake.requests[0].body.get("thinking")


def test_worker_turns_think_with_the_settings_budget_unless_the_stage_or_the_settings_say_otherwise(project: Path):
    for stage_id in ("build", "plan", "attack", "review"):  # executor, planner, critic, reviewer
        assert thinking_sent(project, stage_id, LOOP) == {"type": "enabled", "budget_tokens": 4000}, stage_id
    assert thinking_sent(project, "plain") == {"type": "enabled", "budget_tokens": 4000}  # no role: as executor
    assert thinking_sent(project, "look") is None  # explore: off by default
    assert thinking_sent(project, "quiet") is None  # the loop turns it off for this stage
    assert thinking_sent(project, "deep") == {"type": "enabled", "budget_tokens": 8000}
    assert thinking_sent(project, "plain", thinking_budget=0) is None
    assert thinking_sent(project, "plain", thinking_budget=6000) == {"type": "enabled", "budget_tokens": 6000}
    # max_tokens must stay above the budget, with room for the answer; too little room: no thinking
    assert thinking_sent(project, "deep", max_tokens=5000) == {"type": "enabled", "budget_tokens": 3976}
    assert thinking_sent(project, "plain", max_tokens=2000) is None
    assert Settings.from_env({"ODIN_THINKING": "off"}).thinking_budget == 0
    assert Settings.from_env({"ODIN_THINKING": "12000"}).thinking_budget == 12000


def test_a_thinking_budget_below_the_api_minimum_is_one_clear_error():
    with pytest.raises(ConfigError) as info:
        Settings.from_env({"ODIN_THINKING": "500"})
    assert "ODIN_THINKING" in str(info.value) and "1024" in str(info.value)
    report = validate_text(THINKING_LOOP.replace("thinking: 8000", "thinking: 500"), "thinking.yaml")
    assert [(d.line, d.field) for d in report.errors] == [(18, "stages[3].thinking")], report.errors
    assert "1024" in report.errors[0].message


def test_thinking_blocks_go_back_with_the_tool_results(project: Path):
    """Thinking interleaved with tool use: the reply's thinking block (with its signature) is sent back
    unchanged in the next turn, as the API requires."""
    job = stage_job(loop_from(LOOP), "build", project)
    fake = FakeMessages()
    thought = {"type": "thinking", "thinking": "I should look first.", "signature": "sig-123"}
    call = {"type": "tool_use", "id": "toolu_think1", "name": "glob", "input": {"pattern": "*"}}
    fake.raw(lambda body: reply_response(body, message_body(model=body["model"], content=[thought, call],
                                                            stop_reason="tool_use")))
    fake.reply("done")
    ClaudeWorker(Settings(), client_factory=fake.factory()).perform(job, Events())
    assert not fake.unexpected
    sent_back = fake.requests[1].body["messages"][-2]
    assert sent_back["role"] == "assistant" and sent_back["content"][0] == thought


# -- item 3: the judge reasons before it decides ---------------------------------------------------------


def test_the_judge_schema_asks_for_reasons_and_findings_before_the_verdict(project: Path):
    fake = FakeMessages()
    fake.verdict(reasons=["src/ exists"], status="DONE", passed=True)
    ClaudeWorker(Settings(), client_factory=fake.factory()).judge(judge_job(loop_from(LOOP), "build", project),
                                                                  Events())
    body = fake.requests[0].body
    order = list(body["output_config"]["format"]["schema"]["properties"])
    assert order.index("reasons") < order.index("blocking") < order.index("status") < order.index("passed")
    assert order.index("non_blocking") < order.index("status")
    assert "Reason before you decide" in json.dumps(body["system"])


# -- item 2: a retry carries the real error --------------------------------------------------------------

RETRY_LOOP = """
name: retry
max_iterations: 3
stages:
  - id: build
    produces: [notes.md]
    gate: {mode: ai, check: notes.md names the cause}
  - id: test
    gate:
      mode: ai
      on_fail: build
      check: the tests pass
      run: ["python -m pytest -q -p no:cacheprovider tests"]
"""


def test_a_retry_names_the_failed_stage_and_command_and_quotes_the_real_error_and_the_findings(project: Path,
                                                                                               write_loop):
    (project / "calc.py").write_text("def plus(a, b):\n    return a + b\n")
    (project / "tests").mkdir()
    (project / "tests" / "test_add.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    write_loop(RETRY_LOOP)
    fake = FakeMessages()
    fake.tool("write", {"file_path": "$ODIN_RUN_DIR/notes.md", "content": "the cause: none yet"})
    fake.reply("built")
    fake.verdict(reasons=["notes.md is there"], status="DONE", passed=True)
    fake.reply("ran the tests")  # test: its gate command fails at collection, back to build
    fake.reply("looked again")  # build, retry 1
    finding = "notes.md does not name the cause: `from calc import add` fails"
    fake.verdict(reasons=["no cause named"], blocking=[finding], status="DONE", passed=False)
    fake.reply("looked once more")  # build, retry 2
    fake.verdict(reasons=["fine"], status="DONE", passed=True)
    fake.reply("ran the tests again")
    fake.reply("looked a third time")  # test failed again: build, retry 3, whose gate fails the run
    fake.verdict(reasons=["no"], blocking=["still no cause"], status="DONE", passed=False)
    state = Engine(project, worker=ClaudeWorker(Settings(), client_factory=fake.factory())).start("retry", "fix add")

    assert state.status == "failed" and not fake.unexpected and fake.pending == 0
    assert [(e.stage, e.result) for e in state.history][:3] == [("build", "pass"), ("test", "fail"), ("build", "fail")]
    work = [r for r in fake.requests if r.headers.get("x-odin-purpose") == "work" and r.headers["x-odin-stage"] == "build"]
    first_retry = json.dumps(work[2].body["messages"][-1]["content"])
    assert "The gate of stage test failed" in first_retry
    assert "Command: python -m pytest -q -p no:cacheprovider tests   [exit 2]" in first_retry
    assert "ImportError: cannot import name 'add' from 'calc'" in first_retry  # the real error, not "1 error"
    second_retry = json.loads(json.dumps(work[3].body["messages"][-1]["content"]))
    text = second_retry[0]["text"]
    assert "The gate of stage build failed" in text and f"- {finding}" in text  # the judge's finding, verbatim


def test_only_a_prefix_long_enough_to_be_cached_is_marked_for_the_cache():
    """Issue 25 item 10: the judge's (~1.2k characters) and the interview's (~1.1k) system prompts are below
    the cacheable minimum, so their marks did nothing; a worker's prefix (tools + rules) is marked."""
    import json

    from support import TESTS

    golden = TESTS / "golden" / "requests"
    marked = {p.stem: "cache_control" in json.dumps(json.loads(p.read_text())["system"]) for p in golden.glob("*.json")}
    assert marked["judge"] is False and marked["interview-question"] is False and marked["interview-scoring"] is False
    assert all(marked[kind] for kind in ("planner", "executor", "critic", "reviewer", "explorer", "retry"))
