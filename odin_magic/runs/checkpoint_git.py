"""The checkpoint store's git, pinned: what it reads comes from the engine, never from a worker.

A worker (a ``bash`` tool without a sandbox) can write into ``.odin-loop/checkpoints.git``. Whatever it
writes there must not run, hide a file or leak a secret the next time the engine takes a checkpoint:

* **configuration**: no system or global file (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``);
  the store's own ``config`` is rewritten to :data:`STORE_CONFIG` before every operation of the store
  (:func:`pin`: once per snapshot, diff, restore..., not before each of its gits), and the
  keys that run a program or change what is read are given again on the command line (:data:`CONFIG_ARGS`,
  which wins over any file): no hooks (``core.hooksPath=/dev/null``), no fsmonitor, no untracked cache,
  no split index, no sparse checkout, no external diff, no pager;
* **files beside the config**: ``info/exclude`` is rewritten (``info/`` a real folder again), ``info/attributes``,
  ``info/grafts`` and a ``commondir`` (which would move the whole store elsewhere) are removed; ``GIT_COMMON_DIR`` is the store
  itself and replace refs are not read (``GIT_NO_REPLACE_OBJECTS``);
* **environment**: built from nothing (:func:`pinned_env`): ``PATH``, ``HOME=/nonexistent``, ``LANG`` and
  ``LC_ALL`` ``C`` and the ``GIT_*`` variables the store needs. No ``ANTHROPIC_*`` variable, no configured
  secret (:mod:`odin_magic.core.secrets`), nothing else of odin's environment reaches a checkpoint's git.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from odin_magic.core.atomic import open_dir, read_nofollow, write_atomic

#: the store's config file, as the engine writes it before every git
STORE_CONFIG = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n"
#: HOME for the checkpoint git: a directory that does not exist (Debian's home of users without one)
HOME = "/nonexistent"
#: removed from the store before every git: each would change what git reads or where
REMOVED = ("info/attributes", "info/grafts", "info/sparse-checkout", "commondir", "shallow")

CONFIG_ARGS = [
    arg for key_value in (
        "core.hooksPath=/dev/null", "core.fsmonitor=false", "core.untrackedCache=false", "core.splitIndex=false",
        "core.sparseCheckout=false", "core.sparseCheckoutCone=false", "index.sparse=false", "core.bare=true",
        "core.attributesFile=/dev/null", "core.pager=cat", "core.editor=true", "core.askPass=true",
        "core.sshCommand=false", "credential.helper=", "protocol.allow=never",
        "core.ignoreCase=false", "core.precomposeUnicode=false",
        "core.useReplaceRefs=false", "feature.manyFiles=false", "index.skipHash=false",
        "gc.auto=0", "maintenance.auto=false", "core.autocrlf=false", "core.safecrlf=false", "core.quotepath=off",
        "core.fileMode=true", "core.symlinks=true", "core.checkStat=default", "core.trustctime=true",
        "advice.addEmbeddedRepo=false", "core.bigFileThreshold=512m",
    ) for arg in ("-c", key_value)
]


def pinned_env(git_dir: Path, index: Path, work_tree: Path) -> dict[str, str]:
    """The whole environment of a checkpoint git (nothing of odin's own but ``PATH``)."""
    return {
        "PATH": os.environ.get("PATH", os.defpath), "HOME": HOME, "LANG": "C", "LC_ALL": "C",
        "GIT_DIR": str(git_dir), "GIT_COMMON_DIR": str(git_dir), "GIT_INDEX_FILE": str(index),
        "GIT_WORK_TREE": str(work_tree), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0", "GIT_NO_REPLACE_OBJECTS": "1", "GIT_OPTIONAL_LOCKS": "0",
    }


def pin(git_dir: Path, exclude: str) -> None:
    """Make the store's config and exclude file the engine's again, and remove what it never writes.

    Cheap when nothing was touched: two small reads. Nothing a worker put there is read or written through:
    ``info/`` is made a real folder again, a file is read only when it is a regular one (never a FIFO or a
    link, never more than the expected text and a byte), and every write and removal is made by name in the
    store's real folders (``write_atomic(..., within=git_dir)``)."""
    real_dir(git_dir / "info", git_dir)
    keep(git_dir / "config", STORE_CONFIG, git_dir)
    keep(git_dir / "info" / "exclude", exclude, git_dir)
    for name in REMOVED:
        remove(git_dir / name, git_dir)


def keep(path: Path, text: str | bytes, within: Path) -> None:
    """``path`` (in ``within``) holding ``text``: rewritten when it differs or is not a regular file."""
    want = text if isinstance(text, bytes) else text.encode("utf-8")
    try:
        if read_nofollow(path, len(want) + 1) == want:
            return
    except OSError:
        pass
    remove(path, within)  # a link, a FIFO, a folder: replaced, never read or written through
    write_atomic(path, text, within=within)


def real_dir(path: Path, within: Path) -> None:
    """``path`` (in ``within``) a real folder: whatever else is there (a link to a folder elsewhere) removed."""
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            remove(path, within)
    except FileNotFoundError:
        pass
    path.mkdir(exist_ok=True)


def remove(path: Path, within: Path) -> None:
    """Remove whatever is at ``path`` (a folder with its files), by name in its real parent folder in
    ``within``: a link is removed, never followed."""
    try:
        fd = open_dir(path.parent, within)
    except FileNotFoundError:
        return
    try:
        mode = os.stat(path.name, dir_fd=fd, follow_symlinks=False).st_mode
        if stat.S_ISDIR(mode):
            shutil.rmtree(path.name, dir_fd=fd)
        else:
            os.unlink(path.name, dir_fd=fd)
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)
