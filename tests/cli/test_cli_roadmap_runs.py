"""What `odin answer` and `odin status` say of a roadmap's phases and their runs (docs/roadmap.md, "Driving it"):
the roadmap's pauses and a phase's run go on with `odin roadmap run`. The real engine, Claude worker and SDK
against the scripted model drive the roadmap; the commands are the terminal's, through its parser."""

from __future__ import annotations

from odin_magic.cli import main
from odin_magic.engine.roadmap_driver import RoadmapDriver, RoadmapOptions
from support.roadmap_projects import roadmap_project
from support.scripted_runs import scripted_engine

ROADMAP = "# Greeter\n\nautonomy: autonomous\n\n## M1 Basics\n\n- [ ] p1 Greet with hello\n- [ ] p2 Add a farewell\n"
CONTRACT = """\
risk: tiny-fix
impact: {impact}
scope: ["app.py"]
criteria:
  - {{id: AC1, priority: P0, text: "Given the app, when greet is called, then it says hello.", verify: "grep -q hello app.py"}}
gate:
  kind: programmatic
  run: ["grep -q hello app.py"]
max_iterations: 3
loop: fix-{phase}
"""
APP = "def greet():\n    return 'hello'\n"
SCRIPT = f"""
stages:
  apply-p1:
    - tools:
        - write: {{file_path: app.py, content: {APP!r}}}
        - write: {{file_path: "{{run_dir}}/change-notes.md", content: "changed app.py"}}
    - text: done
default_verdict: {{passed: true, reasons: [scripted]}}
"""


def _project(project, p2_impact="user-facing"):
    contracts = roadmap_project(project, ROADMAP, ("p1", "p2"))
    for phase, impact in (("p1", "internal"), ("p2", p2_impact)):
        (contracts / f"{phase}.yaml").write_text(CONTRACT.format(phase=phase, impact=impact))


def odin(capsys, project, *argv):
    code = main([*argv, "--project", str(project)])
    out, err = capsys.readouterr()
    return code, out, err


def test_answer_at_a_roadmap_pause_says_what_the_pause_wants_not_fork(project, capsys):
    """p1 is done; the user-facing p2 waits before it starts. No run is active and no question waits: the
    roadmap's pause is what there is, and `odin roadmap run` approves it (not `odin fork`, of p1's run)."""
    _project(project)
    engine, _ = scripted_engine(project, SCRIPT)
    out = RoadmapDriver(engine, options=RoadmapOptions()).run()
    assert (out.ending, out.phase) == ("paused", "p2"), out.lines
    for argv in (["answer", "yes"], ["approve"]):
        code, _, err = odin(capsys, project, *argv)
        assert code == 1 and "Traceback" not in err, argv
        assert "odin fork" not in err and "has ended" not in err, err
        assert "the roadmap is paused at phase p2 (before it starts)" in err, err
        assert "`odin roadmap run` approves the pause and goes on" in err, err
