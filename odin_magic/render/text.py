"""Text renderings of runs, shared by the CLI and the notebook front end.

``render_status`` is seed 000's ``status``: loop, task, current stage, status,
iteration counts, and the stages as a checklist (✅ passed / 🔄 looped /
⏸ awaiting / ⬜ not started), plus the interview convergence when present
and the question a deep interview waits on (given by the caller: reading it
needs the run dir).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from odin_magic.interview.limits import EARLY_EXIT_FROM_ROUND

if TYPE_CHECKING:  # annotations only: front ends load this module cheaply
    from odin_magic.runs.events import EngineEvent
    from odin_magic.loop.schema import Loop
    from odin_magic.runs.state import HistoryEntry, InterviewSummary, Revert, RunState, Usage

PASSED, LOOPED, AWAITING, NOT_STARTED, BLOCKED, REVERTED = "✅", "🔄", "⏸", "⬜", "⛔", "↶"
STATUS_MARK = {"running": "▶", "awaiting_approval": "⏸", "awaiting_answer": "⏸", "blocked": "⛔",
               "done": "✅", "failed": "❌", "abandoned": "✖"}
READY = "▷"  # running, but nothing drives it now


def stage_marks(state: RunState, loop: Loop | None = None) -> list[tuple[str, str, str]]:
    """(mark, stage id, note) for every stage, in loop order (history order without the loop)."""
    ids = loop.stage_ids() if loop else list(dict.fromkeys(e.stage for e in state.history))
    last: dict[str, tuple[str, str]] = {}
    for e in state.history:
        last[e.stage] = (e.result, e.gate)
    out = []
    for sid in ids:
        loops = state.iterations.get(sid, 0)
        note = f"looped {loops}×" if loops else ""
        result, gate = last.get(sid, (None, None))
        if state.status in ("awaiting_approval", "awaiting_answer") and sid == state.current_stage:
            mark = AWAITING
            waiting = "awaiting approval" if state.status == "awaiting_approval" else "awaiting your answer"
            note = _join_notes(waiting, note)
        elif state.status == "blocked" and state.blocked is not None and sid == state.blocked.stage:
            mark = BLOCKED
            note = _join_notes(f"blocked ({state.blocked.kind})", note)
        elif result == "pass" and gate == "ai-pending":  # passed its gate, never approved (e.g. abandoned there)
            mark = AWAITING
            note = _join_notes("passed its gate, not approved", note)
        elif result == "pass":
            mark = PASSED
        elif result == "fail":
            mark = LOOPED
        else:
            mark = NOT_STARTED
            if state.active and sid == state.current_stage:
                note = _join_notes("next", note)
            elif state.status == "done":  # a step skipped past it
                note = _join_notes("never ran", note)
        out.append((mark, sid, note))
    return out


def _join_notes(first: str, rest: str) -> str:
    return first + (f", {rest}" if rest else "")


def one_line(text: str) -> str:
    """``text`` on one line: runs of whitespace (newlines included) become one space."""
    return " ".join(text.split())


def threshold_standing(iv: InterviewSummary) -> Literal["above", "early", "below", "accepted"]:
    """Where an interview's ambiguity stands against its threshold. ``early``: below it, but before the
    round from which the interview may stop, so it still asks (the stop condition needs more than the number).
    ``accepted``: above it, and the user accepted that (``proceed``)."""
    if iv.ambiguity > iv.threshold and iv.accepted:
        return "accepted"
    if iv.ambiguity > iv.threshold:
        return "above"
    return "early" if iv.rounds < EARLY_EXIT_FROM_ROUND else "below"


def money(value: float) -> str:
    return f"${value:.4f}" if value < 1 else f"${value:.2f}"


def cost_text(usage: Usage, short: bool = False) -> str:
    """The cost of ``usage``: money spent, or, for what the offline scripted model answered, an estimate
    of what it would have cost on Claude (``≈ $0.25 if run on Claude; nothing spent``)."""
    offline = usage.offline_usd
    spent = max(usage.cost_usd - offline, 0.0)
    if offline <= 0:
        return money(usage.cost_usd)
    estimate = f"≈ ${offline:.2f}" if offline >= 0.01 else "≈ <$0.01"
    if spent < 5e-7:
        return f"{estimate} offline" if short else f"{estimate} if run on Claude; nothing spent"
    return f"{money(spent)} + {estimate} offline" if short else \
        f"{money(spent)} spent, plus {estimate} if the offline part had run on Claude"


def render_status(state: RunState, loop: Loop | None = None, history_tail: int = 10,
                  question: str | None = None, criteria: list[str] | None = None, driven: bool = True) -> str:
    """``question``: the waiting interview question as text (see ``interview.runner.waiting_question``);
    ``criteria``: the last checks before done, one line each (``completion.CompletionReport.lines``);
    ``driven``: whether a process drives the run now (a running run that nothing drives is ready)."""
    lines = [
        f"run      {state.run_id}" + ("  (dry run)" if state.dry is not None else ""),
        f"loop     {state.loop}",
        f"task     {state.task}",
        f"status   {status_text(state, driven)}",
        f"stage    {state.current_stage}",
        f"loops    {state.total_iterations}/{state.max_iterations}"
        + ("  (" + ", ".join(f"{k} {v}" for k, v in state.iterations.items()) + ")" if state.iterations else ""),
    ]
    if state.failure_reason:
        lines.append(f"reason   {state.failure_reason}")
    if state.concerns:
        shown = state.concerns[-10:]
        lines.append("concerns " + ("" if len(shown) == len(state.concerns) else f"(last {len(shown)} of {len(state.concerns)}) ")
                     + "; ".join(f"{c.stage}: {c.text}" for c in shown))
    if state.status == "blocked" and state.blocked is not None:
        lines.append(f"blocked  {state.blocked.kind} at {state.blocked.stage}: {state.blocked.reason}")
        lines.append(f"to do    {blocked_fix(state)}")
    total = state.usage.total
    if total.total_tokens or total.cost_usd:
        lines.append(f"usage    {total.total_tokens} tokens, {cost_text(total)}")
    if state.interview is not None:
        iv = state.interview
        against = {
            "above": "not yet",
            "early": f"below threshold; the interview may stop from round {EARLY_EXIT_FROM_ROUND}",
            "below": "below threshold",
            "accepted": "above threshold, accepted by the user",
        }[threshold_standing(iv)]
        lines.append(
            f"interview round {iv.rounds}, ambiguity {iv.ambiguity:.2f} vs threshold {iv.threshold:.2f} ({against})"
        )
        if iv.topology:
            lines.append("         topology: " + ", ".join(iv.topology))
    lines.append("")
    for mark, sid, note in stage_marks(state, loop):
        lines.append(f"  {mark} {sid}" + (f"  — {note}" if note else ""))
    if state.history:
        lines.append("")
        lines += history_lines(state, history_tail)
    if criteria:
        lines += ["", "before done (acceptance criteria, regression suite)"] + [f"  {c}" for c in criteria]
    if question:
        lines += ["", f"{AWAITING} waiting for your answer:", question]
    return "\n".join(lines)


def continues(state: RunState, odin: str = "odin") -> str:
    """The command that continues the run: ``odin roadmap run`` for a roadmap phase's run (the driver goes on
    with it and decides the phase, docs/roadmap.md), else ``odin run``."""
    from odin_magic.runs.roadmap_progress import phase_of_task  # a phase's runs are found by their task

    return f"{odin} roadmap run" if phase_of_task(state.task) else f"{odin} run"


def blocked_fix(state: RunState) -> str:
    """The blocked run's fix, its "`odin run`" said as the command that continues it (a roadmap phase's run:
    ``odin roadmap run``; the engine wrote the fix without knowing)."""
    fix = state.blocked.fix if state.blocked is not None else ""
    return fix.replace("`odin run`", f"`{continues(state)}`")


def next_hint(state: RunState, odin: str = "odin") -> str:
    """What the user can do next with the run, in the commands of the front end (``odin``: the CLI's, ``%odin``:
    the notebook's); empty for a run that ended."""
    if state.status == "awaiting_approval":
        return f"{state.current_stage} passed its gate and waits for you: {odin} approve, or {odin} revise \"feedback\"."
    if state.status == "awaiting_answer":
        return f"{state.current_stage} asks you a question: {odin} answer \"your answer\"."
    if state.status == "blocked" and state.blocked is not None:
        b = state.blocked
        return (f"{b.stage} is blocked ({b.kind}): {b.reason}. To do: {blocked_fix(state)} "
                f"({continues(state, odin)} continues it).")
    if state.status == "running":
        stop = ", %odin stop ends it after the current step" if odin == "%odin" else ""
        return f"Running (or stopped mid-run): {continues(state, odin)} continues it{stop}."
    return ""


def status_text(state: RunState, driven: bool = True, mark: bool = True) -> str:
    """``▶ running`` (``mark`` False: ``running``); a running run that no process drives (after a stop, a fork
    or a revert) is ready."""
    if status_word(state, driven) == "ready":
        words, sign = f"ready: nothing drives it now; `{continues(state)}` continues it", READY
    else:
        words, sign = state.status, STATUS_MARK.get(state.status, "")
    return f"{sign} {words}" if mark and sign else words


def status_word(state: RunState, driven: bool = True) -> str:
    """The run's status in one word: ``ready`` for a running run that nothing drives now."""
    return "ready" if state.status == "running" and not driven else state.status


def history_heading(state: RunState, tail: int = 10) -> str:
    """``history (12 entries, last 10; …)``: how many there are, and how to see them all when shortened."""
    shown = min(tail, len(state.history)) if tail else len(state.history)
    skipped = len(state.history) - shown
    return f"history ({len(state.history)} entries" + (
        f", last {shown}; `odin status --history` shows all" if skipped else "") + ")"


def history_rows(state: RunState, tail: int = 10) -> list[tuple[str, str]]:
    """The last ``tail`` history entries (all of them: ``tail`` 0), numbered, with the reverts where they
    happened: (mark, the rest of the line) each, for the text and the HTML views."""
    skipped = len(state.history) - (min(tail, len(state.history)) if tail else len(state.history))
    return [_history_row(n, item) for n, item in history_with_reverts(state, start=skipped)]


def history_lines(state: RunState, tail: int = 10) -> list[str]:
    """The history's heading and its rows as text lines."""
    return [history_heading(state, tail)] + [f"  {mark} {rest}" for mark, rest in history_rows(state, tail)]


def history_with_reverts(state: RunState, start: int = 0) -> list[tuple[int, HistoryEntry | Revert]]:
    """The history from entry ``start`` on, each entry with its number (1-based, the execution number of
    ``odin diff`` and ``odin revert``), and the run's reverts where they happened (numbered 0); a revert
    right before entry ``start + 1`` is included."""
    reverts = sorted(state.reverts or (), key=lambda r: r.point)
    out: list[tuple[int, HistoryEntry | Revert]] = []
    k = 0
    while k < len(reverts) and reverts[k].point < start:
        k += 1
    for n in range(start + 1, len(state.history) + 1):
        while k < len(reverts) and reverts[k].point < n:
            out.append((0, reverts[k]))
            k += 1
        out.append((n, state.history[n - 1]))
    out += [(0, r) for r in reverts[k:]]
    return out


def _history_row(n: int, item: HistoryEntry | Revert) -> tuple[str, str]:
    if not n:  # a revert
        return REVERTED, f"{item.at}  {item.reason}; the run continues from {item.stage}"
    e = item
    mark = (PASSED if e.gate != "ai-pending" else AWAITING) if e.result == "pass" else LOOPED
    extra = f" [{e.agent}]" if e.agent else ""
    why = f" — {e.reason}" if e.reason else ""
    if e.failure and e.failure != "recoverable":
        why += f" [{e.failure}]"
    return mark, f"#{n} {e.at}  {e.stage} {e.result} ({e.gate}){extra}{why}"


def render_simulation(result: dict) -> str:
    """``odin simulate``'s summary: the path, the outcome and the loopbacks (``loopbacks 1 (test 1)``)."""
    iterations = result.get("iterations") or {}
    failure = result.get("failure_reason")
    return "\n".join([
        "path       " + " → ".join(result.get("path", [])),
        f"status     {result.get('status')}" + (f" ({failure})" if failure else ""),
        f"loopbacks  {result.get('total_iterations', 0)}"
        + ("  (" + ", ".join(f"{k} {v}" for k, v in iterations.items()) + ")" if iterations else ""),
    ])


def render_runs(states: list[RunState], damaged: list | None = None, idle: frozenset[str] = frozenset()) -> str:
    """The runs table; ``damaged``: ``(run_id, RunCorrupt)`` of the runs that cannot be read, listed too;
    ``idle``: the running runs that nothing drives now (shown as ready, as status shows them)."""
    damaged = list(damaged or [])
    if not states and not damaged:
        return "no runs yet — start one with `odin run LOOP --task TEXT`"
    rows = [("", "run", "status", "stage", "loops", "task")]
    for run_id, exc in reversed(damaged):  # newest first, as the readable runs
        known = exc.last_known
        blocks = exc.may_be_active
        rows.append((
            "!" if blocks else "",
            run_id,
            "damaged" + (" (abandoned)" if exc.abandoned else ""),
            known.current_stage if known else "?",
            f"{known.total_iterations}/{known.max_iterations}" if known else "?",
            _cut(one_line(known.task), 50) if known else "?",
        ))
    for s in states:
        rows.append((
            "*" if s.active else "",
            s.run_id + (" (dry)" if s.dry is not None else ""),
            status_word(s, driven=s.run_id not in idle),
            s.current_stage,
            f"{s.total_iterations}/{s.max_iterations}",
            _cut(one_line(s.task), 50),
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    table = "\n".join(
        ("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r[:5])) + "  " + r[5]).rstrip() for r in rows
    )
    if any(s.active for s in states):
        table += "\n\n* the active run (a project has at most one)"
    if any(exc.may_be_active for _, exc in damaged):
        table += ("\n\n! a damaged run that may still be active: it blocks a new run until you give it up "
                  "(`odin abandon`) or move its directory away")
    return table


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def format_event(event: EngineEvent) -> str | None:
    """One line for a live view, or None for events not worth a line."""
    k, st, text = event.kind, event.stage, event.text
    if k == "run_started":
        return f"▶ run {event.run_id} started ({text})"
    if k == "stage_started":
        agent = event.data.get("agent")
        how = f" [{agent}]" if agent and agent != "inline" else ""
        step = " (step)" if event.data.get("step") else ""
        return f"▶ {st}{how}{step}"
    if k == "worker":
        return f"    {event.data.get('kind', 'text')}: {text}"
    if k == "gate_command":
        d = event.data
        result = "timed out" if d.get("timed_out") else f"exit {d.get('exit_code')}"
        return f"    $ {text}  → {result} ({d.get('duration_s', 0):.1f}s)"
    if k == "gate_passed":
        return f"  {PASSED} {st} gate passed ({text})"
    if k == "gate_failed":
        if not event.data.get("loops_back", True):  # the run failed or is blocked: the next line says so
            return f"  {LOOPED} {st} gate failed: {text}"
        return f"  {LOOPED} {st} gate failed: {text} → {event.data.get('next_stage')}"
    if k == "paused":
        return text
    if k == "approved":
        return f"  {PASSED} {text}"
    if k == "revised":
        return f"↻ {st}: revising with feedback: {text}"
    if k == "stopped":
        return f"■ {text}"
    if k == "done":
        return f"✅ {text}"
    if k == "failed":
        return f"❌ run failed: {text}"
    if k == "abandoned":
        return f"✖ {text}"
    if k == "reopened":
        return f"↺ {text}"
    if k == "notice":
        return f"note: {text}"
    if k == "delivered":
        return f"📦 {text}"
    if k == "question":
        return text
    if k == "awaiting_answer":
        return f"{AWAITING} {text}"
    if k == "blocked":
        return f"⛔ {text}"
    if k in ("reverted", "forked"):
        return f"{REVERTED} {text}"
    if k == "unblocked":
        return f"▶ {text}"
    if k == "completion":  # the checks before done: a line per criterion and the suite
        return "  before done:\n" + "\n".join(f"    {line}" for line in text.splitlines())
    return None
