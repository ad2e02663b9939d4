"""The live run view and the approval panel, driven by a real engine's events (no kernel needed:
ipywidgets work in a plain process, and ``button.click()`` fires ``on_click``)."""

from __future__ import annotations

from pathlib import Path

from support.nbtools import write_tiny_loop
from odin_magic.engine.orchestrator import Engine
from odin_magic.runs.events import EngineEvent
from odin_magic.runs.state import DryOptions
from odin_magic.notebook.widgets import RunView, TextRunView, ViewSources


class Recorder:
    """RunActions that record what the buttons asked for, and drive the real engine for approve/revise."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.calls: list[tuple[str, str]] = []

    def approve(self) -> None:
        self.calls.append(("approve", ""))
        self.engine.approve()

    def revise(self, feedback: str) -> None:
        self.calls.append(("revise", feedback))
        self.engine.revise(feedback)

    def stop(self) -> None:
        self.calls.append(("stop", ""))

    def answer(self, text: str) -> None:
        self.calls.append(("answer", text))


def drive(tmp_path: Path, gates: list[str]):
    write_tiny_loop(tmp_path)
    engine = Engine(tmp_path)
    loop = engine.catalog.load("tiny")
    actions = Recorder(engine)
    view = RunView(loop, tmp_path, actions, state_source=lambda: engine.status())
    engine.listener = view.handle_event
    state = engine.start("tiny", "write notes", dry=DryOptions(gates=gates))
    view.show_state(state)
    return engine, view, actions, state


def test_the_live_view_follows_a_run_with_a_loopback(tmp_path):
    engine, view, actions, state = drive(tmp_path, ["review:fail"])
    assert state.status == "awaiting_approval"
    assert view.progress.value == 1 and view.progress.max == 5
    assert "1 / 5 loopbacks" in view.progress_label.value
    checklist = view.checklist.value
    assert "title='passed' style='color:#1a7f37;font-weight:bold'>✓</span> <code>write</code>" in checklist
    assert "title='waiting for you' style='color:#9a6700;font-weight:bold'>‖</span> <code>review</code>" in checklist
    assert "title='not started' style='color:#888;font-weight:bold'>○</span> <code>finish</code>" in checklist
    streamed = "".join(o["text"] for o in view.output.outputs)
    assert "── write ──" in streamed and "dry run: wrote notes.md" in streamed and "gate failed" in streamed
    assert [(v.stage, v.passed) for v in view.verdicts] == [("write", True), ("review", False), ("write", True),
                                                           ("review", True)]
    assert "review:fail" in view.verdicts_html.value and "<details>" in view.verdicts_html.value
    assert "(4)" in view.verdicts_box.get_title(0)
    assert view.stop_button.disabled  # paused: the approval panel has its own buttons


def test_the_approval_panel_previews_artifacts_and_approves_once(tmp_path):
    engine, view, actions, _ = drive(tmp_path, [])
    panel = view.approval
    assert panel is not None and panel.stage == "review"
    titles = [panel.widget.children[1].get_title(i) for i in range(len(panel.widget.children[1].children))]
    assert titles == ["review.md"]
    preview = panel.widget.children[1].children[0].value
    assert "dry run" in preview.lower() or "review" in preview.lower()
    panel.approve_button.click()
    panel.approve_button.click()
    assert actions.calls == [("approve", "")]
    assert all(b.disabled for b in panel.buttons)
    assert engine.status().status == "done"


def test_request_changes_needs_feedback_then_revises(tmp_path):
    engine, view, actions, _ = drive(tmp_path, [])
    panel = view.approval
    panel.revise_button.click()  # no feedback yet: nothing is sent, the buttons come back
    assert actions.calls == [] and not panel.approve_button.disabled
    assert "Write what should change" in panel.message.value
    panel.feedback.value = "mention the units"
    panel.revise_button.click()
    assert actions.calls == [("revise", "mention the units")]
    assert engine.status().status == "awaiting_approval"


def test_the_stop_button_asks_the_actions_to_stop(tmp_path):
    write_tiny_loop(tmp_path)
    engine = Engine(tmp_path)
    actions = Recorder(engine)
    view = RunView(engine.catalog.load("tiny"), tmp_path, actions)
    view.stop_button.click()
    assert actions.calls == [("stop", "")] and view.stop_button.disabled
    assert "stop requested" in view.status_line.value


def test_the_text_view_prints_one_line_per_event(tmp_path):
    write_tiny_loop(tmp_path)
    lines: list[str] = []
    view = TextRunView(lines.append)
    engine = Engine(tmp_path, listener=view.handle_event)
    engine.start("tiny", "t", dry=DryOptions(gates=["review:fail"]))
    text = "\n".join(lines)
    assert "review gate failed" in text and "awaiting approval" in text
    assert not any("<" in line and ">" in line and "</" in line for line in lines)  # text, not HTML


def test_a_view_opened_later_reads_the_verdicts_from_the_evidence_when_the_section_opens(tmp_path):
    engine, _, actions, state = drive(tmp_path, ["review:fail"])
    later = RunView(engine.catalog.load("tiny"), tmp_path, actions, state, sources=ViewSources(run_dir_for=engine.run_dir))
    assert later.verdicts == [] and "(4)" in later.verdicts_box.get_title(0)  # counted, not read yet
    assert later.approval is not None and later.approval.stage == "review"
    assert later.approval.widget.children[0].value.count("<li>") >= 1  # the paused stage's verdict: read for it
    later.verdicts_box.selected_index = 0  # the user opens the section
    assert [(v.stage, v.passed) for v in later.verdicts] == [("write", True), ("review", False), ("write", True),
                                                            ("review", True)]
    assert "scripted failure" in later.verdicts[1].reasons[0]


def test_a_run_waiting_for_an_answer_no_longer_says_it_is_working(tmp_path):
    engine, view, actions, state = drive(tmp_path, [])
    view.handle_event(EngineEvent("stage_started", state.run_id, "write"))
    assert "working on" in view.status_line.value
    view.show_state(state.model_copy(update={"status": "awaiting_answer"}))
    assert "working on" not in view.status_line.value and view.answer_panel is not None


def test_the_live_view_and_the_evidence_list_a_gate_command_alike(tmp_path):
    from odin_magic.render.displays import VerdictRecord

    _, view, _, state = drive(tmp_path, [])
    for code, timed_out in ((0, False), (1, False), (None, True)):
        view.handle_event(EngineEvent("gate_command", state.run_id, "review", f"check {code}",
                                      {"exit_code": code, "timed_out": timed_out}))
    view.handle_event(EngineEvent("gate_failed", state.run_id, "review", "checks failed", {"next_stage": "write"}))
    live = view.verdicts[-1].commands
    assert live == ["✓ check 0", "✗ check 1 (exit 1)", "✗ check None (timed out)"]
    evidence = {"stage": "review", "passed": False,
                "commands": [{"cmd": f"check {c}", "exit_code": c, "timed_out": t}
                             for c, t in ((0, False), (1, False), (None, True))]}
    assert VerdictRecord.from_evidence(evidence).commands == live


def test_a_usage_event_shows_the_runs_total_tokens_and_cost(tmp_path):
    from odin_magic.runs.state import Usage

    _, view, _, state = drive(tmp_path, [])
    total = Usage(input_tokens=1000, output_tokens=200, cache_read_input_tokens=34, cost_usd=0.0123)
    view.handle_event(EngineEvent("usage", state.run_id, "write", data={"stage": total.model_dump(),
                                                                         "total": total.model_dump()}))
    assert view.usage.value == "tokens 1,234, cost $0.0123"


DIFF_LOOP = """
name: docs
max_iterations: 3
stages:
  - id: write
    produces: [docs/notes.md]
    gate: {mode: ai+human, check: the notes exist}
"""


class Reverting(Recorder):
    def revert(self, stage: str) -> None:
        self.calls.append(("revert", stage))
        self.engine.revert(stage)


def test_the_approval_panel_shows_the_stage_diff_and_reverts_it(tmp_path):
    loops = tmp_path / ".odin-loop" / "loops"
    loops.mkdir(parents=True)
    (loops / "docs.yaml").write_text(DIFF_LOOP)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "old.md").write_text("kept\n")
    engine = Engine(tmp_path)
    actions = Reverting(engine)
    view = RunView(engine.catalog.load("docs"), tmp_path, actions, state_source=lambda: engine.status(),
                   sources=ViewSources(diff=lambda st: engine.diff(run_id=st.run_id)))
    engine.listener = view.handle_event
    view.show_state(engine.start("docs", "notes", dry=DryOptions()))
    panel = view.approval
    assert panel is not None and panel.stage == "write"
    shown = panel.diff_html.value
    assert "What the stage changed" in shown and "1 file(s)" in shown
    assert "<details class='odin-diff-file'><summary><code>docs/notes.md</code>" in shown and "+1" in shown
    assert view.verdicts[-1].changes == ["docs/notes.md (added, +1 -0)"]  # the verdicts list the changed files
    assert "changed docs/notes.md (added, +1 -0)" in view.verdicts_html.value
    panel.revert_button.click()
    assert actions.calls == [("revert", "write")]
    assert not (tmp_path / "docs" / "notes.md").exists() and (tmp_path / "docs" / "old.md").read_text() == "kept\n"
    state = engine.status()
    assert (state.status, state.current_stage) == ("running", "write")
    assert "reverted to before execution 1 (write)" in view.status_line.value


class Handle:
    """A display handle that records what the view's display was updated to."""

    def __init__(self):
        self.shown: list[dict] = []

    def update(self, obj) -> None:
        self.shown.append(obj._repr_mimebundle_())


def widget_tree(widget) -> list:
    from ipywidgets import Widget

    found, todo = [], [widget]
    while todo:
        w = todo.pop()
        if isinstance(w, Widget) and w not in found:
            found.append(w)
            for name in w.keys:
                value = getattr(w, name, None)
                todo.extend(value if isinstance(value, (tuple, list)) else [value])
    return found


def test_a_view_whose_run_ends_becomes_its_status_and_closes_its_widgets(tmp_path):
    """Issue 18 item 10: an ended run's view is static (its status as HTML and text); its widgets are closed,
    so no front end keeps their state."""
    engine, view, actions, _ = drive(tmp_path, [])
    view.display_handle = Handle()
    panel = view.approval
    tree = widget_tree(view.widget)
    assert view.widget.comm is not None and len(tree) > 20  # live: boxes, labels, their layouts and styles
    panel.approve_button.click()
    view.show_state(engine.status())  # the drive's end (the notebook runner's finisher)
    assert view.frozen is not None and view.display_handle.shown[-1] == view.frozen
    assert set(view.frozen) == {"text/plain", "text/html"}
    assert "done" in view.frozen["text/plain"] and view.frozen["text/plain"].startswith("run      ")
    assert all(w.comm is None for w in tree + widget_tree(panel.widget))
    view.show_state(engine.status())  # a frozen view stays as it is
    assert view._repr_mimebundle_() == view.frozen


def test_a_retired_view_freezes_and_says_where_the_run_went(tmp_path):
    _, view, _, _ = drive(tmp_path, [])
    view.display_handle = Handle()
    tree = widget_tree(view.widget)
    view.retire()
    shown = view.display_handle.shown[-1]
    assert "awaiting approval" in shown["text/plain"] and shown["text/plain"].endswith("(continued in a later cell)")
    assert "continued in a later cell" in shown["text/html"] and "application/vnd.jupyter.widget-view+json" not in shown
    assert all(w.comm is None for w in tree)


def test_a_panel_taken_down_is_closed(tmp_path):
    engine, view, _, state = drive(tmp_path, [])
    panel = view.approval
    view.handle_event(EngineEvent("stage_started", state.run_id, "finish"))
    assert view.approval is None and all(w.comm is None for w in widget_tree(panel.widget))


def test_the_cost_reads_the_same_from_the_start(tmp_path):
    """No "$0.0000" before the first usage: the cost appears, worded as everywhere, with the first usage."""
    view = RunView(None, tmp_path, Recorder(None))
    assert "$" not in view.usage.value and view.usage.value.startswith("tokens 0")


def test_the_view_is_sent_again_only_when_its_text_changed(tmp_path):
    """A front end draws the whole view anew on each display update, and a click on a button of the view it
    replaces is lost: the same pause shown twice (announced, then the drive's end) sends no second update."""
    from IPython.display import display
    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output

    start_ipython()
    engine, view, actions, state = drive(tmp_path, [])
    with capture_output() as shown:
        view.display_handle = display(view, display_id=True)
        view.show_state(engine.status())  # the pause it already shows
        view.show_state(engine.status())
    assert len(shown.outputs) == 1  # the first display, no update
    view.approval.approve_button.click()
    with capture_output() as shown:
        view.show_state(engine.status())  # done: a new text
        view.show_state(engine.status())
    assert len(shown.outputs) == 1 and "done" in shown.outputs[0].data["text/plain"]
