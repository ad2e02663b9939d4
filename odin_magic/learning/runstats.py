"""What a loop's runs say, in numbers: :func:`read_runs` reads each run's event log (authoritative)
and its own copy of its loop (the version it ran) into :class:`RunFacts`; :func:`aggregate`
computes a loop's :class:`LoopStats` (outcomes, limits hit, per-stage pass rates, failure reasons,
revise feedback, approvals, time, tokens, cost, and pass rates per loop version). Muninn's rules
(:mod:`odin_magic.learning.rules`) and the model (:mod:`odin_magic.learning.refine_model`) read them.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from odin_magic.learning.metric_stats import MetricStats, metric_stats, run_series
from odin_magic.runs.metric_history import MetricSeries
from odin_magic.runs.records import Record, RecordType
from odin_magic.runs.state import Usage
from odin_magic.runs.store import LOG_NAME, RunCorrupt, RunStore, fold, read_log

#: a run's status -> its outcome; any other status (running, awaiting approval or an answer) is "active"
OUTCOMES = {"done": "done", "failed": "failed", "abandoned": "abandoned", "blocked": "blocked"}


# -- reading the runs ------------------------------------------------------------------------


class RunFacts(BaseModel):
    """What one run says about its loop, read from its event log."""

    model_config = ConfigDict(arbitrary_types_allowed=True)  # its records are the log's typed records

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
    records: list[Record] = Field(default_factory=list, exclude=True)
    metrics: list[MetricSeries] = Field(default_factory=list, exclude=True)  # its metric gates' figures


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


def version_text(version: Any) -> str | None:
    """A loop's ``version`` as text (None stays None)."""
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
            run_id=run_id, loop=state.loop, version=version_text(loop_data.get("version")), status=state.status,
            outcome=outcome, failure_reason=state.failure_reason,
            limit_hit=_limit_of(state.failure_reason) or _block_of(state),
            total_iterations=state.total_iterations, max_iterations=state.max_iterations,
            interview_rounds=state.interview.rounds if state.interview is not None else None, records=records,
            metrics=run_series(store.run_dir(run_id), state.history, loop_data),
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
    metrics: list[MetricStats] = Field(default_factory=list)  # the metric gates' (learning.metric_stats)

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


class _Tally:
    """The per-stage numbers of :func:`aggregate`, counted record by record over a loop's runs."""

    def __init__(self) -> None:
        self.stats: dict[str, StageStats] = {}
        self.reasons: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self.feedback: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self.first_try_by_version: dict[str | None, list[bool]] = defaultdict(list)

    def of(self, stage: str) -> StageStats:
        return self.stats.setdefault(stage, StageStats(stage=stage))

    def run(self, run: RunFacts) -> None:
        seen: set[str] = set()
        streak: Counter = Counter()
        revised_here: set[str] = set()
        approved_here: set[str] = set()
        previous_at = None
        for rec in run.records:
            at, stage, kind = _stamp(rec.at), rec.stage, rec.type
            if kind == RecordType.GATE and stage:
                self._gate(run, rec, seen, streak)
                if at and previous_at:
                    self.of(stage).seconds += max(0.0, (at - previous_at).total_seconds())
            elif kind == RecordType.REVISED and stage:
                text = rec.patch.get("feedback")
                if text:
                    self.feedback[stage].append((text, run.run_id))
                revised_here.add(stage)
            elif kind == RecordType.APPROVED and stage:
                self.of(stage).approvals += 1
                approved_here.add(stage)
            elif kind == RecordType.USAGE and stage:
                usage = rec.usage or Usage()
                s = self.of(stage)
                s.tokens += (usage.input_tokens + usage.output_tokens + usage.cache_creation_input_tokens
                             + usage.cache_read_input_tokens)
                s.cost_usd += usage.cost_usd
            if at:
                previous_at = at
        for stage in approved_here:
            s = self.of(stage)
            (s.revised_runs if stage in revised_here else s.approved_unchanged_runs).append(run.run_id)
        for stage in revised_here - approved_here:
            self.of(stage).revised_runs.append(run.run_id)

    def _gate(self, run: RunFacts, rec: Record, seen: set[str], streak: Counter) -> None:
        stage, entry = rec.stage, rec.entry
        s = self.of(stage)
        s.executions += 1
        passed = entry is not None and entry.result == "pass"
        if stage not in seen:
            seen.add(stage)
            s.runs += 1
            s.first_try_passes += passed
            self.first_try_by_version[run.version].append(passed)
        if passed:
            streak[stage] = 0
        else:
            s.failures += 1
            streak[stage] += 1
            s.max_consecutive_failures = max(s.max_consecutive_failures, streak[stage])
            self.reasons[stage].append(((entry.reason if entry else None) or "(no reason given)", run.run_id))

    def stages(self, stage_order: list[str] | None) -> list[StageStats]:
        """Every stage's numbers, rounded, in ``stage_order`` (stages it does not name after, by id)."""
        for stage, s in self.stats.items():
            s.first_try_pass_rate = round(s.first_try_passes / s.runs, 3) if s.runs else None
            s.failure_reasons = _groups(self.reasons[stage])
            s.revise_feedback = _groups(self.feedback[stage])
            s.cost_usd = round(s.cost_usd, 6)
            s.seconds = round(s.seconds, 1)
        order = list(stage_order or [])
        order += sorted(set(self.stats) - set(order))
        return [self.stats[s] for s in order if s in self.stats]

    def versions(self, runs: list[RunFacts]) -> list[VersionStats]:
        out = []
        for version in dict.fromkeys(r.version for r in runs):
            of_version = [r for r in runs if r.version == version]
            firsts = self.first_try_by_version.get(version, [])
            out.append(VersionStats(version=version, runs=len(of_version),
                                    done=sum(r.outcome == "done" for r in of_version),
                                    first_try_pass_rate=round(sum(firsts) / len(firsts), 3) if firsts else None))
        return out


def aggregate(loop_name: str, runs: list[RunFacts], stage_order: list[str] | None = None) -> LoopStats:
    """The numbers of a loop's runs, per run, per stage (in ``stage_order``) and per loop version."""
    tally = _Tally()
    for run in runs:
        tally.run(run)
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
        stages=tally.stages(stage_order), versions=tally.versions(runs),
        metrics=metric_stats([(r.run_id, r.metrics) for r in runs]),
    )
