"""Loop resolution: a name resolves to the project's loop first, then to a built-in.

A project loop lives in ``<project>/.odin-loop/loops/<name>.yaml``; the
built-in loops ship with the package (``loops/`` at the top of a source
checkout, ``odin_magic/loops/`` inside an installed wheel). A project loop with
a built-in's name overrides it. A project loop is read only when its real path
lies inside the project: a ``loops`` folder or a loop file that is a symbolic
link leading out is refused (:mod:`odin_magic.core.confine`), and listed as invalid.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from odin_magic.core.confine import Confinement
from odin_magic.loop.defaults import DEFAULT_LOOP  # noqa: F401  (the notebook defaults to it, the CLI offers it; re-exported)
from odin_magic.core.errors import LoopInvalid, LoopNotFound, OdinError
from odin_magic.loop.schema import Loop, is_plain_name
from odin_magic.loop.validation import ValidationReport, unreadable_report, validate_file


def builtin_loops_dir() -> Path:
    """Where the built-in loop YAMLs are: inside the installed package, else the source checkout."""
    packaged = Path(__file__).parent.parent / "loops"  # inside an installed wheel (odin_magic/loops)
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent.parent / "loops"  # a source checkout


@dataclass(frozen=True)
class LoopEntry:
    """One loop that a name resolves to, as ``odin list`` shows it."""

    name: str
    description: str | None
    stage_count: int | None
    source: str  # "project" | "builtin"
    path: str
    overrides_builtin: bool
    valid: bool
    error_count: int
    warning_count: int

    def to_dict(self) -> dict:
        return asdict(self)


class LoopCatalog:
    def __init__(self, project_dir: Path | str):
        self.project_dir = Path(project_dir)

    @property
    def project_loops_dir(self) -> Path:
        return self.project_dir / ".odin-loop" / "loops"

    @staticmethod
    def _files(directory: Path) -> dict[str, Path]:
        if not directory.is_dir():
            return {}
        return {p.stem: p for p in sorted(directory.glob("*.yaml")) if p.is_file()}

    def resolve(self, name: str) -> Path:
        """The file a loop name stands for: the project's loop first, then the built-in."""
        if not is_plain_name(name):
            raise LoopNotFound(
                f"{name!r} is not a loop name",
                hint="a loop name is a file stem such as 'spec-harness-tdd'; `odin list` shows them",
            )
        for base in (self.project_loops_dir, builtin_loops_dir()):
            path = base / f"{name}.yaml"
            if path.is_file():
                return self._inside(path) if base == self.project_loops_dir else path
        known = sorted(set(self._files(self.project_loops_dir)) | set(self._files(builtin_loops_dir())))
        raise LoopNotFound(
            f"no loop named {name!r} (looked in {self.project_loops_dir} and the built-in loops)",
            hint=f"known loops: {', '.join(known)}" if known else "`odin list` shows the loops you can run",
        )

    def _inside(self, path: Path) -> Path:
        """``path`` (a project loop file) when its real path is inside the project, else :class:`PathEscapes`."""
        Confinement([self.project_dir]).check(path, f"loop file {path.name}", base=self.project_dir,
                                              then="try again")
        return path

    def validate_project_loops(self, *, schedulable: bool = False) -> list[ValidationReport]:
        """A report per project loop file; one that cannot be read (a link out of the project, say) is an
        unreadable report, so that the others are still checked."""
        reports = []
        for path in self._files(self.project_loops_dir).values():
            try:
                reports.append(validate_file(self._inside(path), schedulable=schedulable))
            except OdinError as exc:
                reports.append(unreadable_report(str(path), exc))
        return reports

    def validate(self, name: str, *, schedulable: bool = False) -> ValidationReport:
        return validate_file(self.resolve(name), schedulable=schedulable)

    def load(self, name: str) -> Loop:
        """The validated loop; raises :class:`LoopNotFound` or :class:`LoopInvalid` (with the report)."""
        report = self.validate(name)
        if not report.ok or report.loop is None:
            details = "\n".join(f"  {d}" for d in report.errors)
            raise LoopInvalid(
                f"loop {name!r} has {len(report.errors)} blocking error(s):\n{details}",
                report=report,
                hint=f"fix the file, then check it with `odin validate {report.path}`",
            )
        return report.loop

    def entries(self) -> list[LoopEntry]:
        """Every loop a name resolves to, sorted by name; a project loop hides the built-in it overrides."""
        project = self._files(self.project_loops_dir)
        builtin = self._files(builtin_loops_dir())
        entries = []
        for name in sorted(set(project) | set(builtin)):
            source = "project" if name in project else "builtin"
            path = project.get(name) or builtin[name]
            try:
                report = validate_file(self._inside(path) if source == "project" else path)
            except OdinError:  # an unreadable file (or one through a link out of the project) is listed, as invalid
                report = ValidationReport(path=str(path))
                error_count = 1
            else:
                error_count = len(report.errors)
            entries.append(
                LoopEntry(
                    name=name,
                    description=report.description,
                    stage_count=report.stage_count,
                    source=source,
                    path=str(path),
                    overrides_builtin=source == "project" and name in builtin,
                    valid=error_count == 0,
                    error_count=error_count,
                    warning_count=len(report.warnings),
                )
            )
        return entries
