"""A roadmap's progress derived from the runs' event logs and the record log; repairs of roadmap.md."""

from __future__ import annotations

from odin_magic.engine.orchestrator import Engine
from odin_magic.loop.roadmap import ROADMAP_FILE, load_roadmap
from odin_magic.runs.roadmap_progress import (
    ROADMAP_LOG, append_record, phase_of_task, phase_task, progress, read_records, repair, repairs,
)
from odin_magic.runs.state import DryOptions

LINEAR = """
name: linear
max_iterations: 1
stages:
  - id: a
    produces: [a.md]
    gate: {mode: ai, check: a exists}
"""

ROADMAP = """\
# Demo

autonomy: autonomous

## M1 First

- [ ] p1 The first phase
- [ ] p2 The second phase

## M2 Second

- [ ] p3 The third phase
"""


def _project(project, write_loop, text=ROADMAP):
    write_loop(LINEAR)
    path = project / ROADMAP_FILE
    path.write_text(text)
    return path


def _run(project, phase, gates=()):
    return Engine(project).start("linear", phase_task(phase), dry=DryOptions(gates=list(gates), approve_all=True))


def test_task_tags_find_the_runs_of_a_phase():
    from odin_magic.loop.roadmap import Phase

    phase = Phase(id="p1.1", title="Parse it", done=False, milestone="M1", line=3)
    assert phase_of_task(phase_task(phase)) == "p1.1" and phase_of_task("fix the bug") is None


def test_progress_from_runs_done_escalated_pending(project, write_loop):
    path = _project(project, write_loop)
    roadmap = load_roadmap(path)
    p1, p2, _ = roadmap.phases()
    assert _run(project, p1).status == "done"
    assert _run(project, p2, gates=["a:fail", "a:fail"]).status == "failed"
    states = progress(project, roadmap)
    assert states["p1"].status == "done" and states["p1"].iterations == 1 and len(states["p1"].runs) == 1
    assert states["p2"].status == "escalated" and states["p2"].iterations == 2 and "max_iterations" in states["p2"].reason
    assert states["p3"].status == "pending" and states["p3"].runs == []


def test_repairs_follow_the_runs_and_are_shown(project, write_loop):
    path = _project(project, write_loop, ROADMAP.replace("- [ ] p3", "- [x] p3"))
    roadmap = load_roadmap(path)
    p1, p2, _ = roadmap.phases()
    _run(project, p1)
    _run(project, p2, gates=["a:fail", "a:fail"])
    found = repairs(project, roadmap)
    assert len(found) == 2, found  # p3 [x] without any run: done by hand, left alone
    assert found[0].startswith("roadmap.md:7: p1 was [ ]") and "now [x]" in found[0]
    assert "p2's note was (none); the runs say escalated" in found[1] and "[ ]" not in found[1]  # its box stays
    before = path.read_text()
    assert repair(project, roadmap, path) == found
    after = load_roadmap(path)
    assert [(p.done, (p.note or "").split(":")[0]) for p in after.phases()] == [(True, ""), (False, "escalated"), (True, "")]
    assert before.splitlines()[:6] == path.read_text().splitlines()[:6]
    assert repairs(project, after) == []
    # a hand edit that unchecks a done phase and checks an escalated one is repaired again
    path.write_text(path.read_text().replace("- [x] p1", "- [ ] p1").replace("- [ ] p2 The second phase — ", "- [x] p2 The second phase — "))
    again = repairs(project, load_roadmap(path))
    assert len(again) == 2 and "p1 was [ ]" in again[0] and "p2 was [x]" in again[1]


def test_record_log_pauses_approvals_and_retry(project, write_loop):
    path = _project(project, write_loop)
    roadmap = load_roadmap(path)
    p1 = roadmap.phases()[0]
    append_record(project, "paused", "p1", kind="start")
    assert progress(project, roadmap)["p1"].status == "paused" and progress(project, roadmap)["p1"].pause == "start"
    append_record(project, "approved", "p1", kind="start")
    assert progress(project, roadmap)["p1"].status == "pending"
    run = _run(project, p1, gates=["a:fail", "a:fail"])
    append_record(project, "retry", "p1", ignore=[run.run_id])
    assert progress(project, roadmap)["p1"].status == "pending" and progress(project, roadmap)["p1"].runs == []
    (project / ROADMAP_LOG).open("a").write('{"at": "x", "type": "outc')  # a torn last line
    assert [r.type for r in read_records(project)] == ["paused", "approved", "retry"]
    append_record(project, "skipped", "p1")
    assert [r.type for r in read_records(project)] == ["paused", "approved", "retry", "skipped"]
    assert progress(project, roadmap)["p1"].status == "skipped"


def test_a_not_started_phases_contract_changed_inside_a_drive_is_blamed_on_that_drive_only(project, write_loop):
    """The drive windows in roadmap.jsonl: `started`/`resumed` … `drove` of p1's run, each with p2's contract hash."""
    from odin_magic.runs.roadmap_progress import driven_change

    _project(project, write_loop)

    def drive(kind, p2, run="r1", phase="p1"):
        append_record(project, kind, phase, run_id=run, contracts={"p1": "a", "p2": p2})

    reason = "contract .odin-loop/contracts/p2.yaml changed while phase p1's run drove (run r1)"
    drive("started", "x")
    assert driven_change(read_records(project), "p2", "x") is None
    assert driven_change(read_records(project), "p2", "y") == reason  # while it drives (or it crashed)
    drive("drove", "x")
    assert driven_change(read_records(project), "p2", "y") is None  # after the drive: a person's edit
    drive("resumed", "y")  # edited at the pause between two drives of the run: taken
    drive("drove", "z")  # changed inside the second drive
    assert driven_change(read_records(project), "p2", "z") == reason
    assert driven_change(read_records(project), "p2", "w") == reason  # edited again since: still not accepted
    assert driven_change(read_records(project), "p2", "y") is None  # put back
    drive("started", "z", run="r2", phase="p3")  # another drive begins with it still changed: still blamed on r1
    drive("drove", "z", run="r2", phase="p3")
    assert driven_change(read_records(project), "p2", "z") == reason
    append_record(project, "sealed", "p2", contract_sha256="z")  # --accept-contract p2
    assert driven_change(read_records(project), "p2", "z") is None
    drive("started", "z", run="r3", phase="p2")  # p2's own run: its own seal takes over
    drive("drove", "q", run="r3", phase="p2")
    assert driven_change(read_records(project), "p2", "q") is None


def test_a_phase_added_to_the_roadmap_inside_a_drive_is_blamed_on_it_and_one_added_between_drives_is_not(
        project, write_loop):
    """A phase first seen in a `drove` record (not in its drive's `started`/`resumed`) came in during that drive."""
    from odin_magic.runs.roadmap_progress import driven_change

    _project(project, write_loop)
    append_record(project, "started", "p1", run_id="r1", contracts={"p1": "a", "p2": "b"})
    assert driven_change(read_records(project), "p4", "x") is None  # no record knows p4 yet
    append_record(project, "drove", "p1", run_id="r1", contracts={"p1": "a", "p2": "b", "p4": "x"})
    reason = "contract .odin-loop/contracts/p4.yaml changed while phase p1's run drove (run r1)"
    assert driven_change(read_records(project), "p4", "x") == reason  # added during r1's drive
    assert driven_change(read_records(project), "p4", None) == reason  # its contract file gone: still not taken
    append_record(project, "started", "p2", run_id="r2", contracts={"p1": "a", "p2": "b", "p4": "x"})
    append_record(project, "drove", "p2", run_id="r2", contracts={"p1": "a", "p2": "b", "p4": "x"})
    assert driven_change(read_records(project), "p4", "x") == reason  # later drives do not launder it
    append_record(project, "sealed", "p4", contract_sha256="x")  # --accept-contract p4
    assert driven_change(read_records(project), "p4", "x") is None
    # p5, added by a person between drives: first seen in a `started` record, taken as it is
    append_record(project, "started", "p2", run_id="r3", contracts={"p1": "a", "p2": "b", "p4": "x", "p5": "y"})
    append_record(project, "drove", "p2", run_id="r3", contracts={"p1": "a", "p2": "b", "p4": "x", "p5": "y"})
    assert driven_change(read_records(project), "p5", "y") is None


def test_a_phase_added_inside_a_drive_that_never_ended_is_blamed_on_it(project, write_loop):
    """A crash mid-drive: the next record of a drive (its run's `resumed`) is the first to name the added phase."""
    from odin_magic.runs.roadmap_progress import driven_change

    _project(project, write_loop)
    append_record(project, "started", "p1", run_id="r1", contracts={"p1": "a", "p2": "b"})
    append_record(project, "resumed", "p1", run_id="r1", contracts={"p1": "a", "p2": "b", "p4": "x"})
    reason = "contract .odin-loop/contracts/p4.yaml changed while phase p1's run drove (run r1)"
    assert driven_change(read_records(project), "p4", "x") == reason
