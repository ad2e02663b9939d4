"""Mutants where the change is (issue 21 items 1 and 2): real temporary projects, real checkpoints, real
pytest and unittest runs; mutants only on the changed lines of a long file, fail-fast, a hang killed."""

from __future__ import annotations

import sys
from pathlib import Path

from odin_magic.engine.gates import command_env, run_command
from odin_magic.engine.mutation import MutationSettings, run_mutants
from odin_magic.engine.mutation_plan import fail_fast, focused, killers_first
from odin_magic.loop.schema import GateCommand
from odin_magic.render.run_report import _mutations
from odin_magic.runs.checkpoints import Checkpoints


def filler(i: int) -> str:
    return (f"def helper_{i}(x, y=0):\n    if x > {i}:\n        return x - {i}\n"
            f"    while y < {i}:\n        y += 1\n    return x == y\n\n\n")


PADDED = '''\
def padded(items, fill, n):
    """items, then fill, until there are at least n."""
    out = list(items)
    if n < 1:
        raise ValueError("n must be at least 1")
    while len(out) < n:
        out.append(fill)
    return out


'''
LONG = "".join(filler(i) for i in range(40)) + PADDED + "".join(filler(i) for i in range(40, 80))
FIXED_LINE = "    while len(out) < n:\n"
CHANGED_LINE = "    while len(out) < n and n != 0:\n"

PYTEST_TESTS = '''\
import os, sys
sys.path.insert(0, os.path.join(os.environ["ODIN_PROJECT_DIR"], "src"))
import pytest
from lib import padded

def test_padded():
    assert padded([1], 0, 3) == [1, 0, 0]
    assert padded([1, 2, 3], 0, 2) == [1, 2, 3]

def test_padded_rejects_zero():
    with pytest.raises(ValueError):
        padded([], 0, 0)
'''

UNITTEST_TESTS = '''\
import os, sys, unittest
sys.path.insert(0, os.path.join(os.environ["ODIN_PROJECT_DIR"], "src"))
from lib import padded

class PaddedTest(unittest.TestCase):
    def test_padded(self):
        self.assertEqual(padded([1], 0, 3), [1, 0, 0])
        self.assertEqual(padded([1, 2, 3], 0, 2), [1, 2, 3])

    def test_zero(self):
        with self.assertRaises(ValueError):
            padded([], 0, 0)
'''


def changed_project(tmp_path: Path, tests: str, new_line: str = CHANGED_LINE):
    """A project with a long module, checkpointed before and after a one-line change in ``padded``."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "src" / "lib.py").write_text(LONG)
    (project / "tests" / "test_lib.py").write_text(tests)
    store = Checkpoints(project)
    before = store.snapshot()
    (project / "src" / "lib.py").write_text(LONG.replace(FIXED_LINE, new_line))
    after = store.snapshot()
    lines = store.changed_lines(before, after)
    return project, lines, command_env(project, tmp_path / "run", "run", "test")


def padded_span() -> tuple[int, int]:
    lines = LONG.splitlines()
    first = lines.index("def padded(items, fill, n):") + 1
    return first, first + PADDED.count("\n") - 3


def test_checkpoint_hunks_are_the_changed_lines(tmp_path: Path):
    project, lines, _ = changed_project(tmp_path, PYTEST_TESTS)
    where = LONG.splitlines().index(FIXED_LINE.rstrip("\n")) + 1
    assert lines == {"src/lib.py": [(where, where)]}
    store = Checkpoints(project)
    before = store.snapshot()
    (project / "src" / "new.py").write_text("a = 1\nb = 2\n")
    text = (project / "src" / "lib.py").read_text().splitlines(keepends=True)
    del text[2:4]  # a deletion marks the lines around the gap
    (project / "src" / "lib.py").write_text("".join(text))
    assert store.changed_lines(before, store.snapshot()) == {"src/lib.py": [(2, 3)], "src/new.py": [(1, 2)]}


def test_pytest_mutants_only_on_the_changed_lines_of_a_long_file(tmp_path: Path):
    project, lines, env = changed_project(tmp_path, PYTEST_TESTS)
    command = GateCommand(cmd=f'"{sys.executable}" -m pytest -q -p no:cacheprovider tests', timeout=120)
    report = run_mutants(project, lines, [command], env, run_command, settings=MutationSettings(max_mutants=4, jobs=2))
    line = lines["src/lib.py"][0][0]
    assert report.tried == 4 and {(r.path, r.line, r.where) for r in report.results} == {("src/lib.py", line, "line")}
    assert {r.operator for r in report.results} == {"flip comparison", "off by one", "negate condition"}
    assert report.passed and report.killed == 3  # `n != 0` → `n != 1` changes nothing the tests can see
    assert [r.description for r in report.survivors] == [f"`0` → `1` (src/lib.py:{line})"]
    evidence = report.to_dict()
    assert evidence["changed"] == {"src/lib.py": [[line, line]]}
    assert [r["line"] for r in evidence["results"]] == [line] * 4
    assert evidence["commands"] == [command.cmd.replace("-m pytest", "-m pytest -x")]
    assert evidence["focused"] and "-k 'padded or Padded'" in evidence["focused"][0]
    killers = {r["killed_by"] for r in evidence["results"] if r["killed"]}  # focused, or the latest killers first
    assert killers - {evidence["focused"][0]} <= {k for k in killers if k.endswith("tests/test_lib.py::test_padded")}
    shown = _mutations([("test", evidence)])  # the run report's section, from the evidence as recorded
    assert f"| src/lib.py | {line} | off by one | line | survived |" in shown
    assert f"| src/lib.py | {line} | flip comparison | line | killed |" in shown


def test_unittest_mutants_fill_the_enclosing_function_next_and_never_another(tmp_path: Path):
    project, lines, env = changed_project(tmp_path, UNITTEST_TESTS)
    command = GateCommand(cmd=f'"{sys.executable}" -m unittest discover -s tests', timeout=120)
    report = run_mutants(project, lines, [command], env, run_command, settings=MutationSettings(max_mutants=9, jobs=2))
    first, last = padded_span()
    counted = [r for r in report.results if r.where in ("line", "function")]
    assert len(counted) == 9 and report.tried == 9
    assert all(first <= r.line <= last for r in report.results), [(r.line, r.where) for r in report.results]
    assert {r.where for r in report.results} == {"line", "function"}
    assert report.commands == [command.cmd.replace("discover", "discover -f")]
    assert report.focused and "-k '*padded*'" in report.focused[0]


def test_a_larger_budget_reaches_the_rest_of_the_file_but_does_not_count_it(tmp_path: Path):
    project, lines, env = changed_project(tmp_path, PYTEST_TESTS)
    report = run_mutants(project, lines, [GateCommand(cmd="true")], env, run_command,
                         settings=MutationSettings(max_mutants=30, jobs=2))
    first, last = padded_span()
    elsewhere = [r for r in report.results if r.where == "rest of file"]
    assert elsewhere and all(not first <= r.line <= last for r in elsewhere)
    assert report.tried == len(report.results) - len(elsewhere)  # `true` kills nothing: only the change counts
    assert report.ratio == 0 and not report.passed
    assert "rest of file" not in report.reason() and "src/lib.py:" in report.reason()


def test_a_change_without_a_mutation_site_is_not_proven_and_not_failed(tmp_path: Path):
    project, lines, env = changed_project(tmp_path, PYTEST_TESTS, new_line=FIXED_LINE + "        # pad\n")
    report = run_mutants(project, lines, [GateCommand(cmd="true")], env, run_command)
    assert report.tried == 0 and report.results == [] and report.passed and report.ratio is None
    where = lines["src/lib.py"][0][0]
    assert report.note == f"not proven: no mutation site in the change (src/lib.py lines {where})"
    assert report.summary() == f"mutation: {report.note}"
    assert f"test: {report.note}" in _mutations([("test", report.to_dict())])


HANGS = '''\
def countdown(n):
    while n != 0:
        n -= 1
    return n
'''


def test_a_mutant_that_hangs_is_killed_by_the_timeout_and_says_so(tmp_path: Path):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "count.py").write_text(HANGS)
    (project / "tests").mkdir()
    (project / "tests" / "test_count.py").write_text(
        "import os, sys\nsys.path.insert(0, os.path.join(os.environ['ODIN_PROJECT_DIR'], 'src'))\n"
        "from count import countdown\n\ndef test_countdown():\n    assert countdown(3) == 0\n")
    env = command_env(project, tmp_path / "run", "run", "test")
    command = GateCommand(cmd=f'"{sys.executable}" -m pytest -q -p no:cacheprovider tests', timeout=120)
    report = run_mutants(project, {"src/count.py": [(3, 3)]}, [command], env, run_command,
                         settings=MutationSettings(max_mutants=1, jobs=1, min_timeout_s=3))
    [hang] = report.results  # `n -= 1` → `n -= 2` never reaches 0 from 3
    assert hang.operator == "off by one" and hang.killed and hang.timed_out and hang.line == 3
    assert report.to_dict()["results"][0]["timed_out"] is True and report.timeout_s >= 3
    assert "| src/count.py | 3 | off by one | line | killed by timeout (hung) |" in _mutations([("t", report.to_dict())])


def test_fail_fast_and_focused_commands():
    assert fail_fast("pytest -q tests") == "pytest -x -q tests"
    assert fail_fast("python -m pytest -x tests") == "python -m pytest -x tests"
    assert fail_fast("cd a && python3 -m pytest") == "cd a && python3 -m pytest -x"
    assert fail_fast("python -m unittest -v") == "python -m unittest -f -v"
    assert fail_fast("python -m unittest discover -s tests") == "python -m unittest discover -f -s tests"
    assert fail_fast("make test") == "make test" and fail_fast("pytest-cov x") == "pytest-cov x"
    assert focused("pytest -q tests", ["split_at"]) == "pytest -x -k 'split_at or SplitAt' -q tests"
    assert focused("python -m unittest", ["padded"]) == "python -m unittest -f -k '*padded*' -k '*Padded*'"
    assert focused("make test", ["padded"]) is None and focused("pytest -k a", ["padded"]) is None
    assert focused("pytest", []) is None


def test_the_test_that_killed_a_mutant_runs_first_on_the_next(tmp_path: Path):
    """Issue 21 item 2: after a kill, the next mutant first meets the test that caught the last one (alone,
    fail-fast), before the focused and the full commands."""
    project, lines, env = changed_project(tmp_path, PYTEST_TESTS)
    command = GateCommand(cmd=f'"{sys.executable}" -m pytest -q -p no:cacheprovider tests', timeout=120)
    report = run_mutants(project, lines, [command], env, run_command, settings=MutationSettings(max_mutants=4, jobs=1))
    killed = [r for r in report.results if r.killed]
    assert len(killed) == 3
    assert killed[0].killed_by == report.focused[0]  # nothing killed yet: the focused run caught it
    later = [r.killed_by for r in killed[1:]]
    assert later and all("-x -q -p no:cacheprovider tests/test_lib.py::test_padded" in k for k in later), later


def test_the_killers_first_keep_the_commands_options_and_a_mutant_the_tests_miss_survives(tmp_path: Path):
    """The narrowed run of earlier killers keeps the command's options (here the import path the tests need):
    without them it cannot collect, and a failure to collect is no kill."""
    tests = PYTEST_TESTS.replace('sys.path.insert(0, os.path.join(os.environ["ODIN_PROJECT_DIR"], "src"))\n', "")
    tests = tests.replace("from lib import padded\n", "").replace("():\n", "():\n    from lib import padded\n")
    project, lines, env = changed_project(tmp_path, tests)  # the tests import from src, found by the option
    command = GateCommand(cmd=f'"{sys.executable}" -m pytest -q -p no:cacheprovider -o pythonpath=src tests', timeout=120)
    report = run_mutants(project, lines, [command], env, run_command, settings=MutationSettings(max_mutants=4, jobs=1))
    line = lines["src/lib.py"][0][0]
    assert report.killed == 3 and [r.description for r in report.survivors] == [f"`0` → `1` (src/lib.py:{line})"]
    assert any("-o pythonpath=src" in r.killed_by and "::test_padded" in r.killed_by for r in report.results if r.killed)


def test_the_killers_first_command():
    ids = ["tests/test_a.py::test_one"]
    assert killers_first("python -m pytest -o pythonpath=src tests --import-mode=importlib && ruff check .", ids) == (
        "python -m pytest -o pythonpath=src --import-mode=importlib -x -q -p no:cacheprovider "
        "tests/test_a.py::test_one && ruff check .")
    assert killers_first("pytest -k 'a or b' tests/unit -p xdist", ids) == (
        "pytest -k 'a or b' -p xdist -x -q -p no:cacheprovider tests/test_a.py::test_one")
    assert killers_first("make test", ids) is None and killers_first("pytest tests", []) is None
