"""Diffs, revert and fork (issue 11, items 2 and 4), through the real engine, Claude worker and SDK against
the offline scripted model; the crash test kills a real process mid-restore."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from odin_magic import diffs
from odin_magic.checkpoints import Checkpoints
from odin_magic.cli import main as odin_main
from odin_magic.engine import Engine
from odin_magic.errors import UsageError

from scripted_runs import scripted_engine

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
    assert "<details" in diff.html() and "src/app.py" in diff.html()

    state = engine.revert("build")
    assert tree_digest(project) == original
    assert (state.status, state.current_stage) == ("running", "build")
    log = [json.loads(x) for x in (engine.run_dir(state.run_id) / "events.jsonl").read_text().splitlines()]
    reverted = [r for r in log if r["type"] == "reverted"]
    assert len(reverted) == 1 and reverted[0]["execution"] == 1 and sorted(reverted[0]["restored"]) == sorted(diff_paths(diff))


def diff_paths(diff):
    return [f.change.path for f in diff.files]



def test_each_changed_file_gets_its_own_diff_whatever_git_quotes_in_its_name(project):
    """git quotes a path with a quote, a backslash, a tab or a non-ASCII letter in it ("a/caf\\303\\251"):
    every file still gets its own part of the diff, under the name the change list gives it."""
    names = ["plain.txt", "sp ace.txt", "café.txt", 'say "hi".txt', "back\\slash.txt", "tab\tbed.txt", "b/ in.txt"]
    store = Checkpoints(project)
    before = store.snapshot()
    for name in names:
        (project / name).parent.mkdir(exist_ok=True)
        (project / name).write_text(f"{name}\n")
    after = store.snapshot()
    parts = diffs.split_diff(store.diff(before, after))
    assert sorted(parts) == sorted(c.path for c in store.changes(before, after)) == sorted(names)
    for name in names:
        assert parts[name].count("diff --git ") == 1 and "new file mode" in parts[name]


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
    state = engine.approve()
    fork = engine.fork(from_point=2)  # build's pass and its approval kept; ship runs again
    assert [(e.stage, e.gate) for e in fork.history] == [("build", "ai-pending"), ("build", "approved")]
    assert fork.current_stage == "ship" and not (project / "docs" / "index.md").exists()
    with pytest.raises(UsageError, match="no point 9"):
        engine.fork(from_point=9)



def test_a_fork_that_fails_half_way_leaves_the_source_run_as_it_was(project, write_loop, capsys):
    """A file of the source run cannot be copied (a named pipe in its harness): the fork fails with one clear
    error, its new run is abandoned with the reason, and the source run is active again, its tree untouched."""
    write_loop(LOOP)
    seed(project)
    engine, _ = scripted_engine(project, SCRIPT)
    engine.start("two", "t")
    engine.approve()
    source = engine.status()
    tree = tree_digest(project)
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


CRASHER = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from odin_magic import checkpoints

    project, target = Path(sys.argv[1]), sys.argv[2]
    real, count = checkpoints.Checkpoints._write, [0]

    def write_then_die(self, path, entry, data):
        real(self, path, entry, data)
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
