"""The metric chart: each metric gate's figure per evaluation against its baseline and target (a panel per
gate), as a :class:`matplotlib.figure.Figure` rendered by Agg (no pyplot: safe off the drive's thread, as
:mod:`odin_magic.render.charts`).

Drawn in the live view (re-drawn at each gate decision, off the drive's thread: :class:`LiveMetricChart`, whose
series grows by the new evidence only), in ``%odin status`` and in the run's report (``report/metric.png``, an
attachment of report.ipynb).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable, Sequence

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from odin_magic.render.metric_text import metric_line
from odin_magic.runs.metric_history import MetricSeries, SeriesCursor

#: Panels drawn at most (the latest gates'); ``odin status`` lists every one.
MOST_PANELS = 4
_PASS, _FAIL, _BLOCKED = "#2a2", "#c33", "#999"


def metric_chart(series: Sequence[MetricSeries]) -> Figure:
    """A panel per series: the figure per evaluation (green passed, red failed, grey undecided), the baseline
    each was compared with (dashed), the target (dotted)."""
    shown = list(series)[-MOST_PANELS:]
    fig = Figure(figsize=(6.0, 2.8 * max(1, len(shown))))
    if not shown:
        ax = fig.add_subplot()
        ax.axis("off")
        ax.text(0.5, 0.5, "no metric gate has measured yet", ha="center", va="center", fontsize=9, color="#777")
        return fig
    axes = fig.subplots(len(shown), 1, squeeze=False)
    for ax, s in zip(axes[:, 0], shown):
        _panel(ax, s, with_stage=[x.name for x in shown].count(s.name) > 1)
    fig.tight_layout()
    return fig


class LiveMetricChart:
    """The live view's metric chart: called with the run's state at each gate decision, it reads only the
    evidence of the history entries added since its last call (:class:`SeriesCursor`) and draws the chart
    again only when a series gained a point; None: nothing changed, the image shown stands (its first call
    always draws). A new run (another id) starts a series of its own."""

    def __init__(self, run_dir_for: Callable[[str], Path], stages: set[str] | None = None):
        self._run_dir_for = run_dir_for
        self._stages = stages
        self._run: str | None = None
        self.cursor: SeriesCursor | None = None
        self._lock = threading.Lock()  # the cell's first drawing and the redraws off the drive's thread

    def __call__(self, state) -> Figure | None:
        with self._lock:
            fresh = self.cursor is None or state.run_id != self._run
            if fresh:
                self._run, self.cursor = state.run_id, SeriesCursor(self._run_dir_for(state.run_id), self._stages)
            changed = self.cursor.update(state.history)
            return metric_chart(self.cursor.series) if fresh or changed else None


def _panel(ax, s: MetricSeries, with_stage: bool) -> None:
    xs = list(range(1, len(s.points) + 1))
    figures = [p.figure for p in s.points]
    measured = [(x, f) for x, f in zip(xs, figures) if f is not None]
    if measured:
        ax.plot([x for x, _ in measured], [f for _, f in measured], "-", color="#4a7fc1", zorder=2,
                label=s.name)
    dots: dict[str, list[tuple[int, float]]] = {}  # a line of markers per colour: not an artist per point
    for x, p in zip(xs, s.points):
        if p.figure is not None:
            dots.setdefault(_BLOCKED if p.blocked else _PASS if p.passed else _FAIL, []).append((x, p.figure))
    for colour, at in dots.items():
        ax.plot([x for x, _ in at], [f for _, f in at], "o", color=colour, zorder=3)
    baselines = [(x, p.baseline) for x, p in zip(xs, s.points) if p.baseline is not None]
    if baselines:  # each evaluation's baseline: a dash across its slot
        ax.hlines([b for _, b in baselines], [x - 0.4 for x, _ in baselines], [x + 0.4 for x, _ in baselines],
                  colors="#777", linestyles="--", label="baseline", zorder=1)
    if s.target is not None:
        ax.axhline(s.target, color=_PASS, linestyle=":", label=f"target {s.target:g}")
    ax.set_xlim(0.5, max(len(xs), 1) + 0.5)
    if len(xs) <= 20:
        ax.set_xticks(xs or [1])
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(f"evaluation of {s.stage}'s gate", fontsize=8)
    ax.set_ylabel(s.unit or ("score" if s.kind == "comparison" else "figure"), fontsize=8)
    better = "lower" if s.direction == "lower" else "higher"
    ax.set_title(f"{metric_line(s, with_stage)}   ({better} is better)", fontsize=8)
    ax.tick_params(labelsize=7)
    if ax.get_legend_handles_labels()[0]:  # nothing measured yet: no empty legend
        ax.legend(fontsize=7)
