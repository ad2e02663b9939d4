"""Muninn's rules for metric gates (issue 23 item 6), from the metric history of a loop's runs
(:mod:`odin_magic.learning.metric_stats`):

* a metric gate that **never moved** in the last :data:`STILL_RUNS` runs that measured it (every evaluation
  "no change": within the noise) measures nothing the loop changes: drop it (or give it a command that sees
  the change: the proposal says so);
* a tolerance that **decides on noise** ("the measurement is noisier than the tolerance" in most runs): raise
  ``repeat`` and ``tolerance`` above the widest baseline spread seen, with the numbers.
"""

from __future__ import annotations

import math
import statistics

from odin_magic.core.figures import amount, shown
from odin_magic.learning.metric_stats import MetricStats
from odin_magic.learning.runstats import LoopStats
from odin_magic.loop.schema import Loop

#: the runs in a row a metric gate must not have moved in before dropping it is proposed
STILL_RUNS = 3
#: the runs in which the tolerance decided on noise before raising it is proposed (and more than half of them)
NOISY_RUNS = 2


def metric_rules(loop: Loop, stats: LoopStats, rule_type) -> list:
    """The proposals for the loop's metric gates; ``rule_type(rule, title, edits, (runs, numbers, summary))``
    makes one (:mod:`odin_magic.learning.rules` gives it: its Rule, with its Evidence)."""
    out = []
    for i, stage in enumerate(loop.stages):
        for field, kind in (("measure", "metric"), ("compare", "comparison")):
            if getattr(stage.gate, field) is None:
                continue
            m = next((x for x in stats.metrics if x.stage == stage.id and x.kind == kind), None)
            if m is None:
                continue
            path = ("stages", i, "gate", field)
            out += _still(rule_type, stage.id, path, m)
            if field == "measure":
                out += _noisy(rule_type, stage, path, m)
    return out


def _still(rule_type, stage_id: str, path: tuple, m: MetricStats) -> list:
    latest = m.runs[-STILL_RUNS:]
    if len(latest) < STILL_RUNS or not set(latest) <= set(m.still_runs):
        return []
    figures = f"{shown(min(m.figures))} to {shown(max(m.figures))}" if m.figures else "none"
    evidence = _evidence(latest, {"runs_measured": len(m.runs), "runs_never_moved": len(m.still_runs),
                                  "evaluations": m.evaluations, "figures": figures},
                         f"{m.name} at {stage_id} never moved beyond the noise in the last {len(latest)} runs "
                         f"(figures {figures}): it does not see what the stage changes; drop it, or give it a "
                         "command that measures the change")
    return [rule_type("metric_still", f"drop the metric gate of {stage_id} ({m.name}): it never moved in "
                                      f"{len(latest)} runs (or change its command)",
                      [(("-remove", *path), None)], evidence)]


def _noisy(rule_type, stage, path: tuple, m: MetricStats) -> list:
    measure = stage.gate.measure
    if len(m.noisy_runs) < NOISY_RUNS or len(m.noisy_runs) * 2 <= len(m.runs) or not m.largest_baseline_spread:
        return []
    typical = statistics.median(m.figures) if m.figures else None
    spread = m.largest_baseline_spread
    tolerance = _above(spread, measure.tolerance, typical)
    repeat = min(100, max(measure.repeat + 2, measure.repeat * 2))
    old = "none" if measure.tolerance is None else measure.tolerance if isinstance(measure.tolerance, str) \
        else shown(measure.tolerance)
    numbers = {"runs_measured": len(m.runs), "runs_noisier_than_the_tolerance": len(m.noisy_runs),
               "evaluations_blocked_by_noise": m.noisy_evaluations, "largest_baseline_spread": spread,
               "tolerance": old, "tolerance_amount": amount(measure.tolerance, typical), "repeat": measure.repeat,
               "proposed_tolerance": tolerance, "proposed_repeat": repeat}
    evidence = _evidence(m.noisy_runs, numbers,
                         f"{m.name} at {stage.id}: the measurement was noisier than the tolerance in "
                         f"{len(m.noisy_runs)} of {len(m.runs)} runs (baseline spread up to {shown(spread)}, "
                         f"tolerance {old}, repeat {measure.repeat})")
    return [rule_type("metric_noise", f"raise repeat from {measure.repeat} to {repeat} and tolerance from {old} to "
                                      f"{tolerance if isinstance(tolerance, str) else shown(tolerance)} in {stage.id}'s metric gate: it decided on noise",
                      [((*path, "repeat"), repeat), ((*path, "tolerance"), tolerance)], evidence)]


def _above(spread: float, tolerance, typical: float | None):
    """A tolerance a quarter above ``spread``, in the form of today's (a percentage when it is one)."""
    if isinstance(tolerance, str) and tolerance.endswith("%") and typical:
        pct = math.ceil(spread * 1.25 / abs(typical) * 1000) / 10
        return f"{pct:g}%"
    wanted = spread * 1.25
    digits = max(0, 2 - int(math.floor(math.log10(wanted)))) if wanted > 0 else 0
    return math.ceil(wanted * 10 ** digits) / 10 ** digits


def _evidence(runs, numbers, summary) -> tuple:
    return list(runs), numbers, summary
