"""What the model is told about its tools (issue 25, item 7), as the real SDK sends it to the local fake
Messages API: where the tools work, the variables, the bash timeout and truncation, errors, numbered
``read`` lines with a 1-based ``view_range``, and none of the SDK's internal names."""

from __future__ import annotations

import json
from pathlib import Path

from support.stage_jobs import loop_from, perform_calls, tool_results

LOOP = """
name: tools
max_iterations: 3
stages:
  - id: build
    agent: executor
    produces: [src/]
    gate: {mode: ai, check: src exists}
"""


def perform(project: Path, calls: list[tuple[str, dict]]):
    fake, _, _ = perform_calls(loop_from(LOOP), "build", project, calls)
    return fake.requests[0].body["tools"], tool_results(fake)


def test_the_tools_say_where_they_work_and_how_they_fail(project: Path):
    tools, _ = perform(project, [])
    by_name = {tool["name"]: tool for tool in tools}
    bash = by_name["bash"]["description"]
    for needed in ("project directory", "$ODIN_PROJECT_DIR", "$ODIN_RUN_DIR", "120 seconds", "timeout_ms",
                   "is cut", "narrow the command", "non-zero", "error result"):
        assert needed in bash, needed
    read = by_name["read"]["description"]
    for needed in ("numbered from 1", "1-based and inclusive", "view_range"):
        assert needed in read, needed
    shown = json.dumps(tools)
    assert "BetaManagedAgents" not in shown and "runner" not in shown and "Toolset" not in shown
    assert by_name["read"]["input_schema"]["properties"]["view_range"]["description"].startswith("[first, last]")


def test_read_returns_numbered_lines_and_view_range_counts_from_1(project: Path):
    (project / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    _, results = perform(project, [("read", {"file_path": "notes.txt"}),
                                   ("read", {"file_path": "notes.txt", "view_range": [2, 3]})])
    whole, part = (r["content"] if isinstance(r["content"], str) else r["content"][0]["text"] for r in results)
    assert whole == "1\talpha\n2\tbeta\n3\tgamma\n"
    assert part == "2\tbeta\n3\tgamma"


def test_a_tool_line_escapes_what_a_terminal_would_act_on():
    """Issue 20 item 5: ESC, NUL and bidi overrides in a model's tool call are shown, never acted on."""
    from odin_magic.workers.toolbox import describe_call

    line = describe_call("bash", {"command": "echo \x1b[31mred \u202egnp.exe"})
    assert line == "bash: echo \\x1b[31mred \\u202egnp.exe"
    assert describe_call("write", {"file_path": "a\x00b.py", "content": "x"}) == "write a\\x00b.py (1 chars)"
    assert describe_call("read", {"file_path": "src/ünïcode.py"}) == "read src/ünïcode.py"  # letters stay
