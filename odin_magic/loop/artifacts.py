"""Where a stage's declared ``produces``/``consumes`` entry lives.

The rule (seed 000, "Where things live"), deterministic and documented in
``docs/engine.md``:

* an entry whose first path component is ``harness`` (``harness/``,
  ``harness/test_api.py``) lives in the **run dir** — run-scoped scaffolding;
* an entry with no directory at all (``spec.md``, ``review.md``) is a loop
  document and lives in the **run dir**;
* every other entry (``src/``, ``tests/test_bug.py``, ``docs/``) is part of the
  shipped deliverable and lives in the **project tree**.

An entry ending in ``/`` names a directory; it exists when it is a non-empty
directory. Any other entry exists when it is a file (or a non-empty directory).
Absolute paths, ``..`` and control characters are refused, and so is an entry
whose real path leaves the project and the run dir through a symbolic link
(:func:`confine`): a loop never reads or writes outside the project.
"""

from __future__ import annotations

import functools
import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from odin_magic.core.confine import Confinement
from odin_magic.core.errors import OdinError

RUN_SCOPED_TOP = "harness"


class ArtifactPathInvalid(OdinError):
    """A produces/consumes entry that would escape the project."""


def control_character(text: str) -> str | None:
    """The first control character in ``text`` as ``U+XXXX`` (NUL, newline, tab, DEL, ...), or None."""
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Zl", "Zp"):
            return f"U+{ord(ch):04X}"
    return None


@dataclass(frozen=True)
class Placement:
    entry: str  # as declared in the loop
    path: Path  # absolute
    in_run_dir: bool
    is_dir: bool

    def exists(self) -> bool:
        return artifact_exists(self.path, self.is_dir)


def _parts(entry: str, stage_id: str | None = None) -> tuple[str, ...]:
    text = entry.strip().replace("\\", "/")
    where = f" (stage {stage_id!r})" if stage_id else ""
    bad = control_character(entry)
    if bad:
        raise ArtifactPathInvalid(
            f"artifact {entry!r}{where} contains a control character ({bad})",
            hint="artifact paths are plain relative paths: no NUL, newline, tab or other control characters",
        )
    pure = PurePosixPath(text)
    if not text or text in ("/", ".") or pure.is_absolute() or ".." in pure.parts:
        raise ArtifactPathInvalid(
            f"artifact {entry!r}{where} must be a relative path inside the project",
            hint="write it like 'spec.md', 'harness/' or 'src/'; absolute paths and '..' are not allowed",
        )
    return tuple(p for p in pure.parts if p != ".")


def _run_scoped(parts: tuple[str, ...], is_dir: bool) -> bool:
    """The placement rule (see the module docstring): harness/..., or a bare file name."""
    return parts[0] == RUN_SCOPED_TOP or (len(parts) == 1 and not is_dir)


@functools.lru_cache(maxsize=4096)
def in_run_dir(entry: str) -> bool:
    """True when ``entry`` lives in the run dir (see the module docstring); a function of the text alone, kept
    (the engine asks it of the same entries at every gate). An invalid entry raises each time."""
    return _run_scoped(_parts(entry), entry.strip().endswith("/"))


def place(entry: str, project_dir: Path, run_dir: Path, stage_id: str | None = None) -> Placement:
    parts = _parts(entry, stage_id)
    is_dir = entry.strip().endswith("/")
    run_scoped = _run_scoped(parts, is_dir)
    base = Path(run_dir) if run_scoped else Path(project_dir)
    return Placement(entry=entry, path=base.joinpath(*parts), in_run_dir=run_scoped, is_dir=is_dir)


def artifact_exists(path: Path, is_dir: bool) -> bool:
    if path.is_dir():
        try:
            with os.scandir(path) as it:
                return any(True for _ in it)
        except OSError:
            return False
    return (not is_dir) and path.is_file()


def placements(entries: list[str], project_dir: Path, run_dir: Path, stage_id: str | None = None) -> dict[str, Placement]:
    return {e: place(e, project_dir, run_dir, stage_id) for e in entries}


def confine(places: dict[str, Placement], within: Confinement, project_dir: Path, stage_id: str | None = None) -> None:
    """Refuse (:class:`~odin_magic.core.confine.PathEscapes`) any placement whose real path (symbolic links
    followed, for a path that does not exist yet too) leaves ``within`` (the project and the run dir,
    resolved once per drive); errors name paths relative to ``project_dir``."""
    where = f" of stage {stage_id!r}" if stage_id else ""
    for entry, p in places.items():
        within.check_text(p.path, f"artifact {entry!r}{where}", base=project_dir,
                     then="`odin run` (or `%odin run`) continues the run at this stage")


@functools.lru_cache(maxsize=4096)
def project_relative(path: Path, project_dir: Path, is_dir: bool = False) -> str:
    """The path as state.json's ``artifacts`` records it (POSIX, relative to the project); a function of the
    paths' text alone (two relative paths are taken from the same working directory), kept: every gate asks it."""
    rel = Path(os.path.relpath(path, project_dir)).as_posix()
    return rel + "/" if is_dir and not rel.endswith("/") else rel
