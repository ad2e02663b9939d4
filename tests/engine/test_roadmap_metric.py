"""Issue 23 item 7: a roadmap phase contract names a metric gate (`kind: programmatic` with `measure:`), so a phase
can be "make the p95 latency ≤ 160 ms without regressions": the driver adds the metric to the run's gate, and
the phase passes only when the figure gets there (the real engine, Claude worker and SDK against the scripted
model, real gate and measure commands)."""

from __future__ import annotations

from odin_magic.engine.roadmap_driver import RoadmapDriver, RoadmapOptions
from odin_magic.loop.catalog import builtin_loops_dir
from odin_magic.loop.roadmap import ROADMAP_FILE, load_roadmap
from odin_magic.runs import evidence as gate_evidence
from odin_magic.runs.metric_history import read_series
from support.scripted_runs import scripted_engine

ROADMAP = "# Service\n\nautonomy: autonomous\n\n## M1 Speed\n\n- [ ] p1 Make the p95 latency at most 160 ms\n"
CONTRACT = """\
risk: tiny-fix
scope: ["speed.txt"]
gate:
  kind: programmatic
  run: ["python check.py"]          # no regression: the service still answers
  measure: {cmd: "python measure.py", regex: 'p95 latency: ([0-9.]+) ms', direction: lower, unit: ms,
            name: p95 latency, repeat: 1, target: 160}
max_iterations: {iterations}
loop: fix-p1
"""
MEASURE = "import pathlib\nprint(f\"p95 latency: {float(pathlib.Path('speed.txt').read_text())} ms\")\n"
CHECK = "import pathlib\nassert float(pathlib.Path('speed.txt').read_text()) > 0, 'the service is broken'\n"


def _project(project, iterations: int) -> None:
    (project / ".odin-loop" / "contracts").mkdir(parents=True)
    (project / ROADMAP_FILE).write_text(ROADMAP)
    (project / "speed.txt").write_text("182\n")
    (project / "measure.py").write_text(MEASURE)
    (project / "check.py").write_text(CHECK)
    loops = project / ".odin-loop" / "loops"
    loops.mkdir()
    tiny = (builtin_loops_dir() / "tiny-fix.yaml").read_text()
    (loops / "fix-p1.yaml").write_text(tiny.replace("name: tiny-fix", "name: fix-p1").replace("id: apply", "id: apply-p1"))
    (project / ".odin-loop" / "contracts" / "p1.yaml").write_text(CONTRACT.replace("{iterations}", str(iterations)))


def _script(*speeds: str) -> str:
    attempts = "\n".join(
        "      - turns:\n"
        f"          - tools: [{{write: {{file_path: speed.txt, content: \"{s}\\n\"}}}}, "
        "{write: {file_path: \"{run_dir}/change-notes.md\", content: \"tuned speed.txt\"}}]\n"
        "          - text: done" for s in speeds)
    return f"""
stages:
  apply-p1:
    attempts:
{attempts}
default_verdict: {{status: DONE, passed: true, reasons: [scripted]}}
"""


def _drive(engine):
    return RoadmapDriver(engine, options=RoadmapOptions()).run()


def test_the_phase_passes_only_when_the_figure_reaches_the_target(project):
    _project(project, iterations=3)
    engine, _ = scripted_engine(project, _script("170", "151"))
    out = _drive(engine)
    assert out.ending == "complete", (out.ending, out.lines)
    assert [p.done for p in load_roadmap(project / ROADMAP_FILE).phases()] == [True]
    [state] = engine.runs()
    assert [(e.stage, e.result) for e in state.history] == [("apply-p1", "fail"), ("apply-p1", "pass")]
    assert state.history[0].reason == ("p95 latency 182 ms → 170 ms (−7%, target 160 ms) ❌: "
                                       "the target 160 ms is not reached")
    metric = gate_evidence.read(engine.run_dir(state.run_id), state.history[1].evidence)["metric"]
    assert metric["summary"] == "p95 latency 170 ms → 151 ms (−11%, target 160 ms) ✅"
    loop = engine.loop_for(state.run_id)  # the run's own loop: the contract's metric in its gate
    assert loop.stages[0].gate.measure.target == 160 and [c.cmd for c in loop.stages[0].gate.commands] == ["python check.py"]
    [series] = read_series(engine.run_dir(state.run_id), state.history)
    assert series.figures == [170, 151]


def test_a_phase_whose_figure_never_gets_there_is_not_done(project):
    _project(project, iterations=1)
    engine, _ = scripted_engine(project, _script("175", "170", "165"))
    out = _drive(engine)
    assert out.ending == "escalated", (out.ending, out.lines)
    [phase] = load_roadmap(project / ROADMAP_FILE).phases()
    assert not phase.done and phase.note.startswith("escalated: ")
    [state] = engine.runs()
    assert all(e.result == "fail" and "the target 160 ms is not reached" in e.reason for e in state.history)


def test_a_regression_fails_the_phase_gate_before_the_figure_counts(project):
    _project(project, iterations=3)
    engine, _ = scripted_engine(project, _script("-1", "151"))  # fast, but broken: check.py fails first
    out = _drive(engine)
    assert out.ending == "complete", (out.ending, out.lines)
    [state] = engine.runs()
    assert state.history[0].result == "fail" and "python check.py" in state.history[0].reason
    assert gate_evidence.read(engine.run_dir(state.run_id), state.history[0].evidence).get("metric") is None
