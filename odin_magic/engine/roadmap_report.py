"""The report every `odin roadmap run` leaves: ``.odin-loop/roadmap-report.md`` (how it ended, each phase)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from odin_magic.core.atomic import write_atomic
from odin_magic.loop.roadmap import Roadmap
from odin_magic.runs.roadmap_progress import PhaseProgress

REPORT_FILE = ".odin-loop/roadmap-report.md"
_WORDS = {"complete": "the roadmap is complete", "paused": "paused: a phase waits for you",
          "needs_person": "stopped (unattended): a phase needs a person", "escalated": "stopped: a phase is escalated",
          "blocked": "stopped: a phase is blocked"}


def report_text(roadmap: Roadmap, states: dict[str, PhaseProgress], ending: str, lines: list[str]) -> str:
    out = [f"# Roadmap report: {roadmap.title}", "",
           f"{datetime.now().isoformat(timespec='seconds')}: {_WORDS.get(ending, ending)} (autonomy {roadmap.autonomy})",
           "", "| phase | status | iterations | cost | last run |", "| --- | --- | --- | --- | --- |"]
    for phase in roadmap.phases():
        p = states[phase.id]
        out.append(f"| {phase.id} {phase.title} | {p.status.replace('_', ' ')}"
                   + (f" ({p.pause})" if p.pause else "") + f" | {p.iterations} | {_cost(p)} | {p.last_run or '-'} |")
    if lines:
        out += ["", "## This command", ""] + [f"    {line}" for text in lines for line in text.splitlines()]
    return "\n".join(out) + "\n"


def _cost(p: PhaseProgress) -> str:
    """The phase's runs' cost, and its contract's (the model's proposals and interview) when it had one."""
    from odin_magic.render.roadmap_view import contract_cost_text

    c = p.contract_cost
    return f"${p.cost_usd:.2f}" + (f"; {contract_cost_text(c)}" if c is not None else "")


def write_report(project_dir: Path, roadmap: Roadmap, states: dict[str, PhaseProgress], ending: str,
                 lines: list[str]) -> Path:
    path = Path(project_dir) / REPORT_FILE
    write_atomic(path, report_text(roadmap, states, ending, lines), within=Path(project_dir) / ".odin-loop")
    return path
