"""The metric step of the gate pipeline: a gate's ``measure:`` after its ``run`` commands (they decide first),
before the judge.

The figure after the change is measured in the project (``repeat`` runs, each a gate command: sandboxed, with
its evidence); the baseline — the figure before the change — on the stage's before-checkpoint laid out in a
scratch copy (the worker's tree is untouched), or pinned (``baseline: <number>``), or the figure at the end of
an earlier stage (``baseline: stage <id>``, its after-checkpoint). Every measurement is a record in the run
(:mod:`odin_magic.runs.measurements`); a tree already measured the same way is not measured again.
:mod:`odin_magic.engine.metric_compare` decides.

Bad input: a measure run that cannot run (exit 126/127, not found, its timeout, could not start) is an
environment failure (the run is blocked, no loopback spent: :mod:`odin_magic.engine.routing` reads the failed
run among the gate's commands); another failing run, or an output with no finite figure in it, fails the gate
with the reason; a baseline that cannot be measured leaves the target alone to decide, else blocks the run.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from odin_magic.core import scratch
from odin_magic.core.commands import CommandEvidence, run_command
from odin_magic.core.figures import NoFigure, by_json, by_regex, amount
from odin_magic.engine.metric_compare import Decision, Figures, compare
from odin_magic.engine.routing import environment_problem
from odin_magic.loop.schema import GateCommand, Measure
from odin_magic.runs import measurements
from odin_magic.runs.checkpoints import CheckpointError

#: Of each run's output, the characters the gate evidence keeps.
OUTPUT_CHARS = 1000


@dataclass
class Taken:
    """One measurement: its runs, their samples; ``error`` when it could not be taken (``failed``: the run that
    did not exit 0)."""

    samples: list[float] = field(default_factory=list)
    runs: list[CommandEvidence] = field(default_factory=list)
    error: str | None = None
    failed: CommandEvidence | None = None

    @property
    def figures(self) -> Figures | None:
        return Figures.of(self.samples) if self.error is None and self.samples else None

    def evidence(self) -> dict:
        runs = [{**asdict(ev), "stdout_tail": ev.stdout_tail[-OUTPUT_CHARS:], "stderr_tail": ev.stderr_tail[-OUTPUT_CHARS:]}
                for ev in self.runs]
        figures = self.figures
        return {**(figures.to_dict() if figures else {"samples": self.samples}), "error": self.error, "runs": runs}


def way(m: Measure) -> str:
    """What makes two measurements of one tree the same: the command, how its figure is read, how many runs."""
    return json.dumps([m.cmd, m.regex, m.json_path, m.repeat])


def figure_of(m: Measure, ev: CommandEvidence) -> float:
    """The figure in one run's output (:class:`NoFigure` when there is none)."""
    if m.regex is not None:
        return by_regex(m.regex, ev.stdout_tail, ev.stderr_tail)
    return by_json(m.json_path or "", ev.stdout_tail)


def _could_not(ev: CommandEvidence) -> str:
    problem = environment_problem(ev)
    if problem is not None:
        return problem[0].replace("gate command", "measure command", 1)
    last = (ev.stderr_tail.strip() or ev.stdout_tail.strip()).splitlines()[-1:] or [""]
    return f"measure command `{ev.cmd}` exited {ev.exit_code}" + (f": {last[0][:300]}" if last[0] else "")


def take(m: Measure, cwd: Path, env, on_run: Callable[[CommandEvidence], None] | None = None) -> Taken:
    """``m.repeat`` runs of the measure command in ``cwd``; stops at the first that fails or shows no figure."""
    taken = Taken()
    for _ in range(m.repeat):
        ev = run_command(GateCommand(cmd=m.cmd, timeout=m.timeout), cwd, env)
        taken.runs.append(ev)
        if on_run is not None:
            on_run(ev)
        if not ev.ok:
            taken.error, taken.failed = _could_not(ev), ev
            return taken
        try:
            taken.samples.append(figure_of(m, ev))
        except NoFigure as exc:
            taken.error = f"measure command `{m.cmd}`: {exc}"
            return taken
    return taken


def check_metric(gate: Any, parts: Any) -> bool:
    """The pipeline's metric step (``gate``: an :class:`odin_magic.engine.gate_pipeline.StageGate`): the figure
    after the change, the baseline, the decision; recorded in ``parts.metric``."""
    m = gate.stage.gate.measure
    if m is None or not gate.run_commands:
        return True
    after = take(m, gate.cwd, gate.env, gate.on_command)
    _record(gate, measurements.Measurement(role="after", stage=gate.stage.id, way=way(m),
                                           tree=gate.ckpt.after if gate.ckpt else None), after)
    parts.metric = {"name": m.label, "cmd": m.cmd, "unit": m.unit, "direction": m.direction, "target": m.target,
                    "after": after.evidence()}
    if after.error is not None:
        if after.failed is not None:  # routing reads it: a run that could not run blocks, no loopback spent
            parts.commands.append(after.failed)
        return parts.fail(after.error)
    base, error, source = baseline(gate, m)
    decision = compare(m, after.figures, base, error)
    parts.metric.update(_told(decision, base, source, error), figure=after.figures.figure)
    gate.engine._emit("worker", gate.session.state, stage=gate.stage.id, text=f"metric: {decision.summary}",
                      data={"kind": "info"})
    if decision.blocked is not None:  # routing reads it: blocked, no loopback spent
        return parts.fail(decision.blocked["reason"])
    return True if decision.passed else parts.fail(decision.reason)


def _told(decision: Decision, base: Figures | None, source: dict, error: str | None) -> dict:
    return {"baseline": {**(base.to_dict() if base else {}), **source, "error": error},
            "delta": decision.delta, "change": decision.change, "summary": decision.summary,
            "passed": decision.passed, "blocked": decision.blocked}


def _record(gate: Any, m: measurements.Measurement, taken: Taken) -> None:
    figures = taken.figures
    measurements.record(gate.session.handle.run_dir, m.model_copy(update={
        "samples": taken.samples, "figure": figures.figure if figures else None,
        "spread": figures.spread if figures else None, "error": taken.error, "at": gate.engine._now()}))


def baseline(gate: Any, m: Measure) -> tuple[Figures | None, str | None, dict]:
    """The baseline's figures (None, and why, when it cannot be measured) and where they come from."""
    if isinstance(m.baseline, (int, float)):
        return Figures([float(m.baseline)], float(m.baseline), 0.0), None, {"source": "pinned"}
    earlier = m.baseline_stage
    tree = _after_of(gate, earlier) if earlier else _before_of(gate)
    source = {"source": f"stage {earlier}" if earlier else "before-checkpoint", "tree": tree}
    if tree is None:
        why = (f"stage {earlier!r} has not passed in this run" if earlier else
               "there is no checkpoint of the tree before the stage")
        return None, why, source
    hit = measurements.cached(gate.session.handle.run_dir, tree, way(m), reuse=lambda r: _quiet(m, r))
    if hit is not None:
        return Figures(hit.samples, hit.figure, hit.spread or 0.0), None, {**source, "cached": True}
    taken = _in_scratch(gate, m, tree)
    _record(gate, measurements.Measurement(role="baseline", stage=gate.stage.id, way=way(m), tree=tree), taken)
    source["output"] = taken.evidence()
    if taken.error is not None:
        return None, f"{taken.error} (measured in a scratch copy of the before-tree: does the command need something " \
                     "the copy leaves out, such as ignored files?)", source
    return taken.figures, None, source


def _quiet(m: Measure, r: measurements.Measurement) -> bool:
    """A cached baseline is reused unless it was noisier than the tolerance (then it is measured again)."""
    return m.tolerance is None or (r.spread or 0.0) <= amount(m.tolerance, r.figure)


def _in_scratch(gate: Any, m: Measure, tree: str) -> Taken:
    """The measurement of checkpoint ``tree``, laid out in a scratch folder (removed after)."""
    run_dir = gate.session.handle.run_dir
    gate.engine._emit("worker", gate.session.state, stage=gate.stage.id, data={"kind": "info"},
                      text=f"metric: measuring the baseline on checkpoint {tree[:12]} in a scratch copy")
    root = scratch.make(run_dir, "baseline")
    try:
        try:
            where = measurements.laid_out(gate.engine.checkpoints, tree, root / "tree")
        except (CheckpointError, OSError) as exc:
            return Taken(error=f"the checkpoint {tree[:12]} could not be laid out: {exc}")
        return take(m, where, gate.env)
    finally:
        scratch.drop(run_dir, root)


def _after_of(gate: Any, stage_id: str) -> str | None:
    """The tree at the end of ``stage_id``'s latest pass in this run."""
    return next((e.after for e in reversed(gate.session.state.history)
                 if e.stage == stage_id and e.result == "pass" and e.after), None)


def _before_of(gate: Any) -> str | None:
    """The stage's before-checkpoint: this execution's, else (the gate checked again, the work not redone) the
    one its latest evaluation recorded."""
    if gate.ckpt is not None:
        return gate.ckpt.before
    return next((e.checkpoint for e in reversed(gate.session.state.history)
                 if e.stage == gate.stage.id and e.checkpoint), None)
