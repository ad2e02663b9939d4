"""What odin says of a roadmap phase's run and of a phase blocked on its contract: the command it names is the
one that works there (`odin roadmap run`, not `odin run`; `odin abandon` then `odin roadmap run` for a contract
changed to widen a scope). The real engine, Claude worker and SDK against the scripted model drive the roadmap;
the commands are the terminal's, through its parser."""

from __future__ import annotations

import json

import pytest

from odin_magic.cli import main
from odin_magic.core.errors import UsageError
from odin_magic.engine.roadmap_driver import RoadmapDriver, RoadmapOptions
from odin_magic.runs.roadmap_progress import read_records
from support.roadmap_projects import TINY, roadmap_project
from support.scripted_runs import Events, scripted_engine

ROADMAP = "# Greeter\n\nautonomy: {autonomy}\n\n## M1 Basics\n\n- [ ] p1 Greet with hello\n- [ ] p2 Add a farewell\n"
APP = "def greet():\n    return 'hello'\n"
CHEAT = "import pytest\n"


def _script(extra: str = "") -> str:
    return f"""
stages:
  apply-p1:
    - tools:
        - write: {{file_path: app.py, content: {APP!r}}}{extra}
        - write: {{file_path: "{{run_dir}}/change-notes.md", content: "changed app.py"}}
    - text: done
  apply-p2:
    - tools:
        - write: {{file_path: "{{run_dir}}/change-notes.md", content: "nothing to change"}}
    - text: done
default_verdict: {{passed: true, reasons: [scripted]}}
"""


CONFTEST = f"\n        - write: {{file_path: tests/conftest.py, content: {json.dumps(CHEAT)}}}"
SCOPED = TINY.replace('scope: ["app.py"]', 'scope: ["app.py", "tests/**"]')


def _project(project, autonomy="autonomous", contract=TINY, iterations=3):
    contracts = roadmap_project(project, ROADMAP.format(autonomy=autonomy), ("p1", "p2"))
    for phase in ("p1", "p2"):
        (contracts / f"{phase}.yaml").write_text(
            contract.format(phase=phase, impact="internal", gate="grep -q hello app.py", iterations=iterations))
    return contracts


def odin(capsys, project, *argv):
    code = main([*argv, "--project", str(project)])
    out, err = capsys.readouterr()
    return code, out, err


def _blocked_by_scope(project):
    """p1's worker writes tests/conftest.py each try: its scope's glob does not allow it, the same failure
    again and again blocks p1's run (repeated), and the roadmap pauses at it."""
    contracts = _project(project, contract=SCOPED, iterations=5)
    engine, _ = scripted_engine(project, _script(CONFTEST))
    out = RoadmapDriver(engine, options=RoadmapOptions()).run()
    return contracts, engine, out


HELO = """
stages:
  apply-p1:
    attempts:
      - turns:
          - tools:
              - write: {file_path: "{run_dir}/change-notes.md", content: "not yet"}
          - text: done
      - turns:
          - tools:
              - write: {file_path: app.py, content: "def greet():\\n    return 'hello'\\n"}
              - write: {file_path: "{run_dir}/change-notes.md", content: "changed app.py"}
          - text: done
default_verdict: {passed: true, reasons: [scripted]}
"""


def test_a_hitl_phase_runs_stop_says_odin_roadmap_run_resumes_it(project):
    """hitl: the driver stops the phase's run after each gate verdict; its first try fails the gate, so the
    run stops before its stage runs again, and says what resumes it: `odin roadmap run`, the driver."""
    _project(project, autonomy="hitl")
    events = Events()
    engine, _ = scripted_engine(project, HELO, events)
    for _ in range(3):
        RoadmapDriver(engine, options=RoadmapOptions()).run()
    stops = [e.text for e in events if e.kind == "stopped"]
    assert stops, events.kinds()
    assert all("`odin roadmap run` resumes the run" in t and "`odin run`" not in t for t in stops), stops


def test_status_and_approve_of_a_blocked_phase_run_name_odin_roadmap_run(project, capsys):
    _, engine, out = _blocked_by_scope(project)
    assert (out.ending, out.phase) == ("paused", "p1"), out.lines
    assert engine.status().status == "blocked"
    code, text, _ = odin(capsys, project, "status")
    todo = next(line for line in text.splitlines() if line.startswith("to do"))
    assert "`odin roadmap run` continues" in todo and "`odin run`" not in todo, todo
    code, _, err = odin(capsys, project, "approve")
    assert code == 1 and "`roadmap run` continues it" in err and "`run` continues" not in err, err


def test_a_phase_blocked_by_its_scope_is_told_how_a_changed_contract_applies_and_that_works(project, capsys):
    """The scope's glob does not allow tests/conftest.py: the hint names the contract file's scope (the phase's
    loop has the contract's), not the stage's; and, since an edit while the run is kept blocks the phase and
    --accept-contract goes on under the old scope, the way to a new run: abandon, edit, --retry. Followed, it
    works; --retry while the run is under way is refused before it records anything."""
    contracts, engine, out = _blocked_by_scope(project)
    said = "\n".join(out.lines)
    assert "add tests/conftest.py to the scope of .odin-loop/contracts/p1.yaml" in said, said
    assert "the stage's scope" not in said and "edit the contract first" not in said, said
    fix = ("a changed contract applies to a new run: `odin abandon` (its run), then edit "
           ".odin-loop/contracts/p1.yaml, then `odin roadmap run --retry p1`")
    assert f"`odin roadmap run` goes on (approves); {fix}" in said, said
    p1 = contracts / "p1.yaml"  # edited first (the phase is blocked on it), the run not given up yet
    p1.write_text(p1.read_text().replace('"tests/**"]', '"tests/**", "tests/conftest.py"]'))
    with pytest.raises(UsageError, match="still under way") as refused:
        RoadmapDriver(engine, options=RoadmapOptions(retry="p1")).run()
    assert "`odin abandon` it first" in refused.value.hint
    assert not any(r.type == "retry" for r in read_records(project))
    assert odin(capsys, project, "abandon")[0] == 0
    engine, _ = scripted_engine(project, _script(CONFTEST))
    out = RoadmapDriver(engine, options=RoadmapOptions(retry="p1")).run()
    assert out.ending == "complete", out.lines
    assert (project / "tests" / "conftest.py").exists()


#: p1's worker (unsandboxed) rewrites p2's contract: its gate becomes `true`
NEUTERED = "sed -i 's/grep -q hello app.py/true/g' .odin-loop/contracts/p2.yaml"


def _p2_blocked_on_its_contract(project, monkeypatch):
    monkeypatch.setenv("ODIN_SANDBOX", "off")  # the worker's bash may write .odin-loop/ (docs/security.md)
    _project(project)
    engine, _ = scripted_engine(project, _script(f"\n        - bash: {{command: {json.dumps(NEUTERED)}}}"))
    out = RoadmapDriver(engine, options=RoadmapOptions()).run()
    assert (out.ending, out.phase) == ("blocked", "p2"), out.lines
    assert "changed while phase p1's run drove" in out.reason
    return engine


def test_answer_and_approve_name_the_phase_blocked_on_its_contract_not_a_fork(project, capsys, monkeypatch):
    _p2_blocked_on_its_contract(project, monkeypatch)
    for argv in (["answer", "yes"], ["approve"]):
        code, _, err = odin(capsys, project, *argv)
        assert code == 1 and "Traceback" not in err, argv
        assert "odin fork" not in err and "has ended" not in err, err
        assert "the roadmap stops at phase p2, blocked: contract .odin-loop/contracts/p2.yaml changed while " \
               "phase p1's run drove" in err, err
        assert "put back the text it had before that run" in err and "--accept-contract p2" in err, err


def test_retry_of_a_phase_without_runs_says_so_and_points_at_accept_contract(project, monkeypatch):
    engine = _p2_blocked_on_its_contract(project, monkeypatch)
    with pytest.raises(UsageError, match="phase p2 has no runs to try again") as refused:
        RoadmapDriver(engine, options=RoadmapOptions(retry="p2")).run()
    assert "--accept-contract p2" in refused.value.hint
    assert not any(r.type == "retry" for r in read_records(project))


def test_skip_and_accept_contract_of_the_same_phase_is_refused_before_anything_is_recorded(project, monkeypatch):
    engine = _p2_blocked_on_its_contract(project, monkeypatch)
    before = read_records(project)
    with pytest.raises(UsageError, match="--skip p2 and --accept-contract p2") as refused:
        RoadmapDriver(engine, options=RoadmapOptions(skip="p2", accept_contract="p2")).run()
    assert "--skip p2 skips it" in refused.value.hint
    assert read_records(project) == before


def test_a_phase_runs_worker_failure_says_odin_roadmap_run_retries_the_stage(project):
    """The model cannot be reached for p1's stage: the run stays resumable, and what retries it is the driver."""
    from odin_magic.engine.session import WorkerFailed

    _project(project)
    engine, _ = scripted_engine(project, "stages: {}\n")  # no turns: p1's first stage's worker fails
    with pytest.raises(WorkerFailed) as failed:
        RoadmapDriver(engine, options=RoadmapOptions()).run()
    said = f"{failed.value.message}\n{failed.value.hint}"
    assert "`odin roadmap run` retries the stage" in failed.value.hint, said
    assert "`odin run`" not in said and "%odin run)" not in said, said


def test_accept_contract_after_the_phases_run_was_abandoned_says_a_new_run_starts(project, capsys):
    contracts, engine, _ = _blocked_by_scope(project)
    assert odin(capsys, project, "abandon")[0] == 0
    p1 = contracts / "p1.yaml"
    p1.write_text(p1.read_text().replace('"tests/**"]', '"tests/**", "tests/conftest.py"]'))
    engine, _ = scripted_engine(project, _script(CONFTEST))
    out = RoadmapDriver(engine, options=RoadmapOptions(accept_contract="p1")).run()
    said = "\n".join(out.lines)
    assert "was abandoned, so the phase starts a new run under it" in said and "goes on" not in said, said
    assert out.ending == "complete", said
