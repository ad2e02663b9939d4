"""Three failing tests all named (issue 21, item 4): in the gate's reason, the worker's feedback on its
retry and the run's report, with real pytest and real unittest (which runs the module's doctests) in a
temporary project, through the real engine, Claude worker and SDK against the scripted model."""

from __future__ import annotations

import json

import pytest

from support.scripted_runs import scripted_engine

MODULE = '''\
def padded(items, n):
    """Pad ``items`` with None up to a multiple of ``n``.

    >>> padded([1, 2, 3], 2)
    [1, 2, 3, None]
    """
    return list(items) + [None] * (n - len(items) % n - 1)  # off by one
'''

TESTS = '''\
import doctest
import unittest

import padding


def load_tests(loader, tests, ignore):  # the project's own runner (unittest) runs the doctests too
    tests.addTests(doctest.DocTestSuite(padding))
    return tests


class PaddedTest(unittest.TestCase):
    def test_next_multiple(self):
        self.assertEqual(padding.padded([1, 2, 3], 2), [1, 2, 3, None])

    def test_empty(self):
        self.assertEqual(padding.padded([], 3), [])

    def test_exact(self):
        self.assertEqual(padding.padded([1, 2], 2)[:2], [1, 2])


def test_regression_padded_by_three():  # pytest collects it, unittest does not
    assert padding.padded([1], 3) == [1, None, None]
'''

SCRIPT = """
stages:
  fix:
    - tools: [{write: {file_path: "{run_dir}/notes.md", content: "tried\\n"}}]
    - text: tried
default_verdict: {status: DONE, passed: true, reasons: [scripted]}
"""

LOOP = """
name: named
max_iterations: 1
stages:
  - id: fix
    produces: [notes.md]
    gate:
      mode: ai
      check: the tests pass
      run: [{cmd}]
"""

RUNNERS = {
    "pytest": ("python -m pytest -q -p no:cacheprovider tests",
               ["tests/test_padding.py::PaddedTest::test_next_multiple", "tests/test_padding.py::PaddedTest::test_empty",
                "tests/test_padding.py::test_regression_padded_by_three"]),
    "unittest": ("python -m unittest",
                 ["tests.test_padding.PaddedTest.test_next_multiple", "tests.test_padding.PaddedTest.test_empty",
                  "padding.padded"]),
}


@pytest.mark.parametrize("runner", list(RUNNERS))
def test_three_failing_tests_are_named_in_the_reason_the_feedback_and_the_report(project, write_loop, runner):
    cmd, names = RUNNERS[runner]
    (project / "padding.py").write_text(MODULE)
    (project / "tests").mkdir()
    (project / "tests" / "__init__.py").write_text("")
    (project / "tests" / "test_padding.py").write_text(TESTS)
    write_loop(LOOP.format(cmd=json.dumps(cmd)))
    engine, model = scripted_engine(project, SCRIPT)

    state = engine.start("named", "make padded right")

    assert state.status == "failed" and [e.result for e in state.history] == ["fail", "fail"]
    reason = state.history[0].reason
    assert reason.startswith(f"gate command `{cmd}` exited 1: 3 failing tests: ")
    for name in names:
        assert name in reason, (name, reason)
    # the worker's retry: its brief carries the reason, every test named
    retries = [json.dumps(body) for body in model.requests if "The last attempt did not pass" in json.dumps(body)]
    assert retries
    for name in names:
        assert name in retries[0]
    # the report: the failed gates' reasons in the path through the stages, every test named
    report = (engine.run_dir(state.run_id) / "report.md").read_text(encoding="utf-8")
    for name in names:
        assert name in report
