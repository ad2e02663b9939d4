"""Every failing test named (issue 21, item 4): what each runner's output says failed.

pytest and unittest run for real in temporary projects (tests/engine/test_failing_tests_named.py does
that through the engine); the other runners are read from samples of their real output.
"""

from __future__ import annotations

import sys
import textwrap

from odin_magic.core.commands import run_command
from odin_magic.engine import gates, test_output
from odin_magic.engine.regression import failing_tests
from odin_magic.engine.test_output import describe, parse
from odin_magic.loop.schema import GateCommand

PYTEST_Q = """\
tests/test_b.py:12: AssertionError
=========================== short test summary info ============================
FAILED tests/test_a.py::PaddedTest::test_error - ValueError: boom
FAILED tests/test_a.py::PaddedTest::test_next_multiple - AssertionError: List...
FAILED tests/test_a.py::test_plain - assert 1 == 2
FAILED tests/test_b.py::test_param[a b] - assert 2 == 1
ERROR tests/test_b.py::test_uses_broken - RuntimeError: fixture broke
4 failed, 2 passed, 1 error in 0.29s
"""

PYTEST_V = """\
tests/test_a.py::PaddedTest::test_error FAILED                           [ 14%]
tests/test_a.py::PaddedTest::test_ok PASSED                              [ 42%]
tests/test_a.py::test_plain FAILED                                       [ 57%]
tests/test_b.py::test_uses_broken ERROR                                  [ 71%]

===================== 2 failed, 1 passed, 1 error in 0.13s =====================
"""

UNITTEST_OLD = """\
======================================================================
FAIL: test_next_multiple (more_itertools.tests.test_more.PaddedTest)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "more_itertools/tests/test_more.py", line 1790, in test_next_multiple
    self.assertEqual(actual, expected)
AssertionError: Lists differ: [1, 2, 3, None] != [1, 2, 3, None, None, None]

======================================================================
ERROR: more_itertools.tests.test_broken (unittest.loader._FailedTest.more_itertools.tests.test_broken)
----------------------------------------------------------------------
ImportError: Failed to import test module: more_itertools.tests.test_broken

----------------------------------------------------------------------
Ran 929 tests in 3.210s

FAILED (failures=1, errors=1)
"""

GO = """\
=== RUN   TestAdd
    add_test.go:9: Add(1, 2) = 4, want 3
--- FAIL: TestAdd (0.00s)
=== RUN   TestSub
=== RUN   TestSub/negative
    sub_test.go:14: Sub(-1, 1) = 0, want -2
--- FAIL: TestSub (0.00s)
    --- FAIL: TestSub/negative (0.00s)
FAIL
FAIL	example.com/calc	0.002s
FAIL
"""

CARGO = """\
running 3 tests
test tests::it_adds ... ok
test tests::it_fails ... FAILED
test tests::it_panics ... FAILED

failures:

---- tests::it_fails stdout ----
thread 'tests::it_fails' panicked at src/lib.rs:10:9:
assertion `left == right` failed
  left: 4
 right: 5
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

---- tests::it_panics stdout ----
thread 'tests::it_panics' panicked at 'boom', src/lib.rs:15:9


failures:
    tests::it_fails
    tests::it_panics

test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

error: test failed, to rerun pass `--lib`
"""

CARGO_QUIET = """\
running 3 tests
.FF
failures:

---- tests::it_fails stdout ----
thread 'tests::it_fails' panicked at src/lib.rs:10:9:
assertion `left == right` failed

failures:
    tests::it_fails
    tests::it_panics

test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
"""

JEST = """\
 FAIL  src/sum.test.js
  sum
    ✓ adds 1 + 2 to equal 3 (2 ms)
    ✕ adds 2 + 2 to equal 5 (3 ms)
    ✕ subtracts (1 ms)

  ● sum › adds 2 + 2 to equal 5

    expect(received).toBe(expected) // Object.is equality

  ● sum › subtracts

    TypeError: sub is not a function

Test Suites: 1 failed, 1 total
Tests:       2 failed, 1 passed, 3 total
Snapshots:   0 total
Time:        0.512 s
"""

NODE_TAP = """\
TAP version 13
# Subtest: adds
ok 1 - adds
  ---
  duration_ms: 2.325178
  ...
# Subtest: subtracts wrongly
not ok 2 - subtracts wrongly
  ---
  duration_ms: 10.531692
  failureType: 'testCodeFailure'
  error: |-
    Expected values to be strictly equal:
  code: 'ERR_ASSERTION'
  ...
# Subtest: group
    # Subtest: throws
    not ok 1 - throws
      ---
      duration_ms: 0.355807
      failureType: 'testCodeFailure'
      error: 'boom'
      ...
    1..1
not ok 3 - group
  ---
  duration_ms: 0.934301
  type: 'suite'
  failureType: 'subtestsFailed'
  error: '1 subtest failed'
  ...
1..3
# tests 3
# pass 1
# fail 2
"""

NODE_SPEC = """\
✔ adds (2.378278ms)
✖ subtracts wrongly (10.611822ms)
  AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:

▶ group
  ✖ throws (0.317736ms)
    Error: boom

✖ group (0.91744ms)
ℹ tests 3
ℹ pass 1
ℹ fail 2

✖ failing tests:

✖ subtracts wrongly (10.611822ms)
  AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:
"""


def test_pytest_short_summary_names_every_failure_with_its_message():
    found = parse(PYTEST_Q)
    assert found.names == ["tests/test_a.py::PaddedTest::test_error", "tests/test_a.py::PaddedTest::test_next_multiple",
                           "tests/test_a.py::test_plain", "tests/test_b.py::test_param[a b]",
                           "tests/test_b.py::test_uses_broken"]
    assert found.tests[0].message == "ValueError: boom" and found.total == 5
    assert failing_tests(PYTEST_Q) == found.names  # the regression gate reads the same


def test_pytest_verbose_progress_lines_name_failures_without_a_summary():
    found = parse(PYTEST_V)
    assert found.names == ["tests/test_a.py::PaddedTest::test_error", "tests/test_a.py::test_plain",
                           "tests/test_b.py::test_uses_broken"]
    assert found.total == 3


def test_unittest_before_3_11_and_a_module_that_could_not_be_imported():
    found = parse(UNITTEST_OLD)
    assert found.names == ["more_itertools.tests.test_more.PaddedTest.test_next_multiple",
                           "more_itertools.tests.test_broken"]
    assert found.tests[0].message.startswith("AssertionError: Lists differ")
    assert found.total == 2


def test_go_test_names_tests_and_subtests():
    found = parse(GO)
    assert found.names == ["TestAdd", "TestSub", "TestSub/negative"]


def test_cargo_names_failures_with_their_panic_in_both_forms():
    found = parse(CARGO)
    assert found.names == ["tests::it_fails", "tests::it_panics"] and found.total == 2
    assert found.tests[0].message == "assertion `left == right` failed"
    assert found.tests[1].message.startswith("'boom'")
    quiet = parse(CARGO_QUIET)
    assert quiet.names == ["tests::it_fails", "tests::it_panics"] and quiet.total == 2


def test_jest_names_each_failing_test_with_its_describe_path():
    found = parse(JEST)
    assert found.names == ["sum › adds 2 + 2 to equal 5", "sum › subtracts"] and found.total == 2
    assert found.tests[1].message == "TypeError: sub is not a function"


def test_node_test_runner_tap_and_spec_name_the_tests_not_the_suite():
    tap = parse(NODE_TAP)
    assert tap.names == ["subtracts wrongly", "throws"] and tap.total == 2
    assert tap.tests[1].message == "boom"
    spec = parse(NODE_SPEC)
    assert spec.names == ["subtracts wrongly", "throws"] and spec.total == 2
    assert spec.tests[1].message == "Error: boom"


def test_describe_names_up_to_the_cap_and_counts_the_rest():
    lines = "".join(f"FAILED tests/test_x.py::test_{i} - assert {i} == 0\n" for i in range(13))
    text = describe(parse(lines + "13 failed in 0.10s\n"))
    assert text.startswith("13 failing tests: tests/test_x.py::test_0 - assert 0 == 0; ")
    assert "tests/test_x.py::test_9 - assert 9 == 0; and 3 more" in text and "test_10" not in text
    # the runner counts more than its output's tail still shows
    tail = parse("FAILED tests/test_x.py::test_12 - boom\n40 failed, 3 passed in 9.1s\n")
    assert describe(tail) == "40 failing tests: tests/test_x.py::test_12 - boom; and 39 more (not in the output's tail)"
    assert describe(parse(PYTEST_Q), cap=2).endswith("and 3 more")


def test_output_that_names_no_test_keeps_its_tail_in_the_reason(tmp_path):
    script = "import sys\nfor i in range(8):\n    print(f'step {i} of the build')\nsys.exit(2)\n"
    (tmp_path / "build.py").write_text(script)
    ev = run_command(GateCommand(cmd=f"{sys.executable} build.py"), tmp_path, {})
    assert not parse(ev.stdout_tail).tests
    reason = gates._describe_failure(ev)
    assert reason.endswith(": step 3 of the build | step 4 of the build | step 5 of the build | "
                           "step 6 of the build | step 7 of the build")
    assert "step 2" not in reason


def test_the_cause_of_an_unnamed_failure_stays_before_the_tail():
    ev = run_command(GateCommand(cmd=textwrap.dedent("""\
        echo 'error: cannot find symbol' >&2; for i in 1 2 3 4 5 6; do echo "line $i" >&2; done; exit 1""")),
        __import__("pathlib").Path("."), {})
    lines = gates.explaining_lines(ev)
    assert lines[0] == "error: cannot find symbol" and lines[-1] == "line 6" and len(lines) == 6
    assert test_output.NAMED == 10
