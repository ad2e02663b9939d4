"""What delivery writes: each commit's message, ``pr.md``, and what ``odin deliver`` tells the user.

Every text here passes through :func:`odin_magic.core.secrets.redact_text` before it leaves (a commit
message, pr.md, the printed summary): a task or a command's output may quote a secret.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from odin_magic.core.secrets import redact_text
from odin_magic.render.text import cost_text, one_line
from odin_magic.runs.completion_report import CompletionReport
from odin_magic.runs.state import RunState

SUBJECT_CHARS = 72
TRAILER = "Odin-Run"


@dataclass(frozen=True)
class FileChange:
    """One file of a commit: its repository path and ``A``/``M``/``D``."""

    path: str
    kind: str

    def describe(self) -> str:
        return f"{self.kind} {self.path}"


@dataclass
class CommitText:
    """What one commit says: the stage (or "squash"), its goal, why, and the files."""

    stage: str
    goal: str
    files: list[FileChange]
    why: list[str] = field(default_factory=list)  # the judge's reasons, the gate's passing commands
    criteria: list[str] = field(default_factory=list)  # "✅ AC1 text" (the run's last completion check)


def subject(goal: str, task: str) -> str:
    """``goal: task`` in at most :data:`SUBJECT_CHARS` characters (cut with an ellipsis)."""
    goal = (goal or "").rstrip(". ")  # a goal written as a sentence: "Simplify the change.: task" reads badly
    text = one_line(redact_text(f"{goal}: {task}" if goal and task else goal or task or "odin run"))
    return text if len(text) <= SUBJECT_CHARS else text[:SUBJECT_CHARS - 1].rstrip() + "…"


def commit_message(run: RunState, commit: CommitText) -> str:
    lines = [subject(commit.goal, run.task), "",
             f"Stage {commit.stage} of odin run {run.run_id} (loop {run.loop}).", "", "What changed:"]
    lines += [f"- {f.describe()}" for f in commit.files]
    if commit.why:
        lines += ["", "Why:"] + [f"- {one_line(w)}" for w in commit.why]
    if commit.criteria:
        lines += ["", "Acceptance criteria:"] + [f"- {c}" for c in commit.criteria]
    lines += ["", f"{TRAILER}: {run.run_id}", ""]
    return redact_text("\n".join(lines))


def criteria_lines(report: CompletionReport | None) -> list[str]:
    if report is None:
        return []
    return [f"{c.mark} {c.id} [{c.priority}] {one_line(c.text)}" for c in report.criteria]


@dataclass
class PrFacts:
    """What pr.md is made of, gathered by the engine (``odin_magic.engine.delivery``)."""

    run: RunState
    branch: str
    files: list[FileChange]
    commits: list[str]  # subjects
    completion: CompletionReport | None = None
    gate_commands: list[tuple[str, str, bool]] = field(default_factory=list)  # (stage, command, passed)
    mutations: list[tuple[str, str]] = field(default_factory=list)  # (stage, "kill ratio 3/4 = 0.75 (min 0.8)")
    metrics: list[tuple[str, str]] = field(default_factory=list)  # (stage, the metric's summary line)
    left_out: list[str] = field(default_factory=list)  # files changed after the run, or ignored


def pr_title(run: RunState) -> str:
    return subject("", run.task)


def pr_markdown(facts: PrFacts) -> str:
    run = facts.run
    out = [f"# {pr_title(run)}", "", "## Summary", "",
           f"Delivered from odin run `{run.run_id}` (loop `{run.loop}`, {len(facts.commits)} commit(s) on "
           f"`{facts.branch}`).", "", f"> {one_line(run.task)}", ""]
    out += [f"- {c}" for c in facts.commits] + ["", "## Changes", ""]
    out += [f"- `{f.path}` ({ {'A': 'added', 'M': 'modified', 'D': 'deleted'}.get(f.kind, f.kind) })"
            for f in facts.files] or ["- (no file changed)"]
    if facts.left_out:
        out += ["", "Not delivered:"] + [f"- {x}" for x in facts.left_out]
    out += ["", "## Acceptance criteria", ""] + _criteria(facts.completion)
    out += ["", "## Test plan", ""] + _test_plan(facts)
    if facts.metrics:
        out += ["", "## Metric", ""] + [f"- {stage}: {line}" for stage, line in facts.metrics]
    out += ["", "## Risks and non-blocking concerns", ""]
    out += [f"- {c.stage}: {one_line(c.text)}" for c in run.concerns] or ["- none recorded"]
    total = run.usage.total
    out += ["", "## Time, tokens, cost", "", f"- started {run.started_at}, ended {run.ended_at or '?'}",
            f"- tokens: {total.input_tokens} in, {total.output_tokens} out",
            f"- cost: {cost_text(total)}", "", f"{TRAILER}: {run.run_id}", ""]
    return redact_text("\n".join(out))


def _criteria(report: CompletionReport | None) -> list[str]:
    if report is None or not report.criteria:
        return ["- no acceptance criteria were recorded for this run"]
    out = []
    for c in report.criteria:
        evidence = f" — `{c.verify}`" if c.verify else ""
        detail = f" ({one_line(c.detail)[:200]})" if c.detail and c.status != "pass" else ""
        out.append(f"- {c.mark} **{c.id}** [{c.priority}] {one_line(c.text)}{evidence}{detail}")
    return out


def _test_plan(facts: PrFacts) -> list[str]:
    out = []
    reg = facts.completion.regression if facts.completion else None
    if reg is not None:
        out.append(f"- {reg.mark} {reg.describe()}")
    out += [f"- {'✅' if ok else '❌'} `{cmd}` (gate of {stage})" for stage, cmd, ok in facts.gate_commands]
    out += [f"- mutation ({stage}): {line}" for stage, line in facts.mutations]
    return out or ["- no command ran at the gates"]


@dataclass
class DeliveryResult:
    """What ``odin deliver`` did."""

    run_id: str
    branch: str
    base: str
    base_note: str  # how the base was found ("the run's first checkpoint", or the fallback said plainly)
    commits: list[tuple[str, str]]  # (sha, subject)
    later: list[str] = field(default_factory=list)
    later_included: bool = False
    ignored: list[str] = field(default_factory=list)
    pr_path: str = ""
    pr_text: str = ""  # what --pr did, or the commands to run


def delivery_text(result: DeliveryResult) -> str:
    lines = [f"branch {result.branch}: {len(result.commits)} commit(s) on {result.base[:12]} ({result.base_note})"]
    lines += [f"  {sha[:12]} {subj}" for sha, subj in result.commits]
    if result.later:
        what = "included as they are now" if result.later_included else \
            "left out (--include-later-changes delivers them as they are now)"
        lines.append(f"changed after the run, {what}: {', '.join(result.later)}")
    if result.ignored:
        lines.append(f"ignored by .gitignore, left out: {', '.join(result.ignored)}")
    if result.pr_path:
        lines.append(f"pull-request text: {result.pr_path}")
    if result.pr_text:
        lines.append(result.pr_text)
    return redact_text("\n".join(lines))
