"""``odin answer TEXT`` and ``odin question``: the deep interview from a terminal.

``answer`` sends one reply to the waiting question (``you decide``, ``skip``,
``confirm``, a topology edit or a number picking an offered option are
replies too) and prints the next question, or where the run went next.
``question`` prints the waiting question again. With no run waiting for an answer, both serve the
interview a roadmap phase's contract asks first (``odin_magic.engine.roadmap_interview``); once it is
finished, ``odin roadmap run`` proposes the contract from the answers.
"""

from __future__ import annotations

import argparse

from typing import TYPE_CHECKING

from odin_magic.cli.common import add_command
from odin_magic.commands import runs as run_args
from odin_magic.cli.runs import engine_for, exit_code, print_event

if TYPE_CHECKING:
    from odin_magic.runs.events import EngineEvent


def _print_event(event: EngineEvent) -> None:
    if event.kind != "question":  # printed once, at the end, with its answer hints
        print_event(event)


def _show_question(engine, state) -> bool:
    from odin_magic.interview.runner import waiting_question

    question = waiting_question(engine.run_dir(state.run_id), state)
    if question is None:
        return False
    print()
    print(question)
    print('→ odin answer "..."')
    return True


def _contract_interview(engine):
    """The roadmap contract interview waiting for an answer, when no run waits for one; else None."""
    from odin_magic.engine.roadmap_interview import interview_to_answer

    return interview_to_answer(engine.project_dir, engine.active(), tell=print)


def _show_contract_question(question) -> None:
    from odin_magic.interview.awaiting import render_question

    print()
    print(render_question(question))
    print('→ odin answer "..."')


def _cmd_answer(args: argparse.Namespace) -> int:
    engine = engine_for(args, listener=_print_event)
    interview = _contract_interview(engine)
    if interview is not None:
        question = interview.answer(" ".join(args.text))
        if question is None:
            print(interview.converged_line())
        else:
            _show_contract_question(question)
        return 0
    state = engine.answer(" ".join(args.text))  # an empty answer is a UsageError there
    if not _show_question(engine, state):
        print(f"run {state.run_id}: {state.status} at {state.current_stage}")
    return exit_code(state)


def _cmd_question(args: argparse.Namespace) -> int:
    from odin_magic.engine.roadmap_interview import question_waiting

    waiting = question_waiting(engine_for(args, listener=None), tell=print)
    print()
    print(waiting.text)
    print('→ odin answer "..."')
    return 0


def register(sub) -> None:
    p = sub.add_parser("answer", help="answer the deep interview's waiting question")
    add_command(p, run_args.ANSWER, handler=_cmd_answer, drives_a_run=True)

    p = sub.add_parser("question", help="show the deep interview's waiting question")
    add_command(p, run_args.QUESTION, handler=_cmd_question)
