"""The tool log of a stage execution: each tool call the worker made, how it ended and the first lines of
what it returned, for the stage's gate judge (:mod:`odin_magic.engine.judge_context`).

One JSON line per call in ``<run dir>/tool-log/<stage>.jsonl``, started afresh by each execution of the
stage (a judge decides the latest one). Every text is redacted before it is written (the call's line by
the toolbox, which hands it over).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from odin_magic.core.atomic import open_append, open_dir
from odin_magic.core.confine import LinkInPath
from odin_magic.core.secrets import redact
from odin_magic.runs.checkpoint_listing import shown

LOG_DIR = "tool-log"
OUTPUT_LINES = 8  # of a call's result kept in the log
LINE_CHARS = 200  # of one kept line


def log_path(run_dir: Path, stage_id: str) -> Path:
    return Path(run_dir) / LOG_DIR / f"{stage_id.replace('/', '_')}.jsonl"


def first_lines(text: str, lines: int = OUTPUT_LINES) -> str:
    """The first ``lines`` lines of ``text`` (each capped), with a count of the lines left out."""
    all_lines = str(text).strip("\n").splitlines()
    kept = [ln if len(ln) <= LINE_CHARS else ln[:LINE_CHARS] + "…" for ln in all_lines[:lines]]
    if len(all_lines) > lines:
        kept.append(f"… ({len(all_lines) - lines} more lines)")
    return "\n".join(kept)


@dataclass
class ToolLog:
    """The log file of one stage execution; :meth:`start` empties it."""

    path: Path
    run_dir: Path  # none of the directories from it down to the log is followed through a link

    @classmethod
    def start(cls, run_dir: Path, stage_id: str) -> "ToolLog":
        path = log_path(run_dir, stage_id)
        try:
            Path(run_dir).mkdir(parents=True, exist_ok=True)
            fd = open_dir(path.parent, run_dir, create=True)
        except (OSError, LinkInPath):
            return cls(path, Path(run_dir))  # its records are refused the same way
        try:
            os.unlink(path.name, dir_fd=fd)  # a fresh file, not what a link there points to
        except FileNotFoundError:
            pass
        finally:
            os.close(fd)
        return cls(path, Path(run_dir))

    def record(self, call: str, status: str, output: str) -> None:
        """One call: its line (``bash: pytest -q``, already redacted), how it ended (``exit 0``, ``error``,
        ``refused``) and the first lines of its result."""
        # a file name that is not UTF-8 (a glob's output) as text, each such byte as \xNN, as changes name it
        entry = {"call": shown(call), "status": status, "output": redact(shown(first_lines(output)))}
        try:  # never through a link a worker put in its place, nor one in the folders above it
            out = open_append(self.path, self.run_dir)
        except (OSError, LinkInPath):
            return
        with out:
            out.write(json.dumps(entry) + "\n")


def read_tool_log(run_dir: Path, stage_id: str) -> list[dict]:
    """The calls of the stage's latest execution (none when it made none, or ran no model worker)."""
    path = log_path(run_dir, stage_id)
    try:  # not written by the worker: ToolLog never follows a link
        fd = open_dir(path.parent, run_dir)
        try:
            fd_file = os.open(path.name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0), dir_fd=fd)
        finally:
            os.close(fd)
        with os.fdopen(fd_file, encoding="utf-8") as file:
            lines = file.read().splitlines()
    except (OSError, LinkInPath):
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out
