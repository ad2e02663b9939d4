"""The package's layers, checked over the AST of every module: imports run one way.

A module may import its own layer and the layers below it, never one above (function-level
imports and imports under ``TYPE_CHECKING`` count too); nothing below the front ends imports
a front end, and the two front ends do not import each other. Modules import each other in
no circle. Module paths are real: no module is named by a string (``importlib`` tricks hide
dependencies from every tool).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from support import REPO

PACKAGE = REPO / "odin_magic"

#: Bottom to top; a layer may import those before it (a tuple: peers that import neither each other).
LAYERS: list[tuple[str, ...]] = [
    ("core",), ("loop",), ("runs",), ("workers",), ("interview",), ("learning", "authoring"),
    ("render",), ("engine",), ("commands",), ("notebook", "cli"),
]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}
#: The package's own modules, above every layer: the extension's entry points and the old paths.
TOP = {"odin_magic", "odin_magic.__main__", "odin_magic._moved"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(name: str, path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every odin_magic import in the module, at any depth."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    known = modules()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "odin_magic":
                continue
            for alias in node.names:  # `from odin_magic.engine import gates` imports the module gates
                sub = f"{target}.{alias.name}"
                found.append((node.lineno, sub if sub in known else target))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "odin_magic"]
    return found


def layer(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in RANK else None


def test_every_module_is_in_a_layer():
    stray = [n for n in modules() if n not in TOP and layer(n) is None]
    assert stray == [], f"modules outside the layers (put each in its layer's folder): {stray}"


def test_imports_run_down_the_layers():
    upward = []
    for name, path in modules().items():
        mine = layer(name)
        if mine is None:
            continue
        for line, target in imports(name, path):
            theirs = layer(target)
            if target in TOP and target != "odin_magic":
                upward.append(f"{path.relative_to(REPO)}:{line} imports {target}")
            elif theirs is not None and theirs != mine and RANK[theirs] >= RANK[mine]:
                upward.append(f"{path.relative_to(REPO)}:{line} ({mine}) imports {target} ({theirs})")
    assert upward == [], "imports that run up (or sideways) the layers:\n" + "\n".join(upward)


def test_no_import_circles():
    graph = {name: {t for _, t in imports(name, path) if t in modules() and t != name}
             for name, path in modules().items()}
    # a package's __init__ is imported by every module inside it: only its own imports count
    circles = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert circles == [], "modules that import each other:\n" + "\n".join(circles)


def test_no_module_is_named_by_a_string():
    """Modules import each other by name; the only strings that name a module are the three package
    faces' (``hand_on(__name__, "odin_magic.engine.orchestrator")``: a package and its own module), and
    the map of the old module paths (``_moved``)."""
    pattern = re.compile(r"""(?:import_module|lazy|LazyModule|hand_on)\(\s*(?:__name__,\s*)?f?["'][^"']*""")
    found = []
    for name, path in modules().items():
        if name in TOP:
            continue
        for match in pattern.finditer(path.read_text(encoding="utf-8")):
            target = match.group(0).split('"')[-1].split("'")[-1]
            own = target.startswith(name + ".") or target.startswith(".")  # a package naming its own module
            if not (path.name == "__init__.py" and own):
                found.append(f"{path.relative_to(REPO)}: {match.group(0)}")
    assert found == []


@pytest.mark.parametrize("bad", ["from odin_magic.notebook.magics import OdinMagics\n",
                                 "def f():\n    from odin_magic.engine import gates\n"])
def test_the_check_sees_an_upward_import(tmp_path, bad):
    path = tmp_path / "x.py"
    path.write_text(bad)
    targets = [t for _, t in imports("odin_magic.runs.x", path)]
    assert targets and all(RANK[layer(t)] > RANK["runs"] for t in targets)
