"""The interview notebook runs headlessly, its answers in `%odin answer` cells, and resumes after a kernel restart
(answering through the question panel: tests/test_notebook_kernel.py)."""

from __future__ import annotations

import json

import pytest

from support.nbtools import INTERVIEW_SETUP, Kernel, execute_notebook, outputs_text, without_model_key, write_interview_project

pytestmark = pytest.mark.slow


def test_the_interview_notebook_runs_headlessly(tmp_path, monkeypatch):
    without_model_key(monkeypatch)
    nb = execute_notebook("interview.ipynb", tmp_path, extra=("interview.script.yaml",))
    run_dir = next((tmp_path / ".odin-loop" / "runs").iterdir())
    state = json.loads((run_dir / "state.json").read_text())
    assert state["status"] == "done"
    assert state["interview"] == {"threshold": 0.15, "rounds": 6, "ambiguity": 0.145,
                                  "topology": ["Ingestion", "Review UI", "Export"]}
    assert [(e["stage"], e["gate"]) for e in state["history"]] == [("interview", "ai-pending"), ("interview", "approved")]
    log = (run_dir / "interview-log.md").read_text()
    assert "- C4 Notifications  — deferred (out of scope this run)" in log
    assert "challenge: contrarian →" in log and "the export stays" in log
    assert "clarity cap .85 (auto-answer only): Review UI.constraints" in log
    assert "ambiguity:  1→1.00  2→1.00  3→.25  4→.25  5→.17  6→.14   (target .15, reached @ round 6)" in log
    spec = (run_dir / "spec.md").read_text()
    assert "- Up to 1,000 rows per file; larger files are refused with a message" in spec.split("## Assumptions")[1]
    shown = "\n".join(outputs_text(nb))
    assert "Round 3 | Component: Export | Challenge: contrarian" in shown
    assert "Round 0 | Topology" in shown


def test_an_interview_resumes_at_its_round_after_a_kernel_restart(tmp_path, monkeypatch):
    write_interview_project(tmp_path, monkeypatch)
    k = Kernel(tmp_path)
    try:
        k.execute(INTERVIEW_SETUP)
        k.execute('%odin run talk --task "review bank CSV imports" --wait')
        k.execute("%odin answer defer Notifications; confirm --wait")
        k.execute("%odin answer 1 --wait")
        k.restart()
        k.execute(INTERVIEW_SETUP)
        shown = k.execute("%odin status")
        out = k.execute('%odin answer "A person approves or rejects each row" --wait')
    finally:
        k.shutdown()

    def text(msgs):
        return "".join(m["content"].get("text", "") + m["content"].get("data", {}).get("text/plain", "")
                       for m in msgs)

    assert "Round 2 | Component: Review UI | Targeting: goal" in text(shown)
    assert "Round 3 | Component: Export" in text(out)
    run_dir = next((tmp_path / ".odin-loop" / "runs").iterdir())
    state = json.loads((run_dir / "state.json").read_text())
    assert state["status"] == "awaiting_answer" and state["interview"]["rounds"] == 2
