"""The failing tests a test runner names in its output, and how a gate's reason names them.

:func:`parse` reads the output (a command's tails) of the runners odin detects or a loop runs:

==================  ==============================================================================
runner              what names a failing test
==================  ==============================================================================
pytest              ``FAILED node::id - message`` / ``ERROR node::id - message`` (the short summary,
                    also with ``-rA``, ``-x``), or ``node::id FAILED`` progress lines (``-v``)
unittest            ``FAIL: test_x (pkg.mod.Class.test_x)`` / ``ERROR: ...`` blocks (3.11's and the older
                    ``(pkg.mod.Class)`` form; a doctest's ``Doctest: pkg.mod.func``; a module that could not
                    be imported); the count from ``FAILED (failures=2, errors=1)``
go test             ``--- FAIL: TestX (0.00s)`` (subtests too)
cargo test          ``test x ... FAILED``, or the ``failures:`` list of ``--quiet``; the count from
                    ``test result: FAILED. 1 passed; 2 failed``
jest                ``● suite › test`` blocks, else ``✕ test`` lines; the count from ``Tests: 2 failed``
node --test, TAP    ``not ok 2 - name`` (a suite failing only by its subtests is not named again),
                    the spec reporter's ``✖ name``; the count from ``# fail 2``
==================  ==============================================================================

:func:`describe` names them, up to a cap, then "and N more" (also when the runner counts more failures
than its output's tail still shows).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: How many failing tests a gate's reason names; the rest are counted.
NAMED = 10
#: One named test (with its message) is clipped to this many characters.
ENTRY_CHARS = 200


@dataclass(frozen=True)
class FailingTest:
    name: str
    message: str = ""

    def describe(self) -> str:
        text = f"{self.name} - {self.message}" if self.message else self.name
        return text if len(text) <= ENTRY_CHARS else text[: ENTRY_CHARS - 1] + "…"


@dataclass(frozen=True)
class TestFailures:
    """What a runner's output says failed: the tests it names and, where it says, how many failed."""

    tests: tuple[FailingTest, ...] = ()
    total: int | None = None  # the runner's own count (its summary line), when it prints one

    __test__ = False  # not a pytest test class

    @property
    def count(self) -> int:
        return max(len(self.tests), self.total or 0)

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tests]


def _clean(message: str) -> str:
    return " ".join(message.split())


# -- pytest ---------------------------------------------------------------------------------------

_PYTEST_SUMMARY = re.compile(r"^(?:FAILED|ERROR) ([^\s(].*?)(?: - (.*))?\s*$", re.M)
_PYTEST_PROGRESS = re.compile(r"^(\S+::.*?) (?:FAILED|ERROR)(?:\s+\[\s*\d+%\])?\s*$", re.M)
_PYTEST_COUNTS = re.compile(r"^=*\s*(?:\d+ \w+, )*\d+ \w+.* in [\d.]+s", re.M)
_PYTEST_FAILED = re.compile(r"(\d+) (?:failed|errors?)\b")


def _pytest(text: str) -> tuple[list[FailingTest], int | None]:
    found = [FailingTest(m.group(1).strip(), _clean(m.group(2) or "")) for m in _PYTEST_SUMMARY.finditer(text)]
    found += [FailingTest(m.group(1).strip()) for m in _PYTEST_PROGRESS.finditer(text)]
    totals = [sum(int(n) for n in _PYTEST_FAILED.findall(m.group(0))) for m in _PYTEST_COUNTS.finditer(text)]
    return found, (totals[-1] if totals and totals[-1] else None)


# -- unittest (and the doctests it runs) ---------------------------------------------------------------

_UNITTEST_HEAD = re.compile(r"^(?:FAIL|ERROR|UNEXPECTED SUCCESS): (\S+) \(([^)]*)\)\s*$"
                            r"(?:\nDoctest: (\S+)\s*$)?", re.M)
_UNITTEST_END = re.compile(r"^(?:={20,}|-{20,}\nRan \d+ tests?)", re.M)
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure|Warning)\b.*$", re.M)
_UNITTEST_COUNTS = re.compile(r"^FAILED \(([^)]*)\)\s*$", re.M)
_FAILED_IMPORT = ("unittest.loader._FailedTest.", "unittest.loader.ModuleImportFailure.")


def _unittest_name(method: str, where: str, doctest: str | None) -> str:
    if doctest:
        return doctest
    for prefix in _FAILED_IMPORT:  # a module that could not be imported: name the module
        if where.startswith(prefix):
            return where[len(prefix):]
    return where if where.endswith("." + method) else f"{where}.{method}"


def _unittest(text: str) -> tuple[list[FailingTest], int | None]:
    found = []
    for m in _UNITTEST_HEAD.finditer(text):
        end = _UNITTEST_END.search(text, m.end())
        block = text[m.end(): end.start() if end else len(text)]
        exceptions = _EXCEPTION.findall(block)
        found.append(FailingTest(_unittest_name(m.group(1), m.group(2), m.group(3)),
                                 _clean(exceptions[-1]) if exceptions else ""))
    total = None
    for m in _UNITTEST_COUNTS.finditer(text):
        counts = {k.strip(): v for k, v in re.findall(r"([a-z ]+)=(\d+)", m.group(1))}
        total = sum(int(counts.get(k, 0)) for k in ("failures", "errors", "unexpected successes"))
    return found, total or None


# -- go test ----------------------------------------------------------------------------------------

_GO_FAIL = re.compile(r"^\s*--- FAIL: (\S+) \([\d.]+s\)\s*$((?:\n {4,}(?!--- )\S.*)?)", re.M)


def _go(text: str) -> tuple[list[FailingTest], int | None]:
    return [FailingTest(m.group(1), _clean(m.group(2))) for m in _GO_FAIL.finditer(text)], None


# -- cargo test ----------------------------------------------------------------------------------------

_CARGO_LINE = re.compile(r"^test (\S+) \.\.\. FAILED\s*$", re.M)
_CARGO_LIST = re.compile(r"^failures:\n((?: {4}\S+\n?)+)", re.M)
_CARGO_PANIC = re.compile(r"^---- (\S+) stdout ----\n(?:.*\n)*?thread '[^']*' panicked at (.*)$(?:\n(.*))?", re.M)
_CARGO_COUNTS = re.compile(r"^test result: FAILED\. \d+ passed; (\d+) failed", re.M)


def _cargo(text: str) -> tuple[list[FailingTest], int | None]:
    names = _CARGO_LINE.findall(text) + [n.strip() for m in _CARGO_LIST.finditer(text) for n in m.group(1).split()]
    messages = {}
    for m in _CARGO_PANIC.finditer(text):
        at, after = m.group(2), m.group(3) or ""
        messages[m.group(1)] = _clean(after if at.rstrip().endswith(":") and after.strip() else at)
    total = sum(int(n) for n in _CARGO_COUNTS.findall(text))
    return [FailingTest(n, messages.get(n, "")) for n in names], total or None


# -- jest, node --test, TAP ---------------------------------------------------------------------------

_JEST_BLOCK = re.compile(r"^\s*● (.+?)\s*$(?:\n\s*$)*(?:\n\s*(\S.*))?", re.M)
_CROSS = re.compile(r"^(\s*)[✕✖] (.+?)(?: \([\d.]+ ?m?s\))?\s*$(?:\n\1 +(\S.*))?", re.M)
_SUITE = re.compile(r"^\s*▶ (.+?)\s*$", re.M)  # node's spec reporter: a suite (its ✖ only repeats its tests')
_JEST_COUNTS = re.compile(r"^(?:Tests:\s+|ℹ fail )(\d+)(?: failed)?\s*(?:,|$)", re.M)
_TAP_NOT_OK = re.compile(r"^(\s*)not ok \d+ - (.+?)(?:\s+#\s*(?:TODO|SKIP)\b.*)?$((?:\n\1 {2}.*)*)", re.M)
_TAP_ERROR = re.compile(r"^\s*error: (?:\|-?\s*\n\s*)?'?(.*?)'?\s*$", re.M)
_TAP_COUNTS = re.compile(r"^# fail (\d+)\s*$", re.M)


def _jest(text: str) -> tuple[list[FailingTest], int | None]:
    blocks = [FailingTest(m.group(1), _clean(m.group(2) or "")) for m in _JEST_BLOCK.finditer(text)
              if m.group(1) != "Test suite failed to run"]
    suites = set(_SUITE.findall(text)) | {"failing tests:"}
    crosses = [FailingTest(m.group(2), _clean(m.group(3) or "")) for m in _CROSS.finditer(text)
               if m.group(2) not in suites]
    total = sum(int(n) for n in _JEST_COUNTS.findall(text))
    return blocks or crosses, total or None


def _tap(text: str) -> tuple[list[FailingTest], int | None]:
    found = []
    for m in _TAP_NOT_OK.finditer(text):
        body = m.group(3)
        if "subtestsFailed" in body:  # a suite that failed only because a test in it did: that test is named
            continue
        error = _TAP_ERROR.search(body)
        found.append(FailingTest(m.group(2), _clean(error.group(1)) if error else ""))
    total = sum(int(n) for n in _TAP_COUNTS.findall(text))
    return found, total or None


_PARSERS = (_pytest, _unittest, _go, _cargo, _tap, _jest)


def parse(output: str) -> TestFailures:
    """The failing tests named in ``output`` (see the module docstring), each once, in order."""
    tests: dict[str, FailingTest] = {}
    total = 0
    for parser in _PARSERS:
        found, count = parser(output)
        for test in found:
            known = tests.get(test.name)
            if known is None or (test.message and not known.message):
                tests[test.name] = test if known is None else FailingTest(test.name, test.message)
        total += count or 0
    return TestFailures(tuple(tests.values()), total or None)


def describe(failures: TestFailures, cap: int = NAMED) -> str:
    """``3 failing tests: a - why; b - why; c``: every one up to ``cap``, then ``and N more``."""
    count = failures.count
    shown = [t.describe() for t in failures.tests[:cap]]
    more = count - len(shown)
    if more > 0:
        unseen = count - len(failures.tests)
        shown.append(f"and {more} more" + (" (not in the output's tail)" if unseen == more else ""))
    noun = "failing test" if count == 1 else "failing tests"
    return f"{count} {noun}: " + "; ".join(shown)
