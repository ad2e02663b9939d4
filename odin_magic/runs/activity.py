"""What a stage's own tools and commands did, and when: the record that attribution reads.

A stage's worker acts only through its tools (:mod:`odin_magic.workers.toolbox`): each file-tool call and each
bash command is an *activity window* (its start and end), and the files the write and edit tools wrote are
named. A file of the project that changed while none of them was active was changed by someone else (an
editor's save, another terminal): :mod:`odin_magic.engine.attribution` reads this record to tell them apart.

Times are taken on the **file system's clock**: a probe file in the run dir is touched and its ``st_ctime``
read (:class:`FsClock`), so a window and a file's ``st_ctime`` compare on one clock, at one granularity
(a coarse kernel clock, a network file system's server clock). ``st_ctime``, not ``st_mtime``: a command
can set a file's mtime to any time (``touch -d``), never its ctime.

When the record cannot vouch for a time, it says so and attribution keeps today's rule (every change is
the stage's): a bash command that left a process running (it may write later) keeps the stage active
from that command on; an unsandboxed shell (a daemon can leave its tree unseen) likewise from its first
command; a record without an end (the stage's tools were not closed) vouches for nothing.

The records live in this process (one driver drives a run at a time), by run dir and stage; a stage's
toolbox begins its record anew (:func:`begin`).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

CLOCK_FILE = ".activity-clock"  # in the run dir: touched to read the file system's clock


class FsClock:
    """The file system's clock, as a changed file's ``st_ctime_ns`` would show it (else the wall clock)."""

    def __init__(self, run_dir: Path | None):
        self.fd: int | None = None
        if run_dir is None:
            return
        try:
            self.fd = os.open(Path(run_dir) / CLOCK_FILE, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError:
            pass

    @property
    def exact(self) -> bool:
        return self.fd is not None

    def now(self) -> int:
        if self.fd is None:
            return time.time_ns()
        try:
            os.utime(self.fd)
            return os.fstat(self.fd).st_ctime_ns
        except OSError:
            return time.time_ns()

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


@dataclass
class StageActivity:
    """One stage execution's activity (see the module docstring)."""

    run_dir: Path | None  # None: no run dir known, so no clock (the record vouches for nothing)
    boxed: bool  # the bash tool's shell runs in the sandbox (its processes cannot leave its tree)
    begin: int = 0
    end: int | None = None
    windows: list[tuple[int, int]] = field(default_factory=list)
    open_from: int | None = None  # active from then to the end (a bash command left something running)
    written: set[str] = field(default_factory=set)  # real paths the write and edit tools wrote
    clock: FsClock = field(init=False)  # set in __post_init__

    def __post_init__(self) -> None:
        self.clock = FsClock(self.run_dir)
        self.begin = self.clock.now()

    @contextlib.contextmanager
    def acting(self, tool: str) -> Iterator[None]:
        """One tool call (a bash command included): its window, from before it acts to after it ended."""
        start = self.clock.now()
        try:
            yield
        finally:
            if tool == "bash" and self.open_from is None and not (
                    self.boxed and self.run_dir is not None and shell_settled(self.run_dir)):
                self.open_from = start
            self.windows.append((start, self.clock.now()))

    def wrote(self, path: Path) -> None:
        self.written.add(os.path.realpath(path))

    def close(self) -> None:
        """The stage's tools are closed (its shell ended): nothing of its own acts after this."""
        self.end = self.clock.now()
        if not self.clock.exact:
            self.end = None  # the wall clock against a file's ctime: nothing vouched for
        self.clock.close()

    def idle_at(self, ctime_ns: int, slack_ns: int) -> bool:
        """True when nothing of the stage acted at ``ctime_ns`` (file-system time): within the stage's span,
        outside every window (widened by ``slack_ns``), before any open end."""
        if self.end is None or not self.begin <= ctime_ns <= self.end:
            return False
        if self.open_from is not None and ctime_ns >= self.open_from - slack_ns:
            return False
        return not any(a - slack_ns <= ctime_ns <= b + slack_ns for a, b in self.windows)


_RECORDS: dict[tuple[str, str], StageActivity] = {}
_LOCK = threading.Lock()


def _key(run_dir: Path | str, stage_id: str) -> tuple[str, str]:
    return os.path.realpath(run_dir), stage_id


def begin(run_dir: Path | str, stage_id: str, boxed: bool) -> StageActivity:
    """A new record for a stage execution's tools (replacing the stage's previous one)."""
    record = StageActivity(Path(run_dir) if str(run_dir) else None, boxed)
    if record.run_dir is None:
        return record
    with _LOCK:
        previous = _RECORDS.get(_key(run_dir, stage_id))
        _RECORDS[_key(run_dir, stage_id)] = record
    if previous is not None:
        previous.clock.close()  # its tools were never closed: it vouches for nothing, and holds no file open
    return record


def lookup(run_dir: Path | str, stage_id: str) -> StageActivity | None:
    """The last record of ``stage_id``'s tools in ``run_dir`` in this process, if any."""
    with _LOCK:
        return _RECORDS.get(_key(run_dir, stage_id))


def shell_settled(run_dir: Path) -> bool:
    """True when every bash shell this driver runs for ``run_dir`` is idle: its guard's process tree is a bare
    chain (guard, sandbox, shell) ending in the shell, with no command or background job left running."""
    try:
        records = [json.loads(p.read_text()) for p in (Path(run_dir) / "processes").glob("*.json")]
        children = _children()
    except (OSError, ValueError):
        return False
    for data in records:
        if not isinstance(data, dict) or data.get("kind") != "bash" or data.get("driver") != os.getpid():
            continue
        parent, pid = None, data.get("pgid")
        while True:
            below = children.get(pid, [])
            if len(below) > 1:
                return False
            if not below:
                break
            parent, pid = pid, below[0]
        # the leaf must be the shell itself: not a command, nor the shell's own fork (still named bash until it
        # execs the command, or a subshell) — whose parent is the shell
        if pid != data.get("pgid") and (_comm(pid) != "bash" or _comm(parent) == "bash"):
            return False
    return True


def _children() -> dict[int, list[int]]:
    """Live (not zombie) processes by parent pid, from /proc."""
    found: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[0] not in ("Z", "X"):
            found.setdefault(int(fields[1]), []).append(int(entry.name))
    return found


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""
