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
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Callable, Mapping

from odin_magic.engine import judging, test_output
from odin_magic.loop.artifacts import Placement
from odin_magic.loop.schema import Stage
from odin_magic.core.commands import (  # noqa: F401 - handed on: gates' names before core.commands
    DEFAULT_COMMAND_TIMEOUT, TAIL_CHARS, CommandEnv, CommandEvidence, command_env, run_command
)
from odin_magic.runs.state import Usage
from odin_magic.workers.base import EventSink, JudgeJob, Verdict, Worker



@dataclass(frozen=True)
class GateOutcome:
    """One gate evaluation, built once at the end of the checks (:class:`GateParts`); never changed after."""

    passed: bool
    reason: str | None  # why it failed (None on a pass)
    missing: list[str] = field(default_factory=list)
    commands: list[CommandEvidence] = field(default_factory=list)
    commands_skipped: bool = False
    verdict: Verdict | None = None  # None when the judge was not consulted
    judge_usage: Usage = field(default_factory=Usage)
    context: str | None = None  # what an explorer found for a NEEDS_CONTEXT judge (see odin_magic.engine.judging)
    edit_checks: list[dict] = field(default_factory=list)  # the worker's fast-fail checks (postedit)
    mutation: dict | None = None  # the discrimination sensor's report (mutation), when it ran
    metric: dict | None = None  # the metric step's figures and decision (odin_magic.engine.metric_gate)
    comparison: dict | None = None  # the judge comparison's scores and decision (odin_magic.engine.judge_compare)
    completion: dict | None = None  # the checks before done (completion), on the last stage
    changes: list[dict] = field(default_factory=list)  # files the stage changed (odin_magic.runs.checkpoints.Change)
    reverted: list[str] = field(default_factory=list)  # changes outside the stage's scope, undone (odin_magic.engine.scope)
    risky: list[str] = field(default_factory=list)  # changes matching the loop's risk globs

    @property
    def judge_status(self) -> str | None:
        return self.verdict.status if self.verdict is not None else None

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
            "metric": self.metric,
            "comparison": self.comparison,
            "completion": self.completion,
            "changes": self.changes,
            "reverted": self.reverted,
            "risky": self.risky,
        }


@dataclass
class GateParts:
    """What the checks of one evaluation have found so far; :meth:`outcome` freezes it into the GateOutcome."""

    passed: bool = True
    reason: str | None = None
    missing: list[str] = field(default_factory=list)
    commands: list[CommandEvidence] = field(default_factory=list)
    commands_skipped: bool = False
    verdict: Verdict | None = None
    judge_usage: Usage = field(default_factory=Usage)
    context: str | None = None
    edit_checks: list[dict] = field(default_factory=list)
    mutation: dict | None = None
    metric: dict | None = None
    comparison: dict | None = None
    completion: dict | None = None
    changes: list[dict] = field(default_factory=list)
    reverted: list[str] = field(default_factory=list)
    risky: list[str] = field(default_factory=list)

    def fail(self, reason: str | None) -> bool:
        """The gate fails for ``reason``; False: the checks after this one do not run."""
        self.passed, self.reason = False, reason
        return False

    def outcome(self) -> GateOutcome:
        return GateOutcome(**{f.name: getattr(self, f.name) for f in fields(GateOutcome)})


@dataclass(frozen=True, kw_only=True)
class GateContext:
    """What the checks of a gate need: the stage, its produces, how commands run and who judges."""

    stage: Stage
    produces: dict[str, Placement]
    judge_job: Callable[..., JudgeJob]  # (commands, with_inputs=True): the judge's job, with the stage's inputs
    judge: Worker
    sink: EventSink
    env: Mapping[str, str]
    cwd: Path
    run_commands: bool = True
    on_command: Callable[[CommandEvidence], None] | None = None
    find_context: judging.ContextFinder | None = None  # answers a NEEDS_CONTEXT judge (odin_magic.engine.judging)


#: A check: it adds what it found to the parts; False when the gate is decided (the later checks do not run).
Check = Callable[[GateContext, GateParts], bool]


#: A line of a command's output that says why it failed (pytest's FAILED/ERROR lines, an exception, ...).
_CAUSE = re.compile(r"^(FAILED|ERROR|E\s)|Error\b|error:|Exception\b|No module named|not found|[Tt]raceback")
#: A line longer than this keeps its start and its end (where the cause usually is).
LINE_CHARS = 600


def _clip(line: str) -> str:
    if len(line) <= LINE_CHARS:
        return line
    half = LINE_CHARS // 2
    return f"{line[:half]} … {line[-half:]}"


#: An output odin cannot read failing tests from keeps this many of its last lines in the reason.
TAIL_LINES = 5


def explaining_lines(ev: CommandEvidence) -> list[str]:
    """What explains a failed command, for its gate's reason: every failing test its runner names, up to
    a cap (:mod:`odin_magic.engine.test_output`), and the output's last line (pytest's ``3 failed`` summary,
    unittest's ``FAILED (failures=3)``); from an output that names no test, the line that explains the
    failure (an exception, ``error:``) and the output's last lines (its tail)."""
    text = ev.stdout_tail + "\n" + ev.stderr_tail
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return []
    last = (ev.stderr_tail.strip() or ev.stdout_tail.strip()).splitlines()[-1].strip()
    failures = test_output.parse(text)
    if failures.tests:
        named = test_output.describe(failures)
        return [named] + ([_clip(last)] if not test_output.parse(last).tests else [])
    tail = lines[-TAIL_LINES:]
    cause = next((ln for ln in reversed(lines) if _CAUSE.search(ln)), None)
    if cause is not None and cause not in tail:
        tail.insert(0, cause)
    if last in tail:  # the output's very last line ends the reason (stderr's, when there is one)
        tail.remove(last)
    return [_clip(ln) for ln in tail + [last]]


def _describe_failure(ev: CommandEvidence) -> str:
    """Why a command failed the gate, in full: the command, its exit and what explains it (every failing
    test named, or the output's tail: :func:`explaining_lines`)."""
    if ev.timed_out:
        return f"gate command `{ev.cmd}` timed out"
    if ev.exit_code is None:
        return f"gate command `{ev.cmd}` could not start: {ev.stderr_tail.strip()}"
    detail = " | ".join(explaining_lines(ev))
    return f"gate command `{ev.cmd}` exited {ev.exit_code}" + (f": {detail}" if detail else "")


def check_produces(ctx: GateContext, parts: GateParts) -> bool:
    """(a) every declared ``produces`` exists."""
    missing = [entry for entry, p in ctx.produces.items() if not p.exists()]
    if missing:
        parts.missing = missing
        return parts.fail("missing produces: " + ", ".join(missing))
    return True


def check_commands(ctx: GateContext, parts: GateParts) -> bool:
    """(b) the ``gate.run`` commands, in order; the first that fails decides (unless commands are not run)."""
    if not ctx.run_commands:
        parts.commands_skipped = bool(ctx.stage.gate.commands)
        return True
    for command in ctx.stage.gate.commands:
        ev = run_command(command, ctx.cwd, ctx.env)
        parts.commands.append(ev)
        if ctx.on_command:
            ctx.on_command(ev)
        if not ev.ok:
            return parts.fail(_describe_failure(ev))
    return True


def check_judge(ctx: GateContext, parts: GateParts) -> bool:
    """(c) the judge, consulted only when (a) and (b) pass; its verdict decides."""
    result, parts.context = judging.consult(ctx.judge, ctx.judge_job(parts.commands), ctx.sink, ctx.find_context)
    parts.verdict, parts.judge_usage = result.verdict, result.usage
    parts.passed, parts.reason = judged(result.verdict)
    return parts.passed


#: The gate's own checks, in order.
CHECKS: tuple[Check, ...] = (check_produces, check_commands, check_judge)


def run_checks(checks: tuple[Check, ...], ctx: GateContext, parts: GateParts | None = None) -> GateParts:
    """Run ``checks`` in order until one decides the gate; the parts they found."""
    parts = parts if parts is not None else GateParts()
    for check in checks:
        if not check(ctx, parts):
            break
    return parts


def evaluate(ctx: GateContext) -> GateOutcome:
    """Evaluate ``ctx.stage``'s gate: produces, commands, then the judge (see the module docstring)."""
    return run_checks(CHECKS, ctx).outcome()


def judged(verdict: Verdict) -> tuple[bool, str | None]:
    """The gate's decision from a verdict: its status and findings decide, not its ``passed`` flag alone.

    A verdict that says it passed while listing a blocking finding contradicts itself; the
    finding wins (seed 000: prefer the worker's own labels at the gate) and the gate fails.
    Only DONE and DONE_WITH_CONCERNS can pass (seed 002; see :func:`odin_magic.engine.judging.decide`).
    """
    return judging.decide(verdict)
