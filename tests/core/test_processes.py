"""A gate command never outlives its driver (issue 9, item 5).

A real ``odin run`` subprocess is SIGKILLed in the middle of a gate command
that runs until the test lets it end. The command tells the test (through a
FIFO, so the test waits on the event and never sleeps) its process group; afterwards no process of that group
may remain (waited on with pidfds, at most one second), and a resume runs the
command exactly once (it appends to a file to count its starts and ends).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc, waits on pidfds")

#: Counts its starts and ends, tells the test its process group through the FIFO, then runs (a child process,
#: ``head``) until the test writes a byte to go.fifo (``let_go``), which it opened before telling the test.
GATE = ('echo start >> "$ODIN_PROJECT_DIR/runs.txt"; exec 3< "$ODIN_PROJECT_DIR/go.fifo"; '
        'cut -d" " -f5 /proc/$$/stat > "$ODIN_PROJECT_DIR/ready.fifo"; '
        'head -c 1 <&3 > /dev/null; echo end >> "$ODIN_PROJECT_DIR/runs.txt"')

#: These tests read the host's process groups from inside the commands: the loops run unsandboxed
#: (a sandboxed command sees its own PID namespace); tests/core/test_sandbox.py kills sandboxed ones.
LOOP = yaml.safe_dump({
    "name": "slowgate",
    "max_iterations": 2,
    "sandbox": "off",
    "stages": [{"id": "build", "produces": ["out.md"],
                "gate": {"mode": "ai", "check": "the gate command passes", "run": [GATE]}}],
})


def odin(project: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "odin_magic", *args, "--project", str(project)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def members(pgid: int) -> list[int]:
    """The live (not zombie) processes of group ``pgid``, read from /proc."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                text = (entry / "stat").read_text()
            except OSError:
                continue
            fields = text[text.rfind(")") + 2:].split()
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                out.append(int(entry.name))
    return out


def ready(fifo: Path, driver: subprocess.Popen, timeout: float = 120) -> int:
    """Wait until the gate command has started (it writes its process group to the FIFO)."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        data = b""
        deadline = time.monotonic() + timeout
        while not data.endswith(b"\n"):
            assert driver.poll() is None, driver.communicate()
            left = deadline - time.monotonic()
            assert left > 0, "the gate command never started"
            if select.select([fd], [], [], min(left, 1.0))[0]:
                data += os.read(fd, 100)
        return int(data)
    finally:
        os.close(fd)


def all_exit_within(pids: list[int], seconds: float) -> list[int]:
    """Wait (on pidfds) until every process of ``pids`` has exited, at most ``seconds``; the ones left."""
    fds = {}
    for pid in pids:
        try:
            fds[os.pidfd_open(pid)] = pid
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + seconds
    try:
        while fds:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for fd in select.select(list(fds), [], [], left)[0]:
                os.close(fd)
                del fds[fd]
        return sorted(fds.values())
    finally:
        for fd in fds:
            os.close(fd)


def group_ends_within(pgid: int, seconds: float) -> list[int]:
    """Wait until no process of group ``pgid`` is left, at most ``seconds``; the ones left."""
    deadline = time.monotonic() + seconds
    while True:
        left = members(pgid)
        if not left or time.monotonic() >= deadline:
            return left
        all_exit_within(left, deadline - time.monotonic())


@pytest.fixture
def slowgate(project: Path, write_loop):
    """The project with the slowgate loop; the test holds go.fifo open (read-write: never blocks) for as long
    as it runs, so a command's open of it never blocks and a byte written to it waits there to be read."""
    write_loop(LOOP)
    os.mkfifo(project / "ready.fifo")
    os.mkfifo(project / "go.fifo")
    held = os.open(project / "go.fifo", os.O_RDWR)
    yield project
    os.close(held)  # a command still reading (it failed to be killed) reads the end of the file and ends


def let_go(project: Path) -> None:
    """Let the gate command that is running end (it reads one byte from go.fifo)."""
    fd = os.open(project / "go.fifo", os.O_WRONLY | os.O_NONBLOCK)  # the fixture holds a reader: never blocks
    try:
        os.write(fd, b"x")
    finally:
        os.close(fd)


def start(project: Path) -> tuple[subprocess.Popen, int]:
    driver = odin(project, "run", "slowgate", "--task", "t", "--dry", "--run-commands")
    return driver, ready(project / "ready.fifo", driver)


def resume_and_finish(project: Path, at_ready=lambda: None) -> str:
    """Resume the run and let it finish; ``at_ready`` is called when the command has started again."""
    driver = odin(project, "run")
    ready(project / "ready.fifo", driver)
    at_ready()
    let_go(project)
    out, err = driver.communicate(timeout=120)
    assert driver.returncode == 0, err
    run_dir = next((project / ".odin-loop" / "runs").iterdir())
    assert json.loads((run_dir / "state.json").read_text())["status"] == "done"
    assert list((run_dir / "processes").iterdir()) == []  # every record is gone with its group
    return out + err


def test_killing_the_driver_kills_the_gate_command_and_a_resume_runs_it_once(slowgate: Path):
    driver, pgid = start(slowgate)
    group = members(pgid)
    assert pgid in group  # the command runs in a process group of its own
    run_dir = next((slowgate / ".odin-loop" / "runs").iterdir())
    assert json.loads((run_dir / "processes" / f"{pgid}.json").read_text())["pgid"] == pgid  # recorded first

    driver.send_signal(signal.SIGKILL)
    driver.communicate()
    assert group_ends_within(pgid, 1.0) == []

    resume_and_finish(slowgate)
    assert (slowgate / "runs.txt").read_text().split() == ["start", "start", "end"]


def test_terminating_the_driver_kills_the_gate_command_too(slowgate: Path):
    driver, pgid = start(slowgate)
    driver.send_signal(signal.SIGTERM)
    driver.communicate()
    assert group_ends_within(pgid, 1.0) == []
    assert (slowgate / "runs.txt").read_text().split() == ["start"]


def test_a_resume_kills_a_group_that_escaped_its_guard_before_running_again(slowgate: Path):
    driver, pgid = start(slowgate)
    os.kill(pgid, signal.SIGSTOP)  # the guard cannot act on its driver's death ...
    driver.send_signal(signal.SIGKILL)
    driver.communicate()
    os.kill(pgid, signal.SIGKILL)  # ... and dies: the command's shell and its `head` are left, orphaned
    assert all_exit_within([pgid], 10) == []
    assert members(pgid)  # still running

    def orphans_gone() -> None:  # opening the run killed the orphaned group before the stage re-ran
        assert members(pgid) == []

    output = resume_and_finish(slowgate, orphans_gone)
    assert f"killed the gate command `{GATE}` (process group {pgid})" in output
    assert (slowgate / "runs.txt").read_text().split() == ["start", "start", "end"]


def test_abandoning_a_run_kills_the_group_its_dead_driver_left(slowgate: Path):
    driver, pgid = start(slowgate)
    os.kill(pgid, signal.SIGSTOP)
    driver.send_signal(signal.SIGKILL)
    driver.communicate()
    os.kill(pgid, signal.SIGKILL)
    assert members(pgid)  # the command's shell (and its `head`) outlived guard and driver

    abandon = odin(slowgate, "abandon")
    out, err = abandon.communicate(timeout=120)
    assert abandon.returncode == 0, err
    assert members(pgid) == [] and f"(process group {pgid})" in out + err
    assert (slowgate / "runs.txt").read_text().split() == ["start"]


# -- the worker's bash tool ---------------------------------------------------------------------

#: Starts a background job, tells the test the shell's process group, then runs until the test lets it end
#: (``let_go``, as GATE).
BASH = ("sleep 30 & exec 3< go.fifo; echo $(cut -d' ' -f5 /proc/$$/stat) > ready.fifo; "
        "head -c 1 <&3 > /dev/null; echo end >> runs.txt; echo done > \"$ODIN_RUN_DIR/out.md\"")


@pytest.fixture
def scripted(project: Path, write_loop, tmp_path: Path):
    """A one-stage loop whose worker (the offline scripted model, through the real SDK) runs BASH."""
    write_loop(yaml.safe_dump({
        "name": "shell", "max_iterations": 2, "sandbox": "off",
        "stages": [{"id": "build", "produces": ["out.md"], "gate": {"mode": "ai", "check": "out.md exists"}}],
    }))
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({
        "stages": {"build": [{"tools": [{"bash": {"command": BASH, "timeout_ms": 120000}}]}, {"text": "done"}]},
        "default_verdict": {"passed": True, "reasons": ["out.md exists"]},
    }))
    os.mkfifo(project / "ready.fifo")
    os.mkfifo(project / "go.fifo")
    held = os.open(project / "go.fifo", os.O_RDWR)  # as slowgate
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "ODIN_"))}
    yield {**env, "ODIN_SCRIPT": str(script)}
    os.close(held)


def run_shell(project: Path, env: dict[str, str]) -> tuple[subprocess.Popen, int]:
    driver = subprocess.Popen([sys.executable, "-m", "odin_magic", "run", "shell", "--task", "t", "--project",
                               str(project)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True)
    return driver, ready(project / "ready.fifo", driver)


def test_the_bash_tools_shell_and_its_background_jobs_end_with_the_stage(project: Path, scripted):
    driver, pgid = run_shell(project, scripted)
    assert pgid != os.getpgid(driver.pid)  # the shell has a process group of its own
    let_go(project)
    out, err = driver.communicate(timeout=120)
    assert driver.returncode == 0, err
    assert members(pgid) == []  # `sleep 30 &` went with the shell
    run_dir = next((project / ".odin-loop" / "runs").iterdir())
    assert list((run_dir / "processes").iterdir()) == []


def test_killing_the_driver_kills_the_bash_tools_shell_and_all_it_runs(project: Path, scripted):
    driver, pgid = run_shell(project, scripted)
    run_dir = next((project / ".odin-loop" / "runs").iterdir())
    assert json.loads((run_dir / "processes" / f"{pgid}.json").read_text())["kind"] == "bash"
    driver.send_signal(signal.SIGKILL)
    driver.communicate()
    assert group_ends_within(pgid, 1.0) == []
    assert not (project / "runs.txt").exists()


def test_what_a_gate_command_leaves_running_ends_with_it(project: Path, write_loop):
    from odin_magic.engine.orchestrator import Engine
    from odin_magic.runs.state import DryOptions

    write_loop(yaml.safe_dump({
        "name": "daemon", "max_iterations": 1, "sandbox": "off",
        "stages": [{"id": "build", "produces": ["out.md"], "gate": {
            "mode": "ai", "check": "passes",
            "run": ['sleep 60 & cut -d" " -f5 /proc/$$/stat > "$ODIN_PROJECT_DIR/pgid.txt"']}}],
    }))
    state = Engine(project).start("daemon", "t", dry=DryOptions(run_commands=True))
    assert state.status == "done"
    pgid = int((project / "pgid.txt").read_text())
    assert members(pgid) == []  # the background `sleep 60` went with its command


@pytest.mark.slow
def test_a_kernel_that_dies_takes_its_runs_gate_command_along(slowgate: Path, tmp_path: Path, monkeypatch):
    from support.nbtools import Kernel

    script = tmp_path / "slowgate.script.yaml"  # the offline scripted model writes out.md, then the gate runs
    script.write_text(yaml.safe_dump({"stages": {"build": [
        {"tools": [{"bash": {"command": 'echo notes > "$ODIN_RUN_DIR/out.md"'}}]}, {"text": "done"}]}}))
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ODIN_SCRIPT", str(script))
    kernel = Kernel(slowgate)
    try:
        kernel.execute("%load_ext odin_magic")
        kernel.execute("%odin run slowgate --task t")  # the drive runs in a background thread of the kernel
        fd = os.open(slowgate / "ready.fifo", os.O_RDONLY | os.O_NONBLOCK)
        try:
            assert select.select([fd], [], [], 120)[0], "the gate command never started"
            pgid = int(os.read(fd, 100))
        finally:
            os.close(fd)
        assert members(pgid)
    finally:
        os.kill(kernel.km.provisioner.pid, signal.SIGKILL)  # as a crash or an impatient restart does
        kernel.kc.stop_channels()
    assert group_ends_within(pgid, 1.0) == []


@pytest.mark.parametrize("guard_vars", [
    {},  # no driver, no guard: the shell was not started by odin's driver
    {"ODIN_GUARD_DRIVER": "1", "ODIN_GUARD_PYTHON": sys.executable, "ODIN_GUARD_SCRIPT": "/nonexistent/guard.py"},
], ids=["no-driver", "driver-not-its-parent"])
def test_a_sandboxed_bash_tool_shell_whose_guard_cannot_start_refuses_to_run(tmp_path: Path, guard_vars):
    """The shell guard fails closed: with the sandbox on (ODIN_GUARD_SANDBOX), a shell that does not become
    the guard (its parent is not the driver, the guard's variables are missing) runs nothing, unsandboxed."""
    from odin_magic.core.processes import SHELL_GUARD_BASH

    env = {"PATH": os.environ["PATH"], "BASH_ENV": str(SHELL_GUARD_BASH),
           "ODIN_GUARD_SANDBOX": json.dumps(["/usr/bin/bwrap", "--", "/bin/bash"]), **guard_vars}
    done = subprocess.run(["/bin/bash", "-c", f"touch '{tmp_path}/ran'; echo ran"], env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 126 and "ran" not in done.stdout and not (tmp_path / "ran").exists(), done
    assert "sandbox could not start" in done.stderr
    plain = subprocess.run(["/bin/bash", "-c", "echo ran"], env={**env, "ODIN_GUARD_SANDBOX": ""},
                           capture_output=True, text=True, timeout=30)
    assert plain.stdout == "ran\n"  # without the sandbox, a shell that cannot be guarded is a plain shell


def test_a_command_run_with_the_bash_tools_environment_is_not_taken_for_its_shell(tmp_path: Path):
    """post_edit commands run with the bash tool's environment: a bash they start is a plain shell, not the
    bash tool's (it would try to become the shell guard, or refuse to run outside the sandbox)."""
    from odin_magic.core.commands import run_command
    from odin_magic.core.processes import shell_guard_env
    from odin_magic.loop.schema import GateCommand

    env = {**os.environ, **shell_guard_env(tmp_path, ["/usr/bin/bwrap", "--", "/bin/bash"])}
    ev = run_command(GateCommand(cmd="bash -c 'env; echo plain'"), tmp_path, env)
    assert ev.ok and ev.stdout_tail.endswith("plain\n"), ev
    assert "ODIN_GUARD_" not in ev.stdout_tail and "shell_guard.bash" not in ev.stdout_tail
