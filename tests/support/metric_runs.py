"""A real metric-gate run, for the tests of what is drawn from its history (charts, status, report, refine).

The measure command is a tiny Python script printing ``p95 latency: <speed.txt> ms`` (plus an offset from
``noise.txt`` cycling over the runs, ``count.txt`` ignored by the checkpoints); the scripted worker of the
``tune`` stage writes ``speed.txt``: one figure per attempt. Driven through the real engine, Claude worker
and SDK against the offline scripted model (:mod:`support.scripted_runs`).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from support.scripted_runs import scripted_engine

MEASURE_PY = textwrap.dedent("""\
    import pathlib
    speed = float(pathlib.Path("speed.txt").read_text())
    noise = pathlib.Path("noise.txt")
    offsets = [float(x) for x in noise.read_text().split()] if noise.exists() else [0.0]
    count = pathlib.Path("count.txt")
    n = int(count.read_text()) if count.exists() else 0
    count.write_text(str(n + 1))
    print(f"p95 latency: {speed + offsets[n % len(offsets)]} ms")
""")
REGEX = r"p95 latency: ([^ ]+) ms"


def make_project(project: Path, speed: str = "182", noise: str | None = None) -> None:
    (project / "speed.txt").write_text(speed + "\n")
    (project / ".gitignore").write_text("count.txt\n")
    (project / "measure.py").write_text(MEASURE_PY)
    if noise is not None:
        (project / "noise.txt").write_text(noise + "\n")


def tune_loop(measure: str, max_iterations: int = 5) -> str:
    """A one-stage loop whose gate measures the p95 latency (``measure``: more of its fields), looping on itself."""
    return f"""
    name: tune
    max_iterations: {max_iterations}
    memory: false
    regression: false
    stages:
      - id: tune
        gate:
          mode: ai
          check: faster
          on_fail: tune
          measure: {{cmd: "python measure.py", regex: '{REGEX}', direction: lower, unit: ms, name: p95 latency,
                     {measure}}}
    """


def tune_script(*speeds: str) -> str:
    """The scripted model: attempt k of ``tune`` writes ``speeds[k]`` into speed.txt."""
    attempts = "\n".join(
        f"      - turns:\n          - tools: [{{write: {{file_path: speed.txt, content: \"{s}\\n\"}}}}]\n"
        f"          - text: tuned" for s in speeds)
    return f"""
stages:
  tune:
    attempts:
{attempts}
default_verdict: {{status: DONE, passed: true, reasons: [scripted]}}
"""


def tuned_run(project: Path, write_loop, speeds=("170", "151"), measure: str = "repeat: 1, target: 160",
              max_iterations: int = 5):
    """Drive a run of the ``tune`` loop to its end; (engine, state)."""
    write_loop(tune_loop(measure, max_iterations))
    engine, _ = scripted_engine(project, tune_script(*speeds))
    return engine, engine.start("tune", "make it faster")
