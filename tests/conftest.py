"""Shared fixtures: a project directory and a way to put loops in it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from support.loops import DEMO_LOOP


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project directory."""
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def write_loop(project: Path):
    """``write_loop(yaml_text, into=None)`` puts a loop into the project's (or ``into``'s)
    .odin-loop/loops/ and returns its name."""

    def write(text: str = DEMO_LOOP, name: str | None = None, into: Path | None = None) -> str:
        text = textwrap.dedent(text)
        if name is None:
            name = next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("name:"))
        loops = (into or project) / ".odin-loop" / "loops"
        loops.mkdir(parents=True, exist_ok=True)
        (loops / f"{name}.yaml").write_text(text, encoding="utf-8")
        return name

    return write
