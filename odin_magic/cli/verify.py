"""``odin validate-manifest`` and ``odin schedule``: verification and unattended runs."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from odin_magic.cli.common import add_command, add_project, project_dir, refuse_unless_schedulable
from odin_magic.commands import runs as run_args
from odin_magic.core.errors import UsageError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "validate-manifest",
        help="check a run's acceptance.yaml and point at each problem",
        description="Check an acceptance manifest (acceptance.yaml): a file, or the one in a run's directory "
        "(--run RUN, default: the latest run). Exit 0: valid; 1: invalid; 2: missing or unreadable.",
    )
    p.add_argument("path", nargs="?", metavar="FILE", help="the manifest file (default: the run's acceptance.yaml)")
    p.add_argument("--run", metavar="RUN", help="a run id (default: the active or latest run)")
    p.add_argument("--json", action="store_true", help="print a JSON report")
    add_project(p)
    p.set_defaults(handler=cmd_validate_manifest)

    p = subparsers.add_parser(
        "report",
        help="print a run's report (written when the run ends), or with --open its paths",
        description="Print report.md of a run (default: the active or latest run); --open prints the paths of "
        "report.md and report.ipynb instead, to open them in an editor or JupyterLab.",
    )
    add_command(p, run_args.REPORT, handler=cmd_report)

    p = subparsers.add_parser(
        "schedule",
        help="print the crontab line and systemd timer (or a CI workflow) that would run a loop unattended",
        description="Print (never install) a crontab line and a systemd service + timer that run "
        "`odin run LOOP --task TASK --unattended` in the project every PERIOD; or, with --github-actions / "
        "--gitlab-ci, a CI workflow file that runs it on the CI's runners and delivers a pull (merge) request.",
    )
    p.add_argument("loop", metavar="LOOP", help="a loop that `odin validate --schedulable` accepts")
    p.add_argument("--task", required=True, metavar="TEXT", help="what each run is for")
    p.add_argument("--every", default="1d", metavar="PERIOD",
                   help="how often: 15m, 1h, 6h, 1d, 7d (minutes, hours or days; default 1d)")
    ci = p.add_mutually_exclusive_group()
    ci.add_argument("--github-actions", dest="ci", action="store_const", const="github",
                    help="print a GitHub Actions workflow instead (.github/workflows/odin-LOOP.yml)")
    ci.add_argument("--gitlab-ci", dest="ci", action="store_const", const="gitlab",
                    help="print a GitLab CI job instead (.gitlab-ci.yml, for a pipeline schedule)")
    add_project(p)
    p.set_defaults(handler=cmd_schedule)


def cmd_validate_manifest(args: argparse.Namespace) -> int:
    from odin_magic.engine.orchestrator import Engine
    from odin_magic.interview.ledger import interview_criteria_ids
    from odin_magic.loop.manifest import MANIFEST_NAME, validate_manifest_file

    project = project_dir(args)
    interview_ids: list[str] = []
    if args.path:
        path = Path(args.path)
        interview_ids = interview_criteria_ids(path.parent)  # a run dir's manifest answers to its interview
    else:
        engine = Engine(project)
        state = engine.status(args.run)
        run_dir = engine.run_dir(state.run_id)
        path = run_dir / MANIFEST_NAME
        interview_ids = interview_criteria_ids(run_dir)
    if not path.is_file():
        raise UsageError(f"{path}: no such file",
                         hint="the deep interview writes acceptance.yaml in the run dir; or give a FILE")
    report = validate_manifest_file(path, interview_ids)
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.format())
    return 0 if report.ok else 1


def cmd_report(args: argparse.Namespace) -> int:
    from odin_magic.engine.orchestrator import Engine
    from odin_magic.render.run_report import REPORT_MD, REPORT_NB

    engine = Engine(project_dir(args))
    state = engine.status(args.run)
    md = engine.run_dir(state.run_id) / REPORT_MD
    if not md.is_file():
        raise UsageError(f"run {state.run_id} is {state.status}: it has no report yet",
                         hint="a run's report is written when it ends (done, failed, abandoned or blocked)")
    if args.open:
        print(md)
        print(md.with_name(REPORT_NB))
    else:
        sys.stdout.write(md.read_text(encoding="utf-8"))
    return 0


_UNITS = {"m": ("minute", 60), "h": ("hour", 3600), "d": ("day", 86400)}
ENV_FILE = "$HOME/.config/odin-magic/env"  # where the API key lives for scheduled runs (never in the unit)


def parse_period(text: str) -> tuple[int, str]:
    """``"6h"`` -> (6, "h"); a usage error names what is accepted."""
    text = (text or "").strip().lower()
    number, unit = text[:-1], text[-1:]
    if unit not in _UNITS or not number.isdigit() or int(number) < 1:
        raise UsageError(f"--every {text!r} is not a period", hint="write a number and m, h or d: 15m, 6h, 1d, 7d")
    n = int(number)
    if (unit == "m" and (n > 59 or 60 % n)) or (unit == "h" and (n > 23 or 24 % n)) or (unit == "d" and n not in (1, 7)):
        raise UsageError(f"--every {text}: a schedule repeats minutes that divide 60, hours that divide 24, "
                         "or every day (1d) or week (7d)", hint="use e.g. 15m, 30m, 1h, 6h, 12h, 1d or 7d")
    return n, unit


def cron_schedule(n: int, unit: str) -> str:
    if unit == "m":
        return f"*/{n} * * * *"
    if unit == "h":
        return f"0 */{n} * * *"
    return "0 3 * * *" if n == 1 else "0 3 * * 0"  # daily at 03:00, or Sundays at 03:00


def on_calendar(n: int, unit: str) -> str:
    """The systemd calendar event for the same period."""
    if unit == "m":
        return f"*:0/{n}"
    if unit == "h":
        return f"*-*-* 00/{n}:00:00"
    return "*-*-* 03:00:00" if n == 1 else "Sun *-*-* 03:00:00"


def _cron_text(text: str) -> str:
    return text.replace("%", "\\%")  # cron turns an unescaped % into a newline


def _systemd_text(text: str) -> str:
    return text.replace("%", "%%").replace("$", "$$")  # systemd expands both in ExecStart


def schedule_text(project: Path, loop: str, task: str, every: str, odin: str) -> str:
    n, unit = parse_period(every)
    run = f"{shlex.quote(odin)} run {shlex.quote(loop)} --task {shlex.quote(task)} --unattended"
    log = shlex.quote(str(project / ".odin-loop" / "schedule.log"))
    name = f"odin-{loop}"
    every_text = f"every {n} {_UNITS[unit][0]}(s)" if unit != "d" else ("every day" if n == 1 else "every week")
    return "\n".join([
        f"# crontab line (add it with `crontab -e`): {every_text}; the API key is read from {ENV_FILE}",
        _cron_text(f"{cron_schedule(n, unit)} set -a; [ ! -r \"{ENV_FILE}\" ] || . \"{ENV_FILE}\"; set +a; cd {shlex.quote(str(project))} "
                   f"&& {run} >> {log} 2>&1"),
        "",
        f"# systemd: ~/.config/systemd/user/{name}.service",
        "[Unit]",
        f"Description=odin-magic: run loop {loop} unattended",
        "",
        "[Service]",
        "Type=oneshot",
        f"WorkingDirectory={project}",
        "# the API key comes from this file (ANTHROPIC_API_KEY=...), never from the unit",
        "EnvironmentFile=-%h/.config/odin-magic/env",
        f"ExecStart={_systemd_text(run)}",
        "",
        f"# systemd: ~/.config/systemd/user/{name}.timer  (then: systemctl --user enable --now {name}.timer)",
        "[Unit]",
        f"Description=Run odin loop {loop} {every_text}",
        "",
        "[Timer]",
        f"OnCalendar={on_calendar(n, unit)}",
        "Persistent=true",
        "",
        "[Install]",
        "WantedBy=timers.target",
        "",
        "# exit codes: 0 done; 3 blocked, waiting for a person, or the last run still active (report written);",
        "# 1 failed; 2 usage error",
    ]) + "\n"


def ci_text(ci: str, loop: str, task: str, every: str) -> str:
    """The workflow file of ``--github-actions`` / ``--gitlab-ci`` (render/ci_workflow.py)."""
    from odin_magic.render import ci_workflow

    n, unit = parse_period(every)
    every_text = f"every {n} {_UNITS[unit][0]}(s)" if unit != "d" else ("every day" if n == 1 else "every week")
    render = ci_workflow.github_actions if ci == "github" else ci_workflow.gitlab_ci
    return render(loop, task, cron_schedule(n, unit), every_text)


def cmd_schedule(args: argparse.Namespace) -> int:
    from odin_magic.loop.catalog import LoopCatalog

    project = project_dir(args).resolve()
    task = (args.task or "").strip()
    if not task:
        raise UsageError("a scheduled run needs a task", hint='--task "what each run is for"')
    for what, value in (("--task", task), ("LOOP", args.loop)):
        if any(ord(c) < 32 or ord(c) == 127 for c in value):  # a newline would be a second crontab line
            raise UsageError(f"{what} holds a control character (a line break, a tab, ...): a schedule is one line",
                             hint="write the task on one line, without control characters")
    refuse_unless_schedulable(LoopCatalog(project), args.loop, UsageError)
    if args.ci:
        sys.stdout.write(ci_text(args.ci, args.loop, task, args.every))
        return 0
    odin = Path(sys.argv[0]).resolve() if Path(sys.argv[0]).name == "odin" else Path(sys.executable).parent / "odin"
    sys.stdout.write(schedule_text(project, args.loop, task, args.every, str(odin)))
    return 0
