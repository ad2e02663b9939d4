"""%odin / %%odin in a real IPython shell (no kernel, no widgets: the terminal fallback)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from support.nbtools import write_tiny_loop
from odin_magic.render.charts import (
    ChartHandle, InterviewRound, interview_convergence, loop_diagram, png_bytes, run_chart
)
from odin_magic.render.displays import RunsDisplay, StatusDisplay, stage_checklist
from odin_magic.notebook.magics import OdinMagics, notebook_dir

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def project(ip, tmp_path):
    write_tiny_loop(tmp_path)
    ip.run_line_magic("odin", f"config project={tmp_path}")
    yield tmp_path
    magics = ip.magics_manager.registry["OdinMagics"]
    runner = magics.runner()
    runner.stop()
    runner.wait(30)
    magics.project = ""


def odin(ip, line: str):
    return ip.run_line_magic("odin", line)


def cell(ip, line: str, body: str):
    return ip.run_cell_magic("odin", line, body)


def state_json(project: Path) -> dict:
    runs = sorted((project / ".odin-loop" / "runs").iterdir())
    return json.loads((runs[-1] / "state.json").read_text())


# -- registration, help, parsing -------------------------------------------------------


def test_load_and_unload_register_and_remove_the_magics(ip):
    assert ip.find_line_magic("odin") is not None
    assert ip.find_cell_magic("odin") is not None
    ip.run_line_magic("unload_ext", "odin_magic")
    assert ip.find_line_magic("odin") is None
    assert ip.find_cell_magic("odin") is None
    assert not any(isinstance(c, OdinMagics) for c in ip.configurables)
    ip.run_line_magic("load_ext", "odin_magic")
    assert ip.find_line_magic("odin") is not None


def test_help_lists_every_command_and_the_docstring_is_the_usage(ip):
    text = repr(odin(ip, "help"))
    for command in ("run", "step", "status", "list", "runs", "approve", "revise", "answer", "abandon", "stop",
                    "wait", "validate", "simulate", "show", "config", "help", "%%odin loop NAME"):
        assert command in text
    doc = ip.find_line_magic("odin").__doc__
    assert "--approve-all" in doc and "%%odin task" in doc
    assert "--stage-delay" in repr(odin(ip, "help run"))
    assert "--gates" in repr(odin(ip, "run --help"))


@pytest.mark.parametrize("line, words", [
    ("frob", "unknown command 'frob'; `%odin help` lists the commands"),
    ("stauts", "unknown command 'stauts' (did you mean 'status'?)"),  # as the terminal's odin says it
    ("run --bogus", "unrecognized arguments"),
    ("run tiny --task 'unclosed", "No closing quotation"),
    ("step", "required"),
    ("config nonsense", "KEY=VALUE"),
    ("config max_tokens=lots", "whole number"),
    ("config model=", "model= needs a value"),
    ("config model=claude-other script=", "script= needs a value"),
    ("help frob", "no command"),
])
def test_bad_arguments_are_one_line_usage_errors(ip, project, line, words):
    with pytest.raises(UsageError) as info:
        odin(ip, line)
    assert words in str(info.value)
    assert "\n" not in str(info.value).strip()


def test_user_mistakes_are_usage_errors_with_a_hint(ip, project):
    with pytest.raises(UsageError) as info:
        odin(ip, "approve")
    assert "no active run" in str(info.value) and "hint" in str(info.value)
    with pytest.raises(UsageError, match="no loop named"):
        odin(ip, "run no-such-loop --task x --dry")
    with pytest.raises(UsageError, match="needs a task"):
        odin(ip, "run tiny --dry")
    with pytest.raises(UsageError, match="STAGE:fail"):
        odin(ip, "run tiny --task x --dry --gates review:pass")
    assert not (project / ".odin-loop" / "runs").exists() or not any((project / ".odin-loop" / "runs").iterdir())



def test_an_engine_hint_names_the_notebook_command(ip, project):
    """The engine words its hints for the terminal (`odin run`); in a notebook they name `%odin run`, and a
    command only the terminal has (`odin schedule`) stays as it is."""
    from odin_magic.notebook.parser import in_notebook

    for line in ("diff", "revert", "deliver"):
        with pytest.raises(UsageError) as info:
            odin(ip, line)
        text = str(info.value)
        assert "%odin run LOOP" in text and "`odin " not in text, text
    assert in_notebook("`odin runs` lists them; `odin schedule x` prints one; odin-magic; %odin run") == (
        "`%odin runs` lists them; `odin schedule x` prints one; odin-magic; %odin run")
    assert in_notebook("odin validate-manifest a.yaml") == "odin validate-manifest a.yaml"


# -- driving a run ----------------------------------------------------------------------


def test_run_to_the_pause_then_approve_to_done(ip, project, capsys):
    shown = odin(ip, 'run tiny --task "notes about   spaces" --dry --gates review:fail --wait')
    state = state_json(project)
    assert state["task"] == "notes about   spaces"  # shell-style quoting kept the words together
    assert state["status"] == "awaiting_approval" and state["current_stage"] == "review"
    assert state["iterations"] == {"review": 1}
    text = repr(shown)
    assert "⏸ review" in text and "✅ write" in text and "⬜ finish" in text
    printed = capsys.readouterr().out
    assert "review gate failed" in printed and "awaiting approval" in printed  # the text live view

    assert "awaiting_approval" in repr(odin(ip, "status"))
    done = odin(ip, "approve --wait")
    assert "✅ finish" in repr(done)
    state = state_json(project)
    assert state["status"] == "done"
    assert [(e["stage"], e["result"], e["gate"]) for e in state["history"]] == [
        ("write", "pass", "ai"), ("review", "fail", "ai-pending"), ("write", "pass", "ai"),
        ("review", "pass", "ai-pending"), ("review", "pass", "approved"), ("finish", "pass", "ai"),
    ]
    assert "done" in repr(odin(ip, "runs"))


def test_run_without_options_on_a_paused_run_approves_it(ip, project):
    odin(ip, "run tiny --task t --dry --wait")
    assert state_json(project)["status"] == "awaiting_approval"
    odin(ip, "run --wait")
    assert state_json(project)["status"] == "done"


def test_revise_line_and_cell_rerun_the_paused_stage(ip, project):
    odin(ip, "run tiny --task t --dry --wait")
    odin(ip, 'revise "cover the edge cases" --wait')
    cell(ip, "revise --wait", "Also:\n- mention the units\n")
    with pytest.raises(UsageError, match="revise \\[--wait\\]"):
        cell(ip, "revise now", "x")
    state = state_json(project)
    assert state["status"] == "awaiting_approval"
    reviews = [e for e in state["history"] if e["stage"] == "review"]
    assert len(reviews) == 3
    log = sorted((project / ".odin-loop" / "runs").iterdir())[-1] / "events.jsonl"
    assert "cover the edge cases" in log.read_text() and "mention the units" in log.read_text()


def test_step_abandon_and_task_cell(ip, project):
    odin(ip, "run tiny --task t --dry --wait")
    with pytest.raises(UsageError, match="waits for your approval of stage review"):
        odin(ip, "step write --wait")  # a step would skip the approval
    state = state_json(project)
    assert state["current_stage"] == "review" and state["history"][-1]["stage"] == "review"
    assert "abandoned" in repr(odin(ip, "abandon"))
    assert state_json(project)["status"] == "abandoned"

    cell(ip, "task tiny --dry --approve-all", "Write notes\nabout two lines\n")
    odin(ip, "wait")
    state = state_json(project)
    assert state["task"] == "Write notes\nabout two lines" and state["status"] == "done"
    with pytest.raises(UsageError, match="empty"):
        cell(ip, "task tiny --dry", "   \n")


def test_stop_ends_the_run_after_the_current_step_and_run_resumes_it(ip, project):
    magics = ip.magics_manager.registry["OdinMagics"]
    runner = magics.runner()
    started = threading.Event()
    runner.fanout.subscribe(lambda e: e.kind == "stage_started" and started.set())
    odin(ip, "run tiny --task t --dry --stage-delay 0.4")
    assert started.wait(30)
    assert "stop requested" in repr(odin(ip, "stop"))
    odin(ip, "wait")
    state = state_json(project)
    assert state["status"] == "running"  # stopped, resumable
    assert len(state["history"]) <= 1
    odin(ip, "run --wait")
    assert state_json(project)["status"] == "awaiting_approval"
    assert "nothing is driving" in repr(odin(ip, "stop"))


def test_a_second_run_is_refused_while_one_is_active(ip, project):
    odin(ip, "run tiny --task t --dry --wait")
    with pytest.raises(UsageError, match="still active"):
        odin(ip, "run tiny --task another --dry")


def test_answer_is_a_clear_seam_until_an_interview_waits(ip, project):
    odin(ip, "run tiny --task t --dry --wait")
    with pytest.raises(UsageError, match="no interview question"):
        odin(ip, "answer yes please")


# -- loops: list, validate, %%odin loop, show, simulate ---------------------------------


def test_list_shows_project_and_builtin_loops(ip, project):
    listing = odin(ip, "list")
    text = repr(listing)
    assert "tiny" in text and "project" in text and "spec-harness-tdd" in text
    lines = text.splitlines()
    at = next(n for n, line in enumerate(lines) if line.startswith("tiny "))  # `odin list`'s text
    assert lines[at].split() == ["tiny", "3", "stages", "project", "valid"]
    assert lines[at + 1].strip() == "A tiny loop for tests."
    assert "<table" in listing._repr_html_()


BAD_LOOP = """\
name: mine
version: 1
description: broken on purpose
max_iterations: 3
stages:
  - id: a
    gate: {mode: ai, check: ok}
  - id: b
    gate:
      mode: ai
      check: fine
      on_fial: a
"""


def test_loop_cell_saves_a_valid_loop_and_reports_errors_at_the_cells_lines(ip, project):
    target = project / ".odin-loop" / "loops" / "mine.yaml"
    shown = cell(ip, "loop mine", BAD_LOOP)
    assert not target.exists()
    text = repr(shown)
    assert "cell %%odin loop mine:12:" in text and "on_fial" in text  # the cell's own line numbers
    assert "nothing saved" in text and "saved to" not in text

    good = BAD_LOOP.replace("on_fial", "on_fail")
    shown = cell(ip, "loop mine", good)
    assert target.read_text() == good
    assert "saved to .odin-loop/loops/mine.yaml" in repr(shown)
    assert "loop 'mine' ok (0 error(s)" in repr(odin(ip, "validate"))
    with pytest.raises(UsageError, match="no such file"):
        odin(ip, "validate missing.yaml")
    (project / "bad.yaml").write_text(BAD_LOOP)
    assert "1 error" in repr(odin(ip, "validate bad.yaml"))
    outside = project.parent / "elsewhere.yaml"  # a project loop that is a link out of the project
    outside.write_text(good.replace("name: mine", "name: theirs"))
    (project / ".odin-loop" / "loops" / "theirs.yaml").symlink_to(outside)
    shown = odin(ip, "validate")
    assert not shown.ok and "mine.yaml: loop 'mine' ok" in shown.text()
    assert "theirs.yaml" in shown.text() and "is a symbolic link to" in shown.text()
    assert "cannot be read" in shown.html() and "symbolic link" in shown.html()


def test_show_draws_the_loop_and_simulate_prints_its_path(ip, project):
    with capture_output() as captured:
        summary = odin(ip, "show tiny")
    pngs = [o.data["image/png"] for o in captured.outputs if "image/png" in o.data]
    assert pngs, "show displays a PNG"
    assert "on fail: back to write (stage 1)" in repr(summary) and "review --fail--> write" in repr(summary)
    sim = odin(ip, "simulate tiny --gates review:fail")
    assert "write → review → write → review → finish" in repr(sim)
    assert "done" in repr(sim)


# -- settings and the project directory --------------------------------------------------


def test_config_and_traitlets(ip, project):
    ip.run_line_magic("config", 'OdinMagics.model = "claude-test-model"')
    assert "claude-test-model" in repr(odin(ip, "config"))
    odin(ip, "config model=claude-other max_tokens=1234")
    text = repr(odin(ip, "config"))
    assert "claude-other" in text and "1234" in text
    assert str(project) in text
    magics = ip.magics_manager.registry["OdinMagics"]
    with pytest.raises(UsageError, match="model=default goes back to the default"):
        odin(ip, "config model=")
    assert magics.model == "claude-other"  # refused: nothing changed
    odin(ip, "config model=default max_tokens=default")
    assert magics.model is None and magics.max_tokens is None
    magics.model = None
    magics.max_tokens = None
    with pytest.raises(UsageError, match="does not exist"):
        odin(ip, "config project=/no/such/dir")


def test_config_record_names_the_recording_file_taken_from_the_project(ip, project):
    magics = ip.magics_manager.registry["OdinMagics"]
    assert "(off)" in repr(odin(ip, "config"))
    odin(ip, "config record=run.recording.yaml")
    try:
        assert magics.settings().record == project / "run.recording.yaml"
        assert str(project / "run.recording.yaml") in repr(odin(ip, "config"))
    finally:
        odin(ip, "config record=default")
    assert magics.settings().record is None


def test_notebook_dir_comes_from_the_jupyter_session_path(tmp_path, monkeypatch):
    class Shell:
        user_ns = {"__session__": str(tmp_path / "analysis.ipynb")}

    assert notebook_dir(Shell()) == tmp_path.resolve()
    Shell.user_ns = {}
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert notebook_dir(Shell()) == tmp_path.resolve()


# -- display objects and charts (terminal fallback vs HTML) ---------------------------


def test_status_display_renders_html_and_text(ip, project):
    odin(ip, "run tiny --task '<b>bold</b>' --dry --gates review:fail --wait")
    runner = ip.magics_manager.registry["OdinMagics"].runner()
    state = runner.status()
    loop = runner.engine.loop_for(state.run_id)
    shown = StatusDisplay(state, loop)
    html = shown._repr_html_()
    assert "&lt;b&gt;bold" in html and "<table" in html and ">‖</span>" in html and "⏸" not in html
    assert "<" not in repr(shown).replace("<b>bold</b>", "")
    assert [r.mark for r in stage_checklist(state, loop)] == ["✅", "⏸", "⬜"]
    assert "%odin run LOOP" in repr(RunsDisplay([])) and "%odin run LOOP" in RunsDisplay([])._repr_html_()
    runs = RunsDisplay([state])
    assert state.run_id in repr(runs) and state.run_id in runs._repr_html_()


def test_status_tells_the_interview_below_threshold_from_one_that_may_stop(ip, project):
    from odin_magic.runs.state import InterviewSummary

    odin(ip, "run tiny --task t --dry --gates review:fail --wait")
    state = ip.magics_manager.registry["OdinMagics"].runner().status()

    def html_with(rounds, ambiguity):
        iv = InterviewSummary(threshold=0.15, rounds=rounds, ambiguity=ambiguity, topology=["A"])
        return StatusDisplay(state.model_copy(update={"interview": iv}))._repr_html_()

    assert "no round scored yet" in html_with(0, 1.0)
    assert "after round 1: ambiguity 0.60" in html_with(1, 0.6) and "not reached yet" in html_with(1, 0.6)
    early = html_with(2, 0.1)  # below the threshold, but round 3 is still asked
    assert "converged" not in early and "may stop from round 3" in early
    assert "may stop" not in html_with(3, 0.1) and "below threshold 0.15" in html_with(3, 0.1)


def test_status_text_shows_the_waiting_question_once(ip, project):
    odin(ip, "run tiny --task t --dry --gates review:fail --wait")
    state = ip.magics_manager.registry["OdinMagics"].runner().status()
    text = repr(StatusDisplay(state, question="Round 1 | What must divide(a, 0) do?"))
    assert text.count("What must divide(a, 0) do?") == 1 and "waiting for your answer" in text


def test_status_of_a_paused_run_draws_its_charts_at_once(ip, project):
    odin(ip, "run tiny --task t --dry --gates review:fail --wait")
    odin(ip, "config widgets=True")
    try:
        with capture_output() as captured:
            odin(ip, "status")  # a fresh view of a run that waits: no drive will fill a placeholder
    finally:
        odin(ip, "config widgets=False")
    assert any("image/png" in o.data for o in captured.outputs)
    assert not any("charts appear" in str(o.data.get("text/html", "")) for o in captured.outputs)


def statuses_shown(captured) -> int:
    """How many times a cell's outputs show the run's text status (its text/plain; updates re-draw a display)."""
    return sum(str(o.data.get("text/plain", "")).startswith(("run      ", "odin: the run is starting"))
               for o in captured.outputs if not o.update)


def test_a_cell_with_a_live_view_shows_the_status_once(ip, project):
    """Issue 18 item 10: the live view's text/plain is the status; the cell returns no second one."""
    magics = ip.magics_manager.registry["OdinMagics"]
    odin(ip, "config widgets=True")
    try:
        with capture_output() as captured:
            returned = odin(ip, "run tiny --task t --dry --gates review:fail --wait")
        assert returned is None and statuses_shown(captured) == 1
        first = magics.runner().view
        with capture_output() as captured:
            returned = odin(ip, "status")  # at a pause: the live view, with its panel
        assert returned is None and statuses_shown(captured) == 1
        assert first.frozen is not None and "(continued in a later cell)" in first.frozen["text/plain"]
        history = odin(ip, "status --history")  # the whole history: the status, no live view
        assert isinstance(history, StatusDisplay) and history.history_tail == 0
        last = magics.runner().view
        with capture_output() as captured:
            returned = odin(ip, "approve --wait")
        assert returned is None and last.frozen is not None  # the run ended: the view is static
        assert "done" in magics.runner().view.frozen["text/plain"]
    finally:
        odin(ip, "config widgets=False")
    assert isinstance(odin(ip, "status"), StatusDisplay)  # no widgets: the status, as before


def test_a_wait_whose_cell_shows_no_live_view_returns_the_status(ip, project):
    """A step that reopens a failed run shows no view of its own: the earlier (frozen) view is not this cell's."""
    from support.nbtools import TINY_LOOP

    (project / ".odin-loop" / "loops" / "fails.yaml").write_text(
        TINY_LOOP.replace("name: tiny", "name: fails").replace("max_iterations: 5", "max_iterations: 5\nmax_repeats: 9"))
    odin(ip, "config widgets=True")
    try:
        with capture_output():
            odin(ip, f"run fails --task t --dry --approve-all --gates {','.join(['write:fail'] * 6)} --wait")
            shown = odin(ip, "step review --wait")
    finally:
        odin(ip, "config widgets=False")
    assert isinstance(shown, StatusDisplay) and shown.state.status == "awaiting_approval"


def test_a_retired_view_s_charts_make_way_and_the_last_view_keeps_them(ip, project):
    magics = ip.magics_manager.registry["OdinMagics"]
    odin(ip, "config widgets=True")
    try:
        with capture_output():
            odin(ip, "run tiny --task t --dry --gates review:fail --wait")
            earlier = list(magics.runner().charts)
            odin(ip, "approve --wait")
            final = list(magics.runner().charts)
            odin(ip, "runs")
    finally:
        odin(ip, "config widgets=False")
    assert earlier and all(c.retired and c.png is None for c in earlier)
    assert final and all(not c.retired and c.png.startswith(PNG) for c in final)


def test_mistakes_in_a_cell_are_one_line_never_a_traceback(ip, project):
    for line in ("%odin approve", "%odin run nosuch --task x", "%odin show nosuch", "%odin bogus"):
        with capture_output() as captured:
            ip.run_cell(line)
        shown = captured.stdout + captured.stderr
        assert shown.startswith("UsageError: ") and "Traceback" not in shown, (line, shown)
        assert len(shown.strip().splitlines()) == 1, (line, shown)


def test_wait_with_nothing_driven_shows_where_the_run_is(ip, project):
    with capture_output() as captured:
        ip.run_cell("%odin wait")
    assert "No run in" in captured.stdout and not captured.stderr
    odin(ip, "run tiny --task t --dry --gates review:fail --wait")
    ip.magics_manager.registry["OdinMagics"]._runners.clear()  # as after a kernel restart
    assert "awaiting_approval" in repr(odin(ip, "wait"))


def test_charts_are_pngs(ip, project):
    odin(ip, "run tiny --task t --dry --gates review:fail --wait")
    runner = ip.magics_manager.registry["OdinMagics"].runner()
    state = runner.status()
    loop = runner.engine.loop_for(state.run_id)
    assert png_bytes(run_chart(state, loop.stage_ids())).startswith(PNG)
    counts, usage = run_chart(state, loop.stage_ids()).axes
    assert counts.get_ylim()[0] == 0 and usage.get_ylim()[0] == 0  # no -0.04..0.04 axes before any data
    assert all(float(t).is_integer() for t in counts.get_yticks())  # loopbacks are counted
    empty = interview_convergence([], 0.15).axes[0]
    assert empty.get_xlim() == (0.5, 3.5) and list(empty.get_xticks()) == [1, 2, 3]
    assert png_bytes(loop_diagram(loop)).startswith(PNG)
    labels = [t for t in loop_diagram(loop).axes[0].texts if t.get_text().startswith("on_fail")]
    assert labels and all(t.get_bbox_patch() is not None for t in labels)  # readable where arrows cross
    rounds = [InterviewRound(1, 0.8), InterviewRound(2, 0.5), InterviewRound(3, 0.3, "contrarian"),
              InterviewRound(4, 0.12)]
    assert png_bytes(interview_convergence(rounds, 0.15)).startswith(PNG)
    handle = ChartHandle(lambda st: run_chart(st))
    with capture_output() as captured:
        handle.placeholder()
        handle.update(state)
    assert handle.png.startswith(PNG)
    assert captured.outputs  # the placeholder was displayed
    handle.retire()  # a later cell shows the run's charts
    handle.update(state)
    assert handle.retired and handle.png is None


def test_a_missing_api_key_is_reported_in_the_cell_before_anything_runs(ip, project, monkeypatch):
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ODIN_SCRIPT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(project))  # no SDK credential profile either
    with pytest.raises(UsageError, match="ANTHROPIC_API_KEY"):
        odin(ip, "run tiny --task 'real work'")
    runs = project / ".odin-loop" / "runs"
    assert not runs.exists() or not any(runs.iterdir())


def test_step_checks_the_stage_before_driving(ip, project):
    odin(ip, "run tiny --task t --dry --wait")
    with pytest.raises(UsageError, match="no stage 'nope'.*write, review, finish"):
        odin(ip, "step nope")
    odin(ip, "abandon")
    odin(ip, "run tiny --task t --dry --stage-delay 0.2")
    assert "stop requested" in repr(odin(ip, "stop"))
    odin(ip, "wait")
    assert state_json(project)["status"] == "running"  # stopped, not paused
    with pytest.raises(UsageError, match="not paused for review"):
        odin(ip, "revise more")
    with pytest.raises(UsageError, match=r"is ready \(nothing drives it now\), not waiting for approval"):
        odin(ip, "approve")  # as status says of a run nothing drives: not "running"


def test_a_busy_drive_refuses_a_second_call_before_its_view_is_shown(tmp_path):
    from odin_magic.core.errors import RunRefused
    from odin_magic.notebook.actions import NotebookRunner

    runner = NotebookRunner(tmp_path, engine_factory=lambda *a, **k: None)
    release = threading.Event()
    runner.drive.submit("run", release.wait)
    shown = []
    with pytest.raises(RunRefused, match=r"busy \(run\)"):
        runner._submit("approve", lambda: None, ready=lambda: shown.append("view"))
    with pytest.raises(RunRefused):
        runner.drive.submit("approve", lambda: None)
    assert shown == []
    release.set()
    assert runner.wait(10).ok
    runner._submit("approve", lambda: "approved", ready=lambda: shown.append("view"))
    assert runner.wait(10).result == "approved" and shown == ["view"]


def test_step_reopens_a_failed_run_and_is_refused_at_a_pause(ip, project):
    from support.nbtools import TINY_LOOP

    (project / ".odin-loop" / "loops" / "fails.yaml").write_text(  # six alike failures fail it, not block it
        TINY_LOOP.replace("name: tiny", "name: fails").replace("max_iterations: 5", "max_iterations: 5\nmax_repeats: 9"))
    odin(ip, f"run fails --task t --dry --approve-all --gates {','.join(['write:fail'] * 6)} --wait")
    assert state_json(project)["status"] == "failed"
    odin(ip, "step review --wait")  # the latest run failed: the step reopens it
    state = state_json(project)
    assert state["status"] == "awaiting_approval" and state["current_stage"] == "review"
    with pytest.raises(UsageError, match="waits for your approval of stage review"):
        odin(ip, "step finish")


def test_odin_diff_renders_html_and_odin_revert_goes_back(ip, project):
    cell(ip, "loop docs", "name: docs\nmax_iterations: 3\nstages:\n  - id: write\n    produces: [docs/notes.md]\n"
                          "    gate: {mode: ai+human, check: the notes exist}\n")
    odin(ip, 'run docs --task "notes" --dry --wait')
    shown = odin(ip, "diff")
    html = shown._repr_html_()
    assert "<details class='odin-diff-file'>" in html and "docs/notes.md" in html and "stage write" in html
    assert "+Placeholder written" in shown.text()
    with pytest.raises(UsageError, match="no stage execution 5"):
        odin(ip, "diff 5")
    message = odin(ip, "revert write")
    assert "continues from write" in message.text() and not (project / "docs" / "notes.md").exists()
    assert state_json(project)["status"] == "running"


def test_odin_fork_starts_a_new_run_from_a_point_and_abandons_the_old(ip, project):
    cell(ip, "loop docs", "name: docs\nmax_iterations: 3\nstages:\n  - id: write\n    produces: [docs/notes.md]\n"
                          "    gate: {mode: ai+human, check: the notes exist}\n")
    odin(ip, 'run docs --task "notes" --dry --wait')
    old = state_json(project)
    assert old["status"] == "awaiting_approval" and (project / "docs" / "notes.md").exists()
    with pytest.raises(UsageError, match="no point 9"):
        odin(ip, "fork --from 9")
    message = odin(ip, "fork --from 0")
    runs = sorted(p.name for p in (project / ".odin-loop" / "runs").iterdir())
    assert len(runs) == 2 and runs[0] == old["run_id"]
    assert f"forked: run {runs[1]} from {old['run_id']}@0, running at write" in message.text()
    assert not (project / "docs" / "notes.md").exists()  # the tree of point 0
    gone = json.loads((project / ".odin-loop" / "runs" / runs[0] / "state.json").read_text())
    assert gone["status"] == "abandoned" and gone["forked_to"] == runs[1]
    odin(ip, "run --wait")
    fork = json.loads((project / ".odin-loop" / "runs" / runs[1] / "state.json").read_text())
    assert fork["status"] == "awaiting_approval" and (project / "docs" / "notes.md").exists()
    assert "--from N" in odin(ip, "help fork").text()


def test_status_history_shows_every_entry_numbered_in_text_and_html(ip, project):
    from support.loops import pingpong_loop

    (project / ".odin-loop" / "loops" / "pingpong.yaml").write_text(pingpong_loop(), encoding="utf-8")
    odin(ip, "run pingpong --task t --dry --gates " + ",".join(["check:fail"] * 5) + " --wait")
    short = odin(ip, "status")
    assert "last 10; `odin status --history` shows all" in short.text()
    assert "<details>" in short.html() and " #12 " in short.html() and " #2 " not in short.html()
    whole = odin(ip, "status --history")
    assert "history (12 entries)" in whole.text() and " #1 " in whole.text()
    assert "<details open>" in whole.html() and " #1 " in whole.html()


def test_a_loop_cell_name_with_a_backslash_is_refused_not_saved_under_another_name(ip, project):
    """Issue 20 item 5: `%%odin loop a\\b` was saved as ab.yaml (the shell-like split ate the backslash)."""
    loop = (project / ".odin-loop" / "loops" / "tiny.yaml").read_text().replace("name: tiny", "name: ab")
    with pytest.raises(UsageError) as info:
        cell(ip, "loop a\\b", loop)
    assert "not a loop name" in str(info.value)
    assert not (project / ".odin-loop" / "loops" / "ab.yaml").exists()


def test_wait_after_a_fork_shows_the_fork_not_the_run_the_last_drive_finished(ip, project):
    """After `%odin fork`, nothing drives the fork: `%odin wait` shows where the project's run is (the fork,
    ready), not the earlier run the last drive here finished."""
    odin(ip, "run tiny --task t --dry --approve-all --wait")
    forked = odin(ip, "fork --from 1")
    shown = odin(ip, "wait --timeout 5").text()
    fork_id = state_json(project)["run_id"]
    assert fork_id in repr(forked) and fork_id in shown and "ready" in shown


def test_run_param_is_checked_against_the_loop_before_a_run_starts(ip, project):
    with pytest.raises(UsageError, match=r"loop 'optimize' has no parameter 'metrc' \(did you mean 'metric'\?\)"):
        odin(ip, "run optimize --param metrc=x --task faster --dry")
    with pytest.raises(UsageError, match="--param takes NAME=VALUE"):
        odin(ip, "run optimize --param metric --task faster --dry")
    assert not (project / ".odin-loop" / "runs").exists() or not any((project / ".odin-loop" / "runs").iterdir())
