"""Revert and fork: going back to a checkpoint of a run (see :mod:`odin_magic.runs.checkpoints`).

* **Revert** restores the project tree byte for byte to the checkpoint before a
  stage execution and sets the run to continue from that stage. Files changed
  by hand since the run last left the tree are named and kept, unless forced,
  and so are the paths that could not be restored without undoing them (a file
  in a folder the user replaced by a link: the link stays, never followed).
  The user's repository (``.git/``) is never restored: its branches are the user's.
* **Fork** starts a new run from a point N of an existing run (its history and
  counters up to N, the tree restored to that point's checkpoint); the old run
  is marked abandoned with a pointer to the fork. A fork that fails half-way is
  undone (:func:`odin_magic.engine.forking.undo_fork`): the new run abandoned with the reason,
  the old one given back its status (and a restore that fails part-way puts
  the files back, see :meth:`Checkpoints.restore`).

Both compute a plan first and change nothing until the plan is complete; the
restore itself is journaled (a crash leaves the old tree or, once the store is
opened again, the new one).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from odin_magic.runs.checkpoints import Checkpoints
from odin_magic.runs.diffs import select_execution
from odin_magic.core.errors import OdinError, UsageError
from odin_magic.engine.scope import protected, user_git
from odin_magic.runs.state import HistoryEntry, RunState

#: run-dir files a fork does not copy: the run's own log, state, lock, and worker replay position
NOT_COPIED = {"events.jsonl", "state.json", "loop.json", "driver.lock", "driver.json", "scripted-model.json"}


@dataclass
class Rewind:
    """Where the tree goes back to, and what a restore would do."""

    target: str  # the checkpoint to restore
    stage: str  # the stage the run continues from
    number: int  # the stage execution (revert) or history point (fork)
    restore: list[str] = field(default_factory=list)  # paths the restore changes
    kept: list[str] = field(default_factory=list)  # hand-made changes left alone


def last_tree(state: RunState) -> str | None:
    """The tree as the run last left it: after its latest stage work, or a revert."""
    if state.tree:
        return state.tree
    for entry in reversed(state.history):
        if entry.after:
            return entry.after
    return None


def plan(checkpoints: Checkpoints, state: RunState, target: str, stage: str, number: int, force: bool) -> Rewind:
    checkpoints.require(target)
    now = checkpoints.snapshot()
    # the user's repository (.git/ refs, hooks, config) is the user's history: a revert or fork restores the
    # files, never a branch (a stage's own change to .git/ was reverted at its gate, see engine/scope.py)
    restore = [c.path for c in checkpoints.changes(now, target) if not user_git(c.path)]
    by_hand: set[str] = set()
    known = last_tree(state)
    if not force:
        if known and checkpoints.exists(known):
            by_hand = {c.path for c in checkpoints.changes(known, now)}
        by_hand |= {p for p in restore if protected(p)}  # notebooks are the user's: kept unless forced
    held = {p for p in restore if p in by_hand}
    held |= entangled(restore, held)
    return Rewind(target, stage, number, [p for p in restore if p not in held], sorted(held))


def entangled(paths: list[str], kept: set[str]) -> set[str]:
    """Those of ``paths`` that cannot be restored without undoing a ``kept`` path: below it (a file the stage
    deleted from a folder the user has since replaced by a link or a file) or above it (a link the stage
    removed where the user has since put files in the stage's folder). Kept with it, never followed."""
    above = {folder for k in kept for folder in _folders(k)}
    return {p for p in paths if p in above or any(folder in kept for folder in _folders(p))}


def _folders(path: str) -> list[str]:
    """The folders a path is in: ``a/b/c`` is in ``a`` and ``a/b``."""
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def revert_plan(checkpoints: Checkpoints, state: RunState, selector: str | None, to: int | None,
                force: bool) -> Rewind:
    """The revert of ``selector`` (a stage id: its latest execution) or ``to`` (execution N)."""
    if selector is not None and to is not None:
        raise UsageError("give a STAGE or --to N, not both", hint="odin revert review   or   odin revert --to 3")
    number, entry = select_execution(state, str(to) if to is not None else selector)
    return plan(checkpoints, state, entry.checkpoint, entry.stage, number, force)


def apply(checkpoints: Checkpoints, rewind: Rewind) -> str:
    """Restore the planned paths; returns the tree now (the run's new ``tree``)."""
    if rewind.restore:
        checkpoints.restore(rewind.target, paths=rewind.restore)
    return checkpoints.snapshot()


# -- fork ------------------------------------------------------------------------------------


@dataclass
class ForkPoint:
    """What a fork from point N of a run starts with."""

    number: int
    entries: list[HistoryEntry]
    target: str  # the tree at that point
    current_stage: str
    status: str  # running, or awaiting_approval when N stops at a pause
    iterations: dict[str, int]
    total_iterations: int


def fork_point(state: RunState, number: int | None) -> ForkPoint:
    history = state.history
    n = len(history) if number is None else number
    if not 0 <= n <= len(history):
        raise UsageError(f"run {state.run_id} has no point {n}: its history has {len(history)} entries",
                         hint=f"--from takes 0..{len(history)} (the number of history entries to keep)")
    target = None
    if n < len(history) and history[n].checkpoint:
        target = history[n].checkpoint  # the tree before what came next
    else:
        for entry in reversed(history[:n]):
            if entry.after:
                target = entry.after
                break
        if target is None:
            target = next((e.checkpoint for e in history if e.checkpoint), None)
    if target is None:
        raise UsageError(f"run {state.run_id} has no checkpoint to fork from",
                         hint="checkpoints are recorded from the first stage a run executes")
    entries = history[:n]
    if n < len(history):
        nxt = history[n]
        status = "awaiting_approval" if nxt.gate == "approved" else "running"
        stage = nxt.stage
    else:
        status, stage = "running", state.current_stage
    iterations: dict[str, int] = {}
    for e in entries:
        if e.result == "fail" and e.failure not in ("environment", "blocked"):
            iterations[e.stage] = iterations.get(e.stage, 0) + 1
    return ForkPoint(n, entries, target, stage, status, iterations, sum(iterations.values()))


def copy_run_files(source: Path, dest: Path) -> None:
    """The run-scoped artifacts (spec.md, harness/, gates/ ...) of the old run, as they are now."""
    try:
        for item in source.iterdir():
            if item.name in NOT_COPIED or item.name.startswith("."):
                continue
            target = dest / item.name
            if item.is_dir() and not item.is_symlink():
                shutil.copytree(item, target, symlinks=True, dirs_exist_ok=True)
            elif item.is_file() and not item.is_symlink():
                shutil.copy2(item, target)
    except OSError as exc:  # shutil.Error (a list of failures) is one
        failures = exc.args[0] if isinstance(exc, shutil.Error) and exc.args else None
        detail = failures[0][2] if isinstance(failures, list) and failures else str(exc)
        raise OdinError(f"the files of run {source.name} could not be copied into the fork: {detail}",
                        hint="mend or move the file named, then fork again; the run is as it was") from None


def forked_fields(point: ForkPoint) -> dict[str, Any]:
    return {
        "entries": [e.model_dump(mode="json", exclude_none=True) for e in point.entries],
        "set": {"current_stage": point.current_stage, "status": point.status, "iterations": point.iterations,
                "total_iterations": point.total_iterations, "tree": point.target},
    }
