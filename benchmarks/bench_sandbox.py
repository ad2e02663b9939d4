"""The sandbox's cost per command (issue 20: target <= 15 ms added per command).

Runs each command R times through ``run_command`` (process group, records, output tails: what a gate
command pays), unsandboxed and under bwrap (:mod:`odin_magic.core.sandbox`), in a temporary project with
``.git/``, ``.odin-loop/`` and one produced run-dir artifact, and prints the medians and the difference.

    .venv/bin/python benchmarks/bench_sandbox.py [--rounds 30]

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

from odin_magic.core import sandbox  # noqa: E402
from odin_magic.core.commands import command_env, run_command  # noqa: E402
from odin_magic.loop.schema import GateCommand  # noqa: E402

COMMANDS = ("true", "python -c pass")


def median_ms(cmd: str, project: Path, env: dict[str, str], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        ev = run_command(GateCommand(cmd=cmd), project, env)
        times.append((time.perf_counter() - started) * 1000)
        if not ev.ok:  # a figure of a failing command would mean nothing
            sys.exit(f"{cmd!r} failed (exit {ev.exit_code}{', timed out' if ev.timed_out else ''}):\n"
                     f"{ev.stderr_tail or ev.stdout_tail}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    rounds = parser.parse_args().rounds
    found = sandbox.probe()
    if not found.works:
        sys.exit(f"bubblewrap cannot run here: {found.reason}")
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        run_dir = project / ".odin-loop" / "runs" / "r1"
        run_dir.mkdir(parents=True)
        (project / ".git").mkdir()
        plain = command_env(project, run_dir, "r1", "bench")
        boxed = command_env(project, run_dir, "r1", "bench",
                            sandbox.stage_policy("bwrap", [(run_dir / "spec.md", False)], False))
        print(f"median of {rounds} runs per command, through run_command ({found.bwrap})")
        for cmd in COMMANDS:
            a = median_ms(cmd, project, plain, rounds)
            b = median_ms(cmd, project, boxed, rounds)
            print(f"  {cmd:<16} plain {a:7.1f} ms   bwrap {b:7.1f} ms   added {b - a:+6.1f} ms")


if __name__ == "__main__":
    main()
