"""A run's metric history as text: one line per metric gate, the figure over its evaluations.

``p95 latency: 182 → 170 → 151 ms (baseline 182, target 160)`` — the first baseline, then each evaluation's
figure. ``odin status`` and ``%odin status`` print the same lines (the notebook's text/plain is the CLI's);
the report lists them above its metric chart (:mod:`odin_magic.render.metric_chart`).
"""

from __future__ import annotations

from typing import Sequence

from odin_magic.core.figures import shown
from odin_magic.runs.metric_history import MetricSeries, measured_stages, read_series

#: The figures a line shows at most (the first baseline, then the latest ones).
MOST = 10


def metric_line(s: MetricSeries, with_stage: bool = False) -> str:
    """``p95 latency: 182 → 170 → 151 ms (baseline 182, target 160)``."""
    base = s.first_baseline
    figures = ["—" if p.figure is None else shown(p.figure) for p in s.points]
    if len(figures) > MOST - 1:
        figures = ["…"] + figures[-(MOST - 2):]
    chain = " → ".join(([shown(base)] if base is not None else []) + figures)
    notes = [f"baseline {shown(base)}" if base is not None else "no baseline"]
    if s.target is not None:
        notes.append(f"target {shown(s.target)}")
    last = s.points[-1] if s.points else None
    if last is not None and s.target is not None and last.figure is not None and _reached(s, last.figure):
        notes.append("reached")
    name = s.name + (f" ({s.stage})" if with_stage else "")
    unit = f" {s.unit}" if s.unit else ""
    return f"{name}: {chain}{unit} ({', '.join(notes)})"


def _reached(s: MetricSeries, figure: float) -> bool:
    return figure <= s.target if s.direction == "lower" else figure >= s.target


def metric_lines(series: Sequence[MetricSeries]) -> list[str]:
    """A line per series; the stage is named when two gates measure under the same name."""
    names = [s.name for s in series]
    return [metric_line(s, with_stage=names.count(s.name) > 1) for s in series]


def metric_status_lines(run_dir, state, loop) -> list[str]:
    """``odin status``'s metric lines for a run (``loop`` None: every stage's evidence is read)."""
    return metric_lines(read_series(run_dir, state.history, measured_stages(loop)))


def metric_block(lines: Sequence[str]) -> str:
    """``odin status``'s metric block (empty when no metric gate measured)."""
    if not lines:
        return ""
    return "\n".join(["metrics (the first baseline, then the figure at each evaluation of the gate)"]
                     + [f"  {line}" for line in lines])
