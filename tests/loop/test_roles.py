"""Each role's tools, enforced by code: allowed calls run, refused calls return a tool error and are recorded."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from odin_magic.workers.config import Settings
from odin_magic.core.errors import ConfigError
from odin_magic.loop.roles import load_persona, persona_override_path
from odin_magic.workers.claude import ClaudeWorker

from support.fake_messages import FakeMessages
from support.stage_jobs import Events, loop_from, stage_job

LOOP = """
name: roles
max_iterations: 3
stages:
  - id: look
    agent: explore
    consumes: [notes.md]
    produces: [findings.md]
    gate: {mode: ai, check: findings recorded}
  - id: plan
    agent: planner
    produces: [plan.md]
    gate: {mode: ai, check: plan.md exists}
  - id: build
    agent: executor
    produces: [src/]
    gate: {mode: ai, check: src exists}
  - id: attack
    agent: critic
    consumes: [notes.md]
    produces: [harness/stub/, harness-report.md]
    gate: {mode: ai, check: report exists}
  - id: attack-report-only
    agent: critic
    consumes: [notes.md]
    produces: [harness-report.md]
    gate: {mode: ai, check: report exists}
  - id: review
    agent: reviewer
    consumes: [notes.md]
    produces: [review.md]
    gate: {mode: ai, check: review exists}
  - id: plain
    agent: fresh
    consumes: [notes.md]
    produces: [out/]
    gate: {mode: ai, check: out exists}
"""


def run_calls(project: Path, stage_id: str, calls: list[tuple[str, dict]]):
    """Perform ``stage_id`` with a model that makes ``calls`` one per turn; return (results, events, job)."""
    loop = loop_from(LOOP)
    job = stage_job(loop, stage_id, project)
    (job.run_dir / "notes.md").write_text("some notes\n")
    fake = FakeMessages()
    for name, args in calls:
        fake.tool(name, {k: (v.format(run=os.path.relpath(job.run_dir, project)) if isinstance(v, str) else v)
                         for k, v in args.items()})
    fake.reply("finished")
    events = Events()
    ClaudeWorker(Settings(), client_factory=fake.factory()).perform(job, events)
    results = []
    for request in fake.requests[1:]:
        block = request.body["messages"][-1]["content"][0]
        assert block["type"] == "tool_result"
        results.append((bool(block.get("is_error")), json.dumps(block["content"])))
    return results, events, job


READS = [("read", {"file_path": "{run}/notes.md"}), ("glob", {"pattern": "*.md", "path": "{run}"}),
         ("grep", {"pattern": "notes", "path": "{run}"})]


def assert_allowed(result):
    is_error, content = result
    assert not is_error, content


def assert_refused(result, role: str, events: Events):
    is_error, content = result
    assert is_error and "refused" in content and f"the {role} role may not" in content, content
    assert any(f"the {role} role may not" in text for text in events.of("tool_refused"))


def assert_not_offered(result, role: str, tool: str, events: Events):
    """A tool the role may not use is not offered: the tool runner answers a call to it with an error,
    and the worker records the refusal."""
    is_error, content = result
    assert is_error and f"Tool '{tool}' not found" in content, content
    assert any(f"the {role} role may not use the {tool} tool" in text for text in events.of("tool_refused"))


def test_explore_reads_only(project: Path):
    results, events, job = run_calls(project, "look", READS + [
        ("write", {"file_path": "{run}/findings.md", "content": "x"}),
        ("edit", {"file_path": "{run}/notes.md", "old_string": "some", "new_string": "other"}),
        ("bash", {"command": "touch escaped.txt"}),
    ])
    for r in results[:3]:
        assert_allowed(r)
    assert "some notes" in results[0][1]
    for r, tool in zip(results[3:], ("write", "edit", "bash")):
        assert_not_offered(r, "explore", tool, events)
    assert not job.produces["findings.md"].exists()
    assert (job.run_dir / "notes.md").read_text() == "some notes\n"
    assert not (project / "escaped.txt").exists()
    assert len(events.of("tool")) + len(events.of("tool_refused")) == 6  # every call is streamed, refused or not
    recorded = [json.loads(line) for line in (job.run_dir / "tool-refusals.jsonl").read_text().splitlines()]
    assert [(r["stage"], r["role"]) for r in recorded] == [("look", "explore")] * 3
    assert "may not use the bash tool" in recorded[2]["message"]


def test_planner_writes_only_its_produces(project: Path):
    results, events, job = run_calls(project, "plan", READS + [
        ("write", {"file_path": "{run}/plan.md", "content": "1. build"}),
        ("edit", {"file_path": "{run}/plan.md", "old_string": "build", "new_string": "build it"}),
        ("write", {"file_path": "src/code.py", "content": "x = 1"}),
        ("bash", {"command": "touch escaped.txt"}),
    ])
    for r in results[:5]:
        assert_allowed(r)
    assert_refused(results[5], "planner", events)
    assert_not_offered(results[6], "planner", "bash", events)
    assert job.produces["plan.md"].read_text() == "1. build it"
    assert not (project / "src" / "code.py").exists() and not (project / "escaped.txt").exists()


def test_executor_has_every_tool(project: Path):
    results, events, job = run_calls(project, "build", READS + [
        ("write", {"file_path": "src/app.py", "content": "print('hi')\n"}),
        ("edit", {"file_path": "src/app.py", "old_string": "hi", "new_string": "hello"}),
        ("write", {"file_path": "docs/anything.md", "content": "free"}),
        ("bash", {"command": "python src/app.py"}),
    ])
    for r in results:
        assert_allowed(r)
    assert "hello" in results[-1][1]
    assert events.of("tool_refused") == []


def test_critic_writes_only_harness_and_report(project: Path):
    results, events, job = run_calls(project, "attack", READS + [
        ("write", {"file_path": "{run}/harness/stub/calc.py", "content": "def add(a, b): return a - b\n"}),
        ("write", {"file_path": "{run}/harness-report.md", "content": "stub caught"}),
        ("bash", {"command": "ls $ODIN_RUN_DIR/harness/stub"}),
        ("write", {"file_path": "src/calc.py", "content": "sabotage"}),
        ("edit", {"file_path": "{run}/notes.md", "old_string": "some", "new_string": "x"}),
        ("write", {"file_path": "{run}/harness/test_calc.py", "content": "def test_nothing(): pass\n"}),
    ])
    for r in results[:6]:
        assert_allowed(r)
    assert "calc.py" in results[5][1]
    for r in results[6:]:
        assert_refused(r, "critic", events)
    assert not (project / "src" / "calc.py").exists()
    assert not (job.run_dir / "harness" / "test_calc.py").exists()  # the harness's tests are not the critic's
    assert job.produces["harness-report.md"].read_text() == "stub caught"


def test_critic_stub_area_is_its_own_even_when_not_in_produces(project: Path):
    results, events, job = run_calls(project, "attack-report-only", [
        ("write", {"file_path": "{run}/harness/stub/calc.py", "content": "def add(a, b): return 0\n"}),
        ("write", {"file_path": "{run}/harness/conftest.py", "content": "# weakened\n"}),
    ])
    assert_allowed(results[0])
    assert_refused(results[1], "critic", events)
    assert (job.run_dir / "harness" / "stub" / "calc.py").is_file()
    assert not (job.run_dir / "harness" / "conftest.py").exists()


def test_reviewer_inspects_and_writes_only_its_report(project: Path):
    results, events, job = run_calls(project, "review", READS + [
        ("bash", {"command": "echo inspecting"}),
        ("write", {"file_path": "{run}/review.md", "content": "no blocking findings"}),
        ("write", {"file_path": "src/fix.py", "content": "x"}),
        ("write", {"file_path": "{run}/harness/stub/x.py", "content": "x"}),
    ])
    for r in results[:5]:
        assert_allowed(r)
    for r in results[5:]:
        assert_refused(r, "reviewer", events)
    assert job.produces["review.md"].read_text() == "no blocking findings"
    assert not (project / "src" / "fix.py").exists()


def test_stage_without_role_gets_the_executor_tools(project: Path):
    results, events, _ = run_calls(project, "plain", [
        ("bash", {"command": "echo hi"}), ("write", {"file_path": "anywhere.txt", "content": "ok"})])
    for r in results:
        assert_allowed(r)
    assert (project / "anywhere.txt").read_text() == "ok"


def test_file_tools_stay_in_the_project_even_through_a_symlink(project: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "link").symlink_to(outside)
    results, events, _ = run_calls(project, "build", [
        ("write", {"file_path": "link/pwned.txt", "content": "x"}),
        ("write", {"file_path": str(outside / "direct.txt"), "content": "x"}),
    ])
    assert all(is_error for is_error, _ in results)
    assert list(outside.iterdir()) == []


def test_no_role_writes_what_judges_it_below_odin_loop_or_git(project: Path):
    """The executor may write anywhere in the project, but below the engine's .odin-loop/ and .git/ only its
    stage's produces: not the run's log or harness, not another run, not the loops, memory or checkpoints."""
    (project / ".git" / "hooks").mkdir(parents=True)
    loops = project / ".odin-loop" / "loops"
    loops.mkdir(parents=True)
    (loops / "roles.yaml").write_text("name: roles\n")
    (project / "link-to-odin").symlink_to(project / ".odin-loop")
    targets = ["{run}/events.jsonl", "{run}/harness/test_calc.py", "{run}/harness/stub/calc.py", "{run}/scratch.md",
               ".odin-loop/memory/decisions.md", ".odin-loop/loops/roles.yaml", ".odin-loop/checkpoints.git/HEAD",
               ".odin-loop/runs/other/state.json", ".git/hooks/pre-commit", "link-to-odin/memory/decisions.md"]
    results, events, job = run_calls(project, "build", [
        *[("write", {"file_path": t, "content": "forged\n"}) for t in targets],
        ("edit", {"file_path": ".odin-loop/loops/roles.yaml", "old_string": "roles", "new_string": "mine"}),
        ("write", {"file_path": "src/app.py", "content": "ok = 1\n"}),
    ])
    for r in results[:-1]:
        assert_refused(r, "executor", events)
    assert_allowed(results[-1])
    assert (loops / "roles.yaml").read_text() == "name: roles\n"
    assert not (project / ".git" / "hooks" / "pre-commit").exists()
    rel = os.path.relpath(job.run_dir, project)
    written = [t for t in targets if (project / t.format(run=rel)).is_file()
               and "forged" in (project / t.format(run=rel)).read_text()]
    assert written == []
    assert "only this stage's produces" in results[0][1]


def test_the_memory_key_is_never_read_by_a_file_tool(project: Path):
    key = project / ".odin-loop" / "memory.key"
    key.parent.mkdir(parents=True, exist_ok=True)
    key.write_text("a1b2c3-secret-key\n")
    (project / "notes.txt").write_text("a1b2c3 is a colour code\n")
    results, events, job = run_calls(project, "build", [
        ("read", {"file_path": ".odin-loop/memory.key"}),
        ("grep", {"pattern": "a1b2c3", "path": ".odin-loop/memory.key"}),
        ("grep", {"pattern": "a1b2c3", "path": "."}),
        ("grep", {"pattern": "secret-key", "path": ".odin-loop"}),
        ("glob", {"pattern": "**/*.key"}),
    ])
    for is_error, content in results[:2]:
        assert is_error and "refused" in content and "seals the project's memory" in content, content
    assert not results[2][0] and "notes.txt" in results[2][1] and "secret-key" not in results[2][1], results[2]
    assert results[3] == (False, json.dumps("no matches"))
    assert all("secret-key" not in content for _, content in results)
    assert len(events.of("tool_refused")) == 2


def test_persona_ships_and_a_project_can_override_it(project: Path):
    for role in ("explore", "planner", "executor", "critic", "reviewer"):
        assert load_persona(role, project).startswith(f"# Role: {role}")
    override = persona_override_path(project, "critic")
    override.parent.mkdir(parents=True)
    override.write_text("# Our own critic\nBe brutal.\n")
    assert load_persona("critic", project) == "# Our own critic\nBe brutal."
    with pytest.raises(ConfigError):
        load_persona("wizard", project)


def test_override_reaches_the_request(project: Path):
    override = persona_override_path(project, "reviewer")
    override.parent.mkdir(parents=True)
    override.write_text("# House reviewer\nCheck the naming.\n")
    loop = loop_from(LOOP)
    job = stage_job(loop, "review", project)
    (job.run_dir / "notes.md").write_text("n")
    fake = FakeMessages().reply("ok")
    ClaudeWorker(Settings(), client_factory=fake.factory()).perform(job, Events())
    system = json.dumps(fake.requests[0].body["system"])
    assert "House reviewer" in system and "Role: reviewer" not in system
