"""The judge comparison step of the gate pipeline (``compare: baseline``), after the judge passed the gate.

The judge scores the before and the after of the stage's change with the gate's check as the rubric, in one
structured reply (:mod:`odin_magic.workers.compare`). The two scores are decided as a metric's figures are
(:mod:`odin_magic.engine.metric_compare`, ``direction: higher``, one sample each: no spread), so the same
rules apply: a lower score fails beyond the ``tolerance``, ``min_improvement`` asks for a higher one,
``target`` for a score to reach. The scores, their reasons and the decision are recorded in the gate's
evidence (``comparison``), shaped as a metric's. A worker that cannot compare (the dry worker) leaves the
gate to the judge, and the evidence says so.
"""

from __future__ import annotations

from typing import Any

from odin_magic.engine.metric_compare import Figures, compare
from odin_magic.loop.schema import JudgeCompare, Measure

LABEL = "judge score (of 10)"


def as_measure(c: JudgeCompare) -> Measure:
    """The comparison's rules as a metric's: higher is better, out of 10."""
    return Measure(cmd="(the judge)", regex="(.*)", direction="higher", name=LABEL, repeat=1,
                   tolerance=c.tolerance, min_improvement=c.min_improvement, target=c.target)


def check_compare(gate: Any, parts: Any) -> bool:
    """The pipeline's comparison step (``gate``: a :class:`odin_magic.engine.gate_pipeline.StageGate`)."""
    c, stage, s, engine = gate.stage.gate.compare, gate.stage, gate.session, gate.engine
    if c is None:
        return True
    ask = getattr(s.worker, "compare", None)
    if ask is None:
        parts.comparison = {"name": LABEL, "skipped": "this worker does not compare (a dry run): the judge decided"}
        return True
    result = ask(gate.judge_job([]), gate.sink)  # a WorkerError: the pipeline's wrapper stops the stage
    if engine._add_usage(s, stage.id, result.usage):
        raise OverBudgetSignal()
    if result.comparison is None:
        parts.comparison = {"name": LABEL, "error": result.problem}
        return parts.fail(result.problem)
    m, before, after = as_measure(c), result.comparison.before, result.comparison.after
    decision = compare(m, Figures.of([after.score]), Figures.of([before.score]))
    parts.comparison = {"name": LABEL, "against": c.against, "unit": None, "direction": "higher", "target": c.target,
                        "baseline": {"figure": before.score, "reasons": before.reasons},
                        "after": {"figure": after.score, "reasons": after.reasons}, "figure": after.score,
                        "delta": decision.delta, "change": decision.change, "summary": decision.summary,
                        "passed": decision.passed}
    engine._emit("worker", s.state, stage=stage.id, text=f"comparison: {decision.summary}", data={"kind": "info"})
    return True if decision.passed else parts.fail(decision.reason)


class OverBudgetSignal(Exception):
    """Raised when the comparison's usage put the run over budget (the pipeline turns it into OverBudget)."""
