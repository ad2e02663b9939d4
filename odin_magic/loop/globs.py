"""Globs over project-relative paths (``/`` separators): ``*`` and ``?`` match within one path
segment, ``**`` any number of segments, and a pattern ending in ``/`` matches everything
under that directory. Stage ``scope:`` and loop ``risk:`` lists are such globs; the engine
enforces them (:mod:`odin_magic.engine.scope`), the validator reasons about them. A file that configures
the test runner (:func:`configures_runner`) is in a scope only when an entry names it without a wildcard
(:func:`named`).
"""

from __future__ import annotations

import functools
import re
from pathlib import PurePosixPath

from odin_magic.loop.roles import policy_for
from odin_magic.loop.schema import Loop, Stage


@functools.lru_cache(maxsize=512)
def glob_regex(pattern: str) -> re.Pattern[str]:
    pattern = pattern.strip()
    if pattern.startswith("./"):
        pattern = pattern[2:]
    if pattern.endswith("/"):
        pattern += "**"
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def matches(patterns: list[str] | tuple[str, ...], path: str) -> bool:
    return any(glob_regex(p).match(path) for p in patterns)


#: files that configure how the tests run, by name at any depth: pytest's conftest and configuration files
#: (it looks for them in the folder of its arguments and every folder above), and what Python's ``site``
#: reads at start (``*.pth`` too); a ``pyproject.toml`` counts when its ``[tool.pytest]`` tables change
RUNNER_FILES = frozenset({"conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini",
                          "setup.cfg", "sitecustomize.py", "usercustomize.py", "pyvenv.cfg"})
PYPROJECT = "pyproject.toml"


def configures_runner(path: str) -> bool:
    """Whether ``path``, whatever it holds, configures the test runner (a ``pyproject.toml`` depends on what
    changed in it: :func:`odin_magic.engine.scope.runner_changes`). Any case: on a case-insensitive file system
    pytest finds ``Conftest.py`` as ``conftest.py``."""
    name = PurePosixPath(path).name.lower()
    return name in RUNNER_FILES or name.endswith(".pth")


def named(pattern: str) -> str | None:
    """The one path a scope entry names without a wildcard (``tests/conftest.py``); None for a glob."""
    pattern = pattern.strip()
    pattern = pattern[2:] if pattern.startswith("./") else pattern
    return None if any(ch in pattern for ch in "*?") or pattern.endswith("/") else pattern


def literal_prefix(pattern: str) -> str:
    """The part of a glob before its first wildcard."""
    m = re.search(r"[*?\[]", pattern)
    return pattern[: m.start()] if m else pattern


def may_overlap(a: str, b: str) -> bool:
    """Whether globs ``a`` and ``b`` could match a common path (a cautious over-approximation)."""
    pa, pb = literal_prefix(a), literal_prefix(b)
    return pa.startswith(pb) or pb.startswith(pa)


def could_touch_risk(stage: Stage, loop: Loop) -> list[str]:
    """The loop's risk globs a stage's changes could match (for ``odin validate --schedulable``)."""
    policy = policy_for(stage.resolved_agent)
    if not loop.risk or policy.writes == "none":
        return []
    if stage.scope is not None:
        writable = list(stage.scope)
    elif policy.writes == "anywhere":
        return list(loop.risk)
    else:
        writable = [p for p in stage.produces if "/" in p.rstrip("/") or p.endswith("/")]
        writable = [p for p in writable if not p.startswith("harness")]
    return [r for r in loop.risk if any(may_overlap(w, r) for w in writable)]
