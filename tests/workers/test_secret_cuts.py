"""A secret the SDK's bash tool cuts leaves no piece of itself behind (issue 20, part 5).

The bash tool keeps part of a long output: its last 100 KiB after an ``[output truncated]`` line (anthropic
< 2.16), or its first 30,000 characters before a ``... [N lines truncated]`` line (2.16). A key printed across
that cut is cut through, and the piece left beside the mark is not the key's exact value. Which end the
installed SDK keeps is found by running a command (:func:`kept_end`), not read from its version. A real stage
(the Claude worker and the SDK against the local fake API, a real shell) runs such a command; no piece of 16
characters of the key reaches the next request, ``thread.json`` or the tool log.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest

from anthropic.lib.tools.agent_toolset import BASH_OUTPUT_LIMIT

from odin_magic.core.secrets import CUT_MARK, FRAGMENT_LENGTH
from odin_magic.engine import judge_context
from support.stage_jobs import loop_from, perform_calls, stage_job

KEY = "sk-ant-api03-cut-edges-must-not-leak-0123456789abcdefABCDEF"
#: what the SDK's shell (anthropic < 2.16) prints after a command's output: a line break, its sentinel, the exit
SENTINEL = len("\n__ANT_CMD_") + 32 + len("_DONE__0\n")

LOOP = """
name: cuts
max_iterations: 2
stages:
  - id: build
    agent: executor
    produces: [src/]
    gate: {mode: ai, check: src exists}
"""


def pieces(text: str) -> list[str]:
    """The pieces of :data:`KEY` of :data:`FRAGMENT_LENGTH` characters found in ``text``."""
    return [KEY[i:i + FRAGMENT_LENGTH] for i in range(len(KEY) - FRAGMENT_LENGTH + 1)
            if KEY[i:i + FRAGMENT_LENGTH] in text]


@functools.lru_cache(maxsize=1)
def kept_end(where: str) -> str:
    """Which end of a long output the installed SDK's bash tool keeps: "tail" or "head" (a command tells)."""
    project = Path(where)
    command = f"printf HEAD; head -c {2 * BASH_OUTPUT_LIMIT} /dev/zero | tr '\\0' x; printf TAIL"
    fake, _, _ = perform_calls(loop_from(LOOP), "build", project, [("bash", {"command": command})])
    result = json.dumps(fake.requests[1].body["messages"][-1]["content"][0])
    assert ("HEAD" in result) != ("TAIL" in result), result[:300]
    return "head" if "HEAD" in result else "tail"


def cut_through_the_key(project: Path, left: int) -> str:
    """A command whose output the bash tool cuts ``left`` characters into the key (the key's last ``left``
    characters kept when it keeps the tail, its first ``left`` when it keeps the head)."""
    (project / "key.txt").write_text(KEY)
    if kept_end(str(project.parent / "probe")) == "tail":
        return f"cat key.txt; head -c {BASH_OUTPUT_LIMIT - left - SENTINEL} /dev/zero | tr '\\0' x"
    return f"head -c {BASH_OUTPUT_LIMIT - left} /dev/zero | tr '\\0' x; cat key.txt; head -c 100 /dev/zero | tr '\\0' y"


def key_whole_at_the_cut(project: Path) -> str:
    """A command whose output the bash tool cuts just beside a whole key (the key is kept whole)."""
    (project / "key.txt").write_text(KEY)
    if kept_end(str(project.parent / "probe")) == "tail":
        return f"head -c {BASH_OUTPUT_LIMIT} /dev/zero | tr '\\0' x; cat key.txt"
    return f"head -c {BASH_OUTPUT_LIMIT - len(KEY)} /dev/zero | tr '\\0' x; cat key.txt; head -c 100 /dev/zero | tr '\\0' y"


@pytest.fixture(autouse=True)
def probe_dir(project: Path):
    (project.parent / "probe").mkdir(exist_ok=True)


@pytest.mark.parametrize("left, tail", [
    (24, "true"),  # the key cut in the middle: 24 of its characters are kept
    (FRAGMENT_LENGTH + 2, "false"),  # just above the piece length, and an exit that is not 0 (a tool error)
    (len(KEY) - 3, "true"),  # nearly whole
])
def test_a_key_cut_by_the_bash_tool_leaves_no_piece(project: Path, monkeypatch, left: int, tail: str):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    command = f"{cut_through_the_key(project, left)}; {tail}"
    fake, job, _ = perform_calls(loop_from(LOOP), "build", project, [("bash", {"command": command})])
    result = fake.requests[1].body["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and CUT_MARK.search(json.dumps(result))
    assert "[redacted ANTHROPIC_API_KEY]" in json.dumps(result)
    for request in fake.requests[1:]:
        assert pieces(json.dumps(request.body)) == []
    written = [p for p in job.run_dir.rglob("*") if p.is_file()]
    assert any(p.name == "thread.json" for p in written) and any(p.parent.name == "tool-log" for p in written)
    for path in written:
        assert pieces(path.read_text(errors="replace")) == [], path


def test_a_key_at_the_edge_of_a_long_output_is_redacted_whole(project: Path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    command = key_whole_at_the_cut(project)
    fake, job, _ = perform_calls(loop_from(LOOP), "build", project, [("bash", {"command": command})])
    result = json.dumps(fake.requests[1].body["messages"][-1]["content"][0])
    assert CUT_MARK.search(result) and result.count("[redacted ANTHROPIC_API_KEY]") == 1
    assert pieces(json.dumps(fake.requests[1].body)) == []
    assert pieces((job.run_dir / "thread.json").read_text()) == []


def test_a_long_command_whose_line_is_cut_through_a_key_leaves_no_piece(project: Path, monkeypatch):
    """The live view's and the tool log's line for a call shows the first 120 characters of a command."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    command = "echo " + "y" * 100 + " " + KEY  # the line is cut in the key
    fake, job, events = perform_calls(loop_from(LOOP), "build", project, [("bash", {"command": command})])
    lines = events.of("tool")
    assert lines and lines[0].endswith("…") and "[redacted" in lines[0]
    assert pieces("\n".join(e.text for e in events)) == []
    for path in (p for p in job.run_dir.rglob("*") if p.is_file()):
        assert pieces(path.read_text(errors="replace")) == [], path
    assert pieces(json.dumps(fake.requests[1].body["messages"][-1])) == []  # the model's own call is its to send


def test_a_consume_the_judge_context_cuts_through_a_key_leaves_no_piece(project: Path, monkeypatch):
    """The judge's context cuts an over-budget consume (then redacts the whole): wherever the cut falls in a
    key, the piece before the marker is redacted with it."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    loop = loop_from("""
        name: judged
        max_iterations: 2
        stages:
          - id: fix
            consumes: [docs/big.md]
            produces: [src/]
            gate: {mode: ai, check: it works}
    """)
    job = stage_job(loop, "fix", project)
    (project / "docs").mkdir()
    big = project / "docs" / "big.md"
    cut_in_a_key = 0
    for shift in range(0, len(KEY), 5):  # the cut falls at every place of a key in turn
        big.write_text("p" * shift + KEY * (2 * judge_context.JUDGE_CONTEXT_CHARS // len(KEY)))
        sources = judge_context.Sources(job.stage, project, job.run_dir, consumes={"docs/big.md": big})
        sent = judge_context.assemble(sources)
        assert "more characters cut" in sent and KEY not in sent
        shown = int(re.search(r"docs/big.md \(\d+ characters, (\d+) shown\)", sent).group(1))
        cut_in_a_key += (shown - shift) % len(KEY) >= FRAGMENT_LENGTH  # the piece of a key the cut left
        assert pieces(sent) == [], shift
    assert cut_in_a_key  # some of the cuts fell in a key, and took its piece
