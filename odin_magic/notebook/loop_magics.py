"""The loop commands of ``%odin``: list, validate, simulate, show, and ``%%odin loop NAME`` (a loop written in
a cell, validated, saved when valid).

:class:`LoopMagics` is a part of :class:`~odin_magic.notebook.magics.OdinMagics`, which provides
``project_dir`` and ``runner()``.
"""

from __future__ import annotations

from pathlib import Path

from IPython.core.error import UsageError
from IPython.display import display

from odin_magic.core.errors import OdinError
from odin_magic.notebook.project import abs_path
from odin_magic.render.displays import LoopListDisplay, MessageDisplay, SimulationDisplay, TextBlockDisplay, ValidationDisplay
from odin_magic.render.loop_text import loop_rows, render_loop


class LoopMagics:
    """``%odin list | validate | simulate | show`` and ``%%odin loop``."""

    def _cmd_list(self, args):
        from odin_magic.loop.catalog import LoopCatalog

        active = self.runner().active()
        return LoopListDisplay(loop_rows(LoopCatalog(self.project_dir).entries(), active.loop if active else None))

    def _cmd_validate(self, args):
        from odin_magic.loop.catalog import LoopCatalog
        from odin_magic.loop.validation import validate_file

        paths = [abs_path(p, self.project_dir) for p in args.paths]
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


    def _cmd_show(self, args):
        from odin_magic.loop.catalog import LoopCatalog
        from odin_magic.render.charts import loop_diagram, png_bytes
        from IPython.display import Image

        loop = self._load_loop(args.loop)
        display(Image(data=png_bytes(loop_diagram(loop)), format="png"))
        return LoopSummary(loop, str(LoopCatalog(self.project_dir).resolve(args.loop)))

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


class LoopSummary(TextBlockDisplay):
    """``%odin show``: the loop as ``odin show`` prints it (beside its diagram)."""

    def __init__(self, loop, source: str):
        self.loop = loop
        super().__init__(render_loop(loop, source))
