""".odin-loop/ stays out of the user's git: `git status`, `git add -A` and `git stash -u` never see it
(custom loops in .odin-loop/loops/ excepted: they are the user's to commit)."""

from __future__ import annotations

import os
import subprocess

import pytest

from odin_magic.engine.orchestrator import Engine
from odin_magic.runs.checkpoint_listing import TREE_GIT
from odin_magic.runs.checkpoints import Checkpoints
from odin_magic.runs.state import DryOptions
from odin_magic.runs.store import GITIGNORE_TEXT, RunStore

#: what versions before this one wrote into .odin-loop/.gitignore
OLD_TEXT = (
    "# Written by odin-magic: run scaffolding never leaks into a commit.\n"
    "*\n"
    "!.gitignore\n"
    "# custom loops are yours to commit\n"
    "!loops/\n"
    "!loops/**\n"
)


def git(project, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    proc = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=project, env=env,
                          capture_output=True, text=True, check=True)
    return proc.stdout


@pytest.fixture
def repo(project):
    """A git repository with one commit."""
    git(project, "init", "-q")
    (project / "README.md").write_text("hello\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "first")
    return project


def odin_paths(text: str) -> list[str]:
    return [line for line in text.splitlines() if ".odin-loop" in line]


def a_dry_run(project) -> str:
    state = Engine(project).start("bugfix", "fix it", dry=DryOptions(approve_all=True))
    assert state.status == "done"
    return state.run_id


def assert_invisible(repo, run_id: str) -> None:
    assert odin_paths(git(repo, "status", "--porcelain", "--untracked-files=all", "--ignored=no")) == []
    git(repo, "add", "-A")
    assert odin_paths(git(repo, "diff", "--cached", "--name-only")) == []
    git(repo, "stash", "-u")  # stashes what the run's worker wrote into the project, never .odin-loop/
    assert (repo / ".odin-loop" / ".gitignore").read_text() == GITIGNORE_TEXT
    assert (repo / ".odin-loop" / "runs" / run_id / "events.jsonl").is_file()
    assert (repo / ".odin-loop" / "checkpoints.git" / "HEAD").is_file()


def test_after_a_run_odin_loop_is_invisible_to_status_add_and_stash(repo):
    run_id = a_dry_run(repo)
    assert_invisible(repo, run_id)


def test_a_gitignore_the_old_version_wrote_is_mended_on_the_next_run(repo):
    (repo / ".odin-loop").mkdir()
    (repo / ".odin-loop" / ".gitignore").write_text(OLD_TEXT)
    assert odin_paths(git(repo, "status", "--porcelain")) == ["?? .odin-loop/"]  # what the issue saw
    run_id = a_dry_run(repo)
    assert_invisible(repo, run_id)


def test_a_mended_gitignore_keeps_the_lines_a_user_added(project):
    (project / ".odin-loop").mkdir()
    (project / ".odin-loop" / ".gitignore").write_text(OLD_TEXT + "!agents/\n")
    RunStore(project).ensure_layout()
    lines = (project / ".odin-loop" / ".gitignore").read_text().splitlines()
    assert "!.gitignore" not in lines and lines[-1] == "!agents/" and "*" in lines


def test_a_gitignore_of_the_users_own_is_left_alone(project):
    (project / ".odin-loop").mkdir()
    (project / ".odin-loop" / ".gitignore").write_text("*\n!.gitignore\n")
    RunStore(project).ensure_layout()
    assert (project / ".odin-loop" / ".gitignore").read_text() == "*\n!.gitignore\n"


def test_custom_loops_are_the_only_thing_git_sees(repo, write_loop):
    write_loop()
    Engine(repo).start("demo", "t", dry=DryOptions(approve_all=True))
    assert odin_paths(git(repo, "status", "--porcelain", "--untracked-files=all")) == ["?? .odin-loop/loops/demo.yaml"]


def test_checkpoints_still_leave_odin_loop_out(repo):
    run_id = a_dry_run(repo)
    tree = Checkpoints(repo).snapshot()
    listed = subprocess.run(["git", "--git-dir", str(repo / ".odin-loop" / "checkpoints.git"), "ls-tree", "-r",
                             "--name-only", tree], capture_output=True, text=True, check=True).stdout
    # the user's .git/ files are kept under TREE_GIT (git refuses a .git path in a tree): not .odin-loop's own
    assert [p for p in odin_paths(listed) if not p.startswith(TREE_GIT)] == [] and "README.md" in listed.splitlines()
    assert f"{TREE_GIT}HEAD" in listed.splitlines()
    assert run_id
