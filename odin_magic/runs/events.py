"""Engine events: what a live view (notebook widget, CLI printer) listens to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

#: Event kinds the engine emits, in the order they can happen in a stage:
#: run_started, stage_started, worker (a WorkerEvent: text / tool / tool_refused / info),
#: gate_command (one gate.run command finished), gate_verdict, gate_passed, gate_failed,
#: paused (awaiting approval), approved, revised, usage, stopped (stop requested, run resumable),
#: done, failed, abandoned, notice (e.g. "state rebuilt from the event log");
#: question (a deep interview asks: text = the rendered question, data["question"]) followed by
#: awaiting_answer (the run pauses for the answer); blocked (a failure no loopback can fix, see
#: odin_magic.engine.routing: data = state.blocked) and unblocked (``run`` continues a blocked run);
#: reverted (the tree went back to a checkpoint) and forked (a new run from a point of another).
EVENT_KINDS = (
    "run_started", "stage_started", "worker", "gate_command", "gate_verdict", "gate_passed",
    "gate_failed", "paused", "approved", "revised", "usage", "stopped", "done", "failed",
    "abandoned", "notice", "question", "awaiting_answer", "blocked", "unblocked", "reverted", "forked",
)


@dataclass(frozen=True)
class EngineEvent:
    kind: str
    run_id: str
    stage: str | None = None
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)


Listener = Callable[[EngineEvent], None]
