"""The seven questions of ``odin new`` asked one at a time through two callables (``ask`` and
``say``): the terminal's prompts, and the notebook's when it has no widgets."""

from __future__ import annotations

from typing import Any, Callable

from odin_magic.authoring import new_loop as au
from odin_magic.core.errors import UsageError


def input_line(prompt: str) -> str:
    try:
        return input(prompt)
    except EOFError:
        raise UsageError("the input ended before the questions were answered",
                         hint="answer them all, or use --answers FILE") from None


class TerminalInterview:
    """The seven questions as terminal prompts; answers the validator rejects are asked again."""

    def __init__(self, ask: Callable[[str], str], say: Callable[[str], None]):
        self.ask = ask
        self.say = say

    def _q(self, prompt: str, default: Any = None) -> str:
        shown = f" [{default}]" if default not in (None, "") else ""
        reply = self.ask(f"{prompt}{shown}: ").strip()
        return reply if reply else ("" if default is None else str(default))

    def run(self, project, name: str, proposal: au.Answers | None, force: bool):
        data: dict[str, Any] = proposal.model_dump(mode="json") if proposal else {}
        pending = [q.key for q in au.QUESTIONS]
        for _ in range(20):
            for key in pending:
                question = au.QUESTION_BY_KEY[key]
                self.say(f"\n{question.number}. {question.text}")
                getattr(self, "_ask_" + key)(data)
            try:
                answers = au.parse_answers(data, "your answers")
                d = au.draft(name, answers)
                problems = d.problems
            except au.AnswersInvalid as exc:
                problems = exc.problems
            if not problems:
                return au.write_loop(project, name, answers, force=force)
            self.say("\nThe loop does not validate yet:")
            for p in problems:
                self.say(f"  {p}")
            pending = sorted({p.question.key for p in problems}, key=lambda k: au.QUESTION_BY_KEY[k].number)
        raise UsageError("too many rounds of invalid answers", hint="write an answers file and use --answers FILE")

    def _stage_ids(self, data) -> list[str]:
        return [s["id"] for s in data.get("stages", [])]

    def _ask_kind(self, data):
        data["kind"] = self._q("kind of work", data.get("kind") or "general coding")

    def _ask_stages(self, data):
        old = data.get("stages") or []
        if old:
            self.say("  proposed: " + ", ".join(f"{s['id']} ({s['goal']})" for s in old))
            if self._q("keep these stages? y/n", "y").lower().startswith("y"):
                return
        self.say("  one stage per line as `id: goal`; an empty line ends the list")
        stages = []
        while True:
            line = self.ask("  stage: ").strip()
            if not line:
                if stages:
                    break
                self.say("  at least one stage")
                continue
            sid, _, goal = line.partition(":")
            stages.append({"id": sid.strip(), "goal": goal.strip() or sid.strip()})
        data["stages"] = stages

    def _ask_gates(self, data):
        old = {g["stage"]: g for g in data.get("gates") or []}
        gates = []
        for sid in self._stage_ids(data):
            g = old.get(sid, {})
            check = self._q(f"  {sid}: gate check", g.get("check"))
            mode = self._q(f"  {sid}: ai or ai+human", g.get("mode") or "ai")
            run = self._q(f"  {sid}: commands that decide it, separated by ';' (- for none)",
                          "; ".join(g.get("run") or []) or "-")
            gates.append({"stage": sid, "mode": mode, "check": check,
                          "run": [c.strip() for c in run.split(";") if c.strip() and c.strip() != "-"]})
        data["gates"] = gates

    def _ask_on_fail(self, data):
        old = {lb["stage"]: lb["to"] for lb in data.get("on_fail") or []}
        loops = []
        for sid in self._stage_ids(data):
            to = self._q(f"  {sid}: on_fail (a stage id; - retries {sid})", old.get(sid, "-"))
            if to and to != "-":
                loops.append({"stage": sid, "to": to})
        data["on_fail"] = loops

    def _ask_max_iterations(self, data):
        raw = self._q("max_iterations", data.get("max_iterations") or 5)
        data["max_iterations"] = int(raw) if raw.isdigit() else raw

    def _ask_roles(self, data):
        old = {r["stage"]: r["role"] for r in data.get("roles") or []}
        roles = []
        for s in data.get("stages") or []:
            default = old.get(s["id"]) or au.default_role(au.StageAnswer.model_construct(**s))
            roles.append({"stage": s["id"], "role": self._q(f"  {s['id']}: role", default)})
        data["roles"] = roles

    def _ask_interview(self, data):
        old = data.get("interview") or {}
        wanted = self._q("open with a deep interview? y/n", "y" if old.get("enabled") else "n").lower().startswith("y")
        if not wanted:
            data["interview"] = {"enabled": False}
            return
        threshold = self._q("  ambiguity threshold", old.get("threshold", 0.15))
        challenges = self._q("  challenges", ", ".join(old.get("challenges") or au.DEFAULT_CHALLENGES))
        assist = self._q("  auto_assist? y/n", "y" if old.get("auto_assist", True) else "n")
        try:
            threshold_value: Any = float(threshold)
        except ValueError:
            threshold_value = threshold
        data["interview"] = {"enabled": True, "threshold": threshold_value,
                             "challenges": [c.strip() for c in challenges.split(",") if c.strip()],
                             "auto_assist": assist.lower().startswith("y")}
