"""The acceptance manifest (issue 13 item 1) and the regression suite's detection (item 3)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from odin_magic.loop.manifest import (
    MANIFEST_NAME, ManifestInvalid, load_manifest, render_manifest, validate_manifest_text
)
from odin_magic.engine.regression import detect, failing_tests, suite_for

GOOD = """\
criteria:
  - id: AC1
    priority: P0
    component: Arithmetic
    text: Given 2 and 3, when add is called, then it returns 5.
    verify: python -m pytest -q -k add
  - id: AC2
    priority: P1
    text: The module has a docstring.
    verify: judge
"""


def errors(text: str, interview_ids=None) -> list[str]:
    return [f"{d.line}:{d.field}: {d.message}" for d in
            validate_manifest_text(textwrap.dedent(text), "acceptance.yaml", interview_ids).errors]


def test_a_good_manifest_validates():
    report = validate_manifest_text(GOOD, "acceptance.yaml")
    assert report.ok, report.format()
    assert [c.id for c in report.manifest.of_priority("P0")] == ["AC1"]
    assert report.manifest.criteria[1].by_judge


def test_duplicate_id_unknown_priority_and_empty_verify_are_located():
    found = errors("""\
        criteria:
          - id: AC1
            priority: P0
            text: one
            verify: "true"
          - id: AC1
            priority: P2
            text: two
            verify: "   "
          - id: AC3
            priority: P0
            text: three
            verify: ""
    """)
    assert "6:criteria[1].id: criterion id 'AC1' is already used by criteria[0]" in found
    assert any(f.startswith("7:criteria[1].priority:") and "P0" in f for f in found), found
    assert "9:criteria[1].verify: an empty verify command (only whitespace)" in found
    assert "13:criteria[2].verify: must not be empty" in found


def test_strict_types_and_unknown_keys():
    found = errors("""\
        criteria:
          - id: AC1
            priority: P0
            text: one
            verify: "true"
            timeout: "5"
            verfy: x
    """)
    assert any(f.startswith("6:criteria[0].timeout:") for f in found), found
    assert any(f.startswith("7:criteria[0].verfy: unknown key 'verfy'") for f in found), found


def test_every_interview_criterion_must_appear():
    found = errors(GOOD, interview_ids=["AC1", "AC2", "AC3"])
    assert found == ["1:criteria: criterion AC3 of the interview (spec.md) is missing"]


def test_not_yaml_and_not_a_mapping_are_one_clear_error():
    assert len(errors("criteria: [")) == 1 and "invalid YAML" in errors("criteria: [")[0]
    assert errors("- a\n- b\n") == ["1:: the manifest is a list, not a mapping"]


def test_load_manifest_none_when_absent_and_located_error_when_invalid(tmp_path: Path):
    assert load_manifest(tmp_path) is None
    (tmp_path / MANIFEST_NAME).write_text("criteria:\n  - id: AC1\n    priority: P9\n    text: t\n    verify: v\n")
    with pytest.raises(ManifestInvalid) as info:
        load_manifest(tmp_path)
    assert "acceptance.yaml:3:" in info.value.message and "priority" in info.value.message


def test_render_keeps_a_planners_verify_commands():
    existing = validate_manifest_text(GOOD, "x").manifest
    text = render_manifest([("AC1", "Arithmetic", "adds"), ("AC2", "Docs", 'has a "docstring"'),
                            ("AC3", "Errors", "raises")], existing)
    report = validate_manifest_text(text, "x", ["AC1", "AC2", "AC3"])
    assert report.ok, report.format()
    by_id = {c.id: c for c in report.manifest.criteria}
    assert by_id["AC1"].verify == "python -m pytest -q -k add" and by_id["AC2"].priority == "P1"
    assert by_id["AC3"].verify == "judge" and by_id["AC3"].priority == "P0"
    assert by_id["AC2"].text == 'has a "docstring"'


def test_render_keeps_a_phase_contracts_criteria_and_drops_a_stale_interview_one():
    """A roadmap phase's contract wrote acceptance.yaml before the run's interview: the interview's own
    criteria (AC<n>) are rewritten from its spec, a contract's (any other id) stay as they are."""
    existing = validate_manifest_text(
        "criteria:\n"
        "  - {id: p1.AC1, priority: P0, text: the CLI prints the count, verify: python -m pytest -q -k count}\n"
        "  - {id: LAT-1, priority: P1, text: p95 under 160 ms, verify: judge, timeout: 30}\n"
        "  - {id: AC7, priority: P0, text: a criterion an earlier interview round wrote, verify: judge}\n", "x").manifest
    text = render_manifest([("AC1", "Counting", "counts words")], existing)
    report = validate_manifest_text(text, "x", ["AC1"])
    assert report.ok, report.format()
    assert [c.id for c in report.manifest.criteria] == ["AC1", "p1.AC1", "LAT-1"]
    by_id = {c.id: c for c in report.manifest.criteria}
    assert by_id["p1.AC1"].verify == "python -m pytest -q -k count" and by_id["p1.AC1"].component is None
    assert by_id["LAT-1"].priority == "P1" and by_id["LAT-1"].timeout == 30


@pytest.mark.parametrize("files, expected", [
    ({"pytest.ini": "[pytest]\n"}, "python -m pytest -q -p no:cacheprovider"),
    ({"pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-q'\n"}, "python -m pytest -q -p no:cacheprovider"),
    ({"setup.cfg": "[tool:pytest]\n"}, "python -m pytest -q -p no:cacheprovider"),
    ({"tests/test_a.py": "def test(): pass\n"}, "python -m pytest -q -p no:cacheprovider"),
    ({"package.json": json.dumps({"scripts": {"test": "jest"}})}, "npm test --silent"),
    ({"package.json": json.dumps({"scripts": {"test": 'echo "Error: no test specified" && exit 1'}})}, None),
    ({"Cargo.toml": "[package]\n"}, "cargo test --quiet"),
    ({"go.mod": "module x\n"}, "go test ./..."),
    ({"Makefile": "all:\n\ttrue\ntest:\n\ttrue\n"}, "make test"),
    ({"Makefile": "all:\n\ttrue\n"}, None),
    ({"README.md": "hi"}, None),
])
def test_the_suite_is_detected_from_the_project(tmp_path: Path, files: dict, expected: str | None):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    suite = detect(tmp_path)
    assert (suite.command.cmd if suite else None) == expected


def test_the_loop_names_or_turns_off_the_suite(tmp_path: Path):
    (tmp_path / "go.mod").write_text("module x\n")
    assert suite_for(False, tmp_path) is None
    assert suite_for("make check", tmp_path).command.cmd == "make check"
    assert suite_for(True, tmp_path).command.cmd == "go test ./..."


def test_failing_tests_are_named_from_pytest_output():
    out = "F.\nFAILED tests/test_a.py::test_one - assert 1 == 2\nERROR tests/test_b.py\nFAILED tests/test_a.py::test_one\n"
    assert failing_tests(out) == ["tests/test_a.py::test_one", "tests/test_b.py"]


def test_mutate_without_a_run_command_is_a_located_error():
    from odin_magic.loop.validation import validate_text

    report = validate_text(textwrap.dedent("""\
        name: m
        version: 1
        description: d
        max_iterations: 1
        stages:
          - id: test
            gate:
              mode: ai
              check: the tests pass
              mutate: true
    """), "m.yaml", expected_name="m")
    assert [(d.line, d.field) for d in report.errors] == [(10, "stages[0].gate.mutate")]
    assert "no `run` command" in report.errors[0].message


def test_a_timeout_above_a_day_is_a_located_error_not_an_overflow():
    """Issue 20 item 5: `.inf` or 1e12 seconds in acceptance.yaml is a validation error on its line."""
    found = errors("""\
        criteria:
          - id: AC1
            priority: P0
            text: It adds.
            verify: python -m pytest -q
            timeout: .inf
        """)
    assert len(found) == 1 and found[0].startswith("6:criteria[0].timeout:") and "86400" in found[0]
