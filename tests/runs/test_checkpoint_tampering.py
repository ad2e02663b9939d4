"""A worker cannot blind or hijack the checkpoints that judge it (issue 20, part 3).

Real git, real temporary projects; the engine-level scenarios go through the REAL engine, Claude worker
(its bash tool) and SDK against the offline scripted Messages API.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from odin_magic.runs.checkpoints import CheckpointError, Checkpoints

from support.scripted_runs import scripted_engine

#: ``sandbox: off``: these tests prove what the checkpoint store and the scope check catch without a sandbox
#: (with bwrap, .git/ and .odin-loop/ are read-only to the worker: the last test of this file)
SCOPED_LOOP = """
name: scoped
max_iterations: 4
max_repeats: 4
sandbox: off
stages:
  - id: build
    scope: [src/**]
    gate: {mode: ai, check: src/app.py is written}
"""


def attack(command: str) -> str:
    """A script whose first attempt runs ``command`` besides its work, and whose second only works."""
    return f"""
stages:
  build:
    attempts:
      - turns:
          - tools:
              - bash: {{command: {command!r}}}
              - write: {{file_path: src/app.py, content: "print(1)\\n"}}
          - text: built
      - turns:
          - tools: [{{write: {{file_path: src/app.py, content: "print(2)\\n"}}}}]
          - text: built, in scope
default_verdict: {{status: DONE, passed: true}}
"""


def git(cwd, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    return subprocess.run(["git", "-c", "user.name=u", "-c", "user.email=u@x", *args], cwd=cwd, env=env,
                          check=True, capture_output=True, text=True).stdout


def run_attack(project, write_loop, command: str):
    write_loop(SCOPED_LOOP)
    (project / "src").mkdir(exist_ok=True)
    engine, _ = scripted_engine(project, attack(command))
    state = engine.start("scoped", "t")
    assert state.status == "done" and [e.result for e in state.history] == ["fail", "pass"]
    return state.history[0]


# -- the exclude list is the engine's -----------------------------------------------------------------------


def test_a_path_a_worker_adds_to_the_stores_exclude_file_is_still_seen_and_reverted(project, write_loop):
    first = run_attack(project, write_loop, "echo /evil.py >> .odin-loop/checkpoints.git/info/exclude; echo x > evil.py")
    assert "evil.py (added)" in first.reason and "reverted" in first.reason
    assert not (project / "evil.py").exists()
    assert "evil.py" not in (project / ".odin-loop" / "checkpoints.git" / "info" / "exclude").read_text()


def test_a_file_ignored_by_a_line_added_to_gitignore_during_the_stage_is_seen_and_reverted(project, write_loop):
    (project / ".gitignore").write_text("build/\n")
    (project / "build").mkdir()
    first = run_attack(project, write_loop,
                       "echo evil.py >> .gitignore; echo x > evil.py; mkdir -p lib; echo '*' > lib/.gitignore; "
                       "echo y > lib/hidden.py; echo junk > build/out.o")
    assert "evil.py (added)" in first.reason and "lib/hidden.py (added)" in first.reason
    assert ".gitignore (modified)" in first.reason
    assert not (project / "evil.py").exists() and not (project / "lib").exists()
    assert (project / ".gitignore").read_text() == "build/\n"
    assert (project / "build" / "out.o").exists()  # ignored by the rules the stage began with: not its change


def test_the_rules_of_nested_gitignore_files_are_kept_at_their_folder(project):
    (project / ".gitignore").write_text("*.log\n!keep.log\n")
    (project / "a").mkdir()
    (project / "a" / ".gitignore").write_text("tmp/\n/only-here.txt\n")
    store = Checkpoints(project)
    before = store.snapshot()
    for name in ("x.log", "keep.log", "a/y.log", "a/tmp/t.txt", "a/b/tmp/t.txt", "a/only-here.txt",
                 "a/b/only-here.txt", "tmp/t.txt"):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text("x\n")
    pinned = store.snapshot(rules_from=before)
    now = Checkpoints(project).snapshot()  # the rules as they are now: the same, nothing was edited
    assert pinned == now
    assert [c.path for c in store.changes(before, pinned)] == ["a/b/only-here.txt", "keep.log", "tmp/t.txt"]


# -- nested repositories ----------------------------------------------------------------------------------


@pytest.mark.parametrize("committed", [False, True], ids=["no-commit", "a-commit"])
def test_a_nested_repository_is_checkpointed_as_ordinary_files(project, committed):
    (project / "vend").mkdir()
    git(project / "vend", "init", "-q")
    (project / "vend" / "lib.py").write_text("v = 1\n")
    if committed:
        git(project / "vend", "add", "-A")
        git(project / "vend", "commit", "-qm", "vendored")
    store = Checkpoints(project)
    before = store.snapshot()
    assert "vend/lib.py" in store.entries(before)
    assert not any(e.mode == "160000" for e in store.entries(before).values())  # never a gitlink
    (project / "vend" / "lib.py").write_text("v = 2\n")
    (project / "vend" / "new.py").write_text("n = 1\n")
    after = store.snapshot()
    assert [(c.path, c.kind) for c in store.changes(before, after)] == [
        ("vend/lib.py", "modified"), ("vend/new.py", "added")]
    store.restore(before)
    assert (project / "vend" / "lib.py").read_text() == "v = 1\n" and not (project / "vend" / "new.py").exists()


def test_a_stage_that_edits_a_nested_repository_out_of_scope_is_reverted(project, write_loop):
    (project / "vend").mkdir()
    git(project / "vend", "init", "-q")
    (project / "vend" / "lib.py").write_text("v = 1\n")
    first = run_attack(project, write_loop, "echo 'v = 666' > vend/lib.py")
    assert "vend/lib.py (modified)" in first.reason
    assert (project / "vend" / "lib.py").read_text() == "v = 1\n"


# -- the user's own repository ----------------------------------------------------------------------------


def test_a_hook_or_a_commit_in_the_users_repository_is_reverted_and_fails_the_gate(project, write_loop):
    (project / "README.md").write_text("hi\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "first")
    head = git(project, "rev-parse", "HEAD")
    first = run_attack(project, write_loop,
                       "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; "
                       "echo more >> README.md; git -c user.name=w -c user.email=w@w commit -qam sneaky")
    assert ".git/hooks/pre-commit (added)" in first.reason and "README.md (modified)" in first.reason
    assert ".git/refs/heads/" in first.reason and "reverted" in first.reason
    assert not (project / ".git" / "hooks" / "pre-commit").exists()
    assert git(project, "rev-parse", "HEAD") == head
    assert (project / "README.md").read_text() == "hi\n"


def test_with_the_sandbox_the_worker_cannot_write_the_users_git_at_all(project, write_loop):
    from odin_magic.core.sandbox import probe

    if not probe().works:
        pytest.skip(f"bubblewrap cannot run here: {probe().reason}")
    (project / "README.md").write_text("hi\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "first")
    head = git(project, "rev-parse", "HEAD")
    write_loop(SCOPED_LOOP.replace("sandbox: off", "sandbox: bwrap"))
    engine, _ = scripted_engine(project, attack("printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit; "
                                                "git -c user.name=w -c user.email=w@w commit -qam sneaky --allow-empty"))
    state = engine.start("scoped", "t")
    assert not (project / ".git" / "hooks" / "pre-commit").exists()
    assert git(project, "rev-parse", "HEAD") == head
    # the sandbox stopped the writes (nothing was there to revert): the first attempt passed its gate,
    # and the shell said why the hook could not be written
    assert state.status == "done" and [e.result for e in state.history] == ["pass"], state.history
    log = "".join(p.read_text() for p in (engine.run_dir(state.run_id) / "tool-log").rglob("*") if p.is_file())
    assert "Read-only file system" in log, log[-2000:]


# -- the store's configuration and environment ------------------------------------------------------------


def test_the_stores_config_runs_nothing_and_its_git_sees_no_secret(project, tmp_path, monkeypatch):
    leak, envs = tmp_path / "leak", tmp_path / "envs"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f'#!/bin/sh\nenv >> {envs}\nexec {shutil.which("git")} "$@"\n')
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key-0123456789")
    monkeypatch.setenv("ODIN_SECRET_VARS", "DB_PASSWORD")
    monkeypatch.setenv("DB_PASSWORD", "hunter2-hunter2")
    (project / "a.txt").write_text("a\n")
    store = Checkpoints(project)
    before = store.snapshot()
    hostile = f'[core]\n\tfsmonitor = "env > {leak}; false"\n\thooksPath = {tmp_path}/hooks\n'
    (store.git_dir / "config").write_text(hostile)
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "post-index-change").write_text(f"#!/bin/sh\nenv > {leak}\n")
    (tmp_path / "hooks" / "post-index-change").chmod(0o755)
    (project / "a.txt").write_text("b\n")
    after = store.snapshot()
    store.diff(before, after)
    store.restore(before)
    assert not leak.exists()
    assert "fsmonitor" not in (store.git_dir / "config").read_text()
    seen = envs.read_text()
    assert "HOME=/nonexistent" in seen
    for secret in ("ANTHROPIC_API_KEY", "sk-ant-test-key", "DB_PASSWORD", "hunter2"):
        assert secret not in seen


# -- a damaged index ---------------------------------------------------------------------------------------


def test_a_damaged_index_is_rebuilt_and_every_checkpoint_kept(project):
    (project / "a.txt").write_text("a\n")
    store = Checkpoints(project)
    first = store.snapshot()
    (project / "a.txt").write_text("b\n")
    store.index.write_bytes(b"DIRC garbage, not an index")
    second = store.snapshot()  # the same process: the index is not the one it left
    assert [c.path for c in store.changes(first, second)] == ["a.txt"]
    store.index.write_bytes(b"\0" * 100)
    reopened = Checkpoints(project)  # a new process never trusts an index it did not write
    assert reopened.snapshot() == second and reopened.exists(first)
    reopened.restore(first)
    assert (project / "a.txt").read_text() == "a\n"


def test_an_index_that_hides_a_change_is_not_trusted(project):
    """A worker marks a file assume-unchanged in the store's index, then edits it: still a change."""
    (project / "a.txt").write_text("a\n")
    store = Checkpoints(project)
    before = store.snapshot()
    env = {**os.environ, "GIT_DIR": str(store.git_dir), "GIT_INDEX_FILE": str(store.index),
           "GIT_WORK_TREE": str(project)}
    subprocess.run(["git", "update-index", "--assume-unchanged", "a.txt"], cwd=project, env=env, check=True)
    (project / "a.txt").write_text("changed\n")
    assert [c.path for c in store.changes(before, store.snapshot())] == ["a.txt"]


def test_a_damaged_index_error_keeps_the_checkpoints(project):
    error = Checkpoints(project)._failure("add", "fatal: index file smaller than expected\n", "")
    assert isinstance(error, CheckpointError) and "checkpoint index" in error.message
    assert "every checkpoint is kept" in error.hint and "lost" not in error.hint


def test_a_revert_leaves_the_users_branches_where_they_are(project, write_loop):
    """A commit the user makes while the run waits for approval is the user's history: `odin revert` of an
    earlier stage restores the files, never the branch (the checkpoints keep .git/refs since this issue)."""
    write_loop("""
name: two
max_iterations: 5
stages:
  - id: build
    gate: {mode: ai+human, check: built}
  - id: ship
    gate: {mode: ai+human, check: shipped}
""")
    (project / "README.md").write_text("hi\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "first")
    engine, _ = scripted_engine(project, """
stages:
  build:
    - tools: [{write: {file_path: src/app.py, content: "print(1)\\n"}}]
    - text: built
  ship:
    - tools: [{write: {file_path: docs/index.md, content: "# shipped\\n"}}]
    - text: shipped
default_verdict: {status: DONE, passed: true}
""")
    assert engine.start("two", "t").status == "awaiting_approval"
    git(project, "add", "src/app.py")
    git(project, "commit", "-qm", "the user's own commit")
    mine = git(project, "rev-parse", "HEAD")
    assert engine.approve().status == "awaiting_approval"
    engine.revert("build", force=True)
    assert not (project / "src" / "app.py").exists() and not (project / "docs" / "index.md").exists()
    assert git(project, "rev-parse", "HEAD") == mine


def test_a_blob_rewritten_in_the_store_is_never_restored(project):
    """A worker overwrites the object of a file's earlier content with other content under the same name:
    a restore refuses it before anything changes."""
    import zlib

    (project / "test_calc.py").write_text("assert add(1, 1) == 2\n")
    store = Checkpoints(project)
    before = store.snapshot()
    (project / "test_calc.py").write_text("assert True\n")
    store.snapshot()
    sha = store.entries(before)["test_calc.py"].sha
    loose = store.git_dir / "objects" / sha[:2] / sha[2:]
    loose.parent.mkdir(parents=True, exist_ok=True)
    loose.unlink(missing_ok=True)
    evil = b"assert True  # the harness, weakened\n"
    loose.write_bytes(zlib.compress(b"blob %d\0" % len(evil) + evil))
    for pack in (store.git_dir / "objects" / "pack").glob("*"):
        pack.unlink()  # the primed pack held the original too
    with pytest.raises(CheckpointError, match="does not hold what its name says"):
        store.restore(before)
    assert (project / "test_calc.py").read_text() == "assert True\n"


def test_a_path_added_to_the_large_files_list_hides_nothing(project):
    """info/large-files is core.excludesFile: the list as the store made it is written back before every git."""
    (project / "a.txt").write_text("a\n")
    store = Checkpoints(project)
    before = store.snapshot()
    with open(store.large_files, "a") as f:
        f.write("/evil.py\n")
    (project / "evil.py").write_text("x\n")
    assert [c.path for c in store.changes(before, store.snapshot(rules_from=before))] == ["evil.py"]
    assert [c.path for c in store.changes(before, store.snapshot())] == ["evil.py"]
