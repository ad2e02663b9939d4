"""The regression gate before completion (seed 001's PreCompletion hook): the project's own suite.

Before a run is done, the project's whole test suite runs once. Its command is chosen in this order
(the first that applies wins; :func:`candidates` lists every one that applies, ``odin doctor`` shows them):

1. the loop's ``regression:``, when it is a command (``regression: false`` turns the gate off);
2. the test command the project declares:

   ==============================================================  ==========================================
   what the project declares                                       command
   ==============================================================  ==========================================
   a ``Makefile`` (``makefile``, ``GNUmakefile``) with a ``test``  ``make test``
   target
   tox: ``tox.ini`` with a ``[tox]`` or ``[testenv]`` section,     ``tox``
   ``tox.toml``, ``[tool.tox]`` in pyproject.toml, ``[tox:tox]``
   in setup.cfg
   nox: ``noxfile.py``                                             ``nox``
   a pytest configuration: ``pytest.ini``,                         ``python -m pytest -q -p no:cacheprovider``
   ``[tool.pytest.ini_options]`` in pyproject.toml,
   ``[tool:pytest]`` in setup.cfg, ``[pytest]`` in tox.ini, a
   root ``conftest.py``
   a ``package.json`` whose ``scripts.test`` is set (npm's         ``npm test --silent``
   placeholder does not count)
   ``Cargo.toml``                                                  ``cargo test --quiet``
   ``go.mod``                                                      ``go test ./...``
   ==============================================================  ==========================================

3. only then a guess from the files: a ``tests/`` directory holding Python files → pytest.

A project's own command wins over a guess because it is what the project's authors run: a Makefile or
tox running ``python -m unittest`` also loads the doctests a ``load_tests`` hook adds, which pytest, seeing
only ``tests/*.py``, never runs. A declared command that cannot run here (``tox`` not installed) is an
environment failure naming the command and where it was declared (:func:`could_not_run`), never a reason
to fall back to another runner. A pytest run that collects no test (exit 5) counts as "no suite", not as a
failure.
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
    why: str  # where it comes from: "Makefile test target", "tox.ini", LOOP_WHY, ...
    declared: bool = True  # False: a guess from the project's files

    def to_dict(self) -> dict:
        return {"command": self.command.cmd, "why": self.why, "declared": self.declared}


LOOP_WHY = "the loop's regression command"
#: A make rule line naming ``test`` among its targets (``test:``, ``check test::``); not ``test := x``.
_MAKE_TEST = re.compile(r"^(?P<targets>[^:#=\s][^:#=]*?)\s*(?:::|:)(?![:=])", re.M)


def _suite(cmd: str, why: str, declared: bool = True) -> Suite:
    return Suite(GateCommand(cmd=cmd, timeout=DEFAULT_TIMEOUT), why, declared)


def could_not_run(suite: Suite, problem: tuple[str, str]) -> tuple[str, str]:
    """An environment problem of the regression command (what, fix), saying where the command was chosen
    from and how to choose another."""
    what, fix = problem
    if suite.why == LOOP_WHY:
        return f"the regression suite could not run: {what} ({suite.why})", fix
    return (f"the regression suite could not run: {what} (the project's test command, from {suite.why})",
            f"{fix.split(', or fix the command')[0]}; or set `regression:` in the loop to a command that runs here "
            "(`regression: false` turns the suite off)")


def _ini_sections(path: Path) -> list[str]:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return []
    return parser.sections()


def _pyproject_tool(project: Path) -> dict:
    try:
        data = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    tool = data.get("tool")
    return tool if isinstance(tool, dict) else {}


def _make_test(project: Path) -> str | None:
    for name in ("GNUmakefile", "makefile", "Makefile"):  # the order make itself looks in
        path = project / name
        try:
            text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        except OSError:
            continue
        if any("test" in m.group("targets").split() for m in _MAKE_TEST.finditer(text)):
            return f"{name} test target"
        if text:
            return None  # make reads only the first of these it finds
    return None


def _tox(project: Path) -> str | None:
    sections = _ini_sections(project / "tox.ini")
    if "tox" in sections or any(s == "testenv" or s.startswith("testenv:") for s in sections):
        return "tox.ini"
    if (project / "tox.toml").is_file():
        return "tox.toml"
    if "tox" in _pyproject_tool(project):
        return "pyproject.toml [tool.tox]"
    if "tox:tox" in _ini_sections(project / "setup.cfg"):
        return "setup.cfg [tox:tox]"
    return None


def _pytest_config(project: Path) -> str | None:
    if (project / "pytest.ini").is_file():
        return "pytest.ini"
    pytest_tool = _pyproject_tool(project).get("pytest")
    if isinstance(pytest_tool, dict):
        return "pyproject.toml [tool.pytest.ini_options]" if "ini_options" in pytest_tool else "pyproject.toml [tool.pytest]"
    for name, section in (("setup.cfg", "tool:pytest"), ("tox.ini", "pytest")):
        if section in _ini_sections(project / name):
            return f"{name} [{section}]"
    if (project / "conftest.py").is_file():
        return "a root conftest.py"
    return None


def _npm_test(project: Path) -> bool:
    try:
        data = json.loads((project / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    script = data.get("scripts", {}).get("test") if isinstance(data, dict) and isinstance(data.get("scripts"), dict) else None
    return isinstance(script, str) and bool(script.strip()) and NPM_PLACEHOLDER not in script


def _python_tests(project: Path) -> bool:
    tests = project / "tests"
    return tests.is_dir() and any(p.is_file() for p in tests.rglob("*.py"))


def candidates(project: Path) -> list[Suite]:
    """Every suite the project offers, in the order of choice: what it declares, then a guess."""
    project = Path(project)
    found = []
    make = _make_test(project)
    if make:
        found.append(_suite("make test", make))
    tox = _tox(project)
    if tox:
        found.append(_suite("tox", tox))
    if (project / "noxfile.py").is_file():
        found.append(_suite("nox", "noxfile.py"))
    pytest_config = _pytest_config(project)
    if pytest_config:
        found.append(_suite(PYTEST, pytest_config))
    if _npm_test(project):
        found.append(_suite("npm test --silent", "package.json scripts.test"))
    if (project / "Cargo.toml").is_file():
        found.append(_suite("cargo test --quiet", "Cargo.toml"))
    if (project / "go.mod").is_file():
        found.append(_suite("go test ./...", "go.mod"))
    if not found and _python_tests(project):
        found.append(_suite(PYTEST, "tests/ holds Python files (a guess: the project declares no test command)",
                            declared=False))
    return found


def detect(project: Path) -> Suite | None:
    """The project's test suite: the first of :func:`candidates` (see the module docstring)."""
    found = candidates(project)
    return found[0] if found else None


def suite_for(setting: bool | str | GateCommand, project: Path) -> Suite | None:
    """The suite a loop's ``regression:`` setting asks for: off, a command, or detected."""
    if setting is False:
        return None
    if isinstance(setting, str):
        return Suite(GateCommand(cmd=setting, timeout=DEFAULT_TIMEOUT), LOOP_WHY)
    if isinstance(setting, GateCommand):
        timeout = setting.timeout or DEFAULT_TIMEOUT
        return Suite(GateCommand(cmd=setting.cmd, timeout=timeout), LOOP_WHY)
    return detect(project)


def failing_tests(output: str) -> list[str]:
    """The failing tests a runner names in its output, each once (pytest, unittest, go, cargo, jest, node:
    :mod:`odin_magic.engine.test_output`)."""
    from odin_magic.engine import test_output  # here, so this module's imports stay the detection's

    return test_output.parse(output).names
