"""What a retry is told about the gate that failed: the stage and the command, the real error, the judge's findings.

A gate's one-line reason ("exited 2: ERROR tests/test_add.py | 1 error") does not
say what broke; its evidence does (``E   ImportError: cannot import name 'add'``).
After a failed gate the next stage execution's brief carries:

* which stage's gate failed (after an ``on_fail`` loopback it is a later stage's,
  not the one that now runs) and its reason;
* each failed command, its status and the relevant part of its output: the
  ``E``/``Traceback``/assertion/error lines with a few lines of context around
  them, or the output's end when none is found, within :data:`EXCERPT_CHARS`;
* the judge's blocking findings, verbatim, when a judge failed it.

Everything is redacted (:mod:`odin_magic.core.secrets`) before it reaches a prompt.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from odin_magic.core.commands import CommandEvidence
from odin_magic.core.secrets import redact_text
from odin_magic.runs import evidence as evidence_log
from odin_magic.runs.state import HistoryEntry
from odin_magic.workers.prompts import command_status

#: Of one failed command's output quoted in a retry brief.
EXCERPT_CHARS = 3_000
#: Lines of context kept before and after a relevant line.
CONTEXT = 2
#: Failed commands and blocking findings quoted (the rest are counted).
MOST = 3
FINDINGS = 10

_RELEVANT = re.compile(
    r"^E\s|Traceback \(most recent call last\)|^\s*File \"|Error\b|Exception\b|^\s*assert\b|AssertionError"
    r"|^(FAILED|ERROR)\b|^FAIL:|--- FAIL|panicked at|^\s*(>|-|\+)\s.*(==|!=)"
)


def relevant_output(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The part of a command's output that says what went wrong, at most ``limit`` characters."""
    lines = text.rstrip().splitlines()
    marked = [i for i, line in enumerate(lines) if _RELEVANT.search(line)]
    if not marked:
        tail = "\n".join(lines)
        return tail if len(tail) <= limit else "…\n" + tail[-limit:]
    keep: list[tuple[int, int]] = []  # merged [start, end) ranges around the relevant lines
    for i in marked:
        start, end = max(0, i - CONTEXT), min(len(lines), i + CONTEXT + 1)
        if keep and start <= keep[-1][1]:
            keep[-1] = (keep[-1][0], max(end, keep[-1][1]))
        else:
            keep.append((start, end))
    parts = ["\n".join(lines[a:b]) for a, b in keep]
    excerpt = "\n…\n".join(parts)
    if len(excerpt) <= limit:
        return excerpt
    head = limit * 2 // 3  # the first error and its context; the runner's summary at the end
    return excerpt[:head] + "\n… (cut) …\n" + excerpt[-(limit - head):]


def _recorded(cmd: dict[str, Any]) -> CommandEvidence:
    """A command's evidence as the gate's evidence record holds it."""
    return CommandEvidence(cmd=str(cmd.get("cmd")), exit_code=cmd.get("exit_code"), timed_out=bool(cmd.get("timed_out")),
                           duration_s=cmd.get("duration_s") or 0.0, stdout_tail=cmd.get("stdout_tail") or "",
                           stderr_tail=cmd.get("stderr_tail") or "")


def _command_part(cmd: CommandEvidence) -> str:
    output = "\n".join(t for t in (cmd.stdout_tail, cmd.stderr_tail) if t.strip())
    part = f"Command: {cmd.cmd}   [{command_status(cmd)}]"
    if output.strip():
        part += "\nIts output (the relevant part):\n" + relevant_output(output)
    return part


def failure_brief(failed_stage: str, reason: str | None, evidence: dict[str, Any] | None) -> str:
    """The retry brief's account of a failed gate (see the module docstring)."""
    lines = [f"The gate of stage {failed_stage} failed: {reason or 'no reason recorded'}"]
    evidence = evidence or {}
    failed = [c for c in map(_recorded, evidence.get("commands") or []) if not c.ok]
    for cmd in failed[:MOST]:
        lines += ["", _command_part(cmd)]
    if len(failed) > MOST:
        lines += ["", f"({len(failed) - MOST} more failed command(s) not shown)"]
    verdict = evidence.get("verdict") or {}
    blocking = [str(b) for b in verdict.get("blocking") or []]
    if blocking:
        lines += ["", "The judge's blocking findings (verbatim):"]
        lines += [f"- {b}" for b in blocking[:FINDINGS]]
        if len(blocking) > FINDINGS:
            lines.append(f"- ... and {len(blocking) - FINDINGS} more")
    return redact_text("\n".join(lines))


def last_failure(run_dir: Any, history: Sequence[HistoryEntry]) -> str | None:
    """The retry brief after the run's last gate evaluation, when it failed (None otherwise)."""
    if not history or history[-1].result != "fail":
        return None
    entry = history[-1]
    evidence = None
    if entry.evidence:
        try:
            evidence = evidence_log.read_entry(run_dir, entry)
        except evidence_log.EvidenceChanged as exc:  # a command changed it: never shown as the gate's
            return failure_brief(entry.stage, entry.reason, None) + f"\n\n(its evidence is not shown: {exc})"
        except (OSError, ValueError):  # unreadable evidence: the reason alone still says something
            evidence = None
    return failure_brief(entry.stage, entry.reason, evidence)
