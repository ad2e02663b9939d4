"""A stage's sandbox policy from its loop: the mode (the user's ``ODIN_SANDBOX`` or the loop's
``sandbox:``), the run-dir artifacts the stage ``produces`` (writable in the sandbox), its network.

The engine (gate commands, regression, mutants) and the worker (the bash tool, ``post_edit``) both
build their command environment with :func:`stage_sandbox` (:mod:`odin_magic.core.sandbox`)."""

from __future__ import annotations

from pathlib import Path

from odin_magic.core.sandbox import SandboxPolicy, chosen_mode, stage_policy
from odin_magic.loop.artifacts import Placement, placements
from odin_magic.loop.schema import Loop, Stage


def stage_sandbox(loop: Loop, stage: Stage, project_dir: Path, run_dir: Path,
                  produces: dict[str, Placement] | None = None) -> SandboxPolicy:
    """The policy of ``stage``'s commands; :class:`~odin_magic.core.sandbox.SandboxUnavailable` when the
    mode is ``bwrap`` and bubblewrap cannot run here. ``produces``: the stage's produces placements when the
    caller has them (:func:`~odin_magic.loop.artifacts.placements` of the same stage and dirs: a pure function)."""
    places = placements(stage.produces, Path(project_dir), Path(run_dir), stage.id) if produces is None else produces
    writable = [(p.path, p.is_dir) for p in places.values() if p.in_run_dir]
    return stage_policy(chosen_mode(loop.sandbox), writable, loop.network_for(stage))
