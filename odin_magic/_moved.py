"""Module paths from before the layered layout, still importable: ``odin_magic.store`` is
``odin_magic.runs.store``, the same module object.

Code written against the flat layout (``from odin_magic.store import RunStore``) keeps
working; new code names the layered path. ``odin_magic.loop``, ``odin_magic.engine`` and
``odin_magic.authoring`` are packages now that hand on their old module's names.
"""

from __future__ import annotations

import importlib
import sys
from importlib.machinery import ModuleSpec

MOVED = {
    "errors": "core.errors",
    "secrets": "core.secrets",
    "encoding": "core.encoding",
    "processes": "core.processes",
    "confine": "core.confine",
    "yamlsource": "loop.yamlsource",
    "validation": "loop.validation",
    "catalog": "loop.catalog",
    "loopedit": "loop.loopedit",
    "roles": "loop.roles",
    "artifacts": "loop.artifacts",
    "manifest": "loop.manifest",
    "defaults": "loop.defaults",
    "state": "runs.state",
    "statefile": "runs.statefile",
    "store": "runs.store",
    "evidence": "runs.evidence",
    "events": "runs.events",
    "checkpoints": "runs.checkpoints",
    "diffs": "runs.diffs",
    "config": "workers.config",
    "postedit": "workers.postedit",
    "refine": "learning.refine",
    "refine_model": "learning.refine_model",
    "memory": "learning.memory",
    "report": "render.text",
    "runreport": "render.run_report",
    "charts": "render.charts",
    "display": "render.displays",
    "refine_report": "render.refine_view",
    "gates": "engine.gates",
    "judging": "engine.judging",
    "routing": "engine.routing",
    "completion": "engine.completion",
    "regression": "engine.regression",
    "mutation": "engine.mutation",
    "scope": "engine.scope",
    "rewind": "engine.rewind",
    "reporting": "engine.reporting_stage",
    "history_args": "commands.history",
    "magics": "notebook.magics",
    "authoring_magics": "notebook.authoring_magics",
    "history_magics": "notebook.history_magics",
    "widgets": "notebook.widgets",
    "background": "notebook.background",
    "foreground": "notebook.foreground",
    "runner": "notebook.actions",
    "authoring_widget": "notebook.new_loop_form",
    "interview.widget": "notebook.interview_panel",
}


class _MovedFinder:
    """A meta path finder and loader (importlib.abc's protocols, without importing importlib.abc: it
    costs ~40 ms at start-up) that hands out the module at its new path for an old path (the same object)."""

    def find_spec(self, fullname, path=None, target=None):
        package, _, old = fullname.partition(".")
        if package == "odin_magic" and old in MOVED:
            return ModuleSpec(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("odin_magic." + MOVED[spec.name.partition(".")[2]])

    def exec_module(self, module):
        """Nothing to run: the module was loaded at its new path."""


def install() -> None:
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
