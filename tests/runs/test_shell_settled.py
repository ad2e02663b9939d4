"""Whether the bash tool's shell is idle (runs.activity.shell_settled): a process it left running keeps the
stage active, so an edit made meanwhile is the stage's (engine.attribution)."""

from __future__ import annotations

import os
import signal
import subprocess

from odin_magic.core.processes import record_group
from odin_magic.runs import activity


def test_a_shell_whose_fork_has_not_yet_run_its_command_is_not_settled(tmp_path):
    """A background job is a fork of the shell, named bash until it execs its command (under load that can
    take a while): a bash below the shell is the shell's child, not the shell: not settled. The shell alone
    is. (The guard, the shell and its subshell say where they are on stdout: no polling.)"""
    guard = subprocess.Popen(["sh", "-c", 'bash -c "(echo in; read x); echo out; read y"; :'],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
    try:
        record_group(tmp_path, guard.pid, "bash", "the bash tool's shell")
        assert guard.stdout.readline() == b"in\n"  # the subshell (a bash) runs below the shell
        assert not activity.shell_settled(tmp_path)
        guard.stdin.write(b"\n")  # the subshell's read returns; the shell waits for it, then on its own read
        guard.stdin.flush()
        assert guard.stdout.readline() == b"out\n"  # the subshell has ended: the shell alone
        assert activity.shell_settled(tmp_path)
    finally:
        os.killpg(guard.pid, signal.SIGKILL)  # the guard's whole group: the shell too
        guard.wait()
