"""The magics in a real IPython kernel (ipykernel over jupyter_client): the background
drive, output routing, the widgets' buttons, stop, and resuming after a kernel restart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.nbtools import (
    INTERVIEW_SETUP, Kernel, final_text_of, text_of, write_interview_project, write_tiny_loop
)

pytestmark = pytest.mark.slow

MAGICS = "_m = get_ipython().magics_manager.registry['OdinMagics']\n"

WAIT_FOR = MAGICS + """\
import threading
_seen = threading.Event()
_m.runner().fanout.subscribe(lambda e: e.kind == {kind!r} and _seen.set())
_st = _m.runner().active()
if not (_st is not None and {already}):
    assert _seen.wait(60), 'no {kind} event within 60 s'
"""


def wait_for(kind: str, already: str = "False") -> str:
    """A cell that blocks (threading.Event.wait, not asyncio) until the engine emits ``kind``."""
    return WAIT_FOR.format(kind=kind, already=already)


def odin_then_wait_for(line: str, kind: str) -> str:
    """A cell that starts ``%odin line`` and blocks until the engine emits ``kind`` (subscribed first)."""
    return MAGICS + f"""\
import threading
_seen = threading.Event()
_m.runner().fanout.subscribe(lambda e: e.kind == {kind!r} and _seen.set())
get_ipython().run_line_magic('odin', {line!r})
assert _seen.wait(60), 'no {kind} event within 60 s'
"""


@pytest.fixture
def kernel(tmp_path):
    write_tiny_loop(tmp_path)
    k = Kernel(tmp_path)
    k.execute("%load_ext odin_magic")
    yield k
    k.shutdown()


def state_json(project: Path) -> dict:
    runs = sorted((project / ".odin-loop" / "runs").iterdir())
    return json.loads((runs[-1] / "state.json").read_text())


def widget_outputs_text(messages: list[dict]) -> str:
    """Everything the kernel appended to Output widgets (comm state updates)."""
    parts = []
    for msg in messages:
        if msg["msg_type"] not in ("comm_open", "comm_msg"):
            continue
        state = msg["content"].get("data", {}).get("state", {})
        for out in state.get("outputs", []) or []:
            parts.append(out.get("text", "") if isinstance(out, dict) else "")
    return "".join(parts)


def test_a_blocking_cell_runs_while_the_background_drive_advances(kernel, tmp_path):
    started = kernel.execute("%odin run tiny --task t --dry --stage-delay 0.3")
    assert any(m["msg_type"] == "display_data" and "application/vnd.jupyter.widget-view+json" in m["content"]["data"]
               for m in started), "the live view is a widget"
    assert "▶ running" in text_of(kernel.execute("%odin status"))  # the cell returned at once
    blocking = kernel.execute("print('the blocking cell starts while the run works')\n"
                              + wait_for("paused", "_st.status == 'awaiting_approval'")
                              + "print('the blocking cell is done')")
    # the cell's own prints stay in the cell; no background output lands in it
    assert text_of(blocking).split("\n") == ["the blocking cell starts while the run works",
                                              "the blocking cell is done", ""]
    assert state_json(tmp_path)["status"] == "awaiting_approval"
    status = text_of(kernel.execute("%odin status"))
    assert "⏸ review" in status
    kernel.drain()
    streamed = widget_outputs_text(kernel.messages)
    assert "dry run: wrote notes.md" in streamed  # the worker's output went to the run's own Output widget
    assert "── write ──" in streamed


def test_status_mid_run_and_the_approve_button(kernel, tmp_path):
    kernel.execute(odin_then_wait_for("run tiny --task t --dry --stage-delay 0.5", "stage_started"))
    mid = text_of(kernel.execute("%odin status"))
    assert "▶ running" in mid and "write  — next" in mid
    kernel.execute("%odin wait")  # the drive has returned: the panel is on screen
    clicked = kernel.execute(MAGICS + """\
_panel = _m.runner().view.approval
assert _panel is not None and _panel.stage == 'review'
_panel.approve_button.click()
_panel.approve_button.click()   # a double click submits once
print(all(b.disabled for b in _panel.buttons))
""")
    assert text_of(clicked).strip() == "True"
    kernel.execute("%odin wait")
    state = state_json(tmp_path)
    assert state["status"] == "done"
    assert [e["gate"] for e in state["history"]].count("approved") == 1


def test_request_changes_from_the_panel_reruns_the_stage(kernel, tmp_path):
    kernel.execute("%odin run tiny --task t --dry --wait")
    kernel.execute(MAGICS + """\
_panel = _m.runner().view.approval
_panel.feedback.value = 'name the edge cases'
_panel.revise_button.click()
""")
    kernel.execute("%odin wait")
    state = state_json(tmp_path)
    assert state["status"] == "awaiting_approval"
    assert [e["stage"] for e in state["history"]].count("review") == 2
    runs = sorted((tmp_path / ".odin-loop" / "runs").iterdir())
    assert "name the edge cases" in (runs[-1] / "events.jsonl").read_text()


def test_stop_button_then_resume_after_a_kernel_restart(kernel, tmp_path):
    kernel.execute(odin_then_wait_for("run tiny --task t --dry --stage-delay 0.5", "stage_started"))
    kernel.execute(MAGICS + "_m.runner().view.stop_button.click()")
    kernel.execute("%odin wait")
    stopped = state_json(tmp_path)
    assert stopped["status"] == "running"
    assert len(stopped["history"]) <= 1

    # a kernel that dies mid-stage: the run resumes in the new kernel
    kernel.execute(odin_then_wait_for("run", "stage_started"))
    kernel.restart()
    kernel.execute("%load_ext odin_magic")
    resumed = final_text_of(kernel.execute("%odin run --wait"))  # the cell's live view, as the drive left it
    assert "⏸ review" in resumed
    state = state_json(tmp_path)
    assert state["status"] == "awaiting_approval"
    assert [(e["stage"], e["result"]) for e in state["history"]] == [("write", "pass"), ("review", "pass")]

    # another restart: `%odin status` brings back the approval panel, verdicts read from the evidence
    # when their section is opened
    kernel.restart()
    kernel.execute("%load_ext odin_magic")
    kernel.execute("%odin status")
    shown = kernel.execute(MAGICS + """\
_view = _m.runner().view
_view.verdicts_box.selected_index = 0
print([v.stage for v in _view.verdicts])
_view.approval.approve_button.click()
""")
    assert text_of(shown).strip() == "['write', 'review']"
    kernel.execute("%odin wait")
    assert state_json(tmp_path)["status"] == "done"


def test_the_run_chart_is_updated_in_place_from_the_background(kernel, tmp_path):
    kernel.execute("%odin run tiny --task t --dry --gates review:fail")
    kernel.execute(wait_for("paused", "_st.status == 'awaiting_approval'"))
    kernel.execute("%odin wait")
    kernel.drain()
    updates = [m for m in kernel.messages if m["msg_type"] == "update_display_data"]
    assert any("image/png" in m["content"]["data"] for m in updates)


def test_the_live_view_shows_the_interviews_question_panel_and_answers_through_it(tmp_path, monkeypatch):
    write_interview_project(tmp_path, monkeypatch)
    k = Kernel(tmp_path)
    try:
        k.execute(INTERVIEW_SETUP)
        k.execute('%odin run talk --task "review bank CSV imports" --wait')
        k.execute(MAGICS + """\
_view = _m.runner().view
_p = _view.answer_panel
assert type(_p).__name__ == 'QuestionPanel', _p
_p.answer_box.value = 'defer Notifications; confirm'
_p.send_button.click()
""")
        k.execute("%odin wait")
        k.execute(MAGICS + """\
_p2 = _m.runner().view.answer_panel
assert _p2 is not _p and _p2.question.round == 1, _p2
_p2.option_buttons[0].click()
""")
        k.execute("%odin wait")
        status = text_of(k.execute("%odin status"))
    finally:
        k.shutdown()
    state = state_json(tmp_path)
    assert state["status"] == "awaiting_answer" and state["interview"]["rounds"] == 1
    assert "awaiting your answer" in status and "Round 2" in status  # the waiting question, as text
    # what the panel sent reached the interview: the typed topology edit, then the clicked option
    from odin_magic.interview.runner import interview_state

    iv = interview_state(next((tmp_path / ".odin-loop" / "runs").iterdir()))
    assert [c.name for c in iv.active] == ["Ingestion", "Review UI", "Export"]  # Notifications deferred
    assert iv.pending.round == 2 and iv.rounds[0].answered_by == "option"
