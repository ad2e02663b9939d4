"""A report for every run: ``report.md`` and ``report.ipynb`` in the run dir, written when the run ends.

When a run ends — done, failed, abandoned, or blocked (waiting for a person) —
the engine writes both files from what the run recorded:

* the task, the loop and its version, the status and why;
* the path through the stages, every loopback with its reason and class;
* the acceptance criteria with their evidence, and the regression suite
  (from the last completion check: :mod:`odin_magic.engine.completion`);
* the kill ratios of gates proven by mutation (:mod:`odin_magic.engine.mutation`);
* time, tokens and cost per stage;
* the files each stage changed, where its evidence lists them;
* the deep interview's convergence;
* charts (interview convergence; loopbacks, tokens and cost per stage) as PNG
  files beside the report and as attachments of the notebook's markdown cells,
  so they survive export and need no kernel to show.

``report.ipynb`` is valid nbformat; its one code cell (standard library only, so nbclient runs it)
reads the run's state.json wherever it finds it — in the kernel's directory, beside the notebook when
Jupyter or VS Code says where that is, or in the run dir as it was when the report was written —
and, from any other directory, shows the snapshot of the state embedded in it. Every section is redacted of the
configured secrets before it is escaped into either file (:mod:`odin_magic.core.secrets`).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from odin_magic.runs import evidence as gate_evidence
from odin_magic.runs.errors import RunCorrupt
from odin_magic.runs.log import LOG_NAME, iter_log
from odin_magic.runs.records import Notice
from odin_magic.loop.schema import Loop
from odin_magic.runs.state import HistoryEntry, RunState, Usage
from odin_magic.render.metric_text import metric_lines
from odin_magic.render.text import blocked_fix, cost_text, history_with_reverts
from odin_magic.runs.metric_history import series_of
from odin_magic.core.secrets import redact_text
from odin_magic.core.atomic import write_atomic

REPORT_MD = "report.md"
REPORT_NB = "report.ipynb"
CHART_DIR = "report"
END_STATUSES = ("done", "failed", "abandoned", "blocked")


@dataclass
class _Gathered:
    evidence: list[dict] = field(default_factory=list)  # per history entry, {} when unreadable
    completion: dict | None = None
    mutations: list[tuple[str, dict]] = field(default_factory=list)
    interview: Any = None  # InterviewState, when the run had a deep interview
    unsandboxed: str | None = None  # the run-start warning that the run is unsandboxed (engine/sandboxing.py)
    delivery: str | None = None  # what the loop's `deliver:` did at done (engine/run_end.py), its first line
    metrics: list = field(default_factory=list)  # the metric gates' series (runs.metric_history.MetricSeries)
    changed: list[str] = field(default_factory=list)  # the evidence lines changed after they were written


def _read_evidence(reader: gate_evidence.EvidenceReader, entry: HistoryEntry, g: _Gathered) -> dict:
    try:
        return reader.read_entry(entry)
    except gate_evidence.EvidenceChanged:  # never forged content shown as real
        g.changed.append(f"{entry.stage} ({entry.evidence})")
        return {}
    except (OSError, ValueError):
        return {}


def _unsandboxed(run_dir: Path, first: int = 20) -> str | None:
    """The run-start notice that the run is unsandboxed, among the log's first records (it follows run start)."""
    try:
        for i, record in enumerate(iter_log(run_dir / LOG_NAME)):
            if isinstance(record, Notice) and record.get("about") == "sandbox":  # engine/sandboxing.SANDBOX_NOTICE
                return record.text
            if i >= first:
                break
    except (OSError, RunCorrupt):
        return None
    return None


def _delivery(run_dir: Path) -> str | None:
    """The last delivery notice of the log (engine/run_end.DELIVERY_NOTICE): what `deliver:` did at done."""
    found = None
    try:
        for record in iter_log(run_dir / LOG_NAME):
            if isinstance(record, Notice) and record.get("about") == "delivery":
                found = record.text.splitlines()[0] if record.text else None
    except (OSError, RunCorrupt):
        return found
    return found


def _gather(state: RunState, run_dir: Path, loop: Loop | None = None) -> _Gathered:
    g = _Gathered(unsandboxed=_unsandboxed(run_dir))
    if state.status == "done" and getattr(loop, "deliver", "off") != "off":
        g.delivery = _delivery(run_dir)
    with gate_evidence.EvidenceReader(run_dir) as reader:  # the evidence file opened once for the whole history
        for entry in state.history:
            ev = _read_evidence(reader, entry, g) if entry.evidence else {}
            g.evidence.append(ev)
            if ev.get("completion"):
                g.completion = ev["completion"]
            if ev.get("mutation"):
                g.mutations.append((entry.stage, ev["mutation"]))
    g.metrics = series_of([e.stage for e in state.history], _once(state, g.evidence))
    path = run_dir / "interview.json"
    if path.is_file():
        try:
            from odin_magic.interview.models import InterviewState

            g.interview = InterviewState.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            g.interview = None
    return g


def _once(state: RunState, evidence: list[dict]) -> list[dict]:
    """Each evaluation's evidence once: an approval names its gate's evidence again (not a second measurement)."""
    seen: set[str] = set()
    out = []
    for entry, ev in zip(state.history, evidence):
        out.append({} if entry.evidence in seen else ev)
        if entry.evidence:
            seen.add(entry.evidence)
    return out


def _duration(start: str, end: str | None) -> str:
    try:
        a = datetime.fromisoformat(start)
        b = datetime.fromisoformat(end) if end else a
    except ValueError:
        return "?"
    seconds = max(0, int((b - a).total_seconds()))
    return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m {seconds % 60:02d}s" if seconds >= 3600 else \
        f"{seconds // 60}m {seconds % 60:02d}s"


def _cell(text: Any) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


def _stage_times(state: RunState) -> dict[str, float]:
    """Seconds per stage: from the previous record's time to the stage's gate (pauses included)."""
    out: dict[str, float] = {}
    previous = state.started_at
    for e in state.history:
        try:
            seconds = (datetime.fromisoformat(e.at) - datetime.fromisoformat(previous)).total_seconds()
        except ValueError:
            seconds = 0.0
        if e.gate != "approved":
            out[e.stage] = out.get(e.stage, 0.0) + max(0.0, seconds)
        previous = e.at
    return out


def sections(state: RunState, loop: Loop | None, g: _Gathered) -> list[tuple[str, str]]:
    """The report as (title, markdown) sections, in order."""
    version = f" v{loop.version}" if loop is not None and loop.version is not None else ""
    head = [f"- **task**: {state.task.strip()}",
            f"- **loop**: {state.loop}{version}" + (" (dry run)" if state.dry is not None else ""),
            f"- **status**: {state.status}",
            f"- **started**: {state.started_at}" + (f", **ended**: {state.ended_at}" if state.ended_at else ""),
            f"- **duration**: {_duration(state.started_at, state.ended_at)}",
            f"- **loopbacks**: {state.total_iterations}/{state.max_iterations}"]
    if g.unsandboxed:
        head.append(f"- **sandbox**: {g.unsandboxed}")
    if g.delivery:
        head.append(f"- **delivery**: {g.delivery}")
    if g.changed:
        head.append(f"- **evidence**: {gate_evidence.CHANGED}, not shown: " + ", ".join(g.changed))
    if state.failure_reason:
        head.append(f"- **why it failed**: {state.failure_reason}")
    if state.status == "blocked" and state.blocked is not None:
        head.append(f"- **blocked** ({state.blocked.kind}) at {state.blocked.stage}: {state.blocked.reason}")
        head.append(f"- **to do**: {blocked_fix(state)}")
    out = [("Summary", "\n".join(head))]

    out.append(("Path through the stages", _path(state)))

    out.append(("Acceptance criteria", _acceptance(g.completion)))
    out.append(("Gates proven able to fail", _mutations(g.mutations)))

    out.append(("Time, tokens and cost per stage", _costs(state, loop)))

    out.append(("Files changed per stage", _changes(state, g)))
    out.append(("Interview convergence", _interview(state, g)))
    if g.metrics:
        out.append(("Metrics", _metrics(g.metrics)))
    return out


def _metrics(series: list) -> str:
    """The metric gates' figures over the run, a line each (the chart: report/metric.png)."""
    lines = [f"- {line}" for line in metric_lines(series)]
    return "\n".join(["The first baseline, then the figure at each evaluation of the gate:", ""] + lines)


def _money_cell(usage: Usage | None) -> str:
    """A cost cell: USD spent, or ``≈ 0.0123 offline`` for what the offline scripted model answered."""
    if usage is None:
        return f"{0:.4f}"
    if usage.offline_usd <= 0:
        return f"{usage.cost_usd:.4f}"
    spent = max(usage.cost_usd - usage.offline_usd, 0.0)
    return (f"{spent:.4f} + " if spent >= 5e-7 else "") + f"≈ {usage.offline_usd:.4f} offline"


def _costs(state: RunState, loop: Loop | None) -> str:
    """Time, tokens and cost per stage; an offline run's cost is an estimate and says so (as ``status`` does)."""
    times = _stage_times(state)
    ids = list(loop.stage_ids()) if loop is not None else list(dict.fromkeys(e.stage for e in state.history))
    ids += [s for s in state.usage.by_stage if s not in ids]
    total = state.usage.total
    offline = total.offline_usd > 0
    header = "cost (USD; ≈ an estimate where offline)" if offline else "cost (USD)"
    cost = [f"| stage | time | tokens | {header} | gate failures |", "|---|---|---|---|---|"]
    fails: dict[str, int] = {}
    for e in state.history:
        if e.result == "fail":
            fails[e.stage] = fails.get(e.stage, 0) + 1
    for sid in ids:
        u = state.usage.by_stage.get(sid)
        cost.append(f"| {sid} | {int(times.get(sid, 0))} s | {u.total_tokens if u else 0:,} | "
                    f"{_money_cell(u)} | {fails.get(sid, 0)} |")
    cost.append(f"| **total** | {_duration(state.started_at, state.ended_at)} | {total.total_tokens:,} | "
                f"{_money_cell(total)} | {sum(fails.values())} |")
    if offline:
        cost += ["", f"Cost: {cost_text(total)} — the offline scripted model answered, so the ≈ figures are "
                     "what the same tokens would have cost on Claude, an estimate; nothing was charged for them."]
    elif state.dry is not None:
        cost += ["", "Cost: nothing spent — a dry run calls no model."]
    return "\n".join(cost)


def _path(state: RunState) -> str:
    """The history as a table, a row per gate evaluation and one per revert (with its reason)."""
    items = history_with_reverts(state)
    if not items:
        return "No stage was judged."
    rows = ["| # | stage | result | gate | agent | reason | next |", "|---|---|---|---|---|---|---|"]
    for k, (n, e) in enumerate(items):
        nxt = items[k + 1][1].stage if k + 1 < len(items) else (state.current_stage if state.active else "—")
        if not n:  # a revert: the run went back to before an execution of e.stage, and continued from there
            rows.append(f"| ↶ | {e.stage} | reverted | — | | {_cell(e.reason)} | {nxt} |")
            continue
        why = (e.reason or "") + (f" [{e.failure}]" if e.failure and e.failure != "recoverable" else "")
        rows.append(f"| {n} | {e.stage} | {e.result} | {e.gate} | {e.agent or ''} | {_cell(why)} | {nxt} |")
    return "\n".join(rows)


def _acceptance(completion: dict | None) -> str:
    if not completion:
        return "The run was not checked for completion (its last stage's gate never passed)."
    from odin_magic.runs.completion_report import from_dict

    checked = from_dict(completion)
    lines = [checked.manifest]
    if checked.criteria:
        lines += ["", "| | id | priority | criterion | verified by | evidence |", "|---|---|---|---|---|---|"]
        for c in checked.criteria:
            lines.append(f"| {c.mark} | {c.id} | {c.priority} | {_cell(c.text)} | "
                         f"`{_cell(c.verify)}` | {_cell(c.detail or c.status)} |")
    reg = completion.get("regression")
    if reg:
        if not reg.get("ran"):
            command = f" `{reg['command']}`" if reg.get("command") else ""
            lines += ["", f"Regression suite{command}: {reg.get('why')}."]
        else:
            verdict = "passed" if reg.get("passed") else f"failed (exit {reg.get('exit_code')})"
            failing = ", ".join(reg.get("failing") or [])
            lines += ["", f"Regression suite `{reg.get('command')}` (chosen from: {reg.get('why')}): {verdict}"
                      + (f"; failing: {failing}" if failing else "") + "."]
    for p in completion.get("problems") or []:
        lines.append(f"- ⚠ {p.get('what')} — {p.get('fix')}")
    return "\n".join(lines).strip()


def _mutations(mutations: list[tuple[str, dict]]) -> str:
    if not mutations:
        return "No gate of this run declared `mutate: true`."
    lines = ["| stage | files | killed / tried | kill ratio | min | verdict |", "|---|---|---|---|---|---|"]
    survivors = []
    for stage, m in mutations:
        ratio = m.get("ratio")
        lines.append(f"| {stage} | {', '.join(m.get('files') or []) or '—'} | {m.get('killed')}/{m.get('tried')} | "
                     f"{'n/a' if ratio is None else f'{ratio:.2f}'} | {m.get('min_kill_ratio')} | "
                     f"{'pass' if m.get('passed') else 'fail'} |")
        survivors += [r for r in m.get("results") or [] if not r.get("killed") and r.get("where") != "rest of file"]
    lines += _mutant_sites(mutations)
    if survivors:
        lines += ["", "Mutants the gate's commands did not catch:"]
        for r in survivors[:10]:
            lines += ["", f"- {r.get('description')}", "", "```diff", (r.get("diff") or "").rstrip(), "```"]
    return "\n".join(lines)


def _mutant_sites(mutations: list[tuple[str, dict]]) -> list[str]:
    """Each gate's note ("not proven: ...") and every mutant tried: file, line, operator, where it lies in the
    change and what became of it (odin_magic.engine.mutation's evidence)."""
    lines: list[str] = []
    for stage, m in mutations:
        if m.get("note"):
            lines += ["", f"{stage}: {m['note']}"]
        results = m.get("results") or []
        if not results:
            continue
        lines += ["", f"Mutants of {stage} (only those on the change count; `{'`, `'.join(m.get('commands') or [])}` "
                  f"each, timeout {m.get('timeout_s')} s):", "",
                  "| file | line | operator | where | result |", "|---|---|---|---|---|"]
        for r in results:
            result = ("killed by timeout (hung)" if r.get("timed_out") else "killed") if r.get("killed") else "survived"
            lines.append(f"| {r.get('path')} | {r.get('line')} | {r.get('operator')} | {r.get('where', 'file')} | {result} |")
    return lines


def _changes(state: RunState, g: _Gathered) -> str:
    """Per stage execution, the files it changed (its evidence's ``changes``: odin_magic.runs.checkpoints.Change)."""
    lines = []
    for e, ev in zip(state.history, g.evidence):
        named = []
        for c in ev.get("changes") or []:
            if not isinstance(c, dict):
                continue
            counts = "binary" if c.get("added") is None else f"+{c.get('added')} -{c.get('deleted')}"
            named.append(f"`{c.get('path')}` ({c.get('kind')}, {counts})")
        if ev.get("reverted"):
            named.append("reverted out of scope: " + ", ".join(f"`{p}`" for p in ev["reverted"]))
        if named:
            lines.append(f"- **{e.stage}** ({e.at}): " + "; ".join(named))
    return "\n".join(lines) or "No stage changed a file of the project."


def _interview(state: RunState, g: _Gathered) -> str:
    iv = state.interview
    if iv is None:
        return "This run had no deep interview."
    lines = [f"{iv.rounds} rounds; ambiguity {iv.ambiguity:.2f} against the threshold {iv.threshold:.2f}."]
    if iv.topology:
        lines.append("Topology: " + ", ".join(iv.topology) + ".")
    if g.interview is not None:
        trace = "  ".join(f"{r.number}→{r.ambiguity:.2f}" for r in g.interview.rounds)
        if trace:
            lines.append(f"Ambiguity by round: {trace}")
    return "\n".join(lines)


def charts(state: RunState, loop: Loop | None, g: _Gathered) -> dict[str, bytes]:
    """The report's charts as PNG bytes, by file name."""
    from odin_magic.render.charts import ConvergenceData, InterviewRound, png_bytes, run_chart_data

    # drawn here once (the memo is for the live view's redraws: a report's PNG is never shown again)
    out = {"run.png": png_bytes(run_chart_data(state, loop.stage_ids() if loop else None).figure(), dpi=72)}
    if g.interview is not None and g.interview.rounds:
        from odin_magic.interview.runner import convergence_points

        rounds = tuple(InterviewRound(round=n, ambiguity=a, challenge=c) for n, a, c in convergence_points(g.interview))
        out["convergence.png"] = png_bytes(ConvergenceData(rounds, g.interview.threshold).figure(), dpi=72)
    if g.metrics:
        from odin_magic.render.metric_chart import metric_chart

        out["metric.png"] = png_bytes(metric_chart(g.metrics), dpi=72)
    return out


_CODE = """\
# The run's state: its state.json, found beside this notebook, in the directory the kernel started in or
# where the run was (re-run this cell after `odin run` continues it); else the snapshot written with the report.
import json, os, pathlib

RUN_ID = {run_id!r}
RUN_DIR = {run_dir!r}
SNAPSHOT = {snapshot!r}


def run_state():
    places = [pathlib.Path.cwd()]
    own = os.environ.get("JPY_SESSION_NAME") or globals().get("__vsc_ipynb_file__")  # this notebook's path
    if own:
        places.append(pathlib.Path(own).parent)
    places.append(pathlib.Path(RUN_DIR))
    for place in places:
        try:
            state = json.loads((place / "state.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(state, dict) and state.get("run_id") == RUN_ID:
            return state, str(place / "state.json")
    return SNAPSHOT, "the snapshot taken when this report was written"


state, source = run_state()
print(f"{{state['run_id']}}: {{state['status']}} at {{state['current_stage']}}, "
      f"{{state['total_iterations']}}/{{state['max_iterations']}} loopbacks (from {{source}})")
history, first = state["history"], state.get("first_entry", 1)
skip = max(0, len(history) - 10)
reverts = [r for r in state.get("reverts") or [] if r["point"] >= first - 1 + skip]
for k, entry in enumerate(history[skip:], start=skip):
    while reverts and reverts[0]["point"] < first + k:
        r = reverts.pop(0)
        print(" ", r["at"], "reverted:", r["reason"])
    print(" ", f"#{{first + k}}", entry["at"], entry["stage"], entry["result"], entry.get("reason") or "")
for r in reverts:
    print(" ", r["at"], "reverted:", r["reason"])
"""


def _snapshot(state: RunState) -> dict:
    """What the notebook's code cell shows when it cannot find the run's state.json: the state's head, its last
    ten history entries (``first_entry``: the number of the first) and its reverts."""
    tail = state.history[-10:]
    return {
        "run_id": state.run_id, "status": state.status, "current_stage": state.current_stage,
        "total_iterations": state.total_iterations, "max_iterations": state.max_iterations,
        "first_entry": len(state.history) - len(tail) + 1,
        "history": [{"at": e.at, "stage": e.stage, "result": e.result, "reason": e.reason} for e in tail],
        "reverts": [r.model_dump(mode="json") for r in state.reverts or ()],
    }


def _code(state: RunState, run_dir: Path) -> str:
    return _CODE.format(run_id=state.run_id, run_dir=str(Path(run_dir).resolve()), snapshot=_snapshot(state))


def _notebook(title: str, parts: list[tuple[str, str]], images: dict[str, bytes], code: str) -> str:
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    cells = [new_markdown_cell(f"# {title}")]
    for heading, body in parts:
        cells.append(new_markdown_cell(f"## {heading}\n\n{body}"))
    if images:
        cell = new_markdown_cell("## Charts\n\n" + "\n\n".join(f"![{name}](attachment:{name})" for name in images))
        cell["attachments"] = {name: {"image/png": base64.b64encode(data).decode("ascii")}
                               for name, data in images.items()}
        cells.append(cell)
    cells.append(new_code_cell(code))
    nb = new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
        "language_info": {"name": "python"},
    })
    nbformat.validate(nb)
    return nbformat.writes(nb)


def write_report(state: RunState, loop: Loop | None, run_dir: Path) -> Path:
    """Write report.md, report.ipynb and the chart PNGs into ``run_dir``; returns report.md's path.
    (``write_atomic`` redacts every configured secret from both texts.)"""
    run_dir = Path(run_dir)
    g = _gather(state, run_dir, loop)
    title = f"Run {state.run_id}: {state.loop}"
    parts = [(h, redact_text(body)) for h, body in sections(state, loop, g)]  # before any escaping
    images = charts(state, loop, g)
    for name, data in images.items():  # report/ made when missing; nothing written through a link
        write_atomic(run_dir / CHART_DIR / name, data, within=run_dir)
    md = [f"# {title}", ""]
    for heading, body in parts:
        md += [f"## {heading}", "", body, ""]
    md += ["## Charts", ""] + [f"![{name}]({CHART_DIR}/{name})" for name in images] + [""]
    write_atomic(run_dir / REPORT_MD, "\n".join(md), within=run_dir)
    write_atomic(run_dir / REPORT_NB, _notebook(title, parts, images, _code(state, run_dir)), within=run_dir)
    return run_dir / REPORT_MD
