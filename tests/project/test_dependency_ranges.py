"""Every dependency has a declared range, and CI's oldest set (ci/constraints-oldest.txt) is its lower end.

pyproject.toml gives each runtime dependency and test extra a lower bound and an upper bound at a
major release; .ci/run runs the suite with the newest versions and, through the constraints file,
with the oldest ones. That second run only means something if the file pins every dependency to
exactly its declared lower bound.
"""
from __future__ import annotations

import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from support import REPO

ROOT = REPO
CONSTRAINTS = "ci/constraints-oldest.txt"


def declared(pyproject: str) -> list[Requirement]:
    project = tomllib.loads(pyproject)["project"]
    return [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["test"]]


def pins(constraints: str) -> dict[str, Requirement]:
    lines = (line.split("#", 1)[0].strip() for line in constraints.splitlines())
    return {canonicalize_name(req.name): req for req in map(Requirement, filter(None, lines))}


def problems(pyproject: str, constraints: str) -> list[str]:
    """What is wrong with the declared ranges and the oldest set; empty when they agree."""
    found = []
    pinned = pins(constraints)
    for req in declared(pyproject):
        lower = [Version(s.version) for s in req.specifier if s.operator == ">="]
        upper = [Version(s.version) for s in req.specifier if s.operator == "<"]
        if len(lower) != 1 or len(upper) != 1:
            found.append(f"{req}: wants one lower bound (>=) and one upper bound (<)")
            continue
        (low,), (high,) = lower, upper
        if any(part != 0 for part in high.release[1:]) or high.major <= low.major:
            found.append(f"{req}: the upper bound is not a major release above the lower bound")
        pin = pinned.get(canonicalize_name(req.name))
        exact = [Version(s.version) for s in pin.specifier if s.operator == "=="] if pin else []
        if pin is None:
            found.append(f"{req}: not pinned in {CONSTRAINTS}")
        elif len(exact) != 1 or len(pin.specifier) != 1:
            found.append(f"{req}: pinned as {pin}, not as {req.name}==VERSION")
        elif exact[0] != low:
            found.append(f"{req}: pinned to {exact[0]}, not to its lower bound {low}")
    return found


def test_every_dependency_has_a_range_whose_lower_end_ci_pins():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert len(declared(pyproject)) >= 16  # the runtime dependencies and the test extra were both read
    assert problems(pyproject, (ROOT / CONSTRAINTS).read_text()) == []


PYPROJECT = """
[project]
dependencies = [{dep!r}, "pyyaml>=6.0,<7"]
[project.optional-dependencies]
test = ["jsonschema>=4.18,<5"]
"""
PINS = "# the oldest set\npyyaml==6.0\njsonschema==4.18.0  # a comment\n"


@pytest.mark.parametrize("dep, pin, problem", [
    ("anthropic>=2.14,<3", "anthropic==2.14.0", None),
    ("nbclient>=0.10,<1", "nbclient==0.10", None),
    ("anthropic>=2.14", "anthropic==2.14.0", "one lower bound (>=) and one upper bound (<)"),
    ("anthropic<3", "anthropic==2.14.0", "one lower bound (>=) and one upper bound (<)"),
    ("anthropic", "anthropic==2.14.0", "one lower bound (>=) and one upper bound (<)"),
    ("anthropic>=2.14,<2.20", "anthropic==2.14.0", "not a major release above"),
    ("anthropic>=2.14,<3", "", "not pinned in ci/constraints-oldest.txt"),
    ("anthropic>=2.14,<3", "anthropic==2.15.0", "pinned to 2.15.0, not to its lower bound 2.14"),
    ("anthropic>=2.14,<3", "anthropic>=2.14", "not as anthropic==VERSION"),
])
def test_a_missing_bound_or_a_pin_off_the_lower_bound_is_reported(dep, pin, problem):
    found = problems(PYPROJECT.format(dep=dep), PINS + pin + "\n")
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and problem in found[0], found
