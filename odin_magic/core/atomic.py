"""Replacing a file all at once: a crash leaves the old file or the new one, never half of one.

:func:`write_atomic` is how odin-magic writes every file it replaces (state.json, loop.json, the
interview's files, reports, proposals, memory): a temp file beside the target, fsync, ``os.replace``.
No configured secret's value is written (:mod:`odin_magic.core.secrets`).
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path
from typing import Iterable

from odin_magic.core.secrets import redact_text


def write_atomic(path: Path, text: str | Iterable[str]) -> int:
    """Replace ``path`` with ``text`` all at once (temp file in the same dir, fsync, ``os.replace``);
    the number of characters written.

    ``text`` may come in pieces (see :func:`odin_magic.runs.statefile.state_json_pieces`) so that a large file
    is never whole in memory; a piece must not cut a secret's value in two (a JSON document cut between
    two values never does).

    A crash leaves the old file or the new one, never half of one; the temp
    file it may leave (``.<name>.<random>.tmp``) is removed by the next driver.
    The file gets the mode any program's new file gets (0666 less the umask),
    or keeps its mode when it already exists: never ``mkstemp``'s private 0600.
    No configured secret's value is written (:mod:`odin_magic.core.secrets`).
    """
    written = 0
    fd, tmp = _create_temp(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for piece in [text] if isinstance(text, str) else text:
                written += f.write(redact_text(piece))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return written


def write_atomic_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` all at once, as :func:`write_atomic` does, byte for byte (no redaction:
    for a copy of a file that is already on disk, such as a frozen artifact put back). ``path`` itself is
    replaced, never written through: a symbolic link there is replaced by the new file (its parent folder
    must be a real one: the caller checks). ``mode``: the file's permission bits (else ``path``'s, or the
    umask's)."""
    fd, tmp = _create_temp(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if mode is not None:
                os.fchmod(f.fileno(), mode)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _create_temp(path: Path) -> tuple[int, str]:
    """An exclusive new temp file beside ``path``, with ``path``'s mode or the umask's."""
    try:
        keep = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        keep = None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = os.path.join(path.parent, f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)  # the kernel applies the umask, as for any new file
        except FileExistsError:
            continue
        if keep is not None:
            try:
                os.fchmod(fd, keep)
            except OSError:
                pass
        return fd, tmp
    raise FileExistsError(f"no free temp name beside {path}")
