"""End to end: the built-in spec-harness-tdd loop on a tiny real task, offline, with the scripted model.

The REAL engine, the REAL Claude worker and SDK (over the scripted transport),
real tools, real files and real gate commands: the harness really fails against
the critic's stub, the first implementation really fails the harness (the loop
goes back to implement), and the fixed one really passes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from odin_magic.workers.config import Settings
from odin_magic.engine.orchestrator import Engine
from odin_magic.workers.factory import make_worker
from odin_magic.runs import evidence as gate_evidence
from support import REPO

SCRIPT = REPO / "example_notebooks" / "quickstart.script.yaml"
TASK = "a tiny calculator module: add(a, b) and divide(a, b); dividing by zero raises ValueError"


def harness_exit(run_dir: Path, project: Path, target: Path) -> int:
    env = {**os.environ, "ODIN_PROJECT_DIR": str(project), "ODIN_TARGET_DIR": str(target)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(run_dir / "harness")],
        cwd=project, env=env, capture_output=True, text=True, timeout=120,
    ).returncode


def evidence(run_dir: Path, entry) -> dict:
    return gate_evidence.read(run_dir, entry.evidence)


@pytest.mark.slow
def test_spec_harness_tdd_runs_to_done_with_the_scripted_model(project: Path, monkeypatch):
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(var, raising=False)  # offline: no key needed
    events = []
    worker = make_worker(Settings.from_env(env={}, script=SCRIPT), project)
    engine = Engine(project, worker=worker, listener=events.append)

    state = engine.start("spec-harness-tdd", TASK)
    # the deep interview (the script's `interview:` section): round 0, then one question per round
    assert (state.status, state.current_stage) == ("awaiting_answer", "interview")
    for reply in ("confirm", "1"):
        state = engine.answer(reply)
    assert (state.status, state.interview.rounds) == ("awaiting_answer", 1)
    # as after a kernel restart mid-interview: a new worker and engine answer the rest
    worker = make_worker(Settings.from_env(env={}, script=SCRIPT), project)
    engine = Engine(project, worker=worker, listener=events.append)
    for reply in ("raise ValueError", "standard library only, under src/"):
        state = engine.answer(reply)
    assert state.interview.rounds == 3 and state.interview.ambiguity <= 0.15
    assert (state.status, state.current_stage) == ("awaiting_approval", "interview")
    paused_at = ["interview"]
    # as after a kernel restart: a new worker and engine continue the run (its thread and script position)
    worker = make_worker(Settings.from_env(env={}, script=SCRIPT), project)
    engine = Engine(project, worker=worker, listener=events.append)
    state = engine.approve()
    while state.status == "awaiting_approval":
        paused_at.append(state.current_stage)
        state = engine.approve()
    assert state.status == "done", state.failure_reason
    assert paused_at == ["interview", "plan", "review"]

    run_dir = engine.run_dir(state.run_id)
    results = [(e.stage, e.result) for e in state.history if e.gate != "approved"]
    assert results == [
        ("interview", "pass"), ("plan", "pass"), ("harness-design", "pass"), ("harness-verify", "pass"),
        ("implement", "pass"), ("test", "fail"), ("implement", "pass"), ("test", "pass"), ("review", "pass"),
    ]
    assert state.iterations == {"test": 1} and state.total_iterations == 1

    # the harness really failed against the critic's stub (pytest exit 1, wrapped by `test $? -eq 1`)
    verify = next(e for e in state.history if e.stage == "harness-verify")
    verify_ev = evidence(run_dir, verify)
    assert verify_ev["commands"][0]["exit_code"] == 0
    assert "1 failed, 2 passed" in verify_ev["commands"][0]["stdout_tail"]
    # the first implementation really failed the harness; the loop went back to implement
    test_fail = next(e for e in state.history if e.stage == "test" and e.result == "fail")
    fail_ev = evidence(run_dir, test_fail)
    assert fail_ev["commands"][0]["exit_code"] == 1 and "ZeroDivisionError" in fail_ev["commands"][0]["stdout_tail"]
    assert fail_ev["judged"] is False
    # ... and the fixed one really passed
    test_pass = [e for e in state.history if e.stage == "test" and e.result == "pass"][-1]
    pass_ev = evidence(run_dir, test_pass)
    assert pass_ev["commands"][0]["exit_code"] == 0 and "3 passed" in pass_ev["commands"][0]["stdout_tail"]
    # the harness is proven able to fail: the mutants of src/calc.py make it fail (issue 13)
    assert pass_ev["mutation"]["files"] == ["src/calc.py"] and pass_ev["mutation"]["tried"] >= 5
    assert pass_ev["mutation"]["ratio"] >= 0.6 and pass_ev["mutation"]["passed"]
    # done means verified: each criterion's verify command ran before the last approval
    review_ev = evidence(run_dir, next(e for e in state.history if e.stage == "review" and e.gate != "approved"))
    assert [(c["id"], c["status"]) for c in review_ev["completion"]["criteria"]] == [
        ("AC1", "pass"), ("AC2", "pass"), ("AC3", "pass")]
    assert (run_dir / "report.md").is_file() and "## Acceptance criteria" in (run_dir / "report.md").read_text()

    # the files are real: check them independently of the run
    assert (project / "src" / "calc.py").is_file()
    assert harness_exit(run_dir, project, run_dir / "harness" / "stub") == 1
    assert harness_exit(run_dir, project, project / "src") == 0
    for name in ("spec.md", "interview-log.md", "plan.md", "harness-report.md", "test-report.md", "review.md"):
        assert (run_dir / name).is_file(), name
    assert "1 failed" in (run_dir / "harness-report.md").read_text()
    # spec.md and interview-log.md come from the interview's ledger (not from scripted tool calls)
    spec = (run_dir / "spec.md").read_text()
    assert "## Topology" in spec and "## Convergence" in spec
    assert "[Errors] calc.divide(a, 0) raises ValueError (not ZeroDivisionError)" in spec
    log = (run_dir / "interview-log.md").read_text()
    assert "### Round 3" in log and "A: raise ValueError" in log and "stop condition holds" in log
    assert "3 passed" in (run_dir / "test-report.md").read_text()

    # inline stages continued one thread, across the restart; fresh ones (critic, reviewer) stayed out of it
    thread = json.loads((run_dir / "thread.json").read_text())
    assert [seg["stage"] for seg in thread["segments"]] == [
        "interview", "plan", "harness-design", "implement", "test", "implement", "test"]

    # usage went through the SDK into state.json, per stage and in total
    assert state.usage.total.output_tokens > 0 and state.usage.total.cache_read_input_tokens > 0
    assert set(state.usage.by_stage) >= {"interview", "implement", "review"}
    # the model's text and tool calls were streamed as they happened
    worker_lines = [e for e in events if e.kind == "worker"]
    assert any(e.data.get("kind") == "tool" and e.text.startswith("write ") for e in worker_lines)
    assert any(e.data.get("kind") == "text" and "stub" in e.text for e in worker_lines)
    assert not any(e.data.get("kind") == "tool_refused" for e in worker_lines)
