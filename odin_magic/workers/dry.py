"""The deterministic dry worker: placeholder produces and scripted gate outcomes.

``--gates test:fail,test:fail,review:fail``: each item makes the NEXT judged
evaluation of that stage fail, in order; every other evaluation passes. An item
may also script a judge status (docs/judge-statuses.md): ``STAGE:blocked`` (a
BLOCKED verdict) or ``STAGE:concerns`` (DONE_WITH_CONCERNS: a pass with a concern). The
worker consumes the script as it judges; the engine saves the stage's position
in it (``state.dry.used[stage]``, one number) in the same event as the gate
outcome, so a resumed run continues the script exactly where it was.
"""

from __future__ import annotations

import json
import threading

from odin_magic.core.errors import UsageError
from odin_magic.loop.schema import Loop
from odin_magic.runs.state import DryOptions
from odin_magic.core.atomic import write_atomic
from odin_magic.workers.base import (
    EventSink, JudgeJob, JudgeResult, StageJob, StageResult, Verdict, WorkerEvent
)

PLACEHOLDER_NAME = "PLACEHOLDER.md"

#: How a line comment starts, by file suffix: a placeholder in a code file is a comment, so it stays valid.
_LINE_COMMENT = {
    **dict.fromkeys((".py", ".pyi", ".sh", ".bash", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".r", ".rb", ".pl",
                     ".conf", ".env", ".mk"), "#"),
    **dict.fromkeys((".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".c", ".h", ".cc", ".cpp", ".hpp", ".go", ".rs",
                     ".java", ".kt", ".swift", ".scala", ".cs"), "//"),
    **dict.fromkeys((".sql", ".lua", ".hs"), "--"),
}
_WRAPPED_COMMENT = {".html": ("<!--", "-->"), ".xml": ("<!--", "-->"), ".svg": ("<!--", "-->"), ".css": ("/*", "*/")}


def placeholder_text(stage_id: str, entry: str, filename: str) -> str:
    """What a dry run writes for ``entry``: text that is valid for the file's type.

    A ``.py`` placeholder is a comment, or a skipped test when pytest would collect it (``test_*.py``,
    ``*_test.py``), so that a dry run never breaks the project's own ``pytest``; JSON, YAML and TOML
    placeholders parse; a notebook is an empty notebook. Other files get the plain sentence.
    """
    note = f"Placeholder written by an odin dry run: stage {stage_id!r}, artifact {entry!r}."
    suffix = "." + filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    if suffix == ".py" and (filename.startswith("test_") or filename.endswith("_test.py")):
        return (f"# {note}\nimport pytest\n\n\n"
                f"@pytest.mark.skip(reason={'placeholder written by an odin dry run'!r})\n"
                "def test_placeholder():\n    pass\n")
    if suffix == ".json":
        return json.dumps({"odin_placeholder": note}) + "\n"
    if suffix == ".ipynb":
        return json.dumps({"cells": [{"cell_type": "markdown", "id": "odin-placeholder", "metadata": {}, "source": [note]}], "metadata": {},
                           "nbformat": 4, "nbformat_minor": 5}) + "\n"
    if suffix in _LINE_COMMENT:
        return f"{_LINE_COMMENT[suffix]} {note}\n"
    if suffix in _WRAPPED_COMMENT:
        opening, closing = _WRAPPED_COMMENT[suffix]
        return f"{opening} {note} {closing}\n"
    return note + "\n"


#: What a gate-script item may say about its stage's next judged evaluation.
OUTCOMES = ("fail", "blocked", "concerns")


def parse_gate_script(spec: str | None, loop: Loop | None = None) -> list[str]:
    """``"test:fail,review:blocked"`` -> ``["test:fail", "review:blocked"]``, checked against the loop."""
    if not spec or not spec.strip():
        return []
    items = []
    ids = loop.stage_ids() if loop else None
    for raw in spec.split(","):
        item = raw.strip()
        if not item:
            continue
        stage, sep, outcome = item.partition(":")
        if not sep or outcome not in OUTCOMES or not stage:
            raise UsageError(
                f"--gates item {item!r} must look like STAGE:fail (or STAGE:blocked, STAGE:concerns)",
                hint="e.g. --gates test:fail,test:fail,review:fail",
            )
        if ids is not None and stage not in ids:
            raise UsageError(
                f"--gates item {item!r} names no stage of loop {loop.name!r}",
                hint=f"the stages are: {', '.join(ids)}",
            )
        items.append(f"{stage}:{outcome}")
    return items


class DryWorker:
    """A worker that does no real work; see the module docstring."""

    #: its judge decides from the script alone, never from ``JudgeJob.inputs``: the engine does not assemble them
    judge_reads_inputs = False

    def __init__(self, options: DryOptions | None = None, stop: threading.Event | None = None):
        self.options = options or DryOptions()
        self._outcomes: dict[str, list[str]] = {}  # per stage: its items' outcomes, in order
        for item in self.options.gates:
            stage, _, outcome = item.partition(":")
            self._outcomes.setdefault(stage, []).append(outcome or "fail")
        self._used = dict(self.options.used)
        self._stop = stop or threading.Event()

    def script_position(self, stage_id: str) -> int | None:
        """How many of ``stage_id``'s scripted items are consumed; None when the script has none for it
        (see :func:`odin_magic.workers.base.script_position`)."""
        if stage_id not in self._outcomes:
            return None
        return self._used.get(stage_id, 0)

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
            write_atomic(target, placeholder_text(job.stage.id, entry, target.name))
            written.append(entry)
        text = f"dry run: wrote {', '.join(written)}" if written else "dry run: nothing to write"
        if job.feedback:
            text += f" (feedback: {job.feedback})"
        events(WorkerEvent("info", job.stage.id, text))
        return StageResult(summary=text)

    def judge(self, job: JudgeJob, events: EventSink) -> JudgeResult:
        outcomes = self._outcomes.get(job.stage.id, [])
        used = self._used.get(job.stage.id, 0)
        if used < len(outcomes):
            self._used[job.stage.id] = used + 1  # the stage's items apply in order
            outcome = outcomes[used]
            item = f"{job.stage.id}:{outcome}"
            if outcome == "concerns":
                concern = f"dry run: scripted concern ({item})"
                return JudgeResult(Verdict(status="DONE_WITH_CONCERNS", passed=True, reasons=[concern],
                                           non_blocking=[concern]))
            if outcome == "blocked":
                blocker = f"dry run: scripted blocker ({item})"
                return JudgeResult(Verdict(status="BLOCKED", passed=False, reasons=[blocker], blocking=[blocker]))
            reason = f"dry run: scripted failure ({item})"
            return JudgeResult(Verdict(status="DONE", passed=False, reasons=[reason], blocking=[reason]))
        return JudgeResult(Verdict(status="DONE", passed=True, reasons=["dry run: no scripted failure for this evaluation"]))
