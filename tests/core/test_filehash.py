"""A file's sha256 is hashed again whenever the file may have changed (core/filehash.py): the stat-keyed
hash a run keeps of its loop.json never hides an edit."""

from __future__ import annotations

import hashlib
import os

import pytest

from odin_magic.core import filehash
from odin_magic.core.filehash import FileHashes


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_file_rewritten_at_once_with_as_many_bytes_is_hashed_again(tmp_path):
    path = tmp_path / "loop.json"
    path.write_bytes(b'{"a": 1}')
    hashes = FileHashes()
    assert hashes.sha256(path) == sha(b'{"a": 1}')
    path.write_bytes(b'{"a": 2}')  # within the same tick of the kernel's clock, maybe: not settled, not kept
    assert hashes.sha256(path) == sha(b'{"a": 2}')


@pytest.fixture
def settled(monkeypatch):
    """Every file counts as settled when read (its ctime at least 0 ns old): the hash is kept."""
    monkeypatch.setattr(filehash, "SETTLED_NS", 0)


def test_a_kept_hash_is_given_while_the_file_is_as_it_was(tmp_path, settled, monkeypatch):
    """The file is read once: the second answer is the kept hash (the reads are counted, the real reader runs)."""
    path = tmp_path / "loop.json"
    path.write_bytes(b"abc")
    reads = []
    real = filehash.file_sha256
    monkeypatch.setattr(filehash, "file_sha256", lambda p: reads.append(p) or real(p))
    hashes = FileHashes()
    assert hashes.sha256(path) == sha(b"abc")
    assert hashes.sha256(path) == sha(b"abc")
    assert len(reads) == 1


@pytest.mark.parametrize("change", ["append", "replace", "link", "remove", "chmod"])
def test_a_kept_hash_is_dropped_when_the_file_changed(tmp_path, settled, change):
    path, other = tmp_path / "loop.json", tmp_path / "other.json"
    path.write_bytes(b"abc")
    other.write_bytes(b"xyz")
    hashes = FileHashes()
    assert hashes.sha256(path) == sha(b"abc")
    if change == "append":
        with open(path, "ab") as f:
            f.write(b"d")
    elif change == "replace":
        os.replace(other, path)
    elif change == "link":
        path.unlink()
        path.symlink_to(other)
    elif change == "remove":
        path.unlink()
    else:
        path.chmod(0)
    expected = {"append": sha(b"abcd"), "replace": sha(b"xyz"), "link": None, "remove": None,
                "chmod": None if os.geteuid() else sha(b"abc")}[change]  # root reads a mode-0 file
    assert hashes.sha256(path) == expected
