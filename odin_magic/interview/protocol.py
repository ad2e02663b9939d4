"""What the interview asks of a model, and what the model is shown.

The engine owns the procedure and the numbers; a model only proposes,
phrases and scores. :class:`InterviewModel` is that narrow interface. Every
method returns a :class:`Reply`: a structured output (pydantic, see
:mod:`.models`) and the tokens it cost. Implementations: the scripted model
(:mod:`.scripted`, replays YAML) and the Claude model (:mod:`.claude`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar, runtime_checkable

from odin_magic.runs.state import Usage
from odin_magic.interview.convergence import component_ambiguities
from odin_magic.interview.models import (
    AutoAnswer, Candidates, ChallengeProbe, ComponentProposal, ContextFindings, InterviewState,
    QuestionDraft, RoundAssessment
)

T = TypeVar("T")


@dataclass(frozen=True)
class Reply(Generic[T]):
    value: T
    usage: Usage = field(default_factory=Usage)
    # what the user should know about this reply (e.g. that the offline script departs from their answer):
    # told as a notice and kept in the round's notes (interview-log.md)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Exchange:
    """One answered round, as the scorer sees it."""

    round: int
    component: str
    dimension: str
    question: str
    answer: str
    answered_by: str  # user | option | auto
    challenge_kind: str | None = None
    challenge_probe: str | None = None
    challenge_answer: str | None = None


@dataclass(frozen=True)
class InterviewBrief:
    """Everything a model may know about the interview at one moment."""

    task: str
    stage_title: str
    stage_goal: str
    stage_prompt: str
    mode: str
    weights: dict[str, float]
    round: int  # the round being prepared or scored (0: topology)
    stage: str = "interview"  # the stage id
    run_dir: str = ""  # the run directory (where a sub-agent may keep its notes)
    goal: str = ""
    components: tuple[str, ...] = ()  # active, in topology order
    deferred: tuple[str, ...] = ()
    findings: tuple[str, ...] = ()
    transcript: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    criteria: tuple[str, ...] = ()
    open_questions: tuple[str, ...] = ()
    clarity: tuple[str, ...] = ()  # "Name: goal .55 constraints .40 ... -> ambiguity .57"
    feedback: tuple[str, ...] = ()

    @classmethod
    def of(cls, state: InterviewState, *, title: str, goal: str, prompt: str, round: int,
           run_dir: str = "") -> "InterviewBrief":
        amb = component_ambiguities(state)
        clarity = []
        for c in state.active:
            s = state.clarity.get(c.name)
            dims = "  ".join(f"{d} {s.get(d):.2f}" for d in state.weights) if s else "not scored"
            clarity.append(f"{c.name}: {dims} -> ambiguity {amb.get(c.name, 1.0):.2f}")
        transcript = []
        for r in state.rounds:
            if r.challenge and r.challenge.probe:
                transcript.append(f"[round {r.number} challenge: {r.challenge.kind}] Q: {r.challenge.probe}")
                transcript.append(f"A: {r.challenge.answer or '(none)'}")
            transcript.append(f"[round {r.number} | {r.component} | {r.dimension}] Q: {r.question}")
            by = {"auto": " (auto-answer, carried as an assumption)", "skipped": " (skipped)"}.get(r.answered_by, "")
            transcript.append(f"A{by}: {r.answer}")
        return cls(
            task=state.task,
            stage_title=title,
            stage_goal=goal,
            stage_prompt=prompt,
            mode=state.mode,
            weights=dict(state.weights),
            round=round,
            stage=state.stage,
            run_dir=run_dir,
            goal=state.goal,
            components=tuple(c.name for c in state.active),
            deferred=tuple(c.name for c in state.deferred),
            findings=tuple(f"{f.text} ({f.citation})" if f.citation else f.text for f in state.findings),
            transcript=tuple(transcript),
            assumptions=tuple(state.assumptions),
            criteria=tuple(f"[{c.component}] {c.text}" for c in state.criteria),
            open_questions=tuple(
                f"{'[blocking] ' if q.blocking else ''}{q.text}" for q in state.open_questions if not q.resolved
            ),
            clarity=tuple(clarity),
            feedback=tuple(state.feedback),
        )

    def render(self) -> str:
        """The brief as text, for a language model."""
        weights = " / ".join(f"{d} {w:.2f}" for d, w in self.weights.items())
        lines = [
            f"Task: {self.task}",
            f"Stage: {self.stage_title}" + (f" - {self.stage_goal}" if self.stage_goal else ""),
            f"Mode: {self.mode} (clarity dimensions: {weights})",
        ]
        if self.stage_prompt:
            lines += ["", "Domain framing from the loop:", self.stage_prompt.strip()]
        if self.goal:
            lines += ["", f"Underlying goal so far: {self.goal}"]
        if self.components:
            lines += ["", "Active components: " + ", ".join(self.components)]
        if self.deferred:
            lines.append("Deferred (out of scope): " + ", ".join(self.deferred))
        for title, items in (
            ("Context findings (existing code)", self.findings),
            ("Current clarity", self.clarity),
            ("Acceptance criteria so far", self.criteria),
            ("Assumptions carried", self.assumptions),
            ("Open questions", self.open_questions),
            ("Feedback from the human", self.feedback),
            ("Interview so far", self.transcript),
        ):
            if items:
                lines += ["", f"{title}:"] + [f"- {i}" if not title.startswith("Interview") else i for i in items]
        return "\n".join(lines)


@runtime_checkable
class InterviewModel(Protocol):
    """The model-facing part of the deep interview. Calls may come from several threads at once."""

    def propose_components(self, brief: InterviewBrief) -> Reply[ComponentProposal]:
        """Round 0: split the work into 1 to 6 top-level components."""

    def explore(self, brief: InterviewBrief) -> Reply[ContextFindings]:
        """Brownfield only: read-only findings about the existing code, each cited as file:line."""

    def ask_question(self, brief: InterviewBrief, component: str, dimension: str) -> Reply[QuestionDraft]:
        """Phrase exactly one question about ``component``'s ``dimension``."""

    def research_candidates(self, brief: InterviewBrief, question: str) -> Reply[Candidates]:
        """Auto-research: 2 to 3 ranked candidate answers to ``question`` (read-only)."""

    def auto_answer(self, brief: InterviewBrief, question: str) -> Reply[AutoAnswer]:
        """Auto-answer: one conservative, reversible default for a question the user opted out of."""

    def challenge(self, brief: InterviewBrief, kind: str) -> Reply[ChallengeProbe]:
        """One contrarian / simplifier / ontologist probe against the emerging spec."""

    def score_round(self, brief: InterviewBrief, exchange: Exchange) -> Reply[RoundAssessment]:
        """Re-score clarity after ``exchange`` and report the entities, criteria and questions it produced."""
