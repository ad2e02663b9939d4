"""The arguments of diff, revert and fork, one definition for ``odin`` and ``%odin`` (docs/revert-fork.md).

:data:`DIFF`, :data:`REVERT` and :data:`FORK` are their specs (:mod:`.spec`), added to the CLI's parser and to
the magic's ``MagicArgumentParser``."""

from __future__ import annotations

from odin_magic.commands.spec import arg

DIFF = (
    arg("which", nargs="?", metavar="STAGE|N",
        help="STAGE: that stage's latest execution (--net: all of them); N: execution N (the history entry "
             "number, as in status and its gate evidence); nothing: the latest execution (at a pause, the "
             "paused stage's)"),
    arg("--net", action="store_true",
        help="with STAGE: the stage's net change over all its executions (from the checkpoint before its "
             "first execution to the tree after its last)"),
    arg("--run", metavar="ID", help="run id (default: the active or latest run)"),
)

REVERT = (
    arg("stage", nargs="?", metavar="STAGE", help="the stage (its latest execution)"),
    arg("--to", type=int, metavar="N", help="execution N instead (the history entry number)"),
    arg("--force", action="store_true", help="also revert files you changed by hand since"),
)

FORK = (
    arg("--from", dest="from_point", type=int, metavar="N",
        help="keep the first N history entries (default: all of them)"),
    arg("--run", metavar="ID", help="run to fork (default: the active or latest run)"),
    arg("--force", action="store_true", help="also restore files you changed by hand since"),
)

