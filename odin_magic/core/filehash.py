"""The sha256 of a file (read never through a symbolic link in its place), hashed again only when the file
may have changed since it was last hashed.

A file whose device, inode, mode, size, mtime and ctime are those seen just before it was last read holds
the bytes read then, provided its ctime was already :data:`SETTLED_NS` old at that read: every write (and
every rename onto it, chmod or utime) sets the ctime to the kernel's clock, which no one can set back, and
which moves in ticks of 10 ms at most (its coarse clock: HZ=100). A file changed less than that before it was
read could change again within the same tick without moving its ctime, so its hash is not kept then (git's
"racily clean" rule, with ten ticks of margin). Anything else that is not a regular file is hashed (or refused)
at every call.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from pathlib import Path

from odin_magic.core.atomic import read_nofollow

#: how old a file's ctime must be when it is read for its hash to be kept
SETTLED_NS = 100_000_000


def file_sha256(path: Path | str) -> str | None:
    """The sha256 of the file at ``path`` (never through a symbolic link in its place); None when it cannot be read."""
    try:
        return hashlib.sha256(read_nofollow(path)).hexdigest()
    except OSError:
        return None


def _seen(path: Path | str) -> tuple[int, ...] | None:
    """What says that a regular file at ``path`` is unchanged (None: not one, or not there)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns


class FileHashes:
    """:func:`file_sha256` of files asked about again and again (a run's loop.json at every stage)."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[tuple[int, ...], str]] = {}

    def sha256(self, path: Path | str) -> str | None:
        """:func:`file_sha256` of ``path``; the hash of its last read when nothing says it changed since."""
        name = os.fspath(path)
        seen = _seen(name)
        kept = self._kept.get(name)
        if seen is not None and kept is not None and kept[0] == seen:
            return kept[1]
        read_at = time.time_ns()
        digest = file_sha256(name)
        if seen is not None and digest is not None and read_at - seen[5] >= SETTLED_NS:
            self._kept[name] = (seen, digest)
        else:
            self._kept.pop(name, None)
        return digest
