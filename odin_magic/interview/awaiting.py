"""What the engine catches from a deep-interview stage: :class:`AwaitingAnswer`.

A module of its own, with nothing heavy to import, so that the engine (and
every front end that loads it) does not import the interview package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..state import InterviewSummary, Usage
    from .models import PendingQuestion


class AwaitingAnswer(Exception):
    """The interview waits for the user's answer to ``question``; the run pauses (resumable)."""

    def __init__(self, question: "PendingQuestion", usage: "Usage", summary: "InterviewSummary"):
        super().__init__(f"{question.header()}: {question.text}")
        self.question = question
        self.usage = usage
        self.summary = summary

    @property
    def text(self) -> str:
        from .runner import render_question

        return render_question(self.question)
