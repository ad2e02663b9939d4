"""The engine: it orchestrates a run, and each concern of a run is a module of its own.

``orchestrator`` holds ``Engine`` (start, drive, pause, resume) and ``simulate``; the gate
and its checks are in ``gates``, ``judging``, ``routing``, ``completion``, ``regression``,
``mutation`` and ``scope``; revert and fork in ``rewind``; a reporting stage's document in
``reporting_stage``.

May import: every layer below it (``core``, ``loop``, ``runs``, ``workers``, ``interview``,
``learning``, ``authoring``, ``render``). Never a front end.

``from odin_magic.engine import Engine`` (and every other name of ``orchestrator``) works,
loaded on first use, so that a front end that names the package does not load the engine
before it drives a run.
"""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    module = importlib.import_module("odin_magic.engine.orchestrator")
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module 'odin_magic.engine' has no attribute {name!r}") from None
