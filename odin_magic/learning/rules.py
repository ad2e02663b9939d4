"""Muninn's rules: the loop edits the numbers of its runs support (:func:`rule_proposals`, always
offline), each a :class:`Rule` with its :class:`Evidence`. The model may add its own in the same form
(:mod:`odin_magic.learning.refine_model`); :mod:`odin_magic.learning.refine` turns them into proposal files.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel

from odin_magic.learning.metric_rules import metric_rules
from odin_magic.learning.runstats import Group, LoopStats, normalize
from odin_magic.loop.schema import Loop

#: how many runs must have approved a stage unchanged before its ai+human gate may become ai
APPROVED_UNCHANGED_RUNS = 3
#: how many runs must end done (none near the cap) before max_iterations may be lowered
LOWER_CAP_RUNS = 3


class Evidence(BaseModel):
    """Why a proposal is made: the runs it rests on, its numbers and a sentence."""

    runs: list[str]
    numbers: dict[str, Any]
    summary: str


def sha256(text: str) -> str:
    """The hex SHA-256 of ``text`` (a loop's text: the base a proposal edits)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Rule:
    """One proposal before it is a file: what it changes (``edits``: a path and a value each) and why."""

    written_by = "rules"  # "model" for the model's (see odin_magic.learning.refine_model)

    def __init__(self, rule: str, title: str, edits: list[tuple[tuple, Any]], evidence: Evidence):
        self.rule, self.title, self.edits, self.evidence = rule, title, edits, evidence


def rule_proposals(loop: Loop, stats: LoopStats) -> list[Rule]:
    """The rule-based proposals (always offline)."""
    return [*_cap_rules(loop, stats), *_no_progress_rules(loop, stats), *_stage_rules(loop, stats),
            *_split_rules(loop, stats), *_gate_run_rules(loop, stats), *metric_rules(loop, stats, _metric_rule)]


def _metric_rule(rule: str, title: str, edits: list, evidence: tuple) -> Rule:
    runs, numbers, summary = evidence
    return Rule(rule, title, edits, Evidence(runs=runs, numbers=numbers, summary=summary))


def _cap_rules(loop: Loop, stats: LoopStats) -> list[Rule]:
    """Raise max_iterations when runs failed at the cap; lower it when every run finished well under it."""
    out: list[Rule] = []
    cap = loop.max_iterations
    # runs that failed at a cap no higher than today's: a cap raised since is not raised again
    capped = [r for r in stats.limits_hit.get("max_iterations", []) if stats.max_iterations.get(r, cap) >= cap]
    if capped:
        new = cap + max(2, cap // 2)
        out.append(Rule("max_iterations", f"raise max_iterations from {cap} to {new}",
                         [(("max_iterations",), new)],
                         Evidence(runs=capped, numbers={"runs": stats.runs, "failed_at_cap": len(capped),
                                                        "max_iterations": cap},
                                  summary=f"{len(capped)} of {stats.runs} run(s) failed at the cap of {cap} loopbacks")))
    else:
        done = [r for r in stats.run_ids if r in stats.total_iterations]
        used = [stats.total_iterations[r] for r in done]
        if stats.outcomes.get("done", 0) >= LOWER_CAP_RUNS and stats.outcomes["done"] == stats.runs and used:
            new = max(1, max(used) + 2)
            if new * 3 <= cap * 2 and new < cap:
                out.append(Rule("max_iterations", f"lower max_iterations from {cap} to {new}",
                                 [(("max_iterations",), new)],
                                 Evidence(runs=done, numbers={"runs": stats.runs, "most_loopbacks_used": max(used),
                                                              "max_iterations": cap},
                                          summary=f"all {stats.runs} runs finished using at most {max(used)} "
                                                  f"of {cap} loopbacks")))
    return out


def _no_progress_rules(loop: Loop, stats: LoopStats) -> list[Rule]:
    """Raise max_no_progress when runs failed without progress."""
    out: list[Rule] = []
    stuck = stats.limits_hit.get("max_no_progress", [])
    if stuck and loop.max_no_progress:
        new = loop.max_no_progress + 2
        out.append(Rule("max_no_progress", f"raise max_no_progress from {loop.max_no_progress} to {new}",
                         [(("max_no_progress",), new)],
                         Evidence(runs=stuck, numbers={"runs": stats.runs, "failed_without_progress": len(stuck),
                                                       "max_no_progress": loop.max_no_progress},
                                  summary=f"{len(stuck)} of {stats.runs} run(s) failed after "
                                          f"{loop.max_no_progress} loopbacks without progress")))
    return out


def _stage_rules(loop: Loop, stats: LoopStats) -> list[Rule]:
    """Per stage: loop a stage that keeps failing back upstream, sharpen a check with repeated feedback, let the judge alone pass a stage always approved unchanged."""
    out: list[Rule] = []
    for i, stage in enumerate(loop.stages):
        s = stats.stage(stage.id)
        if s is None:
            continue
        path = ("stages", i, "gate")
        if stage.gate.on_fail is None and i > 0 and s.failures >= 2 and s.max_consecutive_failures >= 2:
            target = _upstream(loop, i)
            runs = sorted({r for g in s.failure_reasons for r in g.runs})
            out.append(Rule("on_fail", f"loop {stage.id} back to {target} when its gate fails",
                             [((*path, "on_fail"), target)],
                             Evidence(runs=runs, numbers={"failures": s.failures,
                                                          "max_consecutive_failures": s.max_consecutive_failures},
                                      summary=f"{stage.id} failed {s.failures} time(s), up to "
                                              f"{s.max_consecutive_failures} in a row retrying itself; "
                                              f"top reason: {s.failure_reasons[0].text}")))
        repeated = [g for g in s.revise_feedback]
        wanted = [g.text.strip().rstrip(".") for g in repeated[:3]]
        said = " ".join(stage.gate.check.split()).lower()
        if stage.gate.pauses and sum(g.count for g in repeated) >= 2 and not all(w.lower() in said for w in wanted):
            check = " ".join(stage.gate.check.split()).rstrip(".") + ". Also: " + "; ".join(wanted) + "."
            runs = sorted({r for g in repeated for r in g.runs})
            out.append(Rule("check", f"sharpen the check of {stage.id} with the users' repeated feedback",
                             [((*path, "check"), check)],
                             Evidence(runs=runs, numbers={"revisions": sum(g.count for g in repeated)},
                                      summary=f"users revised {stage.id} {sum(g.count for g in repeated)} time(s): "
                                              + " | ".join(g.text for g in repeated[:3]))))
        unchanged = s.approved_unchanged_runs
        if stage.gate.pauses and len(unchanged) >= APPROVED_UNCHANGED_RUNS and not s.revised_runs:
            out.append(Rule("mode", f"let the judge alone pass {stage.id} (ai+human -> ai)",
                             [((*path, "mode"), "ai")],
                             Evidence(runs=unchanged, numbers={"approved_unchanged": len(unchanged), "revised": 0},
                                      summary=f"users approved {stage.id} unchanged in all {len(unchanged)} runs")))
    return out


def _split_rules(loop: Loop, stats: LoopStats) -> list[Rule]:
    """Split a stage whose failures fall into two unrelated groups."""
    out: list[Rule] = []
    for i, stage in enumerate(loop.stages):
        s = stats.stage(stage.id)
        pair = _unrelated(s.failure_reasons) if s is not None else None
        if pair is not None and "in particular, not:" not in stage.gate.check:  # not a stage split before
            first, second = pair
            new_id = next(f"{stage.id}-{n}" for n in range(2, 100) if f"{stage.id}-{n}" not in loop.stage_ids())
            check = " ".join(stage.gate.check.split()).rstrip(".")
            out.append(Rule("split", f"split {stage.id} in two: its failures fall into unrelated groups",
                             [(("+duplicate", "stages", i), None), (("stages", i + 1, "id"), new_id),
                              (("stages", i, "gate", "check"), f"{check}; in particular, not: {first.text}"),
                              (("stages", i + 1, "gate", "check"), f"{check}; in particular, not: {second.text}")],
                             Evidence(runs=sorted(set(first.runs) | set(second.runs)),
                                      numbers={"groups": len(s.failure_reasons), "first": first.count,
                                               "second": second.count},
                                      summary=f"{stage.id} failed for two unrelated reasons: "
                                              f"{first.text} (x{first.count}) | {second.text} (x{second.count})")))
    return out


def _gate_run_rules(loop: Loop, stats: LoopStats) -> list[Rule]:
    """Give a stage's gate the commands of a later gate that failed after the judge passed it."""
    out: list[Rule] = []
    for i, stage in enumerate(loop.stages):  # a judge passed work that a later command then failed
        for later in loop.stages[i + 1:]:
            if later.gate.on_fail != stage.id or not later.gate.commands or stage.gate.commands:
                continue
            s = stats.stage(later.id)
            cmd_fails = [g for g in (s.failure_reasons if s else []) if g.text.startswith("gate command")]
            runs = sorted({r for g in cmd_fails for r in g.runs})
            if len(runs) >= 2:
                cmds = [c.cmd for c in later.gate.commands]
                out.append(Rule("gate_run", f"let {stage.id}'s gate run {later.id}'s commands",
                                 [(("stages", i, "gate", "run"), cmds)],
                                 Evidence(runs=runs, numbers={"command_failures_after_pass": sum(g.count for g in cmd_fails)},
                                          summary=f"the judge passed {stage.id}, then {later.id}'s commands failed "
                                                  f"and looped back to it in {len(runs)} runs")))
    return out


_STOP = {"the", "a", "an", "and", "or", "of", "to", "in", "is", "are", "not", "no", "it", "its", "for", "with", "on"}


def _words(text: str) -> set[str]:
    return {w for w in normalize(text).split() if len(w) > 2 and w not in _STOP and w != "#"}


def _unrelated(groups: list[Group]) -> tuple[Group, Group] | None:
    """The two biggest failure groups (each seen at least twice) when they share almost no words."""
    big = [g for g in groups if g.count >= 2][:2]
    if len(big) < 2:
        return None
    a, b = _words(big[0].text), _words(big[1].text)
    if not a or not b or len(a & b) / len(a | b) >= 0.2:
        return None
    return big[0], big[1]


def _upstream(loop: Loop, index: int) -> str:
    """Where a failing stage should loop back to: the latest earlier stage producing what it consumes, else the previous one."""
    stage = loop.stages[index]
    for earlier in reversed(loop.stages[:index]):
        if set(earlier.produces) & set(stage.consumes):
            return earlier.id
    return loop.stages[index - 1].id


_Rule = Rule  # the name of earlier versions
