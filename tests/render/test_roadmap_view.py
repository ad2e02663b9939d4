"""`odin roadmap`'s view (issue 22 item 1 and 6): each phase's status, iterations, cost and run from its runs
(a real run through the engine, the Claude worker and the SDK against the scripted model), the checkboxes alone
without runs, progress bars in HTML, and a cost the offline model answered shown as the estimate it is."""

from __future__ import annotations

from odin_magic.loop.roadmap import ROADMAP_FILE, parse_roadmap
from odin_magic.render.roadmap_view import RoadmapDisplay, roadmap_display, roadmap_rows
from odin_magic.engine.orchestrator import Engine
from odin_magic.workers.config import Settings
from odin_magic.workers.factory import make_worker

ROADMAP = """\
# Notes
## M1 Write
- [ ] p1.1 Write the notes
- [x] p1.2 Review them — by hand
## M2 Later
- [ ] p2.1 Publish <them> & more
"""

LOOP = """\
name: one
max_iterations: 2
memory: false
regression: false
stages:
  - id: write
    goal: Write the notes.
    produces: [docs/notes.md]
    gate: {mode: ai, check: docs/notes.md exists}
"""

SCRIPT = """\
stages:
  write:
    - tools: [{write: {file_path: docs/notes.md, content: "notes\\n"}}]
    - text: written
default_verdict: {passed: true, reasons: [the notes exist]}
"""


def test_without_runs_the_checkboxes_are_shown():
    roadmap, _ = parse_roadmap(ROADMAP, "roadmap.md")
    shown = RoadmapDisplay(roadmap, roadmap_rows(roadmap)).text()
    assert shown.splitlines() == [
        f"roadmap: Notes   (autonomy: hitl; {ROADMAP_FILE})",
        "M1 Write  [#####-----] 1/2",
        "  [ ] p1.1 Write the notes        pending",
        "  [x] p1.2 Review them            done",
        "      — by hand",
        "M2 Later  [----------] 0/1",
        "  [ ] p2.1 Publish <them> & more  pending",
        "3 phase(s): 2 pending, 1 done",
    ]


def test_a_phase_run_gives_status_iterations_an_offline_cost_and_the_report(project, write_loop):
    write_loop(LOOP)
    (project / ROADMAP_FILE).write_text(ROADMAP, encoding="utf-8")
    script = project.parent / "one.script.yaml"
    script.write_text(SCRIPT, encoding="utf-8")
    engine = Engine(project, worker=make_worker(Settings.from_env(env={}, script=str(script)), project))
    state = engine.start("one", "roadmap phase p1.1: Write the notes")
    assert state.status == "done", state.failure_reason
    shown = roadmap_display(project)
    text = shown.text()
    row = next(line for line in text.splitlines() if "p1.1" in line)
    assert "done" in row and "1 iteration" in row and f"run {state.run_id}" in row
    assert "offline" in row and "≈" in row  # the scripted model's cost: an estimate, never spent
    assert f"report: .odin-loop/runs/{state.run_id}/report.md" in text
    page = shown._repr_html_()
    assert "<progress value='1' max='2'" in page or "<progress value='2' max='2'" in page
    assert f"href='.odin-loop/runs/{state.run_id}/report.md'" in page
    assert "Publish &lt;them&gt; &amp; more" in page
