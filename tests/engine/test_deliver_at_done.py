"""`deliver:` in a loop (issue 24, item 3): at done the engine delivers the run itself, in a real git repository;
a delivery that fails is recorded and told, and the run stays done; an unattended `odin run` with `deliver: pr`
opens the pull request through gh (a fake one on PATH). Real engine, scripted model, real git."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from odin_magic.cli import main as odin_main
from odin_magic.loop.validation import validate_text

from support.delivery_runs import LOOP, SCRIPT, git, init_repo, user_side
from support.scripted_runs import Events, scripted_engine


def _loop(project: Path, deliver: str) -> None:
    loops = project / ".odin-loop" / "loops"
    loops.mkdir(parents=True, exist_ok=True)
    (loops / "ship.yaml").write_text(LOOP.replace("max_iterations: 6\n", f"max_iterations: 6\ndeliver: {deliver}\n"))


def _notices(engine, run_id: str) -> list[dict]:
    lines = (engine.run_dir(run_id) / "events.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["type"] == "notice" and r.get("about") == "delivery"]


def test_deliver_branch_makes_the_branch_at_done_and_records_it(project):
    init_repo(project)
    _loop(project, "branch")
    events = Events()
    engine, _ = scripted_engine(project, SCRIPT, events)
    before = user_side(project)
    state = engine.start("ship", "say a new greeting")
    assert state.status == "done"
    branch = f"odin/{state.run_id}"
    subjects = git(project, "log", "--reverse", "--format=%s", f"main..{branch}").splitlines()
    assert subjects == ["Print the new greeting: say a new greeting", "Document the greeting: say a new greeting"]
    assert (engine.run_dir(state.run_id) / "pr.md").is_file()
    assert user_side(project)["head"] == before["head"] and user_side(project)["branch"] == before["branch"]
    [record] = _notices(engine, state.run_id)
    assert record["delivery"]["ok"] and record["delivery"]["branch"] == branch
    told = [e.text for e in events if e.kind == "delivered"]
    assert told and told[0].startswith(f"delivered: branch {branch}: 2 commit(s)")
    assert events.kinds().index("delivered") < events.kinds().index("report")  # delivered, then the report
    report = (engine.run_dir(state.run_id) / "report.md").read_text()
    assert f"- **delivery**: delivered: branch {branch}: 2 commit(s)" in report
    assert engine.status(state.run_id).status == "done"


def test_a_delivery_that_fails_at_done_is_recorded_and_the_run_stays_done(project):
    _loop(project, "branch")  # no git repository: delivery cannot make a branch
    events = Events()
    engine, _ = scripted_engine(project, SCRIPT, events)
    state = engine.start("ship", "say a new greeting")
    assert state.status == "done" and engine.status(state.run_id).status == "done"
    [record] = _notices(engine, state.run_id)
    assert not record["delivery"]["ok"] and "not in a git repository" in record["delivery"]["error"]
    told = [e.text for e in events if e.kind == "notice" and e.data.get("about") == "delivery"]
    assert told[0].startswith("delivery (branch) failed:") and f"odin deliver {state.run_id}" in told[0]
    assert "report" in events.kinds()  # the report is still written, and says so
    assert "- **delivery**: delivery (branch) failed:" in (engine.run_dir(state.run_id) / "report.md").read_text()


def test_deliver_off_is_the_default_and_makes_no_branch(project):
    init_repo(project)
    _loop(project, "off")
    engine, _ = scripted_engine(project, SCRIPT)
    state = engine.start("ship", "say a new greeting")
    assert state.status == "done" and not _notices(engine, state.run_id)
    assert git(project, "branch", "--list", "odin/*") == ""


def test_an_unattended_run_with_deliver_pr_opens_the_pull_request(project, tmp_path, monkeypatch, capsys):
    init_repo(project)
    git(project, "remote", "add", "origin", "https://github.com/o/r.git")
    bare = tmp_path / "origin.git"  # origin reads as GitHub; it is pushed to a local bare repository
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(project, "remote", "set-url", "--push", "origin", str(bare))
    _loop(project, "pr")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {tmp_path / 'gh-args'}\necho https://github.com/o/r/pull/9\n")
    gh.chmod(0o755)
    script = tmp_path / "ship.script.yaml"
    script.write_text(SCRIPT)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ODIN_SCRIPT", str(script))
    code = odin_main(["run", "ship", "--task", "say a new greeting", "--unattended", "--project", str(project)])
    out = capsys.readouterr().out
    assert code == 0, out
    run_id = out.split("run ", 1)[1].split()[0]
    args = (tmp_path / "gh-args").read_text().splitlines()
    assert args[:4] == ["pr", "create", "--title", "say a new greeting"] and args[-2:] == ["--head", f"odin/{run_id}"]
    assert "delivered: branch odin/" in out and "pull request opened: https://github.com/o/r/pull/9" in out
    assert git(bare, "rev-parse", f"refs/heads/odin/{run_id}") == git(project, "rev-parse", "--verify", f"odin/{run_id}")


@pytest.mark.parametrize("value, ok", [("branch", True), ("pr", True), ("off", True), ("false", True),
                                       ("github", False), ("true", False)])
def test_deliver_takes_off_branch_or_pr_with_a_located_error(value, ok):
    report = validate_text(LOOP.replace("max_iterations: 6\n", f"max_iterations: 6\ndeliver: {value}\n"), "ship.yaml")
    assert report.ok is ok, report.format()
    if not ok:
        [error] = report.errors
        assert (error.field, error.line) == ("deliver", 4) and "'off', 'branch' or 'pr'" in error.message and error.fix


def test_push_then_pr_as_a_ci_job_delivers(project, tmp_path, monkeypatch, capsys):
    """`odin deliver --push --pr` (the CI workflow's step): the branch is pushed to origin, then gh opens the
    pull request of it. Origin reads as GitHub; its push URL is a local bare repository (no network)."""
    init_repo(project)
    _loop(project, "off")
    engine, _ = scripted_engine(project, SCRIPT)
    state = engine.start("ship", "say a new greeting")
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(project, "remote", "add", "origin", "https://github.com/o/r.git")
    git(project, "remote", "set-url", "--push", "origin", str(bare))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {tmp_path / 'gh-args'}\necho https://github.com/o/r/pull/3\n")
    (bin_dir / "gh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    code = odin_main(["deliver", "--branch", "odin/ci-1", "--push", "--pr", "--project", str(project)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert git(bare, "rev-parse", "refs/heads/odin/ci-1").strip() == git(project, "rev-parse", "odin/ci-1").strip()
    assert "pushed odin/ci-1 to origin" in out and "pull request opened: https://github.com/o/r/pull/3" in out
    assert (tmp_path / "gh-args").read_text().splitlines()[-2:] == ["--head", "odin/ci-1"]
    assert state.status == "done"


def test_a_push_that_fails_opens_no_pull_request(project, tmp_path, monkeypatch, capsys):
    init_repo(project)
    _loop(project, "off")
    engine, _ = scripted_engine(project, SCRIPT)
    engine.start("ship", "say a new greeting")
    git(project, "remote", "add", "origin", "https://github.com/o/r.git")
    git(project, "remote", "set-url", "--push", "origin", str(tmp_path / "no-such-repo.git"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(f"#!/bin/sh\ntouch {tmp_path / 'gh-called'}\n")
    (bin_dir / "gh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    assert odin_main(["deliver", "--branch", "odin/ci-2", "--push", "--pr", "--project", str(project)]) == 0
    out = capsys.readouterr().out
    assert "git push failed" in out and "git push -u origin odin/ci-2" in out and not (tmp_path / "gh-called").exists()


def test_the_cli_refuses_while_another_process_drives_the_run(project, capsys):
    """Another process holding a run's driver lock (odin's own RunLock, as a driver takes it): `odin deliver`
    refuses in one line and nothing in the repository changes; once it is released, the delivery goes through."""
    from odin_magic.runs.store import RunLock

    init_repo(project)
    _loop(project, "off")
    engine, _ = scripted_engine(project, SCRIPT)
    state = engine.start("ship", "say a new greeting")
    before = user_side(project, refs=True)
    lock = RunLock(engine.run_dir(state.run_id), state.run_id)
    lock.acquire("odin run ship (elsewhere)", "2026-12-03T06:00:00")
    try:
        assert odin_main(["deliver", "--project", str(project)]) == 2
    finally:
        lock.release()
    err = capsys.readouterr().err
    assert f"run {state.run_id} is being driven by pid {os.getpid()} (`odin run ship (elsewhere)`)" in err
    assert "hint: wait for it" in err and len(err.strip().splitlines()) == 2 and "Traceback" not in err
    assert user_side(project, refs=True) == before
    assert odin_main(["deliver", "--project", str(project)]) == 0
