"""Checkpoints (issue 11, item 1): a shadow git repository under .odin-loop/, through the real engine,
Claude worker and SDK against the offline scripted model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from odin_magic.runs.checkpoints import CheckpointError, Checkpoints
from odin_magic.engine.orchestrator import WorkerFailed
from odin_magic.runs import evidence as gate_evidence

from support import REPO
from support.scripted_runs import scripted_engine

LOOP = """
name: build
max_iterations: 3
stages:
  - id: build
    produces: [src/]
    gate: {mode: ai, check: src/app.py exists}
  - id: docs
    produces: [docs/]
    gate: {mode: ai, check: docs exist}
"""

SCRIPT = """
stages:
  build:
    - tools:
        - write: {file_path: src/app.py, content: "print('hello')\\nprint('world')\\n"}
        - bash: {command: "rm old.txt && printf 'x\\\\000y' > data.bin && echo junk > build/out.o"}
    - text: built
  docs:
    - tools: [{write: {file_path: docs/index.md, content: "# Docs\\n"}}]
    - text: documented
default_verdict: {status: DONE, passed: true}
"""


def git(cwd, *args, **kw) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="u", GIT_AUTHOR_EMAIL="u@x", GIT_COMMITTER_NAME="u", GIT_COMMITTER_EMAIL="u@x")
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True, **kw).stdout


def records(engine, state, kind):
    log = engine.run_dir(state.run_id) / "events.jsonl"
    return [r for r in map(json.loads, log.read_text().splitlines()) if r["type"] == kind]


def seed_project(project):
    (project / "old.txt").write_text("old\n")
    (project / ".gitignore").write_text("build/\n")
    (project / "build").mkdir()


def test_each_stage_execution_records_its_checkpoint_and_what_it_changed(project, write_loop):
    write_loop(LOOP)
    seed_project(project)
    engine, _ = scripted_engine(project, SCRIPT)
    state = engine.start("build", "t")
    assert state.status == "done"
    build, docs = state.history
    assert build.checkpoint and build.after and docs.checkpoint == build.after
    logged = records(engine, state, "checkpoint")
    assert [(r["stage"], r["set"]["checkpoint"]["before"]) for r in logged] == [
        ("build", build.checkpoint), ("docs", docs.checkpoint)]
    evidence = gate_evidence.read(engine.run_dir(state.run_id), build.evidence)
    assert evidence["changes"] == [
        {"path": "data.bin", "kind": "added", "added": None, "deleted": None},
        {"path": "old.txt", "kind": "deleted", "added": 0, "deleted": 1},
        {"path": "src/app.py", "kind": "added", "added": 2, "deleted": 0},
    ]  # build/ (.gitignore'd) and .odin-loop/ are left out


def test_the_users_repository_is_never_touched(project, write_loop):
    write_loop(LOOP)
    git(project, "init", "-q")
    seed_project(project)
    (project / "tracked.txt").write_text("v1\n")
    git(project, "add", "tracked.txt", "old.txt", ".gitignore")
    git(project, "commit", "-q", "-m", "first")
    (project / "tracked.txt").write_text("v2\n")
    git(project, "stash", "-q")
    (project / "tracked.txt").write_text("v3 staged\n")
    git(project, "add", "tracked.txt")
    before = {
        "status": git(project, "status", "--porcelain=v1", "--untracked-files=no"),
        "refs": git(project, "show-ref"), "stash": git(project, "stash", "list"),
        "index": (project / ".git" / "index").read_bytes(), "head": git(project, "rev-parse", "HEAD"),
    }
    engine, _ = scripted_engine(project, SCRIPT)
    assert engine.start("build", "t").status == "done"
    after = {
        "status": git(project, "status", "--porcelain=v1", "--untracked-files=no"),
        "refs": git(project, "show-ref"), "stash": git(project, "stash", "list"),
        "index": (project / ".git" / "index").read_bytes(), "head": git(project, "rev-parse", "HEAD"),
    }
    # the stage deleted old.txt itself (that shows); nothing else about the user's repository changed
    assert after["refs"] == before["refs"] and after["stash"] == before["stash"] and after["head"] == before["head"]
    assert after["index"] == before["index"]
    assert before["status"] == "M  tracked.txt\n" and after["status"] == " D old.txt\nM  tracked.txt\n"
    assert (project / "tracked.txt").read_text() == "v3 staged\n"


def test_a_resumed_stage_execution_keeps_its_checkpoint(project, write_loop):
    write_loop(LOOP)
    seed_project(project)
    engine, _ = scripted_engine(project, """
stages:
  build:
    attempts:
      - turns:
          - tools: [{write: {file_path: src/half.py, content: "x = 1\\n"}}]
          - error: {status: 400, message: scripted failure mid-stage}
      - turns:
          - tools: [{write: {file_path: src/app.py, content: "y = 2\\n"}}]
          - text: done
  docs:
    - tools: [{write: {file_path: docs/index.md, content: "# Docs\\n"}}]
    - text: documented
default_verdict: {status: DONE, passed: true}
""")
    with pytest.raises(WorkerFailed):
        engine.start("build", "t")
    state = engine.run()
    assert state.status == "done"
    logged = [r["stage"] for r in records(engine, state, "checkpoint")]
    assert logged == ["build", "docs"]  # one checkpoint for build's execution, found again on resume
    evidence = gate_evidence.read(engine.run_dir(state.run_id), state.history[0].evidence)
    assert {c["path"] for c in evidence["changes"]} == {"src/half.py", "src/app.py"}


def test_a_damaged_store_is_one_clear_error_and_nothing_changes(project, write_loop):
    write_loop(LOOP)
    seed_project(project)
    store = Checkpoints(project)
    store.snapshot()
    shutil.rmtree(store.git_dir / "objects")
    engine, _ = scripted_engine(project, SCRIPT)
    with pytest.raises(CheckpointError) as caught:
        engine.start("build", "t")
    assert "checkpoint store" in caught.value.message and "damaged" in caught.value.message
    assert "move" in caught.value.hint
    assert (project / "old.txt").read_text() == "old\n" and not (project / "src" / "app.py").exists()


UNREADABLE = """
import sys
from odin_magic.runs.checkpoints import CheckpointError, Checkpoints
try:
    Checkpoints(sys.argv[1]).snapshot()
except CheckpointError as exc:
    print(exc.message)
    sys.exit(3)
"""


@pytest.mark.skipif(os.geteuid() == 0 and not shutil.which("setpriv"), reason="root reads every file; no setpriv")
def test_an_unreadable_file_is_one_clear_error_and_nothing_changes():
    """As another user when the tests run as root (root reads every file)."""
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="odin-unreadable-", dir="/tmp"))
    try:
        project = root / "p"
        project.mkdir()
        (project / "ok.txt").write_text("ok\n")
        (project / "secret.txt").write_text("s\n")
        os.chmod(project / "secret.txt", 0o600 if os.geteuid() == 0 else 0)
        for d in (root, project):
            os.chmod(d, 0o777)
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        if prefix and subprocess.run([*prefix, sys.executable, "-c", "import filelock, odin_magic.runs.checkpoints"],
                                     capture_output=True, env=env, cwd=root).returncode != 0:
            pytest.skip("user nobody cannot read this interpreter's packages or this checkout (a 0700 directory)")
        proc = subprocess.run([*prefix, sys.executable, "-c", UNREADABLE, str(project)], capture_output=True,
                              text=True, env=env, cwd=root)
        assert proc.returncode == 3, proc.stderr
        assert proc.stdout.strip().splitlines() == [
            "cannot read the project's files to checkpoint them: error: open(\"secret.txt\"): Permission denied"]
        assert sorted(p.name for p in project.iterdir()) == [".odin-loop", "ok.txt", "secret.txt"]
        assert (project / "ok.txt").read_text() == "ok\n"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_restore_brings_back_text_binary_deleted_and_modes(project):
    (project / "a.txt").write_text("one\n")
    (project / "bin.dat").write_bytes(bytes(range(256)))
    (project / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(project / "run.sh", 0o755)
    (project / "gone" / "deep").mkdir(parents=True)
    (project / "gone" / "deep" / "f.txt").write_text("f\n")
    store = Checkpoints(project)
    before = store.snapshot()
    (project / "a.txt").write_text("two\n")
    (project / "bin.dat").write_bytes(b"\x00")
    os.chmod(project / "run.sh", 0o644)
    shutil.rmtree(project / "gone")
    (project / "new" / "x").mkdir(parents=True)
    (project / "new" / "x" / "n.txt").write_text("n\n")
    changed = store.restore(before)
    assert {c.path for c in changed} == {"a.txt", "bin.dat", "run.sh", "gone/deep/f.txt", "new/x/n.txt"}
    assert (project / "a.txt").read_text() == "one\n" and (project / "bin.dat").read_bytes() == bytes(range(256))
    assert os.access(project / "run.sh", os.X_OK) and (project / "gone" / "deep" / "f.txt").read_text() == "f\n"
    assert not (project / "new").exists()
    assert store.snapshot() == before



def test_a_restore_that_cannot_read_a_blob_changes_nothing_and_leaves_no_journal(project):
    """Every blob is read before the journal is written: a store that lost one fails at once, and no journal
    is left for the next opening to roll forward into the same failure."""
    (project / "a.txt").write_text("one\n")
    store = Checkpoints(project)
    before = store.snapshot()
    (project / "a.txt").write_text("two\n")
    (project / "b.txt").write_text("b\n")
    after = store.snapshot()
    blob = store.entries(before)["a.txt"].sha
    (store.git_dir / "objects" / blob[:2] / blob[2:]).unlink()

    with pytest.raises(CheckpointError, match="is damaged"):
        store.restore(before)
    assert (project / "a.txt").read_text() == "two\n" and (project / "b.txt").exists()
    assert not store.journal.exists()
    assert Checkpoints(project).snapshot() == after  # opening again rolls nothing forward


def test_files_already_large_when_checkpoints_begin_are_left_out(project, monkeypatch):
    from odin_magic.runs import checkpoints

    monkeypatch.setattr(checkpoints, "LARGE_FILE", 1000)
    (project / "data [raw].bin").write_bytes(b"x" * 5000)
    (project / "small.txt").write_text("s\n")
    store = Checkpoints(project)
    first = store.snapshot()
    (project / "data [raw].bin").write_bytes(b"y" * 6000)
    (project / "small.txt").write_text("t\n")
    second = store.snapshot()
    assert [c.path for c in store.changes(first, second)] == ["small.txt"]
    store.restore(first)
    assert (project / "small.txt").read_text() == "s\n" and (project / "data [raw].bin").read_bytes() == b"y" * 6000
    assert "data" in store.large_files.read_text()


def test_git_runs_in_a_session_of_its_own_so_a_notebook_interrupt_does_not_kill_a_checkpoint(project, tmp_path,
                                                                                            monkeypatch):
    """The notebook's interrupt button sends SIGINT to the kernel's process group; a checkpoint that a run
    takes in the kernel's background meanwhile must not be in that group. Every git the store starts (init,
    the priming fast-import, add, write-tree, restore) reports its session: never the test's own."""
    bin_dir, log = tmp_path / "bin", tmp_path / "sessions"
    bin_dir.mkdir()
    real_git = shutil.which("git")
    (bin_dir / "git").write_text('#!/bin/sh\nread -r _pid _comm _state _ppid _pgrp sid _rest < /proc/$$/stat\n'
                                 f'echo "$sid $1 $2" >> {log}\nexec {real_git} "$@"\n')
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    (project / "a.txt").write_text("a\n")
    store = Checkpoints(project)
    before = store.snapshot()
    (project / "a.txt").write_text("b\n")
    store.restore(before)
    sessions = [line.split()[0] for line in log.read_text().splitlines()]
    assert len(sessions) >= 5 and str(os.getsid(0)) not in sessions
