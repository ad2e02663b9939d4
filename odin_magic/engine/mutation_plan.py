"""Where mutants go and how cheaply each is judged (issue 21): the change first, the runner's fail-fast.

**Where.** A mutant proves something about the change only when it is in the change. Given the lines the
run changed in each file (the hunks of its checkpoint diff: :meth:`odin_magic.runs.checkpoints.Checkpoints.
changed_lines`), mutants are chosen in three tiers, each filling what the budget leaves:

1. ``line``: a mutant whose replaced text is on a changed line;
2. ``function``: elsewhere in the function (or method) that encloses a changed line;
3. ``rest of file``: elsewhere in a changed file — tried only when the budget allows, shown, and not
   counted in the kill ratio (it says nothing about the change).

A file without line ranges (no checkpoints: the stage's artifacts) is wholly the change (tier ``file``,
counted like ``line``). A mutation site in a file the run did not change is never a candidate.

**Cost.** Each command is run on a mutant with the runner's fail-fast option (``pytest -x``,
``python -m unittest -f``): one failing test kills a mutant. Before the whole command, a focused run of
the tests named after the changed functions (``-k``) is tried: where it fails, the mutant is killed
without the whole suite.
"""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass
from typing import Iterable

TIERS = ("line", "file", "function", "rest of file")  # the order they fill the budget
IN_CHANGE = ("line", "file", "function")  # the tiers counted in the kill ratio
ON_CHANGE = ("line", "file")  # without one of these, the change offers no mutation site

Ranges = list[tuple[int, int]]

_PYTHON = r"\S*python[\d.]*['\"]?\s+-m\s+"
_PYTEST = re.compile(r"(?:^|(?<=[\s;&|(]))((?:\S*/)?py\.?test|" + _PYTHON + r"pytest)(?=\s|$)")
_UNITTEST = re.compile(r"(?:^|(?<=[\s;&|(]))(" + _PYTHON + r"unittest)(\s+discover)?(?=\s|$)")


def _on(ranges: Ranges, first: int, last: int) -> bool:
    return any(a <= last and first <= b for a, b in ranges)


def functions_around(source: bytes, ranges: Ranges) -> Ranges:
    """The line spans (decorators included) of the innermost functions that enclose a changed line."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    spans: Ranges = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            spans.append((first, node.end_lineno or node.lineno))
    hit: Ranges = []
    for a, b in ranges:
        for line in range(a, b + 1):
            around = [s for s in spans if s[0] <= line <= s[1]]
            if around:
                inner = min(around, key=lambda s: s[1] - s[0])
                if inner not in hit:
                    hit.append(inner)
    return hit


def enclosing_names(source: bytes, ranges: Ranges) -> list[str]:
    """The names of the functions enclosing the changed lines (outermost too: a nested helper's parent)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            if _on(ranges, node.lineno, node.end_lineno or node.lineno) and node.name not in names:
                names.append(node.name)
    return names


@dataclass(frozen=True)
class Placed:
    """A mutant and where it lies relative to the change (one of :data:`TIERS`)."""

    mutant: object  # mutation.Mutant
    where: str


def place(mutants: Iterable, sources: dict[str, bytes], changed: dict[str, Ranges | None]) -> list[Placed]:
    """Each mutant's tier; a mutant of a file that is not in ``changed`` is dropped."""
    funcs = {p: functions_around(sources[p], r) for p, r in changed.items() if r and p in sources}
    out = []
    for m in mutants:
        if m.path not in changed:
            continue
        ranges = changed[m.path]
        if ranges is None:
            out.append(Placed(m, "file"))
            continue
        src = sources[m.path]
        first, last = m.line, m.line + src[m.start:m.end].count(b"\n")
        where = ("line" if _on(ranges, first, last) else "function" if _on(funcs.get(m.path, []), first, last)
                 else "rest of file")
        out.append(Placed(m, where))
    return out


def choose(placed: list[Placed], limit: int, select) -> list[Placed]:
    """At most ``limit`` mutants, tier by tier (``select`` spreads a tier's over its operators)."""
    chosen: list[Placed] = []
    for tier in TIERS:
        pool = [p for p in placed if p.where == tier]
        left = limit - len(chosen)
        if left <= 0 or not pool:
            continue
        by_mutant = {id(p.mutant): p for p in pool}
        chosen += [by_mutant[id(m)] for m in select([p.mutant for p in pool], left)]
    return chosen


def fail_fast(cmd: str) -> str:
    """``cmd`` with the runner's fail-fast option: ``-x`` after ``pytest``, ``-f`` after ``unittest`` (after
    ``discover``), unless it is there already; other commands unchanged."""
    words = cmd.split()
    if _PYTEST.search(cmd) and not {"-x", "--exitfirst"} & set(words) and not any(w.startswith("--maxfail") for w in words):
        return _PYTEST.sub(lambda m: m.group(1) + " -x", cmd)
    if _UNITTEST.search(cmd) and not {"-f", "--failfast"} & set(words):
        return _UNITTEST.sub(lambda m: m.group(1) + (m.group(2) or "") + " -f", cmd)
    return cmd


def focused(cmd: str, names: list[str]) -> str | None:
    """``cmd`` (fail-fast) narrowed to the tests named after ``names`` with ``-k``, or None when it is not a
    plain pytest / unittest command, or already selects with ``-k``."""
    if not names or "-k" in cmd.split() or cmd.count("pytest") + cmd.count("unittest") != 1:
        return None
    camel = ["".join(w[:1].upper() + w[1:] for w in n.split("_") if w) for n in names]
    if _PYTEST.search(cmd):
        expr = " or ".join(dict.fromkeys(n for n in [*names, *camel] if n.isidentifier()))
        return _PYTEST.sub(lambda m: f"{m.group(1)} -x -k {shlex.quote(expr)}", cmd)
    if _UNITTEST.search(cmd):
        ks = " ".join(f"-k {shlex.quote(f'*{p}*')}" for p in dict.fromkeys([*names, *camel]))
        return _UNITTEST.sub(lambda m: m.group(1) + (m.group(2) or "") + f" -f {ks}", cmd)
    return None


#: pytest options followed by their value as a word of its own (``-o pythonpath=src``)
_VALUED = {"-k", "-m", "-p", "-o", "-c", "-W", "-r", "-n", "--rootdir", "--confcutdir", "--basetemp", "--import-mode",
           "--deselect", "--ignore", "--ignore-glob", "--tb", "--maxfail", "--durations", "--override-ini",
           "--config-file", "--pythonwarnings", "--capture", "--cov", "--cov-report", "--log-level", "--junitxml",
           "--numprocesses", "--dist", "--timeout", "--color"}


def _shell_end(text: str) -> int:
    """Where the first shell operator (``&&``, ``;``, ``|``, ``)``...) outside quotes starts in ``text``."""
    quote = None
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in ";&|)\n":
            return i
    return len(text)


def _options(words: list[str]) -> list[str]:
    """``words`` (a pytest command's arguments) without the paths: the options and their values."""
    out, value_next = [], False
    for word in words:
        if value_next or word.startswith("-"):
            out.append(word)
            value_next = not value_next and word in _VALUED
    return out


def killers_first(cmd: str, node_ids: list[str]) -> str | None:
    """A pytest ``cmd`` narrowed to the tests that killed earlier mutants (``node_ids``, as pytest named them),
    fail-fast: the test that caught one mutant usually catches its neighbours, and runs alone in a moment. The
    command keeps its options (an import path, an import mode) and what follows it in the shell; its paths give
    way to the node ids. None when ``cmd`` is not a pytest command or there are none."""
    match = _PYTEST.search(cmd)
    if not node_ids or match is None or cmd.count("pytest") != 1:
        return None
    rest = cmd[match.end():]
    end = _shell_end(rest)
    try:
        options = _options(shlex.split(rest[:end]))
    except ValueError:
        return None
    words = [*options, "-x", "-q", "-p", "no:cacheprovider", *node_ids]
    tail = rest[end:]
    return cmd[:match.end()] + " " + " ".join(shlex.quote(w) for w in words) + (" " + tail if tail else "")


def with_cmd(command, cmd: str):
    """The gate command ``command`` running ``cmd`` instead."""
    return command.model_copy(update={"cmd": cmd})
