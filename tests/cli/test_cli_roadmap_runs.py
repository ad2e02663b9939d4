"""What `odin answer` and `odin status` say of a roadmap's phases and their runs (docs/roadmap.md, "Driving it"):
the roadmap's pauses and a phase's run go on with `odin roadmap run`. The real engine, Claude worker and SDK
against the scripted model drive the roadmap; the commands are the terminal's, through its parser."""

from __future__ import annotations


import pytest

from odin_magic.cli import main
from odin_magic.engine.roadmap_driver import RoadmapDriver, RoadmapOptions
from support.roadmap_projects import TINY, phase_blocked_on_its_contract, roadmap_project
from support.scripted_runs import scripted_engine

ROADMAP = "# Greeter\n\nautonomy: autonomous\n\n## M1 Basics\n\n- [ ] p1 Greet with hello\n- [ ] p2 Add a farewell\n"
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
        (contracts / f"{phase}.yaml").write_text(TINY.format(phase=phase, impact=impact, gate="grep -q hello app.py", iterations=3))


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


def test_status_of_an_interrupted_phase_run_says_odin_roadmap_run_continues_it(project, capsys, monkeypatch):
    """A phase's run whose driver died is ready; the roadmap's driver goes on with it and decides the phase
    (`odin roadmap run`), so that is what status names; approve says the same."""
    from odin_magic.engine.session import WorkerFailed

    _project(project)
    engine, _ = scripted_engine(project, "stages: {}\n")  # no turns: p1's first stage's worker fails
    with pytest.raises(WorkerFailed):
        RoadmapDriver(engine, options=RoadmapOptions()).run()
    assert engine.status().status == "running"
    code, out, _ = odin(capsys, project, "status")
    assert code == 0 and "roadmap phase p1: " in out
    assert "ready: nothing drives it now; `odin roadmap run` continues it" in out, out
    assert "Running (or stopped mid-run): odin roadmap run continues it." in out, out
    assert "`odin run` continues" not in out and "odin run continues" not in out, out
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ODIN_SCRIPT"):
        monkeypatch.delenv(var, raising=False)
    code, _, err = odin(capsys, project, "approve")
    assert code == 1 and "`odin roadmap run` continues it" in err, err


def test_status_of_a_done_run_whose_phase_is_blocked_on_its_contract_says_so(project, capsys, monkeypatch):
    """The worker's bash (unsandboxed) rewrote p1's contract while p1's run drove: the run ended done, the phase is
    blocked on the contract. Status shows that, with --accept-contract, not a plain done."""
    monkeypatch.setenv("ODIN_SANDBOX", "off")  # the worker's bash may write .odin-loop/ (docs/security.md)
    out = phase_blocked_on_its_contract(project)
    assert (out.ending, out.phase) == ("blocked", "p1"), out.lines
    code, out, _ = odin(capsys, project, "status")
    assert code == 0 and "status   ✅ done" in out  # the run's own status: it did end done
    assert ("⛔ its roadmap phase p1 is blocked: contract .odin-loop/contracts/p1.yaml changed while its phase ran. "
            "To do: put back the text it had when the run began and `odin roadmap run` resumes it, or accept the "
            "edit: `odin roadmap run --accept-contract p1`.") in out, out
