"""A stage whose role may write no file (``explore``) reports: the engine writes the report.

Seed 000's roles table: explore edits nothing and reports. Such a stage may declare one
``produces``, a document (``survey.md``); its worker keeps its read-only tools, and the engine
writes the worker's final answer to that document after the stage, so the gate finds it.
"""

from __future__ import annotations

from odin_magic.loop.artifacts import Placement
from odin_magic.loop.schema import Stage
from odin_magic.loop.roles import POLICIES
from odin_magic.core.atomic import write_atomic


def reports(role: str | None) -> bool:
    """Whether a stage run by ``role`` reports instead of writing (its role may write no file)."""
    return role is not None and POLICIES[role].writes == "none"


def report_entry(stage: Stage) -> str | None:
    """The ``produces`` entry the engine writes a reporting stage's final answer to, else None."""
    if not reports(stage.resolved_agent.role) or len(stage.produces) != 1:
        return None
    entry = stage.produces[0]
    return None if entry.strip().endswith("/") else entry


def save_report(stage: Stage, produces: dict[str, Placement], report: str) -> str | None:
    """Write ``report`` to the stage's document; the entry written, or None (not a reporting stage,
    or an empty report: the gate then finds the document missing and says so)."""
    entry = report_entry(stage)
    if entry is None or not report.strip():
        return None
    target = produces[entry].path
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, report.rstrip("\n") + "\n")
    return entry
