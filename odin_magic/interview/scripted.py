"""A scripted interview model: replays a YAML script instead of calling Claude.

It stands in for the *model* (offline demos, tests, the quickstart
notebook), never for the interview engine. Replies are keyed by round, so a
resumed interview gets the same reply for the same round::

    goal: Review CSV imports before they reach the ledger
    components: [Ingestion, {name: Export, summary: CSV and PDF reports}]
    findings: [{text: "imports live in app/io.py", citation: "app/io.py:12"}]
    rounds:
      1:
        question: What file formats arrive?
        recorded: 1                      # the answer the round was recorded with (an option number or a text):
                                         # any other answer is told "the offline script assumes option 1"
        offer_candidates: true
        candidates: [{answer: CSV only, confidence: high}, {answer: CSV and XLSX}]
        auto_answer: {assumption: CSV only, confidence: medium}
        challenge: {probe: Do we even need PDF export?}
        assessment:                      # after a user's answer (and by default)
          scores: {Ingestion: {goal: .55, constraints: .40, criteria: .30}}
          entities: [{name: Row, type: core, fields: [id, amount]}]
          criteria: {Ingestion: ["Given a CSV with 3 rows, when imported, then 3 rows are stored"]}
          open_questions: [{text: Which currency?, blocking: true}]
        auto_assessment: {...}           # after an auto-answer (default: assessment)
      default: {...}                     # rounds not listed
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable

import yaml

from odin_magic.core.errors import UsageError
from odin_magic.runs.state import Usage
from odin_magic.interview.models import (
    AutoAnswer, Candidates, ChallengeProbe, ComponentProposal, ContextFindings, QuestionDraft,
    RoundAssessment
)
from odin_magic.interview.protocol import Exchange, InterviewBrief, Reply


def _assessment(data: Any) -> RoundAssessment:
    data = dict(data or {})
    scores = data.get("scores")
    if isinstance(scores, dict):
        data["scores"] = [{"component": name, **(dims or {})} for name, dims in scores.items()]
    criteria = data.get("criteria")
    if isinstance(criteria, dict):
        data["criteria"] = [
            {"component": name, "text": text} for name, texts in criteria.items() for text in (texts or [])
        ]
    data["open_questions"] = [
        {"text": q} if isinstance(q, str) else q for q in data.get("open_questions", [])
    ]
    return RoundAssessment.model_validate(data)


def _same_answer(a: str, b: str) -> bool:
    """Two answers alike once case, spacing and trailing punctuation are set aside."""
    def norm(text: str) -> str:
        return " ".join(str(text).casefold().split()).rstrip(".!")

    return norm(a) == norm(b)


class ScriptedInterviewModel:
    """An :class:`~odin_magic.interview.protocol.InterviewModel` that replays a script."""

    def __init__(self, script: dict, source: str = "<script>"):
        if not isinstance(script, dict):
            raise UsageError(f"{source}: an interview script must be a mapping", hint="see odin_magic/interview/scripted.py")
        self.source = source
        self.script = script
        self.calls: list[tuple[str, int]] = []  # (method, round), in call order
        self.briefs: list[InterviewBrief] = []  # the brief of every call, in call order
        self._lock = threading.Lock()
        #: what a reply's usage costs (``make_interview_model``: what it would cost on Claude); None: unpriced
        self.price: Callable[[Usage], Usage] | None = None
        rounds = script.get("rounds") or {}
        if not isinstance(rounds, dict):
            raise UsageError(f"{source}: `rounds` must map a round number to its replies", hint="rounds: {1: {question: ...}}")
        self._rounds = {str(k): v or {} for k, v in rounds.items()}

    @classmethod
    def from_yaml(cls, path_or_text: str | Path) -> "ScriptedInterviewModel":
        if isinstance(path_or_text, Path) or (isinstance(path_or_text, str) and "\n" not in path_or_text and path_or_text.endswith((".yaml", ".yml"))):
            path = Path(path_or_text)
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise UsageError(f"cannot read the interview script {path}: {exc.strerror}") from None
            source = str(path)
        else:
            text, source = str(path_or_text), "<script>"
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise UsageError(f"{source}: not valid YAML ({exc})") from None
        return cls(data, source)

    # -- helpers -----------------------------------------------------------------
    def _round(self, n: int) -> dict:
        return self._rounds.get(str(n)) or self._rounds.get("default") or {}

    def _note(self, method: str, n: int, brief: InterviewBrief) -> None:
        with self._lock:
            self.calls.append((method, n))
            self.briefs.append(brief)

    def _reply(self, value, brief: InterviewBrief) -> Reply:
        """A reply with estimated tokens (about 4 characters each), so offline runs account usage too."""
        usage = Usage(input_tokens=len(brief.render()) // 4 + 1, output_tokens=len(value.model_dump_json()) // 4 + 1)
        return Reply(value, usage if self.price is None else self.price(usage))

    def _parse(self, model, data, where: str):
        try:
            return model.model_validate(data)
        except ValueError as exc:
            raise UsageError(f"{self.source}: {where} does not fit {model.__name__}: {exc}") from None

    # -- InterviewModel ------------------------------------------------------------
    def propose_components(self, brief: InterviewBrief) -> Reply[ComponentProposal]:
        self._note("propose_components", 0, brief)
        comps = [{"name": c} if isinstance(c, str) else c for c in self.script.get("components", [])]
        return self._reply(self._parse(ComponentProposal, {"goal": self.script.get("goal", ""), "components": comps}, "components"), brief)

    def explore(self, brief: InterviewBrief) -> Reply[ContextFindings]:
        self._note("explore", 0, brief)
        findings = [{"text": f} if isinstance(f, str) else f for f in self.script.get("findings", [])]
        return self._reply(self._parse(ContextFindings, {"findings": findings}, "findings"), brief)

    def ask_question(self, brief: InterviewBrief, component: str, dimension: str) -> Reply[QuestionDraft]:
        self._note("ask_question", brief.round, brief)
        r = self._round(brief.round)
        question = r.get("question") or f"What should the {dimension} of {component} be?"
        return self._reply(QuestionDraft(question=question, offer_candidates=bool(r.get("offer_candidates", "candidates" in r))), brief)

    def research_candidates(self, brief: InterviewBrief, question: str) -> Reply[Candidates]:
        self._note("research_candidates", brief.round, brief)
        r = self._round(brief.round)
        cands = [{"answer": c} if isinstance(c, str) else c for c in r.get("candidates", [])]
        return self._reply(self._parse(Candidates, {"candidates": cands}, f"rounds.{brief.round}.candidates"), brief)

    def auto_answer(self, brief: InterviewBrief, question: str) -> Reply[AutoAnswer]:
        self._note("auto_answer", brief.round, brief)
        data = self._round(brief.round).get("auto_answer") or {
            "assumption": f"Keep the simplest reversible choice for: {question}",
            "confidence": "low",
        }
        return self._reply(self._parse(AutoAnswer, data, f"rounds.{brief.round}.auto_answer"), brief)

    def challenge(self, brief: InterviewBrief, kind: str) -> Reply[ChallengeProbe]:
        self._note(f"challenge:{kind}", brief.round, brief)
        data = self._round(brief.round).get("challenge") or {"probe": f"({kind}) What if the opposite were true?"}
        return self._reply(self._parse(ChallengeProbe, data, f"rounds.{brief.round}.challenge"), brief)

    def score_round(self, brief: InterviewBrief, exchange: Exchange) -> Reply[RoundAssessment]:
        self._note("score_round", exchange.round, brief)
        r = self._round(exchange.round)
        data = r.get("auto_assessment") if exchange.answered_by == "auto" and "auto_assessment" in r else r.get("assessment")
        try:
            reply = self._reply(_assessment(data), brief)
        except ValueError as exc:
            raise UsageError(f"{self.source}: rounds.{exchange.round}.assessment is invalid: {exc}") from None
        departure = self._departure(r, exchange)
        return Reply(reply.value, reply.usage, (departure,)) if departure else reply

    def _departure(self, r: dict, exchange: Exchange) -> str | None:
        """The note for an answer other than the one the script was recorded with (``recorded:``): the
        scores, criteria and spec that follow are the script's, not a reading of this answer."""
        recorded = r.get("recorded")
        if recorded is None:
            return None
        candidates = [c if isinstance(c, str) else (c or {}).get("answer", "") for c in r.get("candidates", [])]
        key = str(recorded).strip()
        if key.isdigit() and 1 <= int(key) <= len(candidates):
            text, assumed = candidates[int(key) - 1], f"option {key} (\"{candidates[int(key) - 1]}\")"
        else:
            text, assumed = key, f"the answer \"{key}\""
        if _same_answer(exchange.answer, text):
            return None
        return (f"round {exchange.round}: the offline script assumes {assumed}; the spec follows the script, "
                "not your answer (a real model reads your answer: set ANTHROPIC_API_KEY and drop the script)")
