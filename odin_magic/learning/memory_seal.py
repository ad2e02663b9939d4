"""Memory entries odin wrote, told from ones it did not: a keyed hash (HMAC) on each entry.

Without a sandbox a worker's bash can append to ``.odin-loop/memory/decisions.md`` ("a person asked: …")
and the next run's brief would show it as a person's decision. So each entry odin writes carries
``sig <hmac>`` in its header: an HMAC-SHA256 of its id, kind, stage, run, time and text, keyed by
``.odin-loop/memory.key`` (32 random bytes, mode 0600, made the first time memory is written). An entry
whose sig is missing or does not match (a forged entry, or an edited one) is not handed to any run.
The key is readable by anything running as the user: without the sandbox a worker's bash can read it and
seal what it likes; the sandbox makes ``.odin-loop/`` read-only (nothing can be planted there) but does not
hide the key (see :mod:`odin_magic.learning.memory`, "What the seal does not stop").

Memory files of earlier versions carry no sig: when there is no key (or only junk where it should be)
and no entry in any memory file carries a sig, they are signed as they are (trusted once, as an upgrade;
the stage is told how many). Once any entry carries a sig, nothing is signed as it is: an entry without
a valid sig is dropped, and without the key every sealed entry is (a notice gives the count; the next
write makes a new key and leaves them out).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from odin_magic.core.atomic import read_nofollow

KEY_NAME = "memory.key"  # in .odin-loop/
SIG_CHARS = 32  # hex characters of the HMAC kept in an entry's header
KEY_BYTES = 32


class Seal:
    """The project's memory key (``<project>/.odin-loop/memory.key``): signs and checks entries."""

    def __init__(self, odin_dir: Path):
        self.path = Path(odin_dir) / KEY_NAME
        self._key: bytes | None = None

    def key(self) -> bytes | None:
        """The key, None when there is none, or it cannot be read (a link, junk, a key cut short)."""
        if self._key is None:
            try:
                text = read_nofollow(self.path, 200).strip()  # never through a link, never a fifo
            except OSError:
                return None
            try:
                key = bytes.fromhex(text.decode("ascii"))
            except ValueError:
                return None
            self._key = key if len(key) == KEY_BYTES else None  # junk, or a key cut short: none
        return self._key

    def make(self) -> bytes:
        """A new key, written 0600; whatever was in its place (junk, a link: never a key, or :meth:`key` would
        have read it) is removed first, never written through. An ``OSError`` when that cannot be done."""
        key = secrets.token_bytes(KEY_BYTES)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(self.path):
            os.unlink(self.path)  # a link itself, not what it points to; a directory there is an OSError
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self.path, flags, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(key.hex() + "\n")
        self._key = key
        return key

    def sign(self, content: str, key: bytes | None = None) -> str:
        key = key or self.key() or self.make()
        return hmac.new(key, content.encode("utf-8"), hashlib.sha256).hexdigest()[:SIG_CHARS]

    def valid(self, content: str, sig: str | None) -> bool:
        key = self.key()
        if key is None or not sig:
            return False
        return hmac.compare_digest(self.sign(content, key), sig)
