"""The cost of proving a gate able to fail (issue 13 item 5): mutants run serially vs in parallel.

Builds a small project (the quickstart's calculator plus a second module) with a
real pytest harness, and times ``mutation.run_mutants`` with 1 worker and with
up to the CPU count, several times each. Prints medians and the speed-up; it
asserts nothing (performance is measured, not tested).

    python benchmarks/bench_mutation.py [--repeat 3] [--mutants 12]
"""

from __future__ import annotations

import argparse
import os
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mutants", type=int, default=12)
    args = ap.parse_args()
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
