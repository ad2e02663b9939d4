"""The cost of proving a gate able to fail (issue 13 item 5): mutants run serially vs in parallel.

Builds a small project (the quickstart's calculator plus a second module) with a
real pytest harness, and times ``mutation.run_mutants`` with 1 worker and with
up to the CPU count, several times each. Prints medians and the speed-up; it
asserts nothing (performance is measured, not tested).

    python benchmarks/bench_mutation.py [--repeat 3] [--mutants 12]

With ``--project DIR`` it measures the gate on a long real module instead (issue 21): DIR is an unpacked
more-itertools sdist (``pip download --no-deps --no-binary :all: more-itertools==11.2.1 -d /tmp/mi`` and
``tar xzf /tmp/mi/more_itertools-11.2.1.tar.gz -C /tmp/mi``). A copy of it gets a one-line change in
``padded()`` of ``more_itertools/more.py`` (5,644 lines), checkpointed before and after as the engine does;
the gate's own command (``--command``, default the project's ``python -m unittest``) is timed once, then
the mutation gate (12 mutants, 2 workers) ``--repeat`` times; the medians are printed side by side.

    python benchmarks/bench_mutation.py --project /tmp/mi/more_itertools-11.2.1 [--repeat 3] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from odin_magic.engine.gates import command_env, run_command  # noqa: E402
from odin_magic.loop.schema import GateCommand  # noqa: E402
from odin_magic.engine.mutation import MutationSettings, run_mutants  # noqa: E402

CALC = '''\
def add(a, b):
    return a + b


def divide(a, b):
    if b == 0:
        raise ValueError("cannot divide by zero")
    return a / b


def clamp(x, low=0, high=10):
    if x < low:
        return low
    if x > high:
        return high
    return x
'''

TESTS = '''\
import pytest
from calc import add, clamp, divide

def test_add():
    assert add(2, 3) == 5

def test_divide():
    assert divide(7, 2) == 3.5
    with pytest.raises(ValueError):
        divide(1, 0)

def test_clamp():
    assert [clamp(-1), clamp(11), clamp(5), clamp(0), clamp(10)] == [0, 10, 5, 0, 10]
'''


def project(root: Path) -> tuple[Path, dict[str, str]]:
    p = root / "project"
    (p / "src").mkdir(parents=True)
    (p / "src" / "calc.py").write_text(CALC)
    (p / "tests").mkdir()
    (p / "tests" / "conftest.py").write_text(
        "import os, sys\nsys.path.insert(0, os.environ.get('ODIN_TARGET_DIR') or os.path.join(os.path.dirname(__file__), '..', 'src'))\n")
    (p / "tests" / "test_calc.py").write_text(TESTS)
    return p, command_env(p, root / "run", "bench", "test")


PADDED_OLD = "        return chain(islice(iterator_with_repeat, n), iterator)\n"
PADDED_NEW = "        return chain(islice(iterator_with_repeat, n + 0), iterator)\n"


def real_project(source: Path, root: Path, command: str) -> tuple[Path, dict, GateCommand]:
    """A copy of ``source`` with a one-line change in ``padded()``, and the changed lines (real checkpoints)."""
    from odin_magic.runs.checkpoints import Checkpoints

    proj = root / "project"
    shutil.copytree(source, proj, ignore=shutil.ignore_patterns("__pycache__", ".git", ".tox", ".odin-loop"))
    more = proj / "more_itertools" / "more.py"
    text = more.read_text()
    if PADDED_OLD not in text:
        sys.exit(f"{more}: padded()'s last line is not there; is this more-itertools 11.2.1?")
    store = Checkpoints(proj)
    before = store.snapshot()
    more.write_text(text.replace(PADDED_OLD, PADDED_NEW))
    lines = store.changed_lines(before, store.snapshot())
    return proj, lines, GateCommand(cmd=command, timeout=1800)


def bench_real(args) -> None:
    command = args.command or f'"{sys.executable}" -m unittest'
    with tempfile.TemporaryDirectory() as tmp:
        proj, lines, cmd = real_project(Path(args.project), Path(tmp), command)
        env = command_env(proj, Path(tmp) / "run", "bench", "test")
        suite = []
        for _ in range(args.suite_repeat):
            ev = run_command(cmd, proj, env)
            suite.append(ev.duration_s)
            print(f"the gate's own command: {ev.duration_s:.1f} s (exit {ev.exit_code})", flush=True)
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            report = run_mutants(proj, lines, [cmd], env, run_command,
                                 settings=MutationSettings(max_mutants=args.mutants, jobs=args.jobs,
                                                           baseline_s=statistics.median(suite)))
            times.append(time.perf_counter() - t0)
            print(f"mutation gate: {times[-1]:.1f} s, {report.summary()}", flush=True)
    print(f"change: {lines}")
    print(f"the gate's own command `{command}`: median {statistics.median(suite):.1f} s of {len(suite)} "
          f"(exit {ev.exit_code})")
    print(f"mutation gate, {len(report.results)} mutants on {args.jobs} workers: median {statistics.median(times):.1f} s "
          f"of {len(times)} ({', '.join(f'{t:.1f}' for t in times)}); {report.summary()}")
    print(f"  fail-fast: {report.commands}; focused first: {report.focused}; timeout {report.timeout_s} s")
    for r in report.results:
        print(f"  {r.path}:{r.line} {r.operator} [{r.where}] "
              f"{'killed' + (' (timeout)' if r.timed_out else '') if r.killed else 'SURVIVED'}")
    print(f"(load average now: {', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mutants", type=int, default=12)
    ap.add_argument("--project", help="an unpacked more-itertools 11.2.1 sdist (see the docstring)")
    ap.add_argument("--command", help="the gate's command on --project (default: python -m unittest)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--suite-repeat", type=int, default=1)
    args = ap.parse_args()
    if args.project:
        return bench_real(args)
    cmd = GateCommand(cmd=f'"{sys.executable}" -m pytest -q -p no:cacheprovider tests', timeout=120)
    cpus = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        proj, env = project(Path(tmp))
        t0 = time.perf_counter()
        run_command(cmd, proj, env)
        baseline = time.perf_counter() - t0
        results = {}
        for jobs in sorted({1, cpus}):
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                report = run_mutants(proj, ["src/calc.py"], [cmd], env, run_command,
                                     settings=MutationSettings(max_mutants=args.mutants, jobs=jobs))
                times.append(time.perf_counter() - t0)
            print(f"mutation gate: {times[-1]:.1f} s, {report.summary()}", flush=True)
            results[jobs] = (statistics.median(times), report)
    print(f"one run of the gate command (baseline): {baseline * 1000:.0f} ms")
    for jobs, (median, report) in results.items():
        print(f"{report.tried} mutants with {jobs} worker(s): median {median:.2f} s "
              f"({median / max(report.tried, 1) * 1000:.0f} ms per mutant), {report.summary()}")
    if len(results) > 1:
        serial, parallel = results[1][0], results[cpus][0]
        print(f"speed-up with {cpus} workers: x{serial / parallel:.2f}")
    print(f"(load average now: {', '.join(f'{x:.1f}' for x in os.getloadavg())} on {cpus} cores)")


if __name__ == "__main__":
    main()
