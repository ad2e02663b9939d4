"""The cost of the live view's metric series per gate decision, as the run grows.

For a run whose history already holds N metric gate evaluations (10, 100, 1,000 by default; each evidence line
shaped as a real ``measure:`` gate's, about 600 bytes, sealed as the engine seals it), prints per evaluation:

* ``incremental``: the live view's update (:class:`odin_magic.runs.metric_history.SeriesCursor`): the new
  entry's evidence line read, checked against its seal, appended to the series (median of --evaluations);
* ``full read``: :func:`~odin_magic.runs.metric_history.read_series` over the whole history, what the live view
  did at each redraw before (and ``%odin status`` / the report still do, once per command);
* ``lines``: the evidence lines each read (EvidenceReader.lines_read; the full read's median is N plus half
  of --evaluations: the history grows while it is measured);
* ``chart``: drawing the chart's PNG from the series (matplotlib, Agg, 72 dpi), which the view does only when
  a series gained a point (the best of three).

    .venv/bin/python benchmarks/bench_metric_view.py [--sizes 10,100,1000] [--evaluations 20]

Prints figures; it is not a test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from odin_magic.render.charts import png_bytes  # noqa: E402
from odin_magic.render.metric_chart import metric_chart  # noqa: E402
from odin_magic.runs.evidence import EvidenceLog, EvidenceReader  # noqa: E402
from odin_magic.runs.metric_history import SeriesCursor, read_series  # noqa: E402
from odin_magic.runs.state import HistoryEntry  # noqa: E402

PAD = "x" * 300  # the rest of a real gate's evidence (commands' tails, verdict...)


def _evaluate(log: EvidenceLog, history: list, i: int) -> None:
    """One metric gate evaluation: its evidence line appended, its history entry added."""
    figure = 200.0 - i * 0.01
    ref = log.append({"stage": "tune", "pad": PAD, "metric": {
        "name": "p95 latency", "cmd": "python measure.py", "unit": "ms", "direction": "lower", "target": 100,
        "figure": figure, "passed": False, "change": "improved",
        "baseline": {"figure": figure + 1, "spread": 0.5}, "after": {"figure": figure, "spread": 0.4}}})
    history.append(HistoryEntry.model_validate({
        "stage": "tune", "result": "fail", "gate": "ai", "at": f"2026-01-01T00:00:{i % 60:02d}",
        "evidence": ref.path, "evidence_sha256": ref.sha256, "evidence_bytes": ref.size}))


def _drawing(series) -> float:
    t0 = time.perf_counter()
    png_bytes(metric_chart(series), dpi=72)
    return time.perf_counter() - t0


def measure(n: int, evaluations: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="odin-metric-view-") as tmp:
        run_dir = Path(tmp)
        log, history = EvidenceLog(run_dir), []
        for i in range(n):
            _evaluate(log, history, i)
        cursor = SeriesCursor(run_dir, {"tune"})
        cursor.update(history)  # the view opened on a run already n evaluations long
        incremental, full, lines_inc, lines_full = [], [], [], []
        for i in range(n, n + evaluations):
            _evaluate(log, history, i)
            before, t0 = cursor.lines_read, time.perf_counter()
            cursor.update(history)
            incremental.append(time.perf_counter() - t0)
            lines_inc.append(cursor.lines_read - before)
            before, t0 = EvidenceReader.total_read, time.perf_counter()
            series = read_series(run_dir, history, {"tune"})
            full.append(time.perf_counter() - t0)
            lines_full.append(EvidenceReader.total_read - before)
        assert series == cursor.series
        chart = min(_drawing(cursor.series) for _ in range(3))  # the first pays matplotlib's warm-up
        log.close()
        return {"incremental": statistics.median(incremental), "full": statistics.median(full),
                "lines_inc": statistics.median(lines_inc), "lines_full": statistics.median(lines_full),
                "chart": chart}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--evaluations", type=int, default=20)
    args = parser.parse_args()
    print(f"{'evaluations':>11}  {'incremental':>12}  {'lines':>5}  {'full read':>10}  {'lines':>5}  {'chart':>9}")
    for n in (int(x) for x in args.sizes.split(",")):
        r = measure(n, args.evaluations)
        print(f"{n:>11}  {r['incremental'] * 1e3:>9.3f} ms  {r['lines_inc']:>5.0f}  {r['full'] * 1e3:>7.2f} ms"
              f"  {r['lines_full']:>5.0f}  {r['chart'] * 1e3:>6.1f} ms")


if __name__ == "__main__":
    main()
