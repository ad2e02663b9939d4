"""The live run view and the approval panel (ipywidgets), plus a text view for terminals.

Everything here may be called from the background drive's thread: widgets
are updated through their traits and ``Output.append_*`` (never ``with out:``),
so nothing lands in whichever cell happens to be running. The views do not
drive runs themselves: buttons call the actions they are given (approve,
revise, stop), which the magics route to the background drive.
"""

from __future__ import annotations

import html
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from odin_magic.notebook.panels import AnswerPanel, ApprovalPanel, RunActions, close_tree  # noqa: F401 (AnswerPanel: here too)
from odin_magic.runs import evidence as gate_evidence
from odin_magic.notebook.background import Coalescer
from odin_magic.core.confine import describe, is_confined
from odin_magic.render.displays import (
    AWAITING, FAILED_MARK, LOOPED, NOT_STARTED, PASSED, StatusDisplay, VerdictRecord, VerdictsDisplay,
    command_line, html_mark, stage_checklist
)
from odin_magic.runs.events import EngineEvent
from odin_magic.render.text import BLOCKED as BLOCKED_MARK, cost_text, format_event
from odin_magic.loop.schema import Loop
from odin_magic.runs.state import HistoryEntry, RunState, Usage

PREVIEW_CHARS = 1500
MAX_OUTPUT_ENTRIES = 400
OUTPUT_INTERVAL = 0.25  # seconds: the worker output box is re-sent at most this often while a run drives
VERDICT_PAGE = 20  # verdicts per page of the verdicts section: a new verdict re-renders its page only
VERDICT_PAGES = 5  # pages the section keeps (the latest 100 verdicts); earlier ones are counted, not shown


def artifact_previews(state: RunState, project_dir: Path, stage_produces: Sequence[str] = ()) -> list[tuple[str, str]]:
    """(name, first characters) of each artifact the paused stage produced, read fresh from disk."""
    names = [n for n in stage_produces if n in state.artifacts] or list(stage_produces)
    previews = []
    for name in names:
        rel = state.artifacts.get(name, name)
        path = Path(rel) if Path(rel).is_absolute() else Path(project_dir) / rel
        if not is_confined(path, [project_dir]):
            text = f"(not shown: {describe(path, [project_dir], project_dir)})"  # never read through a link out
        elif path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file())[:20]
            text = "\n".join(str(p.relative_to(path)) for p in files) or "(empty directory)"
        elif path.is_file():
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                text = f"(cannot read: {exc})"
        else:
            text = "(missing)"
        if len(text) > PREVIEW_CHARS:
            text = text[:PREVIEW_CHARS] + f"\n… ({len(text) - PREVIEW_CHARS} more characters in {rel})"
        previews.append((name, text))
    return previews


def pause_key(state: RunState) -> tuple[str, str, int]:
    """Which pause ``state`` stands at: a view shows one panel per pause, and keeps it while the drive
    that announced the pause finishes (a click on it may already be on its way)."""
    return state.run_id, state.current_stage, state.log_seq



class VerdictPages:
    """The gate verdicts section of a run view, whose work per gate does not grow with the run.

    A verdict is appended to the page being filled (:data:`VERDICT_PAGE` per
    page): only that page is re-rendered and sent; a full page starts a new
    one, and the section keeps the latest :data:`VERDICT_PAGES` pages (the
    verdicts before them are counted; ``%odin status`` and the evidence files
    keep them all). A view opened on an existing run reads evidence files only
    when the section is opened, and only the latest pages' worth.
    """

    def __init__(self) -> None:
        import ipywidgets as w

        self._w = w
        self.count = 0  # the run's verdicts so far, shown or not
        self._pages: list[tuple[object, list[VerdictRecord]]] = []  # (HTML widget, its verdicts), oldest first
        self._deferred: tuple[Path, list[tuple[str, HistoryEntry]]] | None = None  # (run dir, [(stage, entry)]) unread
        self.note = w.HTML()
        self.pages = w.VBox([self.note])
        self.box = w.Accordion(children=[self.pages])
        self.box.selected_index = None
        self._title()
        self.box.observe(self._opened, names="selected_index")

    @property
    def records(self) -> list[VerdictRecord]:
        """The verdicts the section holds (the latest), oldest first."""
        return [v for _page, items in self._pages for v in items]

    @property
    def current_page(self):
        """The HTML widget of the page being filled (None before the first verdict)."""
        return self._pages[-1][0] if self._pages else None

    def add(self, verdict: VerdictRecord) -> None:
        self.count += 1
        self._append(verdict)
        self._title()

    def defer(self, run_dir: Path, history: Sequence) -> None:
        """An existing run's verdicts: counted now, read from their evidence files when the section opens."""
        latest: list[tuple[str, HistoryEntry]] = []
        total = 0
        for entry in reversed(history):
            if entry.evidence:
                total += 1
                if len(latest) < VERDICT_PAGE * VERDICT_PAGES:
                    latest.append((entry.stage, entry))
        latest.reverse()
        self._deferred = (run_dir, latest) if latest else None
        self.count += total
        self._title()
        if self.box.selected_index == 0:
            self._load_deferred()

    def latest_pass(self, stage: str) -> VerdictRecord | None:
        """The latest passing verdict of ``stage`` (for the approval panel): read from its evidence if need be."""
        found = next((v for v in reversed(self.records) if v.stage == stage and v.passed), None)
        if found is None and self._deferred is not None:
            run_dir, entries = self._deferred
            with gate_evidence.EvidenceReader(run_dir) as reader:
                for entry_stage, rel in reversed(entries):
                    if entry_stage == stage:
                        v = _read_verdict(reader, rel)
                        if v is not None and v.passed:
                            return v
        return found

    def _opened(self, change) -> None:
        if change["new"] == 0 and self._deferred is not None:
            self._load_deferred()

    def _load_deferred(self) -> None:
        run_dir, entries = self._deferred
        self._deferred = None
        live = self.records
        self._pages = []
        with gate_evidence.EvidenceReader(run_dir) as reader:  # the evidence file opened once for them all
            past = [v for v in (_read_verdict(reader, rel) for _stage, rel in entries) if v is not None]
        for v in past + live:
            self._append(v, render=False)
        for widget, items in self._pages:
            widget.value = VerdictsDisplay(items).html()
        self._note()

    def _append(self, verdict: VerdictRecord, render: bool = True) -> None:
        new_page = not self._pages or len(self._pages[-1][1]) >= VERDICT_PAGE
        if new_page:
            self._pages = (self._pages + [(self._w.HTML(), [])])[-VERDICT_PAGES:]
            self.pages.children = (self.note, *(widget for widget, _items in self._pages))
        widget, items = self._pages[-1]
        items.append(verdict)
        if render:
            widget.value = VerdictsDisplay(items).html()
            if new_page:  # a page was dropped, maybe: the count of those not shown changes only then
                self._note()

    def _note(self) -> None:
        hidden = self.count - sum(len(items) for _w, items in self._pages)
        self.note.value = "" if hidden <= 0 else (
            f"<p class='odin-muted'>{hidden} earlier gate verdict(s) not shown here: "
            "<code>%odin status</code> lists them; their evidence is in the run's <code>gates/</code></p>")

    def _title(self) -> None:
        self.box.set_title(0, f"gate verdicts ({self.count})")


def _read_verdict(reader: gate_evidence.EvidenceReader, entry: HistoryEntry) -> VerdictRecord | None:
    try:
        return VerdictRecord.from_evidence(reader.read_entry(entry))
    except (OSError, ValueError):  # EvidenceChanged too: a changed line is never shown as the gate's verdict
        return None  # missing or torn evidence: the history entry still shows in the checklist


@dataclass(frozen=True)
class ViewSources:
    """What a :class:`RunView` reads besides the run's state, each None when not known."""

    question: Callable[[RunState], str | None] | None = None  # the interview's waiting question, as text
    question_panel: Callable[[RunState], object | None] | None = None  # the interview's own panel, when installed
    run_dir_for: Callable[[str], Path] | None = None  # a run's directory (its gate evidence)
    diff: Callable[[RunState], object | None] | None = None  # the paused stage execution's StageDiff
    status: Callable[[RunState], StatusDisplay] | None = None  # the run's status, as %odin status shows it


class RunView:
    """The live view of one run: checklist, iterations, usage, worker output, verdicts, approval."""

    def __init__(self, loop: Loop | None, project_dir: Path, actions: RunActions, state: RunState | None = None,
                 state_source: Callable[[], RunState] | None = None, sources: ViewSources | None = None):
        """``state_source``: the live RunState, read when the run pauses; ``sources``: what else the view reads
        (none: no question, no diff, no earlier verdicts)."""
        import ipywidgets as w

        sources = sources or ViewSources()
        self.diff_source = sources.diff  # the paused stage's StageDiff, for the approval panel
        self.status_source = sources.status  # the run's StatusDisplay (the view's text, and its frozen form)
        self.frozen: dict | None = None  # the static bundle the display became (see freeze), None while live
        self.display_handle = None  # set by whoever displays the view (display_id=True), see _refresh_display
        self._sent_text: str | None = None  # the text/plain the display last got
        self.run_dir_for = sources.run_dir_for  # where a run's gate evidence lives (verdicts of a view opened later)
        self.question_panel_source = sources.question_panel  # the interview's own panel, when installed
        self.question_source = sources.question  # the interview's waiting question, as text
        self.answer_panel = None  # AnswerPanel, or the interview's QuestionPanel
        self._answer_pause: tuple | None = None  # the pause (pause_key) the answer panel is for
        self.state_source = state_source  # the live RunState, read when the run pauses
        self.loop = loop
        self.project_dir = Path(project_dir)
        self.actions = actions
        self.state = state
        self._lock = threading.RLock()
        self._marks: dict[str, str] = {}
        self._pending_verdict: dict | None = None
        self._question_text = ""  # the interview's last question event
        self._pending_commands: list[str] = []
        self.title = w.HTML()
        self.checklist = w.HTML()
        max_it = loop.max_iterations if loop else (state.max_iterations if state else 1)
        self.progress = w.IntProgress(value=0, min=0, max=max_it, description="iterations",
                                      bar_style="info", layout=w.Layout(width="60%"))
        self.progress_label = w.Label()
        self.usage = w.Label("tokens 0")  # the cost follows, worded as everywhere, with the first usage
        self.output = w.Output(layout=w.Layout(max_height="260px", overflow="auto", border="1px solid #ddd"))
        self._out: deque[tuple[str, str]] = deque()  # (stream name, text): what the Output widget shows
        self._out_trimmed = 0  # pieces dropped from the front
        self._out_sender = Coalescer(self._send_output, interval=OUTPUT_INTERVAL, name="odin-view-output")
        self.verdict_pages = VerdictPages()
        self.verdicts_box = self.verdict_pages.box
        self._verdicts_known = False  # the run's earlier verdicts are counted (read when the section opens)
        self.stop_button = w.Button(description="Stop", button_style="danger", icon="stop",
                                    tooltip="End the run after the current step; it stays resumable")
        self.stop_button.on_click(self._stop_clicked)
        self.status_line = w.HTML()
        self.approval_box = w.VBox()
        self.approval: ApprovalPanel | None = None
        self.widget = w.VBox([
            self.title, self.checklist, w.HBox([self.progress, self.progress_label]), self.usage,
            w.HTML("<b>worker output</b>"), self.output, self.verdicts_box, self.approval_box,
            w.HBox([self.stop_button, self.status_line]),
        ])
        self.widget.add_class("odin-run-view")
        if state is not None:
            self.show_state(state)

    # -- display -------------------------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs) -> dict:
        """The widget where widgets render; elsewhere (nbconvert, GitHub's viewer) the run's text status.
        A frozen view: its static bundle."""
        if self.frozen is not None:
            return dict(self.frozen)
        data = self.widget._repr_mimebundle_(**kwargs)
        data["text/plain"] = self._sent_text = self.text_status()
        return data

    def status_display(self) -> StatusDisplay | None:
        if self.state is None:
            return None
        if self.status_source is not None:
            return self.status_source(self.state)
        return StatusDisplay(self.state, self.loop)

    def text_status(self) -> str:
        shown = self.status_display()
        return "odin: the run is starting (%odin status shows it as text)" if shown is None else shown.text()

    def freeze(self, note: str = "") -> None:
        """The view becomes static: its display shows the run's status (HTML and text), and its widgets are
        closed. A view freezes when its run ends, or when a later cell's view takes over (:meth:`retire`)."""
        with self._lock:
            if self.frozen is not None:
                return
            self._send_output()
            shown = self.status_display()
            if shown is None:
                text = self.text_status()
                page = f"<p>{html.escape(text)}</p>"
            else:
                text, page = shown.text(), shown._repr_html_()
            if note:
                text, page = f"{text}\n({note})", f"<p style='color:#777'><i>{html.escape(note)}</i></p>{page}"
            self.frozen = {"text/plain": text, "text/html": page}
            if self.display_handle is not None:
                self.display_handle.update(self)
            close_tree(self.widget)
            for panel in (self.approval, self.answer_panel):  # not in the tree once taken down
                if panel is not None:
                    close_tree(panel.widget)
        self._out_sender.close()

    def _refresh_display(self) -> None:
        """Re-send the display (same widget) so that a saved notebook's text/plain is the latest status; only when
        that text changed: a front end draws the view anew on each update, and a click on a button of the view
        it replaces is lost."""
        if self.display_handle is None:
            return
        text = self.text_status()
        if text != self._sent_text:
            self._sent_text = text
            self.display_handle.update(self)

    def _stage_ids(self) -> list[str]:
        if self.loop is not None:
            return self.loop.stage_ids()
        return [r.stage for r in stage_checklist(self.state)] if self.state else []

    def _render_checklist(self) -> None:
        rows = []
        for sid in self._stage_ids():
            mark = self._marks.get(sid, NOT_STARTED)
            rows.append(f"<span style='margin-right:12px'>{html_mark(mark)} <code>{html.escape(sid)}</code></span>")
        self.checklist.value = "<div>" + "".join(rows) + "</div>"

    def _render_title(self) -> None:
        s = self.state
        if s is None:
            self.title.value = "<b>odin</b>: starting…"
            return
        self.title.value = (f"<b>{html.escape(s.loop)}</b> — {html.escape(s.task)}<br>"
                            f"<span style='color:#777'>run {html.escape(s.run_id)}"
                            f"{' (dry run)' if s.dry else ''} · status <b>{html.escape(s.status)}</b></span>")

    @property
    def verdicts(self) -> list[VerdictRecord]:
        """The verdicts the view holds (the latest pages), oldest first."""
        return self.verdict_pages.records

    @property
    def verdicts_html(self):
        """The page of verdicts being filled (an HTML widget)."""
        return self.verdict_pages.current_page

    def _load_verdicts(self, state: RunState) -> None:
        """A view opened on an existing run: its verdicts so far are counted; their evidence files are read
        when the verdicts section is opened (:meth:`VerdictPages.defer`)."""
        if self._verdicts_known or self.verdict_pages.count or self.run_dir_for is None:
            return
        self._verdicts_known = True
        self.verdict_pages.defer(self.run_dir_for(state.run_id), state.history)

    def show_state(self, state: RunState) -> None:
        """Redraw everything from a RunState (at start, and after each drive call)."""
        with self._lock:
            if self.frozen is not None:
                return
            self._send_output()  # what the drive wrote, all of it, before the pause or the end shows
            self._load_verdicts(state)
            self.state = state
            self._marks = {row.stage: row.mark for row in stage_checklist(state, self.loop)}
            self._render_title()
            self._render_checklist()
            self._set_iterations(state.total_iterations, state.max_iterations)
            self._show_usage(state.usage.total)
            done = not state.active  # done, failed or abandoned
            if not done:  # an ended run's view freezes (below): one update
                self._refresh_display()  # before a panel appears: a redraw after it could swallow a click on it
            waiting = state.status in ("awaiting_approval", "awaiting_answer")
            self.stop_button.disabled = done or waiting
            self.stop_button.layout.display = "none" if done or waiting else None  # the panel has its own
            if state.status == "awaiting_approval":
                self._show_approval(state)
            elif state.status == "awaiting_answer":
                if self.answer_panel is None or self._answer_pause != pause_key(state):  # else: this question's panel
                    panel = self.question_panel_source(state) if self.question_panel_source else None
                    if panel is None:  # no interview widget installed: a plain answer box
                        question = (self.question_source(state) if self.question_source else None) \
                            or self._question_text
                        panel = AnswerPanel(state.current_stage, question or "", self.actions)
                    self.answer_panel, self._answer_pause = panel, pause_key(state)
                    self.approval = None
                    self._set_panel(panel.widget)
                self.status_line.value = ""  # not "working on …": the run waits for the answer
            elif self.approval is not None or self.answer_panel is not None:
                self._set_panel()
                self.approval = None
                self.answer_panel = None
            if state.status == "blocked" and state.blocked is not None:
                self.status_line.value = (f"<b>run blocked</b> ({html.escape(state.blocked.kind)}): "
                                          f"{html.escape(state.blocked.reason)}. To do: {html.escape(state.blocked.fix)}")
            if done:
                reason = f": {state.failure_reason}" if state.failure_reason else ""
                self.status_line.value = f"<b>run {html.escape(state.status)}</b>{html.escape(reason)}"
            if done:
                self.freeze()  # the display becomes the run's final status

    def _show_usage(self, total: Usage) -> None:
        self.usage.value = f"tokens {total.total_tokens:,}, cost {cost_text(total)}"

    def _set_iterations(self, used: int, cap: int) -> None:
        self.progress.max = max(cap, 1)
        self.progress.value = min(used, self.progress.max)
        self.progress.bar_style = "danger" if used > cap * 0.8 else "info"
        self.progress_label.value = f"{used} / {cap} loopbacks"

    def _show_approval(self, state: RunState) -> None:
        if self.approval is not None and self.approval.pause == pause_key(state):
            return  # this pause's panel is up (maybe clicked while the drive finished announcing it)
        produces: Sequence[str] = ()
        if self.loop is not None:
            try:
                produces = self.loop.stage(state.current_stage).produces
            except KeyError:
                produces = ()
        verdict = self.verdict_pages.latest_pass(state.current_stage)
        diff = self.diff_source(state) if self.diff_source is not None else None
        self.approval = ApprovalPanel(state.current_stage, artifact_previews(state, self.project_dir, produces),
                                      verdict, self.actions, diff=diff)
        self.approval.pause = pause_key(state)
        self._set_panel(self.approval.widget)
        self.status_line.value = ""

    def _stop_clicked(self, _button) -> None:
        self.stop_button.disabled = True
        self.status_line.value = "stop requested: the run ends after the current step (resumable)"
        self.actions.stop()

    # -- live events (background thread) -----------------------------------------------

    def handle_event(self, event: EngineEvent) -> None:
        with self._lock:
            kind, stage = event.kind, event.stage
            if kind == "stage_started" and stage:
                self._stage_started(stage)
            elif kind == "worker":
                text = event.text if event.text.endswith("\n") else event.text + "\n"
                self._append("stdout", text)
            elif kind == "gate_command":
                line = command_line(event.text, event.data.get("exit_code"), event.data.get("timed_out"))
                self._pending_commands.append(line)
                self._append("stdout", f"$ {line}\n")
            elif kind == "gate_verdict":
                self._pending_verdict = dict(event.data)
            elif kind in ("gate_passed", "gate_failed") and stage:
                self._gate_decided(stage, kind == "gate_passed", event)
            elif kind in ("paused", "awaiting_answer", "question") and stage:
                if kind == "question":
                    self._question_text = event.text
                self._marks[stage] = AWAITING
                if self.state_source is not None:
                    self.show_state(self.state_source())  # the approval panel appears now
            elif kind == "failed":
                if stage:
                    self._marks[stage] = FAILED_MARK
                self.status_line.value = f"<b>run failed</b>: {html.escape(event.text)}"
            elif kind == "stopped":
                self.status_line.value = "stopped after the current step; %odin run resumes it"
            elif kind in ("reverted", "forked"):
                self.status_line.value = html.escape(event.text)
            elif kind == "blocked":
                if stage:
                    self._marks[stage] = BLOCKED_MARK
                self.status_line.value = f"<b>run blocked</b>: {html.escape(event.text)}"
            elif kind == "done":
                self.status_line.value = f"<b>{html.escape(event.text or 'run done')}</b> {html_mark(PASSED)}"
            elif kind == "usage":
                total = event.data.get("total")
                if isinstance(total, dict):
                    self._show_usage(Usage.model_validate(total))
            elif kind == "notice":
                self._append("stdout", f"note: {event.text}\n")
            self._render_checklist()

    def _set_panel(self, *widgets) -> None:
        """Show ``widgets`` in the panel's place; the panel taken down is closed (its state is not kept)."""
        old = self.approval_box.children
        self.approval_box.children = widgets
        for widget in old:
            if widget not in widgets:
                close_tree(widget)

    def _stage_started(self, stage: str) -> None:
        self._marks[stage] = LOOPED
        self.status_line.value = f"working on <code>{html.escape(stage)}</code>…"
        self.stop_button.disabled = False
        self.stop_button.layout.display = None
        if self.approval is not None:
            self._set_panel()
            self.approval = None
        self._append("stdout", f"── {stage} ──\n")

    def _gate_decided(self, stage: str, passed: bool, event: EngineEvent) -> None:
        """A gate passed or failed: its verdict (with the commands it ran and what changed) joins the verdicts."""
        data = dict(self._pending_verdict or {})
        if not passed and event.text:
            data.setdefault("reasons", [])
            if event.text not in data["reasons"]:
                data["reasons"] = [event.text] + list(data["reasons"])
        data["commands"] = list(self._pending_commands)
        data["changes"] = list(event.data.get("changes") or [])
        self.verdict_pages.add(VerdictRecord.from_event_data(stage, passed, data))
        self._verdicts_known = True  # a live view: the run's verdicts arrive as events
        self._pending_verdict, self._pending_commands = None, []
        self._marks[stage] = PASSED if passed else LOOPED
        if not passed:
            self._append("stdout", f"✗ gate failed: {event.text}\n")
            self._set_iterations(self.progress.value + 1, self.progress.max)  # each failure is one loopback

    def show_error(self, message: str) -> None:
        with self._lock:
            self.status_line.value = f"<span style='color:#c33'>{html.escape(message)}</span>"
            self._send_output()

    def append_stderr(self, text: str) -> None:
        self._append("stderr", text)
        self._send_output()

    def _append(self, name: str, text: str) -> None:
        """Add to the run's worker output: kept here (the latest MAX_OUTPUT_ENTRIES pieces) and sent to the
        Output widget at most every OUTPUT_INTERVAL seconds, off the caller's thread (each send carries the
        whole box, so a run's many small pieces are sent a few times a second, not one by one)."""
        with self._lock:
            if len(self._out) >= MAX_OUTPUT_ENTRIES:
                self._out.popleft()
                self._out_trimmed += 1
            self._out.append((name, text))
        self._out_sender.request()

    def _send_output(self) -> None:
        """Put the kept output into the Output widget: consecutive pieces of a stream in one entry."""
        with self._lock:
            entries: list[dict] = []
            if self._out_trimmed:
                entries.append({"output_type": "stream", "name": "stdout", "text":
                                f"… {self._out_trimmed} earlier pieces trimmed "
                                "(the run's events.jsonl and evidence keep everything)\n"})
            for name, text in self._out:
                if len(entries) > (1 if self._out_trimmed else 0) and entries[-1]["name"] == name:
                    entries[-1]["text"] += text
                else:
                    entries.append({"output_type": "stream", "name": name, "text": text})
            if tuple(entries) != self.output.outputs:
                self.output.outputs = tuple(entries)

    def retire(self) -> None:
        """A newer view took over (a later cell): stop offering buttons here, and freeze."""
        with self._lock:
            self.stop_button.disabled = True
            if self.approval is not None:
                for b in self.approval.buttons:
                    b.disabled = True
                self.approval.feedback.disabled = True
            for b in getattr(self.answer_panel, "buttons", []):
                b.disabled = True
            self.status_line.value = "<span style='color:#777'>continued in a later cell</span>"
        self.freeze("continued in a later cell")


class TextRunView:
    """Where there is no widget front end: one line per event (the CLI's lines), printed as it happens."""

    def __init__(self, write: Callable[[str], None] | None = None):
        self.write = write or (lambda line: print(line, flush=True))

    def handle_event(self, event: EngineEvent) -> None:
        line = format_event(event)
        if line is not None:
            self.write(line)

    def show_state(self, state: RunState) -> None:  # the text view prints events only
        pass

    def show_error(self, message: str) -> None:
        self.write(f"odin: {message}")
