"""Diffs, revert and fork (issue 11, items 2 and 4), through the real engine, Claude worker and SDK against
the offline scripted model; the crash test kills a real process mid-restore."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import filelock
import pytest

from odin_magic.render.diff_view import DiffDisplay
from odin_magic.runs import diffs
from odin_magic.engine import rewind
from odin_magic.runs.checkpoints import CheckpointError, Checkpoints
from odin_magic.cli import main as odin_main
from odin_magic.engine.orchestrator import Engine
from odin_magic.core.errors import OdinError, RunRefused, UsageError
from odin_magic.runs.state import HistoryEntry, RunState
from odin_magic.runs.store import RunHandle, RunStore

from support.scripted_runs import scripted_engine

LOOP = """
name: two
max_iterations: 5
stages:
  - id: build
    produces: [src/]
    gate: {mode: ai+human, check: built}
  - id: ship
    produces: [docs/]
    gate: {mode: ai+human, check: shipped}
"""

SCRIPT = """
stages:
  build:
    - tools:
        - write: {file_path: src/app.py, content: "print('new')\\n"}
        - bash: {command: "printf '\\\\001\\\\002\\\\377' > assets/logo.bin && rm notes.txt && echo more >> keep.txt"}
    - text: built
  ship:
    - tools: [{write: {file_path: docs/index.md, content: "# shipped\\n"}}]
    - text: shipped
default_verdict: {status: DONE, passed: true}
"""


def tree_digest(project: Path) -> dict[str, str]:
    out = {}
    for p in sorted(project.rglob("*")):
        rel = p.relative_to(project)
        if rel.parts[0] == ".odin-loop" or not p.is_file():
            continue
        out[rel.as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest() + ("x" if os.access(p, os.X_OK) else "")
    return out


def seed(project: Path) -> dict[str, str]:
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("print('old')\n")
    (project / "assets").mkdir()
    (project / "assets" / "logo.bin").write_bytes(bytes(range(256)) * 4)
    (project / "notes.txt").write_text("deleted by the stage\n")
    (project / "keep.txt").write_text("line\n")
    (project / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(project / "run.sh", 0o755)
    return tree_digest(project)


def test_revert_restores_text_binary_and_deleted_files_byte_for_byte(project, write_loop):
    write_loop(LOOP)
    original = seed(project)
    engine, _ = scripted_engine(project, SCRIPT)
    state = engine.start("two", "t")
    assert (state.status, state.current_stage) == ("awaiting_approval", "build")
    assert tree_digest(project) != original

    diff = engine.diff()
    assert (diff.stage, diff.number) == ("build", 1)
    assert {f.change.path: f.change.kind for f in diff.files} == {
        "src/app.py": "modified", "assets/logo.bin": "modified", "notes.txt": "deleted", "keep.txt": "modified"}
    assert "-print('old')\n+print('new')" in diff.text() and "Binary files" in diff.text()
    shown = DiffDisplay(diff).html()
    assert "<details" in shown and "src/app.py" in shown

    state = engine.revert("build")
    assert tree_digest(project) == original
    assert (state.status, state.current_stage) == ("running", "build")
    log = [json.loads(x) for x in (engine.run_dir(state.run_id) / "events.jsonl").read_text().splitlines()]
    reverted = [r for r in log if r["type"] == "reverted"]
    assert len(reverted) == 1 and reverted[0]["execution"] == 1 and sorted(reverted[0]["restored"]) == sorted(diff_paths(diff))


def diff_paths(diff):
    return [f.change.path for f in diff.files]



def test_each_changed_file_gets_its_own_diff_whatever_git_quotes_in_its_name(project):
    """git quotes a path with a quote, a backslash or a control character in it ("a/\\001ctl.txt"), and a
    name need not be UTF-8: every file still gets its own part of the diff, under the name the change list
    gives it (valid text: "lat\\xe9n1.txt")."""
    names = ["plain.txt", "sp ace.txt", "café.txt", 'say "hi".txt', "back\\slash.txt", "tab\tbed.txt",
             "b/ in.txt", "\x01ctl.txt", os.fsdecode(b"lat\xe9n1.txt")]
    store = Checkpoints(project)
    before = store.snapshot()
    for name in names:
        (project / name).parent.mkdir(exist_ok=True)
        (project / name).write_text(f"{name!r}\n")
    after = store.snapshot()
    assert '"a/\\001ctl.txt"' in store.diff(before, after)  # what git writes: an octal escape
    state = RunState(run_id="r", loop="l", task="t", started_at="2026-01-01T00:00:00", current_stage="s", max_iterations=1,
                     history=[HistoryEntry(stage="s", result="pass", gate="ai", at="2026-01-01T00:00:00",
                                           checkpoint=before, after=after)])
    shown = diffs.stage_diff(store, state)
    # as text: the byte that is not UTF-8 as \xNN (the file itself keeps its bytes)
    assert sorted(f.change.path for f in shown.files) == sorted(os.fsencode(n).decode("utf-8", "backslashreplace")
                                                                for n in names)
    for f in shown.files:
        assert f.text.count("diff --git ") == 1 and "new file mode" in f.text, f.change.path


def test_hand_made_changes_are_named_and_kept_unless_forced(project, write_loop):
    write_loop(LOOP)
    seed(project)
    engine, _ = scripted_engine(project, SCRIPT)
    engine.start("two", "t")
    (project / "src" / "app.py").write_text("print('mine')\n")  # by hand, after the stage
    events = []
    engine.listener = events.append
    state = engine.revert("build")
    assert (project / "src" / "app.py").read_text() == "print('mine')\n"  # kept
    assert (project / "notes.txt").read_text() == "deleted by the stage\n"  # the rest reverted
    note = [e for e in events if e.kind == "reverted"][-1]
    assert "kept your changes to src/app.py" in note.text and note.data["kept"] == ["src/app.py"]
    assert state.current_stage == "build"
    engine.revert("build", force=True)
    assert (project / "src" / "app.py").read_text() == "print('old')\n"


def test_a_revert_to_a_point_that_does_not_exist_changes_nothing(project, write_loop, capsys):
    write_loop(LOOP)
    seed(project)
    engine, _ = scripted_engine(project, SCRIPT)
    engine.start("two", "t")
    before = tree_digest(project)
    with pytest.raises(UsageError, match="no stage execution 7"):
        engine.revert(to=7)
    with pytest.raises(UsageError, match="has no recorded execution"):
        engine.revert("ship")
    assert tree_digest(project) == before
    assert odin_main(["revert", "--to", "7", "--project", str(project)]) == 2
    err = capsys.readouterr().err
    assert "no stage execution 7" in err and "Traceback" not in err
    assert tree_digest(project) == before


def test_fork_continues_to_done_and_abandons_the_old_run(project, write_loop):
    write_loop(LOOP)
    original = seed(project)
    engine, _ = scripted_engine(project, SCRIPT)
    engine.start("two", "t")
    engine.approve()  # build approved; ship ran and pauses
    old = engine.status()
    assert (old.status, old.current_stage) == ("awaiting_approval", "ship") and (project / "docs" / "index.md").exists()

    fork = engine.fork(from_point=0)  # before anything: the original tree, from the first stage
    assert fork.run_id != old.run_id and fork.forked_from == f"{old.run_id}@0"
    assert (fork.status, fork.current_stage, fork.history, fork.total_iterations) == ("running", "build", [], 0)
    assert tree_digest(project) == original
    gone = engine.status(old.run_id)
    assert gone.status == "abandoned" and gone.forked_to == fork.run_id
    state = engine.run()
    assert (state.run_id, state.status, state.current_stage) == (fork.run_id, "awaiting_approval", "build")
    state = engine.approve()
    state = engine.approve()
    assert state.status == "done" and [e.stage for e in state.history] == ["build", "build", "ship", "ship"]


def test_fork_from_a_point_keeps_the_history_up_to_it(project, write_loop):
    write_loop(LOOP)
    seed(project)
    engine, _ = scripted_engine(project, SCRIPT)
    engine.start("two", "t")
    engine.approve()
    fork = engine.fork(from_point=2)  # build's pass and its approval kept; ship runs again
    assert [(e.stage, e.gate) for e in fork.history] == [("build", "ai-pending"), ("build", "approved")]
    assert fork.current_stage == "ship" and not (project / "docs" / "index.md").exists()
    with pytest.raises(UsageError, match="no point 9"):
        engine.fork(from_point=9)


def at_ship(project, write_loop):
    """A run whose build was approved and whose ship awaits approval: (engine, its state, the tree's digest)."""
    write_loop(LOOP)
    seed(project)
    engine, _ = scripted_engine(project, SCRIPT)
    engine.start("two", "t")
    engine.approve()
    return engine, engine.status(), tree_digest(project)


def test_a_fork_that_fails_half_way_leaves_the_source_run_as_it_was(project, write_loop, capsys):
    """A file of the source run cannot be copied (a named pipe in its harness): the fork fails with one clear
    error, its new run is abandoned with the reason, and the source run is active again, its tree untouched."""
    engine, source, tree = at_ship(project, write_loop)
    harness = engine.store.run_dir(source.run_id) / "harness"
    harness.mkdir(exist_ok=True)
    os.mkfifo(harness / "pipe")

    assert odin_main(["fork", "--from", "0", "--project", str(project)]) == 1
    err = capsys.readouterr().err
    assert f"the files of run {source.run_id} could not be copied into the fork" in err and "pipe" in err
    assert "Traceback" not in err
    assert tree_digest(project) == tree
    again = engine.status(source.run_id)
    assert (again.status, again.forked_to, again.ended_at) == ("awaiting_approval", None, None)
    assert engine.active().run_id == source.run_id
    failed = [r for r in engine.runs() if r.run_id != source.run_id]
    assert len(failed) == 1 and failed[0].status == "abandoned"
    assert failed[0].failure_reason.startswith(f"the fork failed: the files of run {source.run_id}")
    state = engine.approve()  # the source run goes on to done
    assert state.run_id == source.run_id and state.status == "done"



@contextlib.contextmanager
def immutable(path: Path):
    """``path`` made immutable (chattr +i: no write, rename or unlink, even for root) for the block: a
    real write failure part-way through a restore."""
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not possible here (it needs CAP_LINUX_IMMUTABLE and ext2/3/4)")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def restore_failing_at_z(project: Path, store: Checkpoints, target: str) -> None:
    """``store.restore(target)`` with z.txt (the last file restored) immutable: the put-back must leave the
    tree as it was, with no journal."""
    before = tree_digest(project)
    with immutable(project / "z.txt"):
        with pytest.raises(CheckpointError, match="could not be restored .*z.txt.*; the files are as they were"):
            store.restore(target)
    assert tree_digest(project) == before and not store.journal.exists()


def a_and_z_changed(project: Path) -> tuple[Checkpoints, str]:
    """a.txt and z.txt changed since the checkpoint returned (with its store)."""
    (project / "a.txt").write_text("a1\n")
    (project / "z.txt").write_text("z1\n")
    store = Checkpoints(project)
    checkpoint = store.snapshot()
    (project / "a.txt").write_text("a2\n")
    (project / "z.txt").write_text("z2\n")
    return store, checkpoint


def test_a_restore_that_fails_part_way_puts_the_files_back(project):
    """Files restored one by one, in path order: the last one cannot be replaced. The ones already written
    are put back, the journal goes, and the error is one CheckpointError line."""
    store, before = a_and_z_changed(project)
    (project / "new.txt").write_text("new\n")
    restore_failing_at_z(project, store, before)
    assert store.restore(before) and (project / "a.txt").read_text() == "a1\n"  # and it works once mended


def test_a_fork_whose_restore_fails_part_way_leaves_everything_as_it_was(project, write_loop, capsys):
    engine, source, tree = at_ship(project, write_loop)
    with immutable(project / "src" / "app.py"):  # restored after assets/, keep.txt and notes.txt
        assert odin_main(["fork", "--from", "0", "--project", str(project)]) == 1
    err = capsys.readouterr().err
    assert "the files are as they were" in err and "Traceback" not in err
    assert tree_digest(project) == tree
    assert engine.active().run_id == source.run_id and engine.status(source.run_id).status == "awaiting_approval"
    assert [r.status for r in engine.runs() if r.run_id != source.run_id] == ["abandoned"]


def test_forking_a_past_run_is_refused_while_another_run_is_or_may_be_active(project, write_loop):
    write_loop(LOOP)
    seed(project)
    engine, _ = scripted_engine(project, SCRIPT)
    first = engine.start("two", "t").run_id
    engine.approve()
    assert engine.approve().status == "done"
    second = engine.start("two", "u").run_id
    with pytest.raises(RunRefused, match=f"run {second} .* one run per project at a time"):
        engine.fork(from_point=1, run_id=first, force=True)
    assert sorted(r.run_id for r in engine.runs()) == sorted([first, second])
    assert engine.status(first).status == "done" and engine.active().run_id == second
    (engine.store.run_dir(second) / "events.jsonl").unlink()  # damaged; its state.json says it is active
    with pytest.raises(RunRefused, match=f"run {second} is damaged and may still be active"):
        engine.fork(from_point=1, run_id=first, force=True)
    assert engine.status(first).status == "done" and engine.store.run_ids() == [first, second]


def test_a_failed_fork_gives_the_source_back_what_it_had_when_abandoned_under_the_project_lock(
        project, write_loop, monkeypatch):
    """Another process approves the source to done between the fork's first look and its abandoning it;
    the fork then fails: the source is given back done (as read under its lock), not the status first
    seen, and the undo holds the project lock (no run can start while no run is active)."""
    write_loop(LOOP)
    seed(project)
    engine, _ = scripted_engine(project, SCRIPT)
    run_id = engine.start("two", "t").run_id
    engine.approve()  # ship awaits approval
    other, _ = scripted_engine(project, SCRIPT)
    plan = rewind.plan

    def plan_while_another_process_approves(*args, **kwargs):  # a hook into the window, not a stand-in
        out = plan(*args, **kwargs)
        assert other.approve().status == "done"
        return out

    monkeypatch.setattr(rewind, "plan", plan_while_another_process_approves)
    harness = engine.store.run_dir(run_id) / "harness"
    harness.mkdir(exist_ok=True)
    os.mkfifo(harness / "pipe")  # the copy of the run's files fails for real
    lock_held = []
    open_run = engine.store.open

    def open_and_check_the_lock(rid, *args, **kwargs):
        if rid == run_id and any(r.status == "abandoned" and r.failure_reason for r in engine.runs()):
            probe = filelock.FileLock(str(engine.store.root / "project.lock"))
            try:
                probe.acquire(timeout=0)
                probe.release()
                lock_held.append(False)
            except filelock.Timeout:
                lock_held.append(True)
        return open_run(rid, *args, **kwargs)

    monkeypatch.setattr(engine.store, "open", open_and_check_the_lock)
    with pytest.raises(OdinError, match="could not be copied into the fork"):
        engine.fork(from_point=0)
    state = engine.status(run_id)
    assert (state.status, state.forked_to) == ("done", None) and state.ended_at is not None
    assert lock_held == [True]


def test_a_fork_whose_new_run_fails_after_its_first_record_leaves_one_run_active(project, write_loop, monkeypatch):
    """The new run's first record is written, then its state.json cannot be (a full disk): that run is
    abandoned too, and its lock released."""
    write_loop(LOOP)
    seed(project)
    engine, _ = scripted_engine(project, SCRIPT)
    source = engine.start("two", "t").run_id
    save = RunHandle.save

    def save_but_not_the_new_runs_first(handle):  # fault injection: the disk is full just then
        if handle.state.run_id != source and handle.state.log_seq == 1:
            raise OSError(28, "No space left on device")
        return save(handle)

    monkeypatch.setattr(RunHandle, "save", save_but_not_the_new_runs_first)
    with pytest.raises(OdinError, match="the fork failed: .*No space left on device") as info:
        engine.fork(from_point=0)
    assert f"run {source} is as it was" in info.value.hint
    monkeypatch.setattr(RunHandle, "save", save)
    assert [r.run_id for r in engine.runs() if r.active] == [source]
    half = next(r for r in engine.runs() if r.run_id != source)
    assert half.status == "abandoned" and "No space left" in half.failure_reason
    handle, _ = engine.store.open(half.run_id, "test", "2026-01-01T00:00:00")  # its lock was released
    handle.close()



def test_a_fork_whose_first_record_cannot_be_written_gives_the_source_back(project, write_loop, monkeypatch,
                                                                              capsys):
    """The new run's log file exists but its first record could not be written (a full disk): there is no
    run to abandon, the source gets its fields back all the same, and `odin fork` says so in one line."""
    engine, source, _ = at_ship(project, write_loop)
    record = RunHandle.record

    def full_disk_on_a_first_record(handle, type, at, **fields):  # fault injection
        if handle.state is None:
            raise OSError(28, "No space left on device")
        return record(handle, type, at, **fields)

    monkeypatch.setattr(RunHandle, "record", full_disk_on_a_first_record)
    assert odin_main(["fork", "--from", "0", "--project", str(project)]) == 1
    monkeypatch.setattr(RunHandle, "record", record)
    err = capsys.readouterr().err
    assert "the fork failed: [Errno 28] No space left on device" in err and "Traceback" not in err
    assert [r.run_id for r in engine.runs()] == [source.run_id]
    state = engine.status(source.run_id)
    assert (state.status, state.forked_to) == ("awaiting_approval", None)


def test_a_fork_while_another_process_holds_the_project_lock_is_one_line(project, write_loop, monkeypatch, capsys):
    engine, source, tree = at_ship(project, write_loop)
    project_lock = RunStore.project_lock
    monkeypatch.setattr(RunStore, "project_lock", lambda store: filelock.FileLock(
        project_lock(store).lock_file, timeout=0.2, thread_local=False))  # not 30 s
    other = filelock.FileLock(str(project / ".odin-loop" / "project.lock"), thread_local=False)
    with other:  # another process, creating a run
        assert odin_main(["fork", "--from", "0", "--project", str(project)]) == 1
    err = capsys.readouterr().err
    assert "another process is creating a run in this project" in err and "Traceback" not in err
    assert [r.run_id for r in engine.runs()] == [source.run_id] and tree_digest(project) == tree


@pytest.mark.parametrize("was", ["a link out of the project", "a file"])
def test_a_put_back_after_a_folder_took_the_place_of_a_file_or_link(project, tmp_path, was):
    """The restore must turn folder d/ back into a file or a link, then fails: the put-back makes d/ a
    folder again, and writes nothing through the link."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / "z.txt").write_text("z1\n")
    if was == "a file":
        (project / "d").write_text("file\n")
    else:
        (project / "d").symlink_to(outside)
    store = Checkpoints(project)
    target = store.snapshot()
    (project / "d").unlink()
    (project / "d").mkdir()
    (project / "d" / "a.txt").write_text("a\n")
    (project / "z.txt").write_text("z2\n")
    restore_failing_at_z(project, store, target)
    assert list(outside.iterdir()) == [] and (project / "d" / "a.txt").read_text() == "a\n"


def test_a_failed_restore_leaves_no_temporary_file_even_where_the_project_ignores_them(project):
    (project / ".gitignore").write_text("*.tmp\n")
    (project / "z.txt").write_text("z1\n")
    store = Checkpoints(project)
    target = store.snapshot()
    (project / "z.txt").write_text("z2\n")
    restore_failing_at_z(project, store, target)
    assert not (project / ".z.txt.odin-restore.tmp").exists()


def test_a_put_back_is_tested_without_chattr_too(project, monkeypatch):
    """The put-back by fault injection (os.replace fails for z.txt, a full disk), for machines where
    chattr +i is not possible and the tests above skip."""
    store, target = a_and_z_changed(project)
    before = tree_digest(project)
    replace = os.replace

    def full_disk_at_z(src, dst, *args, **kwargs):
        if Path(dst).name == "z.txt":
            raise OSError(28, "No space left on device", str(src), None, str(dst))
        return replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", full_disk_at_z)
    with pytest.raises(CheckpointError, match=f"No space left on device: {project / 'z.txt'}\\); the files are"):
        store.restore(target)
    monkeypatch.setattr(os, "replace", replace)
    assert tree_digest(project) == before and not store.journal.exists()


CRASHER = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from odin_magic import checkpoints

    project, target = Path(sys.argv[1]), sys.argv[2]
    real, count = checkpoints.Checkpoints._write, [0]

    def write_then_die(self, *args):
        real(self, *args)
        count[0] += 1
        if count[0] == 25:
            os.kill(os.getpid(), signal.SIGKILL)  # a crash in the middle of the restore

    checkpoints.Checkpoints._write = write_then_die
    checkpoints.Checkpoints(project).restore(target)
""")


def test_a_crash_mid_restore_leaves_the_old_tree_or_the_new_one(project, tmp_path):
    for i in range(60):
        (project / f"f{i:02d}.txt").write_text(f"old {i}\n")
    store = Checkpoints(project)
    old = store.snapshot()
    for i in range(60):
        (project / f"f{i:02d}.txt").write_text(f"new {i}\n")
    (project / "extra.bin").write_bytes(b"\x00\x01")
    new = store.snapshot()
    new_digest = tree_digest(project)
    store.restore(old)
    old_digest = tree_digest(project)
    assert old_digest != new_digest

    script = tmp_path / "crash.py"
    script.write_text(CRASHER)
    proc = subprocess.run([sys.executable, str(script), str(project), new], capture_output=True)
    assert proc.returncode == -signal.SIGKILL
    assert store.journal.is_file()  # killed mid-restore: the journal is there
    assert tree_digest(project) not in (old_digest, new_digest)  # half done, at the moment of the crash
    Checkpoints(project).ensure()  # the next opening of the store finishes it
    assert tree_digest(project) == new_digest and not store.journal.exists()


def test_odin_diff_prints_the_unified_diff(project, write_loop, capsys):
    write_loop(LOOP)
    seed(project)
    engine, _ = scripted_engine(project, SCRIPT)
    engine.start("two", "t")
    assert odin_main(["diff", "build", "--project", str(project)]) == 0
    out = capsys.readouterr().out
    assert "execution 1: stage build" in out and "+print('new')" in out and "deleted file mode" in out
    assert odin_main(["diff", "9", "--project", str(project)]) == 2
    assert "no stage execution 9" in capsys.readouterr().err


def test_revert_keeps_notebooks_unless_forced(project, write_loop):
    write_loop(LOOP)
    seed(project)
    (project / "work.ipynb").write_text('{"cells": []}\n')
    engine, _ = scripted_engine(project, SCRIPT.replace(
        'echo more >> keep.txt', 'echo more >> keep.txt && echo saved > work.ipynb'))
    engine.start("two", "t")
    engine.revert("build")
    assert (project / "work.ipynb").read_text() == "saved\n" and (project / "notes.txt").exists()
    engine.revert("build", force=True)
    assert (project / "work.ipynb").read_text() == '{"cells": []}\n'


# -- a revert in the history, the status and the report (issue 21, item 7) ---------------------------


def test_a_revert_shows_in_the_status_history_and_the_report_with_its_reason(project, write_loop):
    from odin_magic.render.text import render_status
    from odin_magic.runs.state import DryOptions

    write_loop(LOOP)
    seed(project)
    engine = Engine(project)
    engine.start("two", "t", dry=DryOptions())
    engine.approve()  # build approved; ship pauses
    state = engine.revert("build")
    assert [(r.stage, r.execution, r.point, r.reason) for r in state.reverts] == [
        ("build", 1, 3, "reverted to before build #1 by the user")]
    text = render_status(state, engine.loop_for(state.run_id))
    history = text[text.index("history ("):].splitlines()
    assert [line.split()[1] for line in history[1:]] == ["#1", "#2", "#3", history[4].split()[1]]
    assert history[4].startswith("  ↶ ") and history[4].endswith(
        "reverted to before build #1 by the user; the run continues from build")
    assert "ship pass (ai-pending)" in history[3]

    engine.run()  # build again, paused
    engine.approve()
    final = engine.approve()
    assert final.status == "done"
    again = Engine(project).status(final.run_id)  # read back from state.json
    assert [r.reason for r in again.reverts] == ["reverted to before build #1 by the user"]
    text = render_status(again, history_tail=4)
    shown = text[text.index("history ("):].splitlines()
    assert shown[0] == "history (7 entries, last 4; `odin status --history` shows all)"  # the revert right before the first entry shown is shown
    assert shown[1].startswith("  ↶ ") and [line.split()[1] for line in shown[2:]] == ["#4", "#5", "#6", "#7"]
    report = (engine.run_dir(final.run_id) / "report.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith("| ↶ "))
    assert row == "| ↶ | build | reverted | — | | reverted to before build #1 by the user | build |"
    rows = [line for line in report.splitlines() if line.startswith("| 3 | ship")]
    assert rows and rows[0].endswith("| build |")  # what came after ship's pass: the revert, then build


def test_a_revert_record_of_an_earlier_version_folds_with_a_reason(project):
    from odin_magic.runs.store import fold

    records = [
        {"seq": 1, "at": "2026-01-01T00:00:00", "type": "created", "run_id": "r", "loop": "l", "task": "t",
         "started_at": "2026-01-01T00:00:00", "current_stage": "fix", "max_iterations": 3},
        {"seq": 2, "at": "2026-01-01T00:01:00", "type": "gate", "entry": {
            "stage": "fix", "result": "pass", "gate": "ai", "at": "2026-01-01T00:01:00"}},
        # what versions before reasons wrote: no "reason"
        {"seq": 3, "at": "2026-01-01T00:02:00", "type": "reverted", "stage": "fix", "to": "abc", "execution": 1,
         "restored": ["a.py"], "kept": [], "set": {"current_stage": "fix", "status": "running"}},
    ]
    state = fold(records)
    assert [(r.at, r.stage, r.execution, r.point, r.reason) for r in state.reverts] == [
        ("2026-01-01T00:02:00", "fix", 1, 1, "reverted to before fix #1 by the user")]
    assert "reverts" not in fold(records[:2]).to_json()  # state.json of a run without reverts is as before


AGAIN = """
name: again
max_iterations: 3
stages:
  - id: build
    produces: [src/]
    gate: {mode: ai, check: built}
  - id: test
    produces: [docs/]
    gate: {mode: ai, check: tested, on_fail: build}
"""


def test_odin_diff_stage_says_latest_and_net_shows_all_executions(project, write_loop, capsys):
    from odin_magic.runs.state import DryOptions

    write_loop(AGAIN)
    engine = Engine(project)
    state = engine.start("again", "t", dry=DryOptions(gates=["test:fail"], approve_all=True))
    assert [(e.stage, e.result) for e in state.history] == [
        ("build", "pass"), ("test", "fail"), ("build", "pass"), ("test", "pass")]
    latest = engine.diff("build")  # the dry worker never overwrites: build's second execution changed nothing
    assert (latest.number, latest.files) == (3, [])
    assert latest.title.endswith("execution 3: stage build, its latest execution of 2 (1, 3; --net shows their "
                                 "net change)")
    net = engine.diff("build", net=True)
    # from before build's first execution to after its last: test's file, written in between, counts too
    assert net.numbers == [1, 3] and [f.change.kind for f in net.files] == ["added", "added"]
    assert sorted(f.change.path.split("/")[0] for f in net.files) == ["docs", "src"]
    assert all("new file mode" in f.text for f in net.files)
    assert net.before == state.history[0].checkpoint and net.after == state.history[2].after

    assert odin_main(["diff", "build", "--net", "--project", str(project)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"run {state.run_id}, stage build: net change over its 2 execution(s) (1, 3), from before "
                          "its first to after its last (2 file(s) changed)")
    assert odin_main(["diff", "3", "--net", "--project", str(project)]) == 2
    assert "give the stage, not an execution number" in capsys.readouterr().err
    assert odin_main(["diff", "ship", "--net", "--project", str(project)]) == 2
    assert "stage 'ship' has no recorded execution" in capsys.readouterr().err


def test_a_done_run_stays_done_when_forked_and_a_revert_on_it_names_the_fork(project, write_loop, capsys):
    """Issue 18 item 4: a finished run is not changed (revert names `odin fork --from N`); forking it leaves it
    done, pointing at the fork; the fork, running but driven by nothing, is shown as ready."""
    write_loop(LOOP)
    seed(project)
    engine, _ = scripted_engine(project, SCRIPT)
    engine.start("two", "t")
    engine.approve()
    done = engine.approve()
    assert done.status == "done"
    with pytest.raises(OdinError) as refused:
        engine.revert("build")
    assert f"the latest run, {done.run_id}, has ended (done)" in refused.value.message
    assert "`odin fork --from N`" in refused.value.hint and "it has 4" in refused.value.hint
    assert odin_main(["revert", "build", "--project", str(project)]) == 1
    assert "has ended (done)" in capsys.readouterr().err

    fork = engine.fork(from_point=2)
    source = engine.status(done.run_id)
    assert (source.status, source.forked_to) == ("done", fork.run_id)  # still done, pointing at its fork
    assert odin_main(["status", "--project", str(project)]) == 0
    out = capsys.readouterr().out
    assert "ready: nothing drives it now; `odin run` continues it" in out and "▶ running" not in out
    assert odin_main(["runs", "--project", str(project)]) == 0
    rows = {line.split()[1]: line.split()[2] for line in capsys.readouterr().out.splitlines()[1:] if line.startswith("*")}
    assert rows[fork.run_id] == "ready"  # as status says it, not "running"


def test_diff_before_any_stage_finished_says_where_the_run_is(project, write_loop):
    """Issue 18 item 9: right after a start, no stage has finished: say so, not 'no recorded execution'."""
    from odin_magic.engine.session import WorkerFailed

    write_loop(LOOP)
    engine, _ = scripted_engine(project, "stages: {}\n")  # the first stage's worker fails: the run stays at build
    with pytest.raises(WorkerFailed):
        engine.start("two", "t")
    with pytest.raises(UsageError) as info:
        engine.diff()
    assert "is at build; no stage has finished yet" in info.value.message


@pytest.mark.parametrize("kind", ["directory", "link"])
def test_a_directory_or_link_where_the_restore_journal_belongs_is_one_line_and_changes_nothing(project, tmp_path,
                                                                                                kind, capsys):
    """Issue 20 item 5: a directory at restore.journal.json was an IsADirectoryError traceback."""
    from odin_magic.runs.checkpoints import JOURNAL_NAME

    (project / "z.txt").write_text("z1\n")
    store = Checkpoints(project)
    target = store.snapshot()
    (project / "z.txt").write_text("z2\n")
    journal = store.root / JOURNAL_NAME
    if kind == "directory":
        journal.mkdir()
    else:
        journal.symlink_to(tmp_path)
    with pytest.raises(CheckpointError) as info:
        store.restore(target)
    assert f"is a {kind}, not odin's restore journal: nothing was changed" in info.value.message
    assert "rm -r" in info.value.hint and (project / "z.txt").read_text() == "z2\n"
