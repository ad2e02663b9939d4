"""A metric gate's decision, from two figures: the baseline (before the stage's change) and the figure after it.

Pure: no command runs here (:mod:`odin_magic.engine.metric_gate` measures). The rules (docs/metrics.md):

* a delta within the samples' spread (the larger of the baseline's and the figure's) is **no change**: never
  an improvement, never a regression;
* worse than the baseline beyond the spread and the ``tolerance`` fails (a "must not regress" gate, when
  neither tolerance nor target is given);
* ``min_improvement``: the change must be better by at least that much, and beyond the spread;
* ``target``: the gate fails until the figure reaches it; without a baseline (it could not be measured) the
  target alone decides;
* undecided (the run is blocked, no loopback spent): the baseline's own samples spread more than the
  ``tolerance`` ("the measurement is noisier than the tolerance"), or there is no baseline and no target.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from odin_magic.core.figures import amount, median_and_spread, shown
from odin_magic.loop.schema import Measure


@dataclass(frozen=True)
class Figures:
    """One measurement's samples, their median (the figure) and spread."""

    samples: list[float]
    figure: float
    spread: float

    @classmethod
    def of(cls, samples: list[float]) -> "Figures":
        figure, spread = median_and_spread(samples)
        return cls(list(samples), figure, spread)

    def to_dict(self) -> dict:
        return {"samples": self.samples, "figure": self.figure, "spread": self.spread}


@dataclass(frozen=True)
class Decision:
    """What the figures decide: passed, failed (``reason``), or not decided (``blocked``: reason and fix)."""

    passed: bool
    summary: str  # "p95 latency 182 ms → 151 ms (−17%, target 160 ms) ✅"
    change: str  # improved | no change | worse | unknown (no baseline)
    delta: float | None = None  # figure minus baseline
    reason: str | None = None
    blocked: dict | None = field(default=None)  # {"reason", "fix"}: the gate could not decide


def value(m: Measure, x: float) -> str:
    return f"{shown(x)} {m.unit}" if m.unit else shown(x)


def _percent(delta: float, base: float) -> str:
    if base == 0:
        return ("+" if delta >= 0 else "−") + shown(abs(delta))
    pct = delta / abs(base) * 100
    return ("+" if pct >= 0 else "−") + (f"{abs(pct):.0f}%" if abs(pct) >= 1 else f"{abs(pct):.2g}%")


def _reached(m: Measure, figure: float) -> bool | None:
    if m.target is None:
        return None
    return figure <= m.target if m.direction == "lower" else figure >= m.target


def summary(m: Measure, after: Figures, base: Figures | None, passed: bool) -> str:
    """The gate's line: ``p95 latency 182 ms → 151 ms (−17%, target 160 ms) ✅``."""
    notes = [_percent(after.figure - base.figure, base.figure)] if base is not None else ["no baseline"]
    if m.target is not None:
        notes.append(f"target {value(m, m.target)}")
    start = f"{value(m, base.figure)} → " if base is not None else ""
    return f"{m.label} {start}{value(m, after.figure)} ({', '.join(notes)}) {'✅' if passed else '❌'}"


def _no_baseline(m: Measure, after: Figures, error: str) -> Decision:
    if m.target is None:
        return Decision(False, summary(m, after, None, False), "unknown", blocked={
            "reason": f"{m.label}: the baseline could not be measured: {error}",
            "fix": "make the measure command work in a copy of the before-tree, or (in a new run: a running run "
                   "keeps its loop) pin `baseline: <number>` or give a `target`"})
    passed = bool(_reached(m, after.figure))
    line = summary(m, after, None, passed)
    reason = None if passed else f"{line}: the target is not reached (the target alone decides: the baseline " \
                                 f"could not be measured: {error})"
    return Decision(passed, line, "unknown", reason=reason)


def compare(m: Measure, after: Figures, base: Figures | None, base_error: str | None = None) -> Decision:
    """Decide the gate from ``after`` and ``base`` (None: it could not be measured, ``base_error`` says why)."""
    if base is None:
        return _no_baseline(m, after, base_error or "unknown")
    delta = after.figure - base.figure
    better = -delta if m.direction == "lower" else delta  # > 0: an improvement
    noise = max(base.spread, after.spread)
    tolerance = amount(m.tolerance, base.figure)
    if m.tolerance is not None and base.spread > tolerance:
        return Decision(False, summary(m, after, base, False), "unknown", delta, blocked={
            "reason": f"{m.label}: the measurement is noisier than the tolerance: raise repeat or tolerance "
                      f"(the baseline's {len(base.samples)} samples spread {value(m, base.spread)}, tolerance "
                      f"{value(m, tolerance)})",
            "fix": "raise `repeat` or `tolerance` in the loop (a new run), or quiet the machine; `odin run` "
                   "measures the baseline again"})
    change = "no change" if abs(better) <= noise else "improved" if better > 0 else "worse"
    reason = _failure(m, after, base, change, (better, noise, tolerance))
    line = summary(m, after, base, reason is None)
    return Decision(reason is None, line, change, delta, reason=f"{line}: {reason}" if reason else None)


def _failure(m: Measure, after: Figures, base: Figures, change: str, numbers: tuple) -> str | None:
    """Why the figures fail the gate, or None."""
    better, noise, tolerance = numbers
    if change == "worse" and -better > tolerance:
        allowed = f"the tolerance {m.tolerance} ({value(m, tolerance)})" if m.tolerance is not None else \
            "none is allowed (no tolerance)"
        return f"worse than the baseline by {value(m, -better)}, beyond the noise (spread {value(m, noise)}); {allowed}"
    if m.min_improvement is not None:
        need = amount(m.min_improvement, base.figure)
        if change != "improved":
            return (f"no improvement beyond the noise (spread {value(m, noise)}); min_improvement "
                    f"{m.min_improvement} asks for {value(m, need)} better")
        if better < need:
            return f"better by {value(m, better)}, less than min_improvement {m.min_improvement} ({value(m, need)})"
    if _reached(m, after.figure) is False:
        return f"the target {value(m, m.target)} is not reached"
    return None
