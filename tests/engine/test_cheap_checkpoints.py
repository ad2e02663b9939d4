"""Checkpoints without the git tax (issue 18, item 12): ``odin simulate`` takes none; a drive skips a snapshot
when nothing can have changed since its last one (no tool call, no command, no artifact written) and reuses
that snapshot's id, so that diff and revert say what they said before. Every ``git`` the engine starts is
counted by a real ``git`` script put first on PATH, which logs its arguments and runs the real git."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from odin_magic.engine.orchestrator import Engine, WorkerFailed, simulate
from odin_magic.runs.state import DryOptions
from odin_magic.workers.base import JudgeResult, StageResult, Verdict, WorkerError

from support.scripted_runs import scripted_engine

AGAIN = """
name: again
max_iterations: 5
stages:
  - id: build
    produces: [src/app.py]
    gate: {mode: ai, check: built}
  - id: test
    produces: [tests/test_app.py]
    gate: {mode: ai, check: tested, on_fail: build}
"""


class GitLog:
    """The gits started since the shim went on PATH, one argument list per line."""

    def __init__(self, path: Path):
        self.path = path

    def calls(self) -> list[str]:
        return self.path.read_text().splitlines() if self.path.exists() else []

    def snapshots(self) -> int:
        """How many snapshots were taken (each ends with one write-tree)."""
        return sum(1 for line in self.calls() if line.split()[-1:] == ["write-tree"])


@pytest.fixture
def gits(tmp_path, monkeypatch) -> GitLog:
    real = shutil.which("git")
    assert real, "these tests need git"
    shim = tmp_path / "shim"
    shim.mkdir()
    log = tmp_path / "git-calls.log"
    (shim / "git").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{real}" "$@"\n')
    os.chmod(shim / "git", 0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    return GitLog(log)


def test_simulate_of_a_loop_with_loopbacks_starts_no_git(project, write_loop, gits):
    write_loop(AGAIN)
    result = simulate(project, "again", "test:fail,test:fail")
    assert result["status"] == "done" and result["path"] == ["build", "test"] * 3
    assert gits.calls() == []  # a throwaway directory has nothing to restore: no checkpoint store, no snapshot
    assert not (project / ".odin-loop" / "checkpoints.git").exists()


PAUSING = AGAIN.replace("{mode: ai, check: tested", "{mode: ai+human, check: tested")  # test pauses: revert works


def test_a_dry_stage_that_wrote_nothing_takes_no_snapshot_and_diff_and_revert_say_the_same(project, write_loop, gits):
    write_loop(PAUSING)
    engine = Engine(project)
    state = engine.start("again", "t", dry=DryOptions(gates=["test:fail"]))
    assert state.status == "awaiting_approval"
    one, two, three, four = state.history
    assert [(e.stage, e.result) for e in state.history] == [("build", "pass"), ("test", "fail"), ("build", "pass"),
                                                            ("test", "pass")]
    # build's first execution writes its placeholder: a snapshot before it and one after; the gate between ran
    # nothing, so test starts from build's after and takes one after its placeholder; build's and test's second
    # executions write nothing (the dry worker never overwrites) and take none: 3 snapshots, not 8
    assert gits.snapshots() == 3
    assert two.checkpoint == one.after
    assert three.checkpoint == three.after == two.after == four.checkpoint == four.after
    assert [(f.change.kind, f.change.path) for f in engine.diff("1").files] == [("added", "src/app.py")]
    assert [(f.change.kind, f.change.path) for f in engine.diff("2").files] == [("added", "tests/test_app.py")]
    assert engine.diff("3").files == [] and engine.diff("4").files == []
    net = engine.diff("build", net=True)
    assert sorted(f.change.path for f in net.files) == ["src/app.py", "tests/test_app.py"]

    state = engine.revert(to=2)  # back to before test's first execution: its placeholder goes, build's stays
    assert state.current_stage == "test"
    assert (project / "src" / "app.py").is_file() and not (project / "tests" / "test_app.py").exists()


TALK = """
name: talk
max_iterations: 3
stages:
  - id: poke
    gate: {mode: ai, check: poked}
  - id: chat
    gate: {mode: ai, check: talked}
  - id: look
    gate: {mode: ai, check: looked}
"""

TALK_SCRIPT = """
stages:
  poke:
    - tools: [{bash: {command: "echo hi > note.txt"}}]
    - text: poked
  chat:
    - text: nothing to do, I only talk
  look:
    - tools: [{bash: {command: "true"}}]
    - text: looked
default_verdict: {status: DONE, passed: true}
"""


def test_a_stage_that_only_talked_takes_no_snapshot_and_one_whose_bash_ran_does(project, write_loop, gits):
    write_loop(TALK)
    engine, _ = scripted_engine(project, TALK_SCRIPT)
    state = engine.start("talk", "t")
    assert state.status == "done"
    poke, chat, look = state.history
    # poke: a snapshot before and after its bash; chat, which only talked, starts from poke's after and takes
    # none; look's bash ran (and changed nothing): a snapshot after it, the same tree
    assert gits.snapshots() == 3
    assert chat.checkpoint == chat.after == poke.after == look.checkpoint == look.after
    assert [(f.change.kind, f.change.path) for f in engine.diff("poke").files] == [("added", "note.txt")]
    assert engine.diff("chat").files == [] and engine.diff("look").files == []


GENERATING = """
name: gen
max_iterations: 3
sandbox: off
stages:
  - id: build
    produces: [src/app.py]
    gate: {mode: ai, check: built, run: ["echo generated > gen.txt"]}
  - id: ship
    produces: [docs/ship.md]
    gate: {mode: ai, check: shipped}
"""


def test_what_a_gate_command_wrote_is_no_part_of_the_next_stage(project, write_loop, gits):
    write_loop(GENERATING)
    engine = Engine(project)
    state = engine.start("gen", "t", dry=DryOptions(run_commands=True, approve_all=True))
    assert state.status == "done" and (project / "gen.txt").is_file()
    build, ship = state.history
    assert ship.checkpoint != build.after  # a command ran after build's after: ship's before is taken anew
    assert [f.change.path for f in engine.diff("ship").files] == ["docs/ship.md"]
    assert gits.snapshots() == 4


class WritesOnceThenFails:
    """Stands in for a model that writes its artifact (when missing, as the dry worker does), then fails once
    before the stage ends: the resumed execution writes nothing more."""

    def __init__(self):
        self.failed = False

    def perform(self, job, events):
        for path in job.produces.values():
            if not path.exists():
                path.write_text("work\n")
        if not self.failed:
            self.failed = True
            raise WorkerError("the API went away")
        return StageResult()

    def judge(self, job, events):
        return JudgeResult(Verdict(passed=True))


ONCE = """
name: once
max_iterations: 3
stages:
  - id: build
    produces: [src/app.py]
    gate: {mode: ai, check: built}
"""


def test_a_resumed_execution_that_wrote_nothing_more_still_shows_what_it_wrote_before(project, write_loop):
    write_loop(ONCE)
    engine = Engine(project, worker=WritesOnceThenFails())
    with pytest.raises(WorkerFailed, match="the API went away"):
        engine.start("once", "t")
    state = engine.run()
    assert state.status == "done", state.failure_reason  # build resumes from the checkpoint taken before its first attempt
    assert [(f.change.kind, f.change.path) for f in engine.diff("build").files] == [("added", "src/app.py")]
