"""A metric gate's measurements as records: one JSON line each in the run dir's ``measurements.jsonl``,
appended (never rewritten), read back to reuse a figure measured on the same tree.

A measurement is of one tree (a checkpoint id: a git tree id, so the same content is the same id; None for
the project as it was, unrecorded) by one way of measuring (the command, how its figure is read, how many
runs): :func:`cached` finds the latest good one of that tree and way, so a stage's baseline is measured once
per checkpoint and again only when the tree it was measured on changed. :func:`laid_out` writes a
checkpoint's files into a folder (a scratch copy of the before-tree, where the baseline is measured).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from odin_magic.core.atomic import open_append
from odin_magic.runs import checkpoint_listing as listing
from odin_magic.runs.checkpoints import Checkpoints, CheckpointError

FILE = "measurements.jsonl"


class Measurement(BaseModel):
    """One measurement: ``repeat`` runs of a command, their samples, the figure (median) and spread."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["baseline", "after"]  # the figure before the stage's change, or after it
    stage: str
    tree: str | None = None  # the checkpoint measured (None: not a recorded tree)
    way: str  # the command and how its figure is read (see odin_magic.engine.metric_gate.way)
    samples: list[float] = Field(default_factory=list)
    figure: float | None = None  # the median of the samples; None: it could not be measured
    spread: float | None = None  # the largest sample minus the smallest
    error: str | None = None  # why it could not be measured
    at: str = ""

    @property
    def ok(self) -> bool:
        return self.figure is not None and self.error is None


def record(run_dir: Path, m: Measurement) -> None:
    """Append ``m`` to the run's measurements."""
    with open_append(Path(run_dir) / FILE, within=run_dir) as f:
        f.write(m.model_dump_json() + "\n")


def read(run_dir: Path) -> list[Measurement]:
    """Every measurement of the run, oldest first (a torn or foreign line is skipped)."""
    path = Path(run_dir) / FILE
    if not path.is_file() or path.is_symlink():
        return []
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            out.append(Measurement.model_validate(json.loads(line)))
        except ValueError:
            continue
    return out


def cached(run_dir: Path, tree: str, way: str, reuse=lambda m: True) -> Measurement | None:
    """The latest good measurement of ``tree`` by ``way`` that ``reuse`` accepts, or None."""
    for m in reversed(read(run_dir)):
        if m.tree == tree and m.way == way and m.ok and reuse(m):
            return m
    return None


def laid_out(checkpoints: Checkpoints, checkpoint: str, dest: Path) -> Path:
    """Write ``checkpoint``'s files under ``dest`` (a scratch folder): the tree a stage began with, outside the
    project (the user's ``.git`` files the checkpoint keeps are left out). :class:`CheckpointError` when the
    store cannot give it."""
    entries = checkpoints.entries(checkpoint)
    blobs = checkpoints.blobs([e.sha for e in entries.values()])
    dest = Path(dest)
    for path, entry in sorted(entries.items()):
        rel = listing.to_user(path)
        parts = Path(rel).parts
        if Path(rel).is_absolute() or ".." in parts or ".git" in parts:
            continue
        full = dest.joinpath(*parts)
        full.parent.mkdir(parents=True, exist_ok=True)
        if entry.mode == "120000":
            full.symlink_to(blobs[entry.sha].decode("utf-8", "surrogateescape"))
        else:
            full.write_bytes(blobs[entry.sha])
            if entry.mode == "100755":
                full.chmod(0o755)
    return dest


__all__ = ["FILE", "Measurement", "record", "read", "cached", "laid_out", "CheckpointError"]
