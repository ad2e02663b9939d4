"""Phase contracts (issue 22 item 2): the schema, located errors, the catalog checks."""

from __future__ import annotations

import pytest

from odin_magic.loop.contract import (
    Contract, ContractInvalid, contract_path, load_contract, render_contract, validate_contract_text,
)

GOOD = """\
risk: standard
impact: user-facing
scope: ["src/**", "tests/**"]
criteria:
  - id: AC1
    priority: P0
    text: Given 2 and 3, when add is called, then it returns 5.
    verify: python -m pytest -q
  - id: AC2
    priority: P1
    text: The module has a docstring.
    verify: judge
gate:
  kind: programmatic
  run: [python -m pytest -q, {cmd: "true", timeout: 5}]
  measure: {cmd: "echo 3", regex: "(\\\\d+)", direction: lower}
max_usd: 1.5
sensor: off
"""


def test_a_good_contract_and_its_defaults():
    report = validate_contract_text(GOOD, "p1.yaml")
    assert report.ok, report.format()
    c = report.contract
    assert c.loop_name == "spec-harness-tdd" and c.max_iterations == 3 and c.max_usd == 1.5
    assert c.sensor == "off" and not c.sensor_on and c.needs_person
    assert [g.cmd for g in c.gate.run] == ["python -m pytest -q", "true"] and c.gate.measure.direction == "lower"
    assert c.criteria[1].by_judge


def test_default_loop_per_risk_and_sensor_forced_on_for_risky():
    tiny = Contract.model_validate({"risk": "tiny-fix", "scope": ["a.py"]})
    assert tiny.loop_name == "tiny-fix" and tiny.gate.kind == "judge" and tiny.impact == "internal"
    risky = Contract.model_validate({"risk": "risky", "scope": ["src/**"], "sensor": "off"})
    assert risky.loop_name == "spec-harness-tdd" and risky.sensor_on


@pytest.mark.parametrize("text, where, words", [
    ("risk: huge\nscope: [a]\n", "p.yaml:1:7", "risk"),
    ("risk: tiny-fix\nscope: [a]\nimpact: everyone\n", "p.yaml:3:9", "impact"),
    ("risk: tiny-fix\nscope: [a]\nmax_iterations: '3'\n", "p.yaml:3:17", "max_iterations"),
    ("risk: tiny-fix\nscope: [a]\ngate: {kind: programmatic}\n", "p.yaml:3:7", "run:"),
    ("risk: tiny-fix\nscope: [a]\ncriteria:\n  - {id: AC1, priority: P2, text: t, verify: judge}\n",
     "p.yaml:4:", "priority"),
    ("risk: tiny-fix\nscope: [a]\ncriteria:\n  - {id: AC1, priority: P0, text: t, verify: judge}\n"
     "  - {id: AC1, priority: P0, text: u, verify: judge}\n", "p.yaml:5:", "already used"),
    ("risk: tiny-fix\nscope: [a]\nloop: ../x\n", "p.yaml:3:7", "loop name"),
    ("risk: tiny-fix\nscope: [a]\nbudget: 3\n", "p.yaml:3:", "budget"),
    ("- a\n", "p.yaml:1:1", "not a mapping"),
])
def test_bad_contracts_are_located(text, where, words):
    report = validate_contract_text(text, "p.yaml")
    assert not report.ok
    first = str(report.errors[0])
    assert first.startswith(where) and words in first, first


def test_a_loop_that_does_not_exist_is_refused_by_name(tmp_path):
    text = "risk: tiny-fix\nscope: ['**']\nloop: no-such-loop\n"
    report = validate_contract_text(text, "p.yaml", project_dir=tmp_path)
    assert not report.ok
    assert "p.yaml:3:7" in str(report.errors[0]) and "'no-such-loop'" in str(report.errors[0])


def test_a_scope_that_contradicts_a_stage_produces_is_refused_by_name(tmp_path):
    text = "risk: standard\nscope: ['lib/**']\n"
    report = validate_contract_text(text, "p.yaml", project_dir=tmp_path)
    assert not report.ok
    msg = str(report.errors[0])
    assert msg.startswith("p.yaml:2:") and "stage 'implement'" in msg and "'src/'" in msg
    ok = validate_contract_text("risk: standard\nscope: ['src/**']\n", "p.yaml", project_dir=tmp_path)
    assert ok.ok, ok.format()
    tiny = validate_contract_text("risk: tiny-fix\nscope: ['lib/x.py']\n", "p.yaml", project_dir=tmp_path)
    assert tiny.ok, tiny.format()


def test_load_contract_raises_one_located_line(tmp_path):
    path = contract_path(tmp_path, "p1.1")
    path.parent.mkdir(parents=True)
    path.write_text("risk: tiny-fix\nscope: [a]\nmax_iterations: 0\n")
    with pytest.raises(ContractInvalid) as info:
        load_contract(path, tmp_path)
    assert f"{path}:3:" in info.value.message and "max_iterations" in info.value.message
    assert info.value.hint


def test_render_round_trips():
    c = validate_contract_text(GOOD, "p.yaml").contract
    again = validate_contract_text(render_contract(c, header="written by the contract stage"), "p.yaml")
    assert again.ok, again.format()
    assert again.contract == c
