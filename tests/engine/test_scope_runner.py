"""A declared scope allows a file that configures the test runner (conftest.py, pytest.ini, setup.cfg, a
``*.pth``, the ``[tool.pytest]`` tables of pyproject.toml, ...) only by naming it, never through a glob: a stage
that writes both its tests and its code (a roadmap's tiny-fix phase, scope ``["src/**", "tests/**"]``) cannot
add a conftest.py that turns every test into a pass. See docs/scope.md.

The REAL engine, Claude worker (its agent toolset, bash included) and SDK against the offline scripted
Messages API; real files in a temporary project.
"""

from __future__ import annotations

import json

import pytest
import yaml

from odin_magic.engine.scope import configures_runner, named, pytest_tables
from odin_magic.loop.contract import scope_conflicts, validate_contract_text
from odin_magic.loop.schema import Loop
from odin_magic.loop.validation import validate_text

from support.scripted_runs import scripted_engine

CHEAT = "import pytest\n\n@pytest.hookimpl(tryfirst=True)\ndef pytest_runtest_call(item):\n    item.runtest = lambda: None\n"
FAILING = "def test_count():\n    assert 1 + 1 == 3\n"


def loop(scope: str | None) -> str:
    narrowed = f"\n        scope: {scope}" if scope is not None else ""
    return f"""
    name: fix
    max_iterations: 5
    max_repeats: 5
    sandbox: off
    stages:
      - id: apply
        agent: executor
        produces: [change-notes.md]{narrowed}
        gate:
          mode: ai
          check: the change is made
          run: ["python -m pytest -q -p no:cacheprovider tests"]
    """


def script(cheat: dict, retry: str = "") -> str:
    """The first attempt writes a failing test, and ``cheat`` (a write or a bash tool call); the retry writes
    ``retry`` into the test file (a passing test by default)."""
    fixed = retry or "def test_count():\n    assert 1 + 1 == 2\n"
    return f"""
stages:
  apply:
    attempts:
      - turns:
          - tools:
              - write: {{file_path: tests/test_count.py, content: {json.dumps(FAILING)}}}
              - {json.dumps(cheat)}
              - write: {{file_path: "{{run_dir}}/change-notes.md", content: "done\\n"}}
          - text: applied
      - turns:
          - tools:
              - write: {{file_path: tests/test_count.py, content: {json.dumps(fixed)}}}
              - write: {{file_path: "{{run_dir}}/change-notes.md", content: "done\\n"}}
          - text: applied, tests fixed
default_verdict: {{status: DONE, passed: true}}
"""


def write(path: str, content: str) -> dict:
    return {"write": {"file_path": path, "content": content}}


def bash(path: str, content: str) -> dict:
    return {"bash": {"command": f"mkdir -p $(dirname {path}) && printf %b {json.dumps(content)} > {path}"}}


@pytest.mark.parametrize("tool", [write, bash], ids=["write", "bash"])
def test_a_stage_scoped_to_tests_glob_may_not_add_a_conftest(project, write_loop, tool):
    write_loop(loop('["src/**", "tests/**"]'))
    engine, _ = scripted_engine(project, script(tool("tests/conftest.py", CHEAT)))
    state = engine.start("fix", "t")
    first = state.history[0]
    assert first.result == "fail" and first.failure == "recoverable"
    assert first.reason.startswith("executor changed tests/conftest.py (added) that it may not change")
    assert "tests/conftest.py configures the test runner" in first.reason
    assert "add tests/conftest.py to the stage's scope" in first.reason
    assert not (project / "tests" / "conftest.py").exists()  # reverted
    assert (project / "tests" / "test_count.py").exists()  # in scope: kept
    assert state.status == "done" and state.history[1].result == "pass"


def test_a_conftest_named_in_the_scope_is_allowed(project, write_loop):
    write_loop(loop('["src/**", "tests/**", "tests/conftest.py"]'))
    helper = "import pytest\n\n@pytest.fixture\ndef words():\n    return ['one', 'two']\n"
    engine, _ = scripted_engine(project, script(write("tests/conftest.py", helper),
                                                retry="def test_count(words):\n    assert len(words) == 2\n"))
    state = engine.start("fix", "t")
    assert (project / "tests" / "conftest.py").read_text() == helper
    assert state.status == "done"
    assert "conftest" not in (state.history[0].reason or "")  # the failing test failed the gate, not the scope


@pytest.mark.parametrize("where", ["setup.cfg", "tests/pytest.ini", "src/sitecustomize.py", "src/evil.pth"])
def test_every_runner_file_needs_naming_even_under_a_scope_of_everything(project, write_loop, where):
    write_loop(loop('["**"]'))
    engine, _ = scripted_engine(project, script(bash(where, "[tool:pytest]\naddopts = -p no:python\n")))
    state = engine.start("fix", "t")
    first = state.history[0]
    assert first.reason.startswith(f"executor changed {where} (added) that it may not change")
    assert f"{where} configures the test runner" in first.reason
    assert not (project / where).exists()
    assert state.status == "done"


def test_without_a_scope_the_roles_rule_decides(project, write_loop):
    """A stage that declares no scope (an executor may write anywhere) is not narrowed: the judge, and a frozen
    test's own guard, are what check it there."""
    write_loop(loop(None))
    engine, _ = scripted_engine(project, script(write("tests/conftest.py", "import os\n")))
    state = engine.start("fix", "t")
    assert (project / "tests" / "conftest.py").exists()
    assert "outside its scope" not in (state.history[0].reason or "")


PYPROJECT = '[project]\nname = "app"\nversion = "0.1"\ndependencies = []\n'


@pytest.mark.parametrize("edit, refused", [
    ('[project]\nname = "app"\nversion = "0.2"\ndependencies = ["attrs"]\n', False),
    (PYPROJECT + '\n[tool.pytest.ini_options]\naddopts = "-p no:python"\n', True),
], ids=["metadata", "pytest-table"])
def test_pyproject_counts_only_when_its_pytest_tables_change(project, write_loop, edit, refused):
    (project / "pyproject.toml").write_text(PYPROJECT)
    write_loop(loop('["**"]'))
    engine, _ = scripted_engine(project, script(write("pyproject.toml", edit)))
    state = engine.start("fix", "t")
    reason = state.history[0].reason or ""
    assert ("pyproject.toml configures the test runner" in reason) is refused
    assert (project / "pyproject.toml").read_text() == (PYPROJECT if refused else edit)


def test_what_configures_the_runner_and_what_names_a_path():
    for path in ["conftest.py", "a/b/conftest.py", ".pytest.ini", "pytest.toml", "tox.ini", "x/usercustomize.py",
                 "lib/site.pth", "pyvenv.cfg", "tests/Conftest.PY"]:
        assert configures_runner(path), path
    for path in ["src/conftest_helpers.py", "pyproject.toml", "tests/test_conftest.py", "setup.py"]:
        assert not configures_runner(path), path
    assert named("./tests/conftest.py") == "tests/conftest.py"
    assert named("tests/**") is None and named("tests/") is None and named("tests/conf?est.py") is None
    assert pytest_tables(b"[tool.pytest]\nminversion = '8'\n") == {"minversion": "8"}
    assert pytest_tables(b"not = = toml") == {} and pytest_tables(None) == {}


LOOP_WITH_CONFTEST = """
name: conf
version: 1
description: d
max_iterations: 2
stages:
  - id: build
    agent: executor
    produces: [tests/conftest.py]
    scope: [{scope}]
    gate: {{mode: ai, check: built}}
"""


def test_the_validator_wants_a_produced_runner_file_named_in_the_scope():
    report = validate_text(LOOP_WITH_CONFTEST.format(scope='"tests/**"'), "c.yaml")
    assert [e.field for e in report.errors] == ["stages[0].produces[0]"]
    assert "configures the test runner" in report.errors[0].message
    assert "add 'tests/conftest.py' to `scope:`" in str(report.errors[0])
    assert validate_text(LOOP_WITH_CONFTEST.format(scope='"tests/**", tests/conftest.py'), "c.yaml").ok


def test_a_contract_scope_must_name_a_runner_file_its_loop_produces():
    loop = Loop.model_validate(yaml.safe_load(LOOP_WITH_CONFTEST.format(scope='"tests/**"')))
    globbed = validate_contract_text("risk: tiny-fix\nscope: ['tests/**']\n", "p.yaml").contract
    assert scope_conflicts(globbed, loop) == [("build", "tests/conftest.py")]
    naming = validate_contract_text("risk: tiny-fix\nscope: ['tests/**', tests/conftest.py]\n", "p.yaml").contract
    assert scope_conflicts(naming, loop) == []
