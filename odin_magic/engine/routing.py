"""Failure routing (seed 001): what a failed gate means decides where the run goes.

Every failed gate evaluation is classified:

* ``recoverable`` — the work is wrong (a test fails, the judge found a blocking
  issue): the run loops back as always, spending one loopback.
* ``environment`` — a gate command could not run at all (exit 126 or 127, its
  program or module missing, permission denied, the command's own timeout, it
  could not start): no model work can fix that, so the run pauses as
  ``blocked``, spends no loopback, and says what to fix; ``odin run`` re-checks
  the gate (without redoing the stage's work).
* ``blocked`` — the judge answered BLOCKED (see :mod:`odin_magic.engine.judging`): like an environment
  failure, no loopback is spent and the run pauses as ``blocked``; ``odin run`` re-runs the stage.
* ``repeated`` — the same failure signature (the same stage and the same
  normalized reason) seen ``max_repeats`` times in a row (a loop field, default
  3): the loopback is counted, then the run pauses as ``blocked`` for the human
  instead of spending the rest of ``max_iterations`` on the same error. It is checked
  after ``max_iterations`` and before ``max_no_progress``
  (:func:`odin_magic.engine.gate_record.failure_changes`): a repeated failure that also
  reaches ``max_no_progress`` blocks for a person rather than failing the run.

"In a row" counts the stage's consecutive failed evaluations with that
signature: a different failure of the stage starts a new streak, and the stage
passing (or the human resuming a blocked run) ends it. Passes of other stages in
between (e.g. the stage ``on_fail`` loops back to) do not break it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from odin_magic.runs.state import Blocked, Streak
from odin_magic.workers.base import CommandEvidence

FailureClass = Literal["recoverable", "environment", "repeated", "blocked"]
DEFAULT_MAX_REPEATS = 3


@dataclass(frozen=True)
class Route:
    failure: FailureClass
    streak: Streak
    blocked: Blocked | None  # set when the run pauses instead of looping back


# -- environment failures ---------------------------------------------------------------

#: The interpreter's own "no module" line (``python -m x``), not a traceback's ModuleNotFoundError
#: from the code under test (that is the work being wrong: recoverable).
_NO_MODULE = re.compile(r"^\S*python[\d.]*: (?:No module named (\S+)|Error while finding module specification for '([^']+)')",
                        re.MULTILINE)
#: the shell's own lines (``sh: 1: x: not found``, ``bash: line 1: x: command not found``): never a line the
#: code under test printed, such as a test's "key: not found" or a PermissionError's "Permission denied"
_SHELL = r"^(?:\S*/)?(?:ba|da|z|k)?sh(?:: line \d+|: \d+)?: "
_NOT_FOUND = re.compile(_SHELL + r"(\S+): (?:command )?not found\s*$", re.MULTILINE)
#: make running a recipe's program itself (no shell): ``make: tox: No such file or directory``
_MAKE_NOT_FOUND = re.compile(r"^make(?:\[\d+\])?: (\S+): No such file or directory\s*$", re.MULTILINE)
#: make's line for a recipe whose shell exited 127 (the shell's "not found" line comes before it)
_MAKE_127 = re.compile(r"^make(?:\[\d+\])?: \*\*\* .*Error 127\s*$", re.MULTILINE)
_NO_FILE = re.compile(r"^\S*python[\d.]*: can't open file '([^']+)'", re.MULTILINE)


def environment_problem(ev: CommandEvidence) -> tuple[str, str] | None:
    """(what is wrong, what to fix) when ``ev``'s command could not run; None when it ran and failed."""
    cmd = f"`{ev.cmd}`"
    if ev.timed_out:
        return (f"gate command {cmd} timed out",
                "make the command finish within its timeout, or raise `timeout:` for it in the loop")
    if ev.exit_code is None:
        return (f"gate command {cmd} could not start: {ev.stderr_tail.strip()[:200]}",
                "check that the project directory exists and can be read")
    out = ev.stderr_tail + "\n" + ev.stdout_tail
    module = _NO_MODULE.search(out)
    if module:
        name = module.group(1) or module.group(2)
        return (f"gate command {cmd}: module {name} is not installed",
                f"install {name} in the environment the gate runs in, or fix the command in the loop")
    # the shell says "not found" with exit 127 (under make: make's `Error 127`) and "permission denied" with
    # 126; make running a program itself says its own line
    shell_said = ev.exit_code == 127 or _MAKE_127.search(out)
    missing = (_NOT_FOUND.search(out) if shell_said else None) or _MAKE_NOT_FOUND.search(out)
    if ev.exit_code == 127 or missing:
        program = missing.group(1) if missing else cmd.split()[0].strip("`")
        return (f"gate command {cmd}: program {program} was not found (exit {ev.exit_code})",
                f"install {program} or put it on PATH, or fix the command in the loop")
    no_file = _NO_FILE.search(out) if ev.exit_code == 2 else None  # the interpreter's own exit status for it
    if no_file:
        return (f"gate command {cmd}: {no_file.group(1)} does not exist",
                "create that script or fix the command in the loop")
    if ev.exit_code == 126:
        return (f"gate command {cmd}: permission denied (exit {ev.exit_code})",
                "make the program executable (chmod +x) or readable, or fix the command in the loop")
    return None


def failed_command(commands: list[CommandEvidence]) -> CommandEvidence | None:
    """The command that failed the gate (commands stop at the first failure)."""
    return commands[-1] if commands and not commands[-1].ok else None


# -- signatures and streaks ---------------------------------------------------------------

_VOLATILE = [
    (re.compile(r"0x[0-9a-fA-F]+"), "0x#"),
    (re.compile(r"\d+(?:\.\d+)?\s*(?:ms|s|sec|seconds)\b"), "#s"),  # durations
    (re.compile(r"\d+"), "#"),
    (re.compile(r"/tmp/\S+|/var/folders/\S+"), "<tmp>"),
    (re.compile(r"\s+"), " "),
]


def normalize(reason: str | None) -> str:
    """A failure reason without what changes between identical failures (numbers, timings, temp paths)."""
    text = (reason or "").strip().lower()
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    return text


def next_streak(current: Streak | None, stage_id: str, reason: str | None) -> Streak:
    signature = normalize(reason)
    if current is not None and current.stage == stage_id and current.signature == signature:
        return Streak(stage=stage_id, signature=signature, count=current.count + 1)
    return Streak(stage=stage_id, signature=signature, count=1)


def streak_after_pass(current: Streak | None, stage_id: str) -> bool:
    """True when a pass of ``stage_id`` ends the current streak (it is that stage's)."""
    return current is not None and current.stage == stage_id


# -- the route ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Failure:
    """What routing reads of a failed gate evaluation (a :class:`~odin_magic.engine.gates.GateOutcome`'s)."""

    reason: str | None
    commands: list[CommandEvidence] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    judge_status: str | None = None
    undecided: dict | None = None  # a metric gate that could not decide ({reason, fix}: odin_magic.engine.metric_gate)

    @classmethod
    def of(cls, outcome) -> "Failure":
        metric = getattr(outcome, "metric", None) or {}
        return cls(outcome.reason, outcome.commands, outcome.missing, outcome.judge_status, metric.get("blocked"))


def route(stage_id: str, failure: Failure, current: Streak | None, max_repeats: int) -> Route:
    """Classify one failed gate evaluation of ``stage_id`` and say where the run goes.

    ``judge_status`` BLOCKED (seed 002): the judge says something outside the work stops it; class
    ``blocked``, no loopback, the run pauses for the human (the engine reverts the stage first)."""
    reason, commands, missing = failure.reason, failure.commands, failure.missing
    streak = next_streak(current, stage_id, reason)
    if failure.judge_status == "BLOCKED":
        return Route("blocked", streak, Blocked(
            kind="judge", stage=stage_id, reason=reason or "the judge is blocked",
            fix="resolve the blocker; then `odin run` re-runs the stage (no loopback was spent)"))
    if failure.undecided is not None:  # e.g. a baseline that cannot be measured: the human decides what to do
        return Route("environment", streak, Blocked(
            kind="environment", stage=stage_id, reason=failure.undecided["reason"],
            fix=f"{failure.undecided['fix']}; then `odin run` re-checks the gate (no loopback was spent)"))
    failed = failed_command(commands) if not missing else None
    problem = environment_problem(failed) if failed is not None else None
    if problem is not None:
        what, fix = problem
        return Route("environment", streak, Blocked(
            kind="environment", stage=stage_id, reason=what,
            fix=f"{fix}; then `odin run` re-checks the gate (no loopback was spent)"))
    if streak.count >= max_repeats:
        return Route("repeated", streak, Blocked(
            kind="repeated", stage=stage_id,
            reason=f"the same failure {streak.count} times in a row (max_repeats {max_repeats}): {reason}",
            fix="look at the failure, fix what the loop cannot (or change the loop); `odin run` continues, "
                "`odin step STAGE` re-runs one stage, `odin abandon` gives the run up"))
    return Route("recoverable", streak, None)
