"""Frozen artifacts as files: what a passing gate froze, how it is now, and putting it back.

When a stage's gate passes, the engine freezes the files of its ``produces``
(:mod:`odin_magic.engine.frozen`): :func:`scan` hashes each file (a folder's or a glob's files
too, the folder or glob itself kept as a mark under which no new file may appear),
:class:`BlobStore` keeps each content once under the run dir (``.frozen/<sha256>``, a
content-addressed copy the engine reads back only after checking its hash), and the freeze
itself is an event-log record (:class:`~odin_magic.runs.records.FrozenRecord`, folded into
``RunState.frozen``). Before a later gate, :func:`tampered` names what differs and
:func:`put_back` restores it byte for byte, never through a symbolic link a worker planted.

Keys are artifact paths as a loop writes them (``harness/test_x.py``, ``src/a.py``); where one
lives (run dir or project) follows :func:`odin_magic.loop.artifacts.in_run_dir`. A name that is not
UTF-8 (a worker's bash can make ``b"harness/caf\\xe9.py"``) is frozen too: its key holds each such byte
as NUL and two hex digits (:func:`record_key`), which no real name holds, so any record can carry the
key and :func:`name_of` gives back the real bytes; messages show it as ``\\xNN``. The caches that
running tests leaves behind (``__pycache__/``, ``*.pyc``, ``.pytest_cache/``) are never frozen.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from odin_magic.core.atomic import read_nofollow, umask, write_atomic
from odin_magic.core.secrets import secret_values
from odin_magic.loop.artifacts import in_run_dir
from odin_magic.loop.globs import literal_prefix, matches
from odin_magic.runs.checkpoint_listing import shown
from odin_magic.runs.state import Frozen

BLOB_DIR = ".frozen"
#: what running tests leaves behind: never frozen, never taken for a change
CACHES = ("**/__pycache__/", "**/*.pyc", "**/.pytest_cache/", "**/.mypy_cache/", "**/.ruff_cache/")
_WILD = "*?["
#: never walked for a glob over the whole project
ENGINE_OWNED = (".git", ".odin-loop", BLOB_DIR)


@dataclass(frozen=True)
class Roots:
    """Where artifact paths live: the project and the run dir."""

    project_dir: Path
    run_dir: Path
    engine_files: tuple[str, ...] = ()  # run-dir globs the engine itself writes (its report): never frozen

    def base(self, key: str) -> Path:
        return self.run_dir if in_run_dir(_placeable(key)) else self.project_dir

    def engine_owned(self, key: str) -> bool:
        key = _placeable(key)
        return cache(key) or (in_run_dir(key) and matches(self.engine_files, key))

    def path(self, key: str) -> Path:
        return self.base(key).joinpath(*PurePosixPath(name_of(key).rstrip("/")).parts)


@dataclass(frozen=True)
class FileNow:
    """One file as it is: its content's hash, its kind ("x", "l" or None) and its bytes."""

    sha256: str
    mode: str | None
    data: bytes


@dataclass(frozen=True)
class Tamper:
    """A frozen file changed: ``kind`` is modified, deleted or added (under a frozen folder or glob)."""

    path: str
    kind: str
    frozen: Frozen  # the freeze it broke (for an added file: its folder's or glob's)

    @property
    def shown(self) -> str:
        """The path as text for a message (a byte that is not UTF-8 as ``\\xNN``)."""
        return shown(name_of(self.path))


_RAW = re.compile("\0([0-9a-f]{2})")


def record_key(name: str) -> str:
    """A file name (bytes that are not UTF-8 kept as surrogates by ``surrogateescape``) as a key any record
    can hold: each such byte as NUL and two hex digits. A name holding no such byte is its own key."""
    if _encodable(name):
        return name
    return "".join(f"\0{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in name)


def _placeable(key: str) -> str:
    """``key`` as placement and the engine's names read it (they refuse a NUL): each escaped byte as ``_``."""
    return _RAW.sub("_", key) if "\0" in key else key


def name_of(key: str) -> str:
    """The file name a :func:`record_key` stands for."""
    return _RAW.sub(lambda m: chr(0xDC00 + int(m[1], 16)), key) if "\0" in key else key


@functools.lru_cache(maxsize=4096)
def cache(key: str) -> bool:
    """A cache tests leave behind (:data:`CACHES`): a function of the key's text alone, kept per key."""
    return matches(CACHES, key)


def read_now(path: Path) -> FileNow | None:
    """The file at ``path`` (a link as its target, never followed); None when there is none or not a file."""
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            data, mode = os.fsencode(os.readlink(path)), "l"
        elif stat.S_ISREG(st.st_mode):
            data = read_nofollow(path)
            mode = "x" if st.st_mode & 0o100 else None
        else:
            return None
    except OSError:
        return None
    return FileNow(hashlib.sha256(data).hexdigest(), mode, data)


def files_under(roots: Roots, mark: str) -> list[str]:
    """The keys of the files (and links) under a folder or glob ``mark`` (``harness/``, ``src/*.py``)."""
    base = roots.base(mark)
    start = literal_prefix(mark)
    top = base.joinpath(*PurePosixPath(start.rsplit("/", 1)[0] if "/" in start else ".").parts)
    if top.is_symlink() or not top.is_dir():
        return []
    keys = []
    for folder, dirs, names in os.walk(top):  # links to folders are listed, not followed
        rel = Path(folder).relative_to(base).as_posix()
        prefix = "" if rel == "." else rel + "/"
        for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            key = record_key(prefix + name)
            if matches([mark], key) and not roots.engine_owned(key):
                keys.append(key)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))
                   and not cache(prefix + d + "/") and prefix + d not in ENGINE_OWNED]
    return sorted(keys)


def _encodable(key: str) -> bool:
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def is_mark(entry: str, roots: Roots) -> bool:
    """A produces entry that names a folder or a glob, not one file."""
    return entry.endswith("/") or any(c in entry for c in _WILD) or roots.path(entry).is_dir()


def scan(entries: list[str], roots: Roots) -> dict[str, FileNow | None]:
    """What freezing ``entries`` (a stage's produces) takes: each file now, each folder or glob as a mark (None)."""
    out: dict[str, FileNow | None] = {}
    for raw in entries:
        entry = raw.strip().replace("\\", "/").removeprefix("./")
        if is_mark(entry, roots):
            mark = entry if entry.endswith("/") or any(c in entry for c in _WILD) else entry + "/"
            out[mark] = None
            for key in files_under(roots, mark):
                if (now := read_now(roots.path(key))) is not None:
                    out[key] = now
        elif not roots.engine_owned(entry) and (now := read_now(roots.path(entry))) is not None:
            out[entry] = now
    return out


class BlobStore:
    """Each frozen content once, under the run dir (``.frozen/<sha256>``), read back only when its hash holds."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.dir = self.run_dir / BLOB_DIR

    def keep(self, now: FileNow) -> None:
        """Keep a copy of ``now``'s bytes, unless they hold a configured secret: odin never writes one, so such a
        file is frozen by its hash alone (a change to it is still caught; it cannot be put back)."""
        if any(value.encode() in now.data for value, _ in secret_values()):
            return
        path = self.dir / now.sha256
        try:
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_size == len(now.data) and not self.dir.is_symlink():
                return  # kept at an earlier freeze (get() checks its hash at every read)
        except OSError:
            pass
        write_atomic(path, now.data, within=self.run_dir)  # never through a worker's link (LinkInPath)

    def get(self, sha256: str) -> bytes | None:
        if self.dir.is_symlink():
            return None
        now = read_now(self.dir / sha256)
        return now.data if now is not None and now.mode != "l" and now.sha256 == sha256 else None


def tampered(frozen: dict[str, Frozen], roots: Roots, exempt) -> list[Tamper]:
    """What differs from the freezes: frozen files modified or deleted, files added under a frozen folder or
    glob; paths ``exempt(key)`` says the gated stage may change (it produces them) are left out."""
    out = []
    for key, f in sorted(frozen.items()):
        if exempt(key):
            continue
        if f.sha256 is None:
            out += [Tamper(k, "added", f) for k in files_under(roots, key) if k not in frozen and not exempt(k)]
            continue
        if through_link(roots, key):
            out.append(Tamper(key, "modified", f))
            continue
        now = read_now(roots.path(key))
        if now is None:
            out.append(Tamper(key, "deleted", f))
        elif (now.sha256, now.mode) != (f.sha256, f.mode):
            out.append(Tamper(key, "modified", f))
    return out


def through_link(roots: Roots, key: str) -> bool:
    """Whether a folder on the way to ``key`` is a symbolic link (its file is then not the frozen one)."""
    folder = roots.base(key)
    for part in PurePosixPath(name_of(key)).parts[:-1]:
        folder = folder / part
        if folder.is_symlink():
            return True
    return False


def put_back(t: Tamper, roots: Roots, blobs: BlobStore) -> bool:
    """Restore one tampered path as it was frozen (an added file is removed); False when its saved copy is
    missing or damaged, or the file system refused (see :func:`_put_back`)."""
    try:
        return _put_back(t, roots, blobs)
    except OSError:
        return False


def _put_back(t: Tamper, roots: Roots, blobs: BlobStore) -> bool:
    """Every folder on the way is made a real folder again (a link a worker put there is
    removed, never followed) and the file is replaced by a new one (:func:`~odin_magic.core.atomic.write_atomic`)."""
    data = None
    if t.kind != "added":
        data = blobs.get(t.frozen.sha256 or "")
        if data is None:
            return False
    base, parts = roots.base(t.path), PurePosixPath(name_of(t.path)).parts
    folder = base
    for part in parts[:-1]:
        folder = folder / part
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            folder.unlink()
        folder.mkdir(exist_ok=True)
    target = folder / parts[-1]
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)  # never follows a link inside it
    if data is None:  # an added file: removed
        if target.is_symlink() or target.exists():
            target.unlink()
    elif t.frozen.mode == "l":
        tmp = folder / f".{parts[-1]}.odin-frozen.tmp"
        tmp.unlink(missing_ok=True)
        os.symlink(os.fsdecode(data), tmp)
        os.replace(tmp, target)
    else:  # a new file replaces whatever is there (a link included) in one step
        write_atomic(target, data, mode=(0o777 if t.frozen.mode == "x" else 0o666) & ~umask())
    return True

