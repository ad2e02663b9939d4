"""What `odin refine` costs as a project's runs pile up: reading every event log, aggregating, proposing.

Records N real dry runs of a three-stage loop (each with scripted gate failures), then times
`refine()` over them (best of --repeat). The proposals it saves are deleted between passes, so
each pass does the same work.

    .venv/bin/python benchmarks/bench_refine.py [--runs 20,100] [--repeat 3]

Prints figures; it is not a test.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from odin_magic.engine.orchestrator import Engine  # noqa: E402
from odin_magic.learning.refine import refine  # noqa: E402
from odin_magic.runs.state import DryOptions  # noqa: E402

LOOP = """\
name: bench
version: 1
max_iterations: 4
max_repeats: 9
stages:
  - id: draft
    produces: [draft.md]
    gate: {mode: ai, check: draft.md exists}
  - id: check
    consumes: [draft.md]
    produces: [check.md]
    gate: {mode: ai, check: check.md finds no gap}
  - id: review
    consumes: [check.md]
    produces: [review.md]
    gate: {mode: ai, check: review.md lists no blocking finding, on_fail: draft}
"""


def record(project: Path, n: int) -> None:
    loops = project / ".odin-loop" / "loops"
    loops.mkdir(parents=True, exist_ok=True)
    (loops / "bench.yaml").write_text(LOOP)
    engine = Engine(project)
    for i in range(n):
        gates = ["check:fail"] * (i % 6) + (["review:fail"] if i % 3 == 0 else [])
        engine.start("bench", f"run {i}", dry=DryOptions(gates=gates))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="20,100")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'runs':>6} {'events':>8} {'refine s (best)':>16} {'per run ms':>11} {'proposals':>10}")
    for n in [int(x) for x in args.runs.split(",")]:
        with tempfile.TemporaryDirectory(prefix="odin-bench-refine-") as tmp:
            project = Path(tmp)
            record(project, n)
            events = sum(sum(1 for _ in (d / "events.jsonl").open()) for d in (project / ".odin-loop" / "runs").iterdir())
            best, proposals = float("inf"), 0
            for _ in range(args.repeat):
                shutil.rmtree(project / ".odin-loop" / "refinements", ignore_errors=True)
                start = time.perf_counter()
                result = refine(project, "bench", now="bench")
                best = min(best, time.perf_counter() - start)
                proposals = len(result.proposals)
            print(f"{n:>6} {events:>8} {best:>16.3f} {best / n * 1000:>11.2f} {proposals:>10}")


if __name__ == "__main__":
    main()
