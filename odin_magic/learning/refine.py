"""Muninn: learn from a loop's past runs, propose loop edits, apply them on approval.

:func:`aggregate` reads every run of a loop from its event log (authoritative)
and the run's own copy of its loop (which records the version it ran), and
computes :class:`LoopStats`. :func:`propose` turns the numbers into
:class:`Proposal` objects, each a concrete edit with its evidence and a unified
diff of the loop YAML, saved as ``.odin-loop/refinements/<loop>-<n>.yaml``.
:func:`apply` writes the edited loop into the project (a built-in is copied,
never edited in place), bumps its ``version``, keeps the previous text in
``.odin-loop/loops/.history/<loop>.v<N>.yaml``, and refuses a proposal whose
result does not validate or whose base is no longer the current loop.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from odin_magic.loop.catalog import LoopCatalog
from odin_magic.core.confine import check_confined
from odin_magic.core.errors import LoopInvalid, OdinError, UsageError
from odin_magic.loop.schema import Loop
from odin_magic.loop.loopedit import EditError, bump_version, duplicate_item, set_value
from odin_magic.runs.store import LOG_NAME, RunCorrupt, RunStore, fold, read_log, write_atomic
from odin_magic.loop.validation import validate_text
from odin_magic.loop.yamlsource import YamlError, load_yaml

#: how many runs must have approved a stage unchanged before its ai+human gate may become ai
APPROVED_UNCHANGED_RUNS = 3
#: how many runs must end done (none near the cap) before max_iterations may be lowered
LOWER_CAP_RUNS = 3

#: a run's status -> its outcome; any other status (running, awaiting approval or an answer) is "active"
OUTCOMES = {"done": "done", "failed": "failed", "abandoned": "abandoned", "blocked": "blocked"}


# -- reading the runs ------------------------------------------------------------------------


class RunFacts(BaseModel):
    """What one run says about its loop, read from its event log."""

    run_id: str
    loop: str
    version: str | None
    status: str
    outcome: Literal["done", "failed", "abandoned", "blocked", "active"]
    failure_reason: str | None = None
    limit_hit: str | None = None  # max_iterations | max_no_progress | timeout | budget | repeated (blocked)
    total_iterations: int = 0
    max_iterations: int = 0
    interview_rounds: int | None = None
    records: list[dict[str, Any]] = Field(default_factory=list, exclude=True)


def _limit_of(reason: str | None) -> str | None:
    if not reason:
        return None
    if reason.startswith("total_iterations"):
        return "max_iterations"
    if reason.startswith("no progress"):
        return "max_no_progress"
    if reason.startswith("timed out"):
        return "timeout"
    if reason.startswith("over budget"):
        return "budget"
    return None


def _block_of(state) -> str | None:
    blocked = getattr(state, "blocked", None)
    return f"blocked ({blocked.kind})" if state.status == "blocked" and blocked is not None else None


def _version_text(version: Any) -> str | None:
    return None if version is None else str(version)


def read_runs(project_dir: Path, loop: str | None = None, notices: list[str] | None = None) -> list[RunFacts]:
    """Every readable run (of ``loop``, if given), oldest first; an unreadable run is told in ``notices``."""
    store = RunStore(Path(project_dir))
    out = []
    for run_id in store.run_ids():
        log = store.run_dir(run_id) / LOG_NAME
        try:
            records, _, _ = read_log(log)
            state = fold(records, source=log)
            loop_data = store.loop_data(run_id)
        except RunCorrupt as exc:
            if notices is not None:
                notices.append(f"run {run_id} cannot be read and is left out: {exc.message}")
            continue
        if state is None or (loop is not None and state.loop != loop):
            continue
        outcome = OUTCOMES.get(state.status, "active")
        out.append(RunFacts(
            run_id=run_id, loop=state.loop, version=_version_text(loop_data.get("version")), status=state.status,
            outcome=outcome, failure_reason=state.failure_reason,
            limit_hit=_limit_of(state.failure_reason) or _block_of(state),
            total_iterations=state.total_iterations, max_iterations=state.max_iterations,
            interview_rounds=state.interview.rounds if state.interview is not None else None, records=records,
        ))
    return out


# -- the aggregates ------------------------------------------------------------------------------


def normalize(text: str) -> str:
    """A failure reason or feedback reduced to what repeats: lower case, numbers blurred, punctuation dropped."""
    t = text.lower()
    t = re.sub(r"\d+(\.\d+)?", "#", t)
    t = re.sub(r"[^\w#`]+", " ", t)
    return " ".join(t.split())


class Group(BaseModel):
    text: str  # the first wording seen
    count: int
    runs: list[str]


class StageStats(BaseModel):
    stage: str
    executions: int = 0  # gate evaluations
    runs: int = 0  # runs that evaluated the stage
    first_try_passes: int = 0
    first_try_pass_rate: float | None = None
    failures: int = 0  # loopbacks it caused (gate_failures_by_stage)
    max_consecutive_failures: int = 0
    failure_reasons: list[Group] = Field(default_factory=list)
    revise_feedback: list[Group] = Field(default_factory=list)
    approvals: int = 0
    approved_unchanged_runs: list[str] = Field(default_factory=list)
    revised_runs: list[str] = Field(default_factory=list)
    seconds: float = 0.0
    tokens: int = 0
    cost_usd: float = 0.0


class VersionStats(BaseModel):
    version: str | None
    runs: int
    done: int
    first_try_pass_rate: float | None


class LoopStats(BaseModel):
    loop: str
    runs: int
    run_ids: list[str]
    outcomes: dict[str, int]
    limits_hit: dict[str, list[str]]
    total_iterations: dict[str, int]
    max_iterations: dict[str, int] = Field(default_factory=dict)  # the cap each run ran with
    interview_rounds: dict[str, int]
    stages: list[StageStats]
    versions: list[VersionStats]

    def stage(self, stage_id: str) -> StageStats | None:
        return next((s for s in self.stages if s.stage == stage_id), None)


def _stamp(at: str) -> datetime | None:
    try:
        return datetime.fromisoformat(at)
    except (TypeError, ValueError):
        return None


def _groups(items: list[tuple[str, str]]) -> list[Group]:
    """(text, run) pairs grouped by their normalized text, largest group first."""
    by: dict[str, Group] = {}
    for text, run in items:
        key = normalize(text)
        g = by.setdefault(key, Group(text=text, count=0, runs=[]))
        g.count += 1
        if run not in g.runs:
            g.runs.append(run)
    return sorted(by.values(), key=lambda g: -g.count)


def aggregate(loop_name: str, runs: list[RunFacts], stage_order: list[str] | None = None) -> LoopStats:
    stats: dict[str, StageStats] = {}
    reasons: dict[str, list[tuple[str, str]]] = defaultdict(list)
    feedback: dict[str, list[tuple[str, str]]] = defaultdict(list)

    def of(stage: str) -> StageStats:
        return stats.setdefault(stage, StageStats(stage=stage))

    first_try_by_version: dict[str | None, list[bool]] = defaultdict(list)
    for run in runs:
        seen: set[str] = set()
        streak: Counter = Counter()
        revised_here: set[str] = set()
        approved_here: set[str] = set()
        previous_at = None
        for rec in run.records:
            at = _stamp(rec.get("at"))
            stage = rec.get("stage")
            kind = rec["type"]
            entry = rec.get("entry") or {}
            if kind == "gate" and stage:
                s = of(stage)
                s.executions += 1
                passed = entry.get("result") == "pass"
                if stage not in seen:
                    seen.add(stage)
                    s.runs += 1
                    s.first_try_passes += passed
                    first_try_by_version[run.version].append(passed)
                if passed:
                    streak[stage] = 0
                else:
                    s.failures += 1
                    streak[stage] += 1
                    s.max_consecutive_failures = max(s.max_consecutive_failures, streak[stage])
                    reasons[stage].append((entry.get("reason") or "(no reason given)", run.run_id))
                if at and previous_at:
                    s.seconds += max(0.0, (at - previous_at).total_seconds())
            elif kind == "revised" and stage:
                text = (rec.get("set") or {}).get("feedback")
                if text:
                    feedback[stage].append((text, run.run_id))
                revised_here.add(stage)
            elif kind == "approved" and stage:
                of(stage).approvals += 1
                approved_here.add(stage)
            elif kind == "usage" and stage:
                usage = rec.get("usage") or {}
                s = of(stage)
                s.tokens += sum(int(usage.get(k) or 0) for k in ("input_tokens", "output_tokens",
                                                                    "cache_creation_input_tokens",
                                                                    "cache_read_input_tokens"))
                s.cost_usd += float(usage.get("cost_usd") or 0.0)
            if at:
                previous_at = at
        for stage in approved_here:
            (of(stage).revised_runs if stage in revised_here else of(stage).approved_unchanged_runs).append(run.run_id)
        for stage in revised_here - approved_here:
            of(stage).revised_runs.append(run.run_id)
    for stage, s in stats.items():
        s.first_try_pass_rate = round(s.first_try_passes / s.runs, 3) if s.runs else None
        s.failure_reasons = _groups(reasons[stage])
        s.revise_feedback = _groups(feedback[stage])
        s.cost_usd = round(s.cost_usd, 6)
        s.seconds = round(s.seconds, 1)
    order = list(stage_order or [])
    order += sorted(set(stats) - set(order))
    versions = []
    for version in dict.fromkeys(r.version for r in runs):
        of_version = [r for r in runs if r.version == version]
        firsts = first_try_by_version.get(version, [])
        versions.append(VersionStats(version=version, runs=len(of_version),
                                     done=sum(r.outcome == "done" for r in of_version),
                                     first_try_pass_rate=round(sum(firsts) / len(firsts), 3) if firsts else None))
    limits: dict[str, list[str]] = defaultdict(list)
    for r in runs:
        if r.limit_hit:
            limits[r.limit_hit].append(r.run_id)
    outcomes = Counter(r.outcome for r in runs)
    return LoopStats(
        loop=loop_name, runs=len(runs), run_ids=[r.run_id for r in runs],
        outcomes={k: outcomes.get(k, 0) for k in ("done", "failed", "abandoned", "blocked", "active")},
        limits_hit=dict(limits), total_iterations={r.run_id: r.total_iterations for r in runs},
        max_iterations={r.run_id: r.max_iterations for r in runs},
        interview_rounds={r.run_id: r.interview_rounds for r in runs if r.interview_rounds is not None},
        stages=[stats[s] for s in order if s in stats], versions=versions,
    )


# -- proposals ------------------------------------------------------------------------------------


class Evidence(BaseModel):
    runs: list[str]
    numbers: dict[str, Any]
    summary: str


class Edit(BaseModel):
    path: list[str | int]
    value: Any


class Proposal(BaseModel):
    """One proposed loop edit; saved as ``.odin-loop/refinements/<id>.yaml``."""

    model_config = ConfigDict(extra="forbid")

    id: str
    loop: str
    rule: str
    title: str
    status: Literal["proposed", "applied", "rejected"] = "proposed"
    written_by: Literal["rules", "model"] = "rules"
    created_at: str
    base_version: str | None
    base_sha256: str
    base_source: Literal["project", "builtin"]
    evidence: Evidence
    edits: list[Edit]
    diff: str
    proposed: str  # the whole loop text after the edit (version bumped)
    applied_at: str | None = None
    applied_version: str | None = None
    rejected_at: str | None = None


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Rule:
    def __init__(self, rule: str, title: str, edits: list[tuple[tuple, Any]], evidence: Evidence):
        self.rule, self.title, self.edits, self.evidence = rule, title, edits, evidence


def rule_proposals(loop: Loop, stats: LoopStats) -> list[_Rule]:
    """The rule-based proposals (always offline)."""
    out: list[_Rule] = []
    cap = loop.max_iterations
    # runs that failed at a cap no higher than today's: a cap raised since is not raised again
    capped = [r for r in stats.limits_hit.get("max_iterations", []) if stats.max_iterations.get(r, cap) >= cap]
    if capped:
        new = cap + max(2, cap // 2)
        out.append(_Rule("max_iterations", f"raise max_iterations from {cap} to {new}",
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
                out.append(_Rule("max_iterations", f"lower max_iterations from {cap} to {new}",
                                 [(("max_iterations",), new)],
                                 Evidence(runs=done, numbers={"runs": stats.runs, "most_loopbacks_used": max(used),
                                                              "max_iterations": cap},
                                          summary=f"all {stats.runs} runs finished using at most {max(used)} "
                                                  f"of {cap} loopbacks")))
    stuck = stats.limits_hit.get("max_no_progress", [])
    if stuck and loop.max_no_progress:
        new = loop.max_no_progress + 2
        out.append(_Rule("max_no_progress", f"raise max_no_progress from {loop.max_no_progress} to {new}",
                         [(("max_no_progress",), new)],
                         Evidence(runs=stuck, numbers={"runs": stats.runs, "failed_without_progress": len(stuck),
                                                       "max_no_progress": loop.max_no_progress},
                                  summary=f"{len(stuck)} of {stats.runs} run(s) failed after "
                                          f"{loop.max_no_progress} loopbacks without progress")))
    for i, stage in enumerate(loop.stages):
        s = stats.stage(stage.id)
        if s is None:
            continue
        path = ("stages", i, "gate")
        if stage.gate.on_fail is None and i > 0 and s.failures >= 2 and s.max_consecutive_failures >= 2:
            target = _upstream(loop, i)
            runs = sorted({r for g in s.failure_reasons for r in g.runs})
            out.append(_Rule("on_fail", f"loop {stage.id} back to {target} when its gate fails",
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
            out.append(_Rule("check", f"sharpen the check of {stage.id} with the users' repeated feedback",
                             [((*path, "check"), check)],
                             Evidence(runs=runs, numbers={"revisions": sum(g.count for g in repeated)},
                                      summary=f"users revised {stage.id} {sum(g.count for g in repeated)} time(s): "
                                              + " | ".join(g.text for g in repeated[:3]))))
        unchanged = s.approved_unchanged_runs
        if stage.gate.pauses and len(unchanged) >= APPROVED_UNCHANGED_RUNS and not s.revised_runs:
            out.append(_Rule("mode", f"let the judge alone pass {stage.id} (ai+human -> ai)",
                             [((*path, "mode"), "ai")],
                             Evidence(runs=unchanged, numbers={"approved_unchanged": len(unchanged), "revised": 0},
                                      summary=f"users approved {stage.id} unchanged in all {len(unchanged)} runs")))
    for i, stage in enumerate(loop.stages):
        s = stats.stage(stage.id)
        pair = _unrelated(s.failure_reasons) if s is not None else None
        if pair is not None and "in particular, not:" not in stage.gate.check:  # not a stage split before
            first, second = pair
            new_id = next(f"{stage.id}-{n}" for n in range(2, 100) if f"{stage.id}-{n}" not in loop.stage_ids())
            check = " ".join(stage.gate.check.split()).rstrip(".")
            out.append(_Rule("split", f"split {stage.id} in two: its failures fall into unrelated groups",
                             [(("+duplicate", "stages", i), None), (("stages", i + 1, "id"), new_id),
                              (("stages", i, "gate", "check"), f"{check}; in particular, not: {first.text}"),
                              (("stages", i + 1, "gate", "check"), f"{check}; in particular, not: {second.text}")],
                             Evidence(runs=sorted(set(first.runs) | set(second.runs)),
                                      numbers={"groups": len(s.failure_reasons), "first": first.count,
                                               "second": second.count},
                                      summary=f"{stage.id} failed for two unrelated reasons: "
                                              f"{first.text} (x{first.count}) | {second.text} (x{second.count})")))
    for i, stage in enumerate(loop.stages):  # a judge passed work that a later command then failed
        for later in loop.stages[i + 1:]:
            if later.gate.on_fail != stage.id or not later.gate.commands or stage.gate.commands:
                continue
            s = stats.stage(later.id)
            cmd_fails = [g for g in (s.failure_reasons if s else []) if g.text.startswith("gate command")]
            runs = sorted({r for g in cmd_fails for r in g.runs})
            if len(runs) >= 2:
                cmds = [c.cmd for c in later.gate.commands]
                out.append(_Rule("gate_run", f"let {stage.id}'s gate run {later.id}'s commands",
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


# -- proposal files ------------------------------------------------------------------------------


class Refinements:
    """The project's refinement proposals and the loops they edit."""

    def __init__(self, project_dir: Path | str):
        self.project_dir = Path(project_dir).resolve()
        self.dir = self.project_dir / ".odin-loop" / "refinements"
        self.catalog = LoopCatalog(self.project_dir)
        self.history_dir = self.catalog.project_loops_dir / ".history"

    # -- the loop a proposal edits --
    def current(self, loop_name: str) -> tuple[str, str, Loop]:
        """The loop's current text, its source (project | builtin) and the loop."""
        path = self.catalog.resolve(loop_name)
        text = path.read_text(encoding="utf-8")
        source = "project" if path.parent.resolve() == self.catalog.project_loops_dir.resolve() else "builtin"
        return text, source, self.catalog.load(loop_name)

    # -- files --
    def path(self, proposal_id: str) -> Path:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*-[0-9]+", proposal_id or ""):
            raise UsageError(f"{proposal_id!r} is not a proposal id", hint="ids look like bugfix-3; `odin refine list` shows them")
        path = self.dir / f"{proposal_id}.yaml"
        check_confined(path, [self.project_dir], f"refinement proposal {proposal_id}", base=self.project_dir)
        return path

    def all(self, loop: str | None = None) -> list[Proposal]:
        out = []
        for p in sorted(self.dir.glob("*.yaml"), key=_by_number) if self.dir.is_dir() else []:
            try:
                proposal = self.load(p.stem)
            except OdinError:
                continue
            if loop is None or proposal.loop == loop:
                out.append(proposal)
        return out

    def load(self, proposal_id: str) -> Proposal:
        """A proposal file, checked: a broken file is an error naming its line and field."""
        path = self.path(proposal_id)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise UsageError(f"no proposal {proposal_id!r} ({path} does not exist)",
                             hint="`odin refine list` shows the proposals") from None
        try:
            doc = load_yaml(text)
        except YamlError as exc:
            raise OdinError(f"{path}:{exc.line}:{exc.column}: {exc.message}",
                            hint="fix the proposal file, or run `odin refine` again for a fresh one") from None
        try:
            return Proposal.model_validate(doc.data)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = tuple(err["loc"])
            line, column = doc.position(loc)
            raise OdinError(f"{path}:{line}:{column}: field {'.'.join(map(str, loc))}: {err['msg']}",
                            hint="fix the proposal file, or run `odin refine` again for a fresh one") from None

    def save(self, proposal: Proposal) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.path(proposal.id)
        data = proposal.model_dump(mode="json")
        write_atomic(path, yaml.dump(data, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=100))
        return path

    def _next_number(self, loop: str) -> int:
        numbers = [int(p.stem.rsplit("-", 1)[1]) for p in self.dir.glob(f"{loop}-*.yaml")
                   if p.stem.rsplit("-", 1)[1].isdigit() and p.stem.rsplit("-", 1)[0] == loop] if self.dir.is_dir() else []
        return max(numbers, default=0) + 1

    # -- proposing --
    def propose(self, loop_name: str, stats: LoopStats, now: str, model: Callable[..., list[_Rule]] | None = None,
                notices: list[str] | None = None) -> list[Proposal]:
        """Save a proposal for each rule that fires, then for each of ``model``'s (called with the loop, its text,
        the stats and the rule proposals' titles); one already open against the same base is not repeated."""
        text, source, loop = self.current(loop_name)
        base = sha256(text)
        pending = {(p.rule, p.proposed) for p in self.all(loop_name) if p.status == "proposed" and p.base_sha256 == base}
        rules = rule_proposals(loop, stats)
        if model is not None:
            rules += model(loop, text, stats, [r.title for r in rules])
        out = []
        for rule in rules:
            try:
                edited = text
                for path, value in rule.edits:
                    if path[0] == "+duplicate":
                        edited = duplicate_item(edited, path[1:])
                    else:
                        edited = set_value(edited, path, value)
                edited = set_value(edited, ("version",), bump_version(loop.version))
            except (EditError, ValueError, TypeError, KeyError, IndexError) as exc:
                if notices is not None:
                    notices.append(f"proposal {rule.title!r} left out: its edit cannot be made ({exc})")
                continue
            check = validate_text(edited, f"{loop_name}.yaml (proposed)", expected_name=loop_name)
            if not check.ok:
                if notices is not None:
                    notices.append(f"proposal {rule.title!r} left out: the loop would not validate "
                                   f"({check.errors[0].field}: {check.errors[0].message})")
                continue
            if (rule.rule, edited) in pending:
                continue
            label = f"{loop_name}.yaml"
            diff = "".join(difflib.unified_diff(text.splitlines(True), edited.splitlines(True),
                                                f"a/{label} (version {loop.version})",
                                                f"b/{label} (version {bump_version(loop.version)})"))
            proposal = Proposal(
                id=f"{loop_name}-{self._next_number(loop_name)}", loop=loop_name, rule=rule.rule, title=rule.title,
                written_by=getattr(rule, "written_by", "rules"), created_at=now,
                base_version=_version_text(loop.version), base_sha256=base, base_source=source,
                evidence=rule.evidence, edits=[Edit(path=list(p), value=v) for p, v in rule.edits], diff=diff,
                proposed=edited,
            )
            self.save(proposal)
            out.append(proposal)
        return out

    # -- deciding --
    def apply(self, proposal_id: str, now: str) -> tuple[Proposal, Path]:
        proposal = self.load(proposal_id)
        if proposal.status != "proposed":
            raise OdinError(f"proposal {proposal_id} is already {proposal.status}", hint="`odin refine list` shows the open ones")
        text, source, loop = self.current(proposal.loop)
        if _version_text(loop.version) != proposal.base_version or sha256(text) != proposal.base_sha256:
            raise OdinError(
                f"proposal {proposal_id} is stale: it edits version {proposal.base_version} of loop {proposal.loop!r}, "
                f"and the loop is now version {_version_text(loop.version)}"
                + ("" if _version_text(loop.version) != proposal.base_version else " (its text has changed since)"),
                hint=f"run `odin refine {proposal.loop}` again for proposals against the current loop")
        report = validate_text(proposal.proposed, f"{self.path(proposal_id)} (field proposed)", expected_name=proposal.loop)
        if not report.ok:
            offset = _block_line(self.path(proposal_id), "proposed")
            details = "\n".join(f"  {self.path(proposal_id)}:{d.line + offset}:{d.column + 2}: {d.field}: {d.message}"
                                for d in report.errors)
            raise LoopInvalid(f"proposal {proposal_id} does not make a valid loop:\n{details}", report=report,
                              hint="fix the proposal's `proposed` text, or reject it")
        target = self.catalog.project_loops_dir / f"{proposal.loop}.yaml"
        old_version = proposal.base_version or "1"
        history = self.history_dir / f"{proposal.loop}.v{old_version}.yaml"
        for path, what in ((target, f"loop {proposal.loop}"), (history, "the loop's history")):
            check_confined(path, [self.project_dir], what, base=self.project_dir)
        self.history_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(history, text)
        write_atomic(target, proposal.proposed)
        proposal.status, proposal.applied_at = "applied", now
        proposal.applied_version = _version_text(report.loop.version)
        self.save(proposal)
        return proposal, target

    def reject(self, proposal_id: str, now: str) -> Proposal:
        proposal = self.load(proposal_id)
        if proposal.status != "proposed":
            raise OdinError(f"proposal {proposal_id} is already {proposal.status}")
        proposal.status, proposal.rejected_at = "rejected", now
        self.save(proposal)
        return proposal


def _by_number(path: Path) -> tuple[str, int]:
    stem, _, n = path.stem.rpartition("-")
    return (stem, int(n) if n.isdigit() else 0)


def _block_line(path: Path, key: str) -> int:
    """The line number (0-based offset) where a top-level block scalar ``key: |`` starts in ``path``."""
    try:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith(f"{key}:"):
                return n
    except OSError:
        pass
    return 0


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings (the diff, the proposed loop) as literal blocks, readable in an editor."""


def _str_presenter(dumper, data):
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_BlockDumper.add_representer(str, _str_presenter)


# -- one refine pass ---------------------------------------------------------------------------


class Effect(BaseModel):
    """An applied proposal, judged by the runs of the version it replaced and of the version it made."""

    proposal: str
    title: str
    before_version: str | None
    after_version: str | None
    before: VersionStats | None
    after: VersionStats | None


def effects(proposals: list[Proposal], stats: LoopStats) -> list[Effect]:
    by_version = {v.version: v for v in stats.versions}
    return [Effect(proposal=p.id, title=p.title, before_version=p.base_version, after_version=p.applied_version,
                   before=by_version.get(p.base_version), after=by_version.get(p.applied_version))
            for p in proposals if p.status == "applied"]


class RefineResult(BaseModel):
    effects: list[Effect] = Field(default_factory=list)  # applied proposals: pass rate before and after
    stats: list[LoopStats]
    proposals: list[Proposal]  # new in this pass
    still_open: list[Proposal] = Field(default_factory=list)  # proposed earlier, not yet applied or rejected
    notices: list[str] = Field(default_factory=list)


def refine(project_dir: Path | str, loop: str | None = None, now: str | None = None, settings=None,
           client_factory: Callable[[], Any] | None = None) -> RefineResult:
    """Aggregate the runs of ``loop`` (or of every loop that has runs) and save the rule-based proposals;
    with ``settings`` (a configured model), the model may add proposals (see :mod:`odin_magic.learning.refine_model`)."""
    project_dir = Path(project_dir)
    notices: list[str] = []
    runs = read_runs(project_dir, loop, notices)
    if not runs:
        where = f"of loop {loop!r} " if loop else ""
        raise OdinError(f"no runs {where}in {project_dir.resolve()}: refine learns from past runs",
                        hint="run the loop first (`odin run LOOP --task ...`, or --dry to try it)")
    now = now or datetime.now().strftime("%Y-%m-%dT%H:%M:%S")
    refinements = Refinements(project_dir)
    all_stats, proposals, still_open, all_effects = [], [], [], []
    for name in dict.fromkeys(r.loop for r in runs):
        of_loop = [r for r in runs if r.loop == name]
        try:
            _, _, current = refinements.current(name)
        except OdinError as exc:
            notices.append(f"loop {name!r} cannot be loaded, so nothing is proposed for it: {exc.message}")
            all_stats.append(aggregate(name, of_loop))
            continue
        stats = aggregate(name, of_loop, current.stage_ids())
        all_stats.append(stats)
        model = None
        if settings is not None:
            from odin_magic.learning.refine_model import model_rules

            def model(loop_, text, stats_, titles):
                return model_rules(loop_, text, stats_, titles, settings, client_factory, notices)
        new = refinements.propose(name, stats, now, model=model, notices=notices)
        proposals += new
        fresh = {p.id for p in new}
        all_effects += effects(refinements.all(name), stats)
        still_open += [p for p in refinements.all(name) if p.status == "proposed" and p.id not in fresh]
    return RefineResult(stats=all_stats, proposals=proposals, still_open=still_open, notices=notices,
                        effects=all_effects)
