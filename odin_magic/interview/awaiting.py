"""What the engine catches from a deep-interview stage: :class:`AwaitingAnswer`.

A module of its own, with nothing heavy to import, so that the engine (and
every front end that loads it) does not import the interview package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from odin_magic.runs.state import InterviewSummary, Usage
    from odin_magic.interview.models import PendingQuestion


class AwaitingAnswer(Exception):
    """The interview waits for the user's answer to ``question``; the run pauses (resumable)."""

    def __init__(self, question: "PendingQuestion", usage: "Usage", summary: "InterviewSummary"):
        super().__init__(f"{question.header()}: {question.text}")
        self.question = question
        self.usage = usage
        self.summary = summary

    @property
    def text(self) -> str:
        return render_question(self.question)


def render_question(q: "PendingQuestion") -> str:
    """The question as a terminal shows it: the header line, the question, its options, the commands."""
    lines = [q.header(), q.text]
    for i, opt in enumerate(q.options, 1):
        extra = f" — {opt.why}" if opt.why else ""
        lines.append(f"  {i}) {opt.answer} [{opt.confidence}]{extra}")
    if q.kind == "topology":
        lines.append("answer: confirm | merge A, B | split A -> X, Y | defer C | add NAME | rename A -> B")
    elif q.kind == "confirm_auto":
        lines.append("answer: yes | no | your own answer")
    elif q.kind == "challenge":
        lines.append("answer: your answer to the challenge | `skip`")
    elif q.kind == "question":
        hints = ["your answer"] + (["a number to pick an option"] if q.options else [])
        hints += ["`you decide`"] if q.allow_auto else []
        hints += ["`skip`"]
        lines.append("answer: " + " | ".join(hints))
    return "\n".join(lines)
