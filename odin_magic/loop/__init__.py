"""A loop as data: the YAML file of stages, read, checked and edited.

Owns the schema (``schema``: ``Loop``, ``Stage``, ``Gate``...), safe YAML with field
marks (``yamlsource``), validation with located diagnostics (``validation``; the reports
and diagnostics in ``diagnostics``, pydantic's errors told in ``schema_errors``, a stage's
rules in ``stage_rules``), loop resolution (``catalog``), exact text edits of a loop file
(``loopedit``), roles and their personas (``roles``), where an artifact lives
(``artifacts``), the acceptance manifest (``manifest``), the roadmap file (``roadmap``) and the
default loop's name (``defaults``).

May import: ``core``.

The schema's names are importable from the package itself (``from odin_magic.loop import
Loop``), loaded on first use so that a front end importing ``loop.defaults`` stays light.
"""

from odin_magic.core.faces import hand_on

__getattr__ = hand_on(__name__, "odin_magic.loop.schema")
