"""``odin new``: author a loop by answering seed 000's seven questions.

``--answers FILE`` answers them non-interactively; otherwise the terminal asks
each question (``--describe TEXT`` first asks a configured model to propose
answers, which Enter accepts).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from . import add_project, project_dir
from ..lazy import LazyModule

au = LazyModule("odin_magic.authoring")  # loads with the first command that uses it, not with `odin --help`
from ..errors import UsageError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "new",
        help="author a new loop by answering seven questions",
        description="Author a loop by answering seed 000's seven questions (kind of work, stages, gates, "
        "on_fail, max_iterations, roles, deep interview). Writes .odin-loop/loops/NAME.yaml once it validates.",
    )
    p.add_argument("name", metavar="NAME", help="the new loop's name (its file stem)")
    p.add_argument("--answers", metavar="FILE", help="a YAML file answering the seven questions (no prompts)")
    p.add_argument("--describe", metavar="TEXT", help="one line about the work: a configured model proposes answers")
    p.add_argument("--force", action="store_true", help="replace an existing loop of that name")
    add_project(p)
    p.set_defaults(handler=cmd_new)
    register_refine(subparsers)
    register_memory(subparsers)


def cmd_new(args: argparse.Namespace) -> int:
    project = project_dir(args)
    au.check_name(args.name)
    target = au.loop_path(project, args.name)
    if target.exists() and not args.force:  # said before any question is asked
        raise UsageError(f"{target} already exists; odin new never overwrites a loop",
                         hint="pick another name, or pass --force to replace it")
    if args.answers:
        answers = au.load_answers(args.answers)
        path, text = au.write_loop(project, args.name, answers, force=args.force)
    else:
        proposal = None
        if args.describe:
            from ..config import Settings

            settings = Settings.from_env()
            if au.model_configured(settings):
                proposal = au.propose_answers(args.describe, settings, au.proposal_client_factory(settings, project))
                print(f"(a model proposed answers for: {args.describe}; press Enter to accept each)")
            else:
                print("(no model configured: answer the questions yourself)", file=sys.stderr)
        path, text = TerminalInterview(input_line, print).run(project, args.name, proposal, args.force)
    print(text.rstrip())
    print(f"\nwrote {path}")
    from ..catalog import builtin_loops_dir

    if (builtin_loops_dir() / f"{args.name}.yaml").is_file():
        print(f"note: this project loop overrides the built-in loop {args.name!r}")
    print(f'start it: odin run {args.name} --task "what you are building"   (or --dry to try it offline)')
    return 0


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


# -- odin refine ------------------------------------------------------------------------------


def register_refine(subparsers) -> None:
    p = subparsers.add_parser(
        "refine",
        help="Muninn: learn from past runs and propose loop edits (apply ID / reject ID / list)",
        description="Aggregate every run of LOOP (default: every loop with runs) from the event logs, and save "
        "rule-based proposals as .odin-loop/refinements/<loop>-<n>.yaml. `odin refine apply ID` applies one "
        "(bumps the loop's version, keeps the previous one in .odin-loop/loops/.history/); `odin refine reject ID` "
        "rejects it; `odin refine list [LOOP]` lists them.",
    )
    p.add_argument("words", nargs="*", metavar="LOOP | apply ID | reject ID | list [LOOP]")
    p.add_argument("--json", action="store_true", help="print the aggregates and proposals as JSON")
    p.add_argument("--model", action="store_true", help="also ask the configured model (API key, or ODIN_SCRIPT "
                   "offline) for proposals, marked as model-written")
    add_project(p)
    p.set_defaults(handler=cmd_refine)


def _now() -> str:
    from datetime import datetime

    return datetime.now().strftime("%Y-%m-%dT%H:%M:%S")


def model_for_refine(project, settings=None):
    """The settings and client factory for model-written refine proposals; no model configured is a ConfigError."""
    from ..config import Settings
    from ..errors import ConfigError

    settings = settings or Settings.from_env()
    if not au.model_configured(settings):
        raise ConfigError("--model needs a configured model", hint="set ANTHROPIC_API_KEY, or ODIN_SCRIPT to run offline")
    return settings, au.proposal_client_factory(settings, project)


def cmd_refine(args: argparse.Namespace) -> int:
    import json

    from ..refine import Refinements, refine
    from ..refine_report import render_proposal, render_result

    project = project_dir(args)
    words = list(args.words)
    action = words[0] if words and words[0] in ("apply", "reject", "list") else None
    if action in ("apply", "reject"):
        if len(words) != 2:
            raise UsageError(f"usage: odin refine {action} ID", hint="`odin refine list` shows the proposal ids")
        refinements = Refinements(project)
        if action == "apply":
            proposal, path = refinements.apply(words[1], _now())
            print(f"applied {proposal.id}: {proposal.title}\nwrote {path} (version {proposal.applied_version}); "
                  f"the previous version is in {refinements.history_dir}")
        else:
            proposal = refinements.reject(words[1], _now())
            print(f"rejected {proposal.id}: {proposal.title}")
        return 0
    if action == "list":
        if len(words) > 2:
            raise UsageError("usage: odin refine list [LOOP]")
        proposals = Refinements(project).all(words[1] if len(words) == 2 else None)
        if args.json:
            print(json.dumps([p.model_dump(mode="json") for p in proposals], indent=2))
        else:
            print("\n".join(render_proposal(p, diff=False) for p in proposals) or "no proposals")
        return 0
    if len(words) > 1:
        raise UsageError("usage: odin refine [LOOP]  (or: apply ID, reject ID, list [LOOP])")
    settings, factory = model_for_refine(project) if args.model else (None, None)
    result = refine(project, words[0] if words else None, settings=settings, client_factory=factory)
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        print(render_result(result))
    return 0


# -- odin memory ------------------------------------------------------------------------------


def register_memory(subparsers) -> None:
    p = subparsers.add_parser(
        "memory",
        help="show, remove or clear the project memory (decisions and lessons later runs read)",
        description="Show the entries of .odin-loop/memory/decisions.md and lessons.md; `remove ID` edits one "
        "out; `clear --force` deletes them all (or only one kind with --kind).",
    )
    p.add_argument("words", nargs="*", metavar="[remove ID | clear]")
    p.add_argument("--kind", choices=("decision", "lesson"), help="only this kind of entry")
    p.add_argument("--force", action="store_true", help="with clear: really delete the entries")
    p.add_argument("--json", action="store_true", help="print the entries as JSON")
    add_project(p)
    p.set_defaults(handler=cmd_memory)


def cmd_memory(args: argparse.Namespace) -> int:
    import json
    from dataclasses import asdict

    from ..memory import Memory

    mem = Memory(project_dir(args))
    words = list(args.words)
    if words[:1] == ["remove"]:
        if len(words) != 2:
            raise UsageError("usage: odin memory remove ID", hint="`odin memory` lists the ids")
        entry = mem.remove(words[1])
        print(f"removed {entry.id} ({entry.kind}, stage {entry.stage}, run {entry.run_id})")
        return 0
    if words[:1] == ["clear"]:
        if len(words) != 1:
            raise UsageError("usage: odin memory clear [--kind decision|lesson] --force")
        if not args.force:
            raise UsageError(f"clear deletes {len(mem.entries(args.kind))} memory entries",
                             hint="add --force to delete them")
        print(f"cleared {mem.clear(args.kind)} entries")
        return 0
    if words:
        raise UsageError(f"unknown memory command {words[0]!r}", hint="odin memory [remove ID | clear --force]")
    entries = mem.entries(args.kind)
    if args.json:
        print(json.dumps([asdict(e) for e in entries], indent=2))
    elif not entries:
        print(f"no memory yet ({mem.dir}): entries are written as runs end")
    else:
        for e in entries:
            print(f"{e.id}  {e.kind:<8}  stage {e.stage}  run {e.run_id}  {e.at}\n    {e.text}")
    return 0
