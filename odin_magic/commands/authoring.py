"""The arguments of the authoring and learning commands (new, refine, memory), one definition for ``odin``
and ``%odin``."""

from __future__ import annotations

from odin_magic.commands.spec import MAGIC, ODIN, arg

NEW = (
    arg("name", metavar="NAME", help="the new loop's name (its file stem)"),
    arg("--answers", metavar="FILE", help="a YAML file answering the seven questions (nothing is asked)"),
    arg("--describe", metavar="TEXT", nargs="+", help="one line about the work: a configured model proposes answers"),
    arg("--force", action="store_true", help="replace an existing loop of that name"),
)

REFINE = (
    # `list` is the terminal's; the notebook shows open proposals with the aggregates
    arg("words", only=ODIN, nargs="*", metavar="LOOP | apply ID | reject ID | list [LOOP]"),
    arg("words", only=MAGIC, nargs="*", metavar="LOOP | apply ID | reject ID"),
    arg("--json", action="store_true",
        help="the aggregates and proposals as JSON (the notebook returns them as a dict)"),
    arg("--model", action="store_true", help="also ask the configured model (API key, or a script offline) for "
                                             "proposals, marked as model-written"),
)

MEMORY = (
    arg("words", nargs="*", metavar="[remove ID | clear]"),
    arg("--kind", only=ODIN, choices=("decision", "lesson"), help="only this kind of entry"),
    arg("--force", action="store_true", help="with clear: really delete the entries"),
    arg("--json", only=ODIN, action="store_true", help="print the entries as JSON"),
)
