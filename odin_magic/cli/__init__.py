"""The ``odin`` command line.

Each sub-module adds its subcommands with ``register(subparsers)``; a handler
takes the parsed arguments and returns the process exit code. Exit codes:
0 success, 1 a blocking problem (invalid loop, failed run, refused action),
2 a usage error (bad arguments, unreadable file).

May import: every layer but ``notebook``; a handler imports what it uses inside itself, so that
building the parser (``odin --help``) stays cheap.
"""

from __future__ import annotations

import argparse
import os
import sys

from odin_magic import __version__
from odin_magic.core.encoding import fit_streams
from odin_magic.cli.common import (  # noqa: F401 - handed on: the helpers' old place
    OdinParser, RedactedStream, add_command, add_project, project_dir, refuse_unless_schedulable
)
from odin_magic.commands.spec import did_you_mean_text
from odin_magic.core.errors import OdinError



_EPILOG = """\
a session:
  odin list                                  the loops you can run
  odin show spec-harness-tdd                 its stages, gates and loopbacks
  odin run spec-harness-tdd --task "..."     drives until a gate asks for you
  odin status                                where the run is
  odin answer TEXT | odin approve | odin revise TEXT
  odin new NAME                              author a loop by seven questions
  odin refine [LOOP]                         learn from past runs: proposed loop edits
  odin doctor                                which test command the regression gate runs, and why

'odin COMMAND --help' shows a command's options; --project DIR (default: the
current directory) picks the project.
A real run needs ANTHROPIC_API_KEY; ODIN_SCRIPT=FILE.yaml runs offline (scripted
model), and 'odin run LOOP --task ... --dry' runs with placeholder artifacts.
Exit codes: 0 ok, 1 refused / failed / invalid loop, 2 usage error.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = OdinParser(
        prog="odin",
        description="Run AI development-workflow loops defined as YAML data.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"odin-magic {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    from odin_magic.cli import (  # they import this package
        authoring, delivery, doctor, history, interview, loops, roadmap, runs, verify
    )

    for module in (loops, runs, history, delivery, roadmap, interview, authoring, verify, doctor):  # in help order
        module.register(sub)
    return parser


def _reject_leading_option(parser: OdinParser, argv: list[str]) -> None:
    """``odin --project . list``: a subcommand's option written before the command."""
    if not argv or not argv[0].startswith("-") or argv[0] in ("-h", "--help", "--version"):
        return
    option = argv[0].split("=", 1)[0]
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    takes = [name for name, p in sub.choices.items() if option in {s for a in p._actions for s in a.option_strings}]
    if takes:
        command = next((word for word in argv if word in takes), takes[0])  # the command the user wrote, if any
        parser.error(f"{option} goes after the command, e.g. `odin {command} {option} ...`")
    parser.error(f"unknown option {option}{did_you_mean_text(option, ['--help', '--version'])}; "
                 "`odin --help` lists the commands")


def main(argv: list[str] | None = None) -> int:
    """Run one ``odin`` command; everything it prints (usage errors included) has every secret redacted."""
    fit_streams(sys.stdout, sys.stderr)  # a cp1252 redirect gets [ok] for ✅, not a UnicodeEncodeError
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactedStream(out), RedactedStream(err)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = out, err


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    _reject_leading_option(parser, argv)
    args, extras = parser.parse_known_args(argv)
    if extras:  # reported by the subcommand's own parser: its usage line, its options
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        sub.choices[args.command].reject_extras(extras)
    try:
        return int(args.handler(args) or 0)
    except OdinError as exc:
        print(f"odin: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # e.g. `odin show x | head`: the reader has gone, say nothing
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush cannot fail
        return 0
    except KeyboardInterrupt:
        print(_interrupted(args), file=sys.stderr)
        _quiet_end()
        return 130


def _quiet_end() -> None:
    """What Ctrl-C cut short (an event loop half made, a coroutine never awaited) is collected as the process
    ends: the one line above is all the user sees, never an 'Exception ignored' traceback or a RuntimeWarning."""
    import warnings

    sys.unraisablehook = lambda unraisable: None
    warnings.filterwarnings("ignore", category=RuntimeWarning, message="coroutine .* was never awaited")


def _interrupted(args: argparse.Namespace) -> str:
    """What Ctrl-C left: a run that drives is saved at its last step (say how to go on), unless it had not begun."""
    if not getattr(args, "drives_a_run", False):
        return "odin: interrupted"
    from odin_magic.engine.orchestrator import Engine

    from odin_magic.engine.requirements import interrupted

    try:
        engine = Engine(project_dir(args))
    except (OdinError, OSError):
        engine = None
    return "odin: " + interrupted(engine, getattr(args, "resumed_by", "odin run"))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
