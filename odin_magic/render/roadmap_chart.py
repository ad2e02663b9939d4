"""The roadmap chart (issue 22 item 6): phases over time, one bar per run of each phase, its loopbacks (failed
gates) marked, and an escalated or blocked phase's end marked. matplotlib, Agg, no pyplot (as render/charts.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Sequence

from matplotlib.dates import DateFormatter
from matplotlib.figure import Figure

from odin_magic.runs.state import RunState

STATUS_COLOURS = {"done": "#2a8a2a", "done_with_concerns": "#8fb935", "escalated": "#c33", "blocked": "#7a1f1f",
                  "active": "#4a7fc1", "paused": "#e0a040", "skipped": "#999", "pending": "#ccc"}


@dataclass
class PhaseRuns:
    """A phase as the chart draws it: its id, status and runs (oldest first)."""

    phase_id: str
    status: str
    runs: list[RunState] = field(default_factory=list)


def _at(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def _span(state: RunState) -> tuple[datetime, datetime] | None:
    start = _at(state.started_at)
    if start is None:
        return None
    ends = [t for t in [_at(state.ended_at)] + [_at(e.at) for e in state.history] if t is not None]
    return start, max(ends + [start])


def roadmap_chart(phases: Sequence[PhaseRuns]) -> Figure:
    """One row per phase (the roadmap's order, top down): a bar per run in the phase's status colour, a red ✕ at
    each failed gate (a loopback), and a marker where an escalated (▲) or blocked (■) phase stopped."""
    fig = Figure(figsize=(7.5, 0.5 * len(phases) + 1.4))
    ax = fig.add_subplot()
    marked = set()
    for row, phase in enumerate(phases):
        y = len(phases) - 1 - row
        colour = STATUS_COLOURS.get(phase.status, "#ccc")
        for state in phase.runs:
            span = _span(state)
            if span is None:
                continue
            start, end = span
            width = max((end - start).total_seconds(), 1.0) / 86400.0  # days: matplotlib's date unit
            ax.barh(y, width, left=start, height=0.5, color=colour, edgecolor="#444", linewidth=0.5)
            fails = [_at(e.at) for e in state.history if e.result == "fail"]
            fails = [t for t in fails if t is not None]
            if fails:
                ax.plot(fails, [y] * len(fails), "x", color="#c33", markersize=7, mew=2,
                        label=None if "loopback" in marked else "loopback (a failed gate)")
                marked.add("loopback")
        last = _span(phase.runs[-1]) if phase.runs else None
        if last is not None and phase.status in ("escalated", "blocked"):
            kind = phase.status
            ax.plot([last[1]], [y], "^" if kind == "escalated" else "s", color=STATUS_COLOURS[kind], markersize=10,
                    label=None if kind in marked else kind)
            marked.add(kind)
    ax.set_yticks(range(len(phases)))
    ax.set_yticklabels([f"{p.phase_id} ({p.status.replace('_', ' ')})" for p in reversed(phases)], fontsize=8)
    ax.set_ylim(-0.7, len(phases) - 0.3)
    ax.xaxis.set_major_formatter(DateFormatter("%H:%M:%S"))
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title("roadmap: phases over time", fontsize=9)
    if marked:
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def roadmap_chart_png(project_dir, roadmap) -> bytes | None:
    """The chart of the project's roadmap as a PNG; None while no phase has a run."""
    from pathlib import Path

    from odin_magic.render.charts import png_bytes
    from odin_magic.runs.roadmap_progress import phase_runs, progress

    states = progress(Path(project_dir), roadmap)
    runs = phase_runs(Path(project_dir))
    phases = [PhaseRuns(phase.id, states[phase.id].status,
                        [s for s in runs.get(phase.id, []) if s.run_id in states[phase.id].runs])
              for phase in roadmap.phases()]
    if not any(p.runs for p in phases):
        return None
    return png_bytes(roadmap_chart(phases))
