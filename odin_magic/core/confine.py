"""A name is not a path: what the engine reads or writes must stay inside by its real path.

A loop names its artifacts relative to the project (``src/``, ``spec.md``), and
the validator refuses ``..`` and absolute paths. That alone does not keep the
engine inside: ``src`` may be a symbolic link to a directory anywhere, and a
``consumes`` file may link to ``~/.ssh/id_rsa``. So every path the engine
writes (artifacts, their parent directories, dry-run placeholders, saved loop
files) and every file it reads into a prompt is resolved to its real path
(symbolic links followed, as the operating system would) and refused when that
real path leaves the allowed roots: the project, and the run dir.

The error names the link that leads out and where it points, so the user can
see what to remove or replace.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from odin_magic.core.errors import OdinError


class PathEscapes(OdinError):
    """A path inside the project by name whose real path (through a symbolic link) is outside."""


class LinkInPath(PathEscapes):
    """A file the engine owns (in the run dir, in ``.odin-loop/``) whose path holds a symbolic link, or a hard
    link in its place: the engine never writes through one (:mod:`odin_magic.core.atomic`)."""

    @classmethod
    def at(cls, link: Path | str, within: Path | str, hard: bool = False) -> "LinkInPath":
        """The refusal of a write through ``link`` (a component of a path in ``within``)."""
        shown = _show(link, within)
        if hard:
            what = f"{shown} is not a plain file of its own (a hard link, or not a regular file)"
        else:
            try:
                what = f"{shown} is a symbolic link to {os.readlink(link)}"
            except OSError:
                what = f"{shown} is a symbolic link"
        return cls(f"{what} in {within}: refused, odin never writes through a link there",
                   hint=f"remove {link} (a worker may have planted it); odin writes its own file there")


#: Linux: an existing path's real path is asked of the kernel (open it with O_PATH, read its
#: /proc/self/fd link): three system calls instead of os.path.realpath's lstat per component.
_O_PATH = getattr(os, "O_PATH", None) if os.path.isdir("/proc/self/fd") else None


def real_text(path: Path | str) -> str:
    """:func:`real`, as a string."""
    path = os.fspath(path)
    if _O_PATH is not None:
        try:
            fd = os.open(path, _O_PATH | os.O_CLOEXEC)
        except OSError:  # not there (yet), a dangling link, a loop: os.path.realpath says where it leads
            return os.path.realpath(path)
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        finally:
            os.close(fd)
        if target.startswith("/") and not target.endswith(" (deleted)"):
            return target
    return os.path.realpath(path)


def real(path: Path | str) -> Path:
    """The real path: every symbolic link along it followed (also for a path that does not exist yet)."""
    return Path(real_text(path))


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == r or path.is_relative_to(r) for r in roots)


def _inside_text(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r if r.endswith("/") else r + "/") for r in roots)


def is_confined(path: Path | str, roots: Iterable[Path | str]) -> bool:
    """True when ``path``'s real path is one of ``roots`` (by real path) or below one of them."""
    return Confinement(roots).contains(path)


def escaping_link(path: Path | str, roots: Iterable[Path | str],
                  real_roots: list[Path] | None = None) -> tuple[Path, str] | None:
    """The first component of ``path`` whose real path leaves ``roots``, and where it points; None if none does.

    Walks ``path`` down from the root it lies under by name: the first prefix whose
    real path is outside is a symbolic link (a plain name appended to an inside
    directory stays inside).
    """
    roots = [Path(os.path.abspath(r)) for r in roots]
    real_roots = [real(r) for r in roots] if real_roots is None else real_roots
    path = Path(os.path.abspath(path))
    under = [r for r in roots if path == r or path.is_relative_to(r)]
    if not under:
        return None if _inside(real(path), real_roots) else (path, str(real(path)))
    base = max(under, key=lambda r: len(r.parts))  # the innermost (the run dir, in the project)
    prefix = base
    for part in (base, *path.relative_to(base).parts):
        prefix = base if part is base else prefix / part
        if not _inside(real(prefix), real_roots):
            return prefix, (os.readlink(prefix) if os.path.islink(prefix) else str(real(prefix)))
    return None


def describe(path: Path | str, roots: Iterable[Path | str], base: Path | str | None = None,
             real_roots: list[Path] | None = None) -> str:
    """One line: which link leads ``path`` out of ``roots`` (whose real paths are ``real_roots``, or now), and to where."""
    roots = list(roots)
    found = escaping_link(path, roots, real_roots)
    if found is None:
        return f"{_show(path, base)} lies outside the project"
    link, target = found
    resolved = real(link)
    where = f"{target}" if str(resolved) == target else f"{target} (really {resolved})"
    return f"{_show(link, base)} is a symbolic link to {where}, outside the project"


def _show(path: Path | str, base: Path | str | None) -> str:
    if base is not None:
        try:
            return Path(os.path.relpath(path, base)).as_posix()
        except ValueError:
            pass
    return str(path)


class Confinement:
    """Allowed roots, resolved once (a drive resolves the project and the run dir as it opens the run: a root
    replaced by a link later does not move the boundary with it), against which paths are checked."""

    def __init__(self, roots: Iterable[Path | str]):
        self.roots = list(roots)
        self._real_roots = [real_text(r) for r in self.roots]

    def contains(self, path: Path | str) -> bool:
        """True when ``path``'s real path is one of the roots or below one of them."""
        return _inside_text(real_text(path), self._real_roots)

    def check(self, path: Path | str, what: str, base: Path | str | None = None, then: str | None = None) -> Path:
        """``path``'s real path, or :class:`PathEscapes` naming the link that leads out and its target.

        ``what`` says what the path is for (e.g. "artifact 'src/' of stage 'build'"); ``then`` what to do after
        replacing the link (e.g. "`odin run` continues the run").
        """
        return Path(self.check_text(path, what, base, then))

    def check_text(self, path: Path | str, what: str, base: Path | str | None = None, then: str | None = None) -> str:
        """:meth:`check`, the real path as a string."""
        resolved = real_text(path)
        if _inside_text(resolved, self._real_roots):
            return resolved
        raise PathEscapes(
            f"{what}: refused, {describe(path, self.roots, base, [Path(r) for r in self._real_roots])}",
            hint="odin never reads or writes outside the project through a link; "
            "replace the link with a real directory or file inside the project" + (f", then {then}" if then else ""),
        )


def check_confined(path: Path | str, roots: Iterable[Path | str], what: str, base: Path | str | None = None,
                   then: str | None = None) -> Path:
    """:meth:`Confinement.check` against ``roots`` resolved now."""
    return Confinement(roots).check(path, what, base, then)
