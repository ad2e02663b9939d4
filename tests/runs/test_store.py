"""The run store: the event log is authoritative, state.json is a rebuildable cache."""

from __future__ import annotations

import json
import os
import socket

import pytest

from support.loops import pingpong_loop
from odin_magic.engine.orchestrator import Engine
from odin_magic.core.errors import RunLocked
from odin_magic.runs.records import parse_record
from odin_magic.runs.state import DryOptions
from odin_magic.runs.store import (
    LOG_NAME, STATE_NAME, RunCorrupt, RunLock, RunStore, fold, last_record, load_run, read_log, write_atomic
)


@pytest.fixture
def finished(project, write_loop):
    """A finished dry run of the demo loop with two loopbacks: (store, run_dir, final state)."""
    write_loop()
    state = Engine(project).start("demo", "t", dry=DryOptions(gates=["test:fail", "test:fail"], approve_all=True))
    store = RunStore(project)
    return store, store.run_dir(state.run_id), state


def test_state_is_the_fold_of_the_log(finished):
    store, run_dir, state = finished
    records, _, torn = read_log(run_dir / LOG_NAME)
    assert not torn
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    assert all({"seq", "at", "type"} <= set(r) for r in records)
    assert fold(records).to_json() == state.to_json()
    assert json.loads((run_dir / STATE_NAME).read_text())["log_seq"] == records[-1]["seq"]


def test_one_event_per_gate_evaluation(finished):
    _, run_dir, state = finished
    records, _, _ = read_log(run_dir / LOG_NAME)
    gate_events = [r for r in records if r["type"] == "gate"]
    assert len(gate_events) == sum(1 for e in state.history if e.gate != "approved")
    first_fail = next(r for r in gate_events if r["entry"]["result"] == "fail")
    # the entry, the counters, the next stage and the dry script's consumption travel together
    assert first_fail["set"]["iterations"] == {"test": 1}
    assert first_fail["set"]["total_iterations"] == 1
    assert first_fail["set"]["current_stage"] == "implement"
    assert first_fail["set"]["dry_used"] == {"test": 1}  # the script's position: one number
    assert state.dry.gates == ["test:fail", "test:fail"] and state.dry.used == {"test": 2}
    assert state.dry.remaining == []


def test_a_gate_record_names_its_evidence_by_hash(finished):
    import hashlib

    _, run_dir, _ = finished
    records, _, _ = read_log(run_dir / LOG_NAME)
    gate_events = [r for r in records if r["type"] == "gate"]
    for r in gate_events:  # the evidence needs no fsync of its own: its record carries its hash
        name, _, offset = r["entry"]["evidence"].partition("#")
        with open(run_dir / name, "rb") as f:
            f.seek(int(offset))
            line = f.readline()
            assert r["entry"]["evidence_sha256"] == hashlib.sha256(line).hexdigest()
            assert r["entry"]["evidence_bytes"] == len(line)
            assert parse_record(r).evidence_sha256 == r["entry"]["evidence_sha256"]


def test_a_dry_gate_record_does_not_carry_the_script(project, write_loop):
    """A long gate script costs the same per record as a short one (its position is recorded, not its rest)."""
    write_loop()
    script = ["test:fail"] * 500
    state = Engine(project).start("demo", "t", dry=DryOptions(gates=script, approve_all=True))
    assert not state.active or state.status == "blocked"  # a cap (max_iterations, repeats) stopped it
    records, _, _ = read_log(RunStore(project).run_dir(state.run_id) / LOG_NAME)
    gate_events = [r for r in records if r["type"] == "gate"]
    assert all(len(json.dumps(r)) < 2000 for r in gate_events)  # the rest of the script would be 6 KB
    used = state.iterations["test"]  # each scripted failure consumed is one loopback of test
    assert state.dry.used == {"test": used} and state.dry.remaining == ["test:fail"] * (500 - used)


@pytest.mark.parametrize("damage", ["missing", "corrupt", "ahead"])
def test_state_json_is_rebuilt_from_the_log(finished, damage):
    store, run_dir, state = finished
    path = run_dir / STATE_NAME
    if damage == "missing":
        path.unlink()
    elif damage == "corrupt":
        path.write_text('{"run_id": "x", "loop')
    else:
        path.write_text(json.dumps({**state.to_json(), "log_seq": 999, "status": "running"}))
    loaded = load_run(run_dir)
    assert loaded.notice and damage in loaded.notice
    assert loaded.state.to_json() == state.to_json()
    # a reader tells, and writes nothing (the next driver repairs state.json)
    before = path.read_bytes() if path.exists() else None
    notices = []
    Engine(store.project_dir, listener=lambda e: e.kind == "notice" and notices.append(e.text)).status(state.run_id)
    assert notices and damage in notices[0]
    assert (path.read_bytes() if path.exists() else None) == before


def test_a_driver_repairs_state_json_and_logs_a_notice(project, write_loop):
    write_loop()
    engine = Engine(project)
    paused = engine.start("demo", "t", dry=DryOptions())
    run_dir = RunStore(project).run_dir(paused.run_id)
    (run_dir / STATE_NAME).unlink()
    notices = []
    engine.listener = lambda e: e.kind == "notice" and notices.append(e.text)
    state = engine.approve()
    assert state.status == "done" and any("rebuilt from its event log" in n for n in notices)
    records, _, _ = read_log(run_dir / LOG_NAME)
    assert any(r["type"] == "notice" for r in records)
    assert json.loads((run_dir / STATE_NAME).read_text()) == state.to_json()


def test_a_torn_last_line_is_ignored_then_cut_off(project, write_loop):
    write_loop()
    engine = Engine(project)
    paused = engine.start("demo", "t", dry=DryOptions())
    run_dir = RunStore(project).run_dir(paused.run_id)
    log = run_dir / LOG_NAME
    size = log.stat().st_size
    last = paused.log_seq
    with open(log, "ab") as f:
        f.write(b'{"seq": %d, "at": "2026-01-01T00:00:00", "type": "appro' % (last + 1))
    assert load_run(run_dir).state.to_json() == paused.to_json()  # a reader ignores it
    assert last_record(log)["seq"] == last
    state = engine.approve()
    assert state.status == "done"
    records, _, torn = read_log(log)
    assert not torn and records[last]["type"] == "notice" and "torn" in records[last]["text"]
    assert log.read_bytes()[size:size + 1] == b"{" and b'"appro\n' not in log.read_bytes()


def test_a_driver_removes_what_interrupted_atomic_writes_left(project, write_loop):
    write_loop()
    engine = Engine(project)
    state = engine.start("demo", "t", dry=DryOptions())
    run_dir = RunStore(project).run_dir(state.run_id)
    left = [run_dir / ".state.json.4242.tmp"]
    for path in left:
        path.write_text('{"half')
    engine.approve()
    assert not any(path.exists() for path in left)


def test_damage_in_the_middle_of_the_log_is_reported(finished):
    _, run_dir, _ = finished
    log = run_dir / LOG_NAME
    lines = log.read_bytes().split(b"\n")
    lines[2] = b"not json"
    log.write_bytes(b"\n".join(lines))
    (run_dir / STATE_NAME).unlink()
    with pytest.raises(RunCorrupt, match="line 3"):
        load_run(run_dir)


@pytest.mark.parametrize("line, why", [
    (b"{}", 'integer "seq"'), (b"[1]", 'integer "seq"'), (b'{"seq": true, "type": "gate"}', 'integer "seq"'),
    (b'{"seq": 1, "type": "created"}', "field 'run_id' is missing"),
    (b'{"seq": 1, "type": "created", "run_id": "r", "loop": "l", "task": "t", "started_at": "s", '
     b'"current_stage": "a", "max_iterations": "many"}', "max_iterations"),
])
def test_a_log_of_the_wrong_shape_is_reported_not_a_traceback(tmp_path, line, why):
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    (run_dir / LOG_NAME).write_bytes(line + b"\n")
    with pytest.raises(RunCorrupt, match=why) as corrupt:
        load_run(run_dir)
    assert str(run_dir / LOG_NAME) in str(corrupt.value)


def test_one_unreadable_run_does_not_hide_the_others(project, write_loop):
    write_loop()
    events = []
    engine = Engine(project, listener=events.append)
    done = engine.start("demo", "first", dry=DryOptions(approve_all=True))
    store = RunStore(project)
    for name, log in [("00000000-000000-demo", b"not json\n"), ("99999999-999999-demo", b'{"seq": 1}\n')]:
        (store.runs_dir / name).mkdir()
        (store.runs_dir / name / LOG_NAME).write_bytes(log)
    assert [s.run_id for s in engine.runs()] == [done.run_id]
    assert engine.status().run_id == done.run_id  # the latest readable run
    notices = [e for e in events if e.kind == "notice"]
    assert {e.run_id for e in notices} == {"00000000-000000-demo", "99999999-999999-demo"}
    assert all("cannot be read and is left out" in e.text for e in notices)
    assert engine.start("demo", "second", dry=DryOptions()).status == "awaiting_approval"
    assert engine.active().task == "second"
    with pytest.raises(RunCorrupt, match="is not a valid event record"):
        engine.status("00000000-000000-demo")


@pytest.mark.parametrize("damage", [None, "x", '{"name": 3}', "[]"])
def test_an_unreadable_copy_of_the_loop_is_reported(project, write_loop, damage):
    write_loop()
    engine = Engine(project)
    state = engine.start("demo", "t", dry=DryOptions())
    path = RunStore(project).run_dir(state.run_id) / "loop.json"
    if damage is None:
        path.unlink()
    else:
        path.write_text(damage)
    with pytest.raises(RunCorrupt, match="the run's copy of its loop") as corrupt:
        engine.run()
    assert str(path) in str(corrupt.value)
    assert engine.status().status == "awaiting_approval"  # nothing was recorded


def test_last_record_reads_long_logs_from_the_end(tmp_path):
    log = tmp_path / LOG_NAME
    with open(log, "w") as f:
        for seq in range(1, 3001):
            f.write(json.dumps({"seq": seq, "type": "notice", "text": "x" * (seq % 50)}) + "\n")
    assert last_record(log, block=100)["seq"] == 3000
    assert last_record(tmp_path / "none.jsonl") is None
    log.write_text('{"seq": 1}')  # only a torn line
    assert last_record(log) is None


def test_write_atomic_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "state.json"
    write_atomic(target, "one")
    write_atomic(target, "two")
    assert target.read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_the_run_lock_names_its_holder(tmp_path):
    first = RunLock(tmp_path, "r1")
    first.acquire("odin run demo --task x", "2026-06-14T14:35:01")
    try:
        with pytest.raises(RunLocked) as refused:
            RunLock(tmp_path, "r1").acquire("odin approve", "2026-06-14T14:36:00")
        message = str(refused.value)
        assert f"pid {os.getpid()}" in message and socket.gethostname() in message
        assert "odin run demo --task x" in message and "2026-06-14T14:35:01" in message
    finally:
        first.release()
    again = RunLock(tmp_path, "r1")
    again.acquire("odin approve", "now")
    again.release()
    assert not (tmp_path / "driver.json").exists()


def test_layout_and_gitignore(project, write_loop):
    write_loop()
    state = Engine(project).start("demo", "t", dry=DryOptions())
    root = project / ".odin-loop"
    run_dir = root / "runs" / state.run_id
    assert {p.name for p in run_dir.iterdir()} >= {"events.jsonl", "state.json", "loop.json", "gates", "spec.md"}
    lines = (root / ".gitignore").read_text().splitlines()
    assert "*" in lines and "!loops/**" in lines


def test_a_creation_that_crashed_before_its_first_event_is_not_a_run(project, write_loop):
    write_loop()
    store = RunStore(project)
    store.ensure_layout()
    orphan = store.runs_dir / "20260101-000000-demo"
    orphan.mkdir()
    (orphan / LOG_NAME).write_bytes(b"")
    assert store.run_ids() == []
    state = Engine(project).start("demo", "t", dry=DryOptions())
    assert store.run_ids() == [state.run_id]


def test_a_driver_catches_up_with_a_state_json_behind_the_log_silently(project, write_loop):
    write_loop()
    engine = Engine(project)
    paused = engine.start("demo", "t", dry=DryOptions())
    run_dir = RunStore(project).run_dir(paused.run_id)
    records, _, _ = read_log(run_dir / LOG_NAME)
    (run_dir / STATE_NAME).write_text(json.dumps(fold(records[:1]).to_json()))  # as a kill -9 would leave it
    notices = []
    engine.listener = lambda e: e.kind == "notice" and notices.append(e.text)
    assert engine.approve().status == "done"
    assert notices == []  # behind is the normal state between refreshes, not damage
    assert not any(r["type"] == "notice" for r in read_log(run_dir / LOG_NAME)[0])


def test_a_reader_catches_up_after_a_killed_driver_without_a_notice(finished):
    import subprocess
    import sys

    _, run_dir, state = finished
    records, _, _ = read_log(run_dir / LOG_NAME)
    (run_dir / STATE_NAME).write_text(json.dumps(fold(records[:3]).to_json()))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (run_dir / "driver.json").write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname()}))
    loaded = load_run(run_dir)
    assert loaded.notice is None and loaded.state.to_json() == state.to_json()


def test_a_reader_behind_reads_only_the_logs_end(finished):
    """Catching up reads the records after state.json's log_seq from the end; the rest of the log is not parsed."""
    _, run_dir, state = finished
    log = run_dir / LOG_NAME
    records, _, _ = read_log(log)
    (run_dir / STATE_NAME).write_text(json.dumps(fold(records[:3]).to_json()))
    lines = log.read_bytes().split(b"\n")
    lines[1] = b"not json, and never read"  # damage before log_seq 3: a reader behind never gets there
    log.write_bytes(b"\n".join(lines))
    assert load_run(run_dir).state.to_json() == state.to_json()


def test_a_reader_catching_up_with_a_live_driver_says_nothing(finished):
    _, run_dir, state = finished
    records, _, _ = read_log(run_dir / LOG_NAME)
    (run_dir / STATE_NAME).write_text(json.dumps(fold(records[:3]).to_json()))
    (run_dir / "driver.json").write_text("{}")  # a driver holds the run and has not saved yet
    loaded = load_run(run_dir)
    assert loaded.notice is None and loaded.state.to_json() == state.to_json()


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_files_the_engine_writes_follow_the_umask(project, write_loop, umask):
    """state.json, loop.json, gate evidence and artifacts get 0666 less the umask, as any program's files do."""
    write_loop()
    old = os.umask(umask)
    try:
        state = Engine(project).start("demo", "t", dry=DryOptions(gates=["test:fail"], approve_all=True))
    finally:
        os.umask(old)
    run_dir = RunStore(project).run_dir(state.run_id)
    written = [p for p in [*run_dir.rglob("*"), *(project / "src").rglob("*")] if p.is_file() and p.suffix != ".lock"]
    names = {p.name for p in written}
    assert {STATE_NAME, "loop.json", "spec.md"} <= names and any(p.parent.name == "gates" for p in written)
    modes = {str(p.relative_to(project)): oct(p.stat().st_mode & 0o777) for p in written}
    assert modes == {name: oct(0o666 & ~umask) for name in modes}


def test_write_atomic_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    target = tmp_path / "script.sh"
    target.write_text("old")
    target.chmod(0o755)
    write_atomic(target, "new")
    assert target.read_text() == "new" and target.stat().st_mode & 0o777 == 0o755
    assert [p.name for p in tmp_path.iterdir()] == ["script.sh"]  # no temp file left behind


BENCH_LOOP = pingpong_loop()


def test_a_transition_costs_one_fsync(project, write_loop, monkeypatch):
    """Between one gate record and the next, the run syncs once: the next gate record (the stage's
    checkpoint record rides on it, evidence needs none, state.json waits for the end of the drive)."""
    write_loop(BENCH_LOOP)
    engine = Engine(project)
    syncs: list[str] = []
    windows: list[int] = []
    for name in ("fsync", "fdatasync"):
        if hasattr(os, name):
            real = getattr(os, name)
            monkeypatch.setattr(os, name, lambda fd, real=real, name=name: (syncs.append(name), real(fd))[1])

    def listen(event):
        if event.kind in ("gate_passed", "gate_failed"):
            windows.append(len(syncs))
            syncs.clear()

    engine.listener = listen
    state = engine.start("pingpong", "t", dry=DryOptions(gates=["check:fail"] * 30))
    assert state.status == "done" and len(windows) == 62
    steady = windows[4:]  # the first passes write the placeholders (atomically, once)
    assert sorted(steady)[len(steady) // 2] == 1, windows
    assert max(steady) <= 2, windows  # 2: a periodic state.json refresh fell in that window


def test_a_driver_that_opens_a_run_behind_brings_state_json_up_to_date_when_it_closes(finished):
    store, run_dir, state = finished
    records, _, _ = read_log(run_dir / LOG_NAME)
    (run_dir / STATE_NAME).write_text(json.dumps(fold(records[:3]).to_json()))
    handle, notice = store.open(state.run_id, "test", "2026-01-01T00:00:00")
    assert notice is None  # behind is not damage
    handle.close()  # nothing recorded: still, what it folded in from the log is saved
    assert json.loads((run_dir / STATE_NAME).read_text()) == state.to_json()


def test_a_pause_and_an_end_are_in_state_json_before_they_are_announced(project, write_loop):
    write_loop()
    seen: dict[str, str] = {}

    def listen(event):
        if event.kind in ("paused", "done"):
            run_dir = RunStore(project).run_dir(event.run_id)
            seen[event.kind] = json.loads((run_dir / STATE_NAME).read_text())["status"]

    engine = Engine(project, listener=listen)
    engine.start("demo", "t", dry=DryOptions())
    engine.approve()
    assert seen == {"paused": "awaiting_approval", "done": "done"}
