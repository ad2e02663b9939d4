"""The offline scripted model is honest about being a recording: it says when an answer departs from
what the script was recorded with, and its usage reads as an estimate, never as money spent."""

from __future__ import annotations

from pathlib import Path

from odin_magic.render.charts import run_chart
from odin_magic.workers.config import Settings
from odin_magic.render.displays import RunsDisplay, StatusDisplay
from odin_magic.engine.orchestrator import Engine
from odin_magic.runs.events import EngineEvent
from odin_magic.render.text import render_status
from odin_magic.notebook.widgets import RunView
from odin_magic.workers.factory import make_worker
from support import REPO

SCRIPT = REPO / "example_notebooks" / "quickstart.script.yaml"
TASK = "a tiny calculator module: add(a, b) and divide(a, b); dividing by zero raises ValueError"
ESTIMATE = "if run on Claude; nothing spent"


def _engine(project: Path, events: list) -> Engine:
    return Engine(project, worker=make_worker(Settings.from_env(env={}, script=SCRIPT), project),
                  listener=events.append)


def _said(events: list[EngineEvent], words: str) -> list[str]:
    return [e.text for e in events if words in e.text or words in str(e.data)]


def test_the_offline_script_says_when_an_answer_departs_from_its_recording(project, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    events: list[EngineEvent] = []
    engine = _engine(project, events)
    engine.start("spec-harness-tdd", TASK)
    engine.answer("confirm")
    engine.answer("2")  # the recording picked option 1
    [note] = _said(events, "the offline script assumes")
    assert note.startswith('round 1: the offline script assumes option 1 ("ints and floats; results as Python '
                           'computes them (divide is true division)"); the spec follows the script, not your answer')
    engine.answer("Raise ValueError, never ZeroDivisionError.")  # the recorded answer, in other case and with a stop
    state = engine.answer("standard library only, a module under src/")
    assert len(_said(events, "the offline script assumes")) == 1  # only the departing answer is told
    assert (state.status, state.current_stage) == ("awaiting_approval", "interview")
    log = (engine.run_dir(state.run_id) / "interview-log.md").read_text()
    assert "note: round 1: the offline script assumes option 1" in log


def test_offline_usage_is_labelled_an_estimate_in_status_the_live_view_and_charts(project, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    events: list[EngineEvent] = []
    engine = _engine(project, events)
    engine.start("spec-harness-tdd", TASK)
    for reply in ("confirm", "1", "raise ValueError, never ZeroDivisionError", "standard library only, a module under src/"):
        engine.answer(reply)
    state = engine.approve()  # the plan stage runs on the Claude worker over the offline script, and pauses
    assert (state.status, state.current_stage) == ("awaiting_approval", "plan")
    total = state.usage.total
    assert total.cost_usd > 0 and total.offline_usd == total.cost_usd  # all of it offline: nothing spent
    estimate = f"≈ ${total.offline_usd:.2f} {ESTIMATE}"

    loop = engine.loop_for(state.run_id)
    assert estimate in render_status(state, loop)  # odin status
    status = StatusDisplay(state, loop)
    assert estimate in status.text() and estimate in status._repr_html_()  # %odin status
    assert f"<td>≈ ${total.offline_usd:.2f} offline</td>" in RunsDisplay([state])._repr_html_()  # %odin runs' cost
    assert ESTIMATE in run_chart(state).axes[1].get_title()  # the run chart

    view = RunView(loop, project, actions=None, state_source=engine.status)
    usage = [e for e in events if e.kind == "usage"][-1]
    view.handle_event(usage)  # the live view's usage line
    assert view.usage.value.endswith(ESTIMATE) and "≈ $" in view.usage.value


def test_real_usage_reads_as_money_spent():
    from odin_magic.render.text import cost_text
    from odin_magic.runs.state import Usage

    assert cost_text(Usage(cost_usd=0.0123)) == "$0.0123"
    assert cost_text(Usage(cost_usd=0.3, offline_usd=0.2)) == "$0.1000 spent, plus ≈ $0.20 if the offline part had run on Claude"
