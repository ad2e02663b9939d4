"""Without a sandbox, what the engine owns is checked, and engine writes never follow a worker's links (issue 20, parts 3 and 4).

The REAL engine, Claude worker (the SDK's agent toolset, bash included) and SDK against the offline scripted
Messages API; the loops say `sandbox: off`, so the worker's bash can reach the run dir (with the sandbox on, where
bwrap works, it cannot: tests/engine/test_sandboxed_runs.py).
"""

from __future__ import annotations

import json
import sys

import pytest

from odin_magic.core.confine import PathEscapes
from odin_magic.engine.tamper import LoopTampered
from odin_magic.workers.claude import REFUSALS_FILE

from support.scripted_runs import Events, scripted_engine

TWO_STAGES = """
name: tampered
max_iterations: 4
sandbox: off
stages:
  - id: build
    agent: executor
    produces: [src/]
    gate: {{mode: {mode}, check: it is built}}
  - id: test
    agent: executor
    produces: [src/]
    gate: {{mode: ai, check: it is tested, run: ["false"]}}
"""

# the build stage's bash deletes the next stage's gate command from the run's copy of its loop
UNGATE = """
import json, os
path = os.path.join(os.environ["ODIN_RUN_DIR"], "loop.json")
loop = json.load(open(path))
loop["stages"][1]["gate"]["run"] = []
json.dump(loop, open(path, "w"))
"""


def two_stages(command: str, second: str, second_write: str, second_text: str) -> str:
    """A script: ``build`` writes src/app.py and runs ``command`` in bash; ``second`` writes ``second_write``
    (a JSON-quoted write tool call) and says ``second_text``."""
    return f"""
stages:
  build:
    attempts:
      - turns:
          - tools:
              - write: {{file_path: src/app.py, content: "print('app')\\n"}}
              - bash: {{command: {json.dumps(command)}}}
          - text: built
  {second}:
    attempts:
      - turns:
          - tools: [{{write: {second_write}}}]
          - text: {second_text}
default_verdict: {{status: DONE, passed: true}}
"""


def ungate_script(tmp_path) -> str:
    helper = tmp_path / "ungate.py"
    helper.write_text(UNGATE, encoding="utf-8")
    return two_stages(f"{sys.executable} {helper}", "test", '{file_path: src/app.py, content: "print(\'tested\')\\n"}',
                      "tested")


def test_a_loop_json_edited_by_a_stage_blocks_the_run_before_the_next_stage(project, write_loop, tmp_path):
    write_loop(TWO_STAGES.format(mode="ai"))
    events = Events()
    engine, _ = scripted_engine(project, ungate_script(tmp_path), events)
    state = engine.start("tampered", "t")
    assert state.status == "blocked", (state.status, state.history)
    assert state.blocked.kind == "tampered" and state.blocked.stage == "test"
    assert "loop.json was changed outside odin since the run started" in state.blocked.reason
    assert str(engine.run_dir(state.run_id) / "loop.json") in state.blocked.reason
    assert "revert it" in state.blocked.fix and "new run" in state.blocked.fix
    assert [h.stage for h in state.history] == ["build"]  # the test stage never ran on the edited loop
    assert (project / "src" / "app.py").read_text() == "print('app')\n"
    assert any(e.kind == "blocked" and "loop.json" in e.text for e in events)
    # odin run again: still changed, still blocked, nothing executed
    with pytest.raises(LoopTampered, match="loop.json was changed outside odin"):
        engine.run()
    assert engine.status().status == "blocked"
    assert (project / "src" / "app.py").read_text() == "print('app')\n"


def test_a_loop_json_edited_before_a_pause_blocks_the_approval(project, write_loop, tmp_path):
    write_loop(TWO_STAGES.format(mode="human"))
    engine, _ = scripted_engine(project, ungate_script(tmp_path))
    state = engine.start("tampered", "t")
    assert state.status == "awaiting_approval"
    with pytest.raises(LoopTampered) as caught:
        engine.approve()
    assert "loop.json was changed outside odin since the run started" in caught.value.message
    assert "revert it" in caught.value.hint
    state = engine.status()
    assert state.status == "blocked" and state.blocked.kind == "tampered"
    assert [h.stage for h in state.history] == ["build"]
    assert (project / "src" / "app.py").read_text() == "print('app')\n"


def test_a_loop_json_put_back_lets_the_run_continue_from_its_pause(project, write_loop, tmp_path):
    write_loop(TWO_STAGES.format(mode="human"))
    engine, _ = scripted_engine(project, ungate_script(tmp_path))
    state = engine.start("tampered", "t")
    loop_json = engine.run_dir(state.run_id) / "loop.json"
    with pytest.raises(LoopTampered):
        engine.approve()
    data = json.loads(loop_json.read_text())
    data["stages"][1]["gate"]["run"] = ["true"]  # another gate command: still not the run's loop
    loop_json.write_text(json.dumps(data))
    with pytest.raises(LoopTampered):
        engine.run()
    original = engine.catalog.load("tampered").model_dump(mode="json")
    loop_json.write_text(json.dumps(original, indent=1))  # put back byte for byte
    state = engine.run()
    assert state.status == "awaiting_approval" and state.current_stage == "build"  # back at its pause
    assert state.blocked is None and [h.stage for h in state.history] == ["build"]


def test_a_loop_json_edited_by_the_last_stage_blocks_the_run_instead_of_ending_it(project, write_loop, tmp_path):
    write_loop(TWO_STAGES.format(mode="ai").replace("run: [\"false\"]", "run: [\"true\"]"))
    helper = tmp_path / "retitle.py"
    helper.write_text(UNGATE.replace('loop["stages"][1]["gate"]["run"] = []', 'loop["description"] = "mine"'))
    script = two_stages("true", "test", '{file_path: src/app.py, content: "print(\'tested\')\\n"}', "tested")
    script = script.replace(
        "- tools: [{write:", f"- tools: [{{bash: {{command: {json.dumps(f'{sys.executable} {helper}')}}}}}, {{write:", 1)
    engine, _ = scripted_engine(project, script)
    state = engine.start("tampered", "t")
    assert state.status == "blocked", (state.status, state.history)
    assert state.blocked.kind == "tampered" and state.blocked.stage == "test"
    assert [h.stage for h in state.history] == ["build"]  # the last stage's gate was not recorded
    assert state.ended_at is None


LINKED = """
name: linked
max_iterations: 4
sandbox: off
stages:
  - id: build
    agent: executor
    produces: [src/]
    gate: {mode: ai, check: it is built}
  - id: survey
    agent: explore
    consumes: [src/]
    produces: [survey.md]
    gate: {mode: ai, check: the survey is written}
"""

def planted(elsewhere, *names) -> str:
    links = " && ".join(f'ln -s {elsewhere / name} "$ODIN_RUN_DIR/{name}"' for name in names)
    return two_stages(links, "survey", '{file_path: survey.md, content: "x"}', '"# Survey\\n\\n- src/app.py prints app\\n"')


def test_links_planted_at_report_and_tool_refusals_lead_nowhere(project, write_loop, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "report").mkdir(parents=True)
    write_loop(LINKED)
    events = Events()
    engine, _ = scripted_engine(project, planted(elsewhere, "report", REFUSALS_FILE), events)
    state = engine.start("linked", "t")
    assert state.status == "done", (state.status, state.history)
    assert sorted(p.name for p in elsewhere.rglob("*")) == ["report"]  # nothing written out there
    rd = engine.run_dir(state.run_id)
    assert (rd / "report").is_symlink() and (rd / REFUSALS_FILE).is_symlink()
    told = [e.text for e in events]
    assert any(f"{REFUSALS_FILE} was not written" in t and "symbolic link" in t for t in told), told
    assert any("report could not be written" in t and "report is a symbolic link" in t for t in told), told


def test_a_link_planted_at_gates_stops_the_evidence_with_one_line(project, write_loop, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "gates").mkdir(parents=True)
    write_loop(LINKED)
    engine, _ = scripted_engine(project, planted(elsewhere, "gates"))
    with pytest.raises(PathEscapes, match="gates is a symbolic link to .*refused"):
        engine.start("linked", "t")
    assert list((elsewhere / "gates").iterdir()) == []
    state = engine.status()
    assert state.status == "running" and state.history == []  # nothing recorded without its evidence: resumable


def test_a_run_whose_loop_json_changed_is_not_forked(project, write_loop, tmp_path):
    write_loop(TWO_STAGES.format(mode="ai"))
    engine, _ = scripted_engine(project, ungate_script(tmp_path))
    state = engine.start("tampered", "t")
    with pytest.raises(LoopTampered, match="cannot be forked: loop.json was changed outside odin"):
        engine.fork(1, state.run_id)
    assert [r.run_id for r in engine.runs()] == [state.run_id]
