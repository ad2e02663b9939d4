"""How a refine pass is shown: text for a terminal, HTML with matplotlib charts in a notebook
(the notebook's Apply/Reject panel is :mod:`odin_magic.notebook.refine_panel`)."""

from __future__ import annotations

import base64
import html
from matplotlib.figure import Figure

from odin_magic.render.charts import png_bytes
from odin_magic.render.displays import _Display
from odin_magic.learning.refine import LoopStats, Proposal, RefineResult


def diff_html(diff: str) -> str:
    """A unified diff as HTML: added lines green, removed lines red."""
    out = []
    for line in diff.splitlines():
        colour = ("#1a7f37" if line.startswith("+") and not line.startswith("+++") else
                  "#cf222e" if line.startswith("-") and not line.startswith("---") else None)
        text = html.escape(line)
        out.append(f"<span style='color:{colour}'>{text}</span>" if colour else text)
    return "<pre class='odin-diff'>" + "\n".join(out) + "</pre>"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def render_stats(stats: LoopStats) -> str:
    o = stats.outcomes
    lines = [f"loop {stats.loop}: {stats.runs} run(s): {o['done']} done, {o['failed']} failed, "
             f"{o['abandoned']} abandoned, {o['blocked']} blocked, {o['active']} active"]
    for limit, runs in stats.limits_hit.items():
        lines.append(f"  hit {limit}: {len(runs)} run(s) ({', '.join(runs)})")
    if len(stats.versions) > 1 or (stats.versions and stats.versions[0].version is not None):
        lines.append("  by version: " + "; ".join(
            f"v{v.version}: {v.runs} run(s), {v.done} done, first-try pass {_rate(v.first_try_pass_rate)}"
            for v in stats.versions))
    if stats.interview_rounds:
        lines.append("  interview rounds to convergence: " + ", ".join(str(n) for n in stats.interview_rounds.values()))
    lines.append("")
    lines.append(f"  {'stage':<16} {'runs':>4} {'execs':>5} {'1st-try':>7} {'loopbacks':>9} {'revised':>7} "
                 f"{'time s':>7} {'tokens':>7} {'cost $':>8}")
    for s in stats.stages:
        lines.append(f"  {s.stage:<16} {s.runs:>4} {s.executions:>5} {_rate(s.first_try_pass_rate):>7} "
                     f"{s.failures:>9} {sum(g.count for g in s.revise_feedback):>7} {s.seconds:>7.0f} "
                     f"{s.tokens:>7} {s.cost_usd:>8.4f}")
        for g in s.failure_reasons[:3]:
            lines.append(f"      failed x{g.count}: {g.text}")
        for g in s.revise_feedback[:3]:
            lines.append(f"      revise x{g.count}: {g.text}")
    return "\n".join(lines)


def render_proposal(p: Proposal, diff: bool = True) -> str:
    by = " [model-written]" if p.written_by == "model" else ""
    lines = [f"{p.id} ({p.status}){by}: {p.title}", f"  evidence: {p.evidence.summary}",
             f"  runs: {', '.join(p.evidence.runs)}"]
    if diff:
        lines += ["", p.diff.rstrip()]
    return "\n".join(lines)


def decided_text(proposal: Proposal, path=None, history_dir=None) -> str:
    """A proposal applied (``path``: the loop file written; ``history_dir``: where the previous version is kept)
    or rejected, as ``odin refine apply|reject ID`` says it."""
    if path is None:
        return f"rejected {proposal.id}: {proposal.title}"
    return (f"applied {proposal.id}: {proposal.title}\nwrote {path} (version {proposal.applied_version}); "
            f"the previous version is in {history_dir}")


def proposals_text(proposals: list[Proposal]) -> str:
    """``odin refine list``: each proposal without its diff."""
    return "\n".join(render_proposal(p, diff=False) for p in proposals) or "no proposals"


def render_effect(e) -> str:
    def side(v, version) -> str:
        if v is None:
            return f"v{version}: no runs yet"
        return f"v{version}: {v.runs} run(s), {v.done} done, first-try pass {_rate(v.first_try_pass_rate)}"
    return f"applied {e.proposal} ({e.title}): {side(e.before, e.before_version)} -> {side(e.after, e.after_version)}"


def render_result(result: RefineResult) -> str:
    parts = [render_stats(s) for s in result.stats]
    if result.effects:
        parts.append("\n".join(render_effect(e) for e in result.effects))
    parts += [f"note: {n}" for n in result.notices]
    if result.proposals:
        parts.append(f"{len(result.proposals)} proposal(s), saved in .odin-loop/refinements/:")
        parts += [render_proposal(p) for p in result.proposals]
        parts.append("apply one with `odin refine apply ID` (or reject it: `odin refine reject ID`)")
    elif result.still_open:
        parts.append("no new proposals; still open: " + ", ".join(f"{p.id} ({p.title})" for p in result.still_open))
    else:
        parts.append("no new proposals: nothing in these runs calls for a change")
    return "\n\n".join(parts)


# -- charts ----------------------------------------------------------------------------------


def refine_chart(stats: LoopStats) -> Figure:
    """Three panels: loopbacks by stage, cost by stage, and convergence (interview rounds, else pass rate by version)."""
    fig = Figure(figsize=(10, 2.8))
    ids = [s.stage for s in stats.stages] or ["-"]
    ax1, ax2, ax3 = fig.subplots(1, 3)
    ax1.bar(ids, [s.failures for s in stats.stages] or [0], color="#e07b7b")
    ax1.set_title("gate failures by stage", fontsize=9)
    ax2.bar(ids, [s.cost_usd for s in stats.stages] or [0], color="#7b9fe0")
    ax2.set_title("cost by stage (USD)", fontsize=9)
    if stats.interview_rounds:
        ax3.plot(range(1, len(stats.interview_rounds) + 1), list(stats.interview_rounds.values()), marker="o")
        ax3.set_title("interview rounds to convergence, by run", fontsize=9)
    else:
        versions = [f"v{v.version}" for v in stats.versions] or ["-"]
        ax3.bar(versions, [(v.first_try_pass_rate or 0) for v in stats.versions] or [0], color="#8fcf8f")
        ax3.set_ylim(0, 1)
        ax3.set_title("first-try pass rate by loop version", fontsize=9)
    for ax in (ax1, ax2, ax3):
        ax.tick_params(labelsize=7)
        for label in ax.get_xticklabels():
            label.set_rotation(30)
    fig.tight_layout()
    return fig


class RefineDisplay(_Display):
    """A refine pass: HTML tables and charts in a notebook, text in a terminal."""

    def __init__(self, result: RefineResult):
        self.result = result

    def text(self) -> str:
        return render_result(self.result)

    def html(self) -> str:
        parts = []
        for stats in self.result.stats:
            png = base64.b64encode(png_bytes(refine_chart(stats))).decode()
            parts.append(f"<h4>Muninn: loop {html.escape(stats.loop)}</h4><pre>{html.escape(render_stats(stats))}</pre>"
                         f"<img alt='refine charts for {html.escape(stats.loop)}' src='data:image/png;base64,{png}'/>")
        parts += [f"<p>{html.escape(render_effect(e))}</p>" for e in self.result.effects]
        parts += [f"<p class='odin-muted'>{html.escape(n)}</p>" for n in self.result.notices]
        if not self.result.proposals:
            parts.append("<p>No new proposals: nothing in these runs calls for a change.</p>")
        for p in self.result.proposals:
            parts.append(f"<h5>{html.escape(render_proposal(p, diff=False).splitlines()[0])}</h5>"
                         f"<p>{html.escape(p.evidence.summary)}</p>{diff_html(p.diff)}")
        return "".join(parts)
