"""A report for every run (issue 13 item 6): report.md and report.ipynb when a run ends, however it ends."""

from __future__ import annotations

import base64
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from odin_magic.engine.orchestrator import Engine
from odin_magic.runs.state import DryOptions

SECRET = "sk-ant-report-test-0123456789"

LOOP = """
name: reported
version: 3
max_iterations: 3
stages:
  - id: build
    produces: [src/]
    gate: {mode: ai, check: code exists}
  - id: test
    consumes: [src/]
    produces: [test-report.md]
    gate: {mode: ai, check: the tests pass, on_fail: build}
  - id: review
    produces: [review.md]
    gate: {mode: ai+human, check: no blocking finding}
"""


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)


def run_dir(project: Path, state) -> Path:
    return project / ".odin-loop" / "runs" / state.run_id


def test_a_run_that_ends_done_writes_both_reports_and_the_notebook_runs(project: Path, write_loop):
    write_loop(LOOP)
    state = Engine(project).start("reported", f"a tiny calculator (key {SECRET})",
                                  dry=DryOptions(gates=["test:fail"], approve_all=True))
    assert state.status == "done"
    d = run_dir(project, state)
    md = (d / "report.md").read_text()
    assert md.startswith(f"# Run {state.run_id}: reported\n")
    assert "- **loop**: reported v3 (dry run)" in md and "- **task**: a tiny calculator (key [redacted" in md
    # the path, with the loopback and its reason
    assert "| 2 | test | fail | ai |  | dry run: scripted failure (test:fail) | build |" in md
    assert "## Time, tokens and cost per stage" in md and "| **total** |" in md
    changed = md.split("## Files changed per stage")[1].split("##")[0]
    assert "- **build** (" in changed and "`src/" in changed and "(added, +" in changed
    assert "![run.png](report/run.png)" in md and (d / "report" / "run.png").read_bytes().startswith(b"\x89PNG")
    nb = nbformat.read(d / "report.ipynb", as_version=4)
    nbformat.validate(nb)
    charts = [c for c in nb.cells if c.get("attachments")]
    assert base64.b64decode(charts[0]["attachments"]["run.png"]["image/png"]).startswith(b"\x89PNG")
    NotebookClient(nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(d)}}).execute()
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert f"{state.run_id}: done at review" in printed
    for f in d.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f


@pytest.mark.parametrize("how", ["failed", "abandoned", "paused"])
def test_every_run_end_writes_a_report_and_a_pause_does_not(project: Path, write_loop, how: str):
    write_loop(LOOP.replace("max_iterations: 3", "max_iterations: 1"))
    engine = Engine(project)
    gates = ["test:fail", "test:fail"] if how == "failed" else []
    state = engine.start("reported", "t", dry=DryOptions(gates=gates))
    if how == "abandoned":
        state = engine.abandon()
    d = run_dir(project, state)
    if how == "paused":
        assert state.status == "awaiting_approval" and not (d / "report.md").exists()
        return
    assert state.status == how
    md = (d / "report.md").read_text()
    assert f"- **status**: {how}" in md
    if how == "failed":
        assert "- **why it failed**: total_iterations 2 exceeded max_iterations 1" in md
    assert (d / "report.ipynb").is_file()


# -- issue 21, item 7: the notebook from any directory, an offline run's cost said to be an estimate -----------


def execute(nb_path: Path, cwd: Path) -> str:
    """Execute a notebook with the kernel started in ``cwd``; what its code cells printed."""
    nb = nbformat.read(nb_path, as_version=4)
    NotebookClient(nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(cwd)}}).execute()
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_the_report_notebook_runs_from_any_directory(project: Path, write_loop, tmp_path: Path):
    write_loop(LOOP)
    state = Engine(project).start("reported", "t", dry=DryOptions(gates=["test:fail"], approve_all=True))
    d = run_dir(project, state)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    printed = execute(d / "report.ipynb", elsewhere)
    assert f"{state.run_id}: done at review, 1/3 loopbacks (from {d.resolve() / 'state.json'})" in printed
    assert "#2" in printed and "dry run: scripted failure (test:fail)" in printed

    # the notebook alone, its run gone: the snapshot written with it
    (elsewhere / "report.ipynb").write_bytes((d / "report.ipynb").read_bytes())
    (d / "state.json").rename(d / "state.json.away")
    printed = execute(elsewhere / "report.ipynb", elsewhere)
    assert f"{state.run_id}: done at review, 1/3 loopbacks (from the snapshot taken when" in printed
    assert "test fail dry run: scripted failure (test:fail)" in printed


def test_an_offline_runs_cost_in_the_report_is_an_estimate(project: Path, write_loop):
    from odin_magic.workers.config import Settings
    from odin_magic.workers.factory import make_worker

    write_loop("""
    name: offline
    max_iterations: 1
    stages:
      - id: build
        produces: [docs/]
        gate: {mode: ai, check: it exists}
    """)
    script = project.parent / "script.yaml"
    script.write_text(
        "stages:\n"
        "  build:\n"
        "    - tools: [{write: {file_path: docs/out.md, content: \"# out\\\\n\"}}]\n"
        "    - text: done\n"
        "default_verdict: {status: DONE, passed: true}\n")
    engine = Engine(project, worker=make_worker(Settings.from_env(env={}, script=script), project))
    state = engine.start("offline", "t")
    assert state.status == "done", state.failure_reason
    assert state.usage.total.offline_usd > 0
    md = (run_dir(project, state) / "report.md").read_text()
    table = md.split("## Time, tokens and cost per stage")[1].split("\n## ")[0]
    assert "| cost (USD; ≈ an estimate where offline) |" in table
    assert f"| ≈ {state.usage.total.offline_usd:.4f} offline |" in table
    assert "if run on Claude; nothing spent" in table and "an estimate" in table


def test_a_dry_runs_report_says_nothing_was_spent(project: Path, write_loop):
    write_loop(LOOP)
    state = Engine(project).start("reported", "t", dry=DryOptions(approve_all=True))
    md = (run_dir(project, state) / "report.md").read_text()
    assert "| cost (USD) |" in md and "Cost: nothing spent — a dry run calls no model." in md
