"""A roadmap shown (``odin roadmap`` / ``%odin roadmap``): milestones with their progress, each phase with its
status, iterations, cost and run (and a link to the run's report.md); the text of ``odin roadmap validate``;
a proposed roadmap (``odin roadmap new``). The text is the terminal's and the notebook's text/plain alike;
the notebook's HTML draws a progress bar per milestone (docs/roadmap.md)."""

from __future__ import annotations

import html
import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from odin_magic.loop.diagnostics import Diagnostic
from odin_magic.loop.roadmap import ROADMAP_FILE, Roadmap
from odin_magic.render.displays import _Display
from odin_magic.render.run_report import REPORT_MD
from odin_magic.render.text import cost_text

if TYPE_CHECKING:
    from odin_magic.runs.roadmap_progress import PhaseProgress
    from odin_magic.runs.contract_usage import ContractCost

BAR_WIDTH = 10
FINISHED = ("done", "done_with_concerns", "skipped")
STATUS_COLOURS = {"done": "#1a7f37", "done_with_concerns": "#9a6700", "skipped": "#888", "active": "#0969da",
                  "paused": "#9a6700", "escalated": "#cf222e", "blocked": "#cf222e", "pending": "#888"}


@dataclass(frozen=True)
class PhaseRow:
    """One phase as shown: its line in roadmap.md, and what the runs say of it (when known)."""

    id: str
    title: str
    status: str  # a PhaseProgress status, or done / pending from the checkbox alone
    note: str | None = None
    iterations: int | None = None
    cost_usd: float | None = None
    offline_usd: float = 0.0  # the part of cost_usd the offline scripted model answered: an estimate, never spent
    run: str | None = None
    report: str | None = None  # the run's report.md, relative to the project, when it was written
    contract: "ContractCost | None" = None  # what its contract's proposals and interview cost (model calls), if any

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def cost(self) -> str:
        return _cost(self.cost_usd or 0.0, self.offline_usd)

    def status_text(self) -> str:
        return self.status.replace("_", " ")

    def facts(self) -> list[str]:
        """Iterations, cost and run, as far as they are known."""
        out = []
        if self.iterations:
            out.append(f"{self.iterations} iteration{'s' if self.iterations != 1 else ''}")
        if self.cost_usd:
            out.append(self.cost())
        if self.contract is not None:
            out.append(self.contract_cost())
        if self.run:
            out.append(f"run {self.run}")
        return out

    def contract_cost(self) -> str:
        """What its contract cost (:func:`contract_cost_text`); "" when no model call made it."""
        return contract_cost_text(self.contract) if self.contract is not None else ""


def contract_cost_text(cost: "ContractCost") -> str:
    """``contract proposal and interview: N tokens, $X`` (named after what it counts; offline: ``≈ $X if run on
    Claude; nothing spent``), and ``contract interview: cost unreadable (<its usage file>; delete it ...)`` for a
    usage file that cannot be read (its cost unknown, not left out silently)."""
    said = [f"{cost.what}: {cost.usage.total_tokens} tokens, {cost_text(cost.usage)}"] if cost.counted else []
    return "; ".join(said + [f"contract {part}: cost unreadable ({path}; delete it to count again from the next "
                             "model call)" for part, path in cost.unreadable.items()])


@dataclass(frozen=True)
class MilestoneRow:
    id: str
    title: str
    phases: tuple[PhaseRow, ...]

    @property
    def done(self) -> int:
        return sum(1 for p in self.phases if p.finished)


def _cost(cost_usd: float, offline_usd: float) -> str:
    from odin_magic.runs.state import Usage

    return cost_text(Usage(cost_usd=cost_usd, offline_usd=min(offline_usd, cost_usd)), short=True)


def _phase_row(phase, progress: "PhaseProgress | None", project_dir: Path | None, offline: float = 0.0) -> PhaseRow:
    if progress is None:
        return PhaseRow(phase.id, phase.title, "done" if phase.done else "pending", phase.note)
    report = None
    if progress.last_run and project_dir is not None:
        rel = Path(".odin-loop") / "runs" / progress.last_run / REPORT_MD
        report = rel.as_posix() if (project_dir / rel).is_file() else None
    note = phase.note or progress.concern or progress.reason
    status = progress.status
    return PhaseRow(phase.id, phase.title, status, note, progress.iterations, progress.cost_usd, offline,
                    progress.last_run, report, progress.contract_cost)


def roadmap_rows(roadmap: Roadmap, progress: Mapping[str, "PhaseProgress"] | None = None,
                 project_dir: Path | None = None) -> list[MilestoneRow]:
    """The roadmap's milestones and phases as shown: the runs' progress when given, else the checkboxes."""
    progress = progress or {}
    offline = _offline_usd(project_dir, progress) if project_dir is not None else {}
    return [MilestoneRow(m.id, m.title, tuple(_phase_row(p, progress.get(p.id), project_dir, offline.get(p.id, 0.0))
                                              for p in m.phases))
            for m in roadmap.milestones]


def _offline_usd(project_dir: Path, progress: Mapping[str, "PhaseProgress"]) -> dict[str, float]:
    """Each phase's estimate for what the offline scripted model answered (never spent: shown as such)."""
    from odin_magic.core.errors import OdinError
    from odin_magic.runs.store import RunStore

    store, out = RunStore(project_dir), {}
    for phase_id, p in progress.items():
        if not p.cost_usd:
            continue
        for run_id in p.runs:
            try:
                out[phase_id] = out.get(phase_id, 0.0) + store.load(run_id).state.usage.total.offline_usd
            except (OdinError, OSError):  # a corrupt or vanished run: told by `odin runs`, not here
                continue
    return out


def text_bar(done: int, total: int, width: int = BAR_WIDTH) -> str:
    filled = round(width * done / total) if total else 0
    return "[" + "#" * filled + "-" * (width - filled) + "]"


def _summary(rows: Sequence[MilestoneRow]) -> str:
    phases = [p for m in rows for p in m.phases]
    counts: dict[str, int] = {}
    for p in phases:
        counts[p.status_text()] = counts.get(p.status_text(), 0) + 1
    told = ", ".join(f"{n} {status}" for status, n in counts.items())
    contracts = [p.contract.usage for p in phases if p.contract is not None and p.contract.counted]
    cost = sum(p.cost_usd or 0.0 for p in phases) + sum(u.cost_usd for u in contracts)
    offline = sum(p.offline_usd for p in phases) + sum(u.offline_usd for u in contracts)
    text = f"{len(phases)} phase(s): {told}" + (f"; cost {_cost(cost, offline)}" if cost else "")
    if contracts:  # the part of that cost the contracts' proposals and interviews took
        tokens = sum(u.total_tokens for u in contracts)
        text += (f" (contract proposals and interviews: {tokens} tokens, "
                 f"{_cost(sum(u.cost_usd for u in contracts), sum(u.offline_usd for u in contracts))})")
    unknown = [p.id for p in phases if p.contract is not None and p.contract.unreadable]
    if unknown:  # its cost cannot be read: not in these totals, and they say so
        text += f"; not counted: the unreadable contract cost of {', '.join(unknown)}"
    return text


class RoadmapDisplay(_Display):
    """``odin roadmap``: text in a terminal (and as the notebook's text/plain), progress bars in HTML."""

    def __init__(self, roadmap: Roadmap, rows: Sequence[MilestoneRow], where: str = ROADMAP_FILE,
                 repairs: Sequence[str] = ()):
        self.roadmap = roadmap
        self.rows = list(rows)
        self.where = where
        self.repairs = list(repairs)
        self.href_base = ""  # the project as the notebook's links reach it (relative to the notebook's folder)
        self.chart_png: bytes | None = None  # the notebook's roadmap chart (render/roadmap_chart.py), below the table

    def _head(self) -> str:
        return f"roadmap: {self.roadmap.title}   (autonomy: {self.roadmap.autonomy}; {self.where})"

    def text(self) -> str:
        lines = [self._head()]
        width = max((len(p.id) + 1 + len(p.title) for m in self.rows for p in m.phases), default=0)
        status_width = max((len(p.status_text()) for m in self.rows for p in m.phases), default=0)
        for m in self.rows:
            lines.append(f"{m.id} {m.title}  {text_bar(m.done, len(m.phases))} {m.done}/{len(m.phases)}")
            for p in m.phases:
                name = f"{p.id} {p.title}".ljust(width)
                facts = "  ".join(p.facts())
                lines.append(f"  [{'x' if p.finished else ' '}] {name}  {p.status_text().ljust(status_width)}"
                             f"  {facts}".rstrip())
                if p.note:
                    lines.append(f"      — {p.note}")
                if p.report:
                    lines.append(f"      report: {p.report}")
        lines.append(_summary(self.rows))
        lines += [f"the runs disagree: {r}" for r in self.repairs]
        return "\n".join(lines)

    def html(self) -> str:
        parts = [f"<div class='odin-roadmap'><b>{_e(self.roadmap.title)}</b> "
                 f"<span class='odin-muted'>autonomy: {_e(self.roadmap.autonomy)} · {_e(self.where)}</span>"]
        for m in self.rows:
            total = len(m.phases)
            parts.append(f"<div style='margin-top:6px'><b>{_e(m.id)}</b> {_e(m.title)} "
                         f"<progress value='{m.done}' max='{max(total, 1)}' title='{m.done}/{total} phases'>"
                         f"</progress> {m.done}/{total}</div>")
            parts.append("<table class='odin-t'><tr><th>phase</th><th>status</th><th>iterations</th>"
                         "<th>cost</th><th>run</th></tr>")
            parts += [_phase_html(p, self.href_base) for p in m.phases]
            parts.append("</table>")
        parts.append(f"<p class='odin-muted'>{_e(_summary(self.rows))}</p>")
        parts += [f"<p style='color:#9a6700'>the runs disagree: {_e(r)}</p>" for r in self.repairs]
        if self.chart_png:
            import base64

            parts.append(f"<img class='odin-roadmap-chart' alt='roadmap: phases over time' "
                         f"src='data:image/png;base64,{base64.b64encode(self.chart_png).decode()}'>")
        return "".join(parts) + "</div>"


def _phase_html(p: PhaseRow, href_base: str = "") -> str:
    colour = STATUS_COLOURS.get(p.status, "inherit")
    note = f"<br><span class='odin-muted'>— {_e(p.note)}</span>" if p.note else ""
    run = _e(p.run or "")
    if p.report:
        href = posixpath.join(href_base, p.report) if href_base else p.report
        run = f"<a href='{html.escape(href, quote=True)}' target='_blank'>{run or 'report'}</a>"
    cost = _e(p.cost()) if p.cost_usd else ""
    if p.contract is not None:
        cost += ("<br>" if cost else "") + f"<span class='odin-muted'>{_e(p.contract_cost())}</span>"
    return (f"<tr class='odin-phase'><td><b>{_e(p.id)}</b> {_e(p.title)}{note}</td>"
            f"<td style='color:{colour}'>{_e(p.status_text())}</td><td>{_e(p.iterations or '')}</td>"
            f"<td>{cost}</td><td>{run}</td></tr>")


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def roadmap_validation_text(source: str, diags: Sequence[Diagnostic], roadmap: Roadmap | None) -> str:
    """``odin roadmap validate``: every diagnostic at its line, then a one-line verdict."""
    errors = [d for d in diags if d.severity == "error"]
    lines = [str(d) for d in errors] + [str(d) for d in diags if d.severity != "error"]
    verdict = "ok" if not errors else "INVALID"
    what = f"roadmap '{roadmap.title}', {len(roadmap.phases())} phase(s)" if roadmap else "roadmap"
    lines.append(f"{source}: {what} {verdict} ({len(errors)} error(s), {len(diags) - len(errors)} warning(s))")
    return "\n".join(lines)


def proposal_text(text: str, target: str) -> str:
    """A proposed roadmap, before it is accepted: its text and where it would go."""
    return f"proposed roadmap (not written yet; accepted, it goes to {target}):\n\n{text.rstrip()}"


def roadmap_display(project_dir: Path) -> RoadmapDisplay:
    """``odin roadmap``: the project's roadmap with each phase's progress from its runs (which win over the
    checkboxes: where they disagree, the display says so)."""
    from odin_magic.loop.roadmap import load_roadmap
    from odin_magic.runs.roadmap_progress import progress, repairs

    project_dir = Path(project_dir)
    roadmap = load_roadmap(project_dir / ROADMAP_FILE)
    return RoadmapDisplay(roadmap, roadmap_rows(roadmap, progress(project_dir, roadmap), project_dir),
                          repairs=repairs(project_dir, roadmap))


def validate_roadmap(project_dir: Path, file: str | None = None) -> tuple[str, bool]:
    """``odin roadmap validate [FILE]``: its text and whether it passed. The project's own roadmap (no FILE) is
    checked with the contracts its phases have (``.odin-loop/contracts/<phase>.yaml``, against the loop
    catalog); a relative FILE is the project's when it is not the working directory's."""
    from odin_magic.loop.contract import CONTRACTS_DIR, validate_contract_file
    from odin_magic.loop.roadmap import check_roadmap_file

    project_dir = Path(project_dir)
    shown = file or str(project_dir / ROADMAP_FILE)
    path = Path(shown).expanduser()
    if file and not path.is_absolute() and not path.exists():
        path = project_dir / path
    roadmap, diags = check_roadmap_file(path, shown)
    lines = [roadmap_validation_text(shown, diags, roadmap)]
    ok = roadmap is not None
    for phase in roadmap.phases() if roadmap is not None and not file else ():
        contract = project_dir / CONTRACTS_DIR / f"{phase.id}.yaml"
        if contract.is_file():
            report = validate_contract_file(contract, project_dir)
            lines.append(report.format())
            ok = ok and report.ok
    return "\n".join(lines), ok


def phase_blocked_hint(project_dir: Path, state) -> str:
    """What `odin status` says of a roadmap phase's run (``state``) whose phase is blocked because its contract
    changed while the run was under way: the run may be done, its phase is not (the driver stopped it); empty
    for any other run."""
    from odin_magic.render.text import BLOCKED
    from odin_magic.runs.roadmap_progress import changed_fix, contract_change, phase_of_task

    phase = phase_of_task(state.task)
    reason = contract_change(project_dir, phase, state.run_id) if phase is not None else None
    if reason is None:
        return ""
    return f"{BLOCKED} its roadmap phase {phase} is blocked: {reason}. To do: {changed_fix(phase)}."
