"""The deterministic dry worker: placeholder produces and scripted gate outcomes.

``--gates test:fail,test:fail,review:fail``: each item makes the NEXT judged
evaluation of that stage fail, in order; every other evaluation passes. The
worker consumes the script as it judges; the engine saves what remains
(``state.dry.gates``) in the same event as the gate outcome, so a resumed run
continues the script exactly where it was.
"""

from __future__ import annotations

import threading

from ..errors import UsageError
from ..loop import Loop
from ..state import DryOptions
from ..store import write_atomic
from .base import EventSink, JudgeJob, JudgeResult, StageJob, StageResult, Verdict, WorkerEvent

PLACEHOLDER_NAME = "PLACEHOLDER.md"


def parse_gate_script(spec: str | None, loop: Loop | None = None) -> list[str]:
    """``"test:fail,review:fail"`` -> ``["test:fail", "review:fail"]``, checked against the loop."""
    if not spec or not spec.strip():
        return []
    items = []
    ids = loop.stage_ids() if loop else None
    for raw in spec.split(","):
        item = raw.strip()
        if not item:
            continue
        stage, sep, outcome = item.partition(":")
        if not sep or outcome != "fail" or not stage:
            raise UsageError(
                f"--gates item {item!r} must look like STAGE:fail",
                hint="e.g. --gates test:fail,test:fail,review:fail",
            )
        if ids is not None and stage not in ids:
            raise UsageError(
                f"--gates item {item!r} names no stage of loop {loop.name!r}",
                hint=f"the stages are: {', '.join(ids)}",
            )
        items.append(f"{stage}:fail")
    return items


class DryWorker:
    """A worker that does no real work; see the module docstring."""

    def __init__(self, options: DryOptions | None = None, stop: threading.Event | None = None):
        self.options = options or DryOptions()
        self._script = list(self.options.gates)
        self._stop = stop or threading.Event()

    @property
    def remaining_gates(self) -> list[str]:
        return list(self._script)

    def perform(self, job: StageJob, events: EventSink) -> StageResult:
        if self.options.stage_delay > 0:
            self._stop.wait(self.options.stage_delay)  # a stop request ends the wait at once
        written = []
        for entry, path in job.produces.items():
            if entry.endswith("/"):
                path.mkdir(parents=True, exist_ok=True)
                if any(path.iterdir()):
                    continue  # never touch a directory that already has content
                target = path / PLACEHOLDER_NAME
            else:
                if path.exists():
                    continue  # never overwrite an existing file
                target = path
            target.parent.mkdir(parents=True, exist_ok=True)
            # atomically: a placeholder cut short by a crash would pass for one, and is never rewritten
            write_atomic(target, f"Placeholder written by an odin dry run: stage {job.stage.id!r}, artifact {entry!r}.\n")
            written.append(entry)
        text = f"dry run: wrote {', '.join(written)}" if written else "dry run: nothing to write"
        if job.feedback:
            text += f" (feedback: {job.feedback})"
        events(WorkerEvent("info", job.stage.id, text))
        return StageResult(summary=text)

    def judge(self, job: JudgeJob, events: EventSink) -> JudgeResult:
        item = f"{job.stage.id}:fail"
        if item in self._script:
            self._script.remove(item)  # the first occurrence: items apply in order
            reason = f"dry run: scripted failure ({item})"
            return JudgeResult(Verdict(status="DONE", passed=False, reasons=[reason], blocking=[reason]))
        return JudgeResult(Verdict(status="DONE", passed=True, reasons=["dry run: no scripted failure for this evaluation"]))
