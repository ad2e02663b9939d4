"""The cost of the evidence seal (issue 20: evidence a worker cannot change unseen), per transition.

For a run whose history names N sealed evidence lines (10, 1,000, 10,000, 100,000 by default; each line about
as long as a real gate's, 420 bytes), prints:

* ``open``: the first check of a driver that opens the run (every line the history names is read and hashed
  once, as at a resume or an approve);
* ``per transition``: what each transition adds afterwards, as the engine does it: the check before the
  append (one ``lstat``, then only the entries added since the last check: one line read), the append's
  extra ``fstat``/``lstat`` calls, and the history entry the gate record adds (median and p90 of --transitions);
* ``after a change``: the check after a command touched the file (a new ctime: every line re-read).

    .venv/bin/python benchmarks/bench_evidence_seal.py [--sizes 10,1000,10000,100000] [--transitions 300]

Prints figures; it is not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from odin_magic.runs.evidence import EvidenceLog  # noqa: E402
from odin_magic.runs.state import HistoryEntry  # noqa: E402

PAD = "x" * 360  # a line of about 420 bytes, like a dry gate's


def _entry(ref, i: int) -> HistoryEntry:
    return HistoryEntry.model_validate({"stage": "build", "result": "pass", "gate": "ai", "at": "2026-01-01T00:00:00",
                                        "evidence": ref.path, "evidence_sha256": ref.sha256,
                                        "evidence_bytes": ref.size})


def measure(n: int, transitions: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="odin-seal-") as tmp:
        run_dir = Path(tmp)
        log = EvidenceLog(run_dir)
        history = [_entry(log.append({"stage": "build", "n": i, "pad": PAD}), i) for i in range(n)]
        log.close()
        log = EvidenceLog(run_dir)  # a new driver: nothing verified yet
        t0 = time.perf_counter()
        assert log.seal.problem(history) is None
        opened = time.perf_counter() - t0
        per: list[float] = []
        for i in range(transitions):
            t0 = time.perf_counter()
            assert log.seal.problem(history) is None  # the check before the append
            ref = log.append({"stage": "build", "n": n + i, "pad": PAD})
            history.append(_entry(ref, n + i))
            per.append(time.perf_counter() - t0)
        # the same appends with no check, for the difference
        bare: list[float] = []
        for i in range(transitions):
            t0 = time.perf_counter()
            ref = log.append({"stage": "build", "n": n + i, "pad": PAD})
            history.append(_entry(ref, n + transitions + i))
            bare.append(time.perf_counter() - t0)
        os.utime(log.path)  # a command touched the file: a new ctime
        t0 = time.perf_counter()
        assert log.seal.problem(history) is None
        changed = time.perf_counter() - t0
        log.close()
        per.sort()
        return {"open": opened, "median": statistics.median(per), "p90": per[int(len(per) * 0.9)],
                "bare": statistics.median(bare), "changed": changed}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10,1000,10000,100000")
    parser.add_argument("--transitions", type=int, default=300)
    args = parser.parse_args()
    print(f"{'history':>9}  {'open':>9}  {'check+append median':>20}  {'p90':>8}  {'append alone':>12}  "
          f"{'after a change':>14}")
    for n in (int(s) for s in args.sizes.split(",")):
        r = measure(n, args.transitions)
        print(f"{n:>9,}  {r['open'] * 1e3:>7.2f}ms  {r['median'] * 1e6:>18.1f}us  {r['p90'] * 1e6:>6.1f}us  "
              f"{r['bare'] * 1e6:>10.1f}us  {r['changed'] * 1e3:>12.2f}ms")


if __name__ == "__main__":
    main()
