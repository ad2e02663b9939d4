"""Charts as PNG (matplotlib, Agg), updated in place through IPython display handles.

PNGs show the same in JupyterLab, Notebook 7, VS Code and a saved notebook.
Figures are built with :class:`matplotlib.figure.Figure` and rendered by the
Agg canvas directly: no pyplot, no global figure state, safe from a
background thread.
"""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from matplotlib.ticker import MaxNLocator

from odin_magic.loop.schema import Loop
from odin_magic.render.text import cost_text
from odin_magic.runs.state import RunState

_MODE_COLOURS = {"ai": "#cfe8ff", "ai+human": "#ffe3b3", "human": "#ffe3b3"}


def png_bytes(fig: Figure, dpi: int = 90) -> bytes:
    FigureCanvasAgg(fig)  # attach the Agg canvas: no pyplot, no GUI backend
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


# -- the loop diagram ----------------------------------------------------------------------


def loop_diagram(loop: Loop) -> Figure:
    """Stages left to right, forward arrows, ``on_fail`` back-edges, gate modes and roles."""
    n = len(loop.stages)
    width = max(6.0, 1.9 * n)
    fig = Figure(figsize=(width, 3.2))
    ax = fig.add_subplot()
    ax.set_xlim(-0.6, n - 0.4)
    index = {s.id: i for i, s in enumerate(loop.stages)}
    span = max([abs(index[s.gate.on_fail] - i) for i, s in enumerate(loop.stages)
                if s.gate.on_fail in index] + [1])
    bottom = -0.75 - 0.25 * span
    ax.set_ylim(bottom, 1.0)
    ax.axis("off")
    for i, stage in enumerate(loop.stages):
        mode = stage.gate.mode
        box = FancyBboxPatch((i - 0.42, -0.35), 0.84, 0.7, boxstyle="round,pad=0.03",
                             facecolor=_MODE_COLOURS.get(mode, "#eee"), edgecolor="#444")
        ax.add_patch(box)
        ax.text(i, 0.1, stage.id, ha="center", va="center", fontsize=8.5, weight="bold")
        agent = stage.resolved_agent
        role = agent.label + (" (fresh)" if agent.fresh and agent.role else "")
        if stage.interview is not None:
            role += " · deep interview"
        ax.text(i, -0.17, role, ha="center", va="center", fontsize=7, color="#333")
        gate = "gate: " + mode + (" + command" if stage.gate.run else "")
        ax.text(i, 0.5, gate, ha="center", va="bottom", fontsize=7, color="#555")
        if i + 1 < n:
            ax.add_patch(FancyArrowPatch((i + 0.44, 0), (i + 0.56, 0), arrowstyle="-|>", mutation_scale=10,
                                         color="#444"))
    back_edges = [(index[s.id], index[s.gate.on_fail]) for s in loop.stages
                  if s.gate.on_fail and s.gate.on_fail in index]
    for k, (src, dst) in enumerate(back_edges):
        if src == dst:  # retry the same stage
            ax.add_patch(FancyArrowPatch((src + 0.2, -0.38), (src - 0.2, -0.38), connectionstyle="arc3,rad=-1.2",
                                         arrowstyle="-|>", mutation_scale=9, color="#c33"))
            continue
        rad = -(0.35 + 0.08 * (k % 3))  # negative: a leftward (back) edge bends below the boxes
        ax.add_patch(FancyArrowPatch((src, -0.38), (dst, -0.38), connectionstyle=f"arc3,rad={rad}",
                                     arrowstyle="-|>", mutation_scale=9, color="#c33", linestyle="--"))
        depth = -rad * abs(src - dst) / 2
        ax.text((src + dst) / 2, -0.38 - depth - 0.08, f"on_fail {loop.stages[src].id}→{loop.stages[dst].id}",
                ha="center", va="top", fontsize=6.5, color="#c33", zorder=5,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})  # readable where arrows cross
    title = loop.name + (f" — {loop.description}" if loop.description else "")
    ax.set_title(_clip(title, 110) + f"   (max_iterations {loop.max_iterations})", fontsize=9)
    ax.text(-0.55, bottom + 0.02, "blue: ai gate   orange: ai+human gate (pauses)   red dashed: on_fail loopback",
            fontsize=6.5, color="#555", va="bottom")
    return fig


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# -- run charts --------------------------------------------------------------------------


def gate_failures_by_stage(state: RunState) -> dict[str, int]:
    counts: dict[str, int] = {}
    for entry in state.history:
        if entry.result == "fail":
            counts[entry.stage] = counts.get(entry.stage, 0) + 1
    return counts


@dataclass(frozen=True)
class RunChartData:
    """What the run chart draws, taken from a run's state: equal data, the same picture."""

    ids: tuple[str, ...]
    loopbacks: tuple[int, ...]
    fails: tuple[int, ...]
    tokens: tuple[int, ...]
    cost: tuple[float, ...]
    offline: bool  # the cost is an estimate (nothing spent)
    total_iterations: int
    max_iterations: int
    total_tokens: int
    cost_label: str

    def figure(self) -> Figure:
        return _run_figure(self)


def run_chart_data(state: RunState, stage_ids: Sequence[str] | None = None) -> RunChartData:
    ids = list(stage_ids or [])
    for sid in list(state.iterations) + [e.stage for e in state.history] + list(state.usage.by_stage):
        if sid not in ids:
            ids.append(sid)
    fails = gate_failures_by_stage(state)
    by_stage = state.usage.by_stage
    return RunChartData(
        ids=tuple(ids), loopbacks=tuple(state.iterations.get(s, 0) for s in ids),
        fails=tuple(fails.get(s, 0) for s in ids),
        tokens=tuple(by_stage[s].total_tokens if s in by_stage else 0 for s in ids),
        cost=tuple(by_stage[s].cost_usd if s in by_stage else 0.0 for s in ids),
        offline=state.usage.total.offline_usd > 0, total_iterations=state.total_iterations,
        max_iterations=state.max_iterations, total_tokens=state.usage.total.total_tokens,
        cost_label=cost_text(state.usage.total))


def run_chart(state: RunState, stage_ids: Sequence[str] | None = None) -> Figure:
    """Two panels: loopbacks and gate failures per stage; tokens and cost per stage."""
    return run_chart_data(state, stage_ids).figure()


def _run_figure(d: RunChartData) -> Figure:
    ids = d.ids
    fig = Figure(figsize=(max(6.0, 0.9 * len(ids) + 2), 3.4))
    ax1, ax2 = fig.subplots(1, 2)
    x = range(len(ids))
    w = 0.38
    ax1.bar([i - w / 2 for i in x], list(d.loopbacks), w, label="loopbacks", color="#e08a3c")
    ax1.bar([i + w / 2 for i in x], list(d.fails), w, label="gate failures", color="#c33")
    ax1.set_title(f"loopbacks {d.total_iterations}/{d.max_iterations}", fontsize=9)
    _stage_axis(ax1, ids)
    ax1.legend(fontsize=7)
    ax1.set_ylim(0, max(d.loopbacks + d.fails + (1,)) + 0.5)  # counts: from 0, whole numbers (no -0.04 axis)
    ax1.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax2.bar(list(x), list(d.tokens), 0.6, color="#4a7fc1")
    ax2.set_ylabel("tokens", fontsize=8)
    if any(d.cost):  # no cost line (and axis) for a free model: a flat line at 0 on a -0.04..0.04 axis says nothing
        ax2b = ax2.twinx()
        ax2b.plot(list(x), list(d.cost), "o-", color="#2a2",
                  label="≈ cost if run on Claude (USD)" if d.offline else "cost (USD)")
        ax2b.set_ylabel("≈ USD if run on Claude (nothing spent)" if d.offline else "USD", fontsize=8)
        ax2b.set_ylim(0, max(d.cost) * 1.15)
        ax2b.tick_params(axis="y", labelsize=7)
    if not any(d.tokens):
        ax2.set_ylim(0, 1)
    ax2.set_title(f"tokens {d.total_tokens:,}, cost {d.cost_label}", fontsize=9)
    _stage_axis(ax2, ids)
    fig.tight_layout()
    return fig


def _stage_axis(ax, ids: Sequence[str]) -> None:
    ax.set_xticks(list(range(len(ids))))
    ax.set_xticklabels(ids, rotation=30, ha="right", fontsize=7)
    ax.tick_params(axis="y", labelsize=7)


@dataclass(frozen=True)
class InterviewRound:
    round: int
    ambiguity: float
    challenge: str | None = None  # e.g. "contrarian" when a challenge fired this round


def interview_convergence(rounds: Sequence[InterviewRound], threshold: float) -> Figure:
    """Ambiguity per round against the threshold, challenge rounds marked."""
    fig = Figure(figsize=(5.5, 3.0))
    ax = fig.add_subplot()
    xs = [r.round for r in rounds]
    ys = [r.ambiguity for r in rounds]
    ax.plot(xs, ys, "o-", color="#4a7fc1", label="ambiguity")
    ax.axhline(threshold, color="#2a2", linestyle="--", label=f"threshold {threshold:.2f}")
    for r in rounds:
        if r.challenge:
            ax.axvline(r.round, color="#c33", alpha=0.3)
            ax.annotate(r.challenge, (r.round, r.ambiguity), textcoords="offset points", xytext=(3, 6),
                        fontsize=7, color="#c33")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("round", fontsize=8)
    ax.set_ylabel("ambiguity", fontsize=8)
    ax.set_title("interview convergence", fontsize=9)
    if xs:
        ax.set_xticks(xs)
    else:  # no round scored yet: rounds 1.. on the axis, not matplotlib's -0.04..0.04
        ax.set_xlim(0.5, 3.5)
        ax.set_xticks([1, 2, 3])
        ax.text(2, 0.55, "no round scored yet", ha="center", va="center", fontsize=8, color="#777")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


@dataclass(frozen=True)
class ConvergenceData:
    """What the interview's convergence chart draws."""

    rounds: tuple[InterviewRound, ...]
    threshold: float

    def figure(self) -> Figure:
        return interview_convergence(self.rounds, self.threshold)


class ChartData(Protocol):
    """Hashable values a chart draws (:class:`RunChartData`, :class:`ConvergenceData`): equal values, equal PNG."""

    def figure(self) -> Figure: ...


class _PngMemo:
    """The PNGs of the last few charts drawn, by what they draw: a live view's chart shown again in the next
    cell, or re-drawn when nothing it shows has changed, costs no drawing (a drawing takes ~0.2 s of CPU)."""

    def __init__(self, size: int = 16):
        self._size = size
        self._pngs: OrderedDict[tuple[ChartData, int], bytes] = OrderedDict()
        self._lock = threading.Lock()  # the cell's drawing and the redraws off the drive's thread

    def png(self, data: ChartData, dpi: int) -> bytes:
        key = (data, dpi)
        with self._lock:
            if key in self._pngs:
                self._pngs.move_to_end(key)
                return self._pngs[key]
        png = png_bytes(data.figure(), dpi)
        with self._lock:
            self._pngs[key] = png
            while len(self._pngs) > self._size:
                self._pngs.popitem(last=False)
        return png


_MEMO = _PngMemo()


def chart_png(data: ChartData, dpi: int = 90) -> bytes:
    """``data``'s chart as PNG bytes, drawn once for equal data."""
    return _MEMO.png(data, dpi)


# -- display handles ---------------------------------------------------------------------


class ChartHandle:
    """A PNG shown once with a display id and re-rendered in place on ``update``.

    ``render`` is called with the arguments given to :meth:`show` / :meth:`update` and returns either a
    :class:`Figure`, None (nothing changed: the image shown stands), or a :class:`ChartData`: the values
    the chart draws, drawn only when they differ from the ones shown (and taken from :func:`chart_png`'s
    memo when drawn before, e.g. by the previous cell's view).
    """

    def __init__(self, render: Callable[..., "Figure | ChartData | None"]):
        self.render = render
        self._handle = None
        self._shown: ChartData | None = None  # the data of the image shown
        self.png: bytes | None = None
        self.retired = False  # a later cell shows the charts: this handle draws no more
        # the cell's first drawing and the redraws off the drive's thread, one at a time: else a redraw arriving
        # while the cell still draws would display a second image and its data would hide the first one's
        self._lock = threading.RLock()

    def _image(self, *args, **kwargs):
        from IPython.display import Image

        made = self.render(*args, **kwargs)
        if made is None:  # unchanged since the last drawing (e.g. metric_chart.LiveMetricChart)
            return None
        if isinstance(made, Figure):
            self.png = png_bytes(made)
        elif made == self._shown and self._handle is not None:
            return None
        else:
            self.png, self._shown = chart_png(made), made
        return Image(data=self.png, format="png")

    def show(self, *args, **kwargs) -> None:
        from IPython.display import display

        with self._lock:
            self._shown = None  # a new display: drawn (or taken from the memo) whatever was shown before
            self._handle = display(self._image(*args, **kwargs), display_id=True)

    def placeholder(self, text: str = "charts appear when the first drive ends") -> None:
        """Reserve the chart's place in this cell, to be filled in later (from any thread)."""
        from IPython.display import display

        with self._lock:
            self._handle = display({"text/plain": f"({text})", "text/html": f"<i style='color:#777'>{text}</i>"},
                                   raw=True, display_id=True)

    def retire(self, text: str = "(charts: in the latest cell of this run)") -> None:
        """A later cell shows the run's charts: this one becomes a line of text (nothing heavy is kept)."""
        with self._lock:
            if self._handle is not None:
                self._handle.update({"text/plain": text, "text/html": f"<i style='color:#777'>{text}</i>"}, raw=True)
            self.png, self.retired = None, True

    def update(self, *args, **kwargs) -> None:
        with self._lock:
            if self.retired:
                return
            if self._handle is None:
                self.show(*args, **kwargs)
            elif (image := self._image(*args, **kwargs)) is not None:
                self._handle.update(image)
