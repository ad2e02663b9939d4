"""Engine events: what a live view (notebook widget, CLI printer) listens to."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable


class EventKind(str, Enum):
    """Every kind of event the engine emits, in the order they can happen in a stage.

    A ``str``: ``event.kind == "notice"`` holds for ``EventKind.NOTICE``. ``tests/runs/test_events.py``
    checks that every kind emitted anywhere in the package is listed here."""

    RUN_STARTED = "run_started"
    STAGE_STARTED = "stage_started"
    WORKER = "worker"  # a WorkerEvent: text / tool / tool_refused / info
    GATE_COMMAND = "gate_command"  # one gate.run command finished
    GATE_VERDICT = "gate_verdict"
    COMPLETION = "completion"  # the acceptance criteria judged (data: the completion report)
    GATE_PASSED = "gate_passed"
    GATE_FAILED = "gate_failed"
    PAUSED = "paused"  # awaiting approval
    APPROVED = "approved"
    REVISED = "revised"
    USAGE = "usage"
    STOPPED = "stopped"  # stop requested, run resumable
    DONE = "done"
    FAILED = "failed"
    REPORT = "report"  # the run's report was written (text names it)
    DELIVERED = "delivered"  # a done run delivered by its loop's `deliver:` (data: branch, commits, pr)
    ABANDONED = "abandoned"
    REOPENED = "reopened"  # `step STAGE` reopened a failed run
    NOTICE = "notice"  # e.g. "state rebuilt from the event log"
    QUESTION = "question"  # a deep interview asks: text = the rendered question, data["question"]
    AWAITING_ANSWER = "awaiting_answer"  # the run pauses for the answer
    BLOCKED = "blocked"  # a failure no loopback can fix (odin_magic.engine.routing): data = state.blocked
    UNBLOCKED = "unblocked"  # `run` continues a blocked run
    REVERTED = "reverted"  # the tree went back to a checkpoint
    FORKED = "forked"  # a new run from a point of another

    def __str__(self) -> str:
        return self.value


#: the kinds as strings, in :class:`EventKind`'s order (the tuple of earlier versions)
EVENT_KINDS = tuple(k.value for k in EventKind)


@dataclass(frozen=True)
class EngineEvent:
    kind: EventKind | str  # an EventKind; a plain string (as the engine passes today) compares equal to it
    run_id: str
    stage: str | None = None
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)


Listener = Callable[[EngineEvent], None]
