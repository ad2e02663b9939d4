"""Checkpoints without the git tax (issue 18, item 12): ``odin simulate`` takes none; a drive skips a snapshot
when nothing can have changed since its last one (no tool call, no command, no artifact written) and reuses
that snapshot's id, so that diff and revert say what they said before. Every ``git`` the engine starts is
counted by a real ``git`` script put first on PATH, which logs its arguments and runs the real git."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from odin_magic.engine.orchestrator import Engine, simulate
from odin_magic.runs.state import DryOptions

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
