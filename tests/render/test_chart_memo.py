"""A live view's chart is drawn only when what it shows changed (a drawing costs ~0.2 s of a kernel's CPU)."""

from __future__ import annotations

from dataclasses import dataclass, field

from IPython.utils.capture import capture_output

import pytest

from odin_magic.render import charts
from odin_magic.render.charts import (
    ChartHandle, ConvergenceData, InterviewRound, RunChartData, chart_png, interview_convergence, png_bytes,
    run_chart, run_chart_data,
)
from odin_magic.runs.state import RunState

PNG = b"\x89PNG"


@pytest.fixture(autouse=True)
def empty_memo():
    """Each test starts from an empty memo (it is the process's: another test's drawings would be in it)."""
    charts._MEMO = charts._PngMemo()
    yield
    charts._MEMO = charts._PngMemo()


@dataclass(frozen=True)
class Counted:
    """Chart data that records each drawing of its figure."""

    value: float
    drawings: list = field(default_factory=list, compare=False, hash=False)

    def figure(self):
        self.drawings.append(self.value)
        return interview_convergence((InterviewRound(1, self.value),), 0.15)


def test_a_handle_draws_again_only_when_its_data_changed_and_a_new_cell_reuses_the_last_drawing():
    drawings: list = []
    data = {"now": Counted(0.61, drawings)}
    first = ChartHandle(lambda _state: data["now"])
    with capture_output():
        first.show(None)
        png = first.png
        first.update(None)
        first.update(None)  # nothing changed: nothing drawn, the image shown stands
        assert drawings == [0.61]
        data["now"] = Counted(0.42, drawings)
        first.update(None)
        assert drawings == [0.61, 0.42] and first.png != png
        second = ChartHandle(lambda _state: data["now"])  # the next cell's live view: the same picture
        second.show(None)
        assert drawings == [0.61, 0.42] and second.png == first.png
        data["now"] = Counted(0.61, drawings)  # back to a picture drawn before
        second.update(None)
        assert drawings == [0.61, 0.42] and second.png == png
    assert png.startswith(PNG)


def test_the_charts_from_data_are_the_charts_drawn_from_the_state():
    state = RunState(run_id="r", loop="l", task="t", started_at="2026-12-03T00:00:00Z", current_stage="b",
                     max_iterations=3, total_iterations=1, iterations={"a": 1})
    data = run_chart_data(state, ["a", "b"])
    assert isinstance(data, RunChartData) and data == run_chart_data(state, ["a", "b"])
    assert hash(data) == hash(run_chart_data(state, ["a", "b"]))
    assert chart_png(data, dpi=72) == png_bytes(run_chart(state, ["a", "b"]), dpi=72)
    assert chart_png(data, dpi=72) != chart_png(data)  # the memo keys on the resolution too
    rounds = (InterviewRound(1, 0.8), InterviewRound(2, 0.3, "contrarian"))
    assert chart_png(ConvergenceData(rounds, 0.2)) == png_bytes(interview_convergence(rounds, 0.2))
