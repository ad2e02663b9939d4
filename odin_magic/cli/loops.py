"""``odin validate``, ``odin schema``, ``odin list`` and ``odin show``: the commands that read loop definitions."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from typing import TYPE_CHECKING

from odin_magic.cli.common import add_command, project_dir
from odin_magic.commands import loops as loop_args
from odin_magic.core.errors import OdinError, UsageError
from odin_magic.render.loop_text import checked_line, loop_list_text, loop_rows, render_loop

if TYPE_CHECKING:  # annotations only; the rest loads on first call: building the parser (``odin --help``) stays cheap
    from odin_magic.loop.validation import ValidationReport



def register(subparsers) -> None:
    p = subparsers.add_parser(
        "validate",
        help="check loop files (or loops by name) and point at each problem",
        description="Check loop YAML files, or loops by name as `odin list` shows them. Exit 0: all valid (warnings allowed); 1: a blocking error; "
        "2: a file is missing or unreadable.",
    )
    add_command(p, loop_args.VALIDATE, handler=cmd_validate,
                project_help="project directory, to find loops by name (default: the current directory)")

    p = subparsers.add_parser(
        "schema",
        help="print the JSON Schema of the loop format",
        description="Print the JSON Schema of the loop format, generated from the pydantic model.",
    )
    p.set_defaults(handler=cmd_schema)

    p = subparsers.add_parser(
        "list",
        help="list the loops you can run: the project's and the built-in ones",
        description="List the project's loops (.odin-loop/loops/) and the built-in loops.",
    )
    add_command(p, loop_args.LIST, handler=cmd_list)

    p = subparsers.add_parser(
        "show",
        help="show a loop's stages, gates, roles and loopbacks",
        description="Show a loop's stages in order with their gate modes, roles and on_fail loopbacks.",
    )
    add_command(p, loop_args.SHOW, handler=cmd_show)


def schema_text() -> str:
    """The text of ``loops/loop.schema.json``: the generated schema, pretty-printed."""
    from odin_magic.loop.schema import loop_json_schema

    return json.dumps(loop_json_schema(), indent=2) + "\n"


def cmd_schema(args: argparse.Namespace) -> int:
    sys.stdout.write(schema_text())
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from odin_magic.loop.validation import reports_to_json

    if args.paths:
        reports = [report for arg in args.paths for report in _validate_arg(arg, args)]
    else:  # the project's loops, as `%odin validate` checks them
        from odin_magic.loop.catalog import LoopCatalog

        project = project_dir(args)
        reports = LoopCatalog(project).validate_project_loops(schedulable=args.schedulable)
        if not reports:
            raise UsageError(f"no project loops to validate ({project / '.odin-loop' / 'loops'} is empty)",
                             hint="give loop files or names: odin validate LOOP...")
    unreadable = [r for r in reports if r.unreadable is not None]
    if args.json:
        print(reports_to_json(reports))
    else:
        for report in reports:  # a file that could not be read is told on stderr, as other usage errors are
            print(report.format(), file=sys.stderr if report.unreadable else sys.stdout)
        if len(reports) > 1:
            print(checked_line(reports))
    if unreadable:
        return 2
    return 0 if all(r.ok for r in reports) else 1


def _validate_arg(arg: str, args: argparse.Namespace) -> list[ValidationReport]:
    """The reports for one argument: a file, a loop name, or a directory (the loop files in it).

    A file that cannot be read is a report too (``unreadable``), so the others are still checked.
    """
    from odin_magic.loop.validation import unreadable_report

    try:
        path = _loop_path(arg, args)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
            if not files:
                raise UsageError(f"{path}: no loop files (*.yaml) in this directory",
                                 hint="give a directory of loop files, e.g. .odin-loop/loops")
            return [_validate_one(f, args) for f in files]
        return [_validate_one(path, args)]
    except UsageError as exc:
        return [unreadable_report(arg, exc)]


def _validate_one(path: Path, args: argparse.Namespace) -> ValidationReport:
    from odin_magic.loop.validation import unreadable_report, validate_file

    try:
        return validate_file(path, schedulable=args.schedulable)
    except UsageError as exc:
        return unreadable_report(str(path), exc)


def _active_loop(project: Path) -> str | None:
    """The loop of the project's active run, if one is running or paused."""
    if not (project / ".odin-loop" / "runs").is_dir():
        return None
    from odin_magic.engine.orchestrator import Engine  # the engine sits above the catalog; only `list` needs it

    try:
        active = Engine(project).active()
    except OdinError:
        return None
    return active.loop if active is not None else None


def cmd_list(args: argparse.Namespace) -> int:
    from odin_magic.loop.catalog import LoopCatalog

    project = project_dir(args)
    catalog = LoopCatalog(project)
    entries = catalog.entries()
    active = _active_loop(project)
    if args.json:
        print(
            json.dumps(
                {
                    "project": str(project.resolve()),
                    "active_loop": active,
                    "loops": [dict(e.to_dict(), active=e.name == active) for e in entries],
                },
                indent=2,
            )
        )
        return 0
    print(loop_list_text(loop_rows(entries, active)))
    return 0
    width = max(len(e.name) for e in entries)
    for e in entries:
        source = "project (overrides built-in)" if e.overrides_builtin else e.source
        status = "valid" if e.valid else f"INVALID ({e.error_count} error(s))"
        stages = "? stages" if e.stage_count is None else f"{e.stage_count} stage" + ("" if e.stage_count == 1 else "s")
        mark = "  <- active run" if e.name == active else ""
        print(f"{e.name:<{width}}  {stages:<9}  {source}  {status}{mark}")
        if e.description:
            print(f"{'':<{width}}  {e.description}")
        if not e.valid:
            print(f"{'':<{width}}  `odin validate {e.name}` shows what to fix")
    return 0


def _loop_path(arg: str, args: argparse.Namespace) -> Path:
    """A loop argument: a file path (anything with a ``/`` or a YAML suffix), else a loop name,
    else an existing directory (``.``)."""
    from odin_magic.loop.catalog import LoopCatalog

    if arg.endswith((".yaml", ".yml")) or "/" in arg or "\\" in arg:
        return Path(arg)  # validate_file says when it is missing or not a file
    try:
        return LoopCatalog(project_dir(args)).resolve(arg)
    except UsageError:
        if Path(arg).is_dir():
            return Path(arg)
        raise


def cmd_show(args: argparse.Namespace) -> int:
    from odin_magic.loop.validation import validate_file

    path = _loop_path(args.loop, args)
    report: ValidationReport = validate_file(path)
    if not report.ok or report.loop is None:
        print(report.format())
        return 1
    print(render_loop(report.loop, str(path)))
    return 0
