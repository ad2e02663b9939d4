"""``odin roadmap new``: a roadmap proposed by the model from a spec, a finished run's spec or a file of
answers (structured output), written to ``.odin-loop/roadmap.md`` only once the user accepts it.

Offline, the scripted model answers it from ``answers: {roadmap: {new: [{json: {title: ..., milestones:
[...]}}]}}`` (docs/scripted-model.md). The notebook keeps a proposal waiting for Accept in
``.odin-loop/roadmap.proposed.md`` (:func:`save_proposal`, :func:`accept_proposal`, :func:`discard_proposal`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, Field, field_validator, model_validator

from odin_magic.core.atomic import read_nofollow, write_atomic
from odin_magic.core.errors import OdinError, UsageError
from odin_magic.loop.roadmap import NOTE_SEPARATOR, PLAIN_NAME, ROADMAP_FILE, first_error, parse_roadmap

PROPOSAL_FILE = ".odin-loop/roadmap.proposed.md"
SOURCE_LIMIT = 200_000  # characters of the source sent to the model

RULES = """You plan software work for odin-magic as a roadmap: milestones in the order they are reached, each \
with phases in the order they are done. A phase is one small, separately testable change that a single run of a \
development loop can finish (a fix, a feature, a refactor), with a title that says what changes, as an imperative \
sentence. Give milestones ids M1, M2, ... and phases ids p<milestone>.<n> (p1.1, p1.2, p2.1). Keep it small: 1 to \
4 milestones, 1 to 5 phases each. Answer only with the requested JSON."""


class ProposedPhase(BaseModel):
    id: str = Field(description="A plain name: p<milestone number>.<n>, e.g. p1.2")
    title: str = Field(description="One line: what the phase changes.")

    @field_validator("id")
    @classmethod
    def _plain(cls, value: str) -> str:
        if not PLAIN_NAME.match(value):
            raise ValueError(f"phase id {value!r} is not a plain name (letters, digits, '.', '_', '-')")
        return value


class ProposedMilestone(BaseModel):
    id: str = Field(description="M1, M2, ...")
    title: str = Field(description="One line: what is reached at this milestone.")
    phases: list[ProposedPhase] = Field(description="The phases, in the order they are done.")

    @field_validator("id")
    @classmethod
    def _plain(cls, value: str) -> str:
        if not PLAIN_NAME.match(value):
            raise ValueError(f"milestone id {value!r} is not a plain name (letters, digits, '.', '_', '-')")
        return value


class ProposedRoadmap(BaseModel):
    title: str = Field(description="The roadmap's name: what the whole work achieves.")
    milestones: list[ProposedMilestone] = Field(description="The milestones, in order.")

    @model_validator(mode="after")
    def _unique(self) -> "ProposedRoadmap":
        seen: set[str] = set()
        for ident in [m.id for m in self.milestones] + [p.id for m in self.milestones for p in m.phases]:
            if ident in seen:
                raise ValueError(f"id {ident!r} is used twice: every milestone and phase needs its own id")
            seen.add(ident)
        if not any(m.phases for m in self.milestones):
            raise ValueError("the roadmap has no phase")
        return self


def _line(text: str) -> str:
    """A title as one roadmap line: no line breaks, no note separator."""
    return " ".join(text.split()).replace(NOTE_SEPARATOR.strip(), "-")


def roadmap_markdown(proposal: ProposedRoadmap, autonomy: str = "hitl") -> str:
    """The roadmap.md text of a proposal (every phase pending); it parses without an error."""
    out = [f"# {_line(proposal.title) or 'Roadmap'}", f"autonomy: {autonomy}", ""]
    for m in proposal.milestones:
        out.append(f"## {m.id} {_line(m.title)}".rstrip())
        out += [f"- [ ] {p.id} {_line(p.title)}".rstrip() for p in m.phases]
        out.append("")
    text = "\n".join(out)
    roadmap, diags = parse_roadmap(text, "the proposed roadmap")
    error = first_error(diags)
    if error is not None or roadmap is None:
        raise OdinError(f"the model's roadmap does not validate: {error.message if error else 'no roadmap'}",
                        hint="ask again, or write .odin-loop/roadmap.md by hand (docs/roadmap.md)")
    return text


@dataclass(frozen=True)
class Source:
    """What a roadmap is proposed from: its ``label`` (a spec, a run's spec, answers) and text."""

    label: str
    text: str


def _read(path: Path, what: str) -> str:
    try:
        raw = read_nofollow(path, SOURCE_LIMIT * 4)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the {what}: {exc.strerror or exc}",
                         hint="check the path (relative paths are the project's)") from None
    text = raw.decode("utf-8", errors="replace").strip()
    if not text:
        raise UsageError(f"{path}: the {what} is empty", hint="a roadmap is proposed from what the file says")
    return text[:SOURCE_LIMIT]


def source_of(project: Path, *, spec: str | None, run: str | None, answers: str | None) -> Source:
    """The one source ``odin roadmap new`` was given (``--from``, ``--from-run`` or ``--answers``)."""
    given = [(flag, v) for flag, v in (("--from", spec), ("--from-run", run), ("--answers", answers)) if v]
    if len(given) != 1:
        raise UsageError("roadmap new takes one source: --from SPEC, --from-run RUN or --answers FILE",
                         hint="e.g. `odin roadmap new --from spec.md`")
    if run:
        from odin_magic.runs.store import RunStore

        store = RunStore(project)
        state = store.load(run).state
        if state.status != "done":
            raise UsageError(f"run {run} is {state.status}: a roadmap is proposed from a finished run's spec",
                             hint="`odin runs` lists the runs; pick one that ended done")
        path = store.run_dir(run) / "spec.md"
        if not path.is_file():
            raise UsageError(f"run {run} has no spec.md", hint="use --from FILE with a spec of your own")
        return Source(f"spec of run {run}", _read(path, "run's spec"))
    name = spec or answers
    path = Path(name).expanduser()
    if not path.is_absolute() and not path.exists():
        path = project / path
    return Source(f"spec ({name})" if spec else f"answers ({name})", _read(path, "spec" if spec else "answers file"))


def propose_roadmap(source: Source, settings: Any, client_factory: Callable[[], Any] | None = None) -> str:
    """The roadmap.md text the model proposes for ``source`` (structured output; asked again once when the
    reply does not fit)."""
    from odin_magic.workers.client import run_coroutine

    return roadmap_markdown(run_coroutine(lambda: _ask(source, settings, client_factory)))


async def _ask(source: Source, settings: Any, client_factory) -> ProposedRoadmap:
    from odin_magic.workers.prompts import system_blocks
    from odin_magic.workers.structured import Question, ask_twice

    content = f"The {source.label}:\n\n{source.text}\n\nPropose the roadmap that delivers it."
    return await ask_twice(settings, client_factory, ProposedRoadmap, Question(
        system=system_blocks(RULES), content=content,
        headers={"x-odin-stage": "new", "x-odin-purpose": "roadmap", "x-odin-call": uuid.uuid4().hex},
        what="proposing a roadmap", hint="write .odin-loop/roadmap.md by hand (docs/roadmap.md), or retry"))


def model_for_roadmap(project: Path, settings: Any) -> tuple[Any, Callable[[], Any] | None]:
    """The settings and client factory to ask; no model configured is a ConfigError."""
    from odin_magic.authoring.new_loop import model_configured, proposal_client_factory
    from odin_magic.core.errors import ConfigError

    if not model_configured(settings):
        raise ConfigError("roadmap new asks a model, and none is configured",
                          hint="set ANTHROPIC_API_KEY, or ODIN_SCRIPT to run offline; or write the roadmap by hand")
    return settings, proposal_client_factory(settings, project)


def refuse_overwrite(project: Path, force: bool, command: str = "odin roadmap new") -> Path:
    """The roadmap's path; a :class:`UsageError` when one exists and ``force`` is not given."""
    target = Path(project) / ROADMAP_FILE
    if target.exists() and not force:
        raise UsageError(f"{ROADMAP_FILE} already exists; {command} never overwrites a roadmap",
                         hint="pass --force to replace it, or edit it by hand")
    return target


def write_roadmap(project: Path, text: str, force: bool, command: str = "odin roadmap new") -> Path:
    """Write the accepted ``text`` as the project's roadmap (atomically, never through a planted link)."""
    target = refuse_overwrite(project, force, command)
    write_atomic(target, text, within=Path(project))
    return target


def save_proposal(project: Path, text: str) -> Path:
    path = Path(project) / PROPOSAL_FILE
    write_atomic(path, text, within=Path(project))
    return path


def pending_proposal(project: Path) -> str:
    path = Path(project) / PROPOSAL_FILE
    try:
        return read_nofollow(path).decode("utf-8")
    except FileNotFoundError:
        raise UsageError("no roadmap proposal is waiting",
                         hint="a notebook's `%odin roadmap new --from SPEC` leaves one waiting (in a terminal, "
                              "`odin roadmap new --from SPEC` shows it and asks)") from None
    except UnicodeDecodeError:
        raise UsageError(f"{PROPOSAL_FILE}: the roadmap proposal is not UTF-8 text",
                         hint="discard it (`roadmap discard`) and propose again") from None


def accept_proposal(project: Path, force: bool, command: str = "odin roadmap accept") -> Path:
    """Write the waiting proposal as the roadmap, then drop it; a proposal that is no valid roadmap (edited by
    hand since) is refused with its first problem, and nothing is written."""
    text = pending_proposal(project)
    _, diags = parse_roadmap(text, PROPOSAL_FILE)
    problem = first_error(diags)
    if problem is not None:
        raise UsageError(f"the waiting proposal is no valid roadmap: {problem.message}",
                         hint=f"fix {PROPOSAL_FILE} by hand, or discard it (`roadmap discard`); nothing was written")
    target = write_roadmap(project, text, force, command)
    (Path(project) / PROPOSAL_FILE).unlink(missing_ok=True)
    return target


def discard_proposal(project: Path) -> None:
    pending_proposal(project)
    (Path(project) / PROPOSAL_FILE).unlink(missing_ok=True)
