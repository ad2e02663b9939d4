"""Prompt-cache reads per run on the scripted quickstart (issue 25 item 10).

Runs the quickstart (loop spec-harness-tdd, example_notebooks/quickstart.script.yaml) in-process through the
real engine, Claude worker and SDK against the offline scripted Messages API, then prints, per request kind
(worker turns, gate judges), how many requests carried a cache mark and the tokens written to, read from and
sent past the cache. The scripted API counts a marked prefix (tools + system) as a cache write the first time
and a read after, as the real API does for a prefix past the minimum; it prints figures, asserts nothing.

    python benchmarks/bench_cache.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from odin_magic.engine.orchestrator import Engine  # noqa: E402
from odin_magic.workers.claude import ClaudeWorker  # noqa: E402
from odin_magic.workers.config import Settings  # noqa: E402
from odin_magic.workers.scripted import ScriptedModel, load_script  # noqa: E402

SCRIPT = REPO / "example_notebooks" / "quickstart.script.yaml"
TASK = "a tiny calculator module: add(a, b) and divide(a, b); dividing by zero raises ValueError"
ANSWERS = ("confirm", "1", "raise ValueError", "standard library only, under src/")


def kind_of(body: dict) -> str:
    """A request's kind: a judge's has no tools and asks for a verdict; a worker turn offers tools."""
    return "worker turn" if body.get("tools") else "judge / structured"


def main() -> None:
    os.environ["ODIN_SCRIPT"] = str(SCRIPT)  # the interview's rounds come from the script's interview: section
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        model = ScriptedModel(load_script(SCRIPT), source=str(SCRIPT), project_dir=project)
        engine = Engine(project, worker=ClaudeWorker(Settings.from_env(),
                                                     client_factory=model.client_factory(max_retries=0)))
        state = engine.start("spec-harness-tdd", TASK)
        for answer in ANSWERS:
            if state.status != "awaiting_answer":
                break
            state = engine.answer(answer)
        while state.status == "awaiting_approval":
            state = engine.approve()
        rows: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for body, usage in zip(model.requests, model.usages):  # each request's usage, as the scripted API reported it
            if usage is None:
                continue  # answered with an error: no usage
            row = rows[kind_of(body)]
            row["requests"] += 1
            row["marked"] += "cache_control" in json.dumps(body.get("system", ""))
            for key in ("cache_creation_input_tokens", "cache_read_input_tokens", "input_tokens"):
                row[key] += usage[key]
    print(f"scripted quickstart: run {state.status}, {len(model.requests)} requests")
    print(f"{'kind':<20} {'requests':>8} {'marked':>7} {'cache writes':>13} {'cache reads':>12} {'uncached in':>12}")
    for kind, row in sorted(rows.items()):
        print(f"{kind:<20} {row['requests']:>8} {row['marked']:>7} {row['cache_creation_input_tokens']:>13} "
              f"{row['cache_read_input_tokens']:>12} {row['input_tokens']:>12}")
    total = state.usage.total
    print(f"run total (state.json): cache reads {total.cache_read_input_tokens}, cache writes "
          f"{total.cache_creation_input_tokens}, input {total.input_tokens}, output {total.output_tokens}")


if __name__ == "__main__":
    main()
