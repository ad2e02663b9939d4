"""``odin run | approve | revise | step | status | runs | abandon | simulate`` through the real parser."""

from __future__ import annotations

import json

import pytest

from odin_magic.cli import main


def odin(capsys, *args):
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def demo(project, write_loop):
    write_loop()
    return str(project)


def test_dry_run_pause_status_approve_done(capsys, demo):
    code, out, _ = odin(capsys, "run", "demo", "--task", "build a thing", "--dry", "--gates", "test:fail",
                        "--project", demo)
    assert code == 0
    assert "▶ spec" in out and "✅ spec gate passed" in out and "odin approve" in out

    code, out, _ = odin(capsys, "status", "--project", demo)
    assert code == 0
    assert "⏸ spec  — awaiting approval" in out and "⬜ implement" in out and "⬜ test" in out
    assert "(dry run)" in out and "build a thing" in out

    code, out, _ = odin(capsys, "approve", "--project", demo)
    assert code == 0
    assert "🔄 test gate failed: dry run: scripted failure (test:fail) → implement" in out
    assert "done" in out.splitlines()[-1]

    code, out, _ = odin(capsys, "status", "--project", demo)
    assert "✅ spec" in out and "✅ test  — looped 1×" in out and "loops    1/5" in out

    code, out, _ = odin(capsys, "status", "--json", "--project", demo)
    data = json.loads(out)
    run_dir = f"{demo}/.odin-loop/runs/{data['run_id']}"
    assert data == json.loads(open(f"{run_dir}/state.json").read())
    assert data["status"] == "done" and data["iterations"] == {"test": 1}


def test_a_failed_test_stage_shows_as_looped(capsys, demo):
    # step the test stage into a failure: it shows 🔄 until it passes again
    from odin_magic.engine.orchestrator import Engine

    odin(capsys, "run", "demo", "--task", "t2", "--dry", "--gates", "test:fail,test:fail", "--project", demo)
    engine = Engine(demo)
    engine.listener = lambda e: e.kind == "gate_failed" and engine.request_stop()
    engine.approve()  # test fails once, then the drive stops: running, not paused (a step at a pause is refused)
    code, out, _ = odin(capsys, "step", "test", "--project", demo)
    assert code == 0 and "🔄 test gate failed" in out
    code, out, _ = odin(capsys, "status", "--project", demo)
    assert "🔄 test  — looped 2×" in out and "▷ ready: nothing drives it now; `odin run` continues it" in out


def test_continue_revise_step_abandon_runs(capsys, demo):
    odin(capsys, "run", "demo", "--task", "t", "--dry", "--project", demo)
    code, out, _ = odin(capsys, "revise", "add error handling", "--project", demo)
    assert code == 0 and "revising with feedback: add error handling" in out
    code, out, err = odin(capsys, "step", "spec", "--project", demo)  # at a pause a step is refused
    assert code == 1 and "waits for your approval of stage spec" in err and "▶ spec (step)" not in out
    code, out, _ = odin(capsys, "run", "--project", demo)  # at a pause: approval
    assert code == 0 and "spec approved" in out
    code, out, _ = odin(capsys, "runs", "--project", demo)
    assert "done" in out and "(dry)" in out
    assert "* the active run" not in out  # the legend comes with an active run only
    code, out, _ = odin(capsys, "runs", "--json", "--project", demo)
    runs = json.loads(out)
    assert len(runs) == 1 and runs[0]["status"] == "done"
    assert [h["gate"] for h in runs[0]["history"]][:3] == ["ai-pending", "ai-pending", "approved"]


def test_refusals_and_usage_errors(capsys, demo):
    code, _, err = odin(capsys, "run", "--project", demo)
    assert code == 1 and "no active run" in err  # UsageError would be 2; NoActiveRun is a refusal
    code, _, err = odin(capsys, "run", "demo", "--project", demo)
    assert code == 2 and "needs a task" in err
    code, _, err = odin(capsys, "run", "demo", "--task", "t", "--gates", "x:fail", "--project", demo)
    assert code == 2 and "add --dry" in err
    code, _, err = odin(capsys, "run", "demo", "--task", "t", "--dry", "--gates", "nope", "--project", demo)
    assert code == 2 and "STAGE:fail" in err
    code, _, err = odin(capsys, "run", "nosuchloop", "--task", "t", "--dry", "--project", demo)
    assert code == 2 and "nosuchloop" in err

    assert odin(capsys, "run", "demo", "--task", "t", "--dry", "--project", demo)[0] == 0
    code, _, err = odin(capsys, "run", "demo", "--task", "another", "--dry", "--project", demo)
    assert code == 1 and "is still awaiting_approval" in err and "odin abandon" in err
    out = odin(capsys, "runs", "--project", demo)[1]
    assert out.splitlines()[1].startswith("*  ") and out.splitlines()[-1] == "* the active run (a project has at most one)"
    assert "Traceback" not in err
    for command in (["approve"], ["simulate", "demo"], ["answer", "yes"], ["question"]):
        code, _, err = odin(capsys, *command, "--project", demo + "/missing")
        assert code == 2 and "does not exist" in err, command
    code, _, err = odin(capsys, "run", "--task", "another", "--project", demo)
    assert code == 2 and "needs its loop" in err
    assert json.loads(odin(capsys, "status", "--json", "--project", demo)[1])["status"] == "awaiting_approval"
    code, _, err = odin(capsys, "step", "nosuch", "--project", demo)
    assert code == 2 and "has no stage 'nosuch'" in err and "its stages: spec, implement, test" in err
    code, _, err = odin(capsys, "answer", "yes", "--project", demo)
    assert code == 1 and "no interview question is waiting" in err
    code, _, err = odin(capsys, "question", "--project", demo)
    assert code == 1 and "no interview question is waiting" in err


def test_run_with_the_active_loop_name_continues(capsys, demo):
    odin(capsys, "run", "demo", "--task", "t", "--dry", "--project", demo)
    code, out, _ = odin(capsys, "run", "demo", "--project", demo)
    assert code == 0 and "spec approved" in out


def test_a_failed_run_exits_1(capsys, demo):
    # two identical failures at most in a row (three would pause the run as blocked: max_repeats)
    gates = ",".join(["spec:fail", "implement:fail", "test:fail"] * 2)
    code, out, _ = odin(capsys, "run", "demo", "--task", "t", "--dry", "--approve-all", "--gates", gates,
                        "--project", demo)
    assert code == 1 and "exceeded max_iterations 5" in out


def test_a_blocked_run_exits_3(capsys, demo):
    code, out, _ = odin(capsys, "run", "demo", "--task", "t", "--dry", "--approve-all", "--gates",
                        ",".join(["test:fail"] * 3), "--project", demo)
    assert code == 3 and "⛔ test blocked (repeated)" in out
    code, out, _ = odin(capsys, "runs", "--project", demo)
    assert "blocked" in out


def test_simulate_json(capsys, demo):
    code, out, _ = odin(capsys, "simulate", "demo", "--gates", "test:fail,test:fail", "--json", "--project", demo)
    assert code == 0
    result = json.loads(out)
    assert set(result) == {"path", "status", "iterations", "total_iterations", "history"}
    assert result["path"] == ["spec", "implement", "test", "implement", "test", "implement", "test"]
    assert result["total_iterations"] == 2


def test_simulate_text_and_a_failing_simulation(capsys, demo):
    code, out, _ = odin(capsys, "simulate", "demo", "--project", demo)
    assert code == 0 and "path       spec → implement → test" in out
    code, out, _ = odin(capsys, "simulate", "demo", "--gates", ",".join(["spec:fail", "implement:fail", "test:fail"] * 2),
                        "--json", "--project", demo)
    assert code == 1 and json.loads(out)["status"] == "failed"
    code, out, _ = odin(capsys, "simulate", "demo", "--gates", ",".join(["spec:fail"] * 3), "--json",
                        "--project", demo)
    assert code == 1 and json.loads(out)["status"] == "blocked"


def test_starting_another_loop_without_a_task_names_the_active_run(capsys, demo, write_loop):
    write_loop(LINEAR_TEXT)
    odin(capsys, "run", "demo", "--task", "t", "--dry", "--project", demo)
    code, _, err = odin(capsys, "run", "linear", "--project", demo)
    assert code == 1 and "(loop demo) is still awaiting_approval" in err and "odin abandon" in err


LINEAR_TEXT = """
name: linear
max_iterations: 1
stages:
  - id: a
    produces: [a.md]
    gate: {mode: ai, check: a exists}
"""


def test_status_shows_the_interview_convergence():
    from odin_magic.render.text import render_status
    from odin_magic.runs.state import HistoryEntry, InterviewSummary, RunState

    state = RunState(
        run_id="20260614-143501-x", loop="x", task="t", started_at="2026-06-14T14:35:01",
        current_stage="interview", max_iterations=5,
        interview=InterviewSummary(threshold=0.15, rounds=4, ambiguity=0.13, topology=["Ingestion", "Export"]),
        history=[HistoryEntry(stage="interview", result="fail", gate="ai-pending", at="2026-06-14T14:40:00",
                              reason="too vague")],
        iterations={"interview": 1}, total_iterations=1,
    )
    text = render_status(state)
    assert "interview round 4, ambiguity 0.13 vs threshold 0.15 (below threshold)" in text
    early = state.model_copy(update={"interview": state.interview.model_copy(update={"rounds": 2})})
    assert "(below threshold; the interview may stop from round 3)" in render_status(early)
    assert "topology: Ingestion, Export" in text
    assert "🔄 interview  — looped 1×" in text and "— too vague" in text


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["stauts"], "odin: error: unknown command 'stauts' (did you mean 'status'?); `odin --help` lists the commands"),
        (["run", "demo", "--tsak", "x"], "odin run: error: unknown option --tsak (did you mean '--task'?)"),
        (["run", "demo", "--tsak=x"], "odin run: error: unknown option --tsak (did you mean '--task'?)"),
        (["status", "--jsno"], "odin status: error: unknown option --jsno (did you mean '--json'?)"),
        (["approve", "yes"], "odin approve: error: unexpected argument(s): yes; `odin approve --help`"),
        (["--project", ".", "list"], "odin: error: --project goes after the command, e.g. `odin list --project ...`"),
        (["--verison"], "odin: error: unknown option --verison (did you mean '--version'?)"),
    ],
)
def test_a_misspelt_command_or_option_is_named_with_a_suggestion(capsys, argv, expected):
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert expected in err
    top = argv[0] == "stauts" or argv[0].startswith("-")
    assert err.startswith("usage: odin " + ("" if top else argv[0]))  # that command's own usage
    assert "Traceback" not in err


def test_a_real_run_without_an_api_key_says_what_to_set_and_starts_nothing(capsys, demo, monkeypatch, tmp_path):
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE", "ANTHROPIC_IDENTITY_TOKEN",
                "ANTHROPIC_IDENTITY_TOKEN_FILE", "ANTHROPIC_CONFIG_DIR", "ODIN_SCRIPT", "ODIN_INTERVIEW_SCRIPT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no SDK profile on disk either
    code, out, err = odin(capsys, "run", "demo", "--task", "t", "--project", demo)
    assert code == 1
    assert "ANTHROPIC_API_KEY" in err and "ODIN_SCRIPT" in err and "Traceback" not in err
    assert "▶" not in out  # no stage started
    assert "no runs yet" in odin(capsys, "runs", "--project", demo)[1]


def test_help_shows_a_session_and_what_a_real_run_needs(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    out = capsys.readouterr().out
    assert info.value.code == 0
    assert 'odin run spec-harness-tdd --task "..."' in out
    assert "ANTHROPIC_API_KEY" in out and "ODIN_SCRIPT" in out and "--dry" in out


@pytest.mark.slow
def test_ctrl_c_during_odin_run_says_that_odin_run_resumes(demo):
    import signal
    import subprocess
    import sys

    odin_cmd = [sys.executable, "-m", "odin_magic"]
    proc = subprocess.Popen([*odin_cmd, "run", "demo", "--task", "t", "--dry", "--approve-all", "--stage-delay", "0.5",
                             "--project", demo], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in proc.stdout:  # wait on the event: the first stage has started (and sleeps its delay)
        if line.startswith("▶ spec"):
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "interrupted" in err and "`odin run` resumes" in err and "Traceback" not in err
    resumed = subprocess.run([*odin_cmd, "run", "--project", demo], capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0 and "done" in resumed.stdout.splitlines()[-1]


def test_status_shows_the_last_ten_entries_numbered_and_history_shows_all(capsys, project, write_loop):
    """The N that revert --to and fork --from take is the #N of status; --history lists every entry."""
    from support.loops import pingpong_loop

    write_loop(pingpong_loop())
    fails = ",".join(["check:fail"] * 5)  # build+check six times: 12 executions
    code, out, _ = odin(capsys, "run", "pingpong", "--task", "t", "--dry", "--gates", fails, "--project", str(project))
    code, out, _ = odin(capsys, "status", "--project", str(project))
    assert code == 0
    assert "history (12 entries, last 10; `odin status --history` shows all)" in out
    assert " #3 " in out and " #12 " in out and " #2 " not in out
    code, out, _ = odin(capsys, "status", "--history", "--project", str(project))
    assert code == 0 and "history (12 entries)" in out
    numbered = [line for line in out.splitlines() if line.strip()[:1] in ("✅", "🔄") and " #" in line]
    assert [line.split()[1] for line in numbered] == [f"#{n}" for n in range(1, 13)]
    assert "build pass" in numbered[0]


@pytest.mark.parametrize("command", [["approve"], ["revise", "more tests"], ["answer", "yes"]])
def test_acting_on_an_interrupted_run_says_it_is_ready_as_status_does_and_needs_no_key(capsys, project, write_loop,
                                                                                       monkeypatch, command):
    """Issue 18 item 6: approve / revise / answer on a run that is not waiting say so, before any worker is made:
    no 'no Anthropic API key found'. A run whose driver died is not "running": it is ready, as `odin status` says,
    and `odin run` continues it."""
    from support.scripted_runs import scripted_engine

    write_loop()
    from odin_magic.engine.session import WorkerFailed

    engine, _ = scripted_engine(project, "stages: {}\n")  # no turns: the first stage's worker fails
    with pytest.raises(WorkerFailed):
        engine.start("demo", "t")
    assert engine.status().status == "running"  # resumable, nothing waits for the user
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ODIN_SCRIPT"):
        monkeypatch.delenv(var, raising=False)
    code, out, err = odin(capsys, *command, "--project", str(project))
    assert code != 0 and "API key" not in err
    assert "is running" not in err and "is ready (nothing drives it now), not " in err, err
    assert "`odin run` continues it" in err
    assert "ready: nothing drives it now; `odin run` continues it" in odin(capsys, "status", "--project", str(project))[1]


@pytest.mark.slow
def test_ctrl_c_before_the_run_exists_says_nothing_is_saved(demo, tmp_path):
    """The scripted model's file is a fifo: odin blocks reading it before it creates the run; once the test's end
    of the fifo is open, odin is there, and Ctrl-C comes before any run exists."""
    import os
    import signal
    import subprocess
    import sys

    fifo = tmp_path / "script.yaml"
    os.mkfifo(fifo)
    env = {**os.environ, "ODIN_SCRIPT": str(fifo)}
    env.pop("ANTHROPIC_API_KEY", None)
    proc = subprocess.Popen([sys.executable, "-m", "odin_magic", "run", "demo", "--task", "t", "--project", demo],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    with open(fifo, "w"):  # returns once odin has opened it for reading
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err
    assert "interrupted before a run began: nothing to resume" in err and "resumes it" not in err
