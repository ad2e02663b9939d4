"""The project's own test command wins (issue 21 item 3): the regression gate runs what the project
declares (a Makefile ``test`` target, tox, nox, a pytest configuration, npm, cargo, go) before it guesses
pytest from a ``tests/`` directory; a declared command that cannot run blocks the run and names itself.

Real temporary projects, real ``make`` and ``python -m unittest``, the real SDK against the local fake
Messages API."""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from odin_magic.core.commands import run_command
from odin_magic.engine.orchestrator import Engine
from odin_magic.engine.regression import PYTEST, candidates, detect, suite_for
from odin_magic.loop.schema import GateCommand
from odin_magic.runs import evidence as gate_evidence
from odin_magic.runs.state import DryOptions
from odin_magic.workers.claude import ClaudeWorker
from odin_magic.workers.config import Settings

from support.fake_messages import FakeMessages

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def put(project: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return project


@pytest.mark.parametrize("files, command, why", [
    # the more-itertools layout: a Makefile and tox both run unittest; tests/ holds Python files pytest would collect
    ({"Makefile": "test:\n\tpython -m unittest\n", "tox.ini": "[tox]\nenvlist = py3\n[testenv]\ncommands = x\n",
      "tests/test_a.py": ""}, "make test", "Makefile test target"),
    ({"Makefile": "test:\n\ttrue\n", "pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-q'\n"},
     "make test", "Makefile test target"),
    ({"GNUmakefile": ".PHONY: check test\ncheck test: lint\n\ttrue\n"}, "make test", "GNUmakefile test target"),
    ({"Makefile": "test::\n\ttrue\n"}, "make test", "Makefile test target"),
    ({"tox.ini": "[tox]\nenvlist = py3\n", "pytest.ini": "[pytest]\n"}, "tox", "tox.ini"),
    ({"tox.ini": "[testenv:py]\ncommands = python -m unittest {posargs}\n"}, "tox", "tox.ini"),
    ({"tox.toml": "env_list = ['3.12']\n"}, "tox", "tox.toml"),
    ({"pyproject.toml": "[tool.tox]\nlegacy_tox_ini = '''\n[tox]\n'''\n"}, "tox", "pyproject.toml [tool.tox]"),
    ({"setup.cfg": "[tox:tox]\nenvlist = py3\n"}, "tox", "setup.cfg [tox:tox]"),
    ({"noxfile.py": "import nox\n", "tests/test_a.py": ""}, "nox", "noxfile.py"),
    ({"tox.ini": "[pytest]\naddopts = -q\n[flake8]\n", "tests/test_a.py": ""}, PYTEST, "tox.ini [pytest]"),
    ({"pyproject.toml": "[tool.pytest.ini_options]\n"}, PYTEST, "pyproject.toml [tool.pytest.ini_options]"),
    ({"setup.cfg": "[tool:pytest]\n"}, PYTEST, "setup.cfg [tool:pytest]"),
    ({"pytest.ini": "[pytest]\n"}, PYTEST, "pytest.ini"),
    ({"conftest.py": ""}, PYTEST, "a root conftest.py"),
    ({"package.json": json.dumps({"scripts": {"test": "jest"}}), "tests/test_a.py": ""},
     "npm test --silent", "package.json scripts.test"),
    ({"Cargo.toml": "[package]\n"}, "cargo test --quiet", "Cargo.toml"),
    ({"go.mod": "module x\n"}, "go test ./...", "go.mod"),
    ({"tests/test_a.py": ""}, PYTEST,
     "tests/ holds Python files (a guess: the project declares no test command)"),
])
def test_the_order_of_choice(tmp_path: Path, files: dict, command: str, why: str):
    suite = detect(put(tmp_path, files))
    assert suite is not None and (suite.command.cmd, suite.why) == (command, why)
    assert suite.declared == ("a guess" not in why)


@pytest.mark.parametrize("files", [
    {"Makefile": "test := unit\nall:\n\ttrue\n"},  # a variable, not a target
    {"Makefile": "test ::= unit\n"},
    {"Makefile": ".PHONY: test\nall:\n\ttrue\n"},  # named phony, never defined
    {"Makefile": "tests:\n\ttrue\ntest-all:\n\ttrue\n"},
    {"GNUmakefile": "all:\n\ttrue\n", "Makefile": "test:\n\ttrue\n"},  # make reads GNUmakefile only
    {"tox.ini": "[flake8]\nmax-line-length = 100\n"},
    {"package.json": json.dumps({"scripts": {"test": 'echo "Error: no test specified" && exit 1'}})},
    {"tests/README.md": "no python here"},
])
def test_what_is_not_a_declared_test_command(tmp_path: Path, files: dict):
    assert detect(put(tmp_path, files)) is None


def test_every_candidate_is_listed_in_the_order_of_choice_and_the_loop_wins(tmp_path: Path):
    put(tmp_path, {"Makefile": "test:\n\ttrue\n", "tox.ini": "[tox]\n[pytest]\n", "noxfile.py": "",
                   "go.mod": "module x\n", "tests/test_a.py": ""})
    assert [(s.command.cmd, s.why) for s in candidates(tmp_path)] == [
        ("make test", "Makefile test target"), ("tox", "tox.ini"), ("nox", "noxfile.py"),
        (PYTEST, "tox.ini [pytest]"), ("go test ./...", "go.mod")]
    assert suite_for("python -m unittest", tmp_path).why == "the loop's regression command"
    assert suite_for(GateCommand(cmd="make check", timeout=5), tmp_path).command.timeout == 5
    assert suite_for(True, tmp_path).command.cmd == "make test"
    assert suite_for(False, tmp_path) is None


# -- a doctest only the project's own runner loads --------------------------------------------------

RIGHT = '''\
def padded(items, fill, n):
    """``items`` padded with ``fill`` to ``n`` items.

    >>> padded([1, 2], 0, 4)
    [1, 2, 0, 0]
    """
    return list(items) + [fill] * (n - len(items))
'''
BROKEN_EXAMPLE = RIGHT.replace("[1, 2, 0, 0]\n", "[1, 2, 0, 0, 0]\n")

DOCTEST_PROJECT = {
    "padlib/__init__.py": RIGHT,
    # pytest collects both files (1 test); unittest also runs the doctests load_tests adds
    "tests/test_padded.py": """\
        import unittest

        import padlib


        class PaddedTest(unittest.TestCase):
            def test_pads(self):
                self.assertEqual(padlib.padded([1], 0, 3), [1, 0, 0])
        """,
    "tests/test_doctests.py": """\
        import doctest

        import padlib


        def load_tests(loader, tests, ignore):
            tests.addTests(doctest.DocTestSuite(padlib))
            return tests
        """,
    "Makefile": "test:\n\tpython -m unittest discover -s tests\n",
    "tox.ini": "[tox]\nenvlist = py3\n\n[testenv]\ncommands = python -m unittest discover -s tests\n",
}

LOOP = """
name: tidy
max_iterations: 3
stages:
  - id: build
    agent: executor
    produces: [padlib/]
    gate: {mode: ai, check: padlib pads}
"""


def run(cmd: str, project: Path):
    env = dict(os.environ, ODIN_RUN_DIR="", PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    return run_command(GateCommand(cmd=cmd, timeout=120), project, env)


def test_the_broken_doctest_is_seen_by_the_declared_runner_only(tmp_path: Path):
    put(tmp_path, dict(DOCTEST_PROJECT, **{"padlib/__init__.py": BROKEN_EXAMPLE}))
    guessed = run(PYTEST, tmp_path)
    assert guessed.ok and "1 passed" in guessed.stdout_tail  # what the gate ran before: blind to the doctest
    own = run(detect(tmp_path).command.cmd, tmp_path)
    assert not own.ok and "Failed example" in own.stdout_tail + own.stderr_tail


def worker_for(fake: FakeMessages) -> ClaudeWorker:
    return ClaudeWorker(Settings(max_retries=0), client_factory=fake.factory(max_retries=0))


def build(fake: FakeMessages, content: str) -> None:
    fake.tool("write", {"file_path": "padlib/__init__.py", "content": content})
    fake.reply("done")
    fake.verdict(passed=True)


def test_a_doctest_failing_only_under_make_test_fails_the_regression_gate(project: Path, write_loop):
    put(project, DOCTEST_PROJECT)
    write_loop(LOOP)
    fake = FakeMessages()
    build(fake, BROKEN_EXAMPLE)  # the judge is fooled and pytest passes; the project's `make test` does not
    build(fake, RIGHT)

    state = Engine(project, worker=worker_for(fake)).start("tidy", "tidy padded")

    assert state.status == "done", state.failure_reason
    assert [(h.stage, h.result) for h in state.history] == [("build", "pass"), ("build", "fail"), ("build", "pass")]
    failed = state.history[1]
    assert "regression suite `make test` failed" in failed.reason
    run_dir = project / ".odin-loop" / "runs" / state.run_id
    first = gate_evidence.read(run_dir, failed.evidence)["completion"]["regression"]
    assert (first["command"], first["why"], first["passed"]) == ("make test", "Makefile test target", False)
    assert "Failed example" in first["tail"] and "padlib.padded" in first["tail"]
    # the worker was told: its next request carries the failure
    assert "make test" in json.dumps(fake.requests[3].body["messages"])
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "Regression suite `make test` (chosen from: Makefile test target): passed." in report


def test_a_declared_runner_that_is_not_installed_blocks_and_names_the_command(project: Path, write_loop,
                                                                            monkeypatch, tmp_path: Path):
    bare = tmp_path / "bin"  # a PATH without tox (the gate adds the interpreter's own directory)
    bare.mkdir()
    for program in ("git", "sh"):  # the checkpoints' git, the gate's shell
        (bare / program).symlink_to(shutil.which(program))
    monkeypatch.setenv("PATH", str(bare))
    if shutil.which("tox", path=os.path.dirname(sys.executable)):
        pytest.skip("tox is installed next to the interpreter")
    put(project, {k: v for k, v in DOCTEST_PROJECT.items() if k != "Makefile"})
    write_loop(LOOP)
    fake = FakeMessages()
    build(fake, RIGHT)

    state = Engine(project, worker=worker_for(fake)).start("tidy", "tidy padded")

    assert state.status == "blocked" and state.blocked.kind == "environment"
    assert state.total_iterations == 0  # no loopback spent: no model work can install tox
    assert "`tox`: program tox was not found" in state.blocked.reason
    assert "the project's test command, from tox.ini" in state.blocked.reason
    assert "install tox" in state.blocked.fix and "`regression:`" in state.blocked.fix


def test_a_makefile_whose_recipe_program_is_missing_is_an_environment_failure(project: Path, write_loop):
    put(project, dict(DOCTEST_PROJECT, Makefile="test:\n\todin-no-such-runner -q\n"))
    write_loop(LOOP)
    fake = FakeMessages()
    build(fake, RIGHT)

    state = Engine(project, worker=worker_for(fake)).start("tidy", "tidy padded")

    assert state.status == "blocked" and state.blocked.kind == "environment"
    assert "`make test`: program odin-no-such-runner was not found" in state.blocked.reason
    assert "Makefile test target" in state.blocked.reason


def test_a_dry_run_report_names_the_command_it_did_not_run(project: Path, write_loop):
    put(project, DOCTEST_PROJECT)
    write_loop(LOOP)

    state = Engine(project).start("tidy", "tidy padded", dry=DryOptions(approve_all=True))

    assert state.status == "done"
    report = (project / ".odin-loop" / "runs" / state.run_id / "report.md").read_text(encoding="utf-8")
    assert "Regression suite `make test`: not run (dry run without --run-commands)." in report
    from odin_magic.engine.completion import latest

    lines = latest(project / ".odin-loop" / "runs" / state.run_id, state.history).lines()
    assert "– regression suite: not run (dry run without --run-commands)" in lines  # no tick on what did not run
