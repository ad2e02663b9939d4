"""A judge comparison (``compare: baseline``): the judge scores the before and the after of a stage's change
with one rubric (the gate's check) in one structured reply.

The request is tagged ``x-odin-purpose: compare`` (the scripted model answers it from
``answers.compare.<stage>``); it sees what the gate's judge sees (the task, the stage's inputs with the diff
of its change, its artifacts as they are now), never the worker's conversation. A reply that does not fit
the schema is asked again once, then the comparison fails with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from odin_magic.core.secrets import redact
from odin_magic.runs.state import Usage
from odin_magic.workers.base import EventSink, JudgeJob, WorkerEvent
from odin_magic.workers.prompts import system_blocks
from odin_magic.workers.structured import Retry

MAX_TOKENS = 2_048
ARTIFACT_CHARS = 12_000

RULES = """You compare two versions of a piece of work with one rubric: the version before a change and the \
version after it. Score each from 0 (fails the rubric entirely) to 10 (meets it fully), with the same \
standard for both, and give the reasons for each score. Judge only what the rubric asks. Answer with JSON \
only, as the schema requires."""


class Score(BaseModel):
    model_config = ConfigDict(extra="forbid")

    score: float = Field(ge=0, le=10, description="0 to 10, higher is better")
    reasons: list[str] = Field(default_factory=list)


class Comparison(BaseModel):
    """The judge's one reply: the before and the after, scored with the same rubric."""

    model_config = ConfigDict(extra="forbid")

    before: Score
    after: Score


@dataclass(frozen=True)
class CompareResult:
    comparison: Comparison | None
    usage: Usage = field(default_factory=Usage)
    problem: str | None = None  # why there is no comparison


def _cut(text: str | None, missing: str) -> str:
    if not text:
        return missing
    cut = f"\n[… {len(text) - ARTIFACT_CHARS} more characters cut]" if len(text) > ARTIFACT_CHARS else ""
    return text[:ARTIFACT_CHARS] + cut


def compare_brief(job: JudgeJob) -> str:
    """The rubric, the task, the change (the stage's inputs: the diff shows the before of every changed
    project line), each run-dir artifact as it was before (kept when the execution began) and every artifact
    as it is after."""
    parts = [f"# Rubric\n\n{job.stage.gate.check}", f"# Task of the run\n\n{job.task}",
             f"# The stage\n\n{job.stage.id}: {job.stage.goal or job.stage.title or ''}".rstrip()]
    if job.inputs:
        parts.append("# The change (BEFORE is the version the diff removes, AFTER the one it adds)\n\n" + job.inputs)
    for name, path in job.artifacts.items():
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            text = f"(cannot be read: {exc})"
        if job.earlier is not None and name in job.earlier:
            parts.append(f"# Artifact {name}, BEFORE the change\n\n" + _cut(job.earlier[name], "(it did not exist)"))
        parts.append(f"# Artifact {name}, AFTER the change\n\n" + _cut(text, "(empty)"))
    parts.append("Score the version BEFORE the change and the version AFTER it with the rubric.")
    return redact("\n\n".join(parts))


async def ask_comparison(worker: Any, job: JudgeJob, events: EventSink) -> CompareResult:
    """Ask ``worker``'s model (a :class:`~odin_magic.workers.claude.ClaudeWorker`) for the comparison."""
    stage_id, model = job.stage.id, worker.settings.verdict_model
    brief = compare_brief(job)
    problems: list[str] = []

    def emit(text: str) -> None:
        events(WorkerEvent(kind="info", stage=stage_id, text=text))

    def again(answer: Any, attempt: int) -> Retry:
        problem = "the judge refused to compare" if answer.error is None else \
            f"no valid comparison ({answer.error.errors()[0]['msg']})"
        problems.append(problem)
        return Retry(problem, [{"role": "user", "content": brief},
                               {"role": "assistant", "content": "(an answer that did not fit the schema)"},
                               {"role": "user", "content": f"That answer was not valid: {problem}. Answer again, JSON only."}])

    request = {"model": model, "max_tokens": min(worker.settings.max_tokens, MAX_TOKENS), "system": system_blocks(RULES),
               "messages": [{"role": "user", "content": brief}],
               "extra_headers": worker.tags(stage_id, "compare", job.run_dir, job.project_dir)}
    value, usage = await worker.ask_structured(Comparison, request, again, f"judge comparison of stage {stage_id}", emit)
    if value is None:
        return CompareResult(None, usage, "the judge gave no valid comparison twice: " + "; ".join(problems))
    return CompareResult(value, usage)


__all__ = ["CompareResult", "Comparison", "Score", "ask_comparison", "compare_brief"]
