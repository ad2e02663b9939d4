"""Whether the bash tool's shell is idle (runs.activity.shell_settled): a process it left running keeps the
stage active, so an edit made meanwhile is the stage's (engine.attribution)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from odin_magic.core.processes import record_group
from odin_magic.runs import activity


def _tree_of(pid: int) -> list[str]:
    """The names down the single-child chain below ``pid`` (the first child at each level)."""
    names, children = [], activity._children()
    while children.get(pid):
        pid = sorted(children[pid])[0]
        names.append(activity._comm(pid))
    return names


def _wait_for(condition, what: str, deadline: float = 30.0) -> None:
    """Wait until ``condition()`` holds (a process tree forming), failing after ``deadline`` seconds."""
    end = time.monotonic() + deadline
    while not condition():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        os.sched_yield()


def test_a_shell_whose_fork_has_not_yet_run_its_command_is_not_settled(tmp_path):
    """A background job is a fork of the shell, named bash until it execs its command (under load that can
    take a while): a bash below the shell is the shell's child, not the shell: not settled. The shell alone
    is."""
    guard = subprocess.Popen(["sh", "-c", 'bash -c "(read x); read y"; :'], stdin=subprocess.PIPE,
                             start_new_session=True)
    try:
        record_group(tmp_path, guard.pid, "bash", "the bash tool's shell")
        _wait_for(lambda: _tree_of(guard.pid) == ["bash", "bash"], "the shell and its subshell")
        assert not activity.shell_settled(tmp_path)  # the subshell (a bash) below the shell
        guard.stdin.write(b"\n")  # the subshell's read returns: the shell alone waits on its own read
        guard.stdin.flush()
        _wait_for(lambda: _tree_of(guard.pid) == ["bash"], "the subshell's end")
        assert activity.shell_settled(tmp_path)
    finally:
        os.killpg(guard.pid, signal.SIGKILL)  # the guard's whole group: the shell too
        guard.wait()
