"""Gates proven able to fail: the discrimination sensor (seed 002), by mutation.

A gate whose ``run:`` commands pass says the code is right only if those
commands would fail on wrong code. For a stage whose gate has ``mutate: true``,
after the gate passes, the engine makes small mutants of the Python files the
run changed, one mutation at a time:

* ``flip comparison``: ``==`` ↔ ``!=``, ``<`` → ``>=``, ``>`` → ``<=``, ``is`` ↔ ``is not``, ``in`` ↔ ``not in``;
* ``off by one``: an integer constant ``n`` → ``n + 1``;
* ``negate condition``: ``if c:`` / ``while c:`` / ``x if c else y`` → ``not (c)``;
* ``return None``: ``return expr`` → ``return None``;
* ``drop raise``: ``raise ...`` → ``pass``;

re-runs the gate's commands against each mutant, and records the kill ratio
(mutants that made a command fail / mutants tried). Below the loop's
``min_kill_ratio`` the gate fails, and the surviving mutants are shown as diffs.

Mutants go where the change is (:mod:`odin_magic.engine.mutation_plan`): on the changed lines, then in
their enclosing functions, then — not counted — elsewhere in the changed files; each command runs with its
runner's fail-fast option, after a focused run of the tests named after the changed functions, with a
timeout derived from the gate's own run (a mutant that hangs is killed, and the hang recorded).

Mutants never touch the project: each worker thread runs them in its own
scratch copy of the project tree (``.odin-loop``, ``.git`` and caches left out),
so a crash mid-mutation leaves the tree exactly as the stage left it. Mutants
run in parallel, up to the CPU count. Only the files given as the stage's
changes are mutated, never any other.
"""

from __future__ import annotations

import ast
import concurrent.futures
import difflib
import functools
import os
import shutil
import threading
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping

from odin_magic.core import scratch
from odin_magic.engine import mutation_plan as plan
from odin_magic.engine import test_output
from odin_magic.loop.schema import GateCommand
from odin_magic.workers.base import CommandEvidence

DEFAULT_MAX_MUTANTS = 12
DEFAULT_MIN_KILL_RATIO = 0.6
MIN_MUTANT_TIMEOUT = 10.0
TIMEOUT_FACTOR = 3  # a mutant's command may take this many times the unmutated run, at least MIN_MUTANT_TIMEOUT
NO_TESTS = 5  # pytest's (and unittest's, 3.12+) exit code when no test was selected: not a kill
_SKIP_DIRS = {".odin-loop", ".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv",
              "node_modules", ".tox"}

_FLIP = {
    ast.Eq: "!=", ast.NotEq: "==", ast.Lt: ">=", ast.LtE: ">", ast.Gt: "<=", ast.GtE: "<",
    ast.Is: "is not", ast.IsNot: "is", ast.In: "not in", ast.NotIn: "in",
}
_OP_TEXT = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
}

#: runs one gate command in a directory with an environment; the gate's own runner in production
Runner = Callable[[GateCommand, Path, dict[str, str]], CommandEvidence]


@dataclass(frozen=True)
class Mutant:
    path: str  # project-relative, POSIX
    line: int
    operator: str
    start: int  # byte offsets into the file's UTF-8 source
    end: int
    replacement: str
    original: str

    @property
    def description(self) -> str:
        return f"`{self.original}` → `{self.replacement}` ({self.path}:{self.line})"

    def apply(self, source: bytes) -> bytes:
        return source[: self.start] + self.replacement.encode("utf-8") + source[self.end:]

    def diff(self, source: bytes) -> str:
        before = source.decode("utf-8").splitlines(keepends=True)
        after = self.apply(source).decode("utf-8").splitlines(keepends=True)
        return "".join(difflib.unified_diff(before, after, f"a/{self.path}", f"b/{self.path}", n=1))


def _line_starts(source: bytes) -> list[int]:
    starts = [0]
    for i, b in enumerate(source):
        if b == 0x0A:
            starts.append(i + 1)
    return starts


class _Finder(ast.NodeVisitor):
    def __init__(self, source: bytes, path: str):
        self.source = source
        self.path = path
        self.starts = _line_starts(source)
        self.found: list[Mutant] = []

    def _offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def _span(self, node: ast.AST) -> tuple[int, int]:
        return (self._offset(node.lineno, node.col_offset), self._offset(node.end_lineno, node.end_col_offset))

    def _add(self, node: ast.AST, operator: str, start: int, end: int, replacement: str) -> None:
        original = self.source[start:end].decode("utf-8")
        if original != replacement:
            self.found.append(Mutant(self.path, node.lineno, operator, start, end, replacement, original))

    def visit_Compare(self, node: ast.Compare) -> None:
        if len(node.ops) == 1 and type(node.ops[0]) in _FLIP:
            left_end = self._offset(node.left.end_lineno, node.left.end_col_offset)
            right_start = self._offset(node.comparators[0].lineno, node.comparators[0].col_offset)
            between = self.source[left_end:right_start].decode("utf-8")
            op = _OP_TEXT[type(node.ops[0])]
            words = between.split()
            if " ".join(words) == op:
                at = between.index(words[0])
                start = left_end + len(between[:at].encode("utf-8"))
                end = left_end + len(between[: between.rindex(words[-1]) + len(words[-1])].encode("utf-8"))
                self._add(node, "flip comparison", start, end, _FLIP[type(node.ops[0])])
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if type(node.value) is int:
            start, end = self._span(node)
            self._add(node, "off by one", start, end, str(node.value + 1))

    def _negate(self, node: ast.AST, test: ast.AST) -> None:
        start, end = self._span(test)
        self._add(node, "negate condition", start, end, f"not ({self.source[start:end].decode('utf-8')})")

    def visit_If(self, node: ast.If) -> None:
        self._negate(node, node.test)
        self.generic_visit(node)

    def visit_While(self, node: ast.While) -> None:
        self._negate(node, node.test)
        self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._negate(node, node.test)
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            start, end = self._span(node)
            self._add(node, "return None", start, end, "return None")
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        start, end = self._span(node)
        self._add(node, "drop raise", start, end, "pass")


def mutants_of(source: bytes, path: str) -> list[Mutant]:
    """Every mutant of one file's source (none when it does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    finder = _Finder(source, path)
    finder.visit(tree)
    return finder.found


def _spread(items: list[Mutant], k: int) -> list[Mutant]:
    """``k`` of ``items``, evenly spaced through the file(s), first and last included."""
    if k >= len(items):
        return list(items)
    if k == 1:
        return [items[0]]
    return [items[round(i * (len(items) - 1) / (k - 1))] for i in range(k)]


def select(mutants: list[Mutant], limit: int) -> list[Mutant]:
    """At most ``limit`` mutants: every operator gets its turn, each spread over the code."""
    by_op: dict[str, list[Mutant]] = {}
    for m in mutants:
        by_op.setdefault(m.operator, []).append(m)
    quota = dict.fromkeys(by_op, 0)
    left = limit
    while left > 0 and any(quota[op] < len(ms) for op, ms in by_op.items()):
        for op, ms in by_op.items():
            if left > 0 and quota[op] < len(ms):
                quota[op] += 1
                left -= 1
    chosen = [m for op, ms in by_op.items() for m in _spread(ms, quota[op])]
    return sorted(chosen, key=lambda m: (m.path, m.start))


def is_test_file(rel: str) -> bool:
    """Tests are what the mutants are checked by, never what is mutated."""
    parts = Path(rel).parts
    name = parts[-1]
    return (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
            or any(p in ("tests", "test", "harness") for p in parts[:-1]))


def targets(project_dir: Path, paths: list) -> list[str]:
    """The project's Python files (project-relative, not tests) under a stage's artifacts (its consumes and
    produces that live in the project tree: ``src/`` for a test stage): the code its gate commands check."""
    project_dir = Path(project_dir).resolve()
    found: list[str] = []
    for placement in paths:
        if placement.in_run_dir:
            continue
        base = Path(placement.path)
        files = sorted(base.rglob("*.py")) if base.is_dir() else [base] if base.suffix == ".py" else []
        for f in files:
            if f.is_symlink():
                continue
            real = f.resolve()
            if not real.is_relative_to(project_dir):
                continue
            inside = real.relative_to(project_dir)
            if _SKIP_DIRS.intersection(inside.parts):
                continue
            rel = inside.as_posix()
            if rel not in found and not is_test_file(rel):
                found.append(rel)
    return found


@dataclass
class MutantResult:
    description: str
    operator: str
    path: str
    line: int
    killed: bool
    killed_by: str | None = None  # the command that failed on it
    diff: str = ""
    where: str = "file"  # line / function / rest of file, or file: no line information (mutation_plan.TIERS)
    timed_out: bool = False  # killed because it hung past the timeout

    @property
    def counted(self) -> bool:
        """In the change: it counts in the kill ratio."""
        return self.where in plan.IN_CHANGE


@dataclass
class MutationReport:
    files: list[str] = field(default_factory=list)
    results: list[MutantResult] = field(default_factory=list)
    min_kill_ratio: float = DEFAULT_MIN_KILL_RATIO
    note: str = ""
    changed: dict[str, list] = field(default_factory=dict)  # file → changed line ranges (None: the whole file)
    commands: list[str] = field(default_factory=list)  # the commands each mutant ran (fail-fast)
    focused: list[str] = field(default_factory=list)  # the focused commands tried first
    timeout_s: float | None = None  # each command's bound on a mutant

    @property
    def counted(self) -> list[MutantResult]:
        return [r for r in self.results if r.counted]

    @property
    def tried(self) -> int:
        return len(self.counted)

    @property
    def killed(self) -> int:
        return sum(r.killed for r in self.counted)

    @property
    def ratio(self) -> float | None:
        return self.killed / self.tried if self.tried else None

    @property
    def survivors(self) -> list[MutantResult]:
        return [r for r in self.counted if not r.killed]

    @property
    def passed(self) -> bool:
        return self.ratio is None or self.ratio >= self.min_kill_ratio

    def summary(self) -> str:
        if not self.tried:
            return f"mutation: {self.note or 'no mutant to try'}"
        return f"kill ratio {self.killed}/{self.tried} = {self.ratio:.2f} (min {self.min_kill_ratio:g})"

    def reason(self) -> str | None:
        if self.passed:
            return None
        shown = "; ".join(f"the gate passes with {r.description}" for r in self.survivors[:3])
        more = f" (and {len(self.survivors) - 3} more)" if len(self.survivors) > 3 else ""
        return f"the gate's commands cannot tell good code from bad: {self.summary()}: {shown}{more}"

    def to_dict(self) -> dict:
        return {"files": self.files, "tried": self.tried, "killed": self.killed, "ratio": self.ratio,
                "min_kill_ratio": self.min_kill_ratio, "passed": self.passed, "note": self.note,
                "changed": {p: None if r is None else [list(x) for x in r] for p, r in self.changed.items()},
                "commands": self.commands, "focused": self.focused, "timeout_s": self.timeout_s,
                "results": [asdict(r) for r in self.results]}


def _copy_project(project_dir: Path, into: Path) -> None:
    def ignore(directory: str, names: list[str]) -> set[str]:
        return {n for n in names if n in _SKIP_DIRS}

    shutil.copytree(project_dir, into, symlinks=True, ignore=ignore)


class _Scratch(threading.local):
    path: Path | None = None


def _readable_source(path: Path, project_dir: Path) -> bytes | None:
    """The file's bytes when it may be mutated: a regular file inside the project (never through a
    symlink), UTF-8 text (mutants are byte offsets into it)."""
    if path.is_symlink() or not path.is_file() or not path.resolve().is_relative_to(project_dir.resolve()):
        return None
    data = path.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return data


@dataclass(frozen=True)
class MutationSettings:
    """How mutation is bounded: how many mutants, how many at once, how long each may run, what ratio passes."""

    max_mutants: int = DEFAULT_MAX_MUTANTS
    min_kill_ratio: float = DEFAULT_MIN_KILL_RATIO
    jobs: int | None = None  # worker threads; the CPU count when None
    baseline_s: float = 0.0  # how long the gate's commands took on the real tree
    min_timeout_s: float = MIN_MUTANT_TIMEOUT

    def timeout(self, scratch_s: float = 0.0) -> float:
        """Each command's bound on a mutant (a mutant may loop forever): ``TIMEOUT_FACTOR`` times the longer of
        the gate's own run and the unmutated scratch copy's, at least ``min_timeout_s``."""
        return round(max(self.min_timeout_s, TIMEOUT_FACTOR * max(self.baseline_s, scratch_s)), 1)


class _ScratchCopies:
    """One scratch copy of the project per worker thread, all under one temporary root (removed by ``close``)."""

    def __init__(self, project_dir: Path, run_dir: Path | None):
        self.project_dir = project_dir
        self.run_dir = run_dir
        self.root = scratch.make(run_dir, "mutants")  # recorded: a dead driver's copies go at the next open
        self._local = _Scratch()
        self._made: list[Path] = []
        self._lock = threading.Lock()

    def get(self) -> Path:
        """This thread's copy, made on first use."""
        if self._local.path is None:
            with self._lock:
                self._local.path = self.root / f"w{len(self._made)}"
                self._made.append(self._local.path)
            _copy_project(self.project_dir, self._local.path)
        return self._local.path

    def close(self) -> None:
        scratch.drop(self.run_dir, self.root)


class _RecentKillers:
    """The pytest tests that killed the latest mutants (shared by the worker threads), tried first on the next."""

    KEEP = 5

    def __init__(self) -> None:
        self._ids: list[str] = []
        self._lock = threading.Lock()

    def add(self, ev: CommandEvidence) -> None:
        named = [t.name for t in test_output.parse(ev.stdout_tail + "\n" + ev.stderr_tail).tests if "::" in t.name]
        with self._lock:
            for name in named:
                if name in self._ids:
                    self._ids.remove(name)
                self._ids.insert(0, name)
            del self._ids[self.KEEP:]

    def ids(self) -> list[str]:
        with self._lock:
            return list(self._ids)


def _caught_by_named(ev: CommandEvidence, node_ids: list[str]) -> bool:
    """Whether a pytest run of the named tests caught the mutant: it failed (1) naming one of them. Any other
    outcome (2: interrupted, 4: a node id that does not resolve here, 5: none selected, a failure elsewhere in
    the command) says nothing and the gate runs on."""
    if ev.exit_code != 1:
        return False
    failed = {t.name for t in test_output.parse(ev.stdout_tail + "\n" + ev.stderr_tail).tests}
    return any(n in failed for n in node_ids)


@dataclass(frozen=True)
class _ScratchGate:
    """The gate's commands, run in a scratch copy of the project instead of the project itself: fail-fast, each
    after its focused form (the tests named after the changed functions) where it has one."""

    project_dir: Path
    commands: list[GateCommand]
    env: Mapping[str, str]
    run: Runner
    timeout: float
    names: tuple[str, ...] = ()  # the changed functions' names (for the focused runs)
    focused: tuple[GateCommand, ...] = ()  # set by ``checked``: the focused commands that pass unmutated
    recent: _RecentKillers = field(default_factory=_RecentKillers)  # tests that killed the latest mutants

    @property
    def fast(self) -> list[GateCommand]:
        return [plan.with_cmd(c, plan.fail_fast(c.cmd)) for c in self.commands]

    def env_for(self, where: Path) -> dict[str, str]:
        env, project_dir = self.env, self.project_dir
        out = {**env, "ODIN_PROJECT_DIR": str(where), "PYTHONDONTWRITEBYTECODE": "1"}  # same-size mutants: no stale .pyc
        target = env.get("ODIN_TARGET_DIR")
        if target and Path(target).resolve().is_relative_to(project_dir.resolve()):  # the harness convention
            out["ODIN_TARGET_DIR"] = str(where / Path(target).resolve().relative_to(project_dir.resolve()))
        return out

    def _run(self, command: GateCommand, where: Path, bound: float | None) -> CommandEvidence:
        limited = GateCommand(cmd=command.cmd, timeout=min(command.timeout or bound, bound) if bound else command.timeout)
        return self.run(limited, where, self.env_for(where))

    def checked(self, where: Path) -> tuple["_ScratchGate", str | None, float]:
        """On the unmutated copy: the gate with its focused commands that pass there, the first full command
        that fails (if any), and how long the full commands took."""
        focused = []
        for command in self.commands:
            cmd = plan.focused(command.cmd, list(self.names))
            if cmd is not None and self._run(plan.with_cmd(command, cmd), where, None).ok:
                focused.append(plan.with_cmd(command, cmd))
        took = 0.0
        for command in self.fast:
            ev = self._run(command, where, None)
            took += ev.duration_s
            if not ev.ok:
                return self, command.cmd, took
        return replace(self, focused=tuple(focused)), None, took

    def killer(self, where: Path) -> tuple[str | None, bool]:
        """The first command that fails on the mutant in ``where`` (the tests that killed the latest mutants
        first, then the focused commands, then the gate's own), and whether it hung."""
        ids = self.recent.ids()
        for command in self._killers_first(ids):
            ev = self._run(command, where, self.timeout)
            if ev.timed_out or _caught_by_named(ev, ids):
                return command.cmd, ev.timed_out
        for command in self.focused:
            ev = self._run(command, where, self.timeout)
            if ev.timed_out or ev.exit_code not in (0, NO_TESTS):
                self.recent.add(ev)
                return command.cmd, ev.timed_out
        for command in self.fast:
            ev = self._run(command, where, self.timeout)
            if not ev.ok:
                self.recent.add(ev)
                return command.cmd, ev.timed_out
        return None, False

    def _killers_first(self, ids: list[str]) -> list[GateCommand]:
        out = []
        for command in self.commands[:1]:  # the first gate command: where the tests are
            cmd = plan.killers_first(command.cmd, ids)
            if cmd is not None:
                out.append(plan.with_cmd(command, cmd))
        return out


def _mutable_sources(project_dir: Path, files: list[str],
                     report: MutationReport) -> tuple[dict[str, bytes], list[Mutant]]:
    """The sources of those of ``files`` that may be mutated (recorded in ``report.files``) and all their mutants."""
    sources: dict[str, bytes] = {}
    candidates: list[Mutant] = []
    for rel in files:
        if not rel.endswith(".py") or is_test_file(rel):
            continue
        data = _readable_source(project_dir / rel, project_dir)
        if data is None:
            continue
        sources[rel] = data
        candidates += mutants_of(data, rel)
        report.files.append(rel)
    return sources, candidates


def _try_mutant(placed: plan.Placed, sources: dict[str, bytes], gate: _ScratchGate, copies: _ScratchCopies,
                stop: threading.Event) -> MutantResult | None:
    """Run the gate on one mutant in this thread's scratch copy, then put the file back byte for byte."""
    if stop.is_set():
        return None
    m = placed.mutant
    where = copies.get()
    target = where / m.path
    if target.is_symlink() or not target.resolve().is_relative_to(where.resolve()):
        return None  # never through a link, never outside the copy
    target.write_bytes(m.apply(sources[m.path]))
    try:
        killer, hung = gate.killer(where)
    finally:
        target.write_bytes(sources[m.path])  # byte for byte, for the next mutant in this copy
    if killer is not None:
        return MutantResult(m.description, m.operator, m.path, m.line, True, killer, where=placed.where, timed_out=hung)
    return MutantResult(m.description, m.operator, m.path, m.line, False, None, m.diff(sources[m.path]),
                        where=placed.where)


def _run_in_scratch(report: MutationReport, mutants: list[plan.Placed], sources: dict[str, bytes],
                    gate: _ScratchGate, settings: MutationSettings) -> None:
    """Check the gate on an unmutated copy (which also times it), then try the mutants in parallel; into
    ``report``. The copies are always removed; on an error or Ctrl-C no queued mutant starts."""
    run_dir = gate.env.get("ODIN_RUN_DIR")  # every gate command's environment names the run dir
    copies = _ScratchCopies(gate.project_dir, Path(run_dir) if run_dir and Path(run_dir).is_dir() else None)
    stop = threading.Event()
    pool = None
    try:
        gate, baseline, took = gate.checked(copies.get())
        if baseline is not None:
            report.note = (f"not proven: `{baseline}` fails in a scratch copy of the project even without a mutant "
                           "(does it need something the copy leaves out: .git, .venv, node_modules?)")
            return
        gate = replace(gate, timeout=settings.timeout(took))
        report.commands, report.timeout_s = [c.cmd for c in gate.fast], gate.timeout
        report.focused = [c.cmd for c in gate.focused]
        workers = max(1, min(settings.jobs or os.cpu_count() or 1, len(mutants)))
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="odin-mutant")
        try_one = functools.partial(_try_mutant, sources=sources, gate=gate, copies=copies, stop=stop)
        report.results = [r for r in pool.map(try_one, mutants) if r is not None]
    except BaseException:
        stop.set()  # Ctrl-C or an error: no queued mutant starts
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        copies.close()


def _lines(ranges: list) -> str:
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges)


def run_mutants(
    project_dir: Path,
    files: list[str] | Mapping[str, list | None],
    commands: list[GateCommand],
    env: Mapping[str, str],
    run: Runner,
    *,
    settings: MutationSettings | None = None,
) -> MutationReport:
    """Mutate ``files`` (project-relative; only these), run ``commands`` on each mutant in a scratch copy.

    ``files`` maps each file to its changed line ranges (see :mod:`~odin_magic.engine.mutation_plan`); a
    list (or a file mapped to None) is wholly the change. Where the changed lines offer no mutation site, no
    mutant is tried and the report says "not proven: no mutation site in the change" (the gate keeps its
    verdict). The commands first run once on the unmutated copy: where they fail there (a gate that needs
    something the copy leaves out, such as a virtualenv inside the project), no mutant can prove
    anything, and the report says so instead of counting every mutant as caught."""
    settings = settings if settings is not None else MutationSettings()
    project_dir = Path(project_dir)
    changed = dict.fromkeys(files) if not isinstance(files, Mapping) else dict(files)
    report = MutationReport(min_kill_ratio=settings.min_kill_ratio)
    sources, candidates = _mutable_sources(project_dir, list(changed), report)
    report.changed = {p: changed[p] for p in report.files}
    if not report.files:
        report.note = "the run changed no Python file outside the tests: nothing to mutate"
        return report
    placed = plan.place(candidates, sources, report.changed)
    if not any(p.where in plan.ON_CHANGE for p in placed):
        where = "; ".join(f"{p} lines {_lines(r)}" if r else p for p, r in report.changed.items())
        report.note = f"not proven: no mutation site in the change ({where})"
        return report
    mutants = plan.choose(placed, settings.max_mutants, select)
    names = tuple(n for p, r in report.changed.items() if r for n in plan.enclosing_names(sources[p], r))
    gate = _ScratchGate(project_dir, commands, env, run, settings.timeout(), names)
    _run_in_scratch(report, mutants, sources, gate, settings)
    return report
