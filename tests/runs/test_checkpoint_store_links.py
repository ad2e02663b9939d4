"""The checkpoint store pinned without reading or writing through what a worker put there (no sandbox):
a FIFO or a link where the store's config, exclude file or ``info/`` belongs."""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager

from odin_magic.runs.checkpoint_git import STORE_CONFIG
from odin_magic.runs.checkpoints import EXCLUDE_TEXT, Checkpoints


class Hung(Exception):
    """Not an OSError: nothing on the way swallows it."""


@contextmanager
def at_most(seconds: int):
    """Fail instead of hanging: a read that never returns is interrupted (the alarm, not a sleep)."""
    def hung(*_):
        raise Hung(f"still blocked after {seconds}s")
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_a_fifo_as_the_stores_config_is_replaced_not_read(project):
    (project / "a.txt").write_text("a\n")
    store = Checkpoints(project)
    before = store.snapshot()
    config = store.git_dir / "config"
    config.unlink()
    os.mkfifo(config)
    (project / "a.txt").write_text("b\n")
    with at_most(20):
        after = store.snapshot()
    assert [c.path for c in store.changes(before, after)] == ["a.txt"]
    assert config.is_file() and not config.is_symlink() and config.read_text() == STORE_CONFIG


def test_a_fifo_as_the_exclude_file_of_a_new_process_is_replaced_not_read(project):
    (project / "a.txt").write_text("a\n")
    Checkpoints(project).snapshot()
    exclude = project / ".odin-loop" / "checkpoints.git" / "info" / "exclude"
    exclude.unlink()
    os.mkfifo(exclude)
    with at_most(20):
        Checkpoints(project).snapshot()
    assert exclude.is_file() and exclude.read_text() == EXCLUDE_TEXT


def test_info_as_a_link_to_a_folder_elsewhere_is_never_written_through(project, tmp_path):
    (project / "a.txt").write_text("a\n")
    store = Checkpoints(project)
    before = store.snapshot()
    outside = tmp_path / "outside"
    outside.mkdir()
    theirs = {"exclude": "mine\n", "attributes": "* -diff\n", "grafts": "g\n", "large-files": "/x\n",
              "stage-rules": "/y\n"}
    for name, text in theirs.items():
        (outside / name).write_text(text)
    info = store.git_dir / "info"
    os.rename(info, tmp_path / "old-info")
    info.symlink_to(outside, target_is_directory=True)
    (project / "b.txt").write_text("b\n")
    after = store.snapshot(rules_from=before)
    assert [c.path for c in store.changes(before, after)] == ["b.txt"]
    assert {p.name: p.read_text() for p in outside.iterdir()} == theirs  # nothing written, nothing removed
    assert not info.is_symlink() and (info / "exclude").read_text() == EXCLUDE_TEXT
