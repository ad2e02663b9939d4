"""Scope enforced on every change, bash included, and risk forcing sign-off (issue 11, item 3).

The REAL engine, Claude worker (its role policies and the SDK's agent toolset, bash included) and SDK
against the offline scripted Messages API.
"""

from __future__ import annotations

import json

import pytest

from odin_magic.engine.scope import glob_regex, matches
from odin_magic.loop.validation import validate_text
from odin_magic.runs import evidence as gate_evidence

from support.scripted_runs import Events, scripted_engine

REVIEW_LOOP = """
name: reviewed
max_iterations: 5
max_repeats: 5
stages:
  - id: review
    agent: reviewer
    consumes: [src/]
    produces: [review.md]
    gate: {mode: ai, check: the review is written}
"""

BASH_EDIT = """
stages:
  review:
    attempts:
      - turns:
          - tools:
              - bash: {command: "echo x >> src/app.py"}
              - write: {file_path: "{run_dir}/review.md", content: "looks fine\\n"}
          - text: reviewed
      - turns:
          - tools: [{write: {file_path: "{run_dir}/review.md", content: "looks fine\\n"}}]
          - text: reviewed, read only
default_verdict: {status: DONE, passed: true}
"""


def setup_src(project):
    (project / "src").mkdir()
    (project / "src" / "app.py").write_bytes(b"print('app')\n")


def evidence(engine, state, entry) -> dict:
    return gate_evidence.read(engine.run_dir(state.run_id), entry.evidence)


def test_a_reviewer_that_edits_code_through_bash_is_reverted_and_fails_its_gate(project, write_loop):
    write_loop(REVIEW_LOOP)
    setup_src(project)
    engine, model = scripted_engine(project, BASH_EDIT)
    state = engine.start("reviewed", "t")
    assert (project / "src" / "app.py").read_bytes() == b"print('app')\n"  # reverted
    first = state.history[0]
    assert first.result == "fail" and first.failure == "recoverable"
    assert "reviewer changed src/app.py (modified) outside its scope" in first.reason and "reverted" in first.reason
    ev = evidence(engine, state, first)
    assert ev["reverted"] == ["src/app.py"] and ev["judged"] is False
    assert state.status == "done" and state.history[1].result == "pass"


def test_a_planner_out_of_scope_write_is_reverted_the_same_way(project, write_loop):
    write_loop("""
    name: planned
    max_iterations: 5
    stages:
      - id: plan
        agent: planner
        produces: [docs/]
        scope: [docs/plan.md]
        gate: {mode: ai, check: the plan exists}
    """)
    setup_src(project)
    engine, _ = scripted_engine(project, """
stages:
  plan:
    attempts:
      - turns:
          - tools:
              - write: {file_path: docs/plan.md, content: "# Plan\\n"}
              - write: {file_path: docs/notes.md, content: "out of scope\\n"}
          - text: planned
      - turns:
          - tools: [{write: {file_path: docs/plan.md, content: "# Plan\\n"}}]
          - text: planned
default_verdict: {status: DONE, passed: true}
""")
    state = engine.start("planned", "t")
    first = state.history[0]
    assert first.result == "fail" and "planner changed docs/notes.md (added) outside its scope" in first.reason
    assert not (project / "docs" / "notes.md").exists()  # reverted: the added file is gone
    assert (project / "docs" / "plan.md").read_text() == "# Plan\n"  # its produces stay
    assert state.status == "done"


def test_scope_narrows_an_executor(project, write_loop):
    write_loop("""
    name: scoped
    max_iterations: 5
    stages:
      - id: build
        agent: executor
        produces: [src/]
        scope: ["src/**", "tests/**"]
        gate: {mode: ai, check: built}
    """)
    setup_src(project)
    (project / "setup.cfg").write_text("[x]\n")
    engine, _ = scripted_engine(project, """
stages:
  build:
    attempts:
      - turns:
          - tools:
              - write: {file_path: src/new.py, content: "n = 1\\n"}
              - write: {file_path: tests/test_new.py, content: "def test(): pass\\n"}
              - bash: {command: "rm setup.cfg"}
          - text: built
      - turns:
          - tools: [{write: {file_path: src/new.py, content: "n = 1\\n"}}]
          - text: built
default_verdict: {status: DONE, passed: true}
""")
    state = engine.start("scoped", "t")
    first = state.history[0]
    assert "setup.cfg (deleted)" in first.reason and "src/new.py" not in first.reason
    assert (project / "setup.cfg").read_text() == "[x]\n"  # the deletion is undone
    assert (project / "tests" / "test_new.py").exists()  # in scope: kept


def test_risk_pauses_an_ai_gate_for_sign_off(project, write_loop):
    write_loop("""
    name: risky
    max_iterations: 5
    risk: ["migrations/**", pyproject.toml]
    stages:
      - id: build
        produces: [src/]
        gate: {mode: ai, check: built}
      - id: ship
        produces: [docs/]
        gate: {mode: ai, check: shipped}
    """)
    events = Events()
    engine, _ = scripted_engine(project, """
stages:
  build:
    - tools:
        - write: {file_path: src/app.py, content: "x = 1\\n"}
        - write: {file_path: migrations/0001_init.sql, content: "create table t();\\n"}
    - text: built
  ship:
    - tools: [{write: {file_path: docs/index.md, content: "# ok\\n"}}]
    - text: shipped
default_verdict: {status: DONE, passed: true}
""", events)
    state = engine.start("risky", "t")
    assert state.status == "awaiting_approval" and state.current_stage == "build"
    assert state.history[0].gate == "ai-pending"
    pause = [e for e in events if e.kind == "paused"][-1]
    assert "migrations/0001_init.sql" in pause.text and "risk" in pause.text
    assert evidence(engine, state, state.history[0])["risky"] == ["migrations/0001_init.sql"]
    state = engine.approve()
    assert state.status == "done"  # ship changes nothing risky: no pause


def test_globs():
    assert matches(["migrations/**"], "migrations/a/b.sql") and not matches(["migrations/**"], "src/migrations.py")
    assert matches([".github/"], ".github/workflows/ci.yml") and matches(["*.toml"], "pyproject.toml")
    assert not matches(["*.toml"], "sub/pyproject.toml") and matches(["**/*.toml"], "sub/pyproject.toml")
    assert glob_regex("src/*.py").match("src/a.py") and not glob_regex("src/*.py").match("src/x/a.py")


def test_the_validator_knows_scope_and_risk_and_schedulable_reports_risk():
    text = """
name: r
version: 1
description: d
max_iterations: 2
risk: ["migrations/**"]
stages:
  - id: build
    produces: [src/]
    gate: {mode: ai, check: built}
  - id: docs
    agent: planner
    produces: [docs/x.md]
    scope: ["docs/**"]
    gate: {mode: ai, check: ok}
"""
    assert validate_text(text, "r.yaml").ok
    report = validate_text(text, "r.yaml", schedulable=True)
    assert not report.ok
    (err,) = report.errors
    assert err.field == "risk" and "build" in err.message and "migrations/**" in err.message
    bad = validate_text(text.replace('scope: ["docs/**"]', 'scope: ["/etc/**"]'), "r.yaml")
    assert not bad.ok and any(e.field == "stages[1].scope[0]" for e in bad.errors)
    outside = validate_text(text.replace('scope: ["docs/**"]', 'scope: ["src/**"]'), "r.yaml")
    assert [e.field for e in outside.errors] == ["stages[1].produces[0]"]
    typo = validate_text(text.replace("risk:", "risks:"), "r.yaml")
    assert not typo.ok


def test_a_notebook_saved_while_a_stage_runs_is_never_reverted(project, write_loop):
    """Jupyter autosaves the user's notebook in the project while stages run: not the stage's to lose."""
    write_loop(REVIEW_LOOP)
    setup_src(project)
    (project / "analysis.ipynb").write_text('{"cells": []}\n')
    engine, _ = scripted_engine(project, """
stages:
  review:
    - tools:
        - bash: {command: "printf '{\\"cells\\": [1]}\\\\n' > analysis.ipynb"}
        - write: {file_path: "{run_dir}/review.md", content: "fine\\n"}
    - text: reviewed
default_verdict: {status: DONE, passed: true}
""")
    state = engine.start("reviewed", "t")
    assert state.status == "done" and state.history[0].result == "pass"
    assert (project / "analysis.ipynb").read_text() == '{"cells": [1]}\n'
