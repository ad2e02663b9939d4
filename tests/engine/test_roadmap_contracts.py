"""`roadmap run`'s contract stage (a missing contract proposed by the model, approved in hitl mode) and a
risky phase (the mutation sensor forced on, a person's sign-off after DONE): the real engine and SDK against
the scripted model, real checkpoints and gate commands."""

from __future__ import annotations

from odin_magic.engine.orchestrator import Engine
from odin_magic.engine.roadmap_driver import RoadmapDriver, RoadmapOptions
from odin_magic.loop.contract import contract_path, load_contract
from odin_magic.loop.roadmap import ROADMAP_FILE, load_roadmap
from odin_magic.runs.roadmap_progress import progress

ROADMAP = """\
# Greeter

autonomy: {autonomy}

## M1 Basics

- [ ] p1 Greet with hello
"""

CHECK = "python -m check_greet"  # a real gate command: runs the project's code

SCRIPT = f"""
stages:
  apply:
    - tools:
        - write: {{file_path: app.py, content: "def greet():\\n    return 'hello'\\n"}}
        - write: {{file_path: "{{run_dir}}/change-notes.md", content: "greet says hello"}}
    - text: done
judge:
  apply: {{status: DONE, passed: true, reasons: [greets]}}
default_verdict: {{passed: true, reasons: [scripted]}}
answers:
  contract:
    p1:
      - json:
          risk: tiny-fix
          impact: internal
          scope: [app.py]
          criteria: [{{id: AC1, priority: P0, text: "Given the app, when greet is called, then it says hello.", verify: "{CHECK}"}}]
          gate_commands: ["{CHECK}"]
          max_iterations: 2
"""


def _project(project, autonomy: str) -> None:
    (project / ".odin-loop").mkdir()
    (project / ROADMAP_FILE).write_text(ROADMAP.format(autonomy=autonomy))
    (project / "app.py").write_text("def greet():\n    return 'helo'\n")
    (project / "check_greet.py").write_text("import app\n\nassert app.greet() == 'hello', app.greet()\n")


def _engine(project, tmp_path, monkeypatch, script: str = SCRIPT) -> Engine:
    """A real engine whose model is the scripted one, chosen as a user would: ODIN_SCRIPT."""
    text, script = script, tmp_path / "roadmap.script.yaml"
    script.write_text(text)
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ODIN_SCRIPT", str(script))
    return Engine(project)


def test_a_missing_contract_is_proposed_by_the_model_and_approved_before_the_phase(project, tmp_path, monkeypatch):
    _project(project, "hitl")
    engine = _engine(project, tmp_path, monkeypatch)
    out = RoadmapDriver(engine).run()
    assert (out.ending, out.phase) == ("paused", "p1") and engine.runs() == []
    path = contract_path(project, "p1")
    contract = load_contract(path, project)
    assert contract.risk == "tiny-fix" and contract.max_iterations == 2 and contract.scope == ["app.py"]
    assert "proposed by the model" in path.read_text().splitlines()[0]
    assert any("asking the model" in line for line in out.lines) and any("scope: app.py" in line for line in out.lines)
    out = RoadmapDriver(engine).run()  # the person approves: the phase runs under the contract
    assert out.ending == "complete", out.lines
    assert (project / "app.py").read_text() == "def greet():\n    return 'hello'\n"
    run_dir = engine.run_dir(engine.runs()[0].run_id)
    # the criteria are the run's manifest; an id of the interview's form gets the phase, so an interview keeps it
    assert "- id: p1.AC1\n" in (run_dir / "acceptance.yaml").read_text()


RISKY = f"""\
risk: risky
impact: internal
scope: [app.py]
gate: {{kind: programmatic, run: ["{CHECK}"]}}
"""


def test_a_risky_phase_runs_the_sensor_and_waits_for_a_sign_off_after_done(project, tmp_path, monkeypatch):
    _project(project, "autonomous")
    path = contract_path(project, "p1")
    path.parent.mkdir(parents=True)
    path.write_text(RISKY.replace("risk: risky", "risk: risky\nloop: tiny-fix"))
    engine = _engine(project, tmp_path, monkeypatch)
    out = RoadmapDriver(engine).run()
    assert (out.ending, out.phase) == ("paused", "p1"), out.lines
    assert any("sign-off" in line for line in out.lines)
    run = engine.runs()[0]
    assert run.status == "done" and engine.loop_for(run.run_id).stages[0].gate.mutate  # the sensor was on
    roadmap = load_roadmap(project / ROADMAP_FILE)
    assert not roadmap.phases()[0].done and progress(project, roadmap)["p1"].pause == "signoff"
    assert RoadmapDriver(engine, options=RoadmapOptions(unattended=True)).run().exit_code == 3
    out = RoadmapDriver(engine).run()  # signed off
    assert out.ending == "complete" and load_roadmap(project / ROADMAP_FILE).phases()[0].done
    assert len(engine.runs()) == 1


RETRY_SCRIPT = """
stages:
  apply:
    attempts:
      - turns:
          - tools:
              - write: {file_path: app.py, content: "def greet():\\n    return 'hi'\\n"}
              - write: {file_path: "{run_dir}/change-notes.md", content: "greet says hi"}
          - text: done
      - turns:
          - tools:
              - write: {file_path: app.py, content: "def greet():\\n    return 'hello'\\n"}
          - text: fixed
default_verdict: {passed: true, reasons: [scripted]}
"""


def test_hitl_pauses_at_each_verdict_and_goes_on_when_approved(project, tmp_path, monkeypatch):
    _project(project, "hitl")
    path = contract_path(project, "p1")
    path.parent.mkdir(parents=True)
    path.write_text(RISKY.replace("risk: risky", "risk: tiny-fix"))
    engine = _engine(project, tmp_path, monkeypatch, RETRY_SCRIPT)
    assert RoadmapDriver(engine).run().ending == "paused"  # before the phase: its contract
    out = RoadmapDriver(engine).run()  # the first attempt fails its gate command: the verdict is shown
    assert (out.ending, out.phase) == ("paused", "p1") and any("verdict apply fail" in line for line in out.lines)
    run = engine.runs()[0]
    assert run.status == "running" and run.total_iterations == 1  # stopped after the verdict, resumable
    assert progress(project, load_roadmap(project / ROADMAP_FILE))["p1"].pause == "verdict"
    out = RoadmapDriver(engine).run()  # approved: the second attempt passes, the phase is done
    assert out.ending == "complete", out.lines
    assert len(engine.runs()) == 1 and (project / "app.py").read_text() == "def greet():\n    return 'hello'\n"



def _notes(body: dict):
    """The tiny-fix loop's change notes, written into the run dir the brief names."""
    import json
    import re

    from odin_magic.workers.scripted import message_body, new_id, reply_response

    path = re.search(r"change-notes\.md -> (\S+/change-notes\.md)", json.dumps(body["messages"][0])).group(1)
    content = [{"type": "tool_use", "id": new_id("toolu"), "name": "write",
                "input": {"file_path": path, "content": "greet says hello"}}]
    return reply_response(body, message_body(model=body["model"], content=content, stop_reason="tool_use",
                                             usage={"input_tokens": 30, "output_tokens": 20}))


def test_a_recorded_roadmap_session_keeps_the_contract_proposal_and_replays_offline(tmp_path, monkeypatch):
    """ODIN_RECORD on `roadmap run` against the local fake Messages API (the real SDK): the contract proposal's
    exchange is in the recording beside the phase's run, and the recording replays the whole session (proposal,
    approval, run) offline in another project."""
    import json

    import yaml

    from odin_magic.workers.script_file import load_script
    from support.fake_messages import FakeMessages

    first, other = tmp_path / "recorded", tmp_path / "replayed"
    first.mkdir(), other.mkdir()
    _project(first, "hitl")
    recording = tmp_path / "session.recording.yaml"
    fake = FakeMessages().reply(json.dumps(yaml.safe_load(SCRIPT)["answers"]["contract"]["p1"][0]["json"]))
    fake.tool("write", {"file_path": "app.py", "content": "def greet():\n    return 'hello'\n"})
    fake.raw(_notes).reply("done").verdict(status="DONE", passed=True, reasons=["greets"])
    for name in ("ODIN_SCRIPT", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-recorded-roadmap")
    monkeypatch.setenv("ODIN_RECORD", str(recording))
    with fake.serve() as url:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        engine = Engine(first)
        assert RoadmapDriver(engine).run().ending == "paused"  # the proposal, waiting for approval
        answers = load_script(recording).answers["contract"]["p1"]
        assert len(answers) == 1 and answers[0].json_["scope"] == ["app.py"] and answers[0].request is not None
        out = RoadmapDriver(engine).run()  # approved: the phase's run, in the same recording
        assert out.ending == "complete", "\n".join(out.lines)
    assert fake.pending == 0 and not fake.unexpected
    script = load_script(recording)
    assert script.recorded.run == engine.runs()[0].run_id and "apply" in script.stages, recording.read_text()
    assert len(script.answers["contract"]["p1"]) == 1  # the run went on in the recording: the proposal kept
    for name in ("ODIN_RECORD", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name)
    _project(other, "hitl")
    monkeypatch.setenv("ODIN_SCRIPT", str(recording))  # the recording replays the session
    replay = Engine(other)
    assert RoadmapDriver(replay).run().ending == "paused"
    assert load_contract(contract_path(other, "p1"), other).scope == ["app.py"]
    out = RoadmapDriver(replay).run()
    assert out.ending == "complete", out.lines
    assert (other / "app.py").read_text() == "def greet():\n    return 'hello'\n"
