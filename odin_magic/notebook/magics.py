"""``%odin`` and ``%%odin``: the notebook's commands, mirroring the ``odin`` CLI.

``%load_ext odin_magic`` registers :class:`OdinMagics`. Arguments are split
like a shell splits them and parsed with IPython's ``MagicArgumentParser``, so
a bad argument is one ``UsageError`` line, never a traceback; user mistakes
(:class:`~odin_magic.core.errors.OdinError`) are shown the same way. Run commands
(run, approve, revise, step, answer) drive in a background thread and return at
once; ``--wait`` (or ``%odin wait``) blocks until the drive pauses or ends.

Settings are traitlets: ``%config OdinMagics.model = "..."``.
"""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path
from typing import Any, Callable

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import MagicArgumentParser
from IPython.display import display
from traitlets import Bool, Float, Int, Unicode

from odin_magic.render.displays import (
    LoopListDisplay, MessageDisplay, NoRunDisplay, RunsDisplay, SimulationDisplay, StatusDisplay,
    TextBlockDisplay, ValidationDisplay, loop_rows
)
from odin_magic.notebook import authoring_magics, history_magics
from odin_magic.core.errors import OdinError
from odin_magic.loop.defaults import DEFAULT_LOOP  # the notebook's default loop (seed 000)
from odin_magic.notebook.actions import NotebookRunner


#: Called as ``setup(engine, magics)`` for each Engine the notebook builds, before it drives:
#: the seam where, e.g., the deep interview installs ``engine.interview_runner`` with the
#: notebook's settings (``magics.settings()``).
ENGINE_SETUP: list[Callable[[Any, "OdinMagics"], None]] = []


def usage_error(exc: OdinError) -> UsageError:
    """An OdinError shown the IPython way: one line, no traceback.

    A plain UsageError, never a subclass: IPython prints the one line only when
    ``type(error) is UsageError`` and shows a full traceback for anything else.
    """
    text = exc.message + (f" (hint: {exc.hint})" if exc.hint else "")
    return UsageError(" ".join(text.split("\n")))


# -- the argument parser -----------------------------------------------------------------


def _parser() -> MagicArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    p = MagicArgumentParser(prog="%odin", description="Run AI development-workflow loops from a notebook.",
                            formatter_class=fmt)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=MagicArgumentParser)

    def add(name: str, help_: str) -> MagicArgumentParser:
        return sub.add_parser(name, help=help_.replace("%", "%%"), description=help_, prog=f"%odin {name}",
                              formatter_class=fmt)

    def waiting(sp: MagicArgumentParser) -> None:
        sp.add_argument("--wait", action="store_true", help="block until the run pauses, ends or stops")
        sp.add_argument("--timeout", type=float, default=None, metavar="S", help="with --wait: give up after S seconds")

    r = add("run", "Start a run (LOOP and --task), or continue the active run; on a paused run, approve it.")
    r.add_argument("loop", nargs="?", help=f"loop name (default for a new run: {DEFAULT_LOOP})")
    r.add_argument("--task", help="what you are building (one line)")
    r.add_argument("--dry", action="store_true", help="use the dry worker: placeholder artifacts, scripted gates")
    r.add_argument("--gates", metavar="SPEC", help="dry run gate script, e.g. test:fail,review:fail")
    r.add_argument("--approve-all", action="store_true", help="dry run: approve every human gate as it comes")
    r.add_argument("--stage-delay", type=float, default=0.0, metavar="S", help="dry run: seconds each stage takes")
    waiting(r)
    s = add("step", "Run one stage and its gate, without advancing (refused at a pause; on a failed latest run "
                    "it reopens the run).")
    s.add_argument("stage")
    waiting(s)
    st = add("status", "Show the active (or a given) run: checklist, iterations, usage.")
    st.add_argument("--run", metavar="ID", help="a run id (default: the active or latest run)")
    rp = add("report", "Show a run's report (written when it ends): path, criteria, kill ratios, cost, charts.")
    rp.add_argument("--run", metavar="ID", help="a run id (default: the active or latest run)")
    add("list", "List the loops you can run (project loops first, then built-ins).")
    add("runs", "List every run in the project.")
    a = add("approve", "Approve the paused stage; the run continues in the background.")
    waiting(a)
    rv = add("revise", "Re-run the paused stage with your feedback, then gate it again.")
    rv.add_argument("feedback", nargs="+", help="what should change")
    waiting(rv)
    an = add("answer", "Answer the interview's waiting question.")
    an.add_argument("text", nargs="+")
    waiting(an)
    add("abandon", "Abandon the active run (it stays on disk).")
    add("stop", "End the driving run after its current step; it stays resumable (%odin run).")
    w = add("wait", "Block until the background drive pauses, ends or stops.")
    w.add_argument("--timeout", type=float, default=None, metavar="S")
    v = add("validate", "Validate loop files (default: the project's .odin-loop/loops/*.yaml).")
    v.add_argument("paths", nargs="*", help="loop YAML files, relative to the project")
    v.add_argument("--schedulable", action="store_true", help="also require a loop that never pauses for a human")
    sim = add("simulate", "Dry-run a loop in a throwaway directory, every human gate approved.")
    sim.add_argument("loop")
    sim.add_argument("--gates", metavar="SPEC", help="gate script, e.g. test:fail,test:fail")
    sh = add("show", "Draw a loop: stages in order, on_fail back-edges, gate modes and roles.")
    sh.add_argument("loop")
    authoring_magics.add_parsers(add)
    history_magics.add_parsers(add)
    c = add("config", "Show settings, or set them: project=DIR model=NAME max_tokens=N base_url=URL script=PATH.")
    c.add_argument("assignments", nargs="*", metavar="KEY=VALUE")
    h = add("help", "Show this help, or one command's.")
    h.add_argument("topic", nargs="?")
    return p


_PARSER = _parser()
_SUBPARSERS: dict[str, MagicArgumentParser] = next(
    a for a in _PARSER._actions if isinstance(a, argparse._SubParsersAction)
).choices

_CELL_HELP = """\
Cell magics:
  %%odin loop NAME     validate the cell's YAML; save it to .odin-loop/loops/NAME.yaml when valid
  %%odin task [LOOP] [run options]   start a run with the cell's body as the task
  %%odin revise [--wait]   send the cell's body as feedback to the paused stage
"""


def full_help() -> str:
    parts = [_PARSER.format_help(), _CELL_HELP]
    for name, sp in _SUBPARSERS.items():
        parts.append(sp.format_usage().replace("usage: ", "  "))
    return "\n".join(parts)


def _split(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError as exc:  # e.g. an unclosed quote
        raise UsageError(f"cannot split the arguments: {exc}") from None


# -- the magics ----------------------------------------------------------------------------


#: What ``%odin config KEY=`` suggests when the value is missing.
_CONFIG_EXAMPLES = {"project": "..", "model": "claude-sonnet-5-5", "judge_model": "claude-sonnet-5-5",
                    "max_tokens": "8000", "base_url": "http://127.0.0.1:8000", "script": "quickstart.script.yaml",
                    "widgets": "false", "charts": "false"}


@magics_class
class OdinMagics(Magics):
    """``%odin`` / ``%%odin``. Settings: ``%config OdinMagics.<name> = value``."""

    project = Unicode("", help="project directory (default: the notebook's directory)").tag(config=True)
    model = Unicode(None, allow_none=True, help="Claude model (default: ODIN_MODEL or the built-in default)").tag(config=True)
    judge_model = Unicode(None, allow_none=True, help="model for gate judgments (default: model)").tag(config=True)
    max_tokens = Int(None, allow_none=True, help="max output tokens per model call").tag(config=True)
    base_url = Unicode(None, allow_none=True, help="API base URL").tag(config=True)
    script = Unicode(None, allow_none=True, help="scripted-model YAML: run offline, no API key").tag(config=True)
    widgets = Bool(None, allow_none=True, help="live widgets (default: on in a Jupyter kernel, text elsewhere)").tag(config=True)
    charts = Bool(True, help="draw run charts under the live view").tag(config=True)
    wait_timeout = Float(None, allow_none=True, help="default --timeout for --wait, seconds").tag(config=True)

    _CONFIG_KEYS = ("project", "model", "judge_model", "max_tokens", "base_url", "script", "widgets", "charts")

    def __init__(self, shell=None, **kwargs):
        super().__init__(shell=shell, **kwargs)
        self._runners: dict[Path, NotebookRunner] = {}
        self.observe(self._settings_changed, names=["model", "judge_model", "max_tokens", "base_url", "script"])

    # -- where, and with what -------------------------------------------------------------

    @property
    def project_dir(self) -> Path:
        if self.project:
            return Path(self.project).expanduser().resolve()
        return notebook_dir(self.shell)

    def settings(self):
        from odin_magic.workers.config import Settings

        return Settings.from_env(model=self.model, judge_model=self.judge_model, max_tokens=self.max_tokens,
                                 base_url=self.base_url, script=_abs(self.script, self.project_dir))

    def _make_engine(self, project_dir: Path, listener=None):
        from odin_magic.engine.orchestrator import Engine

        engine = Engine(project_dir, listener=listener, command="%odin (notebook)")
        for setup in ENGINE_SETUP:
            setup(engine, self)
        return engine

    def _make_worker(self, project_dir: Path):
        """The worker for real (not dry) runs: Claude, or the scripted model when ``script`` is set."""
        from odin_magic.workers.factory import make_worker

        return make_worker(self.settings(), project_dir)

    def runner(self) -> NotebookRunner:
        where = self.project_dir
        if where not in self._runners:
            from odin_magic.notebook.foreground import kernel_foreground

            self._runners[where] = NotebookRunner(where, self._make_engine, self._make_worker,
                                                  foreground=kernel_foreground(self.shell))
        return self._runners[where]

    def _settings_changed(self, change) -> None:
        for runner in self._runners.values():
            runner.reset_worker()

    def use_widgets(self) -> bool:
        if self.widgets is not None:
            return bool(self.widgets)
        return type(self.shell).__name__ == "ZMQInteractiveShell"

    # -- entry point ---------------------------------------------------------------------

    @no_var_expand  # the text is taken literally: no {expr} or $var expansion (tasks, feedback, answers)
    @line_cell_magic
    def odin(self, line: str, cell: str | None = None):
        try:
            if cell is not None:
                return self._cell(line, cell)
            return self._line(line)
        except OdinError as exc:
            raise usage_error(exc) from None

    def _line(self, line: str):
        argv = _split(line)
        if not argv:
            argv = ["help"]
        if argv[0] in ("-h", "--help"):
            argv = ["help"]
        if len(argv) > 1 and argv[0] in _SUBPARSERS and any(a in ("-h", "--help") for a in argv[1:]):
            argv = ["help", argv[0]]
        args = _PARSER.parse_args(argv)
        return getattr(self, "_cmd_" + args.command)(args)

    def _cell(self, line: str, cell: str):
        argv = _split(line)
        if not argv:
            raise UsageError("%%odin needs a command: loop NAME, task [LOOP], or revise")
        kind, rest = argv[0], argv[1:]
        if kind == "loop":
            if len(rest) != 1:
                raise UsageError("usage: %%odin loop NAME  (the cell holds the loop's YAML)")
            return self._save_loop(rest[0], cell)
        if kind == "task":
            task = cell.strip()
            if not task:
                raise UsageError("%%odin task: the cell is empty; write the task below the magic line")
            args = _SUBPARSERS["run"].parse_args(rest)
            if args.task:
                raise UsageError("%%odin task takes the task from the cell, not --task")
            args.task = task
            return self._cmd_run(args, force_start=True)
        if kind == "revise":
            if any(a not in ("--wait",) for a in rest):
                raise UsageError("usage: %%odin revise [--wait]  (the cell holds the feedback)")
            args = argparse.Namespace(feedback=[cell.strip()], wait="--wait" in rest, timeout=None)
            return self._cmd_revise(args)
        raise UsageError(f"unknown cell command {kind!r}: use loop NAME, task [LOOP] or revise")

    # -- run commands (background) ------------------------------------------------------

    def _cmd_run(self, args, force_start: bool = False):
        runner = self.runner()
        active = runner.active()
        dry_flags = args.dry or args.gates or args.approve_all or args.stage_delay
        if args.task is not None or force_start or active is None:
            if active is not None:
                raise OdinError(
                    f"run {active.run_id} ({active.loop}) is still active ({active.status})",
                    hint="finish it (%odin run / %odin approve), or %odin abandon it first",
                )
            loop = args.loop or DEFAULT_LOOP
            if not (args.task or "").strip():  # refused before any view or panel appears
                raise UsageError(f'a new run needs a task: %odin run {loop} --task "what you are building"')
            loop_def = self._load_loop(loop)
            if not args.loop:  # say which loop a run without one starts
                print(f"odin: no loop given: starting the default loop {DEFAULT_LOOP} "
                      "(%odin list shows the others; %odin run LOOP --task ... picks one)")
            dry = None
            if dry_flags:
                from odin_magic.runs.state import DryOptions
                from odin_magic.workers.dry import parse_gate_script

                dry = DryOptions(gates=parse_gate_script(args.gates, loop_def), approve_all=args.approve_all,
                                 stage_delay=args.stage_delay)
            runner.start(loop, args.task, dry=dry, ready=lambda: self._show_live(runner, loop_def, None))
            message = f"odin: started {loop}" + (" (dry run)" if dry else "") + " in the background"
        else:
            if args.loop and args.loop != active.loop:
                raise OdinError(f"the active run {active.run_id} runs {active.loop}, not {args.loop}",
                                hint="continue it with %odin run, or %odin abandon it to start another")
            if dry_flags:
                raise UsageError("dry-run options apply when a run starts; a dry run continues as it began")
            runner.continue_run(ready=self._live_for(runner, active))
            approving = active.status == "awaiting_approval"
            message = f"odin: {'approved ' + active.current_stage + ', ' if approving else ''}continuing {active.run_id}"
        return self._after_submit(runner, args, message)

    def _cmd_approve(self, args):
        runner = self.runner()
        active = runner.active()
        runner.approve(ready=self._live_for(runner, active))
        return self._after_submit(runner, args, f"odin: approved {active.current_stage if active else ''}")

    def _cmd_revise(self, args):
        runner = self.runner()
        feedback = " ".join(args.feedback).strip()
        runner.revise(feedback, ready=self._live_for(runner, runner.active()))
        return self._after_submit(runner, args, "odin: revising with your feedback")

    def _cmd_step(self, args):
        runner = self.runner()
        runner.step(args.stage, ready=self._live_for(runner, runner.active()))
        return self._after_submit(runner, args, f"odin: stepping {args.stage}")

    def _cmd_answer(self, args):
        runner = self.runner()
        runner.answer(" ".join(args.text), ready=self._live_for(runner, runner.active()))
        return self._after_submit(runner, args, "odin: answer sent")

    def _after_submit(self, runner: NotebookRunner, args, message: str):
        if getattr(args, "wait", False):
            return self._wait(runner, args.timeout)
        if not self.use_widgets():
            print(message)
        return None

    def _cmd_wait(self, args):
        return self._wait(self.runner(), args.timeout)

    def _wait(self, runner: NotebookRunner, timeout: float | None):
        timeout = timeout if timeout is not None else self.wait_timeout
        if not runner.drive.busy and runner.drive.outcome is None:
            return self._cmd_status(argparse.Namespace(run=None))  # nothing was driven here: where the run is
        try:
            outcome = runner.wait(timeout)
        except KeyboardInterrupt:  # the user stopped waiting, not the run
            raise UsageError("stopped waiting (interrupted); the run goes on in the background "
                             "(hint: %odin wait waits again, %odin stop ends it after the current step)") from None
        if outcome is None:
            raise UsageError(f"still driving after {timeout:g} s; %odin wait again, or %odin stop")
        if not outcome.ok:
            if isinstance(outcome.error, OdinError):
                raise usage_error(outcome.error)
            raise outcome.error
        state = outcome.result
        if state is None:
            return None
        state = runner.status(state.run_id)  # as it is now: e.g. abandoned since that drive ended
        loop = self._load_loop(state.loop, quiet=True)
        return StatusDisplay(state, loop, runner.pending_question(state), criteria=self._criteria(runner, state))

    def _cmd_stop(self, args):
        runner = self.runner()
        if runner.stop():
            return MessageDisplay("odin: stop requested; the run ends after the current step and stays resumable "
                                  "(%odin run continues it)")
        return MessageDisplay("odin: nothing is driving; a paused run simply waits (%odin status)")

    def _cmd_abandon(self, args):
        state = self.runner().abandon()
        return MessageDisplay(f"odin: abandoned {state.run_id}")

    # -- live view ------------------------------------------------------------------------

    def _show_live(self, runner: NotebookRunner, loop, state) -> None:
        if self.use_widgets():
            from odin_magic.notebook.widgets import RunView

            view = RunView(loop, runner.project_dir, runner, state, state_source=runner.status,
                           question_source=runner.pending_question, question_panel_source=runner.question_panel,
                           run_dir_for=runner.run_dir, diff_source=runner.stage_diff)
            charts = []
            if self.charts:
                from odin_magic.render.charts import ChartHandle, run_chart

                stage_ids = loop.stage_ids() if loop else None
                charts.append(ChartHandle(lambda st: run_chart(st, stage_ids)))
                interviews = [s.id for s in loop.stages if s.interview is not None] if loop else []
                if interviews:
                    charts.append(ChartHandle(lambda st: runner.interview_chart(st, interviews[0])))
            runner.attach(view, charts)
            from odin_magic.notebook.background import install_stream_router

            install_stream_router(self._stray_output_sink)
            view.display_handle = display(view, display_id=True)  # text/plain: the text status
            for chart in charts:  # drawn now from the run's state, re-drawn in place as it goes
                if state is None:
                    chart.placeholder("charts appear at the run's first gate decision")
                else:
                    chart.show(state)
        else:
            from odin_magic.notebook.widgets import TextRunView

            runner.attach(TextRunView())

    def _stray_output_sink(self):
        """Where background threads' stray writes go: the busy run's Output widget (None: nowhere special)."""
        for runner in self._runners.values():
            view = runner.view
            if runner.drive.busy and view is not None and hasattr(view, "output"):
                return view._append
        return None

    def _live_for(self, runner: NotebookRunner, active):
        """For run/approve/revise/step/answer: show a fresh live view in this cell once the action is
        checked (the previous view retires)."""
        if active is None:
            return None  # the runner raises the clear error
        return lambda: self._show_live(runner, self._load_loop(active.loop, quiet=True), active)

    # -- queries ------------------------------------------------------------------------

    def _cmd_status(self, args):
        runner = self.runner()
        try:
            state = runner.status(args.run)
        except OdinError:
            if args.run:
                raise
            return NoRunDisplay(str(runner.project_dir))
        if state is None:
            return NoRunDisplay(str(runner.project_dir))
        loop = self._load_loop(state.loop, quiet=True)
        waiting = state.status in ("awaiting_approval", "awaiting_answer")
        if waiting and not args.run and not runner.drive.busy and self.use_widgets():
            self._show_live(runner, loop, state)  # the approval (or question) panel, e.g. after a restart
        return StatusDisplay(state, loop, runner.pending_question(state), criteria=self._criteria(runner, state))

    @staticmethod
    def _criteria(runner: NotebookRunner, state) -> list[str]:
        from odin_magic.engine.completion import latest

        checked = latest(runner.run_dir(state.run_id), state.history)
        return checked.lines() if checked is not None else []

    def _cmd_report(self, args):
        from odin_magic.render.displays import ReportDisplay
        from odin_magic.render.run_report import REPORT_MD

        runner = self.runner()
        state = runner.status(args.run)
        path = runner.run_dir(state.run_id) / REPORT_MD
        if not path.is_file():
            return MessageDisplay(f"run {state.run_id} is {state.status}: its report is written when it ends "
                                  "(done, failed, abandoned or blocked)")
        return ReportDisplay(path)

    def _cmd_runs(self, args):
        return RunsDisplay(self.runner().runs())

    def _cmd_list(self, args):
        from odin_magic.loop.catalog import LoopCatalog

        active = self.runner().active()
        return LoopListDisplay(loop_rows(LoopCatalog(self.project_dir).entries(), active.loop if active else None))

    def _cmd_validate(self, args):
        from odin_magic.loop.catalog import LoopCatalog
        from odin_magic.loop.validation import validate_file

        paths = [_abs(p, self.project_dir) for p in args.paths]
        if not paths:
            reports = LoopCatalog(self.project_dir).validate_project_loops(schedulable=args.schedulable)
            if not reports:
                return MessageDisplay("odin: no project loops to validate (.odin-loop/loops/ is empty); "
                                      "give paths: %odin validate PATH...")
            return ValidationDisplay(reports)
        for p in paths:
            if not Path(p).is_file():
                raise UsageError(f"no such file: {p}")
        reports = [validate_file(p, schedulable=args.schedulable) for p in paths]
        return ValidationDisplay(reports)

    def _cmd_simulate(self, args):
        from odin_magic.engine.orchestrator import simulate

        self._load_loop(args.loop)
        return SimulationDisplay(simulate(self.project_dir, args.loop, args.gates))

    def _cmd_new(self, args):
        return authoring_magics.cmd_new(self, args)

    def _cmd_refine(self, args):
        return authoring_magics.cmd_refine(self, args)

    def _cmd_diff(self, args):
        return history_magics.cmd_diff(self, args)

    def _cmd_revert(self, args):
        return history_magics.cmd_revert(self, args)

    def _cmd_fork(self, args):
        return history_magics.cmd_fork(self, args)

    def _cmd_memory(self, args):
        return authoring_magics.cmd_memory(self, args)

    def _cmd_show(self, args):
        from odin_magic.render.charts import loop_diagram, png_bytes
        from IPython.display import Image

        loop = self._load_loop(args.loop)
        display(Image(data=png_bytes(loop_diagram(loop)), format="png"))
        return LoopSummary(loop)

    def _cmd_config(self, args):
        before = {key: getattr(self, key) for key in self._CONFIG_KEYS}
        try:
            for item in args.assignments:
                key, sep, value = item.partition("=")
                key = key.strip()
                if not sep or key not in self._CONFIG_KEYS:
                    raise UsageError(f"config takes KEY=VALUE with KEY one of {', '.join(self._CONFIG_KEYS)}; got {item!r}")
                self._set(key, value.strip())
            if args.assignments:
                self.settings()  # validate now: a bad value is reported here, not at the next run
        except Exception:
            # all or nothing: a refused assignment leaves every previous value in force
            for key, value in before.items():
                if getattr(self, key) != value:
                    setattr(self, key, value)
            raise
        return ConfigDisplay(self._config_items())

    def _set(self, key: str, value: str) -> None:
        if not value:  # `model=` would silently fall back to the default: say so instead
            raise UsageError(f"{key}= needs a value, e.g. {key}={_CONFIG_EXAMPLES[key]}; "
                             f"{key}=default goes back to the default")
        if value == "default":
            setattr(self, key, self.traits()[key].default())
        elif key == "project":
            path = Path(value).expanduser()
            path = path if path.is_absolute() else notebook_dir(self.shell) / path
            if not path.is_dir():
                raise UsageError(f"project directory does not exist: {path}")
            self.project = str(path.resolve())
        elif key == "max_tokens":
            try:
                self.max_tokens = int(value) if value else None
            except ValueError:
                raise UsageError(f"max_tokens must be a whole number, got {value!r}") from None
        elif key in ("widgets", "charts"):
            if value.lower() not in ("true", "false", "1", "0", "on", "off", "yes", "no"):
                raise UsageError(f"{key} must be true or false, got {value!r}")
            setattr(self, key, value.lower() in ("true", "1", "on", "yes"))
        else:
            setattr(self, key, value or None)

    def _config_items(self) -> list[tuple[str, str]]:
        settings = self.settings()
        return [
            ("project", str(self.project_dir) + ("" if self.project else "  (the notebook's directory)")),
            ("model", settings.model),
            ("judge_model", settings.verdict_model),
            ("max_tokens", str(settings.max_tokens)),
            ("base_url", settings.base_url or "(SDK default)"),
            ("script", str(settings.script) if settings.script else "(none: a real model)"),
            ("widgets", str(self.use_widgets())),
            ("charts", str(self.charts)),
            ("api key", "set in the environment" if os.environ.get("ANTHROPIC_API_KEY") else "not set"),
        ]

    def _cmd_help(self, args):
        if args.topic:
            if args.topic not in _SUBPARSERS:
                raise UsageError(f"no command {args.topic!r}; %odin help lists them")
            return TextBlockDisplay(_SUBPARSERS[args.topic].format_help())
        return TextBlockDisplay(full_help())

    # -- loops ----------------------------------------------------------------------------

    def _load_loop(self, name: str, quiet: bool = False):
        from odin_magic.loop.catalog import LoopCatalog

        try:
            return LoopCatalog(self.project_dir).load(name)
        except OdinError:
            if quiet:
                return None
            raise

    def _save_loop(self, name: str, text: str):
        from odin_magic.loop.schema import is_plain_name
        from odin_magic.loop.validation import validate_text

        if not is_plain_name(name):
            raise UsageError(
                f"%%odin loop {name!r}: not a loop name; use letters, digits, '-', '_' and '.' only "
                "(no '/', '\\', '..' or absolute path): the cell is saved as .odin-loop/loops/NAME.yaml"
            )
        report = validate_text(text, f"cell %%odin loop {name}", expected_name=name)
        saved = None
        if not report.errors:
            from odin_magic.core.atomic import write_atomic

            from odin_magic.core.confine import check_confined

            target = self.project_dir / ".odin-loop" / "loops" / f"{name}.yaml"
            check_confined(target, [self.project_dir], f"%%odin loop {name}", base=self.project_dir)
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, text if text.endswith("\n") else text + "\n")
            saved = str(target.relative_to(self.project_dir))
        return ValidationDisplay([report], saved_to=saved, cell=True)


OdinMagics.odin.__doc__ = full_help()


# -- small displays owned by the magics ----------------------------------------------------


class ConfigDisplay(MessageDisplay):
    def __init__(self, items: list[tuple[str, str]]):
        super().__init__("\n".join(f"{k:>12}: {v}" for k, v in items))
        self.items = items

    def html(self) -> str:
        import html

        rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in self.items)
        return f"<table class='odin-t'>{rows}</table>"


class LoopSummary(MessageDisplay):
    def __init__(self, loop):
        lines = [f"{loop.name}: {loop.description or ''}".rstrip(": "),
                 f"max_iterations {loop.max_iterations}"]
        for i, s in enumerate(loop.stages, 1):
            extra = f", on_fail → {s.gate.on_fail}" if s.gate.on_fail else ""
            lines.append(f"  {i}. {s.id}  [{s.resolved_agent.label}{' fresh' if s.resolved_agent.fresh else ''}]"
                         f"  gate {s.gate.mode}{extra}")
        super().__init__("\n".join(lines))

    def html(self) -> str:
        import html

        return "<pre>" + html.escape(self.message) + "</pre>"


# -- helpers --------------------------------------------------------------------------------


def notebook_dir(shell) -> Path:
    """The notebook's own directory where the kernel knows it, else the working directory."""
    ns = getattr(shell, "user_ns", {}) or {}
    for candidate in (ns.get("__vsc_ipynb_file__"), ns.get("__session__"), os.environ.get("JPY_SESSION_NAME")):
        if isinstance(candidate, str) and candidate:
            path = Path(candidate).expanduser()
            if path.is_absolute() and path.parent.is_dir():
                return path.parent.resolve()
    return Path.cwd().resolve()


def _abs(path: str | None, base: Path) -> Path | None:
    if not path:
        return None
    p = Path(path).expanduser()
    return p if p.is_absolute() else (base / p)


def load_ipython_extension(ipython) -> None:
    ipython.register_magics(OdinMagics)


def unload_ipython_extension(ipython) -> None:
    manager = ipython.magics_manager
    instance = manager.registry.pop("OdinMagics", None)
    for kind in ("line", "cell"):
        table = manager.magics[kind]
        if table.get("odin") is not None and (instance is None or getattr(table["odin"], "__self__", None) is instance):
            del table["odin"]
    from odin_magic.notebook.background import uninstall_stream_router

    uninstall_stream_router()
    if instance is not None:
        for runner in instance._runners.values():
            runner.stop()  # a driving run ends after its current step and stays resumable
        if instance in getattr(ipython, "configurables", []):
            ipython.configurables.remove(instance)
