"""What a gate judge sees of the stage it judges (issue 25, item 1), and what an executor is told to run before
it stops (item 6), in the recorded request bodies: the real SDK against the local fake Messages API, the real
engine, real git checkpoints."""

from __future__ import annotations

import json
from pathlib import Path

from odin_magic.engine import judge_context
from odin_magic.engine.orchestrator import Engine
from odin_magic.workers.claude import ClaudeWorker
from odin_magic.workers.config import Settings

from support.fake_messages import FakeMessages
from support.stage_jobs import Events, loop_from, stage_job

JUDGED = """
name: judged
max_iterations: 2
stages:
  - id: fix
    agent: executor
    consumes: [docs/spec.md, docs/big.md]
    produces: [src/]
    gate:
      mode: ai
      check: src/calc.py implements every rule in docs/spec.md and respects rules/limits.txt
      run: ["python -m compileall -q -f src"]
"""


def judge_request(project: Path, write_loop, big: str = "") -> str:
    """Run the one stage of JUDGED (the worker edits calc.py and runs a failing and a passing command);
    the recorded judge request's user message."""
    (project / "docs").mkdir()
    (project / "docs" / "spec.md").write_text("Rule 1: add(a, b) returns the sum.\n")
    (project / "docs" / "big.md").write_text(big or "small\n")
    (project / "rules").mkdir()
    (project / "rules" / "limits.txt").write_text("no import of os in src/calc.py\n")
    (project / "src").mkdir()
    (project / "src" / "calc.py").write_text("def plus(a, b):\n    return a + b\n")
    write_loop(JUDGED)
    fake = FakeMessages()
    fake.tool("edit", {"file_path": "src/calc.py", "old_string": "def plus", "new_string": "def add"})
    fake.tool("bash", {"command": "python -c 'import sys; print(\"boom\"); sys.exit(3)'"})
    fake.tool("bash", {"command": "cd src && python -c 'import calc; print(calc.add(1, 2))'"})
    fake.reply("renamed plus to add")
    fake.verdict(reasons=["add exists"], status="DONE", passed=True)
    state = Engine(project, worker=ClaudeWorker(Settings(), client_factory=fake.factory())).start("judged", "fix add")
    assert state.status == "done" and not fake.unexpected, (state.status, fake.unexpected)
    judge = [r for r in fake.requests if r.headers.get("x-odin-purpose") == "judge"]
    assert len(judge) == 1
    return judge[0].body["messages"][-1]["content"] if isinstance(judge[0].body["messages"][-1]["content"], str) \
        else json.dumps(judge[0].body["messages"][-1]["content"])


def test_the_judge_sees_the_consumes_the_diff_the_named_files_and_the_tool_log(project: Path, write_loop):
    sent = judge_request(project, write_loop)
    assert "=== docs/spec.md (docs/spec.md) ===\nRule 1: add(a, b) returns the sum." in sent  # consumes
    assert "-def plus(a, b):" in sent and "+def add(a, b):" in sent  # the diff of the stage's change
    assert "=== rules/limits.txt ===\nno import of os in src/calc.py" in sent  # a file the check names
    assert "$ bash: python -c 'import sys; print(\"boom\"); sys.exit(3)'   [non-zero exit]\n  boom" in sent
    assert "$ bash: cd src && python -c 'import calc; print(calc.add(1, 2))'   [exit 0]\n  3" in sent
    assert "$ edit src/calc.py   [ok]" in sent
    assert sent.count("=== src/calc.py") == 0  # inside the produced src/, shown once with the artifacts
    assert "Shortened" not in sent and "characters cut" not in sent


def test_an_over_budget_consume_is_cut_with_a_marker_and_named(project: Path, write_loop):
    big = "x" * (judge_context.JUDGE_CONTEXT_CHARS + 5000)
    sent = judge_request(project, write_loop, big=big)
    budget = judge_context.JUDGE_CONTEXT_CHARS
    assert f"Shortened to fit the judge's budget of {budget} characters: docs/big.md ({len(big)} characters" in sent
    assert f"more characters cut: budget {budget}]" in sent
    assert "Rule 1: add(a, b) returns the sum." in sent  # the small one whole
    assert len(sent) < budget + 10_000


def test_cut_says_how_much_it_cut_and_the_budget():
    assert judge_context.cut("abcdef", 4, 99) == "abcd\n[… 2 more characters cut: budget 99]"
    assert judge_context.cut("abc", 4, 99) == "abc"


# -- item 6: run the gate before you stop ------------------------------------------------------------------

TESTED = """
name: tested
max_iterations: 3
stages:
  - id: implement
    agent: executor
    produces: [src/]
    gate:
      mode: ai
      run: ["python -m compileall -q -f src"]
      check: src compiles
  - id: test
    agent: executor
    produces: [test-report.md]
    gate:
      mode: ai
      on_fail: implement
      run:
        - cmd: python -m pytest -q -p no:cacheprovider "$ODIN_RUN_DIR/harness"
      check: every test passes
  - id: review
    agent: reviewer
    produces: [review.md]
    gate: {mode: ai, on_fail: implement, check: no blocking finding}
  - id: plan
    agent: planner
    produces: [plan.md]
    gate: {mode: ai, run: ["test -s plan.md"], check: plan.md exists}
"""


def request_of(project: Path, stage_id: str) -> dict:
    job = stage_job(loop_from(TESTED), stage_id, project)
    fake = FakeMessages()
    fake.reply("done")
    ClaudeWorker(Settings(), client_factory=fake.factory()).perform(job, Events())
    return fake.requests[0].body


def brief_of(project: Path, stage_id: str) -> str:
    body = request_of(project, stage_id)
    return json.dumps(body["messages"][-1]["content"]) + json.dumps(body["system"])


def test_an_executor_is_told_to_run_its_gate_and_the_harness_that_tests_it_before_it_stops(project: Path):
    sent = json.loads(json.dumps(brief_of(project, "implement")))
    assert "- python -m compileall -q -f src" in sent
    assert '- python -m pytest -q -p no:cacheprovider \\"$ODIN_RUN_DIR/harness\\"   (gate of stage test)' in sent
    assert "Run each of these commands yourself before you stop, and stop only when every one exits 0." in sent
    body = request_of(project, "implement")  # said once, in the stage's brief, not in the system's rules
    assert "stop only when" in json.dumps(body["messages"][-1]["content"])
    assert "stop only when" not in json.dumps(body["system"])
    planner = brief_of(project, "plan")  # no bash: shown its gate command, not told to run it
    assert "- test -s plan.md" in planner and "Run each of these commands yourself" not in planner


def test_the_tool_log_is_never_written_or_read_through_a_link(project: Path, tmp_path: Path):
    from odin_magic.workers.tool_log import ToolLog, log_path, read_tool_log
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    run_dir = project / "run"
    log = ToolLog.start(run_dir, "fix")
    log.record("bash: ls", "exit 0", "a\nb")
    assert read_tool_log(run_dir, "fix") == [{"call": "bash: ls", "status": "exit 0", "output": "a\nb"}]
    log_path(run_dir, "fix").unlink()
    log_path(run_dir, "fix").symlink_to(outside)  # what a worker with bash could do
    log.record("bash: ls", "exit 0", "a")
    assert outside.read_text() == "secret\n" and read_tool_log(run_dir, "fix") == []


def test_a_tool_log_folder_replaced_by_a_link_writes_and_deletes_nothing_where_it_points(project: Path, tmp_path: Path):
    from odin_magic.workers.tool_log import LOG_DIR, ToolLog, read_tool_log
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "fix.jsonl").write_text("kept\n")
    run_dir = project / "run"
    run_dir.mkdir()
    (run_dir / LOG_DIR).symlink_to(elsewhere, target_is_directory=True)  # what a worker with bash could do
    log = ToolLog.start(run_dir, "fix")
    log.record("bash: ls", "exit 0", "a")
    assert [p.name for p in elsewhere.iterdir()] == ["fix.jsonl"] and (elsewhere / "fix.jsonl").read_text() == "kept\n"
    assert read_tool_log(run_dir, "fix") == []
