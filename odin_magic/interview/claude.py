"""The interview model served by Claude: one structured-output call per request (:mod:`..workers.structured`).

Each :class:`~odin_magic.interview.protocol.InterviewModel` method sends the
interview brief and one instruction, and asks for its pydantic output type
through structured outputs. Requests carry the Claude worker's routing
headers (``x-odin-stage``, ``x-odin-purpose: interview-<method>``,
``x-odin-call``), so the offline scripted model (:mod:`odin_magic.workers.scripted`)
answers them from ``answers: {interview-score: {<stage>: [...]}, ...}``.

A reply that does not fit the schema is asked for again once; then the call
fails with :class:`~odin_magic.workers.base.WorkerError` and the interview
stays at its question (the run is resumable). Nothing here writes files:
auto-research, auto-answer and explore are read-only by construction (they
only see the brief and, for explore, a bounded read of the project).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any, Callable, TypeVar

from pydantic import BaseModel

from odin_magic.workers.config import Settings, usage_with_cost
from odin_magic.core.confine import is_confined
from odin_magic.runs.state import Usage
from odin_magic.workers.base import WorkerError
from odin_magic.workers.client import (
    default_client_factory, require_credentials, run_coroutine, usage_of
)
from odin_magic.workers.factory import recorded
from odin_magic.workers.prompts import system_blocks
from odin_magic.workers.structured import Retry, ask_or_fail
from odin_magic.interview.convergence import CODE_SUFFIXES, IGNORED_DIRS
from odin_magic.interview.models import (
    AutoAnswer, Candidates, ChallengeProbe, ComponentProposal, ContextFindings, QuestionDraft,
    RoundAssessment
)
from odin_magic.interview.protocol import Exchange, InterviewBrief, Reply

M = TypeVar("M", bound=BaseModel)
MAX_TOKENS = 4_096
EXPLORE_BUDGET_CHARS = 40_000

RULES = """You are the model behind a deep requirements interview (Huginn) run by the odin-magic engine.
The engine owns the procedure and computes every number (ambiguity, stability, the stop condition);
you propose, phrase and score when asked. Never invent the user's answers. Be concrete and brief.
Clarity scores are 0..1 per dimension: goal (why; what goes in and what must come out), constraints
(non-functional limits, stack, things it must not do), criteria (observable, testable acceptance
criteria, failure behaviour, data contracts), context (fit with existing code; brownfield only).
Score honestly, against these anchors: 0.3 = named but vague (a tester would have to guess what to
check); 0.6 = the main case is settled, but edge cases, failure behaviour or limits are open;
0.9 = a tester could write the checks from what was said (0.9+ only then). For each component, write
its rationale (what the transcript settles and what is still open) before its scores.
Never ask again what the transcript already settles: ask about what is still open.
Answer only with the requested JSON."""

CHALLENGES = {
    "contrarian": "Contrarian: name the assumption most likely to be wrong and ask what happens if the opposite is true.",
    "simplifier": "Simplifier: ask for the simplest version that still delivers the core value; try to cut a component or a criterion.",
    "ontologist": "Ontologist: ask what this really IS: the one core entity the whole spec orbits.",
}


def project_digest(project_dir: Path, budget: int = EXPLORE_BUDGET_CHARS) -> str:
    """A bounded, read-only view of the project for the explore call: code file paths, then numbered heads."""
    files: list[Path] = []
    for root, dirs, names in os.walk(project_dir):
        dirs[:] = sorted(d for d in dirs if d not in IGNORED_DIRS and not d.endswith(".egg-info"))
        for name in sorted(names):
            p = Path(root) / name
            if not is_confined(p, [project_dir]):
                continue  # a link to outside the project: never read into a prompt
            if p.suffix.lower() in CODE_SUFFIXES or name.lower() in ("readme.md", "pyproject.toml", "package.json"):
                files.append(p)
        if len(files) > 400:
            break
    out = ["Files:"] + [f"- {p.relative_to(project_dir)}" for p in files[:400]]
    used = sum(len(line) + 1 for line in out)
    for p in files:
        try:
            lines = p.read_text(encoding="utf-8", errors="replace").splitlines()[:60]
        except OSError:
            continue
        block = [f"\n== {p.relative_to(project_dir)} =="] + [f"{i}: {line}" for i, line in enumerate(lines, 1)]
        size = sum(len(line) + 1 for line in block)
        if used + size > budget:
            break
        out += block
        used += size
    return "\n".join(out)


class ClaudeInterviewModel:
    """An :class:`~odin_magic.interview.protocol.InterviewModel` over the Anthropic Messages API."""

    def __init__(
        self,
        settings: Settings,
        client_factory: Callable[[], Any] | None = None,
        project_dir: Path | None = None,
    ):
        self.settings = settings
        self._client_factory = client_factory or default_client_factory(settings)
        self.project_dir = Path(project_dir) if project_dir else None

    # -- one structured call ------------------------------------------------------------
    def _ask(self, brief: InterviewBrief, purpose: str, instruction: str, output: type[M]) -> Reply[M]:
        return run_coroutine(lambda: self._aask(brief, purpose, instruction, output))

    async def _aask(self, brief: InterviewBrief, purpose: str, instruction: str, output: type[M]) -> Reply[M]:
        model = self.settings.model
        what = f"interview {purpose} of stage {brief.stage}"
        content = brief.render() + "\n\n---\n" + instruction
        usage = Usage()
        problem = ""

        def count(reply: Any) -> None:  # every reply counts, one that does not fit the schema too
            nonlocal usage
            usage = usage + usage_with_cost(self.settings, model, usage_of(reply))

        def again(answer: Any, attempt: int) -> Retry:
            nonlocal problem
            retry = _interview_retry(answer, output, content)
            problem = retry.problem
            return retry

        request = {
            "model": model, "max_tokens": min(self.settings.max_tokens, MAX_TOKENS), "system": system_blocks(RULES),
            "messages": [{"role": "user", "content": content}],
            "extra_headers": {"x-odin-stage": brief.stage, "x-odin-purpose": f"interview-{purpose}",
                              "x-odin-call": uuid.uuid4().hex},
        }
        value = await ask_or_fail(self._client_factory(), output, request, count, again,
                                  (self.settings, what, None, lambda: usage))
        if value is not None:
            return Reply(value, usage)
        err = WorkerError(
            f"{what}: no usable reply twice ({problem}). "
            "The interview keeps its question: answer again (or `odin run`) to retry."
        )
        err.usage = usage  # what the two replies cost: counted against the budget
        raise err

    # -- InterviewModel -----------------------------------------------------------------
    def propose_components(self, brief: InterviewBrief) -> Reply[ComponentProposal]:
        return self._ask(brief, "propose", (
            "Round 0. Split the work into 1 to 6 top-level components: parts that could each have their own goal "
            "and acceptance criteria (e.g. Ingestion, Normalization, Review UI, Export). Also state the underlying "
            "goal (why) in one or two sentences."
        ), ComponentProposal)

    def explore(self, brief: InterviewBrief) -> Reply[ContextFindings]:
        """Brownfield: a read-only explore sub-agent maps the code, then its report becomes cited findings.

        The sub-agent is the Claude worker in the ``explore`` role (read, glob, grep; no writes) on a
        synthetic stage ``<stage>-explore``. If it cannot run (e.g. an offline script without turns
        for that stage), a bounded, line-numbered read of the project stands in for its report.
        """
        report, usage = self._explore_agent(brief)
        if not report:
            report = project_digest(self.project_dir) if self.project_dir else "(no project directory given)"
        reply = self._ask(brief, "explore", (
            "Below is a read-only exploration of the existing project. List the facts the work must fit into "
            "(entry points, data shapes, conventions, tests), each cited as file:line, so the interview never "
            "asks the user what the code already says. Do not propose changes.\n\n" + report
        ), ContextFindings)
        return Reply(reply.value, usage + reply.usage)

    def _explore_agent(self, brief: InterviewBrief) -> tuple[str, Usage]:
        if self.project_dir is None or not brief.run_dir:
            return "", Usage()
        from odin_magic.loop.schema import Loop, Stage
        from odin_magic.workers.base import StageJob
        from odin_magic.workers.claude import ClaudeWorker

        stage = Stage.model_validate({
            "id": f"{brief.stage}-explore", "title": "Explore for the interview", "agent": "explore",
            "goal": "Map the existing code this task touches, for the requirements interview.",
            "prompt": ("Investigate the project read-only: where the task's behaviour would live, the data "
                       "shapes, conventions and tests it must fit. Report facts only, each with file:line. "
                       f"The components under discussion: {', '.join(brief.components) or '(not decided yet)'}."),
            "gate": {"mode": "ai", "check": "the findings cite file:line"},
        })
        loop = Loop(name="interview-explore", max_iterations=1, stages=[stage])
        run_dir = Path(brief.run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)  # refused tool calls are recorded there
        job = StageJob(loop=loop, stage=stage, task=brief.task, run_id=run_dir.name, project_dir=self.project_dir,
                       run_dir=run_dir, agent=stage.resolved_agent, consumes={}, produces={})
        try:
            result = ClaudeWorker(self.settings, client_factory=self._client_factory).perform(job, lambda event: None)
        except WorkerError:
            return "", Usage()
        return result.summary.strip(), result.usage

    def ask_question(self, brief: InterviewBrief, component: str, dimension: str) -> Reply[QuestionDraft]:
        return self._ask(brief, "question", (
            f"Round {brief.round}. Ask exactly ONE question about the {dimension} of the component {component!r}, "
            "in the user's language, so the answer raises that clarity the most; not one the transcript already "
            "answers. Cite context findings (file:line) "
            "when they matter. Set offer_candidates when this is a research or architecture choice the user may "
            "have no fixed answer to."
        ), QuestionDraft)

    def research_candidates(self, brief: InterviewBrief, question: str) -> Reply[Candidates]:
        return self._ask(brief, "research", (
            "You are a read-only architect helping the interview with ONE question:\n"
            f"{question}\n"
            "Give 2 or 3 ranked, mutually distinct candidate answers consistent with the confirmed constraints; for "
            "each: a one-line answer, why it fits, its main risk or trade-off, and your confidence (high|medium|low). "
            "Then a one-line recommendation and the biggest uncertainty the user must still confirm. If you cannot "
            "defend two candidates, give fewer and name the missing context instead of inventing certainty."
        ), Candidates)

    def auto_answer(self, brief: InterviewBrief, question: str) -> Reply[AutoAnswer]:
        return self._ask(brief, "auto-answer", (
            "The user asked you to decide this question:\n"
            f"{question}\n"
            "Choose the most conservative answer that keeps the user's intent and avoids irreversible assumptions. "
            "Phrase it as the assumption the interview will carry; give 2 to 4 bullets of rationale citing the "
            "context; your confidence (high only if the context settles it); and what the user must still confirm."
        ), AutoAnswer)

    def challenge(self, brief: InterviewBrief, kind: str) -> Reply[ChallengeProbe]:
        return self._ask(brief, f"challenge-{kind}", (
            f"Round {brief.round} opens with a challenge. {CHALLENGES.get(kind, kind)} "
            "Write the one probe question, aimed at the emerging spec."
        ), ChallengeProbe)

    def score_round(self, brief: InterviewBrief, exchange: Exchange) -> Reply[RoundAssessment]:
        lines = [f"Round {exchange.round} was answered. Targeted: {exchange.dimension} of {exchange.component}."]
        if exchange.challenge_probe:
            lines += [f"Challenge ({exchange.challenge_kind}): {exchange.challenge_probe}",
                      f"Its answer: {exchange.challenge_answer}"]
        by = " (an auto-answer, carried as an assumption)" if exchange.answered_by == "auto" else ""
        lines += [f"Q: {exchange.question}", f"A{by}: {exchange.answer}", "",
                  "Re-score the clarity (0..1) of every dimension of each component this answer affected, using "
                  "the component names exactly. List every key entity named so far (type core|supporting|external, "
                  "with its fields). Add the new observable, testable acceptance criteria (Given-When-Then when "
                  "possible) per component, new edge cases, explicit non-goals and open questions (blocking only if "
                  "the spec cannot be built without it), and name the open questions this answer resolved. If the "
                  "round had a challenge, say in one line what it led to."]
        return self._ask(brief, "score", "\n".join(lines), RoundAssessment)


def _interview_retry(answer: Any, output: type[BaseModel], content: str) -> Retry:
    """Why an interview reply has no value, and the messages that ask for one again."""
    if answer.error is None:
        return Retry("the model refused", [{"role": "user", "content": content}])
    problem = f"the reply did not fit {output.__name__} ({answer.error.errors()[0]['msg']})"
    return Retry(problem, [
        {"role": "user", "content": content},
        {"role": "assistant", "content": "(an answer that did not fit the schema)"},
        {"role": "user", "content": f"That answer was not valid: {problem}. Answer again, JSON only."},
    ])


def make_interview_model(settings: Settings, project_dir: Path, env: dict[str, str] | None = None):
    """The interview model for a real (not dry) run.

    1. ``ODIN_INTERVIEW_SCRIPT`` names an interview script (:mod:`.scripted`, replies keyed by round).
    2. ``settings.script`` (``ODIN_SCRIPT``) whose YAML has an ``interview:`` section: that section is
       the interview script. Both are offline and resume-safe.
    3. ``settings.script`` without one: Claude's requests go to the offline scripted Messages API
       (``answers: {interview-<purpose>: {<stage>: [...]}}``).
    4. Otherwise Claude over the Anthropic API (a missing key is a ConfigError here).
    """
    from odin_magic.interview.scripted import ScriptedInterviewModel

    env = os.environ if env is None else env

    def locate(raw: str | Path) -> Path:
        path = Path(raw).expanduser()
        if not path.is_absolute() and (Path(project_dir) / path).is_file():
            path = Path(project_dir) / path
        return path

    path = env.get("ODIN_INTERVIEW_SCRIPT", "").strip()
    if path:
        return _offline(ScriptedInterviewModel.from_yaml(locate(path)), settings)
    if settings.script is not None:
        from odin_magic.workers.scripted import ScriptedModel, load_script

        script_path = locate(settings.script)
        script = load_script(script_path)
        if script.interview is not None:
            return _offline(ScriptedInterviewModel(script.interview, source=f"{script_path} (interview)"), settings)
        model = ScriptedModel(script, source=str(script_path))
        model.root = Path(project_dir)
        factory = model.client_factory(max_retries=settings.max_retries)
        return ClaudeInterviewModel(settings, recorded(factory, settings, project_dir), project_dir)
    require_credentials(settings)
    return ClaudeInterviewModel(settings, recorded(default_client_factory(settings), settings, project_dir), project_dir)


def _offline(model, settings: Settings):
    """A scripted interview model whose usage is priced as the worker's is offline: what it would cost on
    Claude, nothing spent (so a run's cost reads the same from its first question on)."""
    def price(usage: Usage) -> Usage:
        cost = settings.cost(settings.model, usage)
        return usage.model_copy(update={"cost_usd": cost, "offline_usd": cost})

    model.price = price
    return model
