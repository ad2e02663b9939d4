"""The regression gate before completion (seed 001's PreCompletion hook): the project's own suite.

Before a run is done, the project's whole test suite runs once. The command is
the loop's ``regression:`` when it is a command, else detected from the
project (first match wins):

=====================================================  ==========================================
what the project has                                   command
=====================================================  ==========================================
a pytest configuration (``pytest.ini``,                ``python -m pytest -q -p no:cacheprovider``
``[tool.pytest.ini_options]`` in pyproject.toml,
``[tool:pytest]`` in setup.cfg, ``[pytest]`` in
tox.ini, a root ``conftest.py``) or a ``tests/``
directory holding Python files
a ``package.json`` whose ``scripts.test`` is set       ``npm test --silent``
(npm's placeholder does not count)
``Cargo.toml``                                         ``cargo test --quiet``
``go.mod``                                             ``go test ./...``
a ``Makefile`` with a ``test:`` target                 ``make test``
=====================================================  ==========================================

``regression: false`` turns it off. A pytest run that collects no test (exit 5)
counts as "no suite", not as a failure.
"""

from __future__ import annotations

import configparser
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from odin_magic.loop.schema import GateCommand
from odin_magic.runs.completion_report import RegressionResult

PYTEST = "python -m pytest -q -p no:cacheprovider"
NPM_PLACEHOLDER = "no test specified"
DEFAULT_TIMEOUT = 1800.0


@dataclass(frozen=True)
class Suite:
    command: GateCommand
    why: str  # what it was detected from, or "the loop's regression command"


def _has_pytest_config(project: Path) -> str | None:
    if (project / "pytest.ini").is_file():
        return "pytest.ini"
    if (project / "conftest.py").is_file():
        return "conftest.py"
    try:
        data = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
        if "pytest" in data.get("tool", {}):
            return "pyproject.toml [tool.pytest]"
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        pass
    for name, section in (("setup.cfg", "tool:pytest"), ("tox.ini", "pytest")):
        parser = configparser.ConfigParser()
        try:
            parser.read(project / name, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue
        if parser.has_section(section):
            return f"{name} [{section}]"
    tests = project / "tests"
    if tests.is_dir() and any(tests.rglob("*.py")):
        return "tests/ with Python files"
    return None


def _npm_test(project: Path) -> bool:
    try:
        data = json.loads((project / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    script = data.get("scripts", {}).get("test") if isinstance(data, dict) and isinstance(data.get("scripts"), dict) else None
    return isinstance(script, str) and bool(script.strip()) and NPM_PLACEHOLDER not in script


def _make_test(project: Path) -> bool:
    for name in ("Makefile", "makefile", "GNUmakefile"):
        try:
            text = (project / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if re.search(r"^test\s*:", text, re.M):
            return True
    return False


def detect(project: Path) -> Suite | None:
    """The project's test suite, detected from its files (see the module docstring)."""
    project = Path(project)
    why = _has_pytest_config(project)
    if why:
        return Suite(GateCommand(cmd=PYTEST, timeout=DEFAULT_TIMEOUT), f"pytest ({why})")
    if _npm_test(project):
        return Suite(GateCommand(cmd="npm test --silent", timeout=DEFAULT_TIMEOUT), "package.json scripts.test")
    if (project / "Cargo.toml").is_file():
        return Suite(GateCommand(cmd="cargo test --quiet", timeout=DEFAULT_TIMEOUT), "Cargo.toml")
    if (project / "go.mod").is_file():
        return Suite(GateCommand(cmd="go test ./...", timeout=DEFAULT_TIMEOUT), "go.mod")
    if _make_test(project):
        return Suite(GateCommand(cmd="make test", timeout=DEFAULT_TIMEOUT), "Makefile test target")
    return None


def suite_for(setting: bool | str | GateCommand, project: Path) -> Suite | None:
    """The suite a loop's ``regression:`` setting asks for: off, a command, or detected."""
    if setting is False:
        return None
    if isinstance(setting, str):
        return Suite(GateCommand(cmd=setting, timeout=DEFAULT_TIMEOUT), "the loop's regression command")
    if isinstance(setting, GateCommand):
        timeout = setting.timeout or DEFAULT_TIMEOUT
        return Suite(GateCommand(cmd=setting.cmd, timeout=timeout), "the loop's regression command")
    return detect(project)


def failing_tests(output: str) -> list[str]:
    """The failing tests a runner names in its output, each once (pytest, unittest, go, cargo, jest, node:
    :mod:`odin_magic.engine.test_output`)."""
    from odin_magic.engine import test_output  # here, so this module's imports stay the detection's

    return test_output.parse(output).names
