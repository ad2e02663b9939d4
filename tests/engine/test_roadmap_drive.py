"""`roadmap run` (issue 22 items 3-5): the real engine, Claude worker and SDK against the scripted model,
real checkpoints, real gate commands; each judge status decides the phase as seed 002 says."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from odin_magic.core.errors import OdinError
from odin_magic.engine.roadmap_driver import RoadmapDriver, RoadmapOptions
from odin_magic.learning.memory import Memory
from odin_magic.loop.roadmap import ROADMAP_FILE, load_roadmap
from odin_magic.render.roadmap_chart import PhaseRuns, roadmap_chart, roadmap_chart_png
from odin_magic.runs.roadmap_progress import phase_runs, progress, repairs
from support.roadmap_projects import TINY, roadmap_project
from support.scripted_runs import scripted_engine

ROADMAP = """\
# Greeter

autonomy: {autonomy}

## M1 Basics

- [ ] p1 Greet with hello
- [ ] p2 Add a farewell

## M2 Launch

- [ ] p3 Show the greeting on the home page
"""


APP = "def greet():\n    return 'hello'\n"
FAREWELL = APP + "\n\ndef farewell():\n    return 'bye'\n"
HOME = FAREWELL + "\nHOME = greet()\n"


def _turns(stage: str, content: str) -> str:
    """Each phase runs its own copy of the tiny-fix loop (stage apply-<phase>): the script's position is per run."""
    return f"""
  {stage}:
    - tools:
        - write: {{file_path: app.py, content: {content!r}}}
        - write: {{file_path: "{{run_dir}}/change-notes.md", content: "changed app.py"}}
    - text: done"""


SCRIPT = f"""
stages:{_turns("apply-p1", APP)}{_turns("apply-p2", FAREWELL)}{_turns("apply-p3", HOME)}
judge:
  apply-p1: {{status: DONE, passed: true, reasons: [greets]}}
  apply-p2: {{status: DONE_WITH_CONCERNS, passed: true, reasons: [ok], non_blocking: ["no test covers farewell"]}}
  apply-p3: {{status: BLOCKED, passed: false, blocking: ["the home page needs a design nobody has given"]}}
default_verdict: {{passed: true, reasons: [scripted]}}
"""


def _project(project, autonomy="autonomous", contracts=None):
    roadmap_project(project, ROADMAP.format(autonomy=autonomy), ("p1", "p2", "p3"))
    contracts = contracts or {"p1": {}, "p2": {}, "p3": {"impact": "user-facing"}}
    for phase, fields in contracts.items():
        values = {"phase": phase, "impact": "internal", "gate": "grep -q hello app.py", "iterations": 3, **fields}
        (project / ".odin-loop" / "contracts" / f"{phase}.yaml").write_text(TINY.format(**values))


def _drive(engine, **options):
    return RoadmapDriver(engine, options=RoadmapOptions(**options)).run()


def _marks(project):
    return [(p.id, p.done, p.note) for p in load_roadmap(project / ROADMAP_FILE).phases()]


def test_done_concerns_then_the_user_facing_phase_stops_autonomy_then_blocked(project):
    _project(project)
    engine, _ = scripted_engine(project, SCRIPT)
    out = _drive(engine)
    # p1 DONE, p2 DONE_WITH_CONCERNS: both checked; the user-facing p3 waits for a person
    assert (out.ending, out.phase, out.exit_code) == ("paused", "p3", 0), out.lines
    assert _marks(project) == [("p1", True, None), ("p2", True, None), ("p3", False, None)]
    assert (project / "app.py").read_text() == FAREWELL
    entries = Memory(project).entries()
    assert any(e.kind == "decision" and e.stage == "p1" for e in entries)
    assert any(e.kind == "lesson" and e.stage == "p2" and "no test covers farewell" in e.text for e in entries)
    states = progress(project, load_roadmap(project / ROADMAP_FILE))
    assert states["p2"].status == "done_with_concerns" and states["p2"].concern == "apply-p2: no test covers farewell"
    assert states["p3"].status == "paused" and states["p3"].pause == "start"
    assert out.contract.impact == "user-facing"
    # unattended: exit 3 there, with the report written
    out = _drive(engine, unattended=True)
    assert (out.ending, out.phase, out.exit_code) == ("needs_person", "p3", 3)
    assert "p3" in out.report.read_text() and "paused (start)" in out.report.read_text()
    # a person goes on: p3 runs, its judge is BLOCKED: the change reverted, the roadmap stopped
    out = _drive(engine)
    assert (out.ending, out.phase, out.exit_code) == ("blocked", "p3", 1), out.lines
    assert (project / "app.py").read_text() == FAREWELL  # p3's change undone, p1 and p2's kept
    p3 = _marks(project)[2]
    assert p3[1] is False and p3[2].startswith("blocked: ") and "design nobody has given" in p3[2]
    assert engine.active() is None  # the blocked run is abandoned: nothing left half-way
    assert _drive(engine).ending == "blocked"  # and it stays stopped until a person retries or skips


def test_budget_spent_escalates_and_stops(project):
    _project(project, contracts={"p1": {"gate": "grep -q never app.py", "iterations": 2}, "p2": {}, "p3": {}})
    engine, _ = scripted_engine(project, SCRIPT)
    out = _drive(engine)
    assert (out.ending, out.phase, out.exit_code) == ("escalated", "p1", 1), out.lines
    p1 = _marks(project)[0]
    assert p1[1] is False and p1[2].startswith("escalated: ")
    states = progress(project, load_roadmap(project / ROADMAP_FILE))
    assert states["p1"].status == "escalated" and states["p1"].iterations == 3  # 2 loopbacks allowed, the 3rd failure escalates
    assert states["p2"].status == "pending" and states["p2"].runs == []  # never silently went on
    # the notebook's roadmap chart marks the loopbacks and the escalation (item 6)
    runs = phase_runs(project)
    fig = roadmap_chart([PhaseRuns(p, states[p].status, runs.get(p, [])) for p in ("p1", "p2", "p3")])
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["loopback (a failed gate)", "escalated"]
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["p3 (pending)", "p2 (pending)", "p1 (escalated)"]
    assert roadmap_chart_png(project, load_roadmap(project / ROADMAP_FILE)).startswith(b"\x89PNG")


def test_max_usd_caps_the_phase(project):
    contract = TINY.format(phase="p1", impact="internal", gate="true", iterations=3) + "max_usd: 0.000001\n"
    _project(project, contracts={"p2": {}, "p3": {}})
    (project / ".odin-loop" / "contracts" / "p1.yaml").write_text(contract)
    engine, _ = scripted_engine(project, SCRIPT)
    out = _drive(engine)
    assert (out.ending, out.phase) == ("escalated", "p1") and "budget" in out.reason


def test_hitl_pauses_before_each_phase_showing_its_contract(project):
    _project(project, autonomy="hitl")
    engine, _ = scripted_engine(project, SCRIPT)
    out = _drive(engine)
    assert (out.ending, out.phase) == ("paused", "p1") and out.contract.scope == ["app.py"]
    assert any("scope: app.py" in line for line in out.lines) and engine.runs() == []
    out = _drive(engine)  # approved: p1 runs (done), then p2 waits before it starts
    assert (out.ending, out.phase) == ("paused", "p2"), out.lines
    assert _marks(project)[0] == ("p1", True, None)


def test_a_hand_edit_that_disagrees_with_the_runs_is_repaired_and_shown(project):
    _project(project)
    engine, _ = scripted_engine(project, SCRIPT)
    _drive(engine)
    path = project / ROADMAP_FILE
    path.write_text(path.read_text().replace("- [x] p1", "- [ ] p1"))  # unchecked by hand
    runs = len(engine.runs())
    out = _drive(engine, unattended=True)
    assert any(line.startswith("repaired roadmap.md:7: p1 was [ ]") and "now [x]" in line for line in out.lines)
    assert _marks(project)[0] == ("p1", True, None) and len(engine.runs()) == runs  # not redone


def _odin(project, *args):
    return [sys.executable, "-m", "odin_magic", "roadmap", "run", *args, "--project", str(project)]


def test_sigkill_mid_phase_then_roadmap_run_finishes_that_phase_without_redoing_finished_ones(project, tmp_path):
    """The driver is killed with SIGKILL once p2's run has begun (waiting on its output, never on a clock);
    a plain `odin roadmap run` then continues p2's run where its log stands; p1 is not run again."""
    _project(project)
    script = tmp_path / "roadmap.script.yaml"
    script.write_text(textwrap.dedent(SCRIPT))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(ODIN_SCRIPT=str(script), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(_odin(project), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if any("phase p2" in s and "starting a run" in s for s in seen[:-1]):
            break  # the first line after p2's start: its run exists and drives
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert any("phase p1 done" in s for s in seen), seen
    roadmap = load_roadmap(project / ROADMAP_FILE)
    before = progress(project, roadmap)
    assert before["p1"].status == "done" and len(before["p2"].runs) == 1 and before["p2"].status == "active"
    resumed = subprocess.run(_odin(project), capture_output=True, text=True, env=env, timeout=600)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"resuming phase p2: run {before['p2'].last_run}" in resumed.stdout
    after = progress(project, load_roadmap(project / ROADMAP_FILE))
    assert after["p1"].runs == before["p1"].runs and after["p2"].runs == before["p2"].runs  # nothing redone
    assert after["p2"].status == "done_with_concerns" and after["p3"].status == "paused"
    assert _marks(project)[:2] == [("p1", True, None), ("p2", True, None)]
    assert (project / "app.py").read_text() == FAREWELL
    # --unattended stops at the user-facing phase with exit 3
    unattended = subprocess.run(_odin(project, "--unattended"), capture_output=True, text=True, env=env, timeout=600)
    assert unattended.returncode == 3 and "needs a person" in unattended.stdout


def test_a_bad_contract_of_a_later_phase_stops_before_any_run(project):
    _project(project)
    (project / ".odin-loop" / "contracts" / "p3.yaml").write_text("risk: tiny-fix\nscope: [app.py]\nloop: nope\n")
    engine, _ = scripted_engine(project, SCRIPT)
    with pytest.raises(OdinError) as info:
        _drive(engine)
    assert "p3.yaml:3:7" in info.value.message and "'nope'" in info.value.message
    assert engine.runs() == []


def test_a_persons_own_status_note_is_kept_only_the_note_odin_wrote_is_taken_back(project):
    """A note that merely starts like odin's (`blocked:`, `escalated:`) is a person's until roadmap.jsonl says odin
    wrote it: the repair leaves it; odin's own escalated note goes once the retried phase is done."""
    _project(project, contracts={"p1": {"gate": "grep -q never app.py", "iterations": 1}, "p2": {}, "p3": {}})
    path = project / ROADMAP_FILE
    mine = "blocked: waiting for the design review"
    path.write_text(path.read_text().replace("Add a farewell", f"Add a farewell — {mine}"))
    roadmap = load_roadmap(path)
    assert repairs(project, roadmap) == []  # pending by the runs, and the person's note stays
    engine, _ = scripted_engine(project, SCRIPT)
    assert _drive(engine).ending == "escalated"
    p1_note = _marks(project)[0][2]
    assert p1_note.startswith("escalated: ") and _marks(project)[1] == ("p2", False, mine)
    (project / ".odin-loop" / "contracts" / "p1.yaml").write_text(
        TINY.format(phase="p1", impact="internal", gate="grep -q hello app.py", iterations=3))
    out = _drive(engine, retry="p1")
    assert _marks(project)[0] == ("p1", True, None), out.lines  # odin's note taken back
    assert _marks(project)[1][2] == mine  # p2 ran and is done; the person's note is still there
    assert repairs(project, load_roadmap(path)) == []


def test_the_scripted_model_answers_each_phase_from_its_own_key_when_phases_share_a_loop(project):
    """Both phases run the built-in tiny-fix loop (stage `apply`); `p1/apply` and `p2/apply` script each phase's
    run (docs/scripted-model.md), where a plain `apply` would replay the same turns for both."""
    _project(project, contracts={"p1": {}, "p2": {}})
    path = project / ROADMAP_FILE
    path.write_text(path.read_text().split("## M2")[0])
    for phase in ("p1", "p2"):
        contract = project / ".odin-loop" / "contracts" / f"{phase}.yaml"
        contract.write_text(contract.read_text().replace(f"loop: fix-{phase}", "loop: tiny-fix"))
    script = SCRIPT.replace("apply-p1", "p1/apply").replace("apply-p2", "p2/apply")
    engine, _ = scripted_engine(project, script)
    out = _drive(engine)
    assert (out.ending, out.exit_code) == ("complete", 0), out.lines
    assert (project / "app.py").read_text() == FAREWELL  # p2's own turns, not p1's again
    states = progress(project, load_roadmap(path))
    assert states["p1"].status == "done" and states["p2"].status == "done_with_concerns"
    assert states["p2"].concern == "apply: no test covers farewell"
