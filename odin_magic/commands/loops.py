"""The arguments of the loop commands (list, validate, show, simulate), one definition for ``odin`` and
``%odin``."""

from __future__ import annotations

from odin_magic.commands.spec import MAGIC, ODIN, arg

LIST = (arg("--json", only=ODIN, action="store_true", help="print JSON"),)

VALIDATE = (
    # both default to the project's loops; the terminal also finds loops by name
    arg("paths", only=ODIN, nargs="*", metavar="LOOP",
        help="loop YAML file(s), or loop names (as `odin list` shows them); none: the project's loops"),
    arg("paths", only=MAGIC, nargs="*", help="loop YAML files, relative to the project; none: the project's loops"),
    arg("--schedulable", action="store_true",
        help="also require a loop that never pauses for a person (every gate 'ai', no interview)"),
    arg("--json", only=ODIN, action="store_true", help="print a JSON report"),
)

SHOW = (
    # the terminal also draws a loop file given by its path
    arg("loop", only=ODIN, metavar="LOOP", help="a loop name, or the path of a loop YAML file"),
    arg("loop", only=MAGIC, metavar="LOOP", help="a loop name (as list shows them)"),
)

SIMULATE = (
    arg("loop", metavar="LOOP", help="the loop to dry-run (a name, as list shows them)"),
    arg("--gates", metavar="SPEC", help="gate script, e.g. test:fail,review:fail"),
    arg("--json", only=ODIN, action="store_true", help="print only the JSON result"),
)
