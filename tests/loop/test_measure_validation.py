"""A gate's `measure:` (issue 23, item 1): its fields are checked with errors that name the file, line and field."""

from __future__ import annotations

import textwrap

from odin_magic.loop.validation import validate_file

LOOP = """\
name: tune
version: 1
description: a metric gate
max_iterations: 3
stages:
  - id: plan
    gate: {mode: ai, check: a plan}
  - id: tune
    gate:
      mode: ai
      check: faster
      run: [python -m pytest -q]
      measure:
%s
"""


def errors(tmp_path, measure: str) -> list[tuple]:
    path = tmp_path / "tune.yaml"
    path.write_text(LOOP % textwrap.indent(textwrap.dedent(measure), " " * 8), encoding="utf-8")
    report = validate_file(path)
    assert all(d.file == str(path) for d in report.errors)
    return [(d.line, d.field, d.message) for d in report.errors]


def test_a_measure_beside_run_commands_is_valid(tmp_path):
    assert errors(tmp_path, """\
        cmd: python bench.py
        regex: 'p95: ([0-9.]+) ms'
        direction: lower
        unit: ms
        repeat: 5
        tolerance: 2%
        target: 160
        min_improvement: 1.5
        baseline: stage plan
        """) == []
    assert errors(tmp_path, "{cmd: python bench.py, json: latency.p95, direction: higher, baseline: 150}") == []


def test_every_bad_field_is_named_at_its_line(tmp_path):
    found = errors(tmp_path, """\
        cmd: python bench.py
        regex: 'p95: ([0-9.]+) ([a-z]+)'
        direction: faster
        repeat: 0
        tolerance: 2 %
        min_improvement: -1
        target: .nan
        baseline: stage tune
        colour: red
        """)
    fields = {field: (line, message) for line, field, message in found}
    base = "stages[1].gate.measure."
    assert fields[base + "regex"] == (15, "the regex must have exactly one group (the figure); it has 2")
    assert fields[base + "direction"][0] == 16 and "'faster' is not allowed" in fields[base + "direction"][1]
    assert fields[base + "repeat"][0] == 17 and "greater than or equal to 1" in fields[base + "repeat"][1]
    assert fields[base + "tolerance"] == (18, "'2 %' is neither a number nor a percentage such as '2%'")
    assert fields[base + "min_improvement"][0] == 19 and "finite number >= 0" in fields[base + "min_improvement"][1]
    assert fields[base + "target"] == (20, "the target must be a finite number")
    assert fields[base + "baseline"][0] == 21 and "'tune' is this stage" in fields[base + "baseline"][1]
    assert fields[base + "colour"][0] == 22 and "unknown key 'colour'" in fields[base + "colour"][1]


def test_the_figure_is_read_one_way(tmp_path):
    [(line, field, message)] = errors(tmp_path, "{cmd: python bench.py, direction: lower}")
    assert (line, field) == (14, "stages[1].gate.measure") and "exactly one of `regex:`" in message
    [(line, field, message)] = errors(tmp_path, "{cmd: x, regex: '(a)', json: a.b, direction: lower}")
    assert field == "stages[1].gate.measure" and "exactly one of" in message
    [(line, field, message)] = errors(tmp_path, "{cmd: x, json: 'a..b', direction: lower}")
    assert (line, field) == (14, "stages[1].gate.measure.json") and "not a dotted path" in message
    [(line, field, message)] = errors(tmp_path, "{cmd: x, regex: '([0-9]+', direction: lower}")
    assert field == "stages[1].gate.measure.regex" and "not a valid regular expression" in message


def test_a_baseline_stage_must_run_before(tmp_path):
    [(line, field, message)] = errors(tmp_path, "{cmd: x, regex: '(a)', direction: lower, baseline: stage plna}")
    assert field == "stages[1].gate.measure.baseline" and "'plna' is not a stage id (did you mean 'plan'?)" in message
    [(_, _, message)] = errors(tmp_path, "{cmd: x, regex: '(a)', direction: lower, baseline: latest}")
    assert "'latest' is neither a number nor 'stage <id>'" in message
