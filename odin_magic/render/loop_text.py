"""Loops and the project memory as the terminal shows them: the text ``odin list``, ``odin show``,
``odin validate`` and ``odin memory`` print, and the text/plain of the notebook's display objects for the
same commands (``%odin list``, ``%odin show``, ...), so that a terminal IPython or a text export reads
like the CLI."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Sequence

if TYPE_CHECKING:  # annotations only: `%load_ext odin_magic` does not load the models
    from odin_magic.loop.schema import Loop


@dataclass(frozen=True)
class LoopRow:
    """One loop of ``list``: a catalog entry as plain data."""

    name: str
    description: str = ""
    stages: int | None = None
    source: str = ""
    overrides: bool = False
    valid: bool = True
    active: bool = False
    errors: int = 0


def loop_rows(entries: Iterable[Any], active_loop: str | None = None) -> list[LoopRow]:
    """The catalog's entries (:class:`odin_magic.loop.catalog.LoopEntry`) as :class:`LoopRow`."""
    return [LoopRow(name=e.name, description=e.description or "", stages=e.stage_count, source=e.source,
                    overrides=e.overrides_builtin, valid=e.valid, active=e.name == active_loop,
                    errors=e.error_count)
            for e in entries]


def loop_list_text(rows: Sequence[LoopRow], validate: str = "odin validate") -> str:
    """Each loop on a line (stages, source, validity, the active run's mark), its description below it."""
    if not rows:
        return "no loops found"
    width = max(len(r.name) for r in rows)
    lines = []
    for r in rows:
        source = "project (overrides built-in)" if r.overrides else r.source
        status = "valid" if r.valid else f"INVALID ({r.errors} error(s))"
        stages = "? stages" if r.stages is None else f"{r.stages} stage" + ("" if r.stages == 1 else "s")
        mark = "  <- active run" if r.active else ""
        lines.append(f"{r.name:<{width}}  {stages:<9}  {source}  {status}{mark}")
        if r.description:
            lines.append(f"{'':<{width}}  {r.description}")
        if not r.valid:
            lines.append(f"{'':<{width}}  `{validate} {r.name}` shows what to fix")
    return "\n".join(lines)


def _agent_text(stage) -> str:
    agent = stage.resolved_agent
    if agent.role is None:
        return agent.label  # plain "inline" or "fresh"
    return f"{agent.role} ({'fresh' if agent.fresh else 'inline'})"


def _limits(loop: Loop) -> str:
    limits = [f"max_iterations {loop.max_iterations}"]
    if loop.max_no_progress:
        limits.append(f"max_no_progress {loop.max_no_progress}")
    if loop.timeout_seconds:
        limits.append(f"timeout {loop.timeout_seconds:g}s")
    if loop.budget:
        if loop.budget.max_tokens:
            limits.append(f"max {loop.budget.max_tokens} tokens")
        if loop.budget.max_usd:
            limits.append(f"max ${loop.budget.max_usd:g}")
    return ", ".join(limits)


def _stage_lines(loop: Loop, n: int, stage, width: int) -> list[str]:
    gate = stage.gate
    pause = "  (pauses for approval)" if gate.pauses else ""
    lines = [f"{n:>2}. {stage.id:<{width}}  gate {gate.mode:<8}  agent {_agent_text(stage)}{pause}"]
    if stage.title:
        lines.append(f"    {stage.title}")
    if stage.interview:
        lines.append(f"    deep interview: threshold {stage.interview.threshold:g}, hard cap {stage.interview.hard_cap}")
    if stage.consumes:
        lines.append(f"    consumes: {', '.join(stage.consumes)}")
    if stage.produces:
        lines.append(f"    produces: {', '.join(stage.produces)}")
    lines.append(f"    check: {' '.join(gate.check.split())}")
    for command in gate.commands:
        timeout = f"  (timeout {command.timeout:g}s)" if command.timeout else ""
        lines.append(f"    run: {' '.join(command.cmd.split())}{timeout}")
    if gate.on_fail:
        lines.append(f"    on fail: back to {gate.on_fail} (stage {loop.stage_ids().index(gate.on_fail) + 1})")
    else:
        lines.append("    on fail: retry this stage")
    return lines


def render_loop(loop: Loop, source: str) -> str:
    """A plain-text picture of a loop: its stages in order, gates, roles and loopbacks."""
    lines = [f"{loop.name}" + (f" (version {loop.version})" if loop.version is not None else "")]
    if loop.description:
        lines.append(f"  {loop.description.strip()}")
    lines += [f"  source: {source}", f"  limits: {_limits(loop)}", ""]
    width = max(len(i) for i in loop.stage_ids())
    for n, stage in enumerate(loop.stages, 1):
        lines += _stage_lines(loop, n, stage, width)
        if n < len(loop.stages):
            lines.append("     |")
    lines.append("    done")
    edges = [(s.id, s.gate.on_fail) for s in loop.stages if s.gate.on_fail]
    if edges:
        lines += ["", "loopbacks:"] + [f"  {src} --fail--> {dst}" for src, dst in edges]
    return "\n".join(lines)


def validation_text(reports: Sequence[Any]) -> str:
    """Each report (:class:`odin_magic.loop.diagnostics.ValidationReport`) as ``odin validate`` prints it, and
    the count of files checked when there are several."""
    lines = [r.format() for r in reports]
    if len(reports) > 1:
        lines.append(checked_line(reports))
    return "\n".join(lines)


def checked_line(reports: Sequence[Any]) -> str:
    """How many files were checked, how many are invalid and how many could not be read."""
    unreadable = [r for r in reports if r.unreadable is not None]
    checked = [r for r in reports if r.unreadable is None]
    missing = f"; {len(unreadable)} missing or unreadable" if unreadable else ""
    return f"{len(checked)} file(s) checked, {sum(not r.ok for r in checked)} invalid{missing}"


def memory_text(where: Any, entries: Sequence[Any]) -> str:
    """The project memory's entries (:class:`odin_magic.learning.memory.Entry`), each with its id, kind, stage,
    run and time, its text below; where it lives when it is empty."""
    if not entries:
        return f"no memory yet ({where}): decisions and lessons are written as runs end"
    return "\n".join(f"{e.id}  {e.kind:<8}  stage {e.stage}  run {e.run_id}  {e.at}\n    {e.text}" for e in entries)
