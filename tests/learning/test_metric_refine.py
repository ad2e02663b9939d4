"""Issue 23 item 6: `odin refine` learns from the metric history of real past runs (driven through the engine,
Claude worker and SDK against the offline scripted model): a metric gate that never moved, a tolerance that
decides on noise."""

from __future__ import annotations

import textwrap

import yaml

from odin_magic.learning.refine import Refinements, refine

from support.metric_runs import make_project, tune_loop, tune_script
from support.scripted_runs import scripted_engine


def runs_of(project, write_loop, measure: str, speeds: list[str], end: str = "done") -> list[str]:
    write_loop(tune_loop(measure, max_iterations=1))
    ids = []
    for speed in speeds:
        engine, _ = scripted_engine(project, tune_script(speed))
        state = engine.start("tune", "make it faster")
        assert state.status == end, (state.status, state.history[-1].reason)
        if end == "blocked":
            engine.abandon()
        ids.append(state.run_id)
    return ids


def test_a_metric_gate_that_never_moved_is_proposed_for_dropping(project, write_loop):
    make_project(project, speed="182")
    ids = runs_of(project, write_loop, "repeat: 1", ["182", "182", "182"])
    result = refine(project, "tune", now="2026-12-03T07:00:00")
    [stats] = result.stats
    [m] = stats.metrics
    assert (m.stage, m.name, m.runs, m.still_runs) == ("tune", "p95 latency", ids, ids)
    [p] = [p for p in result.proposals if p.rule == "metric_still"]
    assert p.title == "drop the metric gate of tune (p95 latency): it never moved in 3 runs (or change its command)"
    assert p.evidence.runs == ids and p.evidence.numbers["runs_never_moved"] == 3
    assert "measure" not in yaml.safe_load(p.proposed)["stages"][0]["gate"]
    assert "\n-      measure: {cmd:" in p.diff
    Refinements(project).apply(p.id, now="2026-12-03T07:01:00")  # the loop without it still validates


def test_a_gate_that_moved_is_not_proposed_for_dropping(project, write_loop):
    make_project(project, speed="182")
    runs_of(project, write_loop, "repeat: 1", ["182", "170", "182"])
    assert not [p for p in refine(project, "tune").proposals if p.rule == "metric_still"]


def test_a_tolerance_that_decides_on_noise_is_proposed_raised_with_the_numbers(project, write_loop):
    make_project(project, speed="182", noise="-3 3 0")  # 3 runs spread 6 ms; the tolerance allows 1 ms
    ids = runs_of(project, write_loop, "repeat: 3, tolerance: 1", ["170", "170"], end="blocked")
    result = refine(project, "tune")
    [m] = result.stats[0].metrics
    assert m.noisy_runs == ids and m.largest_baseline_spread == 6
    [p] = [p for p in result.proposals if p.rule == "metric_noise"]
    assert p.title == ("raise repeat from 3 to 6 and tolerance from 1 to 7.5 in tune's metric gate: "
                       "it decided on noise")
    numbers = p.evidence.numbers
    assert numbers["runs_noisier_than_the_tolerance"] == 2 and numbers["largest_baseline_spread"] == 6
    assert numbers["tolerance"] == "1" and numbers["repeat"] == 3
    measure = yaml.safe_load(p.proposed)["stages"][0]["gate"]["measure"]
    assert (measure["repeat"], measure["tolerance"]) == (6, 7.5)
    assert "noisier than the tolerance in 2 of 2 runs (baseline spread up to 6" in p.evidence.summary
