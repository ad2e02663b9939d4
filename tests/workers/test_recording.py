"""Recorded runs that replay (issue 24, item 6): a run recorded (``ODIN_RECORD``) against the local fake Messages
API, through the real SDK over HTTP and the real engine, then replayed offline (``ODIN_SCRIPT`` = the recording)
in a fresh project: the same history and byte-identical artifacts; a replay that departs says where; the API
key is never in the recording."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from odin_magic.core.errors import ConfigError, OdinError
from odin_magic.engine.orchestrator import Engine
from odin_magic.workers.config import Settings
from odin_magic.workers.factory import make_worker
from odin_magic.workers.record_journal import journal_of
from odin_magic.workers.recording import Recorder, message_from_sse
from odin_magic.workers.scripted import load_script, message_body, sse_bytes

from support import REPO
from support.fake_messages import FakeMessages

KEY = "sk-ant-api03-recording-test-key-0123456789"

LOOP = """
name: rec
max_iterations: 4
memory: false
regression: false
stages:
  - id: build
    produces: [notes.md]
    gate:
      mode: ai
      check: the app prints hello
      run: ["python app.py"]
      on_fail: build
  - id: check
    gate: {mode: ai, check: reviewed}
"""

APP_BAD = "print('hell')\n"


def seed(project: Path, data: str = "hello data\n") -> Path:
    project.mkdir(parents=True, exist_ok=True)
    (project / "data.txt").write_text(data)
    loops = project / ".odin-loop" / "loops"
    loops.mkdir(parents=True, exist_ok=True)
    (loops / "rec.yaml").write_text(textwrap.dedent(LOOP))
    return project


def queue_run(fake: FakeMessages) -> None:
    """build (2 executions: the judge fails the first), check: the replies of a Claude run, in order."""
    fake.tool("bash", {"command": "cat data.txt"}, text="Reading the data first.",
              usage={"input_tokens": 1200, "output_tokens": 40, "cache_read_input_tokens": 900})
    fake.tool("write", {"file_path": "app.py", "content": APP_BAD})
    fake.raw(lambda body: _write_notes(body))
    fake.reply(f"Wrote app.py and the notes (the key {KEY} must never be recorded).")
    fake.verdict(status="DONE", passed=False, reasons=["prints hell"], blocking=["it must print hello"])
    fake.tool("edit", {"file_path": "app.py", "old_string": "hell'", "new_string": "hello'"})
    fake.reply("Fixed: app.py prints hello.\nNotes kept.")
    fake.verdict(status="DONE", passed=True, reasons=["prints hello"])
    fake.error(529, "Overloaded")  # the SDK retries it: recorded as an error turn, replayed as one
    fake.reply("Checked: nothing to change.")
    fake.verdict(status="DONE", passed=True, reasons=["fine"])


def _write_notes(body: dict):
    """A tool call with the run dir in its path (recorded as {run_dir}): the run's notes.md."""
    path = re.search(r"notes\.md -> (\S+/notes\.md)", json.dumps(body["messages"][0])).group(1)
    from odin_magic.workers.scripted import message_body as mb, new_id, reply_response

    content = [{"type": "tool_use", "id": new_id("toolu"), "name": "write",
                "input": {"file_path": path, "content": "# Notes\nfixed the greeting\n"}}]
    return reply_response(body, mb(model=body["model"], content=content, stop_reason="tool_use",
                                   usage={"input_tokens": 30, "output_tokens": 20}))


def history(state) -> list[tuple]:
    return [(e.stage, e.result, e.failure) for e in state.history]


def artifacts(engine: Engine, state) -> dict[str, bytes]:
    run_dir = engine.run_dir(state.run_id)
    return {"app.py": (engine.project_dir / "app.py").read_bytes(), "notes.md": (run_dir / "notes.md").read_bytes()}


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """A run recorded against the fake Messages API served on 127.0.0.1: (recording path, state, artifacts)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    project = seed(tmp_path / "recorded")
    recording = tmp_path / "run.recording.yaml"
    fake = FakeMessages()
    queue_run(fake)
    with fake.serve() as url:
        settings = Settings.from_env(env={}, base_url=url, record=recording, max_retries=2, thinking_budget=0)
        engine = Engine(project, worker=make_worker(settings, project))
        state = engine.start("rec", "print hello")
    assert fake.pending == 0 and not fake.unexpected
    assert state.status == "done", state
    assert not journal_of(recording).exists()  # the drive's end rendered the YAML from the journal
    return recording, state, artifacts(engine, state)


def replay(tmp_path: Path, recording: Path, name: str, data: str = "hello data\n"):
    project = seed(tmp_path / name, data)
    settings = Settings.from_env(env={}, script=recording, thinking_budget=0)
    engine = Engine(project, worker=make_worker(settings, project))
    return engine, engine.start("rec", "print hello")


def test_a_recorded_run_replays_offline_to_the_same_history_and_artifacts(recorded, tmp_path, monkeypatch):
    recording, original, original_files = recorded
    assert history(original) == [("build", "fail", "recoverable"), ("build", "pass", None), ("check", "pass", None)]
    script = load_script(recording)  # the scripted model's own format
    assert script.recorded is not None and script.recorded.run == original.run_id
    assert [len(a.turns) for a in script.stages["build"]] == [4, 2]
    first = script.stages["build"][0].turns[0]
    assert first.text == "Reading the data first." and first.tools == [{"bash": {"command": "cat data.txt"}}]
    assert first.usage == {"input_tokens": 1200, "output_tokens": 40, "cache_read_input_tokens": 900,
                           "cache_creation_input_tokens": 0}
    notes = script.stages["build"][0].turns[2].tools[0]["write"]
    assert notes["file_path"] == "{run_dir}/notes.md"  # the run dir as a placeholder: it replays in another run
    assert script.stages["check"][0].turns[0].error.status == 529
    assert [a.json_["passed"] for a in script.judge["build"]] == [False, True]

    monkeypatch.delenv("ANTHROPIC_API_KEY")  # offline: no key needed
    engine, state = replay(tmp_path, recording, "replayed")
    assert state.status == "done" and history(state) == history(original)
    assert [e.reason for e in state.history] == [e.reason for e in original.history]
    assert artifacts(engine, state) == original_files  # byte-identical


def test_the_api_key_is_never_in_the_recording(recorded):
    recording, _, _ = recorded
    text = recording.read_text()
    assert KEY not in text
    assert "[redacted ANTHROPIC_API_KEY]" in text  # the model's reply that held it


def test_a_replay_that_departs_from_its_recording_says_where(recorded, tmp_path, monkeypatch):
    recording, _, _ = recorded
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(OdinError) as caught:
        replay(tmp_path, recording, "departed", data="other data\n")  # `cat data.txt` answers differently
    message = caught.value.message
    assert "the replay departs from its recording" in message
    assert "at stage build, attempt 1, turn 2: the request differed" in message
    assert "recorded: '[tool_result] hello data'" in message and "now: '[tool_result] other data'" in message
    assert "\n" not in message.split("the replay departs")[1]  # one line


def test_a_replay_that_runs_a_stage_more_often_than_recorded_is_a_departure(recorded, tmp_path, monkeypatch):
    recording, _, _ = recorded
    doc = yaml.safe_load(recording.read_text())
    doc["stages"]["build"]["attempts"].pop()  # the recording ran build once
    doc["judge"]["build"] = doc["judge"]["build"][:1]
    shorter = tmp_path / "shorter.yaml"
    shorter.write_text(yaml.safe_dump(doc, sort_keys=False))
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(OdinError, match="stage build runs a 2nd time; the recording ran it 1 time"):
        replay(tmp_path, shorter, "short")


def test_a_reply_that_broke_off_is_not_a_recorded_message():
    message = message_body(model="m", content=[{"type": "text", "text": "hi"}], stop_reason="end_turn",
                           usage={"input_tokens": 3, "output_tokens": 2})
    data = sse_bytes(message)
    assert message_from_sse(data)["content"] == [{"type": "text", "text": "hi"}]
    assert message_from_sse(data[: len(data) // 2]) is None


def _exchange(recorder, run_dir: str, call: str, text: str) -> None:
    headers = {"x-odin-stage": "build", "x-odin-purpose": "work", "x-odin-call": call, "x-odin-run-dir": run_dir}
    body = {"messages": [{"role": "user", "content": f"brief of {run_dir}"}]}
    reply = message_body(model="m", content=[{"type": "text", "text": text}], stop_reason="end_turn",
                         usage={"input_tokens": 5, "output_tokens": 1})
    recorder.record(headers, body, reply)


def test_the_recording_is_on_disk_after_every_exchange_and_a_resumed_run_goes_on_in_it(tmp_path):
    path = tmp_path / "rec.yaml"
    first = Recorder(path, tmp_path)
    _exchange(first, ".odin-loop/runs/20261203-010101-rec", "call-1", "one")
    script = load_script(path)  # a crash now keeps this exchange, as a loadable script
    assert script.stages["build"][0].turns[0].text == "one"
    assert script.stages["build"][0].turns[0].request.sent == "brief of {run_dir}"
    again = Recorder(path, tmp_path)  # a new process: the same run goes on in the same file
    _exchange(again, ".odin-loop/runs/20261203-010101-rec", "call-2", "two")
    assert [a.turns[0].text for a in load_script(path).stages["build"]] == ["one", "two"]
    other = Recorder(path, tmp_path)  # another run: the file starts over
    _exchange(other, ".odin-loop/runs/20261203-020202-rec", "call-3", "three")
    script = load_script(path)
    assert [a.turns[0].text for a in script.stages["build"]] == ["three"]
    assert script.recorded.run == "20261203-020202-rec"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # written atomically: no temp left


RUN = ".odin-loop/runs/20261203-010101-rec"


def _answer(recorder, purpose: str, answer: dict) -> None:
    headers = {"x-odin-stage": "build", "x-odin-purpose": purpose, "x-odin-run-dir": RUN}
    body = {"messages": [{"role": "user", "content": f"{purpose} brief"}]}
    reply = message_body(model="m", content=[{"type": "text", "text": json.dumps(answer)}], stop_reason="end_turn",
                         usage={"input_tokens": 5, "output_tokens": 1})
    recorder.record(headers, body, reply)


def _stat(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_ino, st.st_mtime_ns, st.st_size


def test_an_exchange_appends_one_line_and_never_rewrites_the_recording(tmp_path):
    """The cost of recording an exchange does not grow with the run: the YAML is left as it is, the
    journal grows by the exchange's line alone, the 50th exchange writing what the 10th did."""
    path, journal = tmp_path / "rec.yaml", journal_of(tmp_path / "rec.yaml")
    _exchange(Recorder(path, tmp_path), RUN, "call-0", "reply 000")
    recorder = Recorder(path, tmp_path)  # made again: the leftover journal rendered into the YAML
    assert path.is_file() and not journal.exists()
    grown = []
    for i in range(1, 51):
        before, size = _stat(path), journal.stat().st_size if journal.exists() else 0
        _exchange(recorder, RUN, f"call-{i}", f"reply {i:03d}")
        assert _stat(path) == before, f"exchange {i} rewrote the recording"
        grown.append(journal.stat().st_size - size)
    assert grown[49] == grown[9] and max(grown) - min(grown) <= 1  # attempt 9 -> 10: one digit more
    recorder.render()
    assert not journal.exists()
    assert [a.turns[0].text for a in load_script(path).stages["build"]] == [f"reply {i:03d}" for i in range(51)]


def test_a_recorder_stopped_before_rendering_loses_nothing(tmp_path, monkeypatch):
    """A recorder killed before it rendered (no drive end, no exit: SIGKILL) leaves its journal; the replay's
    loader and the next recorder fold it in, once, even after a crash between the render and the journal's
    removal, and a line the crash cut short is left out. The journal is redacted as the YAML is."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    path, journal = tmp_path / "rec.yaml", journal_of(tmp_path / "rec.yaml")
    killed = Recorder(path, tmp_path)
    for i in range(3):
        _exchange(killed, RUN, "call-1", f"turn {i}" + (f" {KEY}" if i == 2 else ""))
    _answer(killed, "judge", {"status": "DONE", "passed": False, "reasons": ["not yet"]})
    _answer(killed, "interview", {"score": 0.5})
    assert not path.exists() and journal.exists()  # nothing rendered yet: the journal holds it all
    assert KEY not in journal.read_text() and "[redacted ANTHROPIC_API_KEY]" in journal.read_text()
    left = journal.read_bytes()

    script = load_script(path)  # the replay's loader folds the journal in
    assert [t.text for t in script.stages["build"][0].turns] == ["turn 0", "turn 1", "turn 2 [redacted ANTHROPIC_API_KEY]"]
    assert [a.json_["passed"] for a in script.judge["build"]] == [False]
    assert [a.json_ for a in script.answers["interview"]["build"]] == [{"score": 0.5}]
    assert script.recorded.run == "20261203-010101-rec"
    assert not journal.exists()

    journal.write_bytes(left + b'{"run":"20261203-01')  # a crash after the render, before the removal, mid-line
    again = Recorder(path, tmp_path)  # the next process: folds nothing twice, then goes on
    _exchange(again, RUN, "call-2", "turn 3")
    assert journal.exists()
    script = load_script(path)
    assert [[t.text for t in a.turns] for a in script.stages["build"]] == [
        ["turn 0", "turn 1", "turn 2 [redacted ANTHROPIC_API_KEY]"], ["turn 3"]]
    assert len(script.judge["build"]) == 1 and len(script.answers["interview"]["build"]) == 1
    assert KEY not in path.read_text()


CHILD = """
import os, signal, sys
from pathlib import Path
from odin_magic.workers.recording import Recorder
from odin_magic.workers.scripted import message_body

path, how, texts = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
recorder = Recorder(path, path.parent)
for text in texts:
    headers = {"x-odin-stage": "build", "x-odin-call": text, "x-odin-run-dir": "runs/20261203-010101-rec"}
    reply = message_body(model="m", content=[{"type": "text", "text": text}], stop_reason="end_turn", usage={})
    recorder.record(headers, {"messages": [{"role": "user", "content": "brief"}]}, reply)
if how == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_process_renders_its_recording_at_exit_and_one_killed_leaves_its_journal(tmp_path):
    path = tmp_path / "rec.yaml"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), "exit", "one", "two"], env=env, capture_output=True)
    assert done.returncode == 0, done.stderr
    assert path.is_file() and not journal_of(path).exists()  # rendered at exit
    killed = subprocess.run([sys.executable, "-c", CHILD, str(path), "kill", "three"], env=env, capture_output=True)
    assert killed.returncode == -9 and journal_of(path).exists()  # SIGKILL: no exit hook ran
    assert [a.turns[0].text for a in load_script(path).stages["build"]] == ["one", "two", "three"]


def test_a_journal_that_cannot_be_rendered_is_one_line_and_is_kept(tmp_path):
    path = tmp_path / "rec.yaml"
    _exchange(Recorder(path, tmp_path), RUN, "call-1", "one")
    path.mkdir()  # the recording's place is taken: the YAML cannot be written
    with pytest.raises(ConfigError, match=r"ODIN_RECORD: cannot render the recording .*rec\.yaml from its journal"):
        Recorder(path, tmp_path)
    with pytest.raises(ConfigError, match=r"cannot fold the recording's journal .*rec\.yaml\.journal into"):
        load_script(path)
    assert b'"one"' in journal_of(path).read_bytes()  # nothing lost
