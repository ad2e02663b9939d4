"""Frozen artifacts: what judged a stage cannot be changed by the stages after it.

When a stage's gate passes, the engine freezes its ``produces`` (run-dir artifacts and project
paths alike): a ``frozen`` record (:class:`~odin_magic.runs.records.FrozenRecord`) names each file's
SHA-256, and its bytes are kept in the run dir's content-addressed store
(:class:`~odin_magic.runs.freezes.BlobStore`). Before every later gate (:func:`check`, the first step
of the gate pipeline), the frozen files are compared: a file modified or deleted, or one added under
a frozen folder, is put back byte for byte and the gate fails as out of scope::

    implement changed harness/test_calc.py, frozen since harness-verify: restored

A stage that itself produces an artifact may change it (and its pass freezes it anew). A loopback to
the producing stage unfreezes its artifacts (the gate record's ``unfrozen``), and so does ``odin
revert`` to before the gate that froze them (see :func:`odin_magic.runs.fold.freezes`).

The test runner's configuration that governs frozen files is theirs too (:func:`guarded`): a
``conftest.py`` or a pytest configuration file (:data:`RUNNER_CONFIG`; a ``pyproject.toml`` when its
``[tool.pytest]`` tables change) in the folder of a frozen file or any folder above it in the project, and
at the project's root. A stage that does not produce one may not add, change or remove it (the scope check
reverts it and fails the gate): a ``conftest.py`` that turns every test into a pass would otherwise
judge the stage in the frozen tests' place.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from odin_magic.loop.globs import PYPROJECT, RUNNER_FILES, matches
from odin_magic.loop.schema import Stage
from odin_magic.engine.rewind import NOT_COPIED
from odin_magic.render.run_report import REPORT_MD, REPORT_NB
from odin_magic.runs import freezes
from odin_magic.runs.records import RecordType
from odin_magic.runs.state import RunState

SHOWN = 20  # tampered paths named in a gate's reason


#: what the engine itself writes in the run dir, whatever a stage's produces says: never frozen
ENGINE_FILES = (REPORT_MD, REPORT_NB, "thread.json", *sorted(NOT_COPIED))


#: the files that configure how the tests run (loop.globs.RUNNER_FILES: pytest's, and what Python's site reads
#: at start), and pyproject.toml (counted only when its ``[tool.pytest]`` tables change: see scope.runner_changes)
RUNNER_CONFIG = tuple(sorted(RUNNER_FILES | {PYPROJECT}))


def roots(engine, s) -> freezes.Roots:
    return roots_of(engine.project_dir, s)


def produced_by(stage: Stage):
    """Whether ``stage`` produces an artifact path (its own produces it may change)."""
    patterns = [e.strip().replace("\\", "/") for e in stage.produces]
    return lambda key: matches(patterns, key)


def guarded(project_dir: Path, s, stage: Stage) -> frozenset[str]:
    """The project-relative paths of the test runner's configuration that governs the run's frozen files
    (a ``conftest.py`` and pytest's configuration files in each one's folder and every folder above it in the
    project, and at the root), but those ``stage`` produces itself; empty while nothing is frozen."""
    frozen = s.state.frozen
    if not frozen:
        return frozenset()
    where, found = roots_of(project_dir, s), set(RUNNER_CONFIG)
    for key in frozen:
        try:
            rel = PurePosixPath(where.path(key).relative_to(where.project_dir).as_posix())
        except ValueError:
            continue
        found.update((parent / name).as_posix() for parent in rel.parents for name in RUNNER_CONFIG)
    mine = produced_by(stage)
    return frozenset(p for p in found if not mine(p))


def roots_of(project_dir: Path, s) -> freezes.Roots:
    return freezes.Roots(Path(project_dir), s.handle.run_dir, ENGINE_FILES)


def freeze(engine, s, stage: Stage, point: int) -> None:
    """Freeze ``stage``'s produces as they are now, its gate (history entry ``point``) having passed.
    Written just before that gate record, without an fsync of its own (the gate record's makes both durable)."""
    where = roots(engine, s)
    found = freezes.scan(stage.produces, where)
    blobs = freezes.BlobStore(where.run_dir)
    files = {}
    for key, now in found.items():
        if now is None:
            files[key] = {}
            continue
        blobs.keep(now)
        files[key] = {"sha256": now.sha256, **({"mode": now.mode} if now.mode else {})}
    if files or any(f.stage == stage.id for f in (s.state.frozen or {}).values()):
        engine._record(s, RecordType.FROZEN, save=False, sync=False, stage=stage.id, point=point, files=files)


def check(engine, s, stage: Stage) -> tuple[str, list[str]] | None:
    """(the gate's failure reason, the paths put back) when ``stage``'s execution changed a frozen artifact it
    does not produce; None when it changed none."""
    frozen = s.state.frozen
    if not frozen:
        return None
    where = roots(engine, s)
    bad = freezes.tampered(frozen, where, produced_by(stage))
    if not bad:
        return None
    blobs = freezes.BlobStore(where.run_dir)
    lost = [t.shown for t in bad if not freezes.put_back(t, where, blobs)]
    by_stage: dict[str, list[freezes.Tamper]] = {}
    for t in bad[:SHOWN]:
        by_stage.setdefault(t.frozen.stage, []).append(t)
    told = "; ".join(
        ", ".join(t.shown if t.kind == "modified" else f"{t.shown} ({t.kind})" for t in ts) + f", frozen since {froze}"
        for froze, ts in by_stage.items())
    more = f" and {len(bad) - SHOWN} more" if len(bad) > SHOWN else ""
    reason = f"{stage.id} changed {told}{more}: restored"
    if lost:
        reason += f" (except {', '.join(lost[:SHOWN])}: not restored: no copy was kept (it holds a secret), the copy is missing or damaged, or it could not be written)"
    return reason, [t.shown for t in bad if t.shown not in lost]


def unfrozen(state: RunState, passed: bool, changes: dict) -> list[str]:
    """The stage whose freezes a failed gate's loopback undoes: the stage it goes back to, when it holds any."""
    target = changes.get("current_stage")
    if passed or not target or not state.frozen:
        return []
    return [target] if any(f.stage == target for f in state.frozen.values()) else []
