"""The judge comparison step of the gate pipeline (``compare: baseline``), after the judge passed the gate.

The judge scores the before and the after of the stage's change with the gate's check as the rubric, in one
structured reply (:mod:`odin_magic.workers.compare`). The two scores are decided as a metric's figures are
(:mod:`odin_magic.engine.metric_compare`, ``direction: higher``, one sample each: no spread), so the same
rules apply: a lower score fails beyond the ``tolerance``, ``min_improvement`` asks for a higher one,
``target`` for a score to reach. The scores, their reasons and the decision are recorded in the gate's
evidence (``comparison``), shaped as a metric's. A worker that cannot compare (the dry worker) leaves the
gate to the judge, and the evidence says so.

The run dir has no checkpoints, so the before of a run-dir artifact (a file the stage produces there) is kept
when the stage execution starts (:func:`earlier_versions`) and shown to the judge beside its after; a project
file's before is in the stage's diff.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from odin_magic.engine.metric_compare import Figures, compare
from odin_magic.loop.artifacts import Placement
from odin_magic.loop.schema import JudgeCompare, Measure, Stage
from odin_magic.runs.freezes import read_now
from odin_magic.workers.compare import ARTIFACT_CHARS

LABEL = "judge score (of 10)"


def as_measure(c: JudgeCompare) -> Measure:
    """The comparison's rules as a metric's: higher is better, out of 10."""
    return Measure(cmd="(the judge)", regex="(.*)", direction="higher", name=LABEL, repeat=1,
                   tolerance=c.tolerance, min_improvement=c.min_improvement, target=c.target)


def earlier_versions(stage: Stage, produces: dict[str, Placement]) -> dict[str, str | None] | None:
    """The run-dir files ``stage`` produces as they are before its execution (None: not there yet), when its
    gate compares; a link is never followed (its target is not read). None when the gate does not compare."""
    if stage.gate.compare is None:
        return None
    out: dict[str, str | None] = {}
    for name, p in produces.items():
        if p.in_run_dir and not p.is_dir:
            now = read_now(p.path)
            out[name] = None if now is None or now.mode == "l" else \
                now.data[:4 * ARTIFACT_CHARS].decode("utf-8", "replace")
    return out


def check_compare(gate: Any, parts: Any) -> bool:
    """The pipeline's comparison step (``gate``: a :class:`odin_magic.engine.gate_pipeline.StageGate`)."""
    c, stage, s, engine = gate.stage.gate.compare, gate.stage, gate.session, gate.engine
    if c is None:
        return True
    ask = getattr(s.worker, "compare", None)
    if ask is None:
        parts.comparison = {"name": LABEL, "skipped": "this worker does not compare (a dry run): the judge decided"}
        return True
    job = replace(gate.judge_job([]), earlier=gate.execution.earlier)
    result = ask(job, gate.sink)  # a WorkerError: the pipeline's wrapper stops the stage
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
