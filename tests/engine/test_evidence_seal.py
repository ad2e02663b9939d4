"""Without a sandbox, a worker cannot change a gate's evidence unseen (issue 20, part 3: the evidence).

The REAL engine, Claude worker and SDK against the offline scripted Messages API; the loop says
`sandbox: off`, so the second stage's bash reaches `$ODIN_RUN_DIR/gates/evidence.jsonl`: truncated, deleted
or rewritten, the run blocks (`tampered`) with the file named, before the next gate is recorded.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

from odin_magic.engine.tamper import LoopTampered
from odin_magic.runs import evidence as gate_evidence
from odin_magic.runs.state import HistoryEntry
from odin_magic.render.run_report import write_report

from support.scripted_runs import Events, scripted_engine

LOOP = """
name: sealed
max_iterations: 4
sandbox: off
stages:
  - id: build
    agent: executor
    produces: [src/]
    gate: {mode: ai, check: it is built}
  - id: test
    agent: executor
    produces: [src/]
    gate: {mode: ai, check: it is tested}
"""

TAMPER = {  # what the test stage's bash does to the evidence file (a copy is kept at BACKUP first)
    "truncate": "open(path, 'r+b').truncate(os.path.getsize(path) - 7)",
    "delete": "os.remove(path)",
    # the same length, the same mtime: only the bytes (and the ctime, which no command can set back) differ
    "rewrite": ("data = open(path, 'rb').read(); info = os.stat(path); "
                "open(path, 'wb').write(data.replace(b'build', b'bu1ld')); "
                "os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))"),
}


def script(tmp_path, how: str | None) -> str:
    helper = tmp_path / "tamper.py"
    body = TAMPER[how] if how else "pass"
    helper.write_text("import os, shutil, sys\n"
                      "path = os.path.join(os.environ['ODIN_RUN_DIR'], 'gates', 'evidence.jsonl')\n"
                      f"shutil.copy(path, {str(tmp_path / 'backup.jsonl')!r})\n{body}\n", encoding="utf-8")
    command = json.dumps(f"{sys.executable} {helper}")
    return f"""
stages:
  build:
    attempts:
      - turns:
          - tools: [{{write: {{file_path: src/app.py, content: "print('app')\\n"}}}}]
          - text: built
  test:
    attempts:
      - turns:
          - tools: [{{bash: {{command: {command}}}}}]
          - text: tested
default_verdict: {{status: DONE, passed: true}}
"""


@pytest.mark.parametrize("how", ["truncate", "delete", "rewrite"])
def test_evidence_changed_by_a_stage_blocks_the_run_naming_the_file(project, write_loop, tmp_path, how):
    write_loop(LOOP)
    events = Events()
    engine, _ = scripted_engine(project, script(tmp_path, how), events)
    state = engine.start("sealed", "t")
    evidence = engine.run_dir(state.run_id) / "gates" / "evidence.jsonl"
    assert state.status == "blocked", (state.status, state.history)
    assert state.blocked.kind == "tampered" and state.blocked.stage == "test"
    assert str(evidence) in state.blocked.reason
    assert {"truncate": "missing", "delete": "was deleted", "rewrite": "rewritten"}[how] in state.blocked.reason
    assert "restore the file" in state.blocked.fix and "odin abandon" in state.blocked.fix
    assert [h.stage for h in state.history] == ["build"]  # the test stage's gate was not recorded
    assert any(e.kind == "blocked" and "evidence.jsonl" in e.text for e in events)
    with pytest.raises(LoopTampered, match="evidence.jsonl"):  # odin run again: still changed, still blocked
        engine.run()
    # restored byte for byte: the run goes on from the stage it was blocked at
    shutil.copy(tmp_path / "backup.jsonl", evidence)
    engine, _ = scripted_engine(project, script(tmp_path, None))
    state = engine.run()
    assert state.status == "done", (state.status, state.blocked)
    assert [h.stage for h in state.history] == ["build", "test"]


def test_an_untouched_run_is_unaffected_and_its_entries_carry_the_hash(project, write_loop, tmp_path):
    write_loop(LOOP)
    engine, _ = scripted_engine(project, script(tmp_path, None))
    state = engine.start("sealed", "t")
    assert state.status == "done", (state.status, state.blocked)
    run_dir = engine.run_dir(state.run_id)
    data = (run_dir / "gates" / "evidence.jsonl").read_bytes()
    for entry in state.history:
        offset = int(entry.evidence.partition("#")[2])
        line = data[offset:offset + entry.evidence_bytes]
        assert line.endswith(b"\n") and entry.evidence_sha256 == __import__("hashlib").sha256(line).hexdigest()
        assert gate_evidence.read_entry(run_dir, entry)["stage"] == entry.stage


def test_reading_a_rewritten_line_says_it_changed_rather_than_showing_it(project, write_loop, tmp_path):
    write_loop(LOOP)
    engine, _ = scripted_engine(project, script(tmp_path, None))
    state = engine.start("sealed", "t")
    run_dir = engine.run_dir(state.run_id)
    evidence = run_dir / "gates" / "evidence.jsonl"
    evidence.write_bytes(evidence.read_bytes().replace(b'"passed":true', b'"passed":tru3'))  # after the run
    with pytest.raises(gate_evidence.EvidenceChanged, match="evidence changed after it was written"):
        gate_evidence.read_entry(run_dir, state.history[0])
    report = write_report(state, None, run_dir).read_text(encoding="utf-8")
    assert "evidence changed after it was written" in report


def test_an_old_run_without_hashes_still_reads(project, write_loop, tmp_path):
    write_loop(LOOP)
    engine, _ = scripted_engine(project, script(tmp_path, None))
    state = engine.start("sealed", "t")
    run_dir = engine.run_dir(state.run_id)
    log = run_dir / "events.jsonl"
    lines = []
    for line in log.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        for key in ("evidence_sha256", "evidence_bytes"):
            (record.get("entry") or {}).pop(key, None)
        lines.append(json.dumps(record))
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.remove(run_dir / "state.json")  # a cache: rebuilt from the log
    engine, _ = scripted_engine(project, script(tmp_path, None))
    old = engine.status(state.run_id)
    assert old.status == "done" and all(h.evidence_sha256 is None for h in old.history)
    assert gate_evidence.read_entry(run_dir, old.history[0])["stage"] == "build"
    assert isinstance(old.history[0], HistoryEntry)
    assert "build" in write_report(old, None, run_dir).read_text(encoding="utf-8")


def test_evidence_changed_at_a_pause_blocks_the_approval(project, write_loop, tmp_path):
    write_loop(LOOP.replace("{mode: ai, check: it is built}", "{mode: human, check: it is built}"))
    engine, _ = scripted_engine(project, script(tmp_path, None))
    state = engine.start("sealed", "t")
    assert state.status == "awaiting_approval"
    evidence = engine.run_dir(state.run_id) / "gates" / "evidence.jsonl"
    evidence.write_bytes(b"")  # what an unsandboxed command left running could do while the run waits
    with pytest.raises(LoopTampered) as caught:
        engine.approve()
    assert str(evidence) in caught.value.message and "missing" in caught.value.message
    assert "restore the file" in caught.value.hint
    state = engine.status()
    assert state.status == "blocked" and state.blocked.kind == "tampered"
    assert [h.stage for h in state.history] == ["build"]
