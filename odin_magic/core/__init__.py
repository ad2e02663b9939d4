"""The ground floor: what every layer may use and what imports nothing of odin-magic above it.

Owns user-facing errors (``errors``), secrets and their redaction (``secrets``), text
encoding of command output (``encoding``), child processes that die with their driver
(``processes``), real-path confinement (``confine``), atomic file writes (``atomic``) and
running a command with its evidence (``commands``).

May import: the standard library and third-party packages only.
"""
