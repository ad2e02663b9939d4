"""The `optimize` built-in loop (issue 23, item 5) and loop parameters (`--param`): its offline quickstart
(example_notebooks/optimize/) driven through the real engine, Claude worker and SDK against the scripted model,
to done with the figure improved; the parameters' refusals."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from odin_magic.core.errors import ConfigError
from odin_magic.engine.orchestrator import Engine
from odin_magic.loop.catalog import LoopCatalog
from odin_magic.loop.params import apply_params, parse_assignments
from odin_magic.loop.validation import validate_file, validate_text
from odin_magic.runs import evidence as gate_evidence
from odin_magic.workers.config import Settings
from odin_magic.workers.factory import make_worker

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "example_notebooks" / "optimize"


def figure(project: Path) -> float:
    out = subprocess.run([sys.executable, "bench.py"], cwd=project, capture_output=True, text=True, check=True)
    return float(out.stdout.split()[1])


def test_the_optimize_quickstart_makes_the_slow_function_measurably_faster_offline(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(QUICKSTART / "project", project)
    before = figure(project)
    settings = Settings.from_env(env={}, script=QUICKSTART / "optimize.script.yaml", thinking_budget=0)
    engine = Engine(project, worker=make_worker(settings, project))
    state = engine.start("optimize", "make dedupe faster", params={"metric": "python bench.py"})
    assert state.status == "awaiting_approval" and state.current_stage == "review", state
    state = engine.approve()
    assert state.status == "done", state
    assert [(e.stage, e.result) for e in state.history] == [  # the review: gated, then approved
        ("profile", "pass"), ("plan", "pass"), ("implement", "pass"), ("measure", "fail"),
        ("implement", "pass"), ("measure", "pass"), ("review", "pass"), ("review", "pass")]
    assert "no improvement beyond the noise" in state.history[3].reason  # the tidy-up: sent back to implement
    run_dir = engine.run_dir(state.run_id)
    metric = gate_evidence.read(run_dir, state.history[5].evidence)["metric"]
    assert metric["baseline"]["figure"] == before and metric["passed"]
    assert metric["figure"] < before / 10 and metric["change"] == "improved"
    assert figure(project) == metric["figure"]
    assert (project / "slow.py").read_text().count("seen = set()") == 1
    for name in ("profile.md", "plan.md", "change-notes.md", "measure-report.md", "review.md"):
        assert (run_dir / name).is_file()


def test_the_run_keeps_the_loop_with_its_parameters_filled_in(tmp_path):
    loop = LoopCatalog(tmp_path).load("optimize")
    assert loop.params["metric"].default == "python bench.py"
    filled = apply_params(loop, {"metric": "python -m mybench --quick"})
    measure = filled.stage("measure").gate.measure
    assert measure.cmd == "python -m mybench --quick"
    assert filled.stage("measure").gate.run[0].cmd == "python -m pytest -q -p no:cacheprovider"  # the default
    assert "`python -m mybench --quick`" in filled.stage("profile").prompt
    assert filled.regression is True  # the project's own test command (odin doctor), not a parameter


def test_a_bad_parameter_is_refused_before_a_run_exists(tmp_path):
    engine = Engine(tmp_path, worker=make_worker(Settings.from_env(env={}, script=QUICKSTART / "optimize.script.yaml"),
                                                  tmp_path))
    with pytest.raises(ConfigError, match=r"loop 'optimize' has no parameter 'metrc' \(did you mean 'metric'\?\)"):
        engine.start("optimize", "faster", params={"metrc": "python bench.py"})
    assert not (tmp_path / ".odin-loop" / "runs").exists() or not any((tmp_path / ".odin-loop" / "runs").iterdir())
    with pytest.raises(ConfigError, match="--param takes NAME=VALUE"):
        parse_assignments(["metric"])
    with pytest.raises(ConfigError, match="--param metric= needs a value"):
        parse_assignments(["metric="])
    assert parse_assignments(["metric=python b.py --n=3"]) == {"metric": "python b.py --n=3"}


def test_a_parameter_without_a_default_must_be_given_and_an_undeclared_one_is_a_located_error(tmp_path):
    text = """\
name: p
version: 1
description: d
max_iterations: 2
params:
  bench: {description: the benchmark}
stages:
  - id: s
    gate:
      mode: ai
      check: ok
      run: ["{{bench}}", "{{bnch}}"]
"""
    report = validate_text(text, "p.yaml")
    assert [str(e) for e in report.errors] == [
        "p.yaml:12:26: error: stages[0].gate.run[1]: {{bnch}} names no parameter of this loop (did you mean 'bench'?)"
        " -- fix: declare it: `params: {bnch: {default: ..., description: ...}}`"]
    loop = LoopCatalog(tmp_path).load("optimize")
    needy = loop.model_copy(update={"params": {**loop.params, "metric": loop.params["metric"].model_copy(
        update={"default": None})}})
    with pytest.raises(ConfigError, match="loop 'optimize' needs the parameter 'metric'"):
        apply_params(needy, {})


def test_the_optimize_loop_is_valid():
    report = validate_file(ROOT / "loops" / "optimize.yaml")
    assert report.ok and not report.warnings, [str(d) for d in report.errors + report.warnings]


def test_odin_run_refuses_a_bad_param_in_one_line_and_creates_no_run(tmp_path, capsys):
    from odin_magic.cli import main

    code = main(["run", "optimize", "--param", "metrc=python bench.py", "--task", "faster", "--dry",
                 "--project", str(tmp_path)])
    err = capsys.readouterr().err
    assert code != 0 and "loop 'optimize' has no parameter 'metrc' (did you mean 'metric'?)" in err
    assert "Traceback" not in err
    assert not (tmp_path / ".odin-loop" / "runs").exists() or not any((tmp_path / ".odin-loop" / "runs").iterdir())
    code = main(["run", "optimize", "--param", "metric", "--task", "faster", "--dry", "--project", str(tmp_path)])
    assert code != 0 and "--param takes NAME=VALUE" in capsys.readouterr().err
