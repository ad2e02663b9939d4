"""Checkpoint cost on a 5,000-file project (issue 11: incremental <= 150 ms median, first <= 2 s).

Builds a project of N small text files in nested directories (plus a .gitignore'd
directory that must not be read), takes the first checkpoint, then R incremental
checkpoints each after changing one file, and prints the figures. Also times the
change list (files with line counts) and a restore of one stage's changes.

    .venv/bin/python benchmarks/bench_checkpoints.py [--files 5000] [--rounds 30]

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

from odin_magic.runs.checkpoints import Checkpoints  # noqa: E402


def build(project: Path, files: int) -> None:
    for i in range(files):
        path = project / f"pkg{i % 50:02d}" / f"sub{i % 7}" / f"mod{i:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# module {i}\n" + "".join(f"def f{j}():\n    return {i * j}\n" for j in range(10)))
    (project / ".gitignore").write_text("build/\n")
    (project / "build").mkdir()
    for i in range(500):
        (project / "build" / f"artifact{i}.o").write_bytes(bytes(range(256)) * 8)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="odin-bench-ckpt-") as tmp:
        project = Path(tmp)
        build(project, args.files)
        store = Checkpoints(project)
        t = time.perf_counter()
        first = store.snapshot()
        first_s = time.perf_counter() - t
        incremental, listing = [], []
        previous = first
        for r in range(args.rounds):
            target = project / f"pkg{r % 50:02d}" / f"sub{r % 7}" / f"mod{r:05d}.py"
            target.write_text(target.read_text() + f"# round {r}\n")
            t = time.perf_counter()
            current = store.snapshot()
            incremental.append(time.perf_counter() - t)
            t = time.perf_counter()
            changes = store.changes(previous, current)
            listing.append(time.perf_counter() - t)
            assert len(changes) == 1, changes
            previous = current
        t = time.perf_counter()
        store.restore(first)
        restore_s = time.perf_counter() - t
    ms = lambda xs: f"median {statistics.median(xs) * 1000:.1f} ms, max {max(xs) * 1000:.1f} ms"  # noqa: E731
    print(f"project: {args.files} files (+500 ignored)")
    print(f"first checkpoint:        {first_s * 1000:.0f} ms   (target <= 2000 ms)")
    print(f"incremental checkpoint:  {ms(incremental)}   (target median <= 150 ms; {args.rounds} rounds, one file changed)")
    print(f"change list (+/- lines): {ms(listing)}")
    print(f"restore of {args.rounds} changed files: {restore_s * 1000:.0f} ms")


if __name__ == "__main__":
    main()
