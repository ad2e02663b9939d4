"""The built-in ship-change loop (issue 24, item 4), end to end and offline: its scripted model
(example_notebooks/ship-change.script.yaml) takes it from a tiny git project to a delivered branch, through
`odin run … --unattended` (the real engine, Claude worker and SDK, real pytest, real git)."""

from __future__ import annotations

from pathlib import Path

from odin_magic.cli import main as odin_main
from odin_magic.loop.validation import validate_file

from support.delivery_runs import git, user_side

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "example_notebooks" / "ship-change.script.yaml"
TASK = "add shout(name): the greeting in capitals"


def tiny_project(project: Path) -> None:
    (project / "tests").mkdir()
    (project / "greet.py").write_text('def greet(name):\n    return f"Hello, {name}!"\n')
    (project / "tests" / "test_greet.py").write_text(
        'from greet import greet\n\n\ndef test_greet():\n    assert greet("Ada") == "Hello, Ada!"\n')
    git(project, "init", "-q", "-b", "main")
    git(project, "config", "user.name", "Test User")
    git(project, "config", "user.email", "test@example.com")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "initial")


def test_ship_change_is_a_valid_unattended_loop():
    report = validate_file(ROOT / "loops" / "ship-change.yaml", schedulable=True)
    assert report.ok and report.warnings == [], report.format()
    loop = report.loop
    assert loop.stage_ids() == ["setup", "implement", "simplify", "review", "verify"] and loop.deliver == "branch"
    assert loop.stage("simplify").resolved_agent.fresh and loop.stage("review").resolved_agent.fresh
    assert loop.acceptance == "required" and loop.post_edit


def test_the_offline_script_delivers_a_branch(project, monkeypatch, capsys):
    tiny_project(project)
    before = user_side(project)
    monkeypatch.setenv("ODIN_SCRIPT", str(SCRIPT))
    code = odin_main(["run", "ship-change", "--task", TASK, "--unattended", "--project", str(project)])
    out = capsys.readouterr().out
    assert code == 0, out
    run_id = out.split("run ", 1)[1].split()[0]
    branch = f"odin/{run_id}"
    assert f"📦 delivered: branch {branch}: 2 commit(s)" in out
    log = git(project, "log", "--reverse", "--format=%s%n%b%x00", f"main..{branch}").split("\x00")[:-1]
    subjects = [m.strip().split("\n")[0] for m in log]
    assert subjects == [f"Implement the change: {TASK}", f"Simplify the change: {TASK}"]
    assert all(f"Odin-Run: {run_id}" in m for m in log)
    assert "✅ AC1" in log[-1] and "✅ AC2" in log[-1]
    implement, simplify = git(project, "log", "--reverse", "--format=%H", f"main..{branch}").split()
    assert git(project, "show", "--format=", "--name-status", implement).split("\n")[:-1] == \
        ["M\tgreet.py", "M\ttests/test_greet.py"]
    assert git(project, "show", "--format=", "--name-status", simplify).split("\n")[:-1] == ["M\tgreet.py"]
    assert "return greet(name).upper()" in git(project, "show", f"{branch}:greet.py")
    assert not [p for p in git(project, "ls-tree", "-r", "--name-only", branch).split() if p.startswith(".odin-loop")]
    pr = (project / ".odin-loop" / "runs" / run_id / "pr.md").read_text()
    assert pr.startswith(f"# {TASK}") and "✅ **AC1**" in pr and "shout('') gives 'HELLO, !'" in pr
    now = user_side(project)
    assert (now["head"], now["branch"], now["index"]) == (before["head"], before["branch"], before["index"])
