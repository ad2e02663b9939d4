"""Fast-fail after each edit (issue 13, seed 001's PostToolEdit hook): through the real SDK
against the local fake Messages API, a write that breaks a file is answered at once as a tool error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odin_magic.workers.config import Settings
from odin_magic.engine.orchestrator import Engine
from odin_magic.workers.postedit import check_edit, parse_check
from odin_magic.workers.claude import ClaudeWorker
from odin_magic.runs import evidence as gate_evidence

from support.fake_messages import FakeMessages


@pytest.fixture
def fake() -> FakeMessages:
    return FakeMessages()


def worker_for(fake: FakeMessages) -> ClaudeWorker:
    return ClaudeWorker(Settings(max_retries=0), client_factory=fake.factory(max_retries=0))


def tool_results(fake: FakeMessages, n: int) -> list[dict]:
    """The tool_result blocks of the n-th request (0-based)."""
    last = fake.requests[n].body["messages"][-1]
    return [b for b in last["content"] if b.get("type") == "tool_result"]


def evidence_of(project: Path, state) -> dict:
    run_dir = project / ".odin-loop" / "runs" / state.run_id
    return gate_evidence.read(run_dir, state.history[-1].evidence)


LOOP = """
name: build
max_iterations: 3
post_edit:
  - {cmd: 'grep -q "def " "$ODIN_EDITED_FILE"', timeout: 20}
stages:
  - id: build
    produces: [src/]
    gate: {mode: ai, check: src/calc.py defines add}
"""


def test_a_syntax_error_in_an_edit_is_answered_at_once_and_recorded(project: Path, fake: FakeMessages, write_loop):
    write_loop(LOOP)
    fake.tool("write", {"file_path": "src/calc.py", "content": "def add(a, b)\n    return a + b\n"})
    fake.tool("write", {"file_path": "src/calc.py", "content": "def add(a, b):\n    return a + b\n"})
    fake.reply("Fixed the syntax error.")
    fake.verdict(passed=True, reasons=["add is defined"])

    state = Engine(project, worker=worker_for(fake)).start("build", "add two numbers")

    assert state.status == "done"
    # the broken write came back to the model as an error, naming the file, the check and the line
    first = tool_results(fake, 1)[0]
    assert first["is_error"] is True
    text = json.dumps(first["content"])
    assert "src/calc.py" in text and "compile" in text and "line 1" in text
    # the fixed write passed both checks: no error
    second = tool_results(fake, 2)[0]
    assert not second.get("is_error")
    checks = evidence_of(project, state)["edit_checks"]
    assert [(c["check"], c["ok"]) for c in checks] == [
        ("compile", False),
        ("compile", True),
        ('post_edit: grep -q "def " "$ODIN_EDITED_FILE"', True),
    ]


def test_a_failing_post_edit_command_goes_back_to_the_model(project: Path, fake: FakeMessages, write_loop):
    write_loop(LOOP)
    fake.tool("write", {"file_path": "src/calc.py", "content": "x = 1\n"})  # compiles, but has no def
    fake.reply("Done.")
    fake.verdict(passed=False, blocking=["add is missing"])
    fake.reply("try again")  # the loopback re-runs the stage
    fake.verdict(passed=True)

    state = Engine(project, worker=worker_for(fake)).start("build", "add two numbers")

    result = tool_results(fake, 1)[0]
    assert result["is_error"] is True
    assert "post_edit" in json.dumps(result["content"])
    assert state.status == "done"


@pytest.mark.parametrize("name, text, ok", [
    ("a.json", '{"a": 1}', True),
    ("a.json", '{"a": 1', False),
    ("a.yaml", "a: [1, 2", False),
    ("a.yml", "a: 1\n", True),
    ("a.toml", "a = ", False),
    ("pyproject.toml", '[project]\nname = "x"\n', True),
])
def test_data_files_must_parse(tmp_path: Path, name: str, text: str, ok: bool):
    path = tmp_path / name
    path.write_text(text)
    check = parse_check(path, name)
    assert check is not None and check.ok is ok
    assert (check.detail == "") is ok


def test_a_file_without_a_known_type_is_only_checked_by_commands(tmp_path: Path):
    path = tmp_path / "notes.md"
    path.write_text("# notes")
    assert parse_check(path, "notes.md") is None
    assert check_edit(path, "notes.md", [], lambda c, e: (True, "")) == []
