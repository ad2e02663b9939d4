"""What a gate judge is shown besides the stage's artifacts and the gate's command outcomes: the stage's
``consumes``, the diff of what the stage execution changed, the files its check names, and a compact log of
the worker's tool calls (issue 25, item 1).

All of it within :data:`JUDGE_CONTEXT_CHARS` characters: the diff, the named files and the tool log each
get a share (:data:`SHARES`), the consumes the rest. Whatever does not fit is cut with a visible marker,
``[… N more characters cut: budget B]``, and the consumes that were shortened are named at the top of
their section. Every text is redacted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from odin_magic.core.confine import is_confined
from odin_magic.core.secrets import redact
from odin_magic.loop.schema import Stage
from odin_magic.runs.checkpoints import CheckpointError, Checkpoints, StageCheckpoint
from odin_magic.runs.diffs import file_diffs
from odin_magic.workers.prompts import read_artifact
from odin_magic.workers.tool_log import read_tool_log

#: characters of everything this module adds to one judge request (about 12k tokens)
JUDGE_CONTEXT_CHARS = 48_000
#: the share of the budget the diff, the named files and the tool log may use; the consumes get the rest
SHARES = {"diff": 0.30, "named": 0.15, "tools": 0.10}
NAMED_FILES = 6  # at most this many files named by the check are shown

# a path in a check: with a file extension (spec.md, src/calc.py) or a directory with a slash (harness/)
_PATH = re.compile(r"(?<![\w$/.-])((?:[\w.-]+/)+(?:[\w-]+\.[A-Za-z0-9]+)?|[\w-]+\.[A-Za-z][A-Za-z0-9]*)(?![\w/])")


def cut(text: str, limit: int, budget: int) -> str:
    """``text`` within ``limit`` characters; what is cut is said in a marker at the end."""
    if len(text) <= limit:
        return text
    return text[:max(limit, 0)] + f"\n[… {len(text) - max(limit, 0)} more characters cut: budget {budget}]"


@dataclass(frozen=True)
class Sources:
    """Where the judge's context of one stage execution comes from."""

    stage: Stage
    project_dir: Path
    run_dir: Path
    consumes: dict[str, Path] = field(default_factory=dict)  # entry -> path
    diff: str | None = None  # the execution's unified diff; None when it has no checkpoints
    shown: tuple[Path, ...] = ()  # already in the request (the produces): not repeated


def execution_diff(checkpoints: Checkpoints, ckpt: StageCheckpoint | None) -> str | None:
    """The unified diff of a stage execution's checkpoints (None without them)."""
    if ckpt is None:
        return None
    if not ckpt.changes:
        return ""
    try:
        return "".join(f.text for f in file_diffs(checkpoints, ckpt.before, ckpt.after))
    except CheckpointError as exc:  # the judge decides without it, and is told why
        return f"(not available: {exc})"


def named_paths(check: str, roots: tuple[Path, Path]) -> list[Path]:
    """The files and directories ``check`` names that exist in the project or the run dir (in that order)."""
    found: list[Path] = []
    for token in _PATH.findall(check):
        for root in roots:
            path = root / token.rstrip("/")
            if token.strip("/") and path.exists() and is_confined(path, roots) and path not in found:
                found.append(path)
                break
    return found[:NAMED_FILES]


def _rel(path: Path, sources: Sources) -> str:
    for root in (sources.project_dir, sources.run_dir):
        if path.is_relative_to(root):
            rel = path.relative_to(root).as_posix() or "."
            return rel if root == sources.project_dir else f"$ODIN_RUN_DIR/{rel}"
    return str(path)


def tool_log_text(sources: Sources) -> str:
    calls = read_tool_log(sources.run_dir, sources.stage.id)
    if not calls:
        return "(no tool call recorded for this stage execution)"
    out = []
    for entry in calls:
        out.append(f"$ {entry.get('call', '')}   [{entry.get('status', '?')}]")
        output = str(entry.get("output", "")).strip("\n")
        out += [f"  {line}" for line in output.splitlines()]
    return "\n".join(out)


def _consumes(sources: Sources, limit: int, budget: int) -> str:
    """The consumes, the smallest first, each given an equal part of what is left; the shortened named."""
    texts = {entry: read_artifact(path, limit=10 * budget, roots=(sources.project_dir, sources.run_dir))
             for entry, path in sources.consumes.items()}
    parts: dict[str, str] = {}
    shortened: list[str] = []
    left = limit
    for i, entry in enumerate(sorted(texts, key=lambda e: len(texts[e]))):
        share = left // (len(texts) - i)
        parts[entry] = cut(texts[entry], share, budget)
        if len(texts[entry]) > share:
            shortened.append(f"{entry} ({len(texts[entry])} characters, {share} shown)")
        left -= min(len(texts[entry]), share)
    lines = ["The stage's inputs (consumes), read fresh from disk:"]
    if shortened:
        lines.append(f"Shortened to fit the judge's budget of {budget} characters: " + ", ".join(shortened))
    for entry, path in sources.consumes.items():
        lines.append(f"\n=== {entry} ({_rel(path, sources)}) ===\n{parts[entry]}")
    return "\n".join(lines)


def assemble(sources: Sources, budget: int = JUDGE_CONTEXT_CHARS) -> str:
    """The judge's context of one stage execution, within ``budget`` characters (plus headings and markers)."""
    roots = (sources.project_dir, sources.run_dir)
    skip = {p.resolve() for p in (*sources.consumes.values(), *sources.shown)}
    if sources.diff is None:
        diff = "(not available: this execution has no checkpoints)"
    else:
        diff = sources.diff or "(the stage changed no file)"
    named = [p for p in named_paths(sources.stage.gate.check, roots)
             if not any(p.resolve().is_relative_to(shown) for shown in skip)]
    named_text = "\n".join(f"=== {_rel(p, sources)} ===\n{read_artifact(p, limit=budget, roots=roots)}"
                           for p in named) or "(none besides the artifacts and inputs shown)"
    sections = {
        "diff": ("What this stage execution changed in the project (unified diff of its checkpoints):", diff),
        "named": ("Files the gate check names:", named_text),
        "tools": ("The worker's tool calls in this stage execution (call, how it ended, first lines of output):",
                  tool_log_text(sources)),
    }
    shown = {k: cut(text, int(budget * SHARES[k]), budget) for k, (_, text) in sections.items()}
    used = sum(min(len(text), int(budget * SHARES[k])) for k, (_, text) in sections.items())
    out = []
    if sources.consumes:
        out.append(_consumes(sources, budget - used, budget))
    out += [f"{title}\n{shown[k]}" for k, (title, _) in sections.items()]
    return redact("\n\n".join(out))
