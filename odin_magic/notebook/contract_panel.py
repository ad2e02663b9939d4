"""The question of a roadmap phase's contract interview in the notebook (docs/roadmap.md, 'The contract interview').

:func:`answer_contract` is what ``%odin answer`` does with a reply to it. :class:`ContractQuestionPanel` is the
interview's own :class:`~odin_magic.notebook.interview_panel.QuestionPanel` (options, You decide, Skip, Confirm
topology, ...), shown where ``%odin roadmap run`` stops at the interview and by ``%odin question``: its buttons
send their plain answer text through :func:`answer_contract`, exactly as ``%odin answer`` would; the next
question replaces it, and once the interview is finished the panel says so (``%odin roadmap run`` goes on). A panel
whose question is no longer the one waiting (answered by a newer panel, ``%odin answer`` or a terminal) sends
nothing: it says so, and ``%odin question`` shows the current one.
"""

from __future__ import annotations

import html

from odin_magic.engine.roadmap_interview import ContractInterview
from odin_magic.interview.models import PendingQuestion
from odin_magic.notebook.panels import close_tree

STALE = "this question was already answered; `%odin question` shows the current one"


def answer_contract(interview: ContractInterview, text: str) -> tuple[PendingQuestion | None, str]:
    """A reply to the contract interview's waiting question: the next question (None once the interview is
    finished) and what the notebook says of it."""
    from odin_magic.interview.awaiting import render_question

    question = interview.answer(text)
    if question is None:
        return None, interview.converged_line().replace("`odin roadmap run`", "`%odin roadmap run`")
    return question, render_question(question) + "\n→ %odin answer ..."


class ContractQuestionPanel:
    """The waiting ``question`` of ``interview`` (a :class:`ContractInterview`) with the interview's buttons."""

    def __init__(self, interview: ContractInterview, question: PendingQuestion):
        import ipywidgets as w

        # what the interview tells as it goes (a round scored, the topology confirmed) is shown below the question
        self.interview = ContractInterview(interview.project, interview.phase_id, interview.settings, tell=self._note)
        self.notes = w.HTML()
        self.finished = w.HTML()
        self.question_panel = None
        self.question = question
        self.widget = w.VBox([], layout=w.Layout(width="100%"))
        self.widget.add_class("odin-contract-question")
        self._show(question)

    def _show(self, question: PendingQuestion) -> None:
        from odin_magic.notebook.interview_panel import QuestionPanel

        old = self.question_panel
        self.question = question
        self.question_panel = QuestionPanel(question, self._send, stage=f"phase {self.interview.phase_id}'s contract",
                                            state=self.interview.state())
        self.widget.children = [self.question_panel.widget, self.notes]
        if old is not None:
            close_tree(old.widget)

    def _send(self, text: str) -> None:
        """A button's (or Send's) answer text: what ``%odin answer TEXT`` does, only while the question it shows
        is the one waiting; an error is the panel's to show."""
        if not self._still_waiting():
            self._close(STALE)
            return
        question, said = answer_contract(self.interview, text)
        if question is not None:
            self._show(question)
            return
        self._close(said)

    def _still_waiting(self) -> bool:
        """Whether the interview's waiting question (read from its file) is the one this panel shows."""
        state = self.interview.state()
        pending = state.pending if state is not None and state.phase != "done" else None
        shown = self.question
        return pending is not None and (pending.kind, pending.round, pending.text) == (shown.kind, shown.round,
                                                                                      shown.text)

    def _close(self, said: str) -> None:
        """The question's buttons go; ``said`` (the interview finished, or the question was already answered) stays."""
        self.finished.value = f"<div style='white-space:pre-wrap'>{html.escape(said)}</div>"
        self.widget.children = [self.finished, self.notes]
        close_tree(self.question_panel.widget)
        self.question_panel = None

    def _note(self, text: str) -> None:
        self.notes.value += f"<div class='odin-muted'>{html.escape(text)}</div>"

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


def show_contract_question(interview: ContractInterview, question: PendingQuestion | None = None) -> None:
    """Display the panel of ``interview``'s waiting question (read from its files when not given), if one waits."""
    from IPython.display import display

    question = question if question is not None else interview.question()
    if question is not None:
        display(ContractQuestionPanel(interview, question).widget)
