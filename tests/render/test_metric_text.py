"""The metric lines (issue 23 item 6) and the loop edit that drops a key (refine's `metric_still`), pure."""

from __future__ import annotations

import pytest
import yaml

from odin_magic.loop.loopedit import EditError, remove_key
from odin_magic.render.metric_text import metric_block, metric_lines
from odin_magic.runs.metric_history import MetricPoint, MetricSeries, series_of


def test_lines_name_the_stage_only_when_two_gates_share_a_name_and_clip_a_long_run():
    long = MetricSeries(stage="a", name="size", unit="kB", direction="lower",
                        points=[MetricPoint(i, 100 - i, 101 - i, True) for i in range(1, 13)])
    other = MetricSeries(stage="b", name="size", points=[MetricPoint(1, None, None, False)])
    first, second = metric_lines([long, other])
    assert first == "size (a): 100 → … → 95 → 94 → 93 → 92 → 91 → 90 → 89 → 88 kB (baseline 100)"
    assert second == "size (b): — (no baseline)"
    assert metric_block([]) == "" and metric_block(["x"]).endswith("\n  x")


def test_series_come_from_metric_and_comparison_evidence_and_skip_a_skipped_comparison():
    metric = {"name": "p95", "unit": "ms", "direction": "lower", "target": 160, "figure": 151.0, "passed": True,
              "change": "improved", "baseline": {"figure": 170.0, "spread": 2.0}, "after": {"figure": 151.0, "spread": 1.0}}
    compared = {"name": "judge score (of 10)", "direction": "higher", "figure": 7, "passed": True,
                "baseline": {"figure": 5}}
    series = series_of(["tune", "tune", "review"], [{"metric": metric}, {}, {"comparison": compared,
                                                                           "metric": {"skipped": "x"}}])
    assert [(s.stage, s.kind, s.name) for s in series] == [("tune", "metric", "p95"),
                                                            ("review", "comparison", "judge score (of 10)")]
    [p] = series[0].points
    assert (p.entry, p.figure, p.baseline, p.spread, p.base_spread) == (1, 151, 170, 2, 2)


LOOP = """\
stages:
  - id: tune
    gate:
      mode: ai
      measure:
        cmd: python bench.py   # a comment
        direction: lower
      on_fail: tune
  - id: b
    gate: {mode: ai, compare: baseline, check: x}
"""


def test_remove_key_drops_a_block_or_flow_key_and_keeps_the_rest():
    block = remove_key(LOOP, ("stages", 0, "gate", "measure"))
    assert yaml.safe_load(block)["stages"][0]["gate"] == {"mode": "ai", "on_fail": "tune"}
    assert block.count("\n") == LOOP.count("\n") - 3
    flow = remove_key(LOOP, ("stages", 1, "gate", "compare"))
    assert "gate: {mode: ai, check: x}" in flow
    last = remove_key(LOOP, ("stages", 1, "gate", "check"))
    assert "gate: {mode: ai, compare: baseline}" in last
    with pytest.raises(EditError):
        remove_key(LOOP, ("stages", 0, "gate", "nothing"))
