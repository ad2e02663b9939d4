"""A phase's contract is sealed when its run starts (the sha256 in its `started` record, roadmap.jsonl): without the
sandbox a worker's bash can rewrite `.odin-loop/contracts/<phase>.yaml` mid-phase, and the driver's next read of it
stops the phase (blocked, the file named); putting the file back resumes it, `--accept-contract` accepts the edit;
a person's edit before the run starts is simply the contract the run is sealed with. The real engine, Claude worker
and SDK against the scripted model, real gate commands."""

from __future__ import annotations

import json
import shlex

import pytest

from odin_magic.core.errors import UsageError
from odin_magic.engine.roadmap_driver import RoadmapDriver, RoadmapOptions
from odin_magic.learning.memory import Memory
from odin_magic.loop.roadmap import ROADMAP_FILE, load_roadmap
from odin_magic.runs.roadmap_progress import progress, read_records
from support.roadmap_projects import roadmap_project
from support.scripted_runs import scripted_engine

ROADMAP = "# Greeter\n\nautonomy: {autonomy}\n\n## M1 Basics\n\n- [ ] p1 Greet with hello\n- [ ] p2 Add a farewell\n"
CONTRACT = """\
risk: tiny-fix
impact: internal
scope: ["app.py"]
criteria:
  - {id: AC1, priority: P0, text: "Given the app, when greet is called, then it says hello.", verify: "grep -q hello app.py"}
gate:
  kind: programmatic
  run: ["grep -q hello app.py"]
max_iterations: 3
loop: fix-PHASE
"""
WIDENED = "sed -i 's/scope: \\[\"app.py\"\\]/scope: [\"**\"]/' .odin-loop/contracts/p1.yaml"
#: the widening plus a `sealed` record of its own in roadmap.jsonl, as if a person had accepted it
FORGED = WIDENED + (" && printf '{\"at\": \"x\", \"type\": \"sealed\", \"phase\": \"p1\", \"run_id\": \"%s\", "
                    "\"contract_sha256\": \"%s\"}\\n' \"$ODIN_RUN_ID\" "
                    "\"$(sha256sum .odin-loop/contracts/p1.yaml | cut -d' ' -f1)\" >> .odin-loop/roadmap.jsonl")
APP = "def greet():\n    return 'hello'\n"
FAREWELL = APP + "\n\ndef farewell():\n    return 'bye'\n"


def _script(tamper: bool, command: str = WIDENED) -> str:
    bash = f"\n        - bash: {{command: {json.dumps(command)}}}" if tamper else ""
    return f"""
stages:
  apply-p1:
    - tools:{bash}
        - write: {{file_path: app.py, content: {APP!r}}}
        - write: {{file_path: "{{run_dir}}/change-notes.md", content: "changed app.py"}}
    - text: done
  apply-p2:
    - tools:
        - write: {{file_path: app.py, content: {FAREWELL!r}}}
        - write: {{file_path: "{{run_dir}}/change-notes.md", content: "added farewell"}}
    - text: done
default_verdict: {{passed: true, reasons: [scripted]}}
"""


@pytest.fixture
def unsandboxed(monkeypatch):
    monkeypatch.setenv("ODIN_SANDBOX", "off")  # the worker's bash may write .odin-loop/ (docs/security.md)


def _project(project, autonomy="autonomous"):
    roadmap_project(project, ROADMAP.format(autonomy=autonomy), ("p1", "p2"))
    for phase in ("p1", "p2"):
        _contract(project, phase).write_text(CONTRACT.replace("PHASE", phase))


def _contract(project, phase):
    return project / ".odin-loop" / "contracts" / f"{phase}.yaml"


def _drive(engine, **options):
    return RoadmapDriver(engine, options=RoadmapOptions(**options)).run()


def _status(project, phase):
    return progress(project, load_roadmap(project / ROADMAP_FILE))[phase]


EDITED = CONTRACT.replace("PHASE", "p1").replace("max_iterations: 3", "max_iterations: 2")
REASON = "contract .odin-loop/contracts/p1.yaml changed while its phase ran"


def test_a_contract_rewritten_by_the_workers_bash_blocks_the_phase_until_put_back(project, unsandboxed):
    _project(project)
    engine, _ = scripted_engine(project, _script(tamper=True))
    out = _drive(engine)
    assert (out.ending, out.phase, out.reason, out.exit_code) == ("blocked", "p1", REASON, 1), out.lines
    assert '"**"' in _contract(project, "p1").read_text()  # the bash did widen the scope
    assert any(REASON in line and "--accept-contract p1" in line for line in out.lines), out.lines
    p1 = _status(project, "p1")
    assert (p1.status, p1.reason, p1.contract_changed) == ("blocked", REASON, True)
    assert load_roadmap(project / ROADMAP_FILE).phases()[0].note == f"blocked: {REASON}"
    assert _status(project, "p2").runs == [] and not any(e.stage == "p1" for e in Memory(project).entries())
    runs = list(p1.runs)
    assert _drive(engine).reason == REASON  # it stays stopped: nothing decided, nothing run
    # the file put back as the run began: the same run's DONE decides the phase, and the roadmap goes on
    _contract(project, "p1").write_text(CONTRACT.replace("PHASE", "p1"))
    out = _drive(engine)
    assert out.ending == "complete", out.lines
    assert _status(project, "p1").runs == runs and _status(project, "p1").status == "done"
    assert [(p.done, p.note) for p in load_roadmap(project / ROADMAP_FILE).phases()] == [(True, None), (True, None)]
    assert any(e.kind == "decision" and e.stage == "p1" for e in Memory(project).entries())
    # once the phase is decided, a person's later edit of its contract is theirs
    _contract(project, "p1").write_text(EDITED)
    assert _status(project, "p1").status == "done" and _drive(engine).ending == "complete"


def test_accept_contract_reseals_the_edit_and_the_phase_goes_on(project, unsandboxed):
    _project(project)
    engine, _ = scripted_engine(project, _script(tamper=True))
    assert _drive(engine).reason == REASON
    with pytest.raises(UsageError):
        _drive(engine, accept_contract="p2")  # p2 has no run under way: nothing to accept
    out = _drive(engine, accept_contract="p1")
    assert out.ending == "complete", out.lines
    assert any("p1: its edited contract accepted" in line for line in out.lines)
    sealed = [r for r in read_records(project) if r.type == "sealed"]
    assert [(r.phase, r.run_id) for r in sealed] == [("p1", _status(project, "p1").last_run)]
    assert _status(project, "p1").status == "done"


def test_a_persons_edit_before_the_phase_starts_is_the_contract_it_runs_under(project, unsandboxed):
    _project(project, autonomy="hitl")
    engine, _ = scripted_engine(project, _script(tamper=False))
    out = _drive(engine)
    assert (out.ending, out.phase) == ("paused", "p1") and engine.runs() == []
    _contract(project, "p1").write_text(EDITED)
    out = _drive(engine)  # approved: p1 runs under the edited contract, sealed with it
    assert (out.ending, out.phase) == ("paused", "p2"), out.lines
    assert _status(project, "p1").status == "done" and not _status(project, "p1").contract_changed
    started = [r for r in read_records(project) if r.type == "started"]
    assert len(started) == 1 and started[0].contract_sha256


def test_a_seal_the_workers_bash_appends_to_the_log_does_not_hide_the_change_from_the_driver_that_started_it(
        project, unsandboxed):
    """The driver that started the run holds the seal itself; docs/security.md says what a later one trusts."""
    _project(project)
    engine, _ = scripted_engine(project, _script(tamper=True, command=FORGED))
    out = _drive(engine)
    assert (out.ending, out.phase, out.reason) == ("blocked", "p1", REASON), out.lines
    types = [r.type for r in read_records(project) if r.phase == "p1"]
    assert types[:4] == ["started", "sealed", "drove", "noted"]  # forged mid-drive
    # a later driver has only the log to go by, and the log says sealed: the known limit (docs/security.md)
    assert _drive(engine).ending == "complete"


# -- a LATER phase's contract rewritten while an earlier phase's run drives ----------------------------------------

#: p1's worker neuters p2's contract: its gate and its criterion's verify become `true`
NEUTERED = "sed -i 's/grep -q hello app.py/true/g' .odin-loop/contracts/p2.yaml"
P2_REASON = "contract .odin-loop/contracts/p2.yaml changed while phase p1's run drove (run {run})"


def test_a_later_phases_contract_rewritten_while_an_earlier_phase_ran_blocks_that_phase_before_it_starts(
        project, unsandboxed):
    _project(project)
    engine, _ = scripted_engine(project, _script(tamper=True, command=NEUTERED))
    out = _drive(engine)
    run = _status(project, "p1").last_run
    reason = P2_REASON.format(run=run)
    assert (out.ending, out.phase, out.reason, out.exit_code) == ("blocked", "p2", reason, 1), out.lines
    assert "true" in _contract(project, "p2").read_text()  # the bash did rewrite it
    assert any(reason in line and "--accept-contract p2" in line for line in out.lines), out.lines
    assert _status(project, "p1").status == "done" and _status(project, "p2").runs == []
    p2 = _status(project, "p2")
    assert (p2.status, p2.reason, p2.contract_changed) == ("blocked", reason, True)
    assert load_roadmap(project / ROADMAP_FILE).phases()[1].note == f"blocked: {reason}"
    assert _drive(engine).reason == reason and _status(project, "p2").runs == []  # it stays stopped
    # the file put back as it was before p1's run: p2 starts under it, and the roadmap completes
    _contract(project, "p2").write_text(CONTRACT.replace("PHASE", "p2"))
    out = _drive(engine)
    assert out.ending == "complete", out.lines
    assert [(p.done, p.note) for p in load_roadmap(project / ROADMAP_FILE).phases()] == [(True, None), (True, None)]


def test_accept_contract_takes_a_later_phases_contract_edited_while_an_earlier_phase_ran(project, unsandboxed):
    _project(project)
    engine, _ = scripted_engine(project, _script(tamper=True, command=NEUTERED))
    assert _drive(engine).phase == "p2"
    out = _drive(engine, accept_contract="p2")
    assert out.ending == "complete", out.lines
    assert any("p2: its edited contract accepted" in line for line in out.lines), out.lines
    sealed = [r for r in read_records(project) if r.type == "sealed"]
    assert [(r.phase, r.run_id) for r in sealed] == [("p2", None)]
    started = [r for r in read_records(project) if r.type == "started" and r.phase == "p2"]
    assert started[0].contract_sha256 == sealed[0].contract_sha256  # p2 ran under the accepted text


def test_a_forged_log_does_not_hide_a_later_phases_rewritten_contract_from_the_driver_that_drove(
        project, unsandboxed):
    """The worker also appends a `sealed` record of p2's new text: the driver that drove p1 took the hashes itself."""
    forged = NEUTERED + (" && printf '{\"at\": \"x\", \"type\": \"sealed\", \"phase\": \"p2\", \"contract_sha256\": "
                         "\"%s\"}\\n' \"$(sha256sum .odin-loop/contracts/p2.yaml | cut -d' ' -f1)\" "
                         ">> .odin-loop/roadmap.jsonl")
    _project(project)
    engine, _ = scripted_engine(project, _script(tamper=True, command=forged))
    out = _drive(engine)
    assert (out.ending, out.phase) == ("blocked", "p2"), out.lines
    assert out.reason == P2_REASON.format(run=_status(project, "p1").last_run)
    assert _status(project, "p2").runs == []


def test_a_persons_edit_of_a_later_contract_between_runs_is_the_contract_it_runs_under(project, unsandboxed):
    """hitl: p1 runs, the roadmap pauses before p2; the person edits p2's contract there (as the panel's Edit
    contract does); p2 starts under it, sealed with it."""
    _project(project, autonomy="hitl")
    engine, _ = scripted_engine(project, _script(tamper=False))
    assert _drive(engine).phase == "p1"
    out = _drive(engine)
    assert (out.ending, out.phase) == ("paused", "p2"), out.lines
    edited = CONTRACT.replace("PHASE", "p2").replace("max_iterations: 3", "max_iterations: 2")
    _contract(project, "p2").write_text(edited)
    assert _status(project, "p2").status == "paused"
    out = _drive(engine)
    assert out.ending == "complete", out.lines
    assert _status(project, "p2").status == "done" and not _status(project, "p2").contract_changed


def test_a_persons_edit_of_a_later_contract_before_any_run_is_taken(project, unsandboxed):
    _project(project)
    _contract(project, "p2").write_text(CONTRACT.replace("PHASE", "p2").replace("max_iterations: 3",
                                                                                  "max_iterations: 2"))
    engine, _ = scripted_engine(project, _script(tamper=False))
    assert _drive(engine).ending == "complete"


# -- a NEW phase added to the roadmap while a phase's run drives -------------------------------------------------

#: p1's worker adds a phase p4 of its own to the roadmap, with a contract whose gate passes whatever it does
SNEAKY = CONTRACT.replace("PHASE", "p2").replace('run: ["grep -q hello app.py"]', 'run: ["true"]')
ADDED = (f"printf '%s' {shlex.quote(SNEAKY)} > .odin-loop/contracts/p4.yaml"
         " && printf -- '- [ ] p4 Sneaky\\n' >> .odin-loop/roadmap.md")


def test_a_phase_the_workers_bash_adds_to_the_roadmap_is_blocked_before_it_starts(project, unsandboxed):
    _project(project)
    engine, _ = scripted_engine(project, _script(tamper=True, command=ADDED))
    out = _drive(engine)
    reason = ("contract .odin-loop/contracts/p4.yaml changed while phase p1's run drove "
              f"(run {_status(project, 'p1').last_run})")
    assert (out.ending, out.phase, out.reason) == ("blocked", "p4", reason), out.lines
    assert any(reason in line and "--accept-contract p4" in line for line in out.lines), out.lines
    assert [p.id for p in load_roadmap(project / ROADMAP_FILE).phases()] == ["p1", "p2", "p4"]  # the bash did add it
    p4 = _status(project, "p4")
    assert (p4.status, p4.reason, p4.contract_changed, p4.runs) == ("blocked", reason, True, [])
    assert _status(project, "p2").status == "done"  # p2 was there before: it ran
    assert _drive(engine).reason == reason and _status(project, "p4").runs == []  # it stays stopped
    out = _drive(engine, accept_contract="p4")  # a person takes it: it runs
    assert out.ending == "complete", out.lines
