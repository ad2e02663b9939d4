"""Judge statuses (seed 002): what a judge's verdict means for the gate.

A verdict carries ``status``:

* ``DONE`` — the judge could decide; the findings decide the gate.
* ``DONE_WITH_CONCERNS`` — the judge could decide and has concerns (its
  ``non_blocking`` findings) that do not stop the work; on a pass they are
  carried forward (shown at the next pause and in ``status``, handed to later
  judges).
* ``NEEDS_CONTEXT`` — the judge cannot decide without knowing more; it lists
  ``questions``. One bounded, read-only explore worker answers them and the
  judge decides again with its findings, at most once per gate evaluation.
* ``BLOCKED`` — something outside the work stops it (the judge says what);
  the stage is reverted to its checkpoint and the run pauses for the human
  without spending a loopback.

The engine decides, never the verdict's own boolean: the gate passes only on
``DONE`` or ``DONE_WITH_CONCERNS`` with ``passed`` true and no blocking finding.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from odin_magic.loop.schema import Gate, Stage
from odin_magic.runs.state import Usage
from odin_magic.workers.base import EventSink, JudgeJob, JudgeResult, StageJob, Verdict, Worker, WorkerEvent

PASSING_STATUSES = ("DONE", "DONE_WITH_CONCERNS")
#: how many of the latest carried concerns a pause, ``status`` and a later judge are shown
CONCERNS_SHOWN = 10
#: model turns the explore worker of a NEEDS_CONTEXT verdict may take
CONTEXT_TURNS = 12

#: Answers a judge's questions: (findings, usage). Given the judge's job and the verdict that asked.
ContextFinder = Callable[[JudgeJob, Verdict], tuple[str, Usage]]


def decide(verdict: Verdict) -> tuple[bool, str | None]:
    """The gate's decision from a verdict: (passed, why it failed)."""
    blocking = [b for b in verdict.blocking if b.strip()]
    if verdict.status == "BLOCKED":
        why = "; ".join(blocking or verdict.reasons) or "no reason given"
        return False, f"the judge is blocked: {why}"
    if verdict.status == "NEEDS_CONTEXT":
        asked = "; ".join(verdict.questions or verdict.reasons) or "no questions given"
        return False, f"the judge could not decide without more context: {asked}"
    if verdict.passed and not blocking:
        return True, None
    if verdict.passed:
        return False, "the judge said passed but listed blocking finding(s): " + "; ".join(blocking)
    return False, "; ".join(blocking or verdict.reasons) or "the judge found the check unmet"


def concerns_of(verdict: Verdict | None) -> list[str]:
    """What a passing verdict hands forward: its non-blocking findings (DONE_WITH_CONCERNS or not)."""
    if verdict is None:
        return []
    return [c.strip() for c in verdict.non_blocking if c.strip()]


def consult(worker: Worker, job: JudgeJob, sink: EventSink,
            find_context: ContextFinder | None) -> tuple[JudgeResult, str | None]:
    """Ask the judge; on NEEDS_CONTEXT (and a ``find_context``) explore once and ask again.

    Returns the final result (usage of every call summed) and the explorer's findings (None if none ran).
    """
    result = worker.judge(job, sink)
    if result.verdict.status != "NEEDS_CONTEXT" or find_context is None:
        return result, None
    stage = job.stage.id
    sink(WorkerEvent("info", stage, "judge needs context: " + "; ".join(result.verdict.questions or result.verdict.reasons)))
    findings, spent = find_context(job, result.verdict)
    sink(WorkerEvent("info", stage, "explorer's findings handed to the judge; judging again"))
    again = worker.judge(dataclasses.replace(job, context=findings), sink)
    return JudgeResult(again.verdict, result.usage + spent + again.usage), findings


def explore_job(job: JudgeJob, verdict: Verdict) -> StageJob:
    """The bounded, read-only explore worker that answers a NEEDS_CONTEXT judge's questions.

    It runs as its own stage ``<stage>.context`` (role ``explore``: read, glob and grep only; a fresh
    context; at most :data:`CONTEXT_TURNS` model turns; nothing to produce); its final text is the findings.
    """
    questions = verdict.questions or verdict.reasons or ["what the gate check depends on"]
    stage = Stage(
        id=f"{job.stage.id}.context",
        title=f"context for the judge of {job.stage.id}",
        goal=f"answer the gate judge's questions about stage {job.stage.id}, reading only",
        prompt="The gate judge of stage {} cannot decide without answers to these questions:\n{}\n\n"
               "Find the answers in the project (read only: change nothing) and reply with them, "
               "citing the files you read.".format(job.stage.id, "\n".join(f"- {q}" for q in questions)),
        agent="explore",
        gate=Gate(mode="ai", check="the judge's questions are answered"),
    )
    return StageJob(
        loop=job.loop, stage=stage, task=job.task, run_id=job.run_id, project_dir=job.project_dir,
        run_dir=job.run_dir, agent=stage.resolved_agent, consumes={}, produces={}, max_turns=CONTEXT_TURNS,
    )
