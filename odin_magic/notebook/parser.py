"""The ``%odin`` command line: its parser, its help, and how a mistake is shown.

The arguments of every command the terminal's ``odin`` also has come from their one definition in
:mod:`odin_magic.commands` (``--wait``/``--timeout`` flagged as the notebook's); the descriptions and the
notebook-only commands (stop, wait, config, help) are here. Arguments are split like a shell splits them and
parsed with IPython's ``MagicArgumentParser``, so a bad argument is one ``UsageError`` line, never a traceback.
"""

from __future__ import annotations

import argparse
import re
import shlex

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser

from odin_magic.commands import SHARED
from odin_magic.commands.spec import MAGIC, add_arguments, choice_message, unknown_command
from odin_magic.core.errors import OdinError

#: Each shared command's description in ``%odin help``, in help order (their arguments: :data:`SHARED`).
DESCRIPTIONS = {
    "run": "Start a run (LOOP and --task), or continue the active run; on a paused run, approve it.",
    "step": "Run one stage and its gate, without advancing (refused at a pause; on a failed latest run "
            "it reopens the run).",
    "status": "Show the active (or a given) run: checklist, iterations, usage.",
    "report": "Show a run's report (written when it ends): path, criteria, kill ratios, cost, charts.",
    "list": "List the loops you can run (project loops first, then built-ins).",
    "runs": "List every run in the project.",
    "approve": "Approve the paused stage; the run continues in the background.",
    "revise": "Re-run the paused stage with your feedback, then gate it again.",
    "answer": "Answer the interview's waiting question.",
    "question": "Show the interview's waiting question (a run's, or a roadmap phase's contract interview's).",
    "abandon": "Abandon the active run (it stays on disk).",
}
LATER_DESCRIPTIONS = {
    "validate": "Validate loop files (default: the project's .odin-loop/loops/*.yaml).",
    "simulate": "Dry-run a loop in a throwaway directory, every human gate approved.",
    "show": "Draw a loop: stages in order, on_fail back-edges, gate modes and roles.",
    "new": "Author a loop by answering seven questions: a form with a live YAML preview and the loop's "
           "picture (prompts in a terminal IPython).",
    "refine": "Learn from past runs (Muninn, odin's memory of them): aggregate them and propose loop edits (a panel with Apply and Reject each); "
              "`refine apply ID` / `refine reject ID` decide one.",
    "memory": "Show the project memory (decisions, lessons); `memory remove ID`, `memory clear --force`.",
    "diff": "Show what a stage execution changed (default: the latest; at a pause, the paused stage's), "
            "one collapsible, coloured diff per file.",
    "revert": "Restore the project tree to the checkpoint before a stage execution; the run continues from "
              "that stage (files you changed by hand are kept unless --force).",
    "fork": "Start a new run from point N of a run: its first N history entries kept, the tree restored to "
            "that point; the old run is abandoned with a pointer to the fork.",
    "deliver": "Make a branch of a done run's changes in your git repository (one commit per stage execution, "
               "or --squash) and its pull-request text pr.md; your branch, index and files are never touched.",
    "roadmap": "Show the roadmap (.odin-loop/roadmap.md): milestones with progress bars, each phase's status, "
               "iterations, cost and run; `roadmap validate`; `roadmap new --from SPEC` proposes one (Accept / "
               "Discard, or `roadmap accept`).",
    "doctor": "Check the project before a run: which test command the regression gate runs and why, the "
              "other commands found, whether it can run here, the loops whose regression: overrides it.",
}

CELL_HELP = """\
Cell magics:
  %%odin loop NAME     validate the cell's YAML; save it to .odin-loop/loops/NAME.yaml when valid
  %%odin task [LOOP] [run options]   start a run with the cell's body as the task
  %%odin revise [--wait]   send the cell's body as feedback to the paused stage
"""


def usage_error(exc: OdinError) -> UsageError:
    """An OdinError shown the IPython way: one line, no traceback.

    A plain UsageError, never a subclass: IPython prints the one line only when
    ``type(error) is UsageError`` and shows a full traceback for anything else.
    """
    text = exc.message + (f" (hint: {exc.hint})" if exc.hint else "")
    return UsageError(" ".join(in_notebook(text).split("\n")))


class CommandParser(MagicArgumentParser):
    """A command's parser: a misspelt action (``roadmap rnu``) is said as the terminal says it, with a "did you
    mean", not as argparse's list of choices."""

    def error(self, message: str):
        super().error(choice_message(self, message))


def build_parser() -> MagicArgumentParser:
    """The ``%odin`` parser: one subparser per command."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = MagicArgumentParser(prog="%odin", description="Run AI development-workflow loops from a notebook.",
                            formatter_class=fmt)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)

    def add(name: str, help_: str) -> CommandParser:
        sp = sub.add_parser(name, help=help_.replace("%", "%%"), description=help_, prog=f"%odin {name}",
                            formatter_class=fmt)
        if name in SHARED:
            add_arguments(sp, SHARED[name], MAGIC)
        return sp

    for name, text in DESCRIPTIONS.items():
        add(name, text)
    add("stop", "End the driving run after its current step; it stays resumable (%odin run).")
    w = add("wait", "Block until the background drive pauses, ends or stops.")
    w.add_argument("--timeout", type=float, default=None, metavar="S")
    for name, text in LATER_DESCRIPTIONS.items():
        add(name, text)
    c = add("config", "Show settings, or set them: project=DIR model=NAME max_tokens=N base_url=URL script=PATH record=PATH.")
    c.add_argument("assignments", nargs="*", metavar="KEY=VALUE")
    h = add("help", "Show this help, or one command's.")
    h.add_argument("topic", nargs="?")
    return p


PARSER = build_parser()
SUBPARSERS: dict[str, MagicArgumentParser] = next(
    a for a in PARSER._actions if isinstance(a, argparse._SubParsersAction)
).choices


_TERMINAL_COMMAND = re.compile(
    r"(?<![%\w./-])odin (?=(?:" + "|".join(sorted(map(re.escape, SUBPARSERS), key=len, reverse=True)) + r")(?![\w-]))")


def in_notebook(text: str) -> str:
    """A message the engine words for the terminal, as the notebook says it: ``odin run`` becomes ``%odin run``
    (only for a command ``%odin`` has: ``odin schedule`` stays a terminal command)."""
    return _TERMINAL_COMMAND.sub("%odin ", text)


def full_help() -> str:
    """``%odin help``: the commands, the cell magics, and every command's usage line."""
    parts = [PARSER.format_help(), CELL_HELP]
    for name, sp in SUBPARSERS.items():
        parts.append(sp.format_usage().replace("usage: ", "  "))
    return "\n".join(parts)


def split(line: str) -> list[str]:
    """A magic's line split like a shell splits it."""
    try:
        return shlex.split(line)
    except ValueError as exc:  # e.g. an unclosed quote
        raise UsageError(f"cannot split the arguments: {exc}") from None


def parse_line(line: str) -> argparse.Namespace:
    """``%odin LINE`` parsed; nothing, ``-h`` or ``COMMAND --help`` is the help command."""
    argv = split(line)
    if not argv:
        argv = ["help"]
    if argv[0] in ("-h", "--help"):
        argv = ["help"]
    if len(argv) > 1 and argv[0] in SUBPARSERS and any(a in ("-h", "--help") for a in argv[1:]):
        argv = ["help", argv[0]]
    if argv[0] not in SUBPARSERS:  # as the terminal's odin says it
        raise UsageError(unknown_command(argv[0], SUBPARSERS, "`%odin help`"))
    return PARSER.parse_args(argv)
