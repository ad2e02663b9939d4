"""``%odin`` and ``%%odin``: the notebook's commands, mirroring the ``odin`` CLI.

``%load_ext odin_magic`` registers :class:`OdinMagics`, the one ``Magics`` class: its settings (traitlets:
``%config OdinMagics.model = "..."``), the project and its runner, and the entry point, which parses a line
(:mod:`.parser`: the arguments are those of :mod:`odin_magic.commands`, shared with ``odin``) and calls the
command's ``_cmd_*`` method. The commands are grouped one concern per module, as parts of the class:
:mod:`.run_magics` (run, approve, revise, step, answer, wait, stop, abandon, the live view),
:mod:`.status_magics` (status, report, runs, doctor), :mod:`.loop_magics` (list, validate, simulate, show,
``%%odin loop``), :mod:`.config_magics` (config), :mod:`.authoring_magics` (new, refine, memory) and
:mod:`.history_magics` (diff, revert, fork), :mod:`.delivery_magics` (deliver), :mod:`.roadmap_magics` (roadmap). A bad argument or a user mistake
(:class:`~odin_magic.core.errors.OdinError`) is one ``UsageError`` line, never a traceback. Run commands drive
in a background thread and return at once; ``--wait`` (or ``%odin wait``) blocks until the drive pauses or ends.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from traitlets import Bool, Float, Int, Unicode

from odin_magic.core.errors import OdinError
from odin_magic.notebook import authoring_magics, delivery_magics, history_magics, roadmap_magics
from odin_magic.notebook.actions import NotebookRunner
from odin_magic.notebook.config_magics import ConfigDisplay, ConfigMagics
from odin_magic.notebook.loop_magics import LoopMagics, LoopSummary
from odin_magic.notebook.parser import SUBPARSERS, full_help, parse_line, split, usage_error
from odin_magic.notebook.project import abs_path, notebook_dir
from odin_magic.notebook.run_magics import RunMagics
from odin_magic.notebook.status_magics import StatusMagics
from odin_magic.render.displays import TextBlockDisplay

__all__ = ["ENGINE_SETUP", "ConfigDisplay", "LoopSummary", "OdinMagics", "full_help", "load_ipython_extension",
           "notebook_dir", "unload_ipython_extension", "usage_error"]


#: Called as ``setup(engine, magics)`` for each Engine the notebook builds, before it drives:
#: the seam where, e.g., the deep interview installs ``engine.interview_runner`` with the
#: notebook's settings (``magics.settings()``).
ENGINE_SETUP: list[Callable[[Any, "OdinMagics"], None]] = []


@magics_class
class OdinMagics(RunMagics, StatusMagics, LoopMagics, ConfigMagics, Magics):
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
                                 base_url=self.base_url, script=abs_path(self.script, self.project_dir))

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
        self._live_shown = None  # the live view this command shows, if any (run_magics._show_live)
        try:
            if cell is not None:
                return self._cell(line, cell)
            return self._line(line)
        except OdinError as exc:
            raise usage_error(exc) from None

    def _line(self, line: str):
        args = parse_line(line)
        return getattr(self, "_cmd_" + args.command)(args)

    def _cell(self, line: str, cell: str):
        argv = split(line)
        if not argv:
            raise UsageError("%%odin needs a command: loop NAME, task [LOOP], or revise")
        kind, rest = argv[0], argv[1:]
        if kind == "loop":
            if len(rest) != 1:
                raise UsageError("usage: %%odin loop NAME  (the cell holds the loop's YAML)")
            # the name as written: quotes or a backslash that the shell-like split would take away (`a\b` is not
            # `ab`) make it no plain name, and the name check says so
            return self._save_loop(line.split()[-1], cell)
        if kind == "task":
            task = cell.strip()
            if not task:
                raise UsageError("%%odin task: the cell is empty; write the task below the magic line")
            args = SUBPARSERS["run"].parse_args(rest)
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

    def _cmd_deliver(self, args):
        return delivery_magics.cmd_deliver(self, args)

    def _cmd_roadmap(self, args):
        return roadmap_magics.cmd_roadmap(self, args)

    def _cmd_memory(self, args):
        return authoring_magics.cmd_memory(self, args)

    def _cmd_help(self, args):
        if args.topic:
            if args.topic not in SUBPARSERS:
                raise UsageError(f"no command {args.topic!r}; %odin help lists them")
            return TextBlockDisplay(SUBPARSERS[args.topic].format_help())
        return TextBlockDisplay(full_help())


OdinMagics.odin.__doc__ = full_help()


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

