"""The texts of delivery: a commit subject within 72 characters, pr.md's kill ratio and metric lines."""

from __future__ import annotations

from odin_magic.render.delivery_text import CommitText, FileChange, PrFacts, commit_message, pr_markdown, subject
from odin_magic.runs.state import RunState


def _run(task: str) -> RunState:
    return RunState(run_id="r1", loop="ship", task=task, started_at="2026-01-01T00:00:00", current_stage="build",
                    max_iterations=3, status="done", ended_at="2026-01-01T00:05:00")


def test_a_subject_is_at_most_72_characters_on_one_line():
    text = subject("Implement the change", "a task\nthat goes on " + "and on " * 20)
    assert len(text) <= 72 and text.endswith("…") and "\n" not in text
    assert subject("Build", "short") == "Build: short"


def test_a_message_names_the_files_and_ends_with_the_trailer():
    message = commit_message(_run("fix it"), CommitText("build", "Build", [FileChange("a.py", "M")], ["because"]))
    assert message.splitlines()[0] == "Build: fix it" and "- M a.py" in message and "- because" in message
    assert message.rstrip().splitlines()[-1] == "Odin-Run: r1"


def test_pr_md_tells_the_kill_ratio_and_the_metric():
    text = pr_markdown(PrFacts(_run("fix it"), "odin/r1", [FileChange("a.py", "A")], ["Build: fix it"],
                               gate_commands=[("build", "pytest -q", False)],
                               mutations=[("build", "kill ratio 3/4 = 0.75 (min 0.8)")],
                               metrics=[("tune", "p95 182 ms → 151 ms (−17%) ✅")]))
    assert "- mutation (build): kill ratio 3/4 = 0.75 (min 0.8)" in text
    assert "- ❌ `pytest -q` (gate of build)" in text
    assert "## Metric" in text and "- tune: p95 182 ms → 151 ms (−17%) ✅" in text
    assert "- `a.py` (added)" in text and "- Build: fix it" in text
