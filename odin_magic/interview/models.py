"""The deep interview's data: what the model returns and what the engine keeps.

Two families of pydantic models live here:

* structured outputs, which a model answers with (``ComponentProposal``,
  ``QuestionDraft``, ``Candidates``, ``AutoAnswer``, ``ChallengeProbe``,
  ``RoundAssessment``, ``ContextFindings``); the Claude model gets them through
  ``messages.parse``, the scripted model reads them from YAML;
* the persisted interview (``InterviewState`` with its ``Component``s,
  ``ClarityScores``, ``RoundRecord``s, ...), written to the run dir after every
  transition so that a restarted kernel resumes at its round.

Bounds a model might break (2 to 3 candidates, 1 to 6 components) are checked
by the engine, not by the schema, so a slightly-off reply is trimmed or refused
with a clear message instead of failing to parse.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Dimension = Literal["goal", "constraints", "criteria", "context"]
DIMENSIONS: tuple[str, ...] = ("goal", "constraints", "criteria", "context")
Confidence = Literal["high", "medium", "low"]
ChallengeKind = Literal["contrarian", "simplifier", "ontologist"]
EntityType = Literal["core", "supporting", "external"]


class _Output(BaseModel):
    """A structured output: unknown keys are ignored so a chatty reply still parses."""

    model_config = ConfigDict(extra="ignore")


# -- structured outputs ------------------------------------------------------


class ProposedComponent(_Output):
    name: str = Field(description="Short component name, e.g. 'Ingestion'.")
    summary: str = Field(default="", description="One line: what this part of the work is.")


class ComponentProposal(_Output):
    goal: str = Field(default="", description="The underlying goal (why), in one or two sentences.")
    components: list[ProposedComponent] = Field(
        description="1 to 6 top-level components, each a part that could have its own goal and criteria."
    )


class Finding(_Output):
    text: str = Field(description="A fact about the existing code that the work must fit into.")
    citation: str = Field(default="", description="Where it is stated, as file:line.")


class ContextFindings(_Output):
    findings: list[Finding] = Field(default_factory=list)


class QuestionDraft(_Output):
    question: str = Field(description="Exactly one question, in the user's language.")
    offer_candidates: bool = Field(
        default=False,
        description="True when this is a research or architecture choice the user may have no fixed answer to.",
    )


class Candidate(_Output):
    answer: str = Field(description="A one-line candidate answer.")
    why: str = Field(default="", description="Why it fits the confirmed constraints.")
    risk: str = Field(default="", description="Its main risk or trade-off.")
    confidence: Confidence = "medium"


class Candidates(_Output):
    candidates: list[Candidate] = Field(description="2 to 3 ranked, mutually distinct candidate answers, best first.")
    recommendation: str = Field(default="", description="A one-line recommendation.")
    uncertainty: str = Field(default="", description="The biggest uncertainty the user must still confirm.")


class AutoAnswer(_Output):
    assumption: str = Field(description="One decisive, conservative, reversible answer, phrased as an assumption.")
    rationale: list[str] = Field(default_factory=list, description="2 to 4 bullets citing context or repo facts.")
    confidence: Confidence = "low"
    uncertainty: str | None = Field(default=None, description="What the user must still confirm, or null.")


class ChallengeProbe(_Output):
    probe: str = Field(description="The one challenge question that attacks the emerging spec from its angle.")
    target: str = Field(default="", description="The assumption, component or entity the probe attacks.")


class ScoreUpdate(_Output):
    component: str = Field(description="The component's name, exactly as in the topology.")
    rationale: str = Field(default="", description=(
        "Before the scores: what the transcript settles for this component and what is still open, "
        "measured against the anchors 0.3 (vague), 0.6 (main case settled), 0.9 (a tester could write the checks)."))
    goal: float | None = Field(default=None, description="Clarity 0..1 of the goal (why, what goes in and out).")
    constraints: float | None = Field(default=None, description="Clarity 0..1 of the constraints.")
    criteria: float | None = Field(default=None, description="Clarity 0..1 of the acceptance criteria.")
    context: float | None = Field(default=None, description="Clarity 0..1 of the fit with existing code.")


class Entity(_Output):
    name: str
    type: EntityType = "core"
    fields: list[str] = Field(default_factory=list, description="Its fields or relations.")


class CriterionUpdate(_Output):
    component: str
    text: str = Field(description="An observable, testable acceptance criterion (Given-When-Then when possible).")
    testable: bool = True


class OpenQuestionUpdate(_Output):
    text: str
    blocking: bool = False


class RoundAssessment(_Output):
    """The model's reading of the interview after one answer."""

    scores: list[ScoreUpdate] = Field(
        default_factory=list, description="Re-scored components; a component not listed keeps its scores."
    )
    entities: list[Entity] = Field(default_factory=list, description="Every key entity named so far.")
    goal: str | None = Field(default=None, description="The underlying goal, when the answer changed it.")
    criteria: list[CriterionUpdate] = Field(default_factory=list, description="New acceptance criteria.")
    edge_cases: list[str] = Field(default_factory=list, description="New edge cases.")
    out_of_scope: list[str] = Field(default_factory=list, description="New explicit non-goals.")
    open_questions: list[OpenQuestionUpdate] = Field(default_factory=list, description="New open questions.")
    resolved_questions: list[str] = Field(default_factory=list, description="Open questions this answer resolved.")
    challenge_outcome: str | None = Field(default=None, description="What the round's challenge led to, if any.")


# -- persisted interview ----------------------------------------------------------


class _Kept(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Component(_Kept):
    id: str  # C1, C2, ...
    name: str
    summary: str = ""
    status: Literal["active", "deferred"] = "active"


class ClarityScores(_Kept):
    """Clarity 0..1 per dimension of one component; a new component starts at 0 everywhere."""

    goal: float = 0.0
    constraints: float = 0.0
    criteria: float = 0.0
    context: float = 0.0

    def get(self, dimension: str) -> float:
        return float(getattr(self, dimension))


class Criterion(_Kept):
    component: str
    text: str
    round: int = 0


class OpenQuestion(_Kept):
    text: str
    blocking: bool = False
    resolved: bool = False
    round: int = 0
    source: Literal["model", "skip", "hard_cap", "user", "accepted"] = "model"  # accepted: left by `proceed`


class ChallengeRecord(_Kept):
    kind: ChallengeKind
    round: int
    probe: str = ""
    answer: str | None = None
    outcome: str | None = None
    skipped_reason: str | None = None  # e.g. the ontologist when ambiguity <= 0.3


class AutoAssistNote(_Kept):
    kind: Literal["research", "auto_answer"]
    text: str


class RoundRecord(_Kept):
    number: int
    component: str
    dimension: str
    ambiguity_before: float
    question: str
    options: list[Candidate] = Field(default_factory=list)
    answer: str = ""
    answered_by: Literal["user", "auto", "option", "skipped"] = "user"
    auto_answer: AutoAnswer | None = None
    challenge: ChallengeRecord | None = None
    scores: dict[str, ClarityScores] = Field(default_factory=dict)  # after the round, active components
    component_ambiguity: dict[str, float] = Field(default_factory=dict)
    ambiguity: float = 1.0
    worst: str = ""
    entities: int = 0
    stability: float | None = None
    stable: int = 0
    renamed: int = 0
    capped: list[str] = Field(default_factory=list)  # "Component.dimension" held at the auto-answer cap
    assist: list[AutoAssistNote] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    at: str = ""


PendingKind = Literal["topology", "challenge", "question", "confirm_auto"]


class PendingQuestion(_Kept):
    """What the interview is waiting for the user to answer."""

    kind: PendingKind
    round: int
    text: str
    component: str | None = None
    dimension: str | None = None
    ambiguity: float = 1.0
    options: list[Candidate] = Field(default_factory=list)
    allow_auto: bool = False  # "you decide" is on offer
    challenge: ChallengeKind | None = None

    def header(self) -> str:
        """The line shown above the question: round, component, dimension, ambiguity."""
        if self.kind == "topology":
            return "Round 0 | Topology"
        parts = [f"Round {self.round}"]
        if self.component:
            parts.append(f"Component: {self.component}")
        if self.kind == "challenge" and self.challenge:
            parts.append(f"Challenge: {self.challenge}")
        elif self.dimension:
            parts.append(f"Targeting: {self.dimension}")
        parts.append(f"Ambiguity: {round(self.ambiguity * 100)}%")
        return " | ".join(parts)


class Draft(_Kept):
    """A round awaiting its answer (or a decision about an auto-answer)."""

    record: RoundRecord  # its ``challenge`` holds the round's challenge, if one fired
    question: QuestionDraft | None = None
    proposed: RoundAssessment | None = None  # an auto-answer's assessment awaiting the user's yes/no


InterviewPhase = Literal["topology", "questioning", "done"]


class InterviewState(_Kept):
    stage: str
    task: str
    threshold: float
    hard_cap: int
    challenges: list[str]
    auto_assist: bool
    weights: dict[str, float]
    mode: Literal["greenfield", "brownfield"]
    phase: InterviewPhase = "topology"
    goal: str = ""
    components: list[Component] = Field(default_factory=list)
    next_component: int = 1
    topology_confirmed_at: str | None = None
    findings: list[Finding] = Field(default_factory=list)
    clarity: dict[str, ClarityScores] = Field(default_factory=dict)
    lifted_by: dict[str, dict[str, str]] = Field(default_factory=dict)  # component -> dimension -> user|auto
    entities: list[Entity] = Field(default_factory=list)
    criteria: list[Criterion] = Field(default_factory=list)
    assumptions: list[str] = Field(default_factory=list)
    edge_cases: list[str] = Field(default_factory=list)
    out_of_scope: list[str] = Field(default_factory=list)
    open_questions: list[OpenQuestion] = Field(default_factory=list)
    rounds: list[RoundRecord] = Field(default_factory=list)
    pending: PendingQuestion | None = None
    draft: Draft | None = None
    skipped: list[str] = Field(default_factory=list)  # "Component.dimension" the user skipped
    round_cap: int = 0  # the round at which this block of questioning stops (hard_cap, extended on reopen)
    warned: bool = False
    stopped_by: Literal["converged", "hard_cap", "user"] | None = None
    #: ``proceed``: the run ambiguity the user accepted (the gate passes on it; cleared when the interview reopens)
    accepted_ambiguity: float | None = None
    feedback: list[str] = Field(default_factory=list)
    attempt: int = 0  # the stage attempt (engine iterations) this interview last ran for
    started_at: str = ""
    ended_at: str | None = None

    # -- derived views ------------------------------------------------------
    @property
    def active(self) -> list[Component]:
        return [c for c in self.components if c.status == "active"]

    @property
    def deferred(self) -> list[Component]:
        return [c for c in self.components if c.status == "deferred"]

    @property
    def round(self) -> int:
        """The number of rounds answered so far."""
        return len(self.rounds)

    def component(self, name: str) -> Component | None:
        key = name.strip().casefold()
        for c in self.components:
            if c.name.casefold() == key or c.id.casefold() == key:
                return c
        return None
