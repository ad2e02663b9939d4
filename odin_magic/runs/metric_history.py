"""A run's metric history: the figure of every metric gate evaluation, against its baseline and target.

Read from the gate evidence (:mod:`odin_magic.runs.evidence`): each history entry whose evidence carries a
``metric`` (a gate's ``measure:``, :mod:`odin_magic.engine.metric_gate`) or a ``comparison`` (a judge's
``compare: baseline``, :mod:`odin_magic.engine.judge_compare`) is a point of that gate's series. The charts,
``odin status``'s metric lines, the report and ``odin refine`` are drawn from these series.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Literal, Sequence

from odin_magic.runs import evidence as gate_evidence

KINDS = ("metric", "comparison")


@dataclass(frozen=True)
class MetricPoint:
    """One gate evaluation's figures (``figure`` None: it could not be measured)."""

    entry: int  # the history entry's number (1-based)
    figure: float | None
    baseline: float | None
    passed: bool
    blocked: bool = False  # the gate could not decide (noisier than the tolerance, no baseline and no target)
    change: str | None = None  # improved | no change | worse | unknown
    spread: float | None = None  # the larger of the two measurements' spreads (None: not recorded)
    base_spread: float | None = None  # the baseline's own spread
    tolerance_noise: bool = False  # blocked because the baseline spread more than the tolerance


@dataclass
class MetricSeries:
    """The points of one gate's figure over a run, oldest first."""

    stage: str
    name: str
    kind: Literal["metric", "comparison"] = "metric"
    unit: str | None = None
    direction: str = "lower"
    target: float | None = None
    cmd: str | None = None
    points: list[MetricPoint] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str, str]:
        return self.stage, self.kind, self.name

    @property
    def first_baseline(self) -> float | None:
        return next((p.baseline for p in self.points if p.baseline is not None), None)

    @property
    def figures(self) -> list[float]:
        return [p.figure for p in self.points if p.figure is not None]


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _point(n: int, m: dict) -> MetricPoint:
    base = m.get("baseline") if isinstance(m.get("baseline"), dict) else {}
    after = m.get("after") if isinstance(m.get("after"), dict) else {}
    spreads = [s for s in (_number(base.get("spread")), _number(after.get("spread"))) if s is not None]
    blocked = m.get("blocked") if isinstance(m.get("blocked"), dict) else None
    noisy = bool(blocked) and "noisier than the tolerance" in str(blocked.get("reason", ""))
    return MetricPoint(entry=n, figure=_number(m.get("figure", after.get("figure"))), baseline=_number(base.get("figure")),
                       passed=bool(m.get("passed")), blocked=blocked is not None, change=m.get("change"),
                       spread=max(spreads) if spreads else None, base_spread=_number(base.get("spread")),
                       tolerance_noise=noisy)


class _Collector:
    """The series found so far, in the order they first appear; :meth:`add` takes one entry's evidence."""

    def __init__(self):
        self.found: dict[tuple[str, str, str], MetricSeries] = {}

    def add(self, n: int, stage: str, ev) -> bool:
        """Entry ``n``'s evidence ``ev`` (of ``stage``); True when it gave a series a point."""
        added = False
        for kind in KINDS:
            m = ev.get(kind) if isinstance(ev, dict) else None
            if not isinstance(m, dict) or m.get("skipped"):
                continue
            s = MetricSeries(stage=stage, name=str(m.get("name") or m.get("cmd") or kind), kind=kind,
                             unit=m.get("unit"), direction=str(m.get("direction") or "lower"),
                             target=_number(m.get("target")), cmd=m.get("cmd"))
            s = self.found.setdefault(s.key, s)
            s.target = _number(m.get("target")) if m.get("target") is not None else s.target
            s.points.append(_point(n, m))
            added = True
        return added


def series_of(stages: Sequence[str], evidences: Sequence[dict]) -> list[MetricSeries]:
    """The series in the evidence of a history (``stages[i]`` the stage of the entry whose evidence is
    ``evidences[i]``, ``{}`` when it had none), in the order they first appear."""
    found = _Collector()
    for n, (stage, ev) in enumerate(zip(stages, evidences), start=1):
        found.add(n, stage, ev)
    return list(found.found.values())


def measured_stages(loop) -> set[str] | None:
    """The stages of ``loop`` whose gate measures (``measure:``) or compares (``compare:``); None: no loop, so
    any stage may have."""
    if loop is None:
        return None
    return {s.id for s in loop.stages if s.gate.measure is not None or s.gate.compare is not None}


def _wanted(entry, stages: set[str] | None, seen: set[str]) -> bool:
    """Whether ``entry``'s evidence is to be read: a stage asked for, a reference not read yet (an approval
    names its gate's again)."""
    if (stages is not None and entry.stage not in stages) or not entry.evidence or entry.evidence in seen:
        return False
    seen.add(entry.evidence)
    return True


def _evidence(reader: gate_evidence.EvidenceReader, entry) -> dict:
    try:
        return reader.read_entry(entry)  # a line changed after it was written: skipped (ValueError)
    except (OSError, ValueError):
        return {}


def read_series(run_dir: Path, history: Iterable, stages: set[str] | None = None) -> list[MetricSeries]:
    """The metric series of a run, from its history entries' evidence (an unreadable one is skipped);
    ``stages``: only these stages' evidence is read (:func:`measured_stages`: a long run's status stays quick)."""
    if stages is not None and not stages:
        return []
    names, evidences, seen = [], [], set()
    with gate_evidence.EvidenceReader(Path(run_dir)) as reader:
        for entry in history:
            names.append(entry.stage)
            evidences.append(_evidence(reader, entry) if _wanted(entry, stages, seen) else {})
    return series_of(names, evidences)


class SeriesCursor:
    """The metric series of one run kept up to date as its history grows: :meth:`update` reads only the
    evidence of the entries added since the last update (the live view's chart: per gate decision, a line or
    two, however long the run). Each line is checked against its seal as it is read, as :func:`read_series`
    does (a changed line is skipped); a line already read is not read again. A history that is not the one
    read so far (shorter, or another entry where the last one read was) is read again from its start."""

    def __init__(self, run_dir: Path, stages: set[str] | None = None):
        self.run_dir = Path(run_dir)
        self.stages = stages
        self.lines_read = 0  # evidence lines read over every update (EvidenceReader.lines_read)
        self._reset()

    def _reset(self) -> None:
        self._found, self._seen = _Collector(), set()
        self._done, self._last = 0, None  # entries read; the last one read (its reference and time)

    @property
    def series(self) -> list[MetricSeries]:
        return list(self._found.found.values())

    def update(self, history: Sequence) -> bool:
        """Read the entries of ``history`` after those already read; True when a series gained a point."""
        if len(history) < self._done or (self._done and _mark(history[self._done - 1]) != self._last):
            self._reset()
        if len(history) == self._done or (self.stages is not None and not self.stages):
            return False
        added = False
        with gate_evidence.EvidenceReader(self.run_dir) as reader:  # opened per update: a replaced file is seen
            for n in range(self._done + 1, len(history) + 1):
                entry = history[n - 1]
                if _wanted(entry, self.stages, self._seen):
                    added = self._found.add(n, entry.stage, _evidence(reader, entry)) or added
            self.lines_read += reader.lines_read
        self._done, self._last = len(history), _mark(history[-1])
        return added


def _mark(entry) -> tuple:
    return entry.stage, entry.at, entry.evidence
