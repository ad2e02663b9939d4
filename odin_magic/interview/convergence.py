"""The numbers of a deep interview, computed by the engine (never self-assessed).

* component ambiguity = 1 - sum(clarity[d] * weight[d]) over the weighted dimensions;
* run ambiguity = the maximum over active components (the weakest one drives the gate);
* ontology stability = (stable + renamed) / total entities, against the previous round;
  an entity is *stable* when the previous round named it too, *renamed* when it is
  new but an unmatched previous entity of the same type shares more than half of
  its fields (overlap = shared fields / the larger field list);
* the next target: the weakest active component and dimension, rotating across components;
* the clarity cap on auto-answers and the stop condition (the gate).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from odin_magic.interview.limits import EARLY_EXIT_FROM_ROUND  # noqa: F401  (re-exported: its home is .limits)
from odin_magic.interview.models import ClarityScores, Entity, InterviewState

GREENFIELD_WEIGHTS: dict[str, float] = {"goal": 0.40, "constraints": 0.30, "criteria": 0.30}
BROWNFIELD_WEIGHTS: dict[str, float] = {"goal": 0.35, "constraints": 0.25, "criteria": 0.25, "context": 0.15}

#: A dimension lifted only by an auto-answer stays at or below this unless the answer's confidence is high.
AUTO_ANSWER_CAP = 0.85
#: The ontologist challenge fires only while run ambiguity is above this.
ONTOLOGIST_MIN_AMBIGUITY = 0.3
#: The round that warns (EARLY_EXIT_FROM_ROUND, the rounds before which the interview never stops
#: early, is in .limits, which front ends import cheaply).
WARNING_ROUND = 10

_EPS = 1e-9

#: Extensions that make a project "brownfield": it already has code the work must fit into.
CODE_SUFFIXES = frozenset(
    ".py .pyx .js .jsx .ts .tsx .mjs .go .rs .java .kt .scala .c .h .cc .cpp .hpp .cs .rb .php .swift "
    ".m .r .jl .lua .sh .sql .vue .svelte .dart .ex .exs .erl .hs .clj .ml .fs".split()
)
IGNORED_DIRS = frozenset(
    ".git .hg .svn .odin-loop .venv venv env node_modules __pycache__ .ipynb_checkpoints .mypy_cache "
    ".pytest_cache .tox build dist site-packages".split()
)


def weights_for(mode: str, override: dict[str, float] | None = None) -> dict[str, float]:
    """The clarity weights: the stage's ``dimensions`` if given, else the mode's defaults."""
    if override:
        return dict(override)
    return dict(BROWNFIELD_WEIGHTS if mode == "brownfield" else GREENFIELD_WEIGHTS)


def detect_mode(project_dir: Path, limit: int = 5000) -> str:
    """``brownfield`` when the project already has source code, else ``greenfield``.

    Looks at no more than ``limit`` directory entries; tool and environment
    directories (``.git``, ``.odin-loop``, virtualenvs, ``node_modules``) do not count.
    """
    seen = 0
    for root, dirs, files in os.walk(project_dir):
        dirs[:] = [d for d in dirs if d not in IGNORED_DIRS and not d.endswith(".egg-info")]
        for name in files:
            seen += 1
            if Path(name).suffix.lower() in CODE_SUFFIXES:
                return "brownfield"
            if seen >= limit:
                return "greenfield"
    return "greenfield"


def component_ambiguity(scores: ClarityScores, weights: dict[str, float]) -> float:
    """``1 - sum(clarity x weight)``, rounded to 4 places so hand-worked numbers compare exactly."""
    clarity = sum(scores.get(d) * w for d, w in weights.items())
    return round(max(0.0, min(1.0, 1.0 - clarity)), 4)


def component_ambiguities(state: InterviewState) -> dict[str, float]:
    return {
        c.name: component_ambiguity(state.clarity.get(c.name, ClarityScores()), state.weights)
        for c in state.active
    }


def run_ambiguity(state: InterviewState) -> tuple[float, str]:
    """The maximum component ambiguity and the component that has it (first in topology order on ties)."""
    per = component_ambiguities(state)
    if not per:
        return 1.0, ""
    worst = max(per, key=lambda name: per[name])  # max keeps the first of equal values
    return per[worst], worst


def within(ambiguity: float, threshold: float) -> bool:
    return ambiguity <= threshold + _EPS


@dataclass(frozen=True)
class Stability:
    total: int
    stable: int
    renamed: int

    @property
    def value(self) -> float | None:
        if self.total == 0:
            return None
        return round((self.stable + self.renamed) / self.total, 4)


def field_overlap(a: list[str], b: list[str]) -> float:
    """Shared fields over the larger field list (case-insensitive); 0 when both are empty."""
    fa = {f.strip().casefold() for f in a if f.strip()}
    fb = {f.strip().casefold() for f in b if f.strip()}
    if not fa or not fb:
        return 0.0
    return len(fa & fb) / max(len(fa), len(fb))


def ontology_stability(previous: list[Entity] | None, current: list[Entity]) -> Stability | None:
    """Stability of ``current`` against ``previous``; ``None`` (n/a) when there is no previous snapshot."""
    if previous is None or not previous:
        return None
    prev_by_name = {e.name.strip().casefold(): e for e in previous}
    stable = 0
    unmatched_now: list[Entity] = []
    matched_prev: set[str] = set()
    for entity in current:
        key = entity.name.strip().casefold()
        if key in prev_by_name and key not in matched_prev:
            stable += 1
            matched_prev.add(key)
        else:
            unmatched_now.append(entity)
    renamed = 0
    free_prev = [e for k, e in prev_by_name.items() if k not in matched_prev]
    for entity in unmatched_now:
        best, best_overlap = None, 0.5
        for old in free_prev:
            if old.type != entity.type:
                continue
            overlap = field_overlap(old.fields, entity.fields)
            if overlap > best_overlap + _EPS:
                best, best_overlap = old, overlap
        if best is not None:
            renamed += 1
            free_prev.remove(best)
    return Stability(total=len(current), stable=stable, renamed=renamed)


def has_criterion(state: InterviewState, component: str) -> bool:
    key = component.casefold()
    return any(c.component.casefold() == key for c in state.criteria)


def choose_target(state: InterviewState) -> tuple[str, str]:
    """The component and dimension to ask about next.

    Components that still need work (ambiguity above the threshold, or no
    acceptance criterion yet) come first; among several, the one targeted in
    the previous round is passed over so that questioning rotates and a
    well-described component never stands in for a vague one. Within the
    chosen component the dimension with the lowest clarity wins (ties: the
    heavier weight, then the order of the weights); a component that is clear
    enough but has no criterion is asked about its criteria. A skipped
    component+dimension is avoided while another one is available.
    """
    per = component_ambiguities(state)
    active = [c.name for c in state.active]
    if not active:
        raise ValueError("no active component to ask about")
    needs_work = [n for n in active if not within(per[n], state.threshold) or not has_criterion(state, n)]
    pool = needs_work or active
    last = state.rounds[-1].component if state.rounds else None
    if len(pool) > 1 and last in pool:
        pool = [n for n in pool if n != last]

    def open_dims(name: str) -> list[str]:
        dims = [d for d in state.weights if f"{name}.{d}" not in state.skipped]
        return dims or list(state.weights)

    # weakest component first; a component whose every dimension was skipped goes last
    def component_key(name: str) -> tuple:
        all_skipped = all(f"{name}.{d}" in state.skipped for d in state.weights)
        return (all_skipped, -per[name], active.index(name))

    component = sorted(pool, key=component_key)[0]
    scores = state.clarity.get(component)
    order = list(state.weights)
    if within(per[component], state.threshold) and not has_criterion(state, component) and "criteria" in state.weights:
        return component, "criteria"
    dims = open_dims(component)
    dimension = min(
        dims, key=lambda d: (scores.get(d) if scores else 0.0, -state.weights[d], order.index(d))
    )
    return component, dimension


def hold_at_cap(old: ClarityScores, new: ClarityScores, dims: list[str]) -> tuple[ClarityScores, list[str]]:
    """Keep ``dims`` from rising above :data:`AUTO_ANSWER_CAP` (or above their old value, if that was higher).

    Returns the held scores and the dimensions that were held back.
    """
    values = new.model_dump()
    capped: list[str] = []
    for dim in dims:
        ceiling = max(AUTO_ANSWER_CAP, old.get(dim))
        if values[dim] > ceiling + _EPS:
            values[dim] = ceiling
            capped.append(dim)
    return ClarityScores(**values), capped


@dataclass(frozen=True)
class StopCheck:
    """The stop condition, which is also the gate of a deep-interview stage."""

    ambiguity: float
    threshold: float
    worst: str
    missing_criteria: list[str] = field(default_factory=list)
    blocking: list[str] = field(default_factory=list)

    @property
    def ambiguity_ok(self) -> bool:
        return within(self.ambiguity, self.threshold)

    @property
    def holds(self) -> bool:
        return self.ambiguity_ok and not self.missing_criteria and not self.blocking

    def reasons(self) -> list[str]:
        out = []
        if self.ambiguity_ok:
            out.append(f"run ambiguity {self.ambiguity:.2f} <= threshold {self.threshold:.2f}")
        else:
            out.append(
                f"run ambiguity {self.ambiguity:.2f} > threshold {self.threshold:.2f} (worst: {self.worst})"
            )
        if self.missing_criteria:
            out.append("no testable acceptance criterion for: " + ", ".join(self.missing_criteria))
        else:
            out.append("every active component has a testable acceptance criterion")
        if self.blocking:
            out.append(f"{len(self.blocking)} unresolved blocking open question(s)")
        else:
            out.append("no unresolved blocking open question")
        return out


def stop_check(state: InterviewState) -> StopCheck:
    ambiguity, worst = run_ambiguity(state)
    missing = [c.name for c in state.active if not has_criterion(state, c.name)]
    blocking = [q.text for q in state.open_questions if q.blocking and not q.resolved]
    return StopCheck(
        ambiguity=ambiguity, threshold=state.threshold, worst=worst, missing_criteria=missing, blocking=blocking
    )
