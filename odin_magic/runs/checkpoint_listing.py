"""What a checkpoint lists beyond ``git add -u``: the files git itself would hide or refuse.

* **Ignore rules pinned at a checkpoint.** A stage's "after" checkpoint reads the project's ``.gitignore``
  files as they were in its "before" checkpoint (:func:`root_rules` turns them into one exclude file of
  root-anchored patterns), so a line a worker adds to a ``.gitignore`` does not hide the file it then
  creates; the edited ``.gitignore`` is itself a change of the stage.
* **Nested repositories** (a folder with its own ``.git``, with or without a commit): git lists such a
  folder as one entry and ``git add`` would record a gitlink (or fail); their files are listed here one by
  one (:func:`nested_files`, the nested ``.git`` left out) and checkpointed as ordinary files.
* **The user's repository** (``.git/`` of the project): the files that decide what git runs and where its
  branches point (:data:`USER_GIT_PARTS`: ``HEAD``, ``config``, ``packed-refs``, ``refs/``, ``hooks/``,
  ``info/``) are kept in each checkpoint under :data:`TREE_GIT` (git refuses a ``.git`` path in a tree) and
  named ``.git/...`` in every change list, so a stage that writes a hook or moves a branch shows it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: the user's repository, as changes name it
USER_GIT = ".git/"
#: where a checkpoint tree keeps the user's repository files (never a path of the project itself)
TREE_GIT = ".odin-loop/git/"
USER_GIT_PARTS = ("HEAD", "config", "packed-refs", "refs", "hooks", "info")
#: folders and suffixes never listed inside a nested repository (as EXCLUDED leaves them out elsewhere)
SKIPPED_DIRS = frozenset({".git", "__pycache__", ".pytest_cache", ".ipynb_checkpoints", ".odin-loop"})
SKIPPED_SUFFIXES = (".pyc",)


def to_user(path: str) -> str:
    """A checkpoint tree's path as changes name it."""
    return USER_GIT + path[len(TREE_GIT):] if path.startswith(TREE_GIT) else path


def shown(path: str) -> str:
    """A tree path as text, the way every change names it: a byte that is not UTF-8 (kept as a surrogate by
    ``surrogateescape``) as ``\\xNN``, so a name reaches a model request, an event or a report as valid text; the
    store maps it back to the real bytes (:meth:`Checkpoints.restore`, ``diff``, ``changed_lines``)."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def to_tree(path: str) -> str:
    """A changed path as the checkpoint tree holds it."""
    return TREE_GIT + path[len(USER_GIT):] if path.startswith(USER_GIT) else path


def is_gitignore(path: str) -> bool:
    return (path == ".gitignore" or path.endswith("/.gitignore")) and not path.startswith(".odin-loop/")


def root_rules(gitignores: dict[str, bytes]) -> bytes:
    """The rules of per-folder ``.gitignore`` files (path → content) as ONE exclude file at the root.

    A pattern with a slash before its end is relative to its folder (``/dir/pattern``); one without matches
    at any depth below it (``/dir/**/pattern``). Deeper files come later, so they win, as in git."""
    out: list[bytes] = []
    for path in sorted(gitignores, key=lambda p: (p.count("/"), p)):
        base = escape_glob(path[: -len(".gitignore")]).encode("utf-8", "surrogateescape")
        for raw in gitignores[path].split(b"\n"):
            line = raw.rstrip(b"\r")
            while line.endswith(b" ") and not line.endswith(b"\\ "):
                line = line[:-1]
            if not line or line.startswith(b"#"):
                continue
            negate = line.startswith(b"!")
            body = line[1:] if negate else line
            anchored = b"/" in body.rstrip(b"/")
            body = body.lstrip(b"/") if anchored else body
            if base:
                body = b"/" + base + (b"" if anchored else b"**/") + body
            elif anchored:
                body = b"/" + body
            out.append((b"!" if negate else b"") + body)
    return b"".join(line + b"\n" for line in out)


def escape_glob(path: str) -> str:
    """A path as a gitignore pattern that matches only itself."""
    return "".join("\\" + ch if ch in "*?[]!#\\ " else ch for ch in path)


def nested_files(project_dir: Path, folder: str) -> list[str]:
    """Every file (and symbolic link) under ``folder``, a nested repository, as project-relative paths;
    nested ``.git`` folders and test caches left out."""
    found: list[str] = []
    root = project_dir / folder
    for here, dirs, files in os.walk(root):
        rel = Path(here).relative_to(project_dir).as_posix()
        for name in list(dirs):
            if name in SKIPPED_DIRS:
                dirs.remove(name)
            elif os.path.islink(os.path.join(here, name)):
                dirs.remove(name)
                found.append(f"{rel}/{name}")
        found.extend(f"{rel}/{name}" for name in files
                     if name not in SKIPPED_DIRS and not name.endswith(SKIPPED_SUFFIXES))
    return found


def user_git_files(project_dir: Path) -> list[tuple[str, str, Path]]:
    """The user's repository files a checkpoint keeps: ``(tree path, git mode, file)`` for each regular file
    of :data:`USER_GIT_PARTS` (none when ``.git`` is not a folder: a work tree's link file, no repository)."""
    root = project_dir / ".git"
    if root.is_symlink() or not root.is_dir():
        return []
    out = []
    for part in USER_GIT_PARTS:
        top = root / part
        walked = [(str(root), [], [part])] if not top.is_dir() else os.walk(top)
        for here, _dirs, files in walked:
            for name in files:
                full = Path(here) / name
                try:
                    info = full.lstat()
                except OSError:
                    continue
                rel = full.relative_to(root).as_posix()
                if stat.S_ISREG(info.st_mode) and "\n" not in rel:
                    mode = "100755" if info.st_mode & 0o111 else "100644"
                    out.append((TREE_GIT + rel, mode, full))
    return out
