"""Issue 10 item 8: a click on the approval or question panel the moment it appears works.

The panel appears while the background drive is still announcing its pause (it reports the
result and re-draws the charts). A click then must wait for that drive to end, never be
refused with "the run is busy". These tests hold the drive in that last moment (an on_finish
hook that waits on an event), click, then let the drive end: deterministic, no sleeps. The
browser test (tests/test_browser.py) clicks Approve as soon as the panel shows.
"""

from __future__ import annotations

import threading

from support.interview_loops import INTERVIEW_ONLY_LOOP
from support.nbtools import write_tiny_loop
from odin_magic.engine.orchestrator import Engine
from odin_magic.interview import ScriptedInterviewModel
from odin_magic.interview.runner import DeepInterviewRunner
from odin_magic.notebook.actions import NotebookRunner
from odin_magic.runs.state import DryOptions
from odin_magic.notebook.widgets import RunView, ViewSources
from odin_magic.workers.dry import DryWorker

SCRIPT = """
components: [Ingestion]
rounds:
  default:
    assessment:
      scores: {Ingestion: {goal: .9, constraints: .9, criteria: .9}}
      criteria: {Ingestion: ["Given a CSV of 3 rows, when imported, then 3 rows are stored"]}
"""


def held_runner(project, make_engine):
    """A NotebookRunner whose drives end only once ``release`` is set, and a live view on it."""
    runner = NotebookRunner(project, make_engine)
    release = threading.Event()
    runner.drive.on_finish(lambda outcome: release.wait(60))  # after the pause is announced, before the drive ends
    return runner, release


def view_for(runner, loop_name):
    view = RunView(runner.engine.catalog.load(loop_name), runner.project_dir, runner, state_source=runner.status,
                   sources=ViewSources(question_panel=runner.question_panel, run_dir_for=runner.run_dir))
    runner.attach(view)
    return view


def seen(runner, kind):
    event = threading.Event()
    runner.fanout.subscribe(lambda e: e.kind == kind and event.set())  # after the view: the panel is up by then
    return event


def click_while_the_drive_finishes(runner, release, click, clicked):
    """Click (in a thread, as a comm message would arrive) while the drive is held; then let it end."""
    assert runner.drive.busy  # the panel is up, the drive has not ended
    worker = threading.Thread(target=click)
    worker.start()
    assert clicked.wait(60)  # the click has started (the panel disabled its buttons)
    release.set()
    worker.join(60)
    assert not worker.is_alive()
    outcome = runner.wait(60)  # the drive the click started
    assert outcome is not None and outcome.ok, outcome and outcome.error
    return outcome.result


def test_approve_clicked_as_the_panel_appears_is_not_refused(tmp_path):
    write_tiny_loop(tmp_path)
    runner, release = held_runner(tmp_path, lambda p, listener=None: Engine(p, listener=listener))
    view = view_for(runner, "tiny")
    paused = seen(runner, "paused")
    runner.start("tiny", "write notes", dry=DryOptions())
    assert paused.wait(60)
    panel = view.approval
    assert panel is not None and panel.stage == "review"
    clicked = threading.Event()
    panel.approve_button.observe(lambda change: change["new"] and clicked.set(), names="disabled")
    state = click_while_the_drive_finishes(runner, release, panel.approve_button.click, clicked)
    assert "busy" not in panel.message.value and panel.message.value.startswith("Approved")
    assert ("review", "approved") in [(e.stage, e.gate) for e in state.history]
    assert state.status == "done"


def test_request_changes_clicked_as_the_panel_appears_is_not_refused(tmp_path):
    write_tiny_loop(tmp_path)
    runner, release = held_runner(tmp_path, lambda p, listener=None: Engine(p, listener=listener))
    view = view_for(runner, "tiny")
    paused = seen(runner, "paused")
    runner.start("tiny", "write notes", dry=DryOptions())
    assert paused.wait(60)
    panel = view.approval
    panel.feedback.value = "mention the units"
    clicked = threading.Event()
    panel.revise_button.observe(lambda change: change["new"] and clicked.set(), names="disabled")
    state = click_while_the_drive_finishes(runner, release, panel.revise_button.click, clicked)
    assert "busy" not in panel.message.value
    assert state.status == "awaiting_approval" and state.current_stage == "review"
    assert [e.stage for e in state.history].count("review") == 2  # re-run with the feedback, gated again


def test_stop_clicked_as_the_panel_appears_leaves_the_run_paused(tmp_path):
    write_tiny_loop(tmp_path)
    runner, release = held_runner(tmp_path, lambda p, listener=None: Engine(p, listener=listener))
    view = view_for(runner, "tiny")
    paused = seen(runner, "paused")
    runner.start("tiny", "write notes", dry=DryOptions())
    assert paused.wait(60)
    panel = view.approval
    clicked = threading.Event()
    panel.stop_button.observe(lambda change: change["new"] and clicked.set(), names="disabled")
    click_while_the_drive_finishes(runner, release, panel.stop_button.click, clicked)
    assert panel.message.value.startswith("Stopped here") and "busy" not in panel.message.value
    assert view.approval is panel  # the drive's end kept the clicked panel
    assert runner.status().status == "awaiting_approval"
    runner.approve()  # the stop request did not outlive its drive: a later approval drives on
    assert runner.wait(60).result.status == "done"


def test_an_answer_clicked_as_the_question_panel_appears_is_not_refused(tmp_path):
    loops = tmp_path / ".odin-loop" / "loops"
    loops.mkdir(parents=True)
    (loops / "talk.yaml").write_text(INTERVIEW_ONLY_LOOP, encoding="utf-8")

    def make_engine(project, listener=None):
        engine = Engine(project, worker=DryWorker(DryOptions(), threading.Event()), listener=listener)
        engine.interview_runner = DeepInterviewRunner(ScriptedInterviewModel.from_yaml(SCRIPT),
                                                      record=engine.record_interview)
        return engine

    runner, release = held_runner(tmp_path, make_engine)
    view = view_for(runner, "talk")
    asked = seen(runner, "awaiting_answer")
    runner.start("talk", "import CSV files")  # a real (not dry) run: the interview asks
    assert asked.wait(60)
    panel = view.answer_panel
    assert panel is not None and panel.question.kind == "topology"
    clicked = threading.Event()
    panel.answer_box.observe(lambda change: change["new"] and clicked.set(), names="disabled")
    state = click_while_the_drive_finishes(runner, release, panel.confirm_button.click, clicked)
    assert "busy" not in panel.message.value and panel.message.value == "Sent: confirm"
    assert state.interview is not None and state.interview.rounds >= 0
    assert view.answer_panel is not panel  # the next question's panel replaced it
