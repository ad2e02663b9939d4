"""Run state: seed 000's state.json, field for field, plus odin-magic's additions.

``RunState.to_json()`` writes exactly the seed's fields (``interview`` only
when present) and, after them, the additions: ``usage``, ``dry``,
``failure_reason``, ``no_progress``, ``ended_at``, ``log_seq``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.dataclasses import dataclass

RunStatus = Literal["running", "awaiting_approval", "awaiting_answer", "blocked", "done", "failed", "abandoned"]
#: awaiting_answer: a deep-interview stage waits for the user's answer (see Engine.answer).
#: blocked: the run waits for the human to fix something no loopback can (``RunState.blocked`` says
#: what; see odin_magic.engine.routing); ``odin run`` continues it.
ACTIVE_STATUSES = ("running", "awaiting_approval", "awaiting_answer", "blocked")

#: History's gate vocabulary (seed 000): ``ai`` an ai gate auto-passed (or was
#: judged and failed); ``ai-pending`` an ai+human/human stage passed AI judgment
#: and paused (or was judged and failed); ``approved`` the human approved.
HistoryGate = Literal["ai", "ai-pending", "approved"]


class _State(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Usage(_State):
    """Tokens and estimated cost, for one call, one stage or one run."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cost_usd: float = 0.0
    # the part of cost_usd that calls answered by the offline scripted model would have cost on Claude:
    # an estimate, never spent (see report.cost_text)
    offline_usd: float = 0.0

    @property
    def total_tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_creation_input_tokens
            + self.cache_read_input_tokens
        )

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            cost_usd=round(self.cost_usd + other.cost_usd, 6),
            offline_usd=round(self.offline_usd + other.offline_usd, 6),
        )


class RunUsage(_State):
    total: Usage = Field(default_factory=Usage)
    by_stage: dict[str, Usage] = Field(default_factory=dict)

    def add(self, stage: str, usage: Usage) -> "RunUsage":
        by_stage = dict(self.by_stage)
        by_stage[stage] = by_stage.get(stage, Usage()) + usage
        return RunUsage(total=self.total + usage, by_stage=by_stage)


class InterviewSummary(_State):
    """The write contract of seed 000: what ``status`` reads of an interview."""

    threshold: float
    rounds: int
    ambiguity: float
    topology: list[str]
    accepted: bool | None = None  # addition: True once the user accepted the residual ambiguity (`proceed`)


class Streak(_State):
    """Consecutive failures of one stage with one normalized reason (``RunState.repeats``)."""

    stage: str
    signature: str
    count: int


BlockKind = Literal["environment", "repeated", "judge", "unattended", "tampered"]


class Blocked(_State):
    """Why a ``blocked`` run waits for the human (``RunState.blocked``), and what to do."""

    kind: BlockKind
    stage: str
    reason: str
    fix: str


class PendingCheckpoint(_State):
    """The checkpoint of a stage execution that has begun and not been gated yet (``RunState.checkpoint``)."""

    stage: str
    before: str


class Concern(_State):
    """A judge's non-blocking finding on a pass, carried forward (seed 002's DONE_WITH_CONCERNS)."""

    stage: str
    text: str


class Frozen(_State):
    """A file a passed gate froze (``RunState.frozen``, keyed by its artifact path: ``harness/test_x.py``
    in the run dir, ``src/a.py`` in the project, by the placement rule of :mod:`odin_magic.loop.artifacts`),
    or a folder or glob under which no file may appear (``sha256`` None). See docs/scope.md."""

    stage: str  # the stage whose gate froze it
    point: int  # the history entry of that gate (a revert to before it unfreezes)
    sha256: str | None = None  # the file's content (a link's: its target); None for a folder or glob
    mode: str | None = None  # "x" an executable file, "l" a symbolic link; None a plain file


class Revert(_State):
    """A revert of the run (``RunState.reverts``): when, where in the history, and why (folded from a
    ``reverted`` record; see :func:`odin_magic.runs.fold.revert_of`)."""

    at: str
    stage: str  # the stage the run continues from
    execution: int  # the stage execution whose checkpoint the tree went back to (its history entry number)
    point: int  # how many history entries came before the revert
    reason: str  # "reverted to before fix #3 by the user"


@dataclass(slots=True, config=ConfigDict(extra="ignore"))
class HistoryEntry:
    """One gate evaluation in ``RunState.history`` (seed 000's history entry).

    A slotted pydantic dataclass rather than a ``BaseModel``: a run keeps every
    entry in memory, and a model's per-instance ``__dict__`` and field set cost
    about 1 KB an entry (116 MB at 100,000 entries) where the slots cost about
    110 bytes. It validates and serialises as the models do (same fields, same
    order, ``None`` left out of state.json), and offers their ``model_validate``
    and ``model_dump``.
    """

    stage: str
    result: Literal["pass", "fail"]
    gate: HistoryGate
    at: str
    agent: str | None = None  # set for stages that ran in a fresh context
    reason: str | None = None  # why a gate failed (fail entries)
    evidence: str | None = None  # run-dir-relative path of the gate's evidence file
    failure: Literal["recoverable", "environment", "repeated", "blocked"] | None = None  # fail entries: the routing class
    checkpoint: str | None = None  # the project tree before this stage execution (odin_magic.runs.checkpoints)
    after: str | None = None  # ... and after its work, before its gate
    evidence_sha256: str | None = None  # the evidence line's sha256 as the engine wrote it (runs/evidence_seal.py)
    evidence_bytes: int | None = None  # ... and its length (None in runs of earlier versions)

    @classmethod
    def model_validate(cls, data: Any) -> "HistoryEntry":
        """An entry from its JSON object (a dict); a ``ValidationError`` when it is not one."""
        return _ENTRY.validate_python(data)

    def model_dump(self, *, mode: Literal["json", "python"] = "python", exclude_none: bool = False) -> dict[str, Any]:
        return _ENTRY.dump_python(self, mode=mode, exclude_none=exclude_none)


_ENTRY = TypeAdapter(HistoryEntry)


class DryOptions(_State):
    """What a dry run remembers so that a plain ``run`` continues it the same way.

    The gate script is kept whole; how far it has been consumed is a position
    per stage (``used``), so a gate's record carries one number, not the rest
    of the script.
    """

    gates: list[str] = Field(default_factory=list)  # the "stage:fail" items, in order
    used: dict[str, int] = Field(default_factory=dict)  # per stage: how many of its items are consumed
    approve_all: bool = False
    stage_delay: float = 0.0
    run_commands: bool = False  # run gate.run commands too (default: skipped, recorded as such)

    @property
    def remaining(self) -> list[str]:
        """The items not consumed yet, in order."""
        skip = dict(self.used)
        out = []
        for item in self.gates:
            stage = item.partition(":")[0]
            if skip.get(stage, 0) > 0:
                skip[stage] -= 1
            else:
                out.append(item)
        return out


class RunState(_State):
    run_id: str
    loop: str
    task: str
    started_at: str
    status: RunStatus = "running"
    current_stage: str
    iterations: dict[str, int] = Field(default_factory=dict)
    total_iterations: int = 0
    max_iterations: int
    artifacts: dict[str, str] = Field(default_factory=dict)
    interview: InterviewSummary | None = None
    history: list[HistoryEntry] = Field(default_factory=list)
    # -- odin-magic additions ------------------------------------------------
    usage: RunUsage = Field(default_factory=RunUsage)
    dry: DryOptions | None = None
    failure_reason: str | None = None
    no_progress: int = 0
    ended_at: str | None = None
    feedback: str | None = None  # a pending revision request (cleared by the next gate)
    blocked: Blocked | None = None  # set while status is "blocked"
    checkpoint: PendingCheckpoint | None = None  # set while a stage execution is under way
    tree: str | None = None  # the project tree as the run last left it (a checkpoint id; odin_magic.engine.rewind)
    forked_from: str | None = None  # "RUN_ID@N": this run is a fork of point N of that run
    forked_to: str | None = None  # the run that forked this one (which is then abandoned)
    concerns: list[Concern] = Field(default_factory=list)  # judges' concerns on passes, oldest first
    repeats: Streak | None = None  # the current streak of identical failures (odin_magic.engine.routing)
    reverts: list[Revert] | None = None  # the run's reverts, oldest first (None, left out of state.json: none)
    frozen: dict[str, Frozen] | None = None  # artifacts later stages may not change (odin_magic.engine.frozen)
    log_seq: int = 0  # sequence number of the last event-log record folded in

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    def to_json(self) -> dict:
        """state.json's object (what ``model_dump_json(exclude_none=True)`` writes), history entries included."""
        return self.model_dump(mode="json", exclude_none=True)
