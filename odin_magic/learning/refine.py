"""Muninn: learn from a loop's past runs, propose loop edits, apply them on approval.

:func:`~odin_magic.learning.runstats.aggregate` reads every run of a loop from its event log
(authoritative) and the run's own copy of its loop (which records the version it ran), and
computes :class:`LoopStats` (:mod:`odin_magic.learning.runstats`); the rules
(:mod:`odin_magic.learning.rules`) and the model (:mod:`odin_magic.learning.refine_model`) say what
to change. :meth:`Refinements.propose` turns them into
:class:`Proposal` objects, each a concrete edit with its evidence and a unified
diff of the loop YAML, saved as ``.odin-loop/refinements/<loop>-<n>.yaml``.
:func:`apply` writes the edited loop into the project (a built-in is copied,
never edited in place), bumps its ``version``, keeps the previous text in
``.odin-loop/loops/.history/<loop>.v<N>.yaml``, and refuses a proposal whose
result does not validate or whose base is no longer the current loop.
"""

from __future__ import annotations

import difflib
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from odin_magic.core.atomic import write_atomic
from odin_magic.core.confine import check_confined
from odin_magic.core.errors import LoopInvalid, OdinError, UsageError
from odin_magic.learning.rules import (
    APPROVED_UNCHANGED_RUNS, LOWER_CAP_RUNS, Evidence, Rule, _Rule, rule_proposals, sha256
)
from odin_magic.learning.runstats import (
    OUTCOMES, Group, LoopStats, RunFacts, StageStats, VersionStats, aggregate, normalize, read_runs, version_text
)
from odin_magic.loop.catalog import LoopCatalog
from odin_magic.loop.loopedit import EditError, bump_version, duplicate_item, remove_key, set_value
from odin_magic.loop.schema import Loop
from odin_magic.loop.validation import validate_text
from odin_magic.loop.yamlsource import YamlError, load_yaml

#: this module's own names, and those of the modules it was split into that it still hands on
__all__ = [
    "APPROVED_UNCHANGED_RUNS", "LOWER_CAP_RUNS", "OUTCOMES", "Edit", "Effect", "Evidence", "Group", "LoopStats",
    "Proposal", "RefineResult", "Refinements", "Rule", "RunFacts", "StageStats", "VersionStats", "_Rule",
    "aggregate", "effects", "normalize", "read_runs", "refine", "rule_proposals", "sha256", "version_text",
]

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
    def propose(self, loop_name: str, stats: LoopStats, now: str, model: Callable[..., list[Rule]] | None = None,
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
                    elif path[0] == "-remove":
                        edited = remove_key(edited, path[1:])
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
                base_version=version_text(loop.version), base_sha256=base, base_source=source,
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
        if version_text(loop.version) != proposal.base_version or sha256(text) != proposal.base_sha256:
            raise OdinError(
                f"proposal {proposal_id} is stale: it edits version {proposal.base_version} of loop {proposal.loop!r}, "
                f"and the loop is now version {version_text(loop.version)}"
                + ("" if version_text(loop.version) != proposal.base_version else " (its text has changed since)"),
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
        proposal.applied_version = version_text(report.loop.version)
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
        model = _model(settings, client_factory, notices) if settings is not None else None
        new = refinements.propose(name, stats, now, model=model, notices=notices)
        proposals += new
        fresh = {p.id for p in new}
        all_effects += effects(refinements.all(name), stats)
        still_open += [p for p in refinements.all(name) if p.status == "proposed" and p.id not in fresh]
    return RefineResult(stats=all_stats, proposals=proposals, still_open=still_open, notices=notices,
                        effects=all_effects)


def _model(settings, client_factory: Callable[[], Any] | None, notices: list[str]) -> Callable[..., list[Rule]]:
    """The model's proposals, as :meth:`Refinements.propose` asks for them."""
    from odin_magic.learning.refine_model import RefineModel, model_rules

    def model(loop: Loop, text: str, stats: LoopStats, titles: list[str]) -> list[Rule]:
        return model_rules(loop, text, stats, titles, RefineModel(settings, client_factory), notices)
    return model
