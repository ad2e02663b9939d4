"""The ``odin`` command line.

Each sub-module adds its subcommands with ``register(subparsers)``; a handler
takes the parsed arguments and returns the process exit code. Exit codes:
0 success, 1 a blocking problem (invalid loop, failed run, refused action),
2 a usage error (bad arguments, unreadable file).
"""

from __future__ import annotations

import argparse
import os
import sys

from .. import __version__
from ..errors import OdinError

#: Sub-modules that register subcommands, in help order.
_COMMAND_MODULES = ("loops", "runs", "interview")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="odin",
        description="Run AI development-workflow loops defined as YAML data.",
    )
    parser.add_argument("--version", action="version", version=f"odin-magic {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    import importlib

    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:  # a sub-module not written yet
            if exc.name != f"{__name__}.{name}":
                raise
            continue
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except OdinError as exc:
        print(f"odin: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # e.g. `odin show x | head`: the reader has gone, say nothing
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush cannot fail
        return 0
    except KeyboardInterrupt:
        print("odin: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
