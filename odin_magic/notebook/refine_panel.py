"""A refine proposal in the notebook: its diff with Apply and Reject buttons (``%odin refine``)."""

from __future__ import annotations

import html
from typing import Callable

import ipywidgets as w

from odin_magic.learning.refine import Proposal
from odin_magic.render.refine_view import diff_html


def proposal_panel(proposal: Proposal, apply: Callable[[str], str], reject: Callable[[str], str]):
    """The notebook's panel for one proposal: its diff, Apply and Reject. ``apply``/``reject`` return a message."""
    title = w.HTML(f"<b>{html.escape(proposal.id)}</b>: {html.escape(proposal.title)}"
                   + (" <i>[model-written]</i>" if proposal.written_by == "model" else "")
                   + f"<br><span class='odin-muted'>{html.escape(proposal.evidence.summary)}</span>")
    diff = w.HTML(diff_html(proposal.diff))
    apply_button = w.Button(description="Apply", button_style="success", tooltip=f"apply {proposal.id}")
    reject_button = w.Button(description="Reject", button_style="danger", tooltip=f"reject {proposal.id}")
    status = w.HTML(f"status: {proposal.status}")
    box = w.VBox([title, diff, w.HBox([apply_button, reject_button]), status])
    box.add_class("odin-proposal")

    def decide(action: Callable[[str], str]):
        def click(_):
            try:
                message = action(proposal.id)
            except Exception as exc:  # an OdinError (stale, invalid) is shown, never raised into the widget
                message = f"refused: {getattr(exc, 'message', exc)}"
            else:
                apply_button.disabled = reject_button.disabled = True
            status.value = html.escape(message)
        return click

    apply_button.on_click(decide(apply))
    reject_button.on_click(decide(reject))
    box.apply_button, box.reject_button, box.status = apply_button, reject_button, status
    if proposal.status != "proposed":
        apply_button.disabled = reject_button.disabled = True
    return box
