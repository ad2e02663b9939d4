"""The worker interface: what the engine asks of whoever does a stage's work.

The engine owns the run (state, gates, loopbacks); a worker only performs a
stage and, separately, judges a gate's ``check``. Implementations: the dry
worker (:mod:`odin_magic.workers.dry`), the Claude worker
(:mod:`odin_magic.workers.claude`), which the scripted model also drives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field, model_validator

from odin_magic.loop.schema import Loop, ResolvedAgent, Stage
from odin_magic.core.commands import CommandEvidence  # noqa: F401 - handed on: a worker's gate evidence
from odin_magic.runs.state import Usage


JudgeStatus = Literal["DONE", "DONE_WITH_CONCERNS", "NEEDS_CONTEXT", "BLOCKED"]


class Verdict(BaseModel):
    """A judge's structured answer about one gate ``check`` (statuses: see :mod:`odin_magic.engine.judging`)."""

    # the reasons and findings come first: the model writes them before it commits to status and passed
    reasons: list[str] = Field(default_factory=list, description="Your analysis first: what the evidence shows "
                               "about each part of the check, citing it.")
    blocking: list[str] = Field(default_factory=list, description="Findings that must be fixed before advancing.")
    non_blocking: list[str] = Field(default_factory=list, description="Findings that may wait (concerns).")
    questions: list[str] = Field(
        default_factory=list, description="NEEDS_CONTEXT: what you need to know, as questions a read-only "
        "explorer of the project can answer.")
    status: JudgeStatus = Field(
        description="DONE: you could decide. DONE_WITH_CONCERNS: you could decide and list concerns as "
        "non_blocking. NEEDS_CONTEXT: you cannot decide without facts you do not have; ask them in questions. "
        "BLOCKED: something outside the work stops it (missing access, contradictory requirements); say what "
        "in blocking."
    )
    passed: bool = Field(description="True only if the check is truthfully met, as the reasons above show.")

    @model_validator(mode="before")
    @classmethod
    def _status_defaults_to_done(cls, data: Any) -> Any:
        """A verdict written without a status (an older script, a hand-made verdict) is DONE."""
        if isinstance(data, dict) and "status" not in data:
            return {**data, "status": "DONE"}
        return data


@dataclass(frozen=True)
class WorkerEvent:
    """Something a worker did, streamed as it happens (text, a tool call, ...)."""

    kind: Literal["text", "tool", "tool_refused", "info"]
    stage: str
    text: str


EventSink = Callable[[WorkerEvent], None]


@dataclass(frozen=True)
class StageJob:
    """Everything a worker may know about one stage execution."""

    loop: Loop
    stage: Stage
    task: str
    run_id: str
    project_dir: Path
    run_dir: Path
    agent: ResolvedAgent
    consumes: dict[str, Path]  # declared entry -> absolute path (read fresh from disk)
    produces: dict[str, Path]  # declared entry -> absolute path to write
    feedback: str | None = None  # a human's revision request at a pause
    last_failure: str | None = None  # why this stage's (or a later stage's) gate last failed
    attempt: int = 0  # iterations[stage] so far
    max_turns: int | None = None  # a bound tighter than the settings' (the judge's explorer)
    memory: str | None = None  # relevant decisions and lessons of earlier runs (odin_magic.learning.memory)
    spent: Usage = field(default_factory=Usage)  # what the run used before this stage (its budget bounds the stage)


@dataclass(frozen=True)
class StageResult:
    summary: str = ""
    usage: Usage = field(default_factory=Usage)
    report: str = ""  # the worker's final answer in full: what the engine writes for a reporting (explore) stage
    edit_checks: list[dict] = field(default_factory=list)  # fast-fail checks of written files (postedit.EditCheck)


@dataclass(frozen=True)
class JudgeJob:
    """What a judge sees: never the worker's conversation."""

    loop: Loop
    stage: Stage
    task: str
    run_id: str
    project_dir: Path
    run_dir: Path
    artifacts: dict[str, Path]  # the stage's produces, resolved
    commands: list[CommandEvidence]
    context: str | None = None  # an explorer's answers to this judge's NEEDS_CONTEXT questions
    concerns: list[str] = field(default_factory=list)  # earlier judges' concerns, carried forward
    memory: str | None = None  # relevant decisions and lessons of earlier runs (odin_magic.learning.memory)
    inputs: str | None = None  # consumes, diff, files the check names, tool log (odin_magic.engine.judge_context)
    earlier: dict[str, str | None] | None = None  # a compared stage's run-dir artifacts before it (None: not there)


@dataclass(frozen=True)
class JudgeResult:
    verdict: Verdict
    usage: Usage = field(default_factory=Usage)


@runtime_checkable
class Worker(Protocol):
    def perform(self, job: StageJob, events: EventSink) -> StageResult:
        """Do the stage's work, writing its ``produces``. Raise :class:`WorkerError` to stop the stage."""

    def judge(self, job: JudgeJob, events: EventSink) -> JudgeResult:
        """Decide ``job.stage.gate.check`` from the artifacts and command evidence."""

    # optional: ``script_position(stage_id) -> int | None``, a scripted worker's place in a stage's script
    # (see :func:`script_position`); ``drive_ended() -> None`` (see :func:`drive_ended`)


def script_position(worker: Worker, stage_id: str) -> int | None:
    """How far a scripted worker (the dry worker's gate script) is in ``stage_id``'s script, saved with the
    gate outcome so that a resumed run continues it; None for a worker without a script (every real one)."""
    position = getattr(worker, "script_position", None)
    return position(stage_id) if callable(position) else None


def drive_ended(worker: Worker | None) -> None:
    """Tell ``worker`` that a drive of its run paused or ended, when it has something to finish then (a
    recording renders its YAML from its journal); nothing for a worker without ``drive_ended``."""
    ended = getattr(worker, "drive_ended", None)
    if callable(ended):
        ended()


class WorkerError(Exception):
    """A stage could not be completed (e.g. retries ran out). The run stays resumable.

    ``usage`` is what the stage spent before it failed: the engine counts it against the budget.
    """

    usage: Usage = Usage()
