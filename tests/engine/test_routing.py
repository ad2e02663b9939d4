"""Failure routing (issue 11, item 6): recoverable / environment / repeated, through the real SDK.

The engine, the Claude worker and the SDK are real; the Messages API is the offline scripted
model; gate commands really run.
"""

from __future__ import annotations

import os
import stat
import sys

import pytest

from odin_magic.engine.orchestrator import Engine
from odin_magic.engine.gates import run_command
from odin_magic.loop.schema import GateCommand
from odin_magic.render.text import render_runs, render_status
from odin_magic.engine.routing import Failure, environment_problem, normalize, route
from odin_magic.runs.store import load_run

from support.scripted_runs import Events, scripted_engine

SCRIPT = """
stages:
  build:
    - tools: [{write: {file_path: "{run_dir}/out.md", content: "built\\n"}}]
    - text: built
default_verdict: {status: DONE, passed: true, reasons: [scripted]}
"""


def command_loop(write_loop, command: str, max_iterations: int = 5, extra: str = "") -> None:
    write_loop(f"""
    name: cmd
    max_iterations: {max_iterations}
    {extra}
    stages:
      - id: build
        produces: [out.md]
        gate: {{mode: ai, check: it builds, run: ['{command}']}}
    """)


def started(events: Events) -> int:
    return events.kinds().count("stage_started")


def test_a_missing_module_blocks_the_run_after_one_evaluation_without_a_loopback(project, write_loop):
    command_loop(write_loop, "python -m odin_gate_probe")
    events = Events()
    engine, _ = scripted_engine(project, SCRIPT, events)
    state = engine.start("cmd", "t")
    assert state.status == "blocked"
    assert (state.total_iterations, state.iterations, state.no_progress) == (0, {}, 0)
    assert [(e.stage, e.result, e.failure) for e in state.history] == [("build", "fail", "environment")]
    assert state.blocked.kind == "environment" and "module odin_gate_probe is not installed" in state.blocked.reason
    assert "odin run" in state.blocked.fix
    assert started(events) == 1 and "blocked" in events.kinds()
    # shown as blocked everywhere: state.json, status, runs
    assert load_run(engine.run_dir(state.run_id)).state.status == "blocked"
    assert "⛔ blocked" in render_status(state) and "to do" in render_status(state)
    assert "blocked" in render_runs([state])
    # a blocked run is active: no second run
    with pytest.raises(Exception, match="still blocked"):
        engine.start("cmd", "again")

    # the user fixes the environment; `run` re-checks the gate without redoing the stage's work
    (project / "odin_gate_probe.py").write_text("print('ok')\n")
    state = engine.run()
    assert state.status == "done" and started(events) == 1
    assert [(e.result, e.failure) for e in state.history] == [("fail", "environment"), ("pass", None)]
    assert state.total_iterations == 0 and state.blocked is None


@pytest.mark.parametrize("command, words", [
    ("no_such_program_xyz --check", "program no_such_program_xyz was not found"),
    ("python -m no_such_module", "module no_such_module is not installed"),
    ("python no_such_script.py", "no_such_script.py does not exist"),
    ("./gate.sh", "permission denied"),
    ("make test", "program no_such_program_xyz was not found"),  # the shell's line, then make's `Error 127`
])
def test_commands_that_cannot_run_are_environment_failures(project, command, words):
    (project / "gate.sh").write_text("#!/bin/sh\nexit 0\n")  # not executable
    (project / "Makefile").write_text("test:\n\tno_such_program_xyz --check && echo checked\n")
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    ev = run_command(GateCommand(cmd=command), project, env)
    assert not ev.ok
    problem = environment_problem(ev)
    assert problem is not None and words in problem[0]


@pytest.mark.parametrize("code", [
    "raise PermissionError('[Errno 13] Permission denied: /etc/shadow')",
    "print('sh: 1: key: not found'); print('config: not found'); raise SystemExit(1)",
    "print(\"python: can't open file 'x.py'\"); raise SystemExit(1)",
])
def test_what_the_code_under_test_prints_is_never_an_environment_failure(project, code):
    """Issue 20 item 5: a test that raises PermissionError (or prints 'not found') is work to fix, recoverable;
    only the command itself (exit 126/127, the shell's or the interpreter's own line) is the environment."""
    (project / "check.py").write_text(code + "\n")
    ev = run_command(GateCommand(cmd=f'"{sys.executable}" check.py'), project, dict(os.environ))
    assert not ev.ok and ev.exit_code == 1
    assert environment_problem(ev) is None


def test_a_command_timeout_is_an_environment_failure(project):
    ev = run_command(GateCommand(cmd="sleep 30", timeout=0.2), project, dict(os.environ))
    assert ev.timed_out and "timed out" in environment_problem(ev)[0]


def test_work_that_is_wrong_is_recoverable(project):
    """A failing test, even one whose code under test fails to import, is the work being wrong."""
    (project / "test_x.py").write_text("import calc_missing_module\n\ndef test_x():\n    assert calc_missing_module\n")
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    for cmd in ("python -c 'assert 1 == 2'", "python -m pytest -q -p no:cacheprovider test_x.py", "exit 1"):
        ev = run_command(GateCommand(cmd=cmd), project, env)
        assert not ev.ok and environment_problem(ev) is None, cmd


def test_three_identical_failures_in_a_row_pause_the_run(project, write_loop):
    command_loop(write_loop, "python -c \"import sys, time; sys.exit(f\\\"assert failed at {time.time()}\\\")\"",
                 max_iterations=10)
    events = Events()
    engine, _ = scripted_engine(project, SCRIPT, events)
    state = engine.start("cmd", "t")
    assert state.status == "blocked" and state.blocked.kind == "repeated"
    assert [e.failure for e in state.history] == ["recoverable", "recoverable", "repeated"]
    assert state.total_iterations == 3 and started(events) == 3
    assert "3 times in a row (max_repeats 3)" in state.blocked.reason
    # resuming starts a new streak: three more tries, then the pause again
    state = engine.run()
    assert state.status == "blocked" and state.total_iterations == 6


def test_max_repeats_is_a_loop_field(project, write_loop):
    command_loop(write_loop, "exit 1", max_iterations=10, extra="max_repeats: 2")
    engine, _ = scripted_engine(project, SCRIPT)
    state = engine.start("cmd", "t")
    assert state.status == "blocked" and state.total_iterations == 2


def test_streaks_count_one_signature_and_end_on_a_pass():
    first = route("test", Failure("gate command `pytest` exited 1: 3 failed in 0.21s"), None, 3)
    second = route("test", Failure("gate command `pytest` exited 1: 3 failed in 0.56s"), first.streak, 3)
    assert second.streak.count == 2  # timings and numbers do not make failures different
    other = route("test", Failure("gate command `pytest` exited 1: ImportError"), second.streak, 3)
    assert other.streak.count == 1 and other.failure == "recoverable"
    assert normalize("Failed at /tmp/pytest-7/x.py line 12") == normalize("failed at /tmp/pytest-9/x.py line 40")


def test_a_blocked_run_survives_a_new_engine(project, write_loop):
    command_loop(write_loop, "python -m odin_gate_probe2")
    engine, _ = scripted_engine(project, SCRIPT)
    run_id = engine.start("cmd", "t").run_id
    state = Engine(project).status(run_id)
    assert state.status == "blocked" and state.blocked.kind == "environment"


def test_a_repeated_failure_blocks_where_max_no_progress_is_reached_at_the_same_time(project, write_loop):
    # keep-green's numbers (issue 21, item 5): max_no_progress 3 = max_repeats 3; the third identical
    # failure is both; the person must look (blocked), the run is not given up (failed)
    command_loop(write_loop, "exit 1", max_iterations=10, extra="max_no_progress: 3")
    engine, _ = scripted_engine(project, SCRIPT)
    state = engine.start("cmd", "t")
    assert state.status == "blocked" and state.blocked.kind == "repeated", state.failure_reason
    assert state.failure_reason is None and state.ended_at is None
    assert (state.total_iterations, state.no_progress) == (3, 3)
    # continuing it: the person looked, so the no-progress count starts afresh with the streak
    # (else the first failure after it would end the run): three more tries, then the pause again
    state = engine.run()
    assert state.status == "blocked" and state.blocked.kind == "repeated" and state.total_iterations == 6


def test_different_failures_without_progress_still_fail_the_run(project, write_loop):
    (project / "varies.py").write_text(
        "import os, pathlib, sys\n"
        "count = pathlib.Path(os.environ['ODIN_RUN_DIR'], 'count')\n"
        "n = len(count.read_text()) if count.exists() else 0\n"
        "count.write_text('x' * (n + 1))\n"
        "sys.exit('failure kind ' + 'abc'[n % 3])\n")
    # the counter lives in the run dir, which a sandboxed gate command cannot write: this loop runs unsandboxed
    command_loop(write_loop, "python varies.py", max_iterations=10, extra="max_no_progress: 3\n    sandbox: 'off'")
    engine, _ = scripted_engine(project, SCRIPT)
    state = engine.start("cmd", "t")
    assert state.status == "failed" and "no progress: 3 consecutive loopbacks" in state.failure_reason
    assert state.blocked is None and [e.failure for e in state.history] == ["recoverable"] * 3


def test_max_iterations_speaks_before_a_repeated_failure(project, write_loop):
    # the third identical failure is also one loopback too many: no loopback is left to continue with
    command_loop(write_loop, "exit 1", max_iterations=2)
    engine, _ = scripted_engine(project, SCRIPT)
    state = engine.start("cmd", "t")
    assert state.status == "failed" and "exceeded max_iterations 2" in state.failure_reason
    assert state.blocked is None
