"""The checkpoint store's git, pinned: what it reads comes from the engine, never from a worker.

A worker (a ``bash`` tool without a sandbox) can write into ``.odin-loop/checkpoints.git``. Whatever it
writes there must not run, hide a file or leak a secret the next time the engine takes a checkpoint:

* **configuration**: no system or global file (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``);
  the store's own ``config`` is rewritten to :data:`STORE_CONFIG` before every git (:func:`pin`), and the
  keys that run a program or change what is read are given again on the command line (:data:`CONFIG_ARGS`,
  which wins over any file): no hooks (``core.hooksPath=/dev/null``), no fsmonitor, no untracked cache,
  no split index, no sparse checkout, no external diff, no pager;
* **files beside the config**: ``info/exclude`` is rewritten, ``info/attributes``, ``info/grafts`` and a
  ``commondir`` (which would move the whole store elsewhere) are removed; ``GIT_COMMON_DIR`` is the store
  itself and replace refs are not read (``GIT_NO_REPLACE_OBJECTS``);
* **environment**: built from nothing (:func:`pinned_env`): ``PATH``, ``HOME=/nonexistent``, ``LANG`` and
  ``LC_ALL`` ``C`` and the ``GIT_*`` variables the store needs. No ``ANTHROPIC_*`` variable, no configured
  secret (:mod:`odin_magic.core.secrets`), nothing else of odin's environment reaches a checkpoint's git.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from odin_magic.core.atomic import write_atomic

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

    Cheap when nothing was touched: two small reads."""
    _keep(git_dir / "config", STORE_CONFIG)
    _keep(git_dir / "info" / "exclude", exclude)
    for name in REMOVED:
        path = git_dir / name
        if path.is_symlink() or path.is_file():
            path.unlink()


def _keep(path: Path, text: str) -> None:
    try:
        if path.read_text(encoding="utf-8", errors="replace") == text and not path.is_symlink():
            return
    except OSError:
        pass
    if path.is_symlink():
        path.unlink()  # a link is replaced by a file, never written through
    elif path.is_dir():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text)
