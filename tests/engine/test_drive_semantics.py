"""Issue 10, drive semantics: a step never skips a pause, skipped stages are named, a failed run
can be stepped, the checklist tells approved from merely passed, and the failure that ends a run
reads as an end (not a loopback) with its cause."""

from __future__ import annotations

import json

import pytest

from support.loops import DEMO_LOOP, LINEAR
from odin_magic.cli import main
from odin_magic.engine.orchestrator import Engine
from odin_magic.core.errors import NoActiveRun, RunRefused
from odin_magic.render.text import render_runs, render_status, stage_marks
from odin_magic.runs.state import DryOptions

#: demo, where six identical failures in a row fail the run (not pause it as blocked: max_repeats)
DEMO_FAILS = DEMO_LOOP.replace("max_iterations: 5", "max_iterations: 5\nmax_repeats: 10")


def odin(capsys, *args):
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


class Events(list):
    def __call__(self, event):
        self.append(event)


# -- item 5: step and pauses, skipped stages, a failed run ------------------------------------


def test_a_step_at_an_approval_pause_is_refused_and_skips_nothing(project, write_loop):
    write_loop()  # demo: spec (ai+human), implement, test
    engine = Engine(project)
    paused = engine.start("demo", "build", dry=DryOptions())
    assert paused.status == "awaiting_approval" and paused.current_stage == "spec"
    with pytest.raises(RunRefused) as refused:
        engine.step("implement")
    assert "waits for your approval of stage spec" in refused.value.message
    assert "approve" in refused.value.hint and "revise" in refused.value.hint and "abandon" in refused.value.hint
    after = engine.status()
    assert after.status == "awaiting_approval" and after.current_stage == "spec"
    assert len(after.history) == len(paused.history)  # nothing ran, nothing recorded


def test_cli_step_at_a_pause_is_refused(capsys, project, write_loop):
    write_loop()
    odin(capsys, "run", "demo", "--task", "t", "--dry", "--project", str(project))
    code, out, err = odin(capsys, "step", "test", "--project", str(project))
    assert code == 1 and "a step now would skip that approval" in err and "Traceback" not in err
    assert "▶ test" not in out


def test_done_after_a_step_that_skipped_stages_names_them(project, write_loop):
    write_loop(LINEAR)
    events = Events()
    engine = Engine(project, listener=events)
    engine.listener = lambda e: (events(e), e.kind == "gate_passed" and engine.request_stop())
    engine.start("linear", "build", dry=DryOptions())  # a passes; stopped before b
    engine.step("c")  # skips b
    engine.listener = events
    state = engine.run()  # c again, then done
    assert state.status == "done"
    done = [e for e in events if e.kind == "done"][-1]
    assert done.text.endswith("done; never ran: b") and done.data["never_ran"] == ["b"]
    loop = engine.loop_for(state.run_id)
    assert ("⬜", "b", "never ran") in stage_marks(state, loop)
    assert "⬜ b  — never ran" in render_status(state, loop)


def test_a_done_run_that_ran_every_stage_names_none(project, write_loop):
    write_loop(LINEAR)
    events = Events()
    state = Engine(project, listener=events).start("linear", "build", dry=DryOptions())
    assert [e.text for e in events if e.kind == "done"] == [f"run {state.run_id} done"]


def test_a_step_reopens_the_latest_run_when_it_failed(project, write_loop):
    write_loop(DEMO_FAILS)
    events = Events()
    engine = Engine(project, listener=events)
    failed = engine.start("demo", "build", dry=DryOptions(gates=["test:fail"] * 6, approve_all=True))
    assert failed.status == "failed"
    state = engine.step("test")  # the dry script is used up: test passes now
    assert state.run_id == failed.run_id
    assert state.status == "running" and state.current_stage == "test" and state.failure_reason is None
    assert state.history[-1].stage == "test" and state.history[-1].result == "pass"
    reopened = [e for e in events if e.kind == "reopened"]
    assert len(reopened) == 1 and "it had failed: total_iterations 6 exceeded max_iterations 5" in reopened[0].text
    log = [json.loads(line) for line in
           (project / ".odin-loop" / "runs" / failed.run_id / "events.jsonl").read_text().splitlines()]
    kinds = [r["type"] for r in log]
    # the step's stage execution records its checkpoint; its gate passed, so its produces were frozen first
    assert kinds[-5:] == ["reopened", "step", "checkpoint", "frozen", "gate"]
    assert log[kinds.index("reopened")]["was"].startswith("total_iterations 6")
    assert engine.run().status == "done"  # the failed stage redone, the run finishes without starting over


def test_a_step_does_not_reopen_a_done_or_abandoned_run(project, write_loop):
    write_loop(LINEAR)
    engine = Engine(project)
    engine.start("linear", "build", dry=DryOptions())
    with pytest.raises(NoActiveRun):
        engine.step("a")
    write_loop()
    engine.start("demo", "again", dry=DryOptions())
    engine.abandon()
    with pytest.raises(NoActiveRun):
        engine.step("spec")


def test_cli_step_on_a_failed_run(capsys, project, write_loop):
    write_loop(DEMO_FAILS)
    code, _, _ = odin(capsys, "run", "demo", "--task", "t", "--dry", "--approve-all", "--gates",
                      ",".join(["test:fail"] * 6), "--project", str(project))
    assert code == 1
    code, out, err = odin(capsys, "step", "test", "--project", str(project))
    assert code == 0, err
    assert "reopened (it had failed:" in out and "✅ test gate passed" in out


# -- item 6: ✅ means passed and, at a pause, approved ------------------------------------------


def test_a_run_abandoned_at_a_pause_shows_that_stage_as_awaiting(project, write_loop):
    write_loop()
    engine = Engine(project)
    engine.start("demo", "build", dry=DryOptions())
    state = engine.abandon()
    loop = engine.loop_for(state.run_id)
    marks = {sid: (mark, note) for mark, sid, note in stage_marks(state, loop)}
    assert marks["spec"] == ("⏸", "passed its gate, not approved")
    assert "⏸ spec  — passed its gate, not approved" in render_status(state, loop)
    assert "✅ spec" not in render_status(state, loop)


def test_an_approved_stage_is_passed(project, write_loop):
    write_loop()
    engine = Engine(project)
    engine.start("demo", "build", dry=DryOptions())
    state = engine.approve()
    marks = {sid: mark for mark, sid, _ in stage_marks(state, engine.loop_for(state.run_id))}
    assert marks == {"spec": "✅", "implement": "✅", "test": "✅"}


# -- item 7: the failure that ends a run, and its cause ------------------------------------------


def test_the_failure_that_ends_a_run_is_not_printed_as_a_loopback(capsys, project, write_loop):
    write_loop(DEMO_FAILS)
    code, out, _ = odin(capsys, "run", "demo", "--task", "t", "--dry", "--approve-all", "--gates",
                        ",".join(["test:fail"] * 6), "--project", str(project))
    assert code == 1
    failed_lines = [ln for ln in out.splitlines() if "test gate failed" in ln]
    assert len(failed_lines) == 6
    assert all(ln.endswith("→ implement") for ln in failed_lines[:5])
    assert "→" not in failed_lines[-1]  # the run ends here: no loopback
    assert out.splitlines()[-1].startswith("❌ run failed: total_iterations 6 exceeded max_iterations 5")


CAUSE_LOOP = """
name: cause
max_iterations: 1
stages:
  - id: test
    gate:
      mode: ai
      check: the tests pass
      run:
        - cmd: {cmd}
"""


@pytest.mark.parametrize("cmd, cause", [
    # pytest's way: the failing tests its FAILED lines name, then the last line (its counts)
    ("printf 'F.\\nFAILED harness/test_calc.py::test_divide - ValueError: dividing by zero\\n"
     "1 failed, 1 passed in 0.02s\\n'; exit 1",
     "1 failing test: harness/test_calc.py::test_divide - ValueError: dividing by zero | 1 failed, 1 passed in 0.02s"),
    # a long line: its end (the cause) is kept
    ("python -c \"import sys; print('x' * 300 + ' ModuleNotFoundError: No module named pytest'); sys.exit(1)\"",
     "ModuleNotFoundError: No module named pytest"),
])
def test_status_shows_the_whole_failure_reason_with_its_cause(capsys, project, write_loop, cmd, cause):
    write_loop(CAUSE_LOOP.format(cmd=json.dumps(cmd)))
    code, _, _ = odin(capsys, "run", "cause", "--task", "t", "--dry", "--run-commands", "--project", str(project))
    assert code == 1
    code, out, _ = odin(capsys, "status", "--project", str(project))
    reason = next(ln for ln in out.splitlines() if ln.startswith("reason"))
    assert f"gate command `{cmd}` exited 1: " in reason
    assert reason.endswith(cause)


# -- item 11 (runs): one line per run ---------------------------------------------------------


def test_a_multi_line_task_shows_on_one_line_in_runs(capsys, project, write_loop):
    write_loop(LINEAR)
    Engine(project).start("linear", "first line\nsecond   line\n\tthird", dry=DryOptions())
    code, out, _ = odin(capsys, "runs", "--project", str(project))
    rows = out.splitlines()
    assert len(rows) == 2 and rows[1].endswith("first line second line third")


# -- item 10: `odin run` with nothing to continue, in a terminal ----------------------------------


def run_in_a_terminal(project, args, answers):
    """``odin ARGS`` with a pseudo-terminal as stdin and stdout; ``answers``: (prompt, reply) in order.
    Returns (exit code, everything the terminal showed)."""
    import os
    import pty
    import select
    import subprocess
    import sys

    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_") and k != "ODIN_SCRIPT"}
    proc = subprocess.Popen([sys.executable, "-m", "odin_magic", *args, "--project", str(project)],
                            stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    shown = b""

    def read(until: bytes | None) -> None:
        nonlocal shown
        while until is None or until not in shown:
            ready, _, _ = select.select([master], [], [], 120)
            assert ready, f"the terminal showed no {until!r} in 120 s:\n{shown.decode(errors='replace')}"
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child closed the terminal
                chunk = b""
            if not chunk:
                assert until is None, f"the command ended before {until!r}:\n{shown.decode(errors='replace')}"
                return
            shown += chunk

    try:
        for prompt, reply in answers:
            read(prompt.encode())
            os.write(master, reply.encode() + b"\n")
        read(None)
    finally:
        os.close(master)
        code = proc.wait(60)
    return code, shown.decode(errors="replace").replace("\r\n", "\n")


def test_run_in_a_terminal_asks_which_loop_and_task(project, write_loop):
    write_loop()
    code, shown = run_in_a_terminal(project, ["run", "--dry"], [
        ("loop to start [spec-harness-tdd]: ", "demo"), ("task (one line: what you are building): ", "build it")])
    assert code == 0, shown
    loops = next(line for line in shown.splitlines() if "Loops: " in line)
    assert "demo" in loops and "spec-harness-tdd" in loops and "started (demo: build it)" in shown
    assert "✅ spec gate passed; awaiting approval" in shown


def test_run_in_a_terminal_defaults_to_spec_harness_tdd(project):
    code, shown = run_in_a_terminal(project, ["run", "--task", "a calculator", "--dry"],
                                    [("loop to start [spec-harness-tdd]: ", "")])
    assert code == 0, shown
    assert "task (one line" not in shown  # --task was given
    assert "started (spec-harness-tdd: a calculator)" in shown


def test_run_without_a_terminal_keeps_the_one_line_error(capsys, project):
    code, out, err = odin(capsys, "run", "--project", str(project))
    assert code == 1 and "no active run to continue" in err and "loop to start" not in out
