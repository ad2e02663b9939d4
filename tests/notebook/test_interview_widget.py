"""The question panel: every button sends the same text `%odin answer` would, to a real interview."""

from __future__ import annotations

from pathlib import Path

from odin_magic.interview import InterviewPlace, InterviewSession, ScriptedInterviewModel
from odin_magic.notebook.interview_panel import QuestionPanel
from odin_magic.loop.schema import Stage

SCRIPT = """
components: [Ingestion, Export]
rounds:
  1:
    question: "Which parser?"
    candidates: [{answer: the csv module, why: stdlib, confidence: high}, {answer: pandas}]
    assessment: {scores: {Ingestion: {goal: .5, constraints: .5, criteria: .5}}}
  default:
    auto_answer: {assumption: "CSV only", confidence: medium}
    assessment: {scores: {Export: {goal: .5}}}
"""


def session(tmp_path: Path) -> InterviewSession:
    stage = Stage.model_validate({"id": "interview", "interview": {"mode": "deep", "challenges": []},
                                  "produces": ["spec.md", "interview-log.md"],
                                  "gate": {"mode": "ai+human", "check": "c"}})
    return InterviewSession.open(InterviewPlace(run_dir=tmp_path / "run", project_dir=tmp_path, stage=stage, task="t"),
                                 ScriptedInterviewModel.from_yaml(SCRIPT))


def test_buttons_and_the_answer_box_answer_the_interview(tmp_path):
    s = session(tmp_path)
    panel = QuestionPanel(s.start(), s.answer, state=s.state)
    assert [b.description for b in panel.buttons] == ["Send answer", "Confirm topology"]
    assert all(b.layout.width == "auto" for b in panel.buttons)  # a fixed width cut "Confirm topolo…"
    # a bad edit typed in the box: the error is shown and the panel stays usable
    panel.answer_box.value = "defer Reporting"
    panel.send_button.click()
    assert "no component named &#x27;Reporting&#x27;" in panel.message.value and not panel.send_button.disabled
    panel.confirm_button.click()
    assert s.pending.round == 1 and panel.send_button.disabled

    panel = QuestionPanel(s.pending, s.answer, state=s.state)
    assert [b.description for b in panel.buttons] == [
        "Send answer", "1) the csv module", "2) pandas", "You decide", "Skip"]
    assert panel.chart is None  # no round answered yet
    assert all("odin-option" in b._dom_classes for b in panel.option_buttons)  # long answers wrap, not cut
    panel.option_buttons[1].click()
    assert s.state.rounds[0].answer == "pandas" and s.pending.round == 2

    panel = QuestionPanel(s.pending, s.answer, state=s.state)
    assert panel.chart is not None and bytes(panel.chart.value).startswith(b"\x89PNG")
    panel.decide_button.click()
    assert s.state.rounds[1].answered_by == "auto"

    panel = QuestionPanel(s.pending, s.answer, state=s.state)
    panel.skip_button.click()
    assert s.state.rounds[2].answered_by == "skipped"

    panel = QuestionPanel(s.pending, s.answer, state=s.state)
    panel.answer_box.value = "  monthly, by the accountant  "
    panel.send_button.click()
    assert s.state.rounds[3].answer == "monthly, by the accountant"


def test_the_convergence_chart_plots_the_rounds_against_the_threshold(tmp_path):
    from odin_magic.notebook.interview_panel import convergence_data

    s = session(tmp_path)
    s.start()
    s.answer("confirm")
    s.answer("the csv module")
    s.answer("an answer")
    ax = convergence_data(s.state).figure().axes[0]
    line, threshold = ax.lines[0], ax.lines[1]
    assert list(line.get_xdata()) == [1, 2]
    assert list(line.get_ydata()) == [r.ambiguity for r in s.state.rounds]
    assert list(threshold.get_ydata()) == [s.state.threshold] * 2
    empty = convergence_data(None, 0.2).figure().axes[0]  # no interview yet: the threshold alone
    assert list(empty.lines[0].get_xdata()) == [] and list(empty.lines[1].get_ydata()) == [0.2, 0.2]
