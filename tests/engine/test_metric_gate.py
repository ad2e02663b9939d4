"""Metric gates (issue 23, items 1-3): a gate's ``measure:`` against its baseline, through the real engine,
Claude worker and SDK against the offline scripted model. The measure command is a real tiny Python script
that prints a figure read from a file the scripted worker writes (deterministic: no timing in the tests)."""

from __future__ import annotations

import json
import textwrap

import pytest

from odin_magic.runs import evidence as gate_evidence
from odin_magic.runs import measurements

from support.scripted_runs import Events, scripted_engine

#: prints "p95 latency: <speed.txt + an offset> ms"; the offsets (noise.txt) cycle over the runs (count.txt,
#: ignored by the checkpoints), so a measurement of 3 runs sees each offset once
MEASURE_PY = textwrap.dedent("""\
    import pathlib
    speed = float(pathlib.Path("speed.txt").read_text())
    noise = pathlib.Path("noise.txt")
    offsets = [float(x) for x in noise.read_text().split()] if noise.exists() else [0.0]
    count = pathlib.Path("count.txt")
    n = int(count.read_text()) if count.exists() else 0
    count.write_text(str(n + 1))
    print("warming up")
    print(f"p95 latency: {speed + offsets[n % len(offsets)]} ms")
""")
REGEX = r"p95 latency: ([^ ]+) ms"


def make_project(project, speed="182", noise=None, measure_py=MEASURE_PY):
    (project / "speed.txt").write_text(speed + "\n")
    (project / ".gitignore").write_text("count.txt\n")
    if measure_py is not None:
        (project / "measure.py").write_text(measure_py)
    if noise is not None:
        (project / "noise.txt").write_text(noise + "\n")


def metric_loop(write_loop, measure: str, on_fail: str = "plan", max_iterations: int = 5) -> None:
    write_loop(f"""
    name: tune
    max_iterations: {max_iterations}
    memory: false
    regression: false
    stages:
      - id: plan
        produces: [plan.md]
        gate: {{mode: ai, check: a plan}}
      - id: tune
        gate:
          mode: ai
          check: faster
          on_fail: {on_fail}
          measure: {{cmd: "python measure.py", regex: '{REGEX}', direction: lower, unit: ms, name: p95 latency,
                     {measure}}}
    """)


def script(*speeds: str, plan_extra: str = "") -> str:
    attempts = "\n".join(
        f"      - turns:\n          - tools: [{{write: {{file_path: speed.txt, content: \"{s}\\n\"}}}}]\n"
        f"          - text: tuned" for s in speeds)
    return f"""
stages:
  plan:
    attempts:
      - turns:
          - tools: [{{write: {{file_path: "{{run_dir}}/plan.md", content: "plan\\n"}}}}]
          - text: planned
      - turns:
          - tools: [{{write: {{file_path: "{{run_dir}}/plan.md", content: "plan 2\\n"}}}}{plan_extra}]
          - text: planned again
  tune:
    attempts:
{attempts}
default_verdict: {{status: DONE, passed: true, reasons: [scripted]}}
"""


def metric_of(engine, state, index: int) -> dict:
    return gate_evidence.read(engine.run_dir(state.run_id), state.history[index].evidence)["metric"]


def gates_of(state) -> list[tuple]:
    return [(e.stage, e.result, e.failure) for e in state.history]


def test_a_change_that_makes_the_figure_worse_fails_its_gate_and_loops_back(project, write_loop):
    make_project(project, speed="182")
    metric_loop(write_loop, "repeat: 3")
    events = Events()
    engine, _ = scripted_engine(project, script("201", "151"), events)
    state = engine.start("tune", "make it faster")
    assert gates_of(state) == [("plan", "pass", None), ("tune", "fail", "recoverable"),
                               ("plan", "pass", None), ("tune", "pass", None)]
    assert state.status == "done" and state.total_iterations == 1
    reason = state.history[1].reason
    assert reason.startswith("p95 latency 182 ms → 201 ms (+10%) ❌: worse than the baseline by 19 ms"), reason
    worse = metric_of(engine, state, 1)
    assert worse["baseline"]["figure"] == 182 and worse["figure"] == 201 and worse["delta"] == 19
    assert worse["after"]["samples"] == [201, 201, 201] and worse["change"] == "worse"
    assert "p95 latency: 201.0 ms" in worse["after"]["runs"][0]["stdout_tail"]  # the command's output
    better = metric_of(engine, state, 3)  # its baseline: the tree the failed attempt left (201), measured as it
    assert better["baseline"]["figure"] == 201 and better["figure"] == 151 and better["passed"]  # was gated
    assert better["baseline"]["cached"] is True
    taken = measurements.read(engine.run_dir(state.run_id))
    assert [(m.role, m.figure) for m in taken] == [("after", 201), ("baseline", 182), ("after", 151)]
    assert "metric: p95 latency 201 ms → 151 ms (−25%) ✅" in [e.text for e in events]


def test_the_baseline_is_measured_once_per_checkpoint_and_again_when_the_tree_changed(project, write_loop):
    make_project(project, speed="182")
    metric_loop(write_loop, "repeat: 2")
    # the second plan changes the tree: the tune stage's before-tree is new, and is measured
    extra = ', {write: {file_path: notes.txt, content: "a note\\n"}}'
    engine, _ = scripted_engine(project, script("201", "151", plan_extra=extra))
    state = engine.start("tune", "make it faster")
    assert state.status == "done"
    taken = measurements.read(engine.run_dir(state.run_id))
    trees = [m.tree for m in taken]
    assert len(trees) == len(set(trees)), "a tree is measured once"
    baselines = [m for m in taken if m.role == "baseline"]
    assert [m.figure for m in baselines] == [182, 201]  # the first before-tree; the tree the plan changed
    assert baselines[0].tree == state.history[1].checkpoint and baselines[1].tree == state.history[3].checkpoint
    assert metric_of(engine, state, 3)["baseline"]["figure"] == 201


def test_a_pinned_stage_baseline_is_measured_once_for_every_attempt(project, write_loop):
    make_project(project, speed="182")
    metric_loop(write_loop, "repeat: 2, baseline: stage plan", on_fail="tune")
    engine, _ = scripted_engine(project, script("201", "190", "151"))
    state = engine.start("tune", "make it faster")
    assert gates_of(state) == [("plan", "pass", None), ("tune", "fail", "recoverable"),
                               ("tune", "fail", "recoverable"), ("tune", "pass", None)]
    assert [metric_of(engine, state, i)["baseline"]["figure"] for i in (1, 2, 3)] == [182, 182, 182]
    baselines = [m for m in measurements.read(engine.run_dir(state.run_id)) if m.role == "baseline"]
    assert len(baselines) == 1 and baselines[0].tree == state.history[0].after
    assert [metric_of(engine, state, i)["baseline"].get("cached") for i in (1, 2, 3)] == [None, True, True]


def test_a_pinned_number_is_the_baseline(project, write_loop):
    make_project(project, speed="182")
    metric_loop(write_loop, "baseline: 150", max_iterations=1)
    engine, _ = scripted_engine(project, script("160"))
    state = engine.start("tune", "make it faster")
    assert state.status == "failed"
    assert "p95 latency 150 ms → 160 ms (+7%) ❌: worse than the baseline" in state.history[1].reason
    assert metric_of(engine, state, 1)["baseline"]["source"] == "pinned"
    assert {m.role for m in measurements.read(engine.run_dir(state.run_id))} == {"after"}  # nothing to measure


def test_a_change_within_the_noise_is_no_improvement(project, write_loop):
    make_project(project, speed="182", noise="-3 3 0")
    metric_loop(write_loop, "min_improvement: 1%", max_iterations=1)
    engine, _ = scripted_engine(project, script("180"))
    state = engine.start("tune", "make it faster")
    assert state.status == "failed"
    reason = state.history[1].reason
    assert "182 ms → 180 ms" in reason and "no improvement beyond the noise (spread 6 ms)" in reason, reason
    metric = metric_of(engine, state, 1)
    assert metric["change"] == "no change" and sorted(metric["baseline"]["samples"]) == [179, 182, 185]


def test_a_change_within_the_noise_is_no_regression(project, write_loop):
    make_project(project, speed="182", noise="-3 3 0")
    metric_loop(write_loop, "repeat: 3", max_iterations=1)
    engine, _ = scripted_engine(project, script("185"))
    state = engine.start("tune", "make it faster")
    assert state.status == "done", state.history[-1].reason
    metric = metric_of(engine, state, 1)
    assert metric["change"] == "no change" and metric["passed"] and metric["delta"] == 3


def test_a_target_reached_ends_the_loop(project, write_loop):
    make_project(project, speed="182")
    metric_loop(write_loop, "target: 160", on_fail="tune")
    engine, _ = scripted_engine(project, script("170", "151"))
    state = engine.start("tune", "make it faster")
    assert gates_of(state) == [("plan", "pass", None), ("tune", "fail", "recoverable"), ("tune", "pass", None)]
    assert state.status == "done"
    assert state.history[1].reason == ("p95 latency 182 ms → 170 ms (−7%, target 160 ms) ❌: "
                                       "the target 160 ms is not reached")
    assert metric_of(engine, state, 2)["summary"] == "p95 latency 170 ms → 151 ms (−11%, target 160 ms) ✅"


def test_output_with_no_figure_is_a_clear_gate_failure(project, write_loop):
    make_project(project, measure_py="print('latency unknown today')\n")
    metric_loop(write_loop, "repeat: 2", max_iterations=1)
    engine, _ = scripted_engine(project, script("151"))
    state = engine.start("tune", "make it faster")
    assert state.status == "failed" and state.history[1].failure == "recoverable"
    assert state.history[1].reason == (f"measure command `python measure.py`: the regex {REGEX!r} matched nothing "
                                       "in: latency unknown today")


@pytest.mark.parametrize("printed, words", [("nan", "is nan, not a finite number: refused"),
                                            ("inf", "is inf, not a finite number"),
                                            ("", "matched nothing")])
def test_a_figure_that_is_not_a_finite_number_is_refused(project, write_loop, printed, words):
    make_project(project, measure_py=f"print('p95 latency: {printed} ms')\n")
    metric_loop(write_loop, "repeat: 1", max_iterations=1)
    engine, _ = scripted_engine(project, script("151"))
    state = engine.start("tune", "make it faster")
    assert state.status == "failed" and words in state.history[1].reason, state.history[1].reason


def test_a_measure_command_that_cannot_run_blocks_without_a_loopback(project, write_loop):
    make_project(project)
    write_loop(f"""
    name: tune
    max_iterations: 5
    memory: false
    regression: false
    stages:
      - id: tune
        gate:
          mode: ai
          check: faster
          measure: {{cmd: "no_such_bench_xyz --run", regex: '{REGEX}', direction: lower}}
    """)
    engine, _ = scripted_engine(project, script("151"))
    state = engine.start("tune", "make it faster")
    assert state.status == "blocked" and gates_of(state) == [("tune", "fail", "environment")]
    assert state.total_iterations == 0
    assert "program no_such_bench_xyz was not found" in state.blocked.reason


def test_a_baseline_that_cannot_be_measured_blocks_without_a_target(project, write_loop):
    make_project(project, measure_py=None)  # the stage writes the benchmark: the before-tree has none
    metric_loop(write_loop, "repeat: 1", max_iterations=3)
    bench = json.dumps(MEASURE_PY)
    text = script("151").replace('content: "151\\n"}}]', f'content: "151\\n"}}}}, {{write: {{file_path: measure.py, '
                                                          f'content: {bench}}}}}]')
    engine, _ = scripted_engine(project, text)
    state = engine.start("tune", "make it faster")
    assert state.status == "blocked" and state.history[-1].failure == "environment", state.history[-1].reason
    assert "the baseline could not be measured" in state.blocked.reason
    assert "measure.py does not exist" in state.blocked.reason
    assert state.total_iterations == 0


def test_a_baseline_that_cannot_be_measured_leaves_the_target_to_decide(project, write_loop):
    make_project(project, measure_py=None)
    metric_loop(write_loop, "repeat: 1, target: 160", max_iterations=3)
    bench = json.dumps(MEASURE_PY)
    text = script("151").replace('content: "151\\n"}}]', f'content: "151\\n"}}}}, {{write: {{file_path: measure.py, '
                                                          f'content: {bench}}}}}]')
    engine, _ = scripted_engine(project, text)
    state = engine.start("tune", "make it faster")
    assert state.status == "done", state.history[-1].reason
    metric = metric_of(engine, state, 1)
    assert metric["summary"] == "p95 latency 151 ms (no baseline, target 160 ms) ✅"
    assert "measure.py does not exist" in metric["baseline"]["error"]


def test_a_baseline_noisier_than_the_tolerance_does_not_decide(project, write_loop):
    make_project(project, speed="182", noise="-5 5 0")
    metric_loop(write_loop, "tolerance: 2", max_iterations=3)
    engine, _ = scripted_engine(project, script("100"))
    state = engine.start("tune", "make it faster")
    assert state.status == "blocked" and state.history[-1].failure == "environment"
    assert "the measurement is noisier than the tolerance: raise repeat or tolerance" in state.blocked.reason
    assert state.total_iterations == 0


def test_a_gate_checked_again_after_a_block_measures_against_the_recorded_before_checkpoint(project, write_loop):
    make_project(project, measure_py=None)
    write_loop(f"""
    name: tune
    max_iterations: 5
    memory: false
    regression: false
    stages:
      - id: tune
        gate:
          mode: ai
          check: faster
          measure: {{cmd: "python bench_tool.py", regex: '{REGEX}', direction: lower, target: 160, repeat: 1}}
    """)
    events = Events()
    engine, _ = scripted_engine(project, script("151"), events)
    state = engine.start("tune", "make it faster")
    assert state.status == "blocked" and "bench_tool.py does not exist" in state.blocked.reason
    (project / "bench_tool.py").write_text(MEASURE_PY)  # the user fixes the environment
    state = engine.run()  # the gate alone is checked again
    assert state.status == "done" and events.kinds().count("stage_started") == 1
    metric = metric_of(engine, state, 1)
    assert metric["figure"] == 151 and metric["baseline"]["tree"] == state.history[0].checkpoint
    assert "bench_tool.py does not exist" in metric["baseline"]["error"]  # the before-tree has no tool: the target
