"""The interview's question in the notebook: one question at a time, beside the convergence chart.

:class:`QuestionPanel` shows the round header and the question, an answer
box with Send, one button per offered candidate, "You decide" (auto-answer)
and "Skip"; round 0 gets "Confirm topology", an auto-answer awaiting
confirmation gets "Accept" / "Reject". Every button sends plain answer text
through ``send`` (in a notebook: ``NotebookRunner.answer``), exactly what
``%odin answer`` would send, so both paths are the same. The chart is a PNG
of :func:`odin_magic.render.charts.interview_convergence`, rendered from the
interview's rounds.
"""

from __future__ import annotations

import html
from typing import Callable

from odin_magic.interview.models import InterviewState, PendingQuestion
from odin_magic.interview.runner import convergence_points
from odin_magic.notebook.panels import close_tree
from odin_magic.notebook.parser import in_notebook

Send = Callable[[str], None]


def convergence_data(state: InterviewState | None, threshold: float = 0.15):
    """What the live convergence chart of ``state`` draws (an empty chart at ``threshold`` when there is none
    yet): a :class:`~odin_magic.render.charts.ConvergenceData`."""
    from odin_magic.render.charts import ConvergenceData, InterviewRound

    if state is None:
        return ConvergenceData((), threshold)
    rounds = tuple(InterviewRound(round=n, ambiguity=a, challenge=c) for n, a, c in convergence_points(state))
    return ConvergenceData(rounds, state.threshold)


def convergence_png(state: InterviewState) -> bytes:
    from odin_magic.render.charts import chart_png

    return chart_png(convergence_data(state))


# A button keeps its label on one line and cuts it with "…": an option's answer wraps instead.
_OPTION_STYLE = ("<style>.odin-option.jupyter-button{white-space:normal;height:auto;min-height:28px;"
                 "text-align:left;line-height:1.3;padding:3px 8px}</style>")


class QuestionPanel:
    def __init__(self, question: PendingQuestion, send: Send, stage: str = "interview",
                 state: InterviewState | None = None):
        import ipywidgets as w

        def button(**kw):  # as wide as its label: the default fixed width cuts "Confirm topology" and options
            return w.Button(layout=w.Layout(width="auto", max_width="100%"), **kw)

        self.question = question
        self._send_fn = send
        self.answer_box = w.Textarea(placeholder="your answer", layout=w.Layout(width="100%", height="60px"))
        self.send_button = button(description="Send answer", button_style="primary", icon="paper-plane")
        self.send_button.on_click(lambda _b: self._send(self.answer_box.value))
        self.option_buttons: list = []
        for i, option in enumerate(question.options, 1):
            # the whole answer on the button, as wide as its label (the default fixed width cuts it)
            b = button(description=f"{i}) {option.answer}", tooltip=option.why or option.answer)
            b.add_class("odin-option")  # wraps a long answer (_OPTION_STYLE) instead of cutting it
            b.on_click(lambda _b, k=i: self._send(str(k)))
            self.option_buttons.append(b)
        self.decide_button = button(description="You decide", icon="magic")
        self.decide_button.on_click(lambda _b: self._send("you decide"))
        self.skip_button = button(description="Skip", icon="forward")
        self.skip_button.on_click(lambda _b: self._send("skip"))
        self.confirm_button = button(description="Confirm topology", button_style="success", icon="check")
        self.confirm_button.on_click(lambda _b: self._send("confirm"))
        self.accept_button = button(description="Accept", button_style="success")
        self.accept_button.on_click(lambda _b: self._send("yes"))
        self.reject_button = button(description="Reject", button_style="warning")
        self.reject_button.on_click(lambda _b: self._send("no"))
        self.message = w.HTML()

        quick: list = []
        if question.kind == "topology":
            quick = [self.confirm_button]
            self.answer_box.placeholder = "or edits: merge A, B | split A -> X, Y | defer C | add NAME"
        elif question.kind == "confirm_auto":
            quick = [self.accept_button, self.reject_button]
            self.answer_box.placeholder = "or your own answer"
        elif question.kind == "question":
            quick = list(self.option_buttons) + ([self.decide_button] if question.allow_auto else []) + [self.skip_button]
        elif question.kind == "challenge":
            quick = [self.skip_button]
        self.buttons = [self.send_button] + quick
        self._close_unused(quick)
        header = html.escape(question.header())
        body = html.escape(question.text)
        panel = w.VBox([
            w.HTML(_OPTION_STYLE + f"<div style='font-size:90%;color:#555'>{html.escape(stage)} · {header}</div>"
                   f"<div style='white-space:pre-wrap;margin:4px 0'><b>{body}</b></div>"),
            w.HBox(quick, layout=w.Layout(flex_flow="row wrap")) if quick else w.HTML(),
            self.answer_box, self.send_button, self.message,
        ], layout=w.Layout(width="100%"))
        children = [panel]
        self.chart = None
        if state is not None and state.rounds:
            panel.layout.width = "60%"  # the convergence chart beside it
            self.chart = w.Image(value=convergence_png(state), format="png", layout=w.Layout(width="40%"))
            children.append(self.chart)
        self.widget = w.HBox(children, layout=w.Layout(border="1px solid #4a7fc1", padding="6px", margin="6px 0"))
        self.widget.add_class("odin-question")

    def _close_unused(self, shown: list) -> None:
        """The buttons made for other kinds of question, never shown: closed, so their state is not kept."""
        for unused in {*self.option_buttons, self.decide_button, self.skip_button, self.confirm_button,
                       self.accept_button, self.reject_button} - set(shown):
            close_tree(unused)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    def _send(self, text: str) -> None:
        text = (text or "").strip()
        if not text or self.send_button.disabled:
            return
        for b in self.buttons:
            b.disabled = True
        self.answer_box.disabled = True
        try:
            self._send_fn(text)
        except Exception as exc:  # an OdinError (e.g. a bad topology edit): show it, let the user try again
            self.message.value = f"<span style='color:#c33'>{html.escape(in_notebook(str(exc)))}</span>"
            for b in self.buttons:
                b.disabled = False
            self.answer_box.disabled = False
            return
        self.message.value = f"Sent: {html.escape(text)}"
