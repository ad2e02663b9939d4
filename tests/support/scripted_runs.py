"""Running a loop through the REAL engine, Claude worker and SDK against the offline scripted model.

``scripted_engine(project, script_text)`` writes the script, builds the scripted Messages API
(:class:`odin_magic.workers.scripted.ScriptedModel`, an HTTP-level fake) and returns the engine and
the model, whose ``requests`` lists every request body the SDK sent (work and judge calls alike).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from odin_magic.workers.config import Settings
from odin_magic.engine.orchestrator import Engine
from odin_magic.workers.claude import ClaudeWorker
from odin_magic.workers.scripted import ScriptedModel, load_script


class Events(list):
    def __call__(self, event):
        self.append(event)

    def kinds(self):
        return [e.kind for e in self]


def scripted_engine(project: Path, script: str, events: Events | None = None) -> tuple[Engine, ScriptedModel]:
    path = project.parent / "script.yaml"
    path.write_text(textwrap.dedent(script), encoding="utf-8")
    model = ScriptedModel(load_script(path), source=str(path), project_dir=project)
    worker = ClaudeWorker(Settings.from_env(env={}), client_factory=model.client_factory(max_retries=0))
    return Engine(project, worker=worker, listener=events), model


def calls(model: ScriptedModel, purpose: str) -> int:
    """How many requests of ``purpose`` (``work`` requests are counted per turn; see ``work_calls``)."""
    return sum(1 for body in model.requests if _purpose(body) == purpose)


def _purpose(body: dict) -> str:
    return "judge" if "output_config" in body else "work"
