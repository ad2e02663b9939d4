"""Recording cost (``ODIN_RECORD``): an exchange's cost must not grow with the run.

Records N exchanges (a work turn of a few hundred characters with a tool call, every fourth one a judge
verdict) through :class:`~odin_magic.workers.recording.Recorder` into a fresh file, for N = 10, 100, 1000,
and prints the median cost of one exchange over all N and over the last tenth (the journal append), then
the one-off time to render the YAML from the journal.

    .venv/bin/python benchmarks/bench_recording.py [--sizes 10 100 1000]

Prints figures; it is not a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from odin_magic.workers.record_journal import journal_of  # noqa: E402
from odin_magic.workers.recording import Recorder  # noqa: E402
from odin_magic.workers.scripted import message_body  # noqa: E402

RUN_DIR = ".odin-loop/runs/20261203-010101-bench"
VERDICT = json.dumps({"status": "DONE", "passed": True, "reasons": ["fine"]})


def exchange(recorder: Recorder, i: int) -> None:
    judge = i % 4 == 3
    headers = {"x-odin-stage": "build", "x-odin-purpose": "judge" if judge else "work",
               "x-odin-call": f"call-{i // 8}", "x-odin-run-dir": RUN_DIR}
    body = {"messages": [{"role": "user", "content": f"tool result {i}: " + "line of output\n" * 20}]}
    if judge:
        content = [{"type": "text", "text": VERDICT}]
    else:
        content = [{"type": "text", "text": f"Turn {i}: reading the file next.\n" * 4},
                   {"type": "tool_use", "id": f"toolu_{i}", "name": "bash", "input": {"command": f"cat file{i}.py"}}]
    reply = message_body(model="m", content=content, stop_reason="end_turn" if judge else "tool_use",
                         usage={"input_tokens": 1200 + i, "output_tokens": 40})
    recorder.record(headers, body, reply)


def run(n: int, where: Path) -> tuple[float, float, float, int, int]:
    """(median ms per exchange, median ms of the last tenth, render ms, journal bytes, YAML bytes)."""
    path = where / f"bench-{n}.recording.yaml"
    recorder = Recorder(path, where)
    times = []
    for i in range(n):
        start = time.perf_counter()
        exchange(recorder, i)
        times.append((time.perf_counter() - start) * 1000)
    journal_bytes = journal_of(path).stat().st_size
    start = time.perf_counter()
    recorder.render()
    render_ms = (time.perf_counter() - start) * 1000
    tail = times[-max(1, n // 10):]
    return statistics.median(times), statistics.median(tail), render_ms, journal_bytes, path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    args = parser.parse_args()
    print(f"{'exchanges':>9}  {'median ms':>9}  {'last 10% ms':>11}  {'render ms':>9}  {'journal KB':>10}  {'YAML KB':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            median, tail, render_ms, journal_bytes, yaml_bytes = run(n, Path(tmp))
            print(f"{n:>9}  {median:>9.3f}  {tail:>11.3f}  {render_ms:>9.1f}  {journal_bytes / 1024:>10.1f}  "
                  f"{yaml_bytes / 1024:>8.1f}")


if __name__ == "__main__":
    main()
