"""Gate evaluation, in order: produces exist -> ``gate.run`` commands -> the judge.

A missing artifact or a failing command fails the gate and the judge is not
consulted, so no judge can overrule a command. The evidence of every
evaluation (what was missing, each command's exit code and output tails, the
verdict) is :meth:`GateOutcome.evidence`, appended to the run's evidence file
(:mod:`odin_magic.runs.evidence`) without an fsync of its own: the gate's event-log
record carries its SHA-256, and the log's append is the transition's one fsync.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from odin_magic.engine import judging
from odin_magic.loop.artifacts import Placement
from odin_magic.loop.schema import Stage
from odin_magic.core.commands import (  # noqa: F401 - handed on: gates' names before core.commands
    DEFAULT_COMMAND_TIMEOUT, TAIL_CHARS, CommandEnv, CommandEvidence, command_env, run_command
)
from odin_magic.runs.state import Usage
from odin_magic.workers.base import EventSink, JudgeJob, Verdict, Worker



@dataclass
class GateOutcome:
    passed: bool
    reason: str | None  # why it failed (None on a pass)
    missing: list[str] = field(default_factory=list)
    commands: list[CommandEvidence] = field(default_factory=list)
    commands_skipped: bool = False
    verdict: Verdict | None = None  # None when the judge was not consulted
    judge_usage: Usage = field(default_factory=Usage)
    context: str | None = None  # what an explorer found for a NEEDS_CONTEXT judge (see odin_magic.engine.judging)

    @property
    def judge_status(self) -> str | None:
        return self.verdict.status if self.verdict is not None else None
    edit_checks: list[dict] = field(default_factory=list)  # the worker's fast-fail checks (postedit)
    mutation: dict | None = None  # the discrimination sensor's report (mutation), when it ran
    completion: dict | None = None  # the checks before done (completion), on the last stage
    changes: list[dict] = field(default_factory=list)  # files the stage changed (odin_magic.runs.checkpoints.Change)
    reverted: list[str] = field(default_factory=list)  # changes outside the stage's scope, undone (odin_magic.engine.scope)
    risky: list[str] = field(default_factory=list)  # changes matching the loop's risk globs

    def evidence(self, stage_id: str, number: int, at: str) -> dict:
        return {
            "stage": stage_id,
            "evaluation": number,
            "at": at,
            "passed": self.passed,
            "reason": self.reason,
            "missing": self.missing,
            "commands": [asdict(c) for c in self.commands],
            "commands_skipped": self.commands_skipped,
            "verdict": self.verdict.model_dump() if self.verdict else None,
            "judged": self.verdict is not None,
            "edit_checks": self.edit_checks,
            "context": self.context,
            "mutation": self.mutation,
            "completion": self.completion,
            "changes": self.changes,
            "reverted": self.reverted,
            "risky": self.risky,
        }


#: A line of a command's output that says why it failed (pytest's FAILED/ERROR lines, an exception, ...).
_CAUSE = re.compile(r"^(FAILED|ERROR|E\s)|Error\b|error:|Exception\b|No module named|not found|[Tt]raceback")
#: A line longer than this keeps its start and its end (where the cause usually is).
LINE_CHARS = 600


def _clip(line: str) -> str:
    if len(line) <= LINE_CHARS:
        return line
    half = LINE_CHARS // 2
    return f"{line[:half]} … {line[-half:]}"


def explaining_lines(ev: CommandEvidence) -> list[str]:
    """The line of a failed command's output that explains the failure, and the output's last line when
    that is another one (e.g. pytest's ``FAILED test_x - AssertionError: ...`` and its ``1 failed`` summary)."""
    lines = [ln.strip() for ln in (ev.stdout_tail + "\n" + ev.stderr_tail).splitlines() if ln.strip()]
    if not lines:
        return []
    last = (ev.stderr_tail.strip() or ev.stdout_tail.strip()).splitlines()[-1].strip()
    cause = next((ln for ln in reversed(lines) if _CAUSE.search(ln)), last)
    return [_clip(cause)] + ([_clip(last)] if last != cause else [])


def _describe_failure(ev: CommandEvidence) -> str:
    """Why a command failed the gate, in full: the command, its exit and the line that explains it."""
    if ev.timed_out:
        return f"gate command `{ev.cmd}` timed out"
    if ev.exit_code is None:
        return f"gate command `{ev.cmd}` could not start: {ev.stderr_tail.strip()}"
    detail = " | ".join(explaining_lines(ev))
    return f"gate command `{ev.cmd}` exited {ev.exit_code}" + (f": {detail}" if detail else "")


def evaluate(
    stage: Stage,
    produces: dict[str, Placement],
    judge_job: Callable[[list[CommandEvidence]], JudgeJob],
    worker: Worker,
    sink: EventSink,
    env: Mapping[str, str],
    cwd: Path,
    run_commands: bool = True,
    on_command: Callable[[CommandEvidence], None] | None = None,
    find_context: judging.ContextFinder | None = None,
) -> GateOutcome:
    """Evaluate ``stage``'s gate. The judge is consulted only when (a) and (b) pass.

    ``find_context`` answers a NEEDS_CONTEXT judge's questions (see :mod:`odin_magic.engine.judging`)."""
    missing = [entry for entry, p in produces.items() if not p.exists()]
    if missing:
        return GateOutcome(False, "missing produces: " + ", ".join(missing), missing=missing)
    evidence: list[CommandEvidence] = []
    if run_commands:
        for command in stage.gate.commands:
            ev = run_command(command, cwd, env)
            evidence.append(ev)
            if on_command:
                on_command(ev)
            if not ev.ok:
                return GateOutcome(False, _describe_failure(ev), commands=evidence)
    result, context = judging.consult(worker, judge_job(evidence), sink, find_context)
    verdict = result.verdict
    passed, reason = judged(verdict)
    return GateOutcome(
        passed, reason, commands=evidence, commands_skipped=not run_commands and bool(stage.gate.commands),
        verdict=verdict, judge_usage=result.usage, context=context,
    )


def judged(verdict: Verdict) -> tuple[bool, str | None]:
    """The gate's decision from a verdict: its status and findings decide, not its ``passed`` flag alone.

    A verdict that says it passed while listing a blocking finding contradicts itself; the
    finding wins (seed 000: prefer the worker's own labels at the gate) and the gate fails.
    Only DONE and DONE_WITH_CONCERNS can pass (seed 002; see :func:`odin_magic.engine.judging.decide`).
    """
    return judging.decide(verdict)
