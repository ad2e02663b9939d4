"""Loop resolution: a name resolves to the project's loop first, then to a built-in.

MINIMAL PLACEHOLDER written by the lead so that the engine can import it; the
foundation helper replaces ``load`` with full validation and adds ``entries``.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from .errors import LoopNotFound
from .loop import Loop


def builtin_loops_dir() -> Path:
    packaged = Path(__file__).parent / "loops"  # inside an installed wheel
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "loops"  # a source checkout


class LoopCatalog:
    def __init__(self, project_dir: Path):
        self.project_dir = Path(project_dir)

    @property
    def project_loops_dir(self) -> Path:
        return self.project_dir / ".odin-loop" / "loops"

    def resolve(self, name: str) -> Path:
        for base in (self.project_loops_dir, builtin_loops_dir()):
            path = base / f"{name}.yaml"
            if path.is_file():
                return path
        raise LoopNotFound(f"no loop named {name!r}", hint="`odin list` shows the loops you can run")

    def load(self, name: str) -> Loop:
        return Loop.model_validate(yaml.safe_load(self.resolve(name).read_text(encoding="utf-8")))
