"""Display objects for the notebook: HTML in a notebook, plain text in a terminal.

Each object holds plain data (a :class:`RunState`, a :class:`Loop`, ...) and
renders it two ways: ``_repr_html_`` for Jupyter front ends and ``__repr__`` /
``_repr_pretty_`` for terminal IPython and plain ``print``. Nothing here drives
a run or touches the disk.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from typing import TYPE_CHECKING

from odin_magic.interview.limits import EARLY_EXIT_FROM_ROUND
from odin_magic.render.loop_text import LoopRow, loop_list_text, validation_text
from odin_magic.render.text import (
    AWAITING, BLOCKED, LOOPED, NOT_STARTED, PASSED, cost_text, history_heading, history_rows, next_hint, render_runs,
    render_simulation,
    render_status, stage_marks, status_text, status_word, threshold_standing
)

if TYPE_CHECKING:  # annotations only: `%load_ext odin_magic` does not load the models
    from odin_magic.loop.schema import Loop
    from odin_magic.runs.state import RunState

FAILED_MARK = "❌"
__all__ = ["PASSED", "LOOPED", "AWAITING", "NOT_STARTED", "FAILED_MARK", "html_mark"]

#: The marks in HTML views: characters that common fonts have (DejaVu Sans, Liberation, Arial), in colour.
#: The terminal's ✅ 🔄 ⏸ ⬜ ❌ ⛔ need an emoji font, which a browser may lack (Debian's chromium shows
#: empty boxes). (character, colour, what it means)
HTML_MARKS = {
    PASSED: ("✓", "#1a7f37", "passed"),
    LOOPED: ("↻", "#b35c00", "looped back / working"),
    AWAITING: ("‖", "#9a6700", "waiting for you"),
    NOT_STARTED: ("○", "#888", "not started"),
    FAILED_MARK: ("✗", "#cf222e", "failed"),
    BLOCKED: ("■", "#cf222e", "blocked"),
}


def html_mark(mark: str) -> str:
    """A stage or verdict mark for HTML: a common-font character in colour, its meaning as the tooltip."""
    char, colour, meaning = HTML_MARKS.get(mark, (mark, "inherit", ""))
    return (f"<span class='odin-mark' title='{meaning}' style='color:{colour};font-weight:bold'>"
            f"{html.escape(char)}</span>")

_STYLE = (
    "<style>.odin-t{border-collapse:collapse;font-size:90%}"
    ".odin-t td,.odin-t th{padding:2px 8px;text-align:left;border-bottom:1px solid #ddd}"
    ".odin-muted{color:#777}</style>"
)


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


class _Display:
    """Shared rendering plumbing: subclasses implement ``text()`` and ``html()``."""

    def text(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def html(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def _repr_html_(self) -> str:
        return _STYLE + self.html()

    def __repr__(self) -> str:
        return self.text()

    __str__ = __repr__

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(self.text())


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table class='odin-t'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# -- the stage checklist ------------------------------------------------------------------


@dataclass(frozen=True)
class ChecklistRow:
    stage: str
    mark: str
    note: str = ""


def stage_checklist(state: RunState, loop: Loop | None = None) -> list[ChecklistRow]:
    """One row per stage, in loop order (history order without the loop): ✅ passed, 🔄 looped,
    ⏸ awaiting, ⬜ not started. The marks are :func:`odin_magic.render.text.stage_marks` (the CLI's),
    so that a notebook and a terminal agree."""
    return [ChecklistRow(sid, mark, note) for mark, sid, note in stage_marks(state, loop)]


def _join(*parts: str) -> str:
    return ", ".join(p for p in parts if p)


# -- status ----------------------------------------------------------------------------------


class StatusDisplay(_Display):
    """``%odin status``: loop, task, stage, status, iterations, checklist, interview, usage."""

    def __init__(self, state: RunState, loop: Loop | None = None, question: str | None = None,
                 criteria: list[str] | None = None, whole_history: bool = False, driven: bool = True):
        self.state = state
        self.loop = loop
        self.question = question  # the interview's waiting question, rendered as text
        self.criteria = criteria or []  # the last checks before done, a line each (completion)
        self.history_tail = 0 if whole_history else 10  # ``--history``: every entry
        self.driven = driven  # a running run that nothing drives is shown as ready
        self.metrics: list = []  # the metric gates' series (runs.metric_history.MetricSeries): see with_metrics
        self.phase_hint = ""  # a roadmap phase's word in place of the run's next step: see with_phase_hint

    def with_metrics(self, series: Sequence[Any]) -> "StatusDisplay":
        """Show the metric gates' figures over the run: their lines (as ``odin status``) and their chart."""
        self.metrics = list(series)
        return self

    def with_phase_hint(self, hint: str) -> "StatusDisplay":
        """Say ``hint`` (a roadmap phase's run whose phase is blocked: render.roadmap_view.phase_blocked_hint)
        where the run's next step goes, as ``odin status`` does."""
        self.phase_hint = hint
        return self

    @property
    def rows(self) -> list[ChecklistRow]:
        return stage_checklist(self.state, self.loop)

    def _facts(self) -> list[tuple[str, str]]:
        s = self.state
        facts = [
            ("run", s.run_id),
            ("loop", s.loop + (" (dry run)" if s.dry else "")),
            ("task", s.task),
            ("status", status_text(s, self.driven, mark=False)),  # the HTML shows no emoji marks
            ("current stage", s.current_stage),
            ("iterations", f"{s.total_iterations} / {s.max_iterations}"
             + (f"  ({', '.join(f'{k}: {v}' for k, v in s.iterations.items())})" if s.iterations else "")),
        ]
        total = s.usage.total
        if total.total_tokens:
            facts.append(("usage", f"{total.total_tokens:,} tokens, {cost_text(total)}"))
        if s.interview:
            iv = s.interview
            scored = f"after round {iv.rounds}" if iv.rounds else "no round scored yet"  # the next one is asked
            facts.append(("interview", f"{scored}: ambiguity {iv.ambiguity:.2f} "
                                       f"({_against_threshold(iv)}); topology: {', '.join(iv.topology) or '-'}"))
        if s.failure_reason:
            facts.append(("failure", s.failure_reason))
        return facts

    def text(self) -> str:
        # the CLI's `odin status`, word for word, waiting question included
        lines = [render_status(self.state, self.loop, history_tail=self.history_tail, question=self.question,
                               criteria=self.criteria, driven=self.driven)]
        from odin_magic.render.metric_text import metric_block, metric_lines

        block = metric_block(metric_lines(self.metrics))
        if block:
            lines += ["", block]
        hint = self.phase_hint or next_hint(self.state, "%odin")
        if hint:
            lines += ["", hint]
        return "\n".join(lines)

    def html(self) -> str:
        facts = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in self._facts())
        checklist = "".join(
            f"<li>{html_mark(row.mark)} <code>{_e(row.stage)}</code>"
            + (f" <span class='odin-muted'>{_e(row.note)}</span>" if row.note else "")
            + "</li>"
            for row in self.rows
        )
        hint = self.phase_hint or next_hint(self.state, "%odin")
        return (
            f"<div class='odin-status'><table class='odin-t'>{facts}</table>"
            f"<ul style='list-style:none;padding-left:4px'>{checklist}</ul>"
            + (("<p><b>before done</b> (acceptance criteria, regression suite)</p><ul style='list-style:none;"
                "padding-left:4px'>" + "".join(f"<li>{_e(c)}</li>" for c in self.criteria) + "</ul>")
               if self.criteria else "")
            + self._history_html()
            + self._metrics_html()
            + (f"<pre>{_e(self.question)}</pre>" if self.question else "")
            + (f"<p class='odin-muted'>{_e(hint)}</p>" if hint else "")
            + "</div>"
        )


    def _metrics_html(self) -> str:
        """The metric lines and their chart (a PNG inline: it shows in any front end and in a saved notebook)."""
        if not self.metrics:
            return ""
        from odin_magic.render.charts import png_bytes
        from odin_magic.render.metric_chart import metric_chart
        from odin_magic.render.metric_text import metric_lines

        png = base64.b64encode(png_bytes(metric_chart(self.metrics), dpi=72)).decode("ascii")
        lines = "".join(f"<li>{_e(line)}</li>" for line in metric_lines(self.metrics))
        return (f"<p><b>metrics</b></p><ul style='list-style:none;padding-left:4px'>{lines}</ul>"
                f"<img alt='metric chart' src='data:image/png;base64,{png}'/>")

    def _history_html(self) -> str:
        """The numbered history (the N of ``revert --to`` and ``fork --from``), folded away unless asked for."""
        if not self.state.history:
            return ""
        opened = " open" if not self.history_tail else ""
        rows = "\n".join(f"{html_mark(mark)} {_e(rest)}"  # the mark in the common font, as in every HTML view
                         for mark, rest in history_rows(self.state, self.history_tail))
        return (f"<details{opened}><summary>{_e(history_heading(self.state, self.history_tail))}</summary>"
                f"<pre>{rows}</pre></details>")


def _against_threshold(iv) -> str:
    """Ambiguity against the threshold, truthfully: below it, the interview still asks until the
    round from which it may stop early (and the stop condition also needs criteria, no open blockers)."""
    standing = threshold_standing(iv)
    if standing == "accepted":
        return f"above threshold {iv.threshold:.2f}, accepted by the user"
    if standing == "above":
        return f"threshold {iv.threshold:.2f}, not reached yet"
    if standing == "early":
        return (f"below threshold {iv.threshold:.2f}; the interview may stop from round "
                f"{EARLY_EXIT_FROM_ROUND}")
    return f"below threshold {iv.threshold:.2f}"


class NoRunDisplay(_Display):
    def __init__(self, project_dir: str):
        self.project_dir = project_dir

    def text(self) -> str:
        return (f"No run in {self.project_dir}. Start one with "
                "%odin run LOOP --task \"...\" (%odin list shows the loops).")

    def html(self) -> str:
        return f"<p>{_e(self.text())}</p>"


# -- list --------------------------------------------------------------------------------


class LoopListDisplay(_Display):
    """``%odin list``: each loop's name, description, stage count, source, validity."""

    headers = ("", "loop", "stages", "source", "valid", "description")

    def __init__(self, rows: Sequence[LoopRow]):
        self.rows = list(rows)

    def _cells(self, row: LoopRow) -> list[str]:
        source = row.source + (" (overrides built-in)" if row.overrides else "")
        return ["▶" if row.active else "", row.name, "" if row.stages is None else str(row.stages),
                source, "yes" if row.valid else "NO", row.description]

    def text(self) -> str:  # `odin list`'s text; a hint names the notebook's command
        return loop_list_text(self.rows, validate="%odin validate")

    def html(self) -> str:
        if not self.rows:
            return "<p>No loops found.</p>"
        rows = [[_e(c) if i != 1 else f"<code>{_e(c)}</code>" for i, c in enumerate(self._cells(r))]
                for r in self.rows]
        return _table(self.headers, rows)


# -- runs --------------------------------------------------------------------------------


_NO_RUNS = 'No runs yet. Start one with %odin run LOOP --task "..." (%odin list shows the loops).'


class RunsDisplay(_Display):
    """``%odin runs``: every run in the project, newest first."""

    headers = ("run", "loop", "status", "stage", "iterations", "tokens", "cost", "task")

    def __init__(self, states: Sequence[RunState], idle: frozenset[str] = frozenset()):
        self.states = sorted(states, key=lambda s: s.run_id, reverse=True)
        self.idle = idle  # running runs that nothing drives now: ready

    def _cells(self, s: RunState) -> list[str]:
        total = s.usage.total
        return [s.run_id, s.loop, status_word(s, s.run_id not in self.idle), s.current_stage, f"{s.total_iterations}/{s.max_iterations}",
                f"{total.total_tokens:,}", cost_text(total, short=True), _short(s.task, 60)]

    def text(self) -> str:
        if not self.states:
            return _NO_RUNS
        return render_runs(self.states, idle=self.idle)  # the CLI's `odin runs`

    def html(self) -> str:
        if not self.states:
            return f"<p>{_e(_NO_RUNS)}</p>"
        return _table(self.headers, [[_e(c) for c in self._cells(s)] for s in self.states])


def _short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


# -- gate verdicts ---------------------------------------------------------------------


def command_line(cmd: str, exit_code: int | None, timed_out: bool | None) -> str:
    """A gate command as a verdict lists it: "✓ cmd", "✗ cmd (exit 1)", "✗ cmd (timed out)"."""
    ok = exit_code == 0 and not timed_out
    tail = "" if ok else (" (timed out)" if timed_out else f" (exit {exit_code})")
    return f"{'✓' if ok else '✗'} {cmd}{tail}"


def change_line(change: dict) -> str:
    """One changed file of a gate's evidence: ``src/app.py (added, +2 -0)`` (binary: no line counts)."""
    counts = "binary" if change.get("added") is None else f"+{change.get('added')} -{change.get('deleted')}"
    return f"{change.get('path')} ({change.get('kind')}, {counts})"


@dataclass
class VerdictRecord:
    """One gate evaluation as the live view saw it (from gate events)."""

    stage: str
    passed: bool
    reasons: list[str] = field(default_factory=list)
    blocking: list[str] = field(default_factory=list)
    non_blocking: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)  # "✓ cmd" / "✗ cmd (exit 1)"
    changes: list[str] = field(default_factory=list)  # "src/app.py (added, +2 -0)": what the stage changed

    @classmethod
    def from_event_data(cls, stage: str, passed: bool, data: dict) -> "VerdictRecord":
        verdict = data.get("verdict") or data
        if hasattr(verdict, "model_dump"):
            verdict = verdict.model_dump()
        reasons = list(verdict.get("reasons") or [])
        if not reasons and data.get("reason"):
            reasons = [str(data["reason"])]
        return cls(
            stage=stage,
            passed=passed,
            reasons=[str(r) for r in reasons],
            blocking=[str(b) for b in verdict.get("blocking") or []],
            non_blocking=[str(b) for b in verdict.get("non_blocking") or []],
            commands=[str(c) for c in data.get("commands") or []],
            changes=[change_line(c) for c in data.get("changes") or [] if isinstance(c, dict)],
        )

    @classmethod
    def from_evidence(cls, evidence: dict) -> "VerdictRecord":
        """From a gate's evidence (:func:`odin_magic.runs.evidence.read`)."""
        commands = [command_line(c.get("cmd"), c.get("exit_code"), c.get("timed_out"))
                    for c in evidence.get("commands") or []]
        data = dict(evidence.get("verdict") or {})
        reasons = list(data.get("reasons") or [])
        if evidence.get("reason") and evidence["reason"] not in reasons:
            reasons = [evidence["reason"]] + reasons
        if evidence.get("missing"):
            reasons.append(f"missing: {', '.join(evidence['missing'])}")
        data.update(reasons=reasons, commands=commands, changes=evidence.get("changes") or [])
        return cls.from_event_data(str(evidence.get("stage")), bool(evidence.get("passed")), data)

    def title(self) -> str:
        return f"{PASSED if self.passed else FAILED_MARK} {self._outcome()}"

    def html_title(self) -> str:
        return f"{html_mark(PASSED if self.passed else FAILED_MARK)} {_e(self._outcome())}"

    def _outcome(self) -> str:
        return f"{self.stage}: gate {'passed' if self.passed else 'failed'}"

    def detail_lines(self) -> list[str]:
        lines = [f"- {r}" for r in self.reasons]
        lines += [f"- blocking: {b}" for b in self.blocking]
        lines += [f"- non-blocking: {b}" for b in self.non_blocking]
        lines += [f"- command {c}" for c in self.commands]
        lines += [f"- changed {c}" for c in self.changes]
        return lines


class VerdictsDisplay(_Display):
    """Gate verdicts, each expandable in HTML (``<details>``)."""

    def __init__(self, verdicts: Sequence[VerdictRecord]):
        self.verdicts = list(verdicts)

    def text(self) -> str:
        if not self.verdicts:
            return "No gate verdicts yet."
        out = []
        for v in self.verdicts:
            out.append(v.title())
            out += ["    " + line for line in v.detail_lines()]
        return "\n".join(out)

    def html(self) -> str:
        if not self.verdicts:
            return "<p class='odin-muted'>No gate verdicts yet.</p>"
        items = []
        for v in self.verdicts:
            body = "".join(f"<li>{_e(line[2:])}</li>" for line in v.detail_lines())
            items.append(f"<details><summary>{v.html_title()}</summary><ul>{body}</ul></details>")
        return "".join(items)


# -- validation --------------------------------------------------------------------------


class ValidationDisplay(_Display):
    """``%odin validate`` and ``%%odin loop``: each file's errors and warnings at their lines."""

    def __init__(self, reports: Sequence[Any], saved_to: str | None = None, cell: bool = False):
        self.reports = list(reports)
        self.saved_to = saved_to
        self.cell = cell  # from a %%odin loop cell: say whether it was saved

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.reports)

    @staticmethod
    def _failed(r: Any) -> list[str]:
        """The report's errors, one line each; a file that could not be read is one (its message and hint)."""
        return [str(r.unreadable)] if r.unreadable is not None else [ValidationDisplay._diag(d) for d in r.errors]

    @staticmethod
    def _diag(d: Any) -> str:
        where = ""
        if getattr(d, "line", None):
            where = f"line {d.line}" + (f", column {d.column}" if getattr(d, "column", None) else "")
        field_ = getattr(d, "field", None)
        head = ": ".join(p for p in (where, f"{field_}" if field_ else "") if p)
        msg = d.message + (f" (fix: {d.fix})" if getattr(d, "fix", None) else "")
        return f"{head}: {msg}" if head else msg

    def _summary(self, r: Any) -> str:
        name = getattr(r, "path", None) or getattr(r, "source", None) or "loop"
        if r.unreadable is not None:
            return f"{name}: cannot be read"
        state = "OK" if not r.errors else f"{len(r.errors)} error(s)"
        if r.warnings:
            state += f", {len(r.warnings)} warning(s)"
        return f"{name}: {state}"

    def text(self) -> str:  # `odin validate`'s text
        out = [validation_text(self.reports)]
        if self.saved_to:
            out.append(f"saved to {self.saved_to}")
        elif self.cell:
            out.append("nothing saved: fix the errors and run the cell again")
        return "\n".join(out)

    def html(self) -> str:
        parts = []
        for r in self.reports:
            failed = self._failed(r)
            colour = "#2a7" if not failed else "#c33"
            parts.append(f"<div><b style='color:{colour}'>{_e(self._summary(r))}</b><ul>")
            parts += [f"<li style='color:#c33'>error: {_e(line)}</li>" for line in failed]
            parts += [f"<li style='color:#a60'>warning: {_e(self._diag(d))}</li>" for d in r.warnings]
            parts.append("</ul></div>")
        if self.saved_to:
            parts.append(f"<p>saved to <code>{_e(self.saved_to)}</code></p>")
        elif self.cell:
            parts.append("<p style='color:#c33'>nothing saved: fix the errors and run the cell again</p>")
        return "".join(parts)


# -- simulation ----------------------------------------------------------------------------


class SimulationDisplay(_Display):
    """``%odin simulate``: the path through the stages, the outcome and the loopbacks."""

    def __init__(self, result: dict):
        self.result = result

    def text(self) -> str:
        return render_simulation(self.result)  # the CLI's `odin simulate`, word for word

    def html(self) -> str:
        return f"<pre>{_e(self.text())}</pre>"


class MessageDisplay(_Display):
    """A one-line outcome (``approved``, ``stop requested``, ...), text and HTML alike."""

    def __init__(self, message: str):
        self.message = message

    def text(self) -> str:
        return self.message

    def html(self) -> str:
        return f"<p>{_e(self.message)}</p>"


class TextBlockDisplay(MessageDisplay):
    """Preformatted text (help, usage): its lines and columns kept in HTML too."""

    def html(self) -> str:
        return f"<pre>{_e(self.message)}</pre>"


class ReportDisplay:
    """A run's report.md: markdown (charts inlined as data URIs) in a notebook, its text in a terminal."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def text(self) -> str:
        return self.path.read_text(encoding="utf-8")

    def _repr_markdown_(self) -> str:
        import base64
        import re

        def inline(match: re.Match) -> str:
            image = self.path.parent / match.group(2)
            try:
                data = base64.b64encode(image.read_bytes()).decode("ascii")
            except OSError:
                return match.group(0)
            return f"![{match.group(1)}](data:image/png;base64,{data})"

        return re.sub(r"!\[([^\]]*)\]\(([^)\s]+\.png)\)", inline, self.text())

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(self.text())
