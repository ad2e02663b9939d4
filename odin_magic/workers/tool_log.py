"""The tool log of a stage execution: each tool call the worker made, how it ended and the first lines of
what it returned, for the stage's gate judge (:mod:`odin_magic.engine.judge_context`).

One JSON line per call in ``<run dir>/tool-log/<stage>.jsonl``, started afresh by each execution of the
stage (a judge decides the latest one). Every text is redacted before it is written.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from odin_magic.core.secrets import redact

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

    @classmethod
    def start(cls, run_dir: Path, stage_id: str) -> "ToolLog":
        path = log_path(run_dir, stage_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)  # a fresh file, not what a link there points to
        return cls(path)

    def record(self, call: str, status: str, output: str) -> None:
        """One call: its line (``bash: pytest -q``), how it ended (``exit 0``, ``error``, ``refused``) and
        the first lines of its result."""
        entry = {"call": redact(call), "status": status, "output": redact(first_lines(output))}
        try:  # never through a link a worker put in its place
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError:
            return
        with os.fdopen(fd, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")


def read_tool_log(run_dir: Path, stage_id: str) -> list[dict]:
    """The calls of the stage's latest execution (none when it made none, or ran no model worker)."""
    path = log_path(run_dir, stage_id)
    if path.is_symlink():  # not written by the worker: ToolLog never follows one
        return []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out
