"""A run as data: its state, its event log, its evidence and its checkpoints.

Owns ``RunState`` and friends (``state``), state.json written with a bounded peak
(``statefile``), the event-sourced store (``store``: the log is the truth, state.json a
cache), gate evidence (``evidence``), the engine's event stream for live views
(``events``), checkpoints of the project tree (``checkpoints``), frozen artifacts' hashes and bytes (``freezes``) and a stage execution's
diff as plain data (``diffs``).

May import: ``core``, ``loop``.
"""
