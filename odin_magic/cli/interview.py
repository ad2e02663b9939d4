"""``odin answer TEXT`` and ``odin question``: the deep interview from a terminal.

``answer`` sends one reply to the waiting question (``you decide``, ``skip``,
``confirm``, a topology edit or a number picking an offered option are
replies too) and prints the next question, or where the run went next.
``question`` prints the waiting question again.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import RunRefused, UsageError
from ..events import EngineEvent
from ..interview.runner import waiting_question
from ..report import format_event


def _printer(event: EngineEvent) -> None:
    if event.kind == "question":  # printed once, at the end, with its answer hints
        return
    line = format_event(event)
    if line is not None:
        print(line, file=sys.stderr if event.kind == "notice" else sys.stdout, flush=True)


def _engine(args: argparse.Namespace, listener=_printer):
    from ..engine import Engine

    project = Path(args.project)
    if not project.is_dir():
        raise UsageError(f"project directory {project} does not exist", hint="--project DIR")
    return Engine(project, listener=listener)


def _show_question(engine, state) -> bool:
    question = waiting_question(engine.run_dir(state.run_id), state)
    if question is None:
        return False
    print()
    print(question)
    print('→ odin answer "..."')
    return True


def _cmd_answer(args: argparse.Namespace) -> int:
    text = " ".join(args.text).strip()
    if not text:
        raise UsageError("the answer is empty", hint='odin answer "your answer" (or: you decide, skip)')
    engine = _engine(args)
    if not hasattr(engine, "answer"):
        raise RunRefused("this installation's engine cannot take interview answers yet")
    state = engine.answer(text)
    if not _show_question(engine, state):
        print(f"run {state.run_id}: {state.status} at {state.current_stage}")
    return 1 if state.status == "failed" else 0


def _cmd_question(args: argparse.Namespace) -> int:
    engine = _engine(args, listener=None)
    state = engine.active()
    if state is None or not _show_question(engine, state):
        raise RunRefused("no interview question is waiting", hint="`odin status` shows where the run is")
    return 0


def register(sub) -> None:
    p = sub.add_parser("answer", help="answer the deep interview's waiting question")
    p.add_argument("text", nargs="+", metavar="TEXT",
                   help="your answer; or: you decide | skip | a number (an offered option) | confirm | merge A, B ...")
    p.add_argument("--project", default=".", metavar="DIR", help="project directory (default: .)")
    p.set_defaults(handler=_cmd_answer)

    p = sub.add_parser("question", help="show the deep interview's waiting question")
    p.add_argument("--project", default=".", metavar="DIR", help="project directory (default: .)")
    p.set_defaults(handler=_cmd_question)
