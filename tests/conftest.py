"""Shared fixtures: a project directory and a way to put loops in it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

#: A small loop with every kind of gate: a human-approved spec, an ai
#: implement, and a fresh-context test stage that loops back to implement.
DEMO_LOOP = """
name: demo
max_iterations: 5
stages:
  - id: spec
    produces: [spec.md]
    gate: {mode: ai+human, check: the spec is clear}
  - id: implement
    consumes: [spec.md]
    produces: [src/]
    gate: {mode: ai, check: the code exists}
  - id: test
    agent: critic
    consumes: [spec.md, src/]
    produces: [harness/]
    gate: {mode: ai, check: the tests pass, on_fail: implement}
"""


def pingpong_loop(name: str = "pingpong", cap: int = 1000) -> str:
    """A loop that goes round while its gate script says so: build, then check, whose failure loops back to
    build; ``cap`` bounds the loopbacks and the repeats."""
    return f"""\
name: {name}
max_iterations: {cap}
max_repeats: {cap}
stages:
  - id: build
    produces: [notes.md]
    gate: {{mode: ai, check: notes exist}}
  - id: check
    produces: [report.md]
    gate: {{mode: ai, check: the report is green, on_fail: build}}
"""


#: Three ai-gated stages in a row, nothing else: the plainest path through a loop.
LINEAR = """
name: linear
max_iterations: 3
stages:
  - id: a
    produces: [a.md]
    gate: {mode: ai, check: a exists}
  - id: b
    produces: [b.md]
    gate: {mode: ai, check: b exists}
  - id: c
    produces: [c.md]
    gate: {mode: ai, check: c exists}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project directory."""
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def write_loop(project: Path):
    """``write_loop(yaml_text, into=None)`` puts a loop into the project's (or ``into``'s)
    .odin-loop/loops/ and returns its name."""

    def write(text: str = DEMO_LOOP, name: str | None = None, into: Path | None = None) -> str:
        text = textwrap.dedent(text)
        if name is None:
            name = next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("name:"))
        loops = (into or project) / ".odin-loop" / "loops"
        loops.mkdir(parents=True, exist_ok=True)
        (loops / f"{name}.yaml").write_text(text, encoding="utf-8")
        return name

    return write
