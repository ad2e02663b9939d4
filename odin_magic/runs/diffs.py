"""What a stage execution changed, as a unified diff: ``odin diff``, ``%odin diff`` and the approval panel.

A stage execution is a history entry that carries checkpoints (see
:mod:`odin_magic.runs.checkpoints`): its number N (1-based, the ``evaluation`` number of
its gate evidence), or a stage id (its latest execution), or
nothing (the latest execution: at a pause, the paused stage's). With ``net``, a stage's net change
over all its executions: from the checkpoint before its first to the tree after its last.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from odin_magic.runs import evidence as gate_evidence
from odin_magic.runs.checkpoint_listing import shown
from odin_magic.runs.checkpoints import Change, Checkpoints
from odin_magic.core.errors import UsageError
from odin_magic.runs.state import HistoryEntry, RunState



def select_execution(state: RunState, selector: str | None) -> tuple[int, HistoryEntry]:
    """(N, entry) of the stage execution ``selector`` names; a :class:`UsageError` when there is none."""
    executions = [(n, e) for n, e in enumerate(state.history, start=1) if e.checkpoint]
    if not executions and state.active and not state.history:  # starting, or its first stage is under way
        raise UsageError(f"run {state.run_id} is at {state.current_stage}; no stage has finished yet",
                         hint="a stage's diff is there once its gate has run (`odin status` shows where the run is)")
    if not executions:
        raise UsageError(f"run {state.run_id} has no recorded stage execution with checkpoints",
                         hint="checkpoints are recorded from the first stage a run executes (odin status shows the history)")
    if selector is None or selector == "":
        return executions[-1]
    if selector.isdigit():
        n = int(selector)
        for number, entry in executions:
            if number == n:
                return number, entry
        numbers = ", ".join(str(k) for k, _ in executions[-10:])
        raise UsageError(f"run {state.run_id} has no stage execution {n} (it has {len(state.history)} history entries)",
                         hint=f"executions with checkpoints: {numbers}; `odin status` lists the history")
    matching = [(n, e) for n, e in executions if e.stage == selector]
    if not matching:
        stages = ", ".join(dict.fromkeys(e.stage for _, e in executions))
        raise UsageError(f"stage {selector!r} has no recorded execution in run {state.run_id}",
                         hint=f"stages executed: {stages}; or give an execution number N")
    return matching[-1]


@dataclass(frozen=True)
class FileDiff:
    change: Change
    text: str  # this file's part of the unified diff
    outside: str = ""  # why the gate found it changed outside the run (not the stage's work; attribution)

    def describe(self) -> str:
        return self.change.describe() + (f"  [{self.outside}]" if self.outside else "")


def split_diff(text: str) -> dict[str, str]:
    """A unified diff cut into its files, keyed by path (no renames: git names the same path on both sides)."""
    out: dict[str, str] = {}
    current: list[str] = []
    path = None
    for line in text.splitlines(keepends=True):
        if line.startswith("diff --git "):
            if path is not None:
                out[path] = "".join(current)
            current = [line]
            path = _header_path(line[len("diff --git "):].rstrip("\n"))
        else:
            current.append(line)
    if path is not None:
        out[path] = "".join(current)
    return out


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def _header_path(rest: str) -> str:
    """The path of a ``diff --git`` header: ``a/X b/X``, or both quoted the C way when X has a quote, a
    backslash or a control character in it (octal escapes for bytes; with git's default core.quotePath,
    which the checkpoint store turns off, also for every byte of a non-ASCII letter)."""
    if not rest.startswith('"'):
        half = len(rest) // 2  # "a/X b/X": the same path twice, so spaces in X do no harm
        return rest[half + 1:][2:] if rest[half] == " " else rest.split(" b/", 1)[-1]
    raw = bytearray()
    i = 1
    while i < len(rest) and rest[i] != '"':
        if rest[i] == "\\" and i + 1 < len(rest):
            nxt = rest[i + 1]
            if nxt in "01234567":
                raw.append(int(rest[i + 1:i + 4], 8))
                i += 4
                continue
            raw.append(_ESCAPES.get(nxt, ord(nxt)))
            i += 2
            continue
        raw += rest[i].encode("utf-8", "surrogateescape")
        i += 1
    return raw.decode("utf-8", "surrogateescape")[2:]  # "a/..."


@dataclass
class StageDiff:
    """One stage execution's changes (or, ``net``, a stage's over all its executions ``numbers``): a summary
    line per file and the unified diff."""

    run_id: str
    number: int
    stage: str
    before: str
    after: str
    files: list[FileDiff] = field(default_factory=list)
    selected: str = ""  # how the execution was chosen: "latest of STAGE", "net", "" (by number)
    numbers: list[int] = field(default_factory=list)  # net: every execution of the stage

    @property
    def title(self) -> str:
        if self.selected == "net":
            shown = ", ".join(str(n) for n in self.numbers)
            return (f"run {self.run_id}, stage {self.stage}: net change over its {len(self.numbers)} execution(s) "
                    f"({shown}), from before its first to after its last")
        latest = ""
        if self.selected == "latest":
            latest = ", its latest execution" + (f" of {len(self.numbers)} ({', '.join(map(str, self.numbers))}; "
                                                  f"--net shows their net change)" if len(self.numbers) > 1 else "")
        return f"run {self.run_id}, execution {self.number}: stage {self.stage}{latest}"

    def summary(self) -> str:
        if not self.files:
            return "no files changed"
        return "\n".join(f.describe() for f in self.files)

    def text(self) -> str:
        head = f"{self.title} ({len(self.files)} file(s) changed)"
        outside = [f"  {f.describe()}" for f in self.files if f.outside]
        if outside:
            head += "\nnot the stage's work (its gate found them changed outside the run):\n" + "\n".join(outside)
        body = "".join(f.text for f in self.files)
        return head + "\n" + (self.summary() if not body else body.rstrip("\n"))


def stage_diff(checkpoints: Checkpoints, state: RunState, selector: str | None = None, net: bool = False,
               run_dir: Path | None = None) -> StageDiff:
    """The diff of the execution ``selector`` names (see :func:`select_execution`); with ``net``, of the stage
    ``selector`` over all its executions: from the checkpoint before its first to the tree after its last
    (what other stages changed in between counts too: the tree is compared, not the executions). With the
    ``run_dir``, a file the execution's gate found changed outside the run says so (its evidence)."""
    if net:
        return _net_diff(checkpoints, state, selector)
    number, entry = select_execution(state, selector)
    before, after = entry.checkpoint, entry.after or entry.checkpoint
    files = file_diffs(checkpoints, before, after)
    if run_dir is not None:
        files = _marked_outside(files, run_dir, entry)
    by_stage = selector is not None and selector != "" and not selector.isdigit()
    numbers = [n for n, e in enumerate(state.history, start=1) if e.checkpoint and e.stage == entry.stage]
    return StageDiff(state.run_id, number, entry.stage, before, after, files,
                     selected="latest" if by_stage else "", numbers=numbers)


def _marked_outside(files: list[FileDiff], run_dir: Path, entry: HistoryEntry) -> list[FileDiff]:
    """``files`` with the reason of each one the entry's gate evidence lists as changed outside the run."""
    try:
        changes = gate_evidence.read_entry(run_dir, entry).get("changes") or []
    except (OSError, ValueError):  # unreadable evidence: the diff is still the diff
        return files
    outside = {c.get("path"): c["outside"] for c in changes if isinstance(c, dict) and c.get("outside")}
    return [replace(f, outside=outside[f.change.path]) if f.change.path in outside else f for f in files]


def file_diffs(checkpoints: Checkpoints, before: str, after: str) -> list[FileDiff]:
    """Each file changed from checkpoint ``before`` to ``after``, with its part of the unified diff (a
    :class:`CheckpointError` when either is missing from the store)."""
    checkpoints.require(before)
    checkpoints.require(after)
    changes = checkpoints.changes(before, after)
    parts = split_diff(checkpoints.diff(before, after, errors="surrogateescape")) if changes else {}
    parts = {shown(path): _as_text(text) for path, text in parts.items()}
    return [FileDiff(c, parts.get(c.path, "")) for c in changes]


def _as_text(part: str) -> str:
    """A file's part of the diff (bytes that are not UTF-8 kept as surrogates) as valid text: its header lines
    name the file as its change does (:func:`shown`: such a byte as ``\\xNN``), its hunks show such a byte
    as U+FFFD."""
    out, header = [], True
    for line in part.splitlines(keepends=True):
        header = header and not line.startswith("@@")
        out.append(line.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace" if header else "replace"))
    return "".join(out)


def _net_diff(checkpoints: Checkpoints, state: RunState, stage: str | None) -> StageDiff:
    if not stage or stage.isdigit():
        raise UsageError("--net shows a stage's net change: give the stage, not an execution number",
                         hint="odin diff build --net   (odin diff N shows execution N)")
    select_execution(state, stage)  # the stage has an execution with checkpoints, or a UsageError says which do
    executions = [(n, e) for n, e in enumerate(state.history, start=1) if e.checkpoint and e.stage == stage]
    first, last = executions[0][1], executions[-1][1]
    before, after = first.checkpoint, last.after or last.checkpoint
    return StageDiff(state.run_id, executions[-1][0], stage, before, after, file_diffs(checkpoints, before, after),
                     selected="net", numbers=[n for n, _ in executions])
