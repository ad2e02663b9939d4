"""Module paths from before the layered layout, still importable: ``odin_magic.store`` is
``odin_magic.runs.store``, the same module object.

Code written against the flat layout (``from odin_magic.store import RunStore``) keeps
working; new code names the layered path. ``odin_magic.loop``, ``odin_magic.engine`` and
``odin_magic.authoring`` are packages now that hand on their old module's names.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

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


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old module path and hands out the module at its new path (the same object)."""

    def find_spec(self, fullname, path=None, target=None):
        package, _, old = fullname.partition(".")
        if package == "odin_magic" and old in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("odin_magic." + MOVED[spec.name.partition(".")[2]])

    def exec_module(self, module):
        """Nothing to run: the module was loaded at its new path."""


def install() -> None:
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
