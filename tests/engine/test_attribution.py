"""Attribution (issue 20): scope is about what the stage did, not about what else happened meanwhile.

odin's own output file and a file edited while the stage's tools were idle are "changed outside the run":
never reverted nor blamed on the stage; the same edit made by the stage's bash still is. The REAL engine,
Claude worker, SDK (its agent toolset, bash under odin's shell guard and bubblewrap) against the offline
scripted Messages API, real git checkpoints; the CLI in a subprocess of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx2
import pytest
from anthropic import AsyncAnthropic

from odin_magic.core.sandbox import probe
from odin_magic.runs import evidence as gate_evidence
from odin_magic.workers.claude import ClaudeWorker
from odin_magic.workers.config import Settings
from odin_magic.engine.orchestrator import Engine
from odin_magic.workers.scripted import ScriptedModel, load_script

needs_bwrap = pytest.mark.skipif(not probe().works, reason=f"bubblewrap cannot run here: {probe().reason}")

REVIEW_LOOP = """
name: reviewed
max_iterations: 4
stages:
  - id: review
    agent: reviewer
    consumes: [src/]
    produces: [review.md]
    gate: {mode: ai, check: the review is written}
"""

REVIEW = """
stages:
  review:
    attempts:
      - turns:
          - tools:
              - {tool}
              - write: {{file_path: "{{run_dir}}/review.md", content: "looks fine\\n"}}
          - text: reviewed
      - turns:
          - tools: [{{write: {{file_path: "{{run_dir}}/review.md", content: "looks fine\\n"}}}}]
          - text: reviewed, read only
default_verdict: {{status: DONE, passed: true}}
"""

#: The file system's clock must move this far past a tool's window (attribution allows 5 ms either side).
MARGIN_NS = 20_000_000


def setup_src(project: Path) -> Path:
    (project / "src").mkdir()
    app = project / "src" / "app.py"
    app.write_bytes(b"print('app')\n")
    return app


def fs_now(probe_file: Path) -> int:
    """The file system's clock, as a file changed now would show it."""
    probe_file.touch()
    return probe_file.stat().st_ctime_ns


def past(probe_file: Path, ns: int) -> None:
    """Return once the file system's clock has moved ``MARGIN_NS`` past ``ns`` (no fixed sleep: the clock's ticks)."""
    while fs_now(probe_file) <= ns + MARGIN_NS:
        pass


def engine_editing_while_thinking(project: Path, script: str, at: int, edit) -> tuple[Engine, ScriptedModel]:
    """The engine with the scripted model, whose ``at``-th request (1-based) first runs ``edit`` (someone else's
    edit while the model thinks: no tool of the stage is active)."""
    path = project.parent / "script.yaml"
    path.write_text(textwrap.dedent(script), encoding="utf-8")
    model = ScriptedModel(load_script(path), source=str(path), project_dir=project)
    seen = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        if len(seen) == at:
            edit()
        return model.handle(request)

    def client() -> AsyncAnthropic:
        return AsyncAnthropic(api_key="scripted-offline", base_url="http://scripted.invalid", max_retries=0,
                              http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handle)))

    return Engine(project, worker=ClaudeWorker(Settings.from_env(env={}), client_factory=client)), model


def someone_appends(project: Path, path: Path, text: str):
    clock = project.parent / "clock-probe"

    def edit() -> None:
        past(clock, fs_now(clock))  # the stage's last tool call is well over
        with path.open("a") as f:
            f.write(text)
        past(clock, path.stat().st_ctime_ns)  # and its next one starts well after

    return edit


def evidence(engine: Engine, state, entry) -> dict:
    return gate_evidence.read(engine.run_dir(state.run_id), entry.evidence)


def test_odins_own_output_file_in_the_project_is_not_the_stages_change(project, write_loop):
    """`odin run ... > run.log`: run.log changes during every stage; it is never reverted, and it is complete."""
    write_loop(REVIEW_LOOP)
    setup_src(project)
    script = project.parent / "script.yaml"
    script.write_text(textwrap.dedent(REVIEW.format(tool='read: {file_path: "src/app.py"}')), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(ODIN_SCRIPT=str(script), PYTHONUNBUFFERED="1")  # each line in run.log as it is printed
    with (project / "run.log").open("w") as out:
        proc = subprocess.run([sys.executable, "-m", "odin_magic", "run", "reviewed", "--task", "t",
                               "--project", str(project)], stdout=out, stderr=subprocess.PIPE, text=True,
                              env=env, timeout=300)
    log = (project / "run.log").read_text()
    assert proc.returncode == 0, proc.stderr + log
    assert "outside its scope" not in log and "done" in log.splitlines()[-1]
    (run,) = (project / ".odin-loop" / "runs").iterdir()
    state = json.loads((run / "state.json").read_text())
    assert state["status"] == "done" and [h["result"] for h in state["history"]] == ["pass"]
    ev = gate_evidence.read(run, state["history"][0]["evidence"])
    assert ev["reverted"] == []
    assert [(c["path"], c.get("outside")) for c in ev["changes"]] == [
        ("run.log", "changed outside the run: odin's own output")]


def test_a_file_edited_while_the_model_thinks_is_kept_and_shown_as_changed_outside_the_run(project, write_loop):
    write_loop(REVIEW_LOOP)
    app = setup_src(project)
    engine, _ = engine_editing_while_thinking(
        project, REVIEW.format(tool='read: {file_path: "src/app.py"}'), at=2,
        edit=someone_appends(project, app, "# an editor's save\n"))
    state = engine.start("reviewed", "t")
    assert app.read_text() == "print('app')\n# an editor's save\n"  # not reverted
    assert state.status == "done" and [e.result for e in state.history] == ["pass"]
    ev = evidence(engine, state, state.history[0])
    assert ev["reverted"] == []
    (change,) = ev["changes"]
    assert change["path"] == "src/app.py" and change["outside"].startswith("changed outside the run")


@needs_bwrap
def test_the_same_edit_made_by_the_stages_bash_is_still_reverted_and_fails_the_gate(project, write_loop):
    """The regression guard: an idle-time edit is kept, while the stage's bash edit of another file is not."""
    write_loop(REVIEW_LOOP)
    app = setup_src(project)
    (project / "src" / "other.py").write_text("x = 1\n")
    engine, _ = engine_editing_while_thinking(
        project, REVIEW.format(tool='bash: {command: "echo y >> src/other.py"}'), at=2,
        edit=someone_appends(project, app, "# an editor's save\n"))
    state = engine.start("reviewed", "t")
    first = state.history[0]
    assert first.result == "fail"
    assert "reviewer changed src/other.py (modified) outside its scope" in first.reason and "app.py" not in first.reason
    assert (project / "src" / "other.py").read_text() == "x = 1\n"  # reverted
    assert app.read_text().endswith("# an editor's save\n")  # kept
    ev = evidence(engine, state, first)
    assert ev["reverted"] == ["src/other.py"]
    assert {c["path"]: c.get("outside") is not None for c in ev["changes"]} == {"src/app.py": True,
                                                                                 "src/other.py": False}


@needs_bwrap
def test_an_edit_while_a_process_of_the_stages_bash_still_runs_is_the_stages(project, write_loop):
    """A bash command that leaves a process running (which may write at any time) keeps the stage active."""
    write_loop(REVIEW_LOOP)
    app = setup_src(project)
    engine, _ = engine_editing_while_thinking(
        project, REVIEW.format(tool='bash: {command: "sleep 120 >/dev/null 2>&1 &"}'), at=2,
        edit=someone_appends(project, app, "# written by what bash left running?\n"))
    state = engine.start("reviewed", "t")
    first = state.history[0]
    assert first.result == "fail" and "reviewer changed src/app.py (modified) outside its scope" in first.reason
    assert app.read_text() == "print('app')\n"  # reverted


BUILD_LOOP = """
name: built
max_iterations: 4
stages:
  - id: build
    produces: [src/new.py]
    gate: {mode: ai, check: the module is written}
"""

BLOCKED_BUILD = """
stages:
  build:
    - turns:
        - tools: [{write: {file_path: src/new.py, content: "x = 1\\n"}}]
        - text: wrote src/new.py
judge:
  build:
    - {status: BLOCKED, passed: false, blocking: ["the task contradicts itself"]}
"""


def test_a_blocked_judge_undoes_the_stage_but_not_an_edit_made_outside_the_run(project, write_loop):
    """BLOCKED reverts the stage's work to its checkpoint; a file someone else edited meanwhile is not the stage's."""
    write_loop(BUILD_LOOP)
    app = setup_src(project)
    engine, _ = engine_editing_while_thinking(project, BLOCKED_BUILD, at=2,
                                              edit=someone_appends(project, app, "# an editor's save\n"))
    state = engine.start("built", "t")
    assert state.status == "blocked" and state.blocked.kind == "judge"
    assert not (project / "src" / "new.py").exists()  # the stage's work, undone
    assert app.read_text() == "print('app')\n# an editor's save\n"  # the user's edit, kept
    assert "reverted: 1 file(s)" in state.blocked.reason


def test_odin_diff_names_a_file_changed_outside_the_run(project, write_loop):
    """The stage's diff still shows the file (the tree changed), marked as not the stage's work, in text and HTML."""
    from odin_magic.render.diff_view import DiffDisplay

    write_loop(REVIEW_LOOP)
    app = setup_src(project)
    engine, _ = engine_editing_while_thinking(
        project, REVIEW.format(tool='read: {file_path: "src/app.py"}'), at=2,
        edit=someone_appends(project, app, "# an editor's save\n"))
    state = engine.start("reviewed", "t")
    shown = engine.diff()
    (f,) = shown.files
    assert f.change.path == "src/app.py" and f.outside.startswith("changed outside the run")
    text = shown.text()
    assert "not the stage's work (its gate found them changed outside the run):" in text
    assert "src/app.py" in text and "+# an editor's save" in text
    assert "changed outside the run" in DiffDisplay(shown).html()
    assert state.status == "done"
