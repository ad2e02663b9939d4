"""Commands run in a sandbox (issue 20, part 1): real bubblewrap, real commands through ``run_command``.

What a sandboxed command can write (the project, its stage's run-dir ``produces``) and cannot (``.odin-loop/``,
``.git/``, ``$HOME``, ``/tmp`` outside its private one, anything outside the project), its environment
(no secret), its network (off unless allowed), its ``/proc`` (no driver) and its children (gone with it).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from odin_magic.core import sandbox
from odin_magic.core.commands import command_env, run_command
from odin_magic.core.errors import ConfigError
from odin_magic.loop.schema import GateCommand
from odin_magic.loop.validation import validate_text

PROBE = sandbox.probe()
pytestmark = pytest.mark.skipif(not PROBE.works, reason=f"bubblewrap cannot run here: {PROBE.reason}")

KEY = "sk-ant-test-key-0123456789abcdef"
DB_SECRET = "hunter2-but-much-longer"


@pytest.fixture
def box(tmp_path: Path):
    """A project with .git/ and .odin-loop/runs/r1 (its loop.json), and a runner of sandboxed commands."""
    project = tmp_path / "project"
    run_dir = project / ".odin-loop" / "runs" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "loop.json").write_text('{"name": "x"}\n')
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "src").mkdir()

    def run(cmd: str, network: bool = False, writable=((run_dir / "spec.md", False),), cwd: Path = project):
        policy = sandbox.stage_policy("bwrap", list(writable), network)
        return run_command(GateCommand(cmd=cmd, timeout=60), cwd, command_env(project, run_dir, "r1", "build", policy))

    return project, run_dir, run


def test_a_sandboxed_command_writes_the_project_and_its_produced_artifact_only(box, tmp_path: Path):
    project, run_dir, run = box
    assert run('echo ok > src/f.py && echo spec > "$ODIN_RUN_DIR/spec.md"').ok
    assert (project / "src" / "f.py").read_text() == "ok\n" and (run_dir / "spec.md").read_text() == "spec\n"
    outside = tmp_path / "outside"
    outside.mkdir()
    home = Path.home() / f".odin-sandbox-test-{uuid.uuid4().hex}"
    host_tmp = Path("/tmp") / f"odin-sandbox-test-{uuid.uuid4().hex}"
    for target in (run_dir / "loop.json", project / ".odin-loop" / "evil", project / ".git" / "hooks" / "pre-commit",
                   project / ".git" / "config", home):
        ev = run(f"echo evil > '{target}'")
        assert not ev.ok and "Read-only file system" in ev.stderr_tail, (target, ev)
    assert not run(f"echo evil > '{outside}/f'").ok  # under /tmp: not even there in the sandbox's own /tmp
    assert (run_dir / "loop.json").read_text() == '{"name": "x"}\n'
    assert not (project / ".odin-loop" / "evil").exists() and not (project / ".git" / "hooks" / "pre-commit").exists()
    assert not home.exists() and not (outside / "f").exists()
    ev = run(f"echo private > '{host_tmp}' && cat '{host_tmp}'")  # its own /tmp: writable, gone with it
    assert ev.ok and ev.stdout_tail == "private\n" and not host_tmp.exists()


def test_a_produced_artifact_it_did_not_write_stays_missing(box):
    _, run_dir, run = box
    assert run("true", writable=[(run_dir / "spec.md", False), (run_dir / "harness", True)]).ok
    assert not (run_dir / "spec.md").exists()  # the empty file made to bind it is gone again


def test_a_planted_link_in_the_run_dir_is_never_bound_writable(box, tmp_path: Path):
    _, run_dir, run = box
    (run_dir / "spec.md").symlink_to(run_dir / "loop.json")
    ev = run('echo evil > "$ODIN_RUN_DIR/spec.md"')
    assert not ev.ok and (run_dir / "loop.json").read_text() == '{"name": "x"}\n'


def test_the_environment_has_no_key_and_no_configured_secret(box, monkeypatch):
    _, _, run = box
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("COPY_OF_THE_KEY", KEY)
    monkeypatch.setenv("DB_PASSWORD", DB_SECRET)
    monkeypatch.setenv("ODIN_SECRET_VARS", "DB_PASSWORD")
    ev = run("env")
    assert ev.ok and "ODIN_RUN_DIR=" in ev.stdout_tail
    for name in ("ANTHROPIC_", "COPY_OF_THE_KEY", "DB_PASSWORD=", "redacted"):  # redaction would hide a leak: no trace
        assert name not in ev.stdout_tail


def test_no_network_unless_allowed(box):
    _, _, run = box
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        port = listener.getsockname()[1]
        connect = f"python -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=10); print('in')\""
        closed = run(connect)
        assert not closed.ok and "in" not in closed.stdout_tail
        assert run(connect, network=True).stdout_tail == "in\n"


#: Prints how many processes' command lines hold each marker (given reversed: the scan's own does not hold them).
COUNT_IN_PROC = ("import pathlib, sys; seen = [p.read_bytes() for p in pathlib.Path('/proc').glob('[0-9]*/cmdline')]; "
                 "print(*(sum(m[::-1].encode() in c for c in seen) for m in sys.argv[1:]))")


def test_proc_shows_its_own_processes_only(box):
    _, _, run = box
    host_marker, own_marker = f"odin-host-{uuid.uuid4().hex}", f"odin-own-{uuid.uuid4().hex}"
    host = subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)", host_marker],
                            stdout=subprocess.PIPE)  # a process of the host, its marker in its command line
    try:
        assert host.stdout.readline() == b"up\n" and host_marker in Path(f"/proc/{host.pid}/cmdline").read_text()
        ev = run(f": {own_marker}; python -c \"{COUNT_IN_PROC}\" {own_marker[::-1]} {host_marker[::-1]}")
    finally:
        host.kill()
        host.wait()
        host.stdout.close()
    own, seen_host = map(int, ev.stdout_tail.split())
    assert ev.ok and own >= 1  # the scan sees the sandboxed shell itself
    assert seen_host == 0  # and no process of the host: a PID namespace of its own


def _running(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _gone_within(marker: str, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := _running(marker)) and time.monotonic() < deadline:
        for pid in left:  # wait on the process itself, not a clock
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                continue
            import select
            select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            os.close(fd)
    return _running(marker)


def test_what_it_started_dies_with_it(box):
    project, _, run = box
    marker = f"odin-sandbox-child-{uuid.uuid4().hex}"
    ev = run("mkfifo ready.fifo || exit 1; "  # the child says it runs through the FIFO: the shell waits on that event
             f"python -c \"import time; open('ready.fifo', 'w').write('started'); time.sleep(300)\" {marker} & "
             "read -r said < ready.fifo; echo \"$said\"")
    assert ev.ok and ev.stdout_tail == "started\n" and (project / "ready.fifo").exists(), ev
    assert _gone_within(marker, 10) == []


def test_a_mutation_scratch_copy_is_the_writable_tree(box, tmp_path: Path):
    project, run_dir, _ = box
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    policy = sandbox.stage_policy("bwrap", [], False)
    env = {**command_env(project, run_dir, "r1", "build", policy), "ODIN_PROJECT_DIR": str(scratch)}
    assert run_command(GateCommand(cmd="echo m > mutant.py"), scratch, env).ok
    assert (scratch / "mutant.py").read_text() == "m\n"
    ev = run_command(GateCommand(cmd=f"echo m > '{project}/src/x.py'"), scratch, env)
    assert not ev.ok and not (project / "src" / "x.py").exists()


def test_off_runs_the_command_as_it_is(box, tmp_path: Path):
    project, run_dir, _ = box
    env = command_env(project, run_dir, "r1", "build", sandbox.stage_policy("off", [], False))
    assert "ODIN_SANDBOX_ACTIVE" not in env
    assert run_command(GateCommand(cmd='echo x > "$ODIN_RUN_DIR/free"'), project, env).ok  # what off allows


def test_where_bwrap_cannot_run_auto_warns_and_bwrap_is_refused(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    sandbox.probe.cache_clear()
    try:
        assert "needs Linux" in sandbox.probe().reason
        warning = sandbox.resolve("auto").warning
        assert warning and "unsandboxed" in warning and "needs Linux" in warning
        with pytest.raises(sandbox.SandboxUnavailable, match="needs Linux"):
            sandbox.resolve("bwrap")
    finally:
        monkeypatch.undo()
        sandbox.probe.cache_clear()
    assert sandbox.probe().works


def test_the_user_setting_wins_and_a_bad_one_is_one_clear_line():
    assert sandbox.chosen_mode("bwrap", {"ODIN_SANDBOX": "off"}) == "off"
    assert sandbox.chosen_mode("off", {}) == "off"
    with pytest.raises(ConfigError, match="ODIN_SANDBOX") as err:
        sandbox.chosen_mode("auto", {"ODIN_SANDBOX": "maybe"})
    assert "auto, bwrap, off" in err.value.hint


def test_the_loop_fields_are_validated_with_their_line():
    text = "name: x\nmax_iterations: 1\nsandbox: maybe\nstages:\n  - id: a\n    network: perhaps\n    gate: {mode: human}\n"
    report = validate_text(text, "x.yaml")
    fields = {(e.field, e.line) for e in report.errors}
    assert ("sandbox", 3) in fields and ("stages[0].network", 6) in fields


def test_a_bare_off_in_yaml_means_off():
    report = validate_text("name: x\nmax_iterations: 1\nsandbox: off\nnetwork: true\nstages:\n  - id: a\n"
                           "    gate: {mode: human, check: looks right}\n", "x.yaml")
    assert report.ok and report.loop.sandbox == "off" and report.loop.network_for(report.loop.stages[0]) is True


def test_a_command_in_a_scratch_copy_under_tmp_still_reads_the_run_dir(box):
    project, run_dir, _ = box
    (run_dir / "harness").mkdir()
    (run_dir / "harness" / "check.py").write_text("print('harness')\n")
    import tempfile
    with tempfile.TemporaryDirectory(prefix="odin-mutants-") as scratch:  # as the mutation gate's copies are
        policy = sandbox.stage_policy("bwrap", [], False)
        env = {**command_env(project, run_dir, "r1", "build", policy), "ODIN_PROJECT_DIR": scratch}
        ev = run_command(GateCommand(cmd='python "$ODIN_RUN_DIR/harness/check.py"'), Path(scratch), env)
        assert ev.stdout_tail == "harness\n", ev
        assert not run_command(GateCommand(cmd='echo x > "$ODIN_RUN_DIR/harness/check.py"'), Path(scratch), env).ok


def test_no_host_socket_is_reachable(box, monkeypatch):
    """An agent's socket in a directory of the host's /tmp cannot be connected to; /run is a new, empty one."""
    _, _, run = box
    import tempfile
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="odin-agent-") as agent_dir, socket.socket(socket.AF_UNIX) as agent:
        path = os.path.join(agent_dir, "agent.1")
        agent.bind(path)
        agent.listen(4)
        monkeypatch.setenv("SSH_AUTH_SOCK", path)
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus")
        connect = f"python -c \"import socket; socket.socket(socket.AF_UNIX).connect('{path}'); print('in')\""
        for network in (False, True):
            ev = run(connect, network=network)
            assert not ev.ok and "in" not in ev.stdout_tail, ev
        ev = run("env; echo run:; ls -A /run")
        assert ev.ok and ev.stdout_tail.split("run:\n")[1] == "", ev
        for name in ("SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"):
            assert name not in ev.stdout_tail
        assert run("cat /etc/resolv.conf > /dev/null", network=True).ok


def test_dependencies_linked_from_another_tmp_venv_are_readable(box, monkeypatch):
    """As CI's install test: a site-packages dir under /tmp whose packages are links into another dir under /tmp."""
    _, _, run = box
    import tempfile
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="odin-site-") as site, \
            tempfile.TemporaryDirectory(dir="/tmp", prefix="odin-other-") as other:
        (Path(other) / "dep").mkdir()
        (Path(other) / "dep" / "__init__.py").write_text("NAME = 'linked'\n")
        (Path(site) / "dep").symlink_to(Path(other) / "dep")
        monkeypatch.syspath_prepend(site)
        ev = run(f"cat '{site}/dep/__init__.py'")
        assert ev.ok and ev.stdout_tail == "NAME = 'linked'\n", ev


@pytest.mark.parametrize("name", [".git", ".odin-loop"])
def test_a_protected_dir_replaced_by_a_link_is_refused(box, name):
    """A worker that moved .git (or .odin-loop) into the writable tree and left a link in its place gets no
    command run: one clear error, and nothing written through the link."""
    project, _, run = box
    moved = project / "src" / "moved"
    (project / name).rename(moved)
    (project / name).symlink_to(moved)
    ev = run(f"echo evil > '{project / name}/planted' && echo wrote")
    assert not ev.ok and "wrote" not in ev.stdout_tail and not (moved / "planted").exists(), ev
    assert f"{name} is a symbolic link" in ev.stderr_tail, ev


def test_wrap_never_passes_a_secret_of_a_dirty_environment(box, monkeypatch):
    """wrap's own guarantee, for a caller that did not build its environment with command_env."""
    project, _, _ = box
    monkeypatch.setenv("DB_PASSWORD", DB_SECRET)
    monkeypatch.setenv("ODIN_SECRET_VARS", "DB_PASSWORD")
    dirty = {**os.environ, "ANTHROPIC_API_KEY": KEY, "COPY_OF_THE_KEY": KEY, "SSH_AUTH_SOCK": "/tmp/agent",
             **sandbox.stage_policy("bwrap", [], False).env_vars()}
    env = sandbox.wrap(["true"], project / "src", dirty).env
    assert not {"ANTHROPIC_API_KEY", "COPY_OF_THE_KEY", "DB_PASSWORD", "SSH_AUTH_SOCK"} & set(env)
    assert env["PATH"] == os.environ["PATH"]


def test_the_memory_key_cannot_be_read_by_a_sandboxed_command(box):
    """The key that seals project memory (learning/memory_seal.py) is no command's to read: a worker that had it
    could seal entries of its own. (A device is bound over it: reading it is refused.)"""
    project, _, run = box
    key = project / ".odin-loop" / "memory.key"
    key.write_text("ab" * 32 + "\n")
    ev = run(f"cat '{key}'; cp '{key}' src/copy")
    copy = project / "src" / "copy"
    assert "abab" not in ev.stdout_tail + ev.stderr_tail and not (copy.exists() and copy.read_text().strip())
    assert key.read_text() == "ab" * 32 + "\n"  # the driver still reads it
