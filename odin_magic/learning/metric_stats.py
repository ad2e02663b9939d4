"""The metric gates' numbers over a loop's runs, for ``odin refine``: per gate (stage, name), the runs it
measured in, those in which it never moved (every evaluation "no change": within the noise), and those in
which its tolerance decided on noise (most evaluations blocked as "noisier than the tolerance"), with the
spreads seen. Read from each run's metric history (:mod:`odin_magic.runs.metric_history`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from odin_magic.runs.metric_history import MetricSeries, read_series


class MetricStats(BaseModel):
    stage: str
    name: str
    kind: str = "metric"
    runs: list[str] = Field(default_factory=list)  # runs in which the gate measured
    evaluations: int = 0
    still_runs: list[str] = Field(default_factory=list)  # every evaluation "no change": the figure never moved
    noisy_runs: list[str] = Field(default_factory=list)  # most evaluations "noisier than the tolerance"
    noisy_evaluations: int = 0
    largest_baseline_spread: float | None = None  # the widest baseline spread seen (the noise to allow for)
    figures: list[float] = Field(default_factory=list)  # every figure measured, oldest first


def measured_in(loop_data: dict) -> set[str]:
    """The stages of a run's copy of its loop (its data) whose gate measures or compares."""
    stages = loop_data.get("stages") if isinstance(loop_data, dict) else None
    out = set()
    for s in stages if isinstance(stages, list) else []:
        gate = s.get("gate") if isinstance(s, dict) else None
        if isinstance(gate, dict) and (gate.get("measure") is not None or gate.get("compare") is not None):
            out.add(str(s.get("id")))
    return out


def run_series(run_dir: Path, history: Any, loop_data: dict) -> list[MetricSeries]:
    """One run's metric series (none read when its loop measures nothing)."""
    return read_series(run_dir, history, measured_in(loop_data))


def metric_stats(runs: list[tuple[str, list[MetricSeries]]]) -> list[MetricStats]:
    """Per gate, over ``runs`` ((run id, its series) each, oldest first)."""
    by: dict[tuple[str, str, str], MetricStats] = {}
    for run_id, series in runs:
        for s in series:
            m = by.setdefault(s.key, MetricStats(stage=s.stage, name=s.name, kind=s.kind))
            _tally(m, run_id, s)
    return list(by.values())


def _tally(m: MetricStats, run_id: str, s: MetricSeries) -> None:
    points = s.points
    m.runs.append(run_id)
    m.evaluations += len(points)
    m.figures += s.figures
    decided = [p for p in points if not p.blocked and p.change is not None and p.change != "unknown"]
    if decided and all(p.change == "no change" for p in decided):
        m.still_runs.append(run_id)
    noisy = [p for p in points if p.tolerance_noise]
    m.noisy_evaluations += len(noisy)
    if noisy and len(noisy) * 2 > len(points):
        m.noisy_runs.append(run_id)
    spreads = [p.base_spread for p in points if p.base_spread is not None]
    if spreads:
        m.largest_baseline_spread = max(spreads + [m.largest_baseline_spread or 0.0])
