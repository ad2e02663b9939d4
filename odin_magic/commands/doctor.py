"""The arguments of ``doctor`` (what the engine will do in a project, checked before a run), one definition
for ``odin`` and ``%odin``."""

from __future__ import annotations

from odin_magic.commands.spec import ODIN, arg

DOCTOR = (arg("--json", only=ODIN, action="store_true", help="print the checks as JSON"),)
