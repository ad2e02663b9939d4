"""The engine's own cost per stage transition, with the dry worker (no model, no delay).

A transition is one stage execution plus its gate: placeholder check, evidence
file, one fsync'd event-log append and an atomic state.json rewrite. The run is
given a history of N entries first (10 and 10,000 by default) to show how the
cost grows with the history's length.

    .venv/bin/python benchmarks/bench_engine.py [--transitions 200] [--sizes 10,10000]

Prints figures; it is not a test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from odin_magic.engine import Engine  # noqa: E402
from odin_magic.state import DryOptions  # noqa: E402
from odin_magic.store import RunStore  # noqa: E402

LOOP = """\
name: bench
max_iterations: 1000000
stages:
  - id: build
    produces: [notes.md]
    gate: {mode: ai, check: notes exist}
  - id: check
    produces: [report.md]
    gate: {mode: ai, check: the report is green, on_fail: build}
"""


def measure(history: int, transitions: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="odin-bench-") as tmp:
        project = Path(tmp)
        (project / ".odin-loop" / "loops").mkdir(parents=True)
        (project / ".odin-loop" / "loops" / "bench.yaml").write_text(LOOP)
        # every check fails: build -> check -> build -> ... never ends on its own
        script = ["check:fail"] * (transitions + 10)
        engine = Engine(project)
        engine.listener = lambda e: e.kind == "run_started" and engine.request_stop()
        state = engine.start("bench", "benchmark", dry=DryOptions(gates=script))
        store = RunStore(project)

        # give the run a long history, as if it had been going for a while
        handle, _ = store.open(state.run_id, "bench", "2026-01-01T00:00:00")
        try:
            for i in range(history):
                handle.record("gate", "2026-01-01T00:00:00", save=False, stage="build", entry={
                    "stage": "build", "result": "pass", "gate": "ai", "at": "2026-01-01T00:00:00",
                    "evidence": f"gates/{i + 1:04d}-build.json"})
            handle.save()
        finally:
            handle.close()

        stamps: list[float] = []

        def listen(event):
            if event.kind in ("gate_passed", "gate_failed"):
                stamps.append(time.perf_counter())
                if len(stamps) > transitions:
                    engine.request_stop()

        engine.listener = listen
        stamps.append(time.perf_counter())
        t0 = time.perf_counter()
        engine.run()
        total = time.perf_counter() - t0
        gaps = [b - a for a, b in zip(stamps, stamps[1:])][1:]  # drop the first (opening the run)
        size = (store.run_dir(state.run_id) / "state.json").stat().st_size
        t0 = time.perf_counter()
        store.load(state.run_id)
        load_s = time.perf_counter() - t0
        return {
            "history": history, "n": len(gaps), "median_ms": statistics.median(gaps) * 1000,
            "p90_ms": sorted(gaps)[int(len(gaps) * 0.9)] * 1000, "total_s": total,
            "state_kb": size / 1024, "load_ms": load_s * 1000,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transitions", type=int, default=200)
    parser.add_argument("--sizes", default="10,10000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = [measure(n, args.transitions) for n in sizes]
    print(f"engine cost per stage transition, dry worker, {args.transitions} transitions each")
    print(f"{'history':>8}  {'median':>9}  {'p90':>9}  {'state.json':>10}  {'load':>8}")
    for r in rows:
        print(f"{r['history']:>8}  {r['median_ms']:>7.2f}ms  {r['p90_ms']:>7.2f}ms  "
              f"{r['state_kb']:>8.0f}KB  {r['load_ms']:>6.1f}ms")
    if len(rows) > 1 and rows[0]["median_ms"] > 0:
        print(f"growth {rows[0]['history']} -> {rows[-1]['history']} entries: "
              f"x{rows[-1]['median_ms'] / rows[0]['median_ms']:.1f} per transition")


if __name__ == "__main__":
    main()
