"""Gates proven able to fail (issue 13 item 5): mutants of the changed code, real pytest against each."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pytest

from odin_magic.engine.gates import command_env, run_command
from odin_magic.loop.schema import GateCommand
from odin_magic.engine.mutation import MutationSettings, is_test_file, mutants_of, run_mutants, select

CALC = '''\
def divide(a, b):
    """a / b; dividing by zero is a ValueError."""
    if b == 0:
        raise ValueError("division by zero")
    return a / b


def clamp(x, low=0, high=10):
    if x < low:
        return low
    if x > high:
        return high
    return x
'''

STRONG = '''\
import pytest
from calc import clamp, divide

def test_divide():
    assert divide(6, 3) == 2
    assert divide(-3, 1) == -3

def test_divide_by_zero():
    with pytest.raises(ValueError):
        divide(1, 0)

def test_clamp():
    assert clamp(-1) == 0
    assert clamp(11) == 10
    assert clamp(5) == 5
    assert clamp(0) == 0
    assert clamp(10) == 10
    assert clamp(1, low=1) == 1
'''

WEAK = '''\
from calc import divide

def test_divide():
    assert divide(6, 3) == 2
'''

CONFTEST = '''\
import os, sys
sys.path.insert(0, os.environ.get("ODIN_TARGET_DIR") or os.path.join(os.environ["ODIN_PROJECT_DIR"], "src"))
'''

PYTEST = GateCommand(cmd=f'"{sys.executable}" -m pytest -q -p no:cacheprovider "$HARNESS"', timeout=120)


def make_project(tmp_path: Path, tests: str) -> tuple[Path, dict[str, str]]:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "calc.py").write_text(CALC)
    harness = tmp_path / "harness"  # outside the project, like a run dir's harness
    harness.mkdir()
    (harness / "conftest.py").write_text(CONFTEST)
    (harness / "test_calc.py").write_text(tests)
    env = command_env(project, tmp_path / "run", "run", "test")
    env["HARNESS"] = str(harness)
    return project, env


def digest(tree: Path) -> dict[str, str]:
    return {str(p.relative_to(tree)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(tree.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def test_every_operator_finds_its_mutants():
    found = mutants_of(CALC.encode(), "src/calc.py")
    kinds = {m.operator for m in found}
    assert kinds == {"flip comparison", "off by one", "negate condition", "return None", "drop raise"}
    flip = next(m for m in found if m.operator == "flip comparison" and m.line == 3)
    assert flip.description == "`==` → `!=` (src/calc.py:3)"
    assert b"if b != 0:" in flip.apply(CALC.encode())
    assert "-    if b == 0:\n+    if b != 0:\n" in flip.diff(CALC.encode())
    drop = next(m for m in found if m.operator == "drop raise")
    assert b'raise' not in drop.apply(CALC.encode()).split(b"\n")[3]
    # the selection is bounded and takes every kind in turn
    chosen = select(found, 5)
    assert len(chosen) == 5 and {m.operator for m in chosen} == kinds


def test_a_weak_harness_lets_mutants_survive_and_fails(tmp_path: Path):
    project, env = make_project(tmp_path, WEAK)
    before = digest(project)
    report = run_mutants(project, ["src/calc.py"], [PYTEST], env, run_command,
                         settings=MutationSettings(max_mutants=8, jobs=2))
    assert report.tried == 8
    assert not report.passed and report.ratio < 0.6
    reason = report.reason()
    assert reason.startswith("the gate's commands cannot tell good code from bad: kill ratio 3/8")
    assert "the gate passes with `0` → `1` (src/calc.py:3)" in reason
    survivor = report.survivors[0]
    assert survivor.diff.startswith("--- a/src/calc.py")
    assert digest(project) == before  # the project was never touched


def test_a_strong_harness_kills_enough(tmp_path: Path):
    project, env = make_project(tmp_path, STRONG)
    report = run_mutants(project, ["src/calc.py"], [PYTEST], env, run_command,
                         settings=MutationSettings(max_mutants=8, jobs=2))
    assert report.tried == 8
    assert report.passed, report.to_dict()
    assert report.ratio >= 0.6


def test_only_the_given_files_are_mutated_and_never_tests(tmp_path: Path):
    project, env = make_project(tmp_path, STRONG)
    (project / "src" / "other.py").write_text("def f(x):\n    return x == 1\n")
    (project / "tests").mkdir()
    (project / "tests" / "test_x.py").write_text("def test_x():\n    assert 1 == 1\n")
    report = run_mutants(project, ["src/other.py", "tests/test_x.py", "README.md"], [GateCommand(cmd="true")],
                         env, run_command, settings=MutationSettings(max_mutants=50, jobs=1))
    assert report.files == ["src/other.py"]
    assert {r.path for r in report.results} == {"src/other.py"}
    assert is_test_file("harness/test_calc.py") and is_test_file("conftest.py") and not is_test_file("src/calc.py")


def test_nothing_to_mutate_passes_with_a_note(tmp_path: Path):
    project, env = make_project(tmp_path, STRONG)
    report = run_mutants(project, [], [PYTEST], env, run_command)
    assert report.passed and report.tried == 0 and "nothing to mutate" in report.note


def test_links_and_files_that_are_not_utf8_are_never_mutated(tmp_path: Path):
    project, env = make_project(tmp_path, STRONG)
    outside = tmp_path / "outside.py"
    outside.write_text("def f(x):\n    return x == 1\n")
    (project / "src" / "linked.py").symlink_to(outside)
    (project / "src" / "latin.py").write_bytes("# -*- coding: latin-1 -*-\nNAME = 'caf\xe9'\nX = 1 == 1\n".encode("latin-1"))
    before = outside.read_bytes()
    report = run_mutants(project, ["src/linked.py", "src/latin.py"], [GateCommand(cmd="true")], env, run_command)
    assert report.files == [] and report.tried == 0
    assert outside.read_bytes() == before


def test_a_gate_that_fails_without_any_mutant_proves_nothing(tmp_path: Path):
    project, env = make_project(tmp_path, STRONG)
    (project / ".venv").mkdir()  # the scratch copy leaves it out, so this gate fails there whatever the code
    report = run_mutants(project, ["src/calc.py"], [GateCommand(cmd="test -d .venv")], env, run_command)
    assert report.tried == 0 and report.passed
    assert report.note.startswith("not proven: `test -d .venv` fails in a scratch copy")


def test_a_project_inside_a_folder_named_like_a_skipped_one_still_has_targets(tmp_path):
    """Only folders inside the project (.venv, node_modules ...) are skipped, not those the project lies in."""
    from odin_magic.loop.artifacts import place
    from odin_magic.engine.mutation import targets

    project = tmp_path / ".venv" / "work" / "proj"
    (project / "src").mkdir(parents=True)
    (project / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (project / "src" / ".venv").mkdir()
    (project / "src" / ".venv" / "dep.py").write_text("x = 1\n")
    src = place("src/", project, project / ".odin-loop" / "runs" / "r")
    assert targets(project, [src]) == ["src/calc.py"]
