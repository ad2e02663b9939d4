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

from odin_magic.core.faces import hand_on

__getattr__ = hand_on(__name__, "odin_magic.engine.orchestrator")
