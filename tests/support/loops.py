"""Loop texts the tests share: the demo loop, a linear loop, and a ping-pong loop of any length."""

from __future__ import annotations

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
