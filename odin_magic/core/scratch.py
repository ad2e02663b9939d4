"""Scratch folders a driver makes outside the project (mutation's copies of the project), recorded in the run dir.

A driver removes its scratch folder when it is done (:func:`drop`). One that dies first (SIGKILL, a kernel
restart, a power cut) cannot: the folder is recorded before it is filled (``scratch/<name>.json`` in the run
dir, like the process groups of :mod:`odin_magic.core.processes`), and the next driver of the run removes
what a record names when it opens the run (:func:`remove_leftovers`, under the run's lock, so the driver that
wrote the record is gone). Only a folder that is what was recorded is removed: a real directory (not a link)
directly in this machine's temporary directory, named as the record is.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from odin_magic.core.atomic import write_atomic

RECORDS_DIR = "scratch"  # in the run dir: one record per scratch folder in use
PREFIX = "odin-"


def make(run_dir: Path | None, what: str) -> Path:
    """A new empty folder in the temporary directory (``odin-<what>-…``), recorded in ``run_dir`` (when given)."""
    root = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{what}-"))
    if run_dir is not None:
        try:
            folder = Path(run_dir) / RECORDS_DIR
            folder.mkdir(exist_ok=True)
            write_atomic(folder / f"{root.name}.json",
                         json.dumps({"path": str(root), "what": what, "driver": os.getpid()}), within=run_dir)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
    return root


def drop(run_dir: Path | None, root: Path) -> None:
    """Remove ``root`` and its record."""
    shutil.rmtree(root, ignore_errors=True)
    if run_dir is not None:
        (Path(run_dir) / RECORDS_DIR / f"{root.name}.json").unlink(missing_ok=True)


def remove_leftovers(run_dir: Path) -> list[str]:
    """Remove the scratch folders a dead driver of the run left (call it holding the run's lock); one notice each."""
    folder = Path(run_dir) / RECORDS_DIR
    if not folder.is_dir() or folder.is_symlink():
        return []
    notices = []
    temp = Path(tempfile.gettempdir()).resolve()
    for record in sorted(folder.glob("*.json")):
        try:
            data = json.loads(record.read_text(encoding="utf-8"))
            root = Path(data["path"])
        except (OSError, ValueError, KeyError, TypeError):
            root = None
        if root is not None and _recorded(root, record.stem, temp):
            shutil.rmtree(root, ignore_errors=True)
            notices.append(f"removed the {data.get('what', 'scratch')} scratch folder {root} left by driver pid "
                           f"{data.get('driver', '?')}")
        record.unlink(missing_ok=True)
    return notices


def _recorded(root: Path, name: str, temp: Path) -> bool:
    """Whether ``root`` is the folder a record of that ``name`` made: a directory, not a link, in ``temp``."""
    return (root.name == name and name.startswith(PREFIX) and root.parent.resolve() == temp
            and root.is_dir() and not root.is_symlink())
