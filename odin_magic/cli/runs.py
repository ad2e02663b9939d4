"""``odin run | approve | revise | step | status | runs | abandon | simulate``.

The engine and what it needs are imported inside the handlers that use them: building the
parser (``odin --help``) stays cheap.
"""

from __future__ import annotations

import argparse
import json
import sys

from typing import TYPE_CHECKING

from odin_magic.cli.common import add_command, project_dir, refuse_unless_schedulable
from odin_magic.commands import loops as loop_args, runs as run_args
from odin_magic.loop.defaults import DEFAULT_LOOP
from odin_magic.core.errors import NoActiveRun, RunRefused, UsageError

if TYPE_CHECKING:
    from odin_magic.engine.orchestrator import Engine
    from odin_magic.runs.events import EngineEvent
    from odin_magic.runs.state import RunState
    from odin_magic.runs.store import RunCorrupt



def print_event(event: EngineEvent) -> None:
    """The CLI's live view: one line per event worth a line (notices on stderr)."""
    from odin_magic.render.text import format_event

    line = format_event(event)
    if line is not None:
        stream = sys.stderr if event.kind == "notice" else sys.stdout
        print(line, file=stream, flush=True)


def engine_for(args: argparse.Namespace, listener=print_event) -> Engine:
    """The engine for ``--project``."""
    from odin_magic.engine.orchestrator import Engine

    return Engine(project_dir(args), listener=listener)


def exit_code(state: RunState) -> int:
    """A command's exit code after it drove a run: 1 when the run failed, 3 when it is blocked
    (it waits for a human to fix something; unattended callers must not take it for progress)."""
    return {"failed": 1, "blocked": 3}.get(state.status, 0)


def ask_what_to_start(engine: Engine, task: str | None) -> tuple[str, str]:
    """In a terminal with nothing to continue: ask which loop to start (default: seed 000's) and, unless
    given, the task."""
    from odin_magic.loop.catalog import LoopCatalog

    names = [e.name for e in LoopCatalog(engine.project_dir).entries() if e.valid]
    print(f"No active run in {engine.project_dir}. Loops: {', '.join(names)}")
    try:
        loop = input(f"loop to start [{DEFAULT_LOOP}]: ").strip() or DEFAULT_LOOP
        if task is None:
            task = input("task (one line: what you are building): ")
    except EOFError:
        raise UsageError("nothing chosen", hint='odin run LOOP --task "..."') from None
    return loop, task


def _cmd_run(args: argparse.Namespace) -> int:
    from odin_magic.engine.orchestrator import damaged_blocks, one_run_at_a_time

    engine = engine_for(args)
    active = engine.active()
    if (args.loop is None and active is None and not args.unattended and sys.stdin.isatty()
            and engine.blocking_damage() is None):
        args.loop, args.task = ask_what_to_start(engine, args.task)
    if args.loop is None and args.task is not None:  # never continue (and approve) a run the user did not mean
        raise UsageError("--task starts a new run and needs its loop", hint='odin run LOOP --task "..."; '
                         "plain `odin run` continues the active run")
    if args.unattended:
        _refuse_unless_schedulable(engine, args)
        if active is not None:  # the last scheduled run still waits for a person: not a new failure
            print(f"odin: run {active.run_id} ({active.loop}) is still {active.status}; an unattended run starts "
                  "only when no run is active: look at it (`odin status`, `odin report`), then finish or abandon it",
                  file=sys.stderr)
            return 3
        engine.unattended = True
        state = engine.start(args.loop, args.task, dry=_dry_options(args), params=_params(args))
        return 0 if state.status == "done" else exit_code(state) or 3
    dry_flags = args.dry or args.gates or args.approve_all or args.stage_delay or args.run_commands
    continuing = args.loop is None or (active is not None and active.loop == args.loop and args.task is None)
    if continuing:
        if active is None:
            damaged = engine.blocking_damage()
            if damaged is not None:
                raise damaged_blocks(*damaged)
            raise NoActiveRun(f"no active run to continue in {engine.project_dir}",
                              hint="start one with `odin run LOOP --task TEXT`")
        if args.param:
            raise UsageError("--param applies when a run starts", hint=f"run {active.run_id} keeps the values it began with")
        if dry_flags:
            print("note: --dry/--gates/--approve-all/--stage-delay apply when a run starts; "
                  f"run {active.run_id} continues with its own options", file=sys.stderr)
        return exit_code(engine.run())
    if args.task is None:
        if active is not None:
            raise one_run_at_a_time(active)
        raise UsageError(f"starting loop {args.loop!r} needs a task", hint=f'odin run {args.loop} --task "what you are building"')
    return exit_code(engine.start(args.loop, args.task, dry=_dry_options(args), params=_params(args)))


def _params(args: argparse.Namespace) -> dict[str, str]:
    """``--param NAME=VALUE`` as a mapping (the loop checks the names when the run starts)."""
    from odin_magic.loop.params import parse_assignments

    return parse_assignments(args.param)


def _dry_options(args: argparse.Namespace):
    """The dry run's options from --dry/--gates/..., None without --dry; a dry flag without --dry is refused."""
    from odin_magic.runs.state import DryOptions
    from odin_magic.workers.dry import parse_gate_script

    if (args.gates or args.approve_all or args.stage_delay or args.run_commands) and not args.dry:
        raise UsageError("--gates, --approve-all, --stage-delay and --run-commands apply to dry runs", hint="add --dry")
    if not args.dry:
        return None
    if args.stage_delay is not None and args.stage_delay < 0:
        raise UsageError("--stage-delay must be 0 or more seconds")
    return DryOptions(gates=parse_gate_script(args.gates), approve_all=args.approve_all,
                      stage_delay=args.stage_delay or 0.0, run_commands=args.run_commands)


def _refuse_unless_schedulable(engine, args: argparse.Namespace) -> None:
    """An unattended run starts a loop that never waits for a person (``odin validate --schedulable``)."""
    if args.loop is None or args.task is None:
        raise UsageError("--unattended starts a new run: give its LOOP and --task",
                         hint='odin run LOOP --task "..." --unattended')
    refuse_unless_schedulable(engine.catalog, args.loop, RunRefused)


def _cmd_approve(args):
    return exit_code(engine_for(args).approve())


def _cmd_revise(args):
    return exit_code(engine_for(args).revise(" ".join(args.feedback)))


def _cmd_step(args):
    return exit_code(engine_for(args).step(args.stage))


def _cmd_abandon(args):
    engine_for(args).abandon()
    return 0


def _cmd_status(args):
    from odin_magic.interview.runner import waiting_question
    from odin_magic.render.metric_text import metric_block, metric_status_lines
    from odin_magic.render.roadmap_view import phase_blocked_hint
    from odin_magic.render.text import next_hint, render_status

    from odin_magic.runs.store import RunCorrupt  # caught below: the class itself

    engine = engine_for(args)
    state = engine.status(args.run)
    if args.json:
        print(json.dumps(state.to_json(), indent=2, ensure_ascii=False))
    else:
        try:
            loop = engine.loop_for(state.run_id)
        except RunCorrupt as exc:  # the run's copy of its loop is unreadable: show the history order
            print(f"note: {exc.message}", file=sys.stderr)
            loop = None
        from odin_magic.engine.completion import latest
        from odin_magic.runs.store import being_driven

        run_dir = engine.run_dir(state.run_id)
        question = None
        if state.status == "awaiting_answer":  # the interview package loads only for its question
            question = waiting_question(run_dir, state)
        checked = latest(run_dir, state.history)
        print(render_status(state, loop, history_tail=0 if args.history else 10, question=question,
                            criteria=checked.lines() if checked is not None else None,
                            driven=state.status != "running" or being_driven(run_dir)))
        if block := metric_block(metric_status_lines(run_dir, state, loop)):
            print(f"\n{block}")
        # a roadmap phase's run whose phase is blocked (its contract changed): the phase's word, not the run's
        if hint := phase_blocked_hint(engine.project_dir, state) or next_hint(state):
            print(f"\n{hint}")
    return 0


def _cmd_runs(args):
    from odin_magic.render.text import render_runs

    damaged: list[tuple[str, RunCorrupt]] = []
    states = engine_for(args).runs(damaged)
    if args.json:
        rows = [s.to_json() for s in states] + [
            {"run_id": run_id, "status": "damaged", "abandoned": exc.abandoned, "error": exc.message}
            for run_id, exc in reversed(damaged)]
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        print(render_runs(states, damaged, idle=idle_runs(engine_for(args), states)))
    return 0


def idle_runs(engine: Engine, states: list[RunState]) -> frozenset[str]:
    """The running runs that no process drives now (`odin runs` shows them as ready, as `odin status` does)."""
    from odin_magic.runs.store import being_driven

    return frozenset(s.run_id for s in states if s.status == "running" and not being_driven(engine.run_dir(s.run_id)))


def _cmd_simulate(args):
    from odin_magic.engine.orchestrator import simulate
    from odin_magic.render.text import render_simulation

    result = simulate(project_dir(args), args.loop, args.gates, listener=None if args.json else print_event)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        print()
        print(render_simulation(result))
    return 0 if result["status"] == "done" else 1


def register(sub) -> None:
    p = sub.add_parser(
        "run", help="start a run of LOOP, or continue the active run (approving a pause)",
        description='Start a run: odin run LOOP --task "...". Continue the active run: odin run (at a pause this '
        "approves it, like odin approve). A run drives until a gate asks for you, it ends, or it fails.",
    )
    add_command(p, run_args.RUN, handler=_cmd_run, drives_a_run=True)
    p = sub.add_parser("approve", help="approve the paused stage and continue")
    add_command(p, run_args.APPROVE, handler=_cmd_approve, drives_a_run=True)
    p = sub.add_parser("revise", help="re-run the paused stage with FEEDBACK, then gate it again")
    add_command(p, run_args.REVISE, handler=_cmd_revise, drives_a_run=True)
    p = sub.add_parser("step", help="run one stage and its gate without advancing (refused at a pause; "
                       "on a failed latest run it reopens the run)")
    add_command(p, run_args.STEP, handler=_cmd_step, drives_a_run=True)
    p = sub.add_parser("status", help="show a run (default: the active or latest run)")
    add_command(p, run_args.STATUS, handler=_cmd_status)
    p = sub.add_parser("runs", help="list the project's runs, newest first")
    add_command(p, run_args.RUNS, handler=_cmd_runs)
    p = sub.add_parser("abandon", help="give up the active run")
    add_command(p, run_args.ABANDON, handler=_cmd_abandon)
    p = sub.add_parser("simulate", help="dry-run LOOP in a throwaway directory, approving every human gate")
    add_command(p, loop_args.SIMULATE, handler=_cmd_simulate)
