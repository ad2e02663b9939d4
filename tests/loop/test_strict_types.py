"""Strict loop types (issue 9, item 11): nothing is coerced, and the error names the field and the type."""

from __future__ import annotations

import pytest

from odin_magic.loop.catalog import builtin_loops_dir
from odin_magic.loop.validation import validate_file, validate_text

LOOP = """\
name: typed
version: 1
description: Types are strict.
max_iterations: {max_iterations}
stages:
  - id: ask
    interview: {{mode: deep, auto_assist: {auto_assist}, threshold: {threshold}}}
    produces: [interview-log.md]
    gate: {{mode: ai, check: the spec is clear}}
  - id: build
    agent: {{role: executor, fresh: {fresh}}}
    consumes: [interview-log.md]
    produces: [src/]
    gate:
      mode: ai
      check: {check}
      run: [{{cmd: pytest -q, timeout: 5}}]
"""

GOOD = dict(max_iterations="5", auto_assist="true", threshold="0.2", fresh="true", check="the tests pass")


def validate(**changes):
    return validate_text(LOOP.format(**{**GOOD, **changes}), "typed.yaml", expected_name="typed")


def test_the_well_typed_loop_validates():
    report = validate()
    assert report.ok, report.format()
    assert report.loop.stages[1].gate.commands[0].timeout == 5.0  # a whole number still stands for a float


@pytest.mark.parametrize("change, field, words, line", [
    ({"max_iterations": '"5"'}, "max_iterations", ["whole number", "the string '5'"], 4),
    ({"max_iterations": "true"}, "max_iterations", ["whole number", "the boolean true"], 4),
    ({"max_iterations": "5.5"}, "max_iterations", ["whole number", "5.5"], 4),
    ({"fresh": '"yes"'}, "stages[1].agent.fresh", ["true or false", "'yes'"], 11),
    ({"auto_assist": '"yes"'}, "stages[0].interview.auto_assist", ["true or false", "the string 'yes'"], 7),
    ({"threshold": '"0.2"'}, "stages[0].interview.threshold", ["a number", "the string '0.2'"], 7),
    ({"check": '"   "'}, "stages[1].gate.check", ["empty"], 16),
    ({"check": "42"}, "stages[1].gate.check", ["text", "the number 42"], 16),
])
def test_a_value_of_the_wrong_type_is_an_error_naming_the_field_and_the_type(change, field, words, line):
    report = validate(**change)
    assert not report.ok
    [error] = report.errors
    assert error.field == field, report.format()
    assert error.line == line and error.file == "typed.yaml"
    for word in words:
        assert word in error.message, report.format()
    assert error.fix


def test_a_quoted_number_is_told_to_lose_its_quotes():
    [error] = validate(max_iterations='"5"').errors
    assert error.fix == "remove the quotes: `max_iterations: 5`"
    [error] = validate(auto_assist='"yes"').errors
    assert "auto_assist: true" in error.fix


def test_a_blank_gate_command_is_empty_too():
    text = LOOP.format(**GOOD).replace("run: [{cmd: pytest -q, timeout: 5}]", 'run: ["  "]')
    [error] = validate_text(text, "typed.yaml").errors
    assert error.field == "stages[1].gate.run[0]" and "empty" in error.message


def test_the_builtin_loops_still_validate():
    for path in sorted(builtin_loops_dir().glob("*.yaml")):
        report = validate_file(path)
        assert report.ok, report.format()
