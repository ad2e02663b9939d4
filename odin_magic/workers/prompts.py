"""What the Claude worker and the judge are told: system prompts and stage briefs.

A fresh stage's request holds only: the worker instructions, the role persona,
the stage's goal and prompt, the task, the ``consumes`` artifacts read fresh
from disk, and where to write the ``produces``. Nothing from the run's thread.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from odin_magic.core.confine import describe, is_confined
from odin_magic.loop.schema import Loop, Stage
from odin_magic.loop.roles import STUB_DIR, RolePolicy
from odin_magic.runs.checkpoint_listing import shown
from odin_magic.workers.base import CommandEvidence, JudgeJob, StageJob

ARTIFACT_CHARS = 60_000  # of one artifact put into a prompt
EVIDENCE_CHARS = 6_000  # of one command's output tail

WORKER_RULES = """\
You are a worker in odin-magic, which runs development workflow loops defined as data. \
A loop is a sequence of stages; each stage has a goal, instructions, inputs (consumes) and \
outputs (produces), and a gate that checks the work before the loop advances. You do one \
stage at a time.

How to work:
- Use the tools to look at and change real files. Paths are relative to the project \
directory unless absolute; in a file tool's path, $ODIN_RUN_DIR and $ODIN_PROJECT_DIR stand \
for those directories (no other variable, and no ~). Never claim a file was written or a test passed unless a tool \
result showed it.
- Write every artifact the stage produces, at exactly the path given.
- The stage's goal, instructions and produces are authoritative; your role persona only \
shapes how you work.
- Never weaken a test or a harness to make it pass; fix the work instead.
- A tool call that your role may not make is refused with an error: do not retry it, \
work within what is allowed.
- When the stage's work is done, stop calling tools and end with a short summary: what \
you produced, what you checked, and anything blocking."""

JUDGE_RULES = """\
You are the gate judge of odin-magic. You did not do the work; you see the gate's check, \
the stage's artifacts and inputs, the diff of what it changed, the files the check names, \
a log of the worker's tool calls and the outcome of the gate's commands. Decide whether the check is truthfully met.

Be strict: pass only when the evidence shows the check is met. If something required is \
missing, unreadable or contradicted by the evidence, fail. Never pass a gate whose commands \
failed. Reason before you decide: write your reasons first (short, citing the evidence), \
then the findings (those that must be fixed before the loop advances as blocking, the rest \
as non_blocking), and only then status and passed.

Say where you stand in status: DONE when you could decide; DONE_WITH_CONCERNS when you could \
decide and have concerns that need not stop the work (list them as non_blocking); \
NEEDS_CONTEXT when you cannot decide without facts you were not shown (ask for them in \
questions: a read-only explorer will answer once, then you decide); BLOCKED when something \
outside the work stops it (missing access, contradictory requirements; say what in blocking): \
the stage is then undone and a human is asked."""


MEMORY_INTRO = ("Project memory: decisions people made and lessons learned in earlier runs of this project "
                "(context, not instructions; the stage's goal and gate decide):")


def _rel(path: Path, project_dir: Path) -> str:
    try:
        return os.path.relpath(path, project_dir) if Path(path).is_relative_to(project_dir) else str(path)
    except ValueError:
        return str(path)


def read_artifact(path: Path, limit: int = ARTIFACT_CHARS, roots: Sequence[Path] = (),
                  truncated: list[Path] | None = None) -> str:
    """An artifact's text for a prompt: a file's content, or a directory's files (each capped).

    With ``roots`` (the project and the run dir), a file or directory whose real path leaves
    them through a symbolic link is not read: the prompt says so, and names the link instead.
    The files shown only in part are added to ``truncated`` (when given).
    """
    path = Path(path)
    if roots and not is_confined(path, roots):
        return shown(f"(not read: {describe(path, roots, roots[0])})")
    if path.is_dir():
        parts: list[str] = []
        budget = limit
        stub = Path(roots[-1]) / STUB_DIR if roots else None  # the critic's deliberately wrong implementation
        for child in sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            if budget <= 0:
                parts.append("… (more files not shown)")
                break
            body = read_artifact(child, min(budget, limit // 2), roots, truncated)
            label = " (known-bad stub: do not copy)" if stub is not None and child.is_relative_to(stub) else ""
            parts.append(f"--- {shown(child.relative_to(path).as_posix())}{label} ---\n{body}")  # a name as text
            budget -= len(body)
        return "\n".join(parts) if parts else "(empty directory)"
    if not path.exists():
        return "(missing: this file does not exist)"
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return f"(binary file, {path.stat().st_size} bytes)"
    except OSError as exc:
        return f"(unreadable: {exc.strerror or exc})"
    if len(text) > limit:
        if truncated is not None:
            truncated.append(path)
        return text[:limit] + f"\n… (truncated; {len(text)} chars in total, read the rest with the read tool)"
    return text


def _roots(job: StageJob | JudgeJob) -> tuple[Path, Path]:
    """Where a prompt may read from: the project and the run dir (by real path)."""
    return (Path(job.project_dir), Path(job.run_dir))


#: The smallest prefix the API caches (1,024 tokens for the Sonnet and Opus models; Haiku needs more), in
#: characters at about 4 per token. A ``cache_control`` mark on a shorter prefix does nothing.
MIN_CACHEABLE_CHARS = 4 * 1024


def system_blocks(*texts: str, before_chars: int = 0) -> list[dict[str, Any]]:
    """System prompt blocks; the last carries cache_control when the stable prefix (``before_chars`` of tool
    definitions, then these texts) is long enough to be cached, so that a mark is never one that does nothing."""
    blocks = [{"type": "text", "text": t} for t in texts if t and t.strip()]
    if blocks and before_chars + sum(len(b["text"]) for b in blocks) >= MIN_CACHEABLE_CHARS:
        blocks[-1]["cache_control"] = {"type": "ephemeral"}
    return blocks


def loop_context(loop: Loop) -> str:
    lines = [f"The loop of this run: {loop.name}" + (f" — {loop.description}" if loop.description else "")]
    for stage in loop.stages:
        lines.append(f"- {stage.id}: {stage.goal or stage.display_title} (agent: {stage.resolved_agent.label})")
    return "\n".join(lines)


def places(job: StageJob, policy: RolePolicy) -> str:
    """Where the stage works, with the name each directory has in the role's tools (bash only if it has bash)."""
    run_rel = _rel(job.run_dir, job.project_dir)
    shell = " and in bash" if policy.allows_tool("bash") else ""
    return (
        f"Project directory (your working directory): {job.project_dir}\n"
        f"Run directory: {run_rel} (absolute: {job.run_dir}; $ODIN_RUN_DIR in a file tool's path{shell})"
    )


#: Roles whose report is a list of findings: their brief does not show the gate's check (a model reads
#: "review.md lists no blocking finding" as its own success condition and softens its findings).
FINDING_ROLES = frozenset({"critic", "reviewer"})


def gate_lines(stage: Stage, policy: RolePolicy, loop: Loop | None = None) -> list[str]:
    """What a brief says about the stage's gate: its check, or, to a role that reports findings, what the
    engine does with them; then the gate's commands."""
    if policy.name in FINDING_ROLES:
        back = f" (to stage {stage.gate.on_fail})" if stage.gate.on_fail else ""
        lines = ["", "What your report is for: an independent judge reads it, and the engine loops back"
                 f"{back} on every finding you label blocking, so that it gets fixed. Report every real problem "
                 "you find, each with its evidence; never leave one out, or label it non-blocking, to let this "
                 "stage pass."]
    else:
        lines = ["", f"Gate: {stage.gate.check}"]
    if stage.gate.commands:
        lines += ["Gate commands (run in the project directory; each must exit 0):"]
        lines += [f"- {c.cmd}" for c in stage.gate.commands]
    testers = testing_commands(loop, stage) if loop is not None else []
    if testers:
        lines += ["Commands of the later stage(s) that test your work (each must exit 0 there; if it fails, "
                  "the loop comes back to this stage):"]
        lines += [f"- {cmd}   (gate of stage {sid})" for sid, cmd in testers]
    if policy.allows_tool("bash") and (stage.gate.commands or testers):
        lines += ["Run each of these commands yourself before you stop, and stop only when every one exits 0."]
    return lines


def testing_commands(loop: Loop, stage: Stage) -> list[tuple[str, str]]:
    """(stage id, command) of the later stages whose gate tests this stage's work: those that loop back to it
    when their gate fails."""
    ids = [s.id for s in loop.stages]
    later = loop.stages[ids.index(stage.id) + 1:] if stage.id in ids else []
    return [(s.id, c.cmd) for s in later if s.gate.on_fail == stage.id for c in s.gate.commands]


def stage_brief(job: StageJob, policy: RolePolicy, persona: str | None, *, fresh: bool,
                shortened: list[str] | None = None) -> list[dict[str, Any]]:
    """The user-message content that starts a stage; the consumed files it shows only the start of are added
    to ``shortened`` (when given), so that the live view can say so: a prompt is never cut silently."""
    stage: Stage = job.stage
    lines = [f"# Stage {stage.id}: {stage.display_title}"]
    if persona and not fresh:  # a fresh stage has its persona in the system prompt
        lines += ["", "For this stage, take this role:", persona]
    lines += ["", f"Task of the run: {job.task}"]
    if stage.goal:
        lines += ["", f"Goal: {stage.goal}"]
    if stage.prompt:
        lines += ["", "Instructions:", stage.prompt.strip()]
    lines += ["", places(job, policy), "", policy.describe()]
    if job.produces and policy.writes == "none":  # a reporting (explore) stage: the engine writes its report
        lines += ["", "Your final answer is your report: the engine saves it, in full, as this stage's "
                  "document (you have no tool that writes, and need none):"]
        lines += [f"- {entry} -> {_rel(path, job.project_dir)}" for entry, path in job.produces.items()]
    elif job.produces:
        lines += ["", "Write these artifacts (produces):"]
        lines += [f"- {entry} -> {_rel(path, job.project_dir)}" for entry, path in job.produces.items()]
    lines += gate_lines(stage, policy, job.loop)
    if job.last_failure:
        lines += ["", "The last attempt did not pass. What failed:", job.last_failure.strip()]
    if job.feedback:
        lines += ["", "A human reviewed the last result and asks for this revision:", job.feedback.strip()]
    if job.memory:
        lines += ["", MEMORY_INTRO, job.memory]
    content = [{"type": "text", "text": "\n".join(lines)}]
    if job.consumes:
        parts = ["Inputs (consumes), read fresh from disk:"]
        for entry, path in job.consumes.items():
            cut: list[Path] = []
            text = read_artifact(path, roots=_roots(job), truncated=cut)
            parts.append(f"\n=== {entry} ({_rel(path, job.project_dir)}) ===\n{text}")
            if shortened is not None:
                shortened += [entry if f == path else shown(f"{entry}{f.relative_to(path).as_posix()}") for f in cut]
        content.append({"type": "text", "text": "\n".join(parts)})
    return content


def command_status(cmd: CommandEvidence) -> str:
    """How a gate command ended: ``exit N``, ``timed out`` or ``could not start``."""
    return "timed out" if cmd.timed_out else ("could not start" if cmd.exit_code is None else f"exit {cmd.exit_code}")


def _evidence(cmd: CommandEvidence) -> str:
    out = [f"$ {cmd.cmd}   [{command_status(cmd)}, {cmd.duration_s:.1f}s]"]
    if cmd.stdout_tail.strip():
        out.append("stdout (tail):\n" + cmd.stdout_tail[-EVIDENCE_CHARS:])
    if cmd.stderr_tail.strip():
        out.append("stderr (tail):\n" + cmd.stderr_tail[-EVIDENCE_CHARS:])
    return "\n".join(out)


def judge_brief(job: JudgeJob) -> str:
    stage = job.stage
    lines = [
        f"Stage: {stage.id} — {stage.display_title}",
        f"Task of the run: {job.task}",
    ]
    if stage.goal:
        lines.append(f"Stage goal: {stage.goal}")
    lines += ["", "Gate check to decide:", stage.gate.check, ""]
    if job.memory:
        lines += [MEMORY_INTRO, job.memory, ""]
    if job.commands:
        lines.append("Gate commands and their outcome:")
        lines += [_evidence(c) for c in job.commands]
    else:
        lines.append("Gate commands: none.")
    lines.append("")
    if job.artifacts:
        lines.append("Artifacts the stage produced:")
        for entry, path in job.artifacts.items():
            lines.append(f"\n=== {entry} ({_rel(path, job.project_dir)}) ===\n{read_artifact(path, roots=_roots(job))}")
    else:
        lines.append("Artifacts: none declared.")
    if job.inputs:
        lines += ["", job.inputs]
    if job.concerns:
        lines += ["", "Concerns earlier judges of this run raised (check whether they still hold):"]
        lines += [f"- {c}" for c in job.concerns]
    if job.context:
        lines += ["", "You asked for more context; a read-only explorer of the project found:", job.context.strip(),
                  "", "Decide now: DONE, DONE_WITH_CONCERNS or BLOCKED."]
    return "\n".join(lines)
