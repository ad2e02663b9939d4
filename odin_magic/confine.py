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

from .errors import OdinError


class PathEscapes(OdinError):
    """A path inside the project by name whose real path (through a symbolic link) is outside."""


def real(path: Path | str) -> Path:
    """The real path: every symbolic link along it followed (also for a path that does not exist yet)."""
    return Path(os.path.realpath(path))


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == r or path.is_relative_to(r) for r in roots)


def is_confined(path: Path | str, roots: Iterable[Path | str]) -> bool:
    """True when ``path``'s real path is one of ``roots`` (by real path) or below one of them."""
    return _inside(real(path), [real(r) for r in roots])


def escaping_link(path: Path | str, roots: Iterable[Path | str]) -> tuple[Path, str] | None:
    """The first component of ``path`` whose real path leaves ``roots``, and where it points; None if none does.

    Walks ``path`` down from the root it lies under by name: the first prefix whose
    real path is outside is a symbolic link (a plain name appended to an inside
    directory stays inside).
    """
    roots = [Path(os.path.abspath(r)) for r in roots]
    real_roots = [real(r) for r in roots]
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


def describe(path: Path | str, roots: Iterable[Path | str], base: Path | str | None = None) -> str:
    """One line: which link leads ``path`` out of ``roots``, and to where."""
    roots = list(roots)
    found = escaping_link(path, roots)
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


def check_confined(path: Path | str, roots: Iterable[Path | str], what: str, base: Path | str | None = None,
                   then: str | None = None) -> Path:
    """``path``'s real path, or :class:`PathEscapes` naming the link that leads out of ``roots`` and its target.

    ``what`` says what the path is for (e.g. "artifact 'src/' of stage 'build'"); ``then`` what to do after
    replacing the link (e.g. "`odin run` continues the run").
    """
    roots = list(roots)
    resolved = real(path)
    if _inside(resolved, [real(r) for r in roots]):
        return resolved
    raise PathEscapes(
        f"{what}: refused, {describe(path, roots, base)}",
        hint="odin never reads or writes outside the project through a link; "
        "replace the link with a real directory or file inside the project" + (f", then {then}" if then else ""),
    )
