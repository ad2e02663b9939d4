"""Child processes that never outlive their driver.

A gate command runs in a process group of its own, under a small ``sh``
guard (:data:`GUARD`):

1. The guard starts in a new session (its pid is the group id) and, on Linux,
   asks the kernel for ``SIGTERM`` when its parent (the driver) dies
   (``prctl(PR_SET_PDEATHSIG)``, set between fork and exec).
2. It waits for a ``go`` line on its stdin. The driver first records the
   group in the run dir (``processes/<pgid>.json``), then says ``go``: the
   command never runs unrecorded. A driver that dies before saying ``go``
   closes the pipe, and the guard exits without running anything.
3. It runs the command in the background and waits for it, so that the
   ``SIGTERM`` of a dead driver is handled at once: the guard kills its whole
   group (``kill -9 0``), the command and all it started.

What the kernel cannot do (another OS; a guard killed itself) the next driver
does: :func:`reap_orphans` (called when a run is opened for driving, under
the run's lock, so by then the driver that wrote a record is gone) kills
every recorded group that is still there, before anything re-runs, and
removes the records. A group is only killed when it is provably the one
recorded: same boot, and a leader with the recorded start time or a member
whose environment names this run dir.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Mapping

RECORDS_DIR = "processes"  # in the run dir: one record per live process group

#: The guard: $1 is the command. See the module docstring.
GUARD = (
    "trap 'kill -9 0' TERM HUP\n"
    "IFS= read -r go || exit 125\n"
    '[ "$go" = go ] || exit 125\n'
    'sh -c "$1" </dev/null &\n'
    "wait $!\n"
)

PR_SET_PDEATHSIG = 1
_LINUX = sys.platform.startswith("linux")
_prctl: Any = None
if _LINUX:
    try:
        _prctl = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        _prctl = None


def _die_with_parent(parent: int):
    """A ``preexec_fn``: the child gets SIGTERM when ``parent`` dies (Linux); exits if it already has."""

    def preexec() -> None:  # runs in the child between fork and exec: nothing but a syscall
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(125)

    return preexec


# -- records ----------------------------------------------------------------------------------


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(process group, state, start time) of ``pid`` from /proc, or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    fields = text[text.rfind(")") + 2 :].split()  # after "pid (comm) "
    try:
        return int(fields[2]), fields[0], int(fields[19])
    except (IndexError, ValueError):
        return None


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of the group ``pgid`` (Linux; elsewhere [] when the group is gone)."""
    if not Path("/proc/self/stat").exists():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [pgid]
    members = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            info = _stat(int(entry.name))
            if info is not None and info[0] == pgid and info[1] not in ("Z", "X"):
                members.append(int(entry.name))
    return members


@dataclass
class Record:
    path: Path
    data: dict[str, Any]

    def forget(self) -> None:
        self.path.unlink(missing_ok=True)


def record_group(run_dir: Path, pgid: int, kind: str, cmd: str, driver: int | None = None) -> Record:
    """Write ``processes/<pgid>.json`` in ``run_dir`` (atomically)."""
    info = _stat(pgid)
    data = {
        "pgid": pgid, "kind": kind, "cmd": cmd[:500], "driver": driver or os.getpid(), "host": socket.gethostname(),
        "boot_id": _boot_id(), "start": info[2] if info else None, "run_dir": str(run_dir),
        "since": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    folder = Path(run_dir) / RECORDS_DIR
    folder.mkdir(exist_ok=True)
    path = folder / f"{pgid}.json"
    # core.atomic.write_atomic's steps, written out: this file runs alone as the shell guard (python -I)
    fd, tmp = tempfile.mkstemp(prefix=f".{pgid}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(data))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Record(path, data)


def _ours(data: dict[str, Any], members: list[int]) -> bool:
    """Whether the live group ``data["pgid"]`` is provably the one recorded."""
    if data.get("host") != socket.gethostname():
        return False
    boot = _boot_id()
    if boot is None:  # not Linux: the run lock says the recording driver is gone; trust the record
        return True
    if data.get("boot_id") != boot:
        return False  # recorded before a reboot: that group is long gone
    pgid = data.get("pgid")
    leader = _stat(pgid) if isinstance(pgid, int) else None
    if leader is not None and data.get("start") is not None:
        return leader[2] == data["start"]
    marker = f"ODIN_RUN_DIR={data.get('run_dir')}".encode()
    for pid in members:
        try:
            if marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                return True
        except OSError:
            continue
    return False


def kill_group(pgid: int, wait: float = 5.0) -> bool:
    """SIGKILL the group and wait (up to ``wait`` s) until none of it is left; True when it is gone."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return not group_members(pgid)
    deadline = time.monotonic() + wait
    while group_members(pgid):  # SIGKILL is not instant for a process in the middle of a syscall
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def reap_orphans(run_dir: Path, kind: str | None = None) -> list[str]:
    """Kill the process groups a dead driver left in ``run_dir``; one notice per group killed.

    Call it holding the run's lock (so the driver that wrote a record is gone),
    or with ``kind`` for the groups of that kind this driver has done with."""
    folder = Path(run_dir) / RECORDS_DIR
    if not folder.is_dir():
        return []
    notices = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            if kind is None:
                path.unlink(missing_ok=True)  # a record cut short by a crash
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            pgid = int(data["pgid"])
        except (OSError, ValueError, KeyError, TypeError):
            path.unlink(missing_ok=True)
            continue
        if kind is not None and data.get("kind") != kind:
            continue
        members = group_members(pgid)
        if members and _ours(data, members):
            gone = kill_group(pgid)
            what = ("bash tool's shell" if data.get("kind") == "bash"
                    else f"{data.get('kind', 'a')} command `{data.get('cmd', '?')}`")
            notices.append(
                f"killed the {what} (process group {pgid}) left running by driver pid {data.get('driver')}"
                + ("" if gone else "; some of its processes did not end"))
        path.unlink(missing_ok=True)
    return notices


# -- a guarded command -------------------------------------------------------------------------


@dataclass(frozen=True)
class Output:
    """Where a command's output goes: its standard output and standard error."""

    stdout: IO[bytes]
    stderr: IO[bytes]


class GuardedCommand:
    """A shell command in its own process group, recorded in ``record_dir`` (when given) before it runs."""

    def __init__(self, cmd: str, *, cwd: Path, env: Mapping[str, str], output: Output, record_dir: Path | None,
                 kind: str = "gate"):
        from odin_magic.core.sandbox import wrap  # not at the top: this file also runs alone (the shell guard)

        preexec = _die_with_parent(os.getpid()) if _prctl is not None else None
        env = without_shell_guard(env)  # it has a guard of its own: a bash it runs is a plain shell
        boxed = wrap(["/bin/sh", "-c", GUARD, "odin-guard", cmd], Path(cwd), env)  # bwrap when env says so
        self._placeholders = boxed.created
        try:
            self.proc = subprocess.Popen(
                boxed.argv, cwd=cwd, env=boxed.env, stdin=subprocess.PIPE,
                stdout=output.stdout, stderr=output.stderr, start_new_session=True, preexec_fn=preexec,
            )
        except BaseException:
            self._drop_placeholders()
            raise
        self.record: Record | None = None
        try:
            if record_dir is not None:
                self.record = record_group(record_dir, self.proc.pid, kind, cmd)
            assert self.proc.stdin is not None
            self.proc.stdin.write(b"go\n")
            self.proc.stdin.close()
        except BrokenPipeError:
            pass  # the guard is gone already: wait() reports how it ended
        except BaseException:
            self.kill()
            raise

    @property
    def pgid(self) -> int:
        return self.proc.pid

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the command; then kill what it left running in its group, and return its exit code.

        Where the OS has pidfds the guard is left a zombie until its group is
        killed, so that its id cannot be taken by another process meanwhile."""
        try:
            fd = os.pidfd_open(self.proc.pid)
        except (AttributeError, OSError):
            code = self.proc.wait(timeout=timeout)
            self._kill_group()
            return code
        try:
            if not select.select([fd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(self.proc.args, timeout or 0)
        finally:
            os.close(fd)
        self._kill_group()
        return self.proc.wait()

    def _kill_group(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def kill(self) -> None:
        """Kill the whole group (the command and everything it started), unless it has ended, and forget the record."""
        if self.proc.returncode is None:
            self._kill_group()
            self.proc.wait()
        self.forget()

    def forget(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        if self.record is not None:
            self.record.forget()
            self.record = None
        if self.proc.returncode is not None:
            self._drop_placeholders()

    def _drop_placeholders(self) -> None:
        from odin_magic.core.sandbox import drop_placeholders

        drop_placeholders(self._placeholders)
        self._placeholders = []


# -- the bash tool's shell ---------------------------------------------------------------------

#: Sourced by the bash tool's shell at its start (``BASH_ENV``): it becomes the shell guard.
SHELL_GUARD_BASH = Path(__file__).with_name("shell_guard.bash")


def shell_guard_env(run_dir: Path, shell: list[str] | None = None) -> dict[str, str]:
    """Variables that put the bash tool's shell (started by the SDK) under :func:`shell_guard`;
    ``shell``: the real shell's command line when not plain bash (under bwrap: the sandbox)."""
    return {
        **({"ODIN_GUARD_SANDBOX": json.dumps(shell)} if shell else {}),
        "BASH_ENV": str(SHELL_GUARD_BASH),
        "ODIN_GUARD_PYTHON": sys.executable,
        "ODIN_GUARD_SCRIPT": str(Path(__file__).resolve()),
        "ODIN_GUARD_DRIVER": str(os.getpid()),
        "ODIN_GUARD_RECORDS": str(run_dir),
    }


SHELL_GUARD_VARS = ("ODIN_GUARD_SANDBOX", "ODIN_GUARD_PYTHON", "ODIN_GUARD_SCRIPT", "ODIN_GUARD_DRIVER",
                    "ODIN_GUARD_RECORDS")


def without_shell_guard(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` less :func:`shell_guard_env`'s variables (the bash tool's environment is also its ``post_edit``
    commands'): a bash such a command runs must not take itself for the bash tool's shell (with the sandbox on,
    that shell refuses to run outside its guard)."""
    return {k: v for k, v in env.items()
            if k not in SHELL_GUARD_VARS and not (k == "BASH_ENV" and v == str(SHELL_GUARD_BASH))}


def shell_guard() -> int:
    """The bash tool's shell guard: ``python -I odin_magic/core/processes.py shell-guard`` (this file runs alone).

    Exec'd by the shell the SDK started (so with its pid, stdin and stdout):
    tied to the driver's death, leader of a new process group, recorded in the
    run dir; it runs the real shell as its child and, when that shell ends or
    the driver dies, kills the whole group (the shell's running command and
    background jobs)."""
    driver = int(os.environ.pop("ODIN_GUARD_DRIVER", "0") or 0)
    run_dir = os.environ.pop("ODIN_GUARD_RECORDS", "")
    os.environ.pop("ODIN_GUARD_PYTHON", None)
    os.environ.pop("ODIN_GUARD_SCRIPT", None)
    boxed = os.environ.pop("ODIN_GUARD_SANDBOX", "")  # the shell's bwrap command line (the driver made it)
    shell_argv = json.loads(boxed) if boxed else ["/bin/bash", "--noprofile", "--norc"]
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if driver and os.getppid() != driver:
        return 125  # the driver is gone already
    try:
        if os.getsid(0) != os.getpid():  # anthropic >= 2.16 starts the shell in a session of its own already
            os.setsid()
        pgid = os.getpid()
        if run_dir and os.path.isdir(run_dir):
            record_group(Path(run_dir), pgid, "bash", "the bash tool's shell", driver=driver or None)
    except OSError:  # the shell must work even so: carry on as a plain shell
        os.execv(shell_argv[0], shell_argv)

    def end_group(*_: Any) -> None:
        # this guard included. The record stays: the SDK may SIGKILL the guard at any moment once the
        # shell's stdin is closed, so the worker (after closing the shell) or the next driver removes it.
        os.killpg(pgid, signal.SIGKILL)

    signal.signal(signal.SIGTERM, end_group)
    signal.signal(signal.SIGHUP, end_group)
    shell = subprocess.Popen(shell_argv)
    shell.wait()
    end_group()
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["shell-guard"]:
        sys.exit(shell_guard())
    sys.exit("usage: python -m odin_magic.core.processes shell-guard")
