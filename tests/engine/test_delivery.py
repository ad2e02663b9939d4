"""Delivery (issue 24, items 1 and 2): a done run becomes a branch of the user's real git repository, built
with plumbing in a temporary index, and pr.md; the user's branch, index and working tree never change.
Real engine runs through the Claude worker and SDK against the offline scripted model."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from odin_magic.cli import main as odin_main
from odin_magic.core.errors import OdinError, UsageError
from odin_magic.engine.delivery import DeliverOptions, deliver

from support.delivery_runs import LOOP, SCRIPT, SECRET, git, init_repo, run_loop, user_side
from support.scripted_runs import scripted_engine

@pytest.fixture
def done(project: Path):
    init_repo(project)
    engine, state = run_loop(project)
    return project, engine, state


def commits_of(project: Path, branch: str) -> list[tuple[str, str]]:
    out = git(project, "log", "--reverse", "--format=%H", f"main..{branch}").split()
    return [(sha, git(project, "log", "-1", "--format=%B", sha)) for sha in out]


def changed(project: Path, sha: str) -> list[str]:
    return git(project, "show", "--format=", "--name-status", sha).split("\n")[:-1]


def test_the_branch_holds_one_commit_per_stage_that_changed_the_project(done):
    project, engine, state = done
    base = git(project, "rev-parse", "HEAD").strip()
    before = user_side(project)
    result = deliver(engine, None, DeliverOptions())
    assert user_side(project) == before  # HEAD, branch, index bytes, files, status: byte-identical
    branch = f"odin/{state.run_id}"
    assert result.branch == branch and result.base == base and "first checkpoint" in result.base_note
    commits = commits_of(project, branch)
    assert git(project, "rev-parse", f"{commits[0][0]}^").strip() == base
    assert [m.split("\n")[0] for _, m in commits] == ["Print the new greeting: say a new greeting",
                                                       "Document the greeting: say a new greeting"]
    assert changed(project, commits[0][0]) == ["M\tapp.py", "D\told.txt", "A\tsrc/util.py"]
    assert changed(project, commits[1][0]) == ["A\tREADME.md"]
    build, docs = commits[0][1], commits[1][1]
    assert "- M app.py" in build and "- D old.txt" in build and "app.py prints the new greeting" in build
    assert "gate passed `grep -q new app.py`" in build
    assert build.rstrip().endswith(f"Odin-Run: {state.run_id}") and docs.rstrip().endswith(f"Odin-Run: {state.run_id}")
    assert "✅ AC1 [P0] the greeting is new" in docs and "❌ AC2" in docs  # the criteria on the last commit
    tree = git(project, "ls-tree", "-r", "--name-only", branch).split()
    assert not [p for p in tree if p.startswith(".odin-loop")]
    assert git(project, "show", f"{branch}:app.py") == "print('new')\n"


def test_a_file_changed_after_the_run_is_named_and_left_out_unless_asked(done):
    project, engine, state = done
    (project / "README.md").write_text("# my own words\n")
    before = user_side(project)
    result = deliver(engine, state.run_id, DeliverOptions())
    assert user_side(project) == before
    assert result.later == ["README.md"] and not result.later_included
    branch = f"odin/{state.run_id}"
    assert "README.md" not in git(project, "ls-tree", "-r", "--name-only", branch).split()
    assert len(commits_of(project, branch)) == 1  # the docs stage changed nothing else
    result = deliver(engine, state.run_id, DeliverOptions(branch="with-later", include_later=True))
    assert git(project, "show", "with-later:README.md") == "# my own words\n" and result.later_included
    assert commits_of(project, "with-later")[-1][1].startswith("Changes made after the run: ")


def test_squash_is_one_commit_with_the_whole_change_and_no_hook_runs(done, tmp_path):
    project, engine, state = done
    before = user_side(project)
    ran, hooks = tmp_path / "hook-ran", ("reference-transaction", "post-commit", "post-index-change")
    for hook in hooks:
        (project / ".git" / "hooks" / hook).write_text(f"#!/bin/sh\necho {hook} >> {ran}\n")
        (project / ".git" / "hooks" / hook).chmod(0o755)
    deliver(engine, None, DeliverOptions(branch="feature/greeting", squash=True))
    assert not ran.exists(), ran.read_text()
    for hook in hooks:
        (project / ".git" / "hooks" / hook).unlink()
    assert user_side(project) == before
    [(sha, message)] = commits_of(project, "feature/greeting")
    assert changed(project, sha) == ["A\tREADME.md", "M\tapp.py", "D\told.txt", "A\tsrc/util.py"]
    assert message.startswith("Deliver: say a new greeting\n") and f"Odin-Run: {state.run_id}" in message


def test_files_the_repository_ignores_are_named_and_left_out(done):
    project, engine, state = done
    (project / ".git" / "info").mkdir(exist_ok=True)
    (project / ".git" / "info" / "exclude").write_text("src/\n")  # the checkpoints do not read it; git does
    result = deliver(engine, None, DeliverOptions(squash=True))
    assert result.ignored == ["src/util.py"]
    assert "src/util.py" not in git(project, "ls-tree", "-r", "--name-only", result.branch).split()
    pr = (engine.run_dir(state.run_id) / "pr.md").read_text()
    assert "- src/util.py (ignored)" in pr and "`src/util.py`" not in pr


def test_a_project_in_a_folder_of_its_repository_starts_from_the_branch_head(tmp_path):
    top = tmp_path / "repo"
    project = top / "app"
    project.mkdir(parents=True)
    init_repo(project, top=top)
    engine, state = run_loop(project)
    result = deliver(engine, None, DeliverOptions())
    assert "not recorded" in result.base_note and result.base == git(top, "rev-parse", "HEAD").strip()
    tree = git(top, "ls-tree", "-r", "--name-only", result.branch).split()
    assert sorted(tree) == ["app/.gitignore", "app/README.md", "app/app.py", "app/src/util.py"]
    assert git(top, "show", f"{result.branch}:app/app.py") == "print('new')\n"


def _refused(project: Path, engine, options: DeliverOptions, words: str, run_id: str | None = None) -> None:
    before = user_side(project, refs=True)
    with pytest.raises(OdinError) as caught:
        deliver(engine, run_id, options)
    assert words in caught.value.message and caught.value.hint
    assert user_side(project, refs=True) == before


def test_every_refusal_changes_nothing(done):
    project, engine, state = done
    git(project, "branch", "taken")
    _refused(project, engine, DeliverOptions(branch="taken"), "already exists")
    _refused(project, engine, DeliverOptions(branch="bad..name"), "not a valid git branch name")
    _refused(project, engine, DeliverOptions(branch="main", force=True), "your current branch")
    git(project, "checkout", "-q", "--detach")
    _refused(project, engine, DeliverOptions(), "HEAD is detached")
    git(project, "checkout", "-q", "main")
    git(project, "checkout", "-q", "-b", "other")
    (project / "app.py").write_text("print('other')\n")
    git(project, "commit", "-qam", "other")
    git(project, "checkout", "-q", "main")
    (project / "app.py").write_text("print('main')\n")
    git(project, "commit", "-qam", "main side")
    git(project, "merge", "-q", "other", check=False)  # a conflict: MERGE_HEAD
    assert (project / ".git" / "MERGE_HEAD").exists()
    _refused(project, engine, DeliverOptions(), "a merge is under way")
    assert git(project, "for-each-ref", "refs/heads/odin") == ""


def test_a_run_that_is_not_done_is_refused(project):
    init_repo(project)
    loops = project / ".odin-loop" / "loops"
    loops.mkdir(parents=True)
    (loops / "ship.yaml").write_text(textwrap.dedent(LOOP).replace("mode: ai, check: built", "mode: human, check: built"))
    engine, _ = scripted_engine(project, SCRIPT)
    state = engine.start("ship", "say a new greeting")
    assert state.status == "awaiting_approval"
    _refused(project, engine, DeliverOptions(), "not done")


def test_outside_a_repository_or_without_a_commit_is_refused(project):
    engine, _ = run_loop(project)
    with pytest.raises(UsageError, match="not in a git repository"):
        deliver(engine, None, DeliverOptions())
    assert not (project / ".git").exists()
    git(project, "init", "-q", "-b", "main")
    _refused(project, engine, DeliverOptions(), "no commit yet")


def test_commit_onto_the_current_branch_only_with_a_clean_index(done):
    project, engine, state = done
    base = git(project, "rev-parse", "HEAD").strip()
    git(project, "add", "app.py")
    _refused(project, engine, DeliverOptions(commit=True), "--commit needs a clean index")
    git(project, "restore", "--staged", "app.py")
    files = user_side(project)["files"]
    result = deliver(engine, None, DeliverOptions(commit=True))
    assert result.branch == "main" and git(project, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git(project, "rev-parse", "HEAD~2").strip() == base and len(result.commits) == 2
    assert user_side(project)["files"] == files  # the working tree untouched
    assert git(project, "status", "--porcelain") == "?? .odin-loop/\n"  # the index is the new HEAD's


def _fake_gh(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {tmp_path / 'gh-args'}\n"
                  f"env > {tmp_path / 'gh-env'}\necho https://github.com/o/r/pull/7\n")
    gh.chmod(0o755)
    return bin_dir


def test_pr_calls_gh_with_the_title_body_file_and_branch(done, tmp_path, monkeypatch):
    project, engine, state = done
    git(project, "remote", "add", "origin", "https://github.com/o/r.git")
    monkeypatch.setenv("PATH", f"{_fake_gh(tmp_path)}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    result = deliver(engine, None, DeliverOptions(pr=True))
    pr = engine.run_dir(state.run_id) / "pr.md"
    assert (tmp_path / "gh-args").read_text().split("\n")[:-1] == [
        "pr", "create", "--title", "say a new greeting", "--body-file", str(pr), "--head", f"odin/{state.run_id}"]
    assert "ANTHROPIC_API_KEY" not in (tmp_path / "gh-env").read_text()
    assert "https://github.com/o/r/pull/7" in result.pr_text


def test_pr_without_gh_prints_the_commands(done, tmp_path, monkeypatch):
    project, engine, state = done
    git(project, "remote", "add", "origin", "git@gitlab.example.com:o/r.git")
    monkeypatch.setenv("PATH", f"{_fake_gh(tmp_path)}{os.pathsep}{os.environ['PATH']}")
    result = deliver(engine, None, DeliverOptions(pr=True))
    assert not (tmp_path / "gh-args").exists()  # not GitHub: gh is not called
    assert f"git push -u origin odin/{state.run_id}" in result.pr_text
    assert "gh pr create --title 'say a new greeting' --body-file" in result.pr_text


def test_pr_md_tells_the_evidence_with_every_secret_redacted(project, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    init_repo(project)
    engine, state = run_loop(project, task=f"say a new greeting (key {SECRET})")
    deliver(engine, None, DeliverOptions(squash=True))
    pr = (engine.run_dir(state.run_id) / "pr.md").read_text()
    assert SECRET not in pr and SECRET not in git(project, "log", "--format=%B", f"odin/{state.run_id}")
    assert pr.startswith("# say a new greeting (key ")
    for part in ("## Summary", "- Deliver: say a new greeting (key ", "- `app.py` (modified)", "- `old.txt` (deleted)", "- `README.md` (added)",
                 "✅ **AC1** [P0] the greeting is new — `grep -q new app.py`", "❌ **AC2** [P1]",
                 "## Test plan", "regression suite", "- ✅ `grep -q new app.py` (gate of build)", "the greeting is not translated", "tokens:", "cost:",
                 f"Odin-Run: {state.run_id}"):
        assert part in pr, part


def test_the_cli_delivers_and_refuses_in_one_line(done, capsys):
    project, engine, state = done
    assert odin_main(["deliver", "--project", str(project), "--branch", "cli/x", "--squash"]) == 0
    out = capsys.readouterr().out
    assert "branch cli/x: 1 commit(s)" in out and "pr.md" in out
    assert odin_main(["deliver", state.run_id, "--project", str(project), "--branch", "cli/x"]) == 2
    err = capsys.readouterr().err
    assert "branch cli/x already exists" in err and "hint: --branch NAME" in err and "Traceback" not in err
    first = git(project, "rev-parse", "cli/x").strip()
    assert odin_main(["deliver", state.run_id, "--project", str(project), "--branch", "cli/x", "--force"]) == 0
    assert git(project, "rev-parse", "cli/x").strip() != first and len(commits_of(project, "cli/x")) == 2
