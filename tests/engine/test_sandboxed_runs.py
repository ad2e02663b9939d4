"""A stage's bash under the sandbox (issue 20, part 1): the REAL engine, Claude worker, SDK agent toolset (its bash
tool, its shell under odin's shell guard) and real bubblewrap, against the offline scripted Messages API."""

from __future__ import annotations

import json

import pytest

from odin_magic.core.sandbox import probe

from support.scripted_runs import Events, scripted_engine

pytestmark = pytest.mark.skipif(not probe().works, reason=f"bubblewrap cannot run here: {probe().reason}")

LOOP = """
name: boxed
max_iterations: 2
post_edit: ["bash -c 'test -w . && ! test -w .odin-loop'"]
{extra}
stages:
  - id: build
    produces: [notes.md]
    gate: {{mode: ai, check: notes.md is written}}
"""

TAMPER = """
stages:
  build:
    - tools:
        - bash: {command: "echo '{\\"stages\\": []}' > \\"$ODIN_RUN_DIR/loop.json\\"; echo evil > .odin-loop/evil; echo notes > \\"$ODIN_RUN_DIR/notes.md\\"; echo code > app.py; echo done"}
        - write: {file_path: "lib.py", content: "x = 1\\n"}
    - text: built
default_verdict: {status: DONE, passed: true}
"""


def tool_results(model) -> str:
    return json.dumps([m for body in model.requests for m in body.get("messages", [])])


def test_a_stages_bash_cannot_edit_loop_json_nor_odin_loop_but_writes_its_produces(project, write_loop):
    write_loop(LOOP.format(extra=""))
    events = Events()
    engine, model = scripted_engine(project, TAMPER, events)
    run_dir = project / ".odin-loop" / "runs"
    state = engine.start("boxed", "t")
    loop_json = engine.run_dir(state.run_id) / "loop.json"
    assert json.loads(loop_json.read_text())["stages"][0]["id"] == "build"  # unchanged
    assert not (project / ".odin-loop" / "evil").exists()
    assert (engine.run_dir(state.run_id) / "notes.md").read_text() == "notes\n"  # its produces: writable
    assert (project / "app.py").read_text() == "code\n"  # the project: writable
    assert "Read-only file system" in tool_results(model)
    assert "fast-fail check" not in tool_results(model) and "could not start" not in tool_results(model)
    assert (project / "lib.py").exists()  # and its post_edit (bash, sandboxed too, the shell guard sourced) passed
    assert state.status == "done" and run_dir.is_dir()
    assert not any("unsandboxed" in (e.text or "") for e in events)
    assert "**sandbox**" not in (engine.run_dir(state.run_id) / "report.md").read_text()


def test_sandbox_off_is_told_at_the_runs_start_and_lets_bash_write_everywhere(project, write_loop):
    write_loop(LOOP.format(extra="sandbox: off"))
    events = Events()
    engine, _ = scripted_engine(project, TAMPER, events)
    state = engine.start("boxed", "t")
    told = [e.text for e in events if e.kind == "notice" and "unsandboxed" in (e.text or "")]
    assert len(told) == 1 and "sandbox off" in told[0]
    assert 'docs/security.md, "Without the sandbox"' in told[0]  # where what off allows, and what is detected, is told
    assert (project / ".odin-loop" / "evil").exists()  # what off allows, as the warning says
    assert json.loads((engine.run_dir(state.run_id) / "loop.json").read_text())["stages"] == []
    report = (engine.run_dir(state.run_id) / "report.md").read_text()
    assert f"- **sandbox**: {told[0]}" in report  # the report says it too


def test_sandbox_bwrap_where_it_cannot_run_refuses_the_run_before_it_exists(project, write_loop, monkeypatch):
    import sys

    from odin_magic.core import sandbox
    from odin_magic.engine.orchestrator import Engine

    write_loop(LOOP.format(extra="sandbox: bwrap"))
    monkeypatch.setattr(sys, "platform", "darwin")  # where bubblewrap cannot run
    sandbox.probe.cache_clear()
    try:
        with pytest.raises(sandbox.SandboxUnavailable, match="sandbox: bwrap was asked for, but the sandbox needs Linux"):
            Engine(project).start("boxed", "t", dry=True)
    finally:
        monkeypatch.undo()
        sandbox.probe.cache_clear()
    assert not (project / ".odin-loop" / "runs").exists() or not any((project / ".odin-loop" / "runs").iterdir())
