"""Run storage: run dirs, the append-only event log, state.json, and locks.

Layout (see ``docs/engine.md``)::

    <project>/.odin-loop/
        .gitignore              "*", itself included (custom loops in loops/ are re-included)
        project.lock            held while a run is created
        runs/<run-id>/
            events.jsonl        the authoritative, append-only event log
            state.json          a cache: the fold of the log up to ``log_seq``
            loop.json           the loop as it was when the run started
            driver.lock         held by the one process driving the run
            driver.json         who holds driver.lock (pid, host, command, since)
            gates/evidence.jsonl     the evidence of every gate evaluation, a line each

Every record of the log is one JSON line ``{"seq", "at", "type", ...}`` written
with one ``write`` and one fsync: that is the one fsync of a transition. The
run's state is a pure fold of the records (:func:`apply`). state.json is a
cache of the fold, replaced atomically and carrying ``log_seq``; the driver
refreshes it at every pause, end and stop and periodically in between
(:meth:`RunHandle.refresh_due`), so it is usually a few records behind the log
while a run is driven or after a crash. A reader that finds it behind folds in
the records after ``log_seq``, read from the log's end (the normal path, not
damage); one that is missing, corrupt or ahead is rebuilt from the whole log
and reported. A torn last line (a crash in the middle of an append) is ignored
by readers and cut off by the next driver.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator

import filelock

from odin_magic.core.atomic import open_append, write_atomic
from odin_magic.core.confine import LinkInPath
from odin_magic.core.filehash import FileHashes, file_sha256
from odin_magic.core.errors import RunLocked
from odin_magic.core import scratch
from odin_magic.core.processes import reap_orphans
from odin_magic.core.secrets import redact
from odin_magic.loop.schema import NAME_RE
from odin_magic.runs.errors import RunCorrupt, RunNotFound
from odin_magic.runs.evidence import EvidenceLog
from odin_magic.runs.fold import apply, fold
from odin_magic.runs.log import (
    LOG_NAME, cut_torn_tail, iter_log, last_record, read_log, records_after, sync_append
)
from odin_magic.runs.records import (
    SETTABLE, Record, RecordType, StatePatch, as_record, is_record, parse_record, patch_dict
)
from odin_magic.runs.statefile import read_state, state_json_pieces
from odin_magic.runs.state import RunState

#: names of this module's public surface that live in the modules it is made of (see the docstring)
__all__ = [
    "ABANDONED_MARK", "DRIVER_NAME", "GITIGNORE_TEXT", "LOG_NAME", "LOOP_NAME", "REFRESH_RECORDS",
    "REFRESH_SECONDS", "SETTABLE", "STATE_NAME", "Loaded", "Record", "RunCorrupt", "RunHandle", "RunLock",
    "RecordType", "RunNotFound", "RunStore", "StatePatch", "parse_record", "apply", "command_line", "cut_torn_tail", "fold", "is_record",
    "iter_log", "last_record", "load_run", "read_log", "records_after", "write_atomic",
]

STATE_NAME = "state.json"
ABANDONED_MARK = "abandoned.json"  # beside a damaged run the user gave up: it no longer blocks a new one
LOOP_NAME = "loop.json"
DRIVER_NAME = "driver.json"
LOCK_NAME = "driver.lock"
GITIGNORE_HEADER = "# Written by odin-magic: "
GITIGNORE_TEXT = (
    GITIGNORE_HEADER + "nothing here (this file included) shows in git status, a commit or a stash.\n"
    "*\n"
    "# custom loops are yours to commit\n"
    "!loops/\n"
    "!loops/**\n"
)
#: what earlier versions wrote: "!.gitignore" un-ignored the file itself, so `git status` showed
#: `?? .odin-loop/` and `git add -A` committed it; :meth:`RunStore.ensure_layout` mends it
_SELF_INCLUDE = "!.gitignore"

#: A driver refreshes state.json between pauses when it is this many records
#: behind the log or this many seconds old, whichever comes first, provided the
#: log has grown by at least state.json's size since the last refresh (so that
#: rewriting state.json never costs more bytes than the log itself: constant
#: per transition, however long the history).
REFRESH_RECORDS = 1000
REFRESH_SECONDS = 2.0


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -- reading a run ----------------------------------------------------------


@dataclass
class Loaded:
    state: RunState
    notice: str | None = None  # set when state.json had to be rebuilt from the log
    saved_seq: int | None = None  # the log_seq state.json holds (None: it holds none that can be used)


def load_run(run_dir: Path, driving: bool = False) -> Loaded:
    """Read a run's state without writing anything (safe while another process drives it).

    state.json is read once. Behind the log (a driver between refreshes, or one
    that was killed) is the normal case: the records after its ``log_seq`` are
    read from the log's end and folded in, and nothing is reported. Missing,
    corrupt or ahead of the log, the state is rebuilt from the whole log and
    the :class:`Loaded` carries a notice. ``driving``: the caller holds the
    run's lock and will replace state.json (one it never could, a directory, is
    :class:`RunCorrupt`).
    """
    log_path = run_dir / LOG_NAME
    last = last_record(log_path)
    if last is None:
        raise RunNotFound(f"{run_dir} holds no run (its event log is missing or empty)")
    cached: RunState | None = None
    problem = None
    state_path = run_dir / STATE_NAME
    if driving and state_path.is_dir():  # it could never be replaced by the state this driver saves
        raise RunCorrupt(f"{state_path} is a directory, not the run's state file",
                         hint=f"move it away (e.g. `mv {state_path} {state_path}.bad`): the state is rebuilt "
                              "from the event log")
    try:
        cached = read_state(state_path)
    except FileNotFoundError:
        problem = "state.json was missing"
    except ValueError:
        problem = "state.json was corrupt"
    except OSError as exc:  # a directory, unreadable, a symlink loop, ...
        problem = f"state.json could not be read ({exc.strerror or exc})"
    if cached is not None:
        saved = cached.log_seq
        if saved == last["seq"]:
            return Loaded(cached, saved_seq=saved)
        if saved < last["seq"]:
            state = fold(records_after(log_path, saved), cached, log_path)
            return Loaded(state, saved_seq=saved)
        problem = f"state.json was ahead of the event log (seq {cached.log_seq} > {last['seq']})"
    state = fold(iter_log(log_path), source=log_path)  # record by record: the log is never all in memory
    assert state is not None
    return Loaded(state, f"{problem}; run {state.run_id} rebuilt from its event log ({state.log_seq} events)")


# -- locks ------------------------------------------------------------------


def _holder_text(sidecar: Path) -> str:
    try:
        info = json.loads(sidecar.read_text(encoding="utf-8"))
        return (
            f"pid {info.get('pid')} on {info.get('host')} "
            f"(`{info.get('command')}`) since {info.get('since')}"
        )
    except (OSError, ValueError):
        return "another process (its details could not be read)"


def _driver_lock(run_dir: Path) -> filelock.FileLock:
    """The one-driver-per-run lock of ``run_dir`` (not taken yet; opened by name: check for a link first)."""
    return filelock.FileLock(str(run_dir / LOCK_NAME), thread_local=False)


class RunLock:
    """The one-driver-per-run lock, with a sidecar naming the holder."""

    def __init__(self, run_dir: Path, run_id: str):
        self.run_id = run_id
        self.sidecar = run_dir / DRIVER_NAME
        self._run_dir = run_dir
        self._lock = _driver_lock(run_dir)

    def acquire(self, command: str, since: str) -> None:
        if os.path.islink(self._lock.lock_file):  # the lock file is opened by name: never through a link
            raise LinkInPath.at(self._lock.lock_file, self._run_dir)
        try:
            self._lock.acquire(timeout=0)
        except filelock.Timeout:
            raise RunLocked(
                f"run {self.run_id} is being driven by {_holder_text(self.sidecar)}",
                hint="only one process drives a run at a time: wait for it to pause or finish, or stop it there",
            ) from None
        info = {"pid": os.getpid(), "host": socket.gethostname(), "command": command, "since": since}
        write_atomic(self.sidecar, json.dumps(info), within=self._run_dir)

    def release(self) -> None:
        try:
            self.sidecar.unlink(missing_ok=True)
        finally:
            self._lock.release()


def being_driven(run_dir: Path) -> bool:
    """Whether a process (this one included: the lock is per open file) drives the run in ``run_dir`` now. A link
    where the lock belongs is no driver's (:meth:`RunLock.acquire` refuses one) and is never opened."""
    lock = _driver_lock(run_dir)
    if os.path.islink(lock.lock_file):
        return False
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        return True
    except OSError:  # a run dir that cannot be locked: not known to be driven
        return False
    lock.release()
    return False


# -- a run held by its driver ----------------------------------------------


class RunHandle:
    """A run opened for driving: holds the run lock and appends to the log.

    Each :meth:`record` is one append and one fsync. state.json is refreshed by
    :meth:`save` when asked, when :meth:`refresh_due` says so, and on
    :meth:`close` (the end of every drive: a pause, the end of the run, a stop).
    """

    def __init__(self, run_dir: Path, state: RunState | None, lock: RunLock, saved_seq: int | None = None,
                 refresh_records: int = REFRESH_RECORDS, refresh_seconds: float = REFRESH_SECONDS):
        self.run_dir = run_dir
        self.state = state
        self._lock = lock
        self._log = open_append(run_dir / LOG_NAME, run_dir, binary=True)  # never through a link
        # gate evidence, appended before the gate record that names it; a line no record names is cut off
        last = next((e.evidence for e in reversed(state.history) if e.evidence), None) if state is not None else None
        self.evidence = EvidenceLog(run_dir, last, cut_unnamed=True)
        self.refresh_records = refresh_records
        self.refresh_seconds = refresh_seconds
        # the log_seq state.json holds: behind the state when the run was opened from a log that had grown since
        self._saved_seq = saved_seq if saved_seq is not None else -1 if state is not None else 0
        self._saved_at = time.monotonic()
        self._appended = 0  # log bytes appended since state.json was last written
        try:
            self._state_bytes = (run_dir / STATE_NAME).stat().st_size
        except OSError:
            self._state_bytes = 0
        self.closed = False
        self._loop_sha256: str | None = None  # read from the log's created record when first asked
        self._hashes = FileHashes()  # loop.json is hashed again only when its stat says it may have changed

    @property
    def run_id(self) -> str:
        return self.state.run_id

    def loop_changed(self) -> str | None:
        """:func:`loop_changed` of this run (the hash its log holds is read once)."""
        if self._loop_sha256 is None:
            self._loop_sha256 = recorded_loop_sha256(self.run_dir) or ""
        return loop_changed(self.run_dir, self._loop_sha256, self._hashes.sha256)

    def record(self, type: RecordType | str, at: str, *, save: bool | None = None, sync: bool = True,
               **fields: Any) -> Record:
        """Append one event (one write, one fsync) and fold it into the state; the record appended.

        ``fields`` are the record's other fields as its JSON object holds them; ``set`` (the state
        fields the transition changes) may be a :class:`~odin_magic.runs.records.StatePatch` or a dict.

        ``save``: True refreshes state.json now, False never here, None (the
        default) when the record pauses or ends the run (any status but
        ``running``), else when :meth:`refresh_due`. ``sync=False`` skips the fsync for a
        record that the next synced one makes durable with it (the same file,
        appended in order): a process crash loses nothing written; a power cut
        may lose it along with the transition it begins. A handle opened on a
        new run (state None) first records its ``created`` event. No configured
        secret's value reaches the log or the state (:mod:`odin_magic.core.secrets`)."""
        if "set" in fields:
            fields["set"] = patch_dict(fields["set"])
        fields = redact(fields)
        seq = self.state.log_seq + 1 if self.state is not None else 1
        record = {"seq": seq, "at": at, "type": getattr(type, "value", type), **fields}
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        self._log.write(line)
        if sync:
            sync_append(self._log.fileno())
        self._appended += len(line)
        self.state = apply(self.state, record)
        if save or (save is None and (self.state.status != "running" or self.refresh_due())):
            self.save()  # a pause or an end is saved before it is announced; a running run when due
        return as_record(record)

    def refresh_due(self) -> bool:
        """state.json is due a refresh: ``refresh_records`` behind or ``refresh_seconds`` old,
        and the log has grown by state.json's size since it was written (amortised: constant bytes per record)."""
        behind = self.state.log_seq - self._saved_seq
        if behind <= 0 or self._appended < self._state_bytes:
            return False
        return behind >= self.refresh_records or time.monotonic() - self._saved_at >= self.refresh_seconds

    def save(self) -> None:
        """Bring state.json up to date with the log (atomically)."""
        written = write_atomic(self.run_dir / STATE_NAME, state_json_pieces(self.state), within=self.run_dir)  # never whole in memory
        self._saved_seq = self.state.log_seq
        self._saved_at = time.monotonic()
        self._appended = 0
        self._state_bytes = written

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            if self.state is not None and self._saved_seq != self.state.log_seq:
                self.save()
        finally:
            try:
                self._log.close()
                self.evidence.close()
            finally:
                self._lock.release()


# -- the store --------------------------------------------------------------


def _mended_gitignore(text: str) -> str | None:
    """The text of a ``.odin-loop/.gitignore`` an earlier version wrote, without the line that un-ignored
    the file itself (so the folder showed in ``git status``); None when there is nothing to mend (the file
    is today's, or the user's own: one without odin's header line is left alone)."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith(GITIGNORE_HEADER) or _SELF_INCLUDE not in (ln.strip() for ln in lines):
        return None
    kept = [ln for ln in lines if ln.strip() != _SELF_INCLUDE]
    if kept[1:] == GITIGNORE_TEXT.splitlines()[1:]:
        return GITIGNORE_TEXT
    return "\n".join(kept) + "\n"



class RunStore:
    def __init__(self, project_dir: Path):
        self.project_dir = Path(project_dir).resolve()
        self.root = self.project_dir / ".odin-loop"
        self.runs_dir = self.root / "runs"

    def ensure_layout(self) -> None:
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        gitignore = self.root / ".gitignore"
        if not gitignore.exists():
            write_atomic(gitignore, GITIGNORE_TEXT)
            return
        mended = _mended_gitignore(gitignore.read_text(encoding="utf-8", errors="replace"))
        if mended is not None:
            write_atomic(gitignore, mended)

    def run_dir(self, run_id: str) -> Path:
        """The directory of run ``run_id``. A run id is a plain name (``20260101-120000-tiny``), never a
        path: ``../x``, ``/abs`` or a name with a separator or control character is :class:`RunNotFound`."""
        if not (isinstance(run_id, str) and NAME_RE.fullmatch(run_id)):  # so never '.', '..' or a path
            raise RunNotFound(
                f"{run_id!r} is not a run id: a run id is a plain name such as 20260101-120000-tiny, not a path",
                hint="`odin runs` lists the runs",
            )
        return self.runs_dir / run_id

    def _existing_run_dir(self, run_id: str) -> Path:
        """The run's directory; :class:`RunNotFound` when it holds no run, :class:`RunCorrupt` when
        its event log is gone or empty though the run's state is there."""
        d = self.run_dir(run_id)
        if _lost_log(d):
            raise self._damage(d, RunCorrupt(
                f"{d}: the run's event log ({LOG_NAME}) is missing or empty, so its state cannot be trusted",
                hint=f"restore {LOG_NAME} from a backup; or give the run up with `odin abandon` "
                     f"(its files stay), or move {d} away",
            ))
        if not (d / LOG_NAME).is_file():
            raise RunNotFound(f"no run {run_id!r} in {self.runs_dir}", hint="`odin runs` lists the runs")
        return d

    def run_ids(self) -> list[str]:
        """Ids of every run whose event log has begun (an unreadable one included), and of every run
        whose log was lost beside its state (a damaged run), oldest first."""
        if not self.runs_dir.is_dir():
            return []
        return sorted(d.name for d in self.runs_dir.iterdir()
                      if NAME_RE.fullmatch(d.name) and (_started(d / LOG_NAME) or _lost_log(d)))

    def began(self, run_id: str) -> bool:
        """True when run ``run_id``'s event log holds a record (a creation cut short before it did not)."""
        return _started(self.run_dir(run_id) / LOG_NAME)

    def load(self, run_id: str) -> Loaded:
        d = self._existing_run_dir(run_id)
        try:
            return load_run(d)
        except RunCorrupt as exc:
            raise self._damage(d, exc) from None

    @staticmethod
    def _damage(d: Path, exc: RunCorrupt) -> RunCorrupt:
        """``exc``, with what is known of the damaged run: state.json's last word, and an abandon mark."""
        try:
            exc.last_known = read_state(d / STATE_NAME)
        except (OSError, ValueError):
            exc.last_known = None
        exc.abandoned = (d / ABANDONED_MARK).is_file()
        return exc

    def mark_abandoned(self, run_id: str, at: str, command: str) -> None:
        """Give up a damaged run: a mark beside it (its log is not written: it cannot be trusted)."""
        d = self.run_dir(run_id)
        write_atomic(d / ABANDONED_MARK, json.dumps({"abandoned_at": at, "command": command}, indent=1), within=d)

    def iter_runs(self, unreadable: Callable[[str, RunCorrupt], None] | None = None) -> Iterator[Loaded]:
        """Every run, oldest first. A run that cannot be read is passed to ``unreadable``
        (with its id) and skipped, so that one damaged run does not hide the others."""
        for run_id in self.run_ids():
            try:
                loaded = self.load(run_id)
            except RunNotFound:
                continue
            except RunCorrupt as exc:
                if unreadable is None:
                    raise
                unreadable(run_id, exc)
                continue
            yield loaded

    def project_lock(self) -> filelock.FileLock:
        self.ensure_layout()
        return filelock.FileLock(str(self.root / "project.lock"), timeout=30, thread_local=False)

    def new_run_id(self, started: datetime, loop_name: str) -> str:
        base = f"{started:%Y%m%d-%H%M%S}-{loop_name}"
        run_id, n = base, 1
        while True:
            d = self.run_dir(run_id)
            if not _started(d / LOG_NAME) and not _lost_log(d):
                return run_id  # free, or a creation that crashed before its first event
            n += 1
            run_id = f"{base}-{n}"

    def create(self, created: dict[str, Any], loop_data: dict, at: str, command: str) -> RunHandle:
        """Create a run from its ``created`` event; the caller holds the project lock."""
        run_id = created["run_id"]
        d = self.run_dir(run_id)
        d.mkdir(parents=True, exist_ok=True)
        for stale in (LOG_NAME, STATE_NAME):
            (d / stale).unlink(missing_ok=True)
        write_atomic(d / LOOP_NAME, json.dumps(loop_data, indent=1), within=d)
        created = {**created, "loop_sha256": file_sha256(d / LOOP_NAME)}  # what the run's loop must stay
        open_append(d / LOG_NAME, d).close()
        _fsync_dir(d)
        lock = RunLock(d, run_id)
        lock.acquire(command, at)
        try:
            handle = RunHandle(d, None, lock)
        except BaseException:
            lock.release()
            raise
        try:
            handle.record("created", at, save=True, **created)  # the first record is folded from nothing
            _fsync_dir(self.runs_dir)
        except BaseException:
            with contextlib.suppress(Exception):  # the record's failure is the one to tell
                handle.close()  # the lock goes with it
            raise
        return handle

    def open(self, run_id: str, command: str, at: str, known: Loaded | None = None) -> tuple[RunHandle, str | None]:
        """Open a run for driving: take its lock, cut a torn tail, bring the state up to date.

        Only the log's end is read. ``known``: the run as the caller just loaded
        it; used as is when it needed no repair and the log has not grown since,
        so state.json is read once.
        """
        d = self._existing_run_dir(run_id)
        lock = RunLock(d, run_id)
        lock.acquire(command, at)
        try:
            for stale in d.glob(".*.tmp"):  # atomic writes cut short by a crash
                stale.unlink(missing_ok=True)
            notices = reap_orphans(d)  # commands a dead driver left running: killed before anything re-runs
            notices += scratch.remove_leftovers(d)  # and the scratch copies (mutants) it left in the temp dir
            log_path = d / LOG_NAME
            if cut_torn_tail(log_path):
                notices.append("the event log ended in a torn record (a crash mid-write); it was cut off")
            last = last_record(log_path)
            if known is not None and known.notice is None and last is not None and known.state.log_seq == last["seq"]:
                loaded = known
            else:
                loaded = load_run(d, driving=True)
            if loaded.notice:
                notices.append(loaded.notice)
            handle = RunHandle(d, loaded.state, lock, saved_seq=loaded.saved_seq)
        except BaseException:
            lock.release()
            raise
        return handle, "; ".join(notices) or None

    def loop_data(self, run_id: str) -> dict:
        """The run's own copy of its loop (``loop.json``); missing or unreadable is :class:`RunCorrupt`."""
        path = self.run_dir(run_id) / LOOP_NAME
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RunCorrupt(
                f"{path}: the run's copy of its loop cannot be read ({exc})",
                hint="restore it from a backup, or move the run's directory away",
            ) from None
        if not isinstance(data, dict):
            raise RunCorrupt(f"{path}: the run's copy of its loop is not a JSON object",
                             hint="restore it from a backup, or move the run's directory away")
        return data


def recorded_loop_sha256(run_dir: Path) -> str | None:
    """The sha256 of ``loop.json`` the run's ``created`` record holds (None: a run of an earlier version)."""
    with contextlib.closing(iter_log(run_dir / LOG_NAME)) as records:
        first = next(records, None)
    return first.get("loop_sha256") if first is not None else None


def loop_changed(run_dir: Path, recorded: str | None = None,
                 sha256: Callable[[Path], str | None] = file_sha256) -> str | None:
    """Why the run's ``loop.json`` is not the loop it started with (its ``sha256`` differs from ``recorded``, by
    default the one its ``created`` record holds: a worker without a sandbox rewrote it), or None. Runs of
    versions that recorded no hash are taken as they are."""
    recorded = recorded_loop_sha256(run_dir) if recorded is None else recorded
    if not recorded:
        return None
    path = run_dir / LOOP_NAME
    now = sha256(path)
    if now == recorded:
        return None
    how = "removed or unreadable" if now is None else f"sha256 {now[:12]}…, not {recorded[:12]}…"
    return f"loop.json was changed outside odin since the run started: {path} ({how})"


def _lost_log(run_dir: Path) -> bool:
    """A run's state is there but its event log is gone or empty: a damaged run, not a free id."""
    return not _started(run_dir / LOG_NAME) and os.path.lexists(run_dir / STATE_NAME)


def _started(log: Path) -> bool:
    """True when a run's event log holds at least one complete line (a run exists there)."""
    try:
        with open(log, "rb") as f:
            return any(b"\n" in chunk for chunk in iter(lambda: f.read(1 << 16), b""))
    except OSError:  # missing, or not a file
        return False


def command_line() -> str:
    """What this process was started as, for driver.json."""
    prog = os.path.basename(sys.argv[0] or "python")
    if prog in ("__main__.py", "odin"):  # python -m odin_magic, or the console script
        prog = "odin"
    return " ".join([prog, *sys.argv[1:]])[:200]
