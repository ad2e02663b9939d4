"""Replacing a file all at once: a crash leaves the old file or the new one, never half of one.

:func:`write_atomic` is how odin-magic writes every file it replaces (state.json, loop.json, the
interview's files, reports, proposals, memory): a temp file beside the target, fsync, ``os.replace``.
No configured secret's value is written (:mod:`odin_magic.core.secrets`).

**Never through a worker's link.** A file the engine owns inside a folder a worker can write (the run dir,
``.odin-loop/``) is written with ``within=`` that folder: every directory between it and the file is
opened without following a symbolic link (``O_NOFOLLOW``, one component at a time, relative to the one
before), the temp file is created and renamed in that directory by its descriptor, and
:func:`open_append` opens a log (``events.jsonl``, ``gates/evidence.jsonl``, ``tool-refusals.jsonl``)
the same way, refusing a link or a hard link in its place. A link planted there (``ln -s /elsewhere
$ODIN_RUN_DIR/report``) is :class:`~odin_magic.core.confine.LinkInPath`: one line naming the link, and
nothing is written outside.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path
from typing import IO, Iterable

from odin_magic.core.confine import LinkInPath
from odin_magic.core.secrets import redact_text

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def write_atomic(path: Path, text: str | bytes | Iterable[str], within: Path | str | None = None,
                 mode: int | None = None) -> int:
    """Replace ``path`` with ``text`` all at once (temp file in the same dir, fsync, ``os.replace``);
    the number of characters (bytes, for ``bytes``) written.

    ``text`` may come in pieces (see :func:`odin_magic.runs.statefile.state_json_pieces`) so that a large file
    is never whole in memory; a piece must not cut a secret's value in two (a JSON document cut between
    two values never does). ``bytes`` (a chart's PNG) are written as they are.

    ``within``: a folder ``path`` lies in by name (the run dir); the directories between them are made
    when missing and never followed through a symbolic link (:class:`~odin_magic.core.confine.LinkInPath`).

    A crash leaves the old file or the new one, never half of one; the temp
    file it may leave (``.<name>.<random>.tmp``) is removed by the next driver.
    The file gets ``mode`` (permission bits) when given, else the mode any program's new file gets (0666 less
    the umask), or keeps its mode when it already exists: never ``mkstemp``'s private 0600. ``path`` itself is
    replaced, never written through: a symbolic link there is replaced by the new file.
    No configured secret's value is written (:mod:`odin_magic.core.secrets`).
    """
    path = Path(path)
    dir_fd = None if within is None else open_dir(path.parent, within, create=True)
    try:
        return _replace(path, text, dir_fd, mode)
    finally:
        if dir_fd is not None:
            os.close(dir_fd)


def _replace(path: Path, text: str | bytes | Iterable[str], dir_fd: int | None, mode: int | None) -> int:
    written = 0
    fd, tmp = _create_temp(path, dir_fd)
    where = {} if dir_fd is None else {"src_dir_fd": dir_fd, "dst_dir_fd": dir_fd}
    raw = isinstance(text, bytes)
    try:
        with (os.fdopen(fd, "wb") if raw else os.fdopen(fd, "w", encoding="utf-8")) as f:
            if mode is not None:
                os.fchmod(f.fileno(), mode)
            if raw:
                written = f.write(text)  # a chart's PNG: no text to redact
            else:
                for piece in [text] if isinstance(text, str) else text:
                    written += f.write(redact_text(piece))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path if dir_fd is None else path.name, **where)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
    return written


def read_nofollow(path: Path | str, limit: int | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (at most ``limit``), never through a symbolic link in its place
    (``ELOOP``) nor from a FIFO or a device (``EINVAL``: opened without blocking, then refused): an
    :class:`OSError` for each, as for a missing file."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return f.read() if limit is None else f.read(limit)


def umask() -> int:
    """The process's umask (read by setting it and setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _create_temp(path: Path, dir_fd: int | None = None) -> tuple[int, str]:
    """An exclusive new temp file beside ``path`` (by name in ``dir_fd`` when given: never through a link),
    with ``path``'s mode or the umask's."""
    try:
        keep = stat.S_IMODE(os.stat(path if dir_fd is None else path.name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        keep = None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        name = f".{path.name}.{secrets.token_hex(4)}.tmp"
        tmp = name if dir_fd is not None else os.path.join(path.parent, name)
        try:
            fd = os.open(tmp, flags, 0o666, dir_fd=dir_fd)  # the kernel applies the umask, as for any new file
        except FileExistsError:
            continue
        if keep is not None:
            try:
                os.fchmod(fd, keep)
            except OSError:
                pass
        return fd, tmp
    raise FileExistsError(f"no free temp name beside {path}")


def _parts(path: Path | str, within: Path | str) -> tuple[str, list[str]]:
    """``within`` as an absolute path, and the names from it down to ``path`` (which must lie in it by name)."""
    root, target = os.path.abspath(within), os.path.abspath(path)
    rel = os.path.relpath(target, root)
    if rel == ".":
        return root, []
    if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
        raise ValueError(f"{target} does not lie in {root}")
    return root, rel.split(os.sep)


def open_dir(path: Path | str, within: Path | str, create: bool = False) -> int:
    """A descriptor of the directory ``path`` (``within`` or below it), each directory below ``within``
    opened without following a symbolic link (made first when ``create``); :class:`LinkInPath` names a link."""
    root, parts = _parts(path, within)
    fd = os.open(root, _DIR_FLAGS)
    here = root
    try:
        for part in parts:
            here = os.path.join(here, part)
            if create:
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                nfd = os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(here):
                    raise LinkInPath.at(here, root) from None
                raise
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_append(path: Path | str, within: Path | str, binary: bool = False) -> IO:
    """``path`` (in ``within``, the directories between made when missing) opened for appending, never through
    a symbolic link (:class:`LinkInPath`), nor a hard link or anything but a regular file in its place."""
    path = Path(path)
    dir_fd = open_dir(path.parent, within, create=True)
    try:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(path.name, flags, 0o666, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP and os.path.islink(path):
                raise LinkInPath.at(path, within) from None
            raise
    finally:
        os.close(dir_fd)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
        os.close(fd)
        raise LinkInPath.at(path, within, hard=True)
    return os.fdopen(fd, "ab" if binary else "a", **({"buffering": 0} if binary else {"encoding": "utf-8"}))
