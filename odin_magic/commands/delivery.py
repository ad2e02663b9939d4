"""The arguments of deliver, one definition for ``odin`` and ``%odin`` (docs/delivery.md)."""

from __future__ import annotations

from odin_magic.commands.spec import arg

DELIVER = (
    arg("run", nargs="?", metavar="RUN", help="the run to deliver (default: the latest run); it must have ended done"),
    arg("--branch", metavar="NAME", help="the branch to make (default: odin/RUN)"),
    arg("--squash", action="store_true", help="one commit for the whole run instead of one per stage execution"),
    arg("--force", action="store_true", help="move the branch when it exists already"),
    arg("--include-later-changes", dest="include_later", action="store_true",
        help="also deliver the run's files you changed after it ended, as they are now (default: left out, named)"),
    arg("--commit", action="store_true",
        help="instead of a branch: commit onto your current branch (only with a clean index, where the run started)"),
    arg("--push", action="store_true",
        help="push the branch to origin (with your git credentials) before --pr opens the pull request (e.g. in CI)"),
    arg("--pr", action="store_true",
        help="open a pull request with gh (GitHub CLI) from pr.md, or print the commands to push and open it"),
)
