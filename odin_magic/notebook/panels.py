"""The panels a paused run shows in its live view: :class:`ApprovalPanel` (approve, request changes, revert,
stop) and :class:`AnswerPanel` (the interview's waiting question); their buttons call :class:`RunActions`.

A panel's buttons may be clicked while the background drive's thread updates the view: each click is handled
once (no double submit), and an action refused meanwhile shows its message in the panel.
"""

from __future__ import annotations

import html
import threading
from typing import Callable, Protocol, Sequence

from odin_magic.render.displays import AWAITING, VerdictRecord, html_mark
from odin_magic.notebook.parser import in_notebook


def close_tree(widget) -> None:
    """Close ``widget`` and every widget it holds (children, layout, style, ...): their comms end, and a
    front end forgets their state (JupyterLab saves none of it; nor does :mod:`.headless`)."""
    from ipywidgets import Widget

    todo, seen = [widget], set()
    while todo:
        w = todo.pop()
        if not isinstance(w, Widget) or id(w) in seen:
            continue
        seen.add(id(w))
        for name in w.keys:
            value = getattr(w, name, None)
            todo.extend(value if isinstance(value, (tuple, list)) else [value])
        w.close()


class RunActions(Protocol):
    """What the views' buttons call (the notebook's :class:`~odin_magic.notebook.actions.NotebookRunner`)."""

    def approve(self) -> None: ...
    def revise(self, feedback: str) -> None: ...
    def stop(self) -> None: ...
    def answer(self, text: str) -> None: ...
    def revert(self, stage: str) -> None: ...


class ApprovalPanel:
    """At an ai+human pause: the stage, its artifacts, why the gate passed, and the three buttons."""

    def __init__(self, stage: str, previews: Sequence[tuple[str, str]], verdict: VerdictRecord | None,
                 actions: RunActions, diff=None):
        """``diff``: the paused stage execution's :class:`~odin_magic.runs.diffs.StageDiff` (None: not known)."""
        import ipywidgets as w

        self.stage = stage
        self.actions = actions
        self.pause: tuple | None = None  # the pause_key it was shown for
        auto = w.Layout(width="auto")
        self.approve_button = w.Button(description="Approve", button_style="success", icon="check", layout=auto)
        self.revise_button = w.Button(description="Request changes", button_style="warning", icon="edit",
                                      layout=w.Layout(width="auto"))
        self.stop_button = w.Button(description="Stop", button_style="danger", icon="stop",
                                    tooltip="Leave the run paused; continue it later", layout=w.Layout(width="auto"))
        self.feedback = w.Textarea(placeholder="What should change? (for Request changes)",
                                   layout=w.Layout(width="100%", height="70px"))
        self.message = w.HTML()
        self.revert_button = w.Button(description="Revert this stage", icon="undo", layout=w.Layout(width="auto"),
                                      tooltip="Restore the files to before this stage ran; the run continues from it")
        self.buttons = (self.approve_button, self.revise_button, self.revert_button, self.stop_button)
        self._clicked = threading.Lock()
        self.approve_button.on_click(lambda _b: self._once(self._approve))
        self.revise_button.on_click(lambda _b: self._once(self._revise))
        self.stop_button.on_click(lambda _b: self._once(self._stop))
        self.revert_button.on_click(lambda _b: self._once(self._revert))

        why = ""
        if verdict is not None:
            lines = verdict.detail_lines() or ["- the gate's checks passed"]
            why = "<b>Why the gate passed</b><ul>" + "".join(
                f"<li>{html.escape(line[2:])}</li>" for line in lines) + "</ul>"
        items = [w.HTML(f"<h4 style='margin:4px 0'>{html_mark(AWAITING)} <code>{html.escape(stage)}</code> passed its gate "
                        "and waits for your approval</h4>" + why)]
        if previews:
            acc = w.Accordion(children=[w.HTML(f"<pre style='white-space:pre-wrap;max-height:300px;overflow:auto'>"
                                               f"{html.escape(text)}</pre>") for _n, text in previews])
            for i, (name, _t) in enumerate(previews):
                acc.set_title(i, name)
            items.append(acc)
        if diff is not None:
            self.diff_html = w.HTML(f"<b>What the stage changed</b> — {len(diff.files)} file(s)"
                                    + "".join(_diff_file_html(f) for f in diff.files))
            self.diff_html.add_class("odin-stage-diff")
            items.append(self.diff_html)
        items += [self.feedback, w.HBox(list(self.buttons)), self.message]
        self.widget = w.VBox(items, layout=w.Layout(border="1px solid #e0a040", padding="6px", margin="6px 0"))
        self.widget.add_class("odin-approval")

    def _once(self, fn: Callable[[], None]) -> None:
        if not self._clicked.acquire(blocking=False):
            return  # a second click while the first is handled: no double submit
        for b in self.buttons:
            b.disabled = True
        try:
            fn()
        except Exception as exc:  # e.g. the run was approved from a cell meanwhile
            self.message.value = f"<span style='color:#c33'>{html.escape(in_notebook(str(exc)))}</span>"

    def _approve(self) -> None:
        self.message.value = "Approved: the run continues in the background."
        self.actions.approve()

    def _revise(self) -> None:
        text = self.feedback.value.strip()
        if not text:
            self.message.value = "<span style='color:#c33'>Write what should change first.</span>"
            for b in self.buttons:
                b.disabled = False
            self._clicked.release()
            return
        self.feedback.disabled = True
        self.message.value = "Changes requested: the stage runs again with your feedback."
        self.actions.revise(text)

    def _revert(self) -> None:
        self.message.value = f"Reverting {html.escape(self.stage)}: the files go back to before it ran."
        self.actions.revert(self.stage)
        self.message.value = (f"Reverted: the files are as before {html.escape(self.stage)} ran; "
                              "%odin run runs it again.")

    def _stop(self) -> None:
        self.message.value = "Stopped here; the run stays paused. %odin approve or %odin run continues it later."
        self.actions.stop()


def _diff_file_html(f) -> str:
    from odin_magic.render.diff_view import file_html

    return file_html(f)


class AnswerPanel:
    """The interview's waiting question, an answer box and Send (the interview may offer richer widgets)."""

    def __init__(self, stage: str, question: str, actions: RunActions):
        import ipywidgets as w

        self.stage = stage
        self.actions = actions
        self.answer_box = w.Textarea(placeholder="your answer", layout=w.Layout(width="100%", height="60px"))
        self.send_button = w.Button(description="Send answer", button_style="primary", icon="paper-plane")
        self.message = w.HTML()
        self.send_button.on_click(self._send)
        self.buttons = [self.send_button]
        self.widget = w.VBox([
            w.HTML(f"<h4 style='margin:4px 0'>{html_mark(AWAITING)} <code>{html.escape(stage)}</code> asks</h4>"
                   f"<pre style='white-space:pre-wrap'>{html.escape(question or '(see %odin status)')}</pre>"),
            self.answer_box, self.send_button, self.message,
        ], layout=w.Layout(border="1px solid #4a7fc1", padding="6px", margin="6px 0"))
        self.widget.add_class("odin-answer")

    def _send(self, _button) -> None:
        text = self.answer_box.value.strip()
        if not text or self.send_button.disabled:
            return
        self.send_button.disabled = True
        self.answer_box.disabled = True
        try:
            self.actions.answer(text)
            self.message.value = "Answer sent: the interview continues in the background."
        except Exception as exc:
            self.message.value = f"<span style='color:#c33'>{html.escape(in_notebook(str(exc)))}</span>"
