"""The Claude worker: stages done by Claude through the official ``anthropic`` SDK.

* Work: the SDK's async beta tool runner (``stream=True``, ``thread=False``:
  the full history goes with every turn, so a resumed run relies on nothing
  held by the server) over the SDK's agent toolset, filtered and wrapped per
  role (:mod:`odin_magic.workers.toolbox`). The tool context, and the bash
  shell with it, is closed when the stage ends.
* Contexts: inline stages continue the run's thread (``thread.json`` in the run
  dir, :mod:`odin_magic.workers.conversation`); fresh stages start a new
  conversation holding only the persona, the stage, the task, the consumes
  read fresh from disk and where to write the produces.
* The judge: a separate structured-output call (:mod:`.structured`, the ``Verdict`` schema) that
  never sees the worker's conversation; a malformed or refused verdict is
  asked again once, then the gate fails with the reason.
* Streaming: model text (line by line) and one line per tool call go to the
  event sink as they happen.
* Usage: every call's tokens (input, output, cache write, cache read) are
  summed per stage, with the estimated cost from the settings' price table.
* Faults: the SDK retries 429/5xx/529/timeouts (``max_retries``); when they run
  out the stage stops with :class:`WorkerError` and the run stays resumable.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import uuid
import warnings
from contextlib import AsyncExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator

import anthropic
import httpx2
from anthropic import AsyncAnthropic
from anthropic.lib.tools.agent_toolset import AgentToolContext
from pydantic import ValidationError

from odin_magic.workers.config import Settings, usage_with_cost
from odin_magic.core.atomic import open_append
from odin_magic.core.confine import LinkInPath
from odin_magic.core.processes import reap_orphans
from odin_magic.core.sandbox import drop_placeholders
from odin_magic.loop.sandboxing import stage_sandbox
from odin_magic.loop.roles import STUB_DIR, load_persona, policy_for
from odin_magic.core.secrets import redact
from odin_magic.loop.schema import Loop
from odin_magic.runs.state import Usage
from odin_magic.workers.base import (
    EventSink, JudgeJob, JudgeResult, StageJob, StageResult, Verdict, WorkerError, WorkerEvent
)
from odin_magic.workers.client import (
    ClientFactory, api_failure, api_message, default_client_factory, has_credentials, malformed_reply,
    require_credentials, run_coroutine, usage_of,
)
from odin_magic.workers.conversation import RunThread, estimate_tokens
from odin_magic.workers.tool_log import ToolLog
from odin_magic.workers.structured import Retry, ask_or_fail
from odin_magic.workers.prompts import (
    JUDGE_RULES, WORKER_RULES, command_status, judge_brief, loop_context,
    stage_brief, system_blocks,
)
from odin_magic.workers.thinking import thinking_request
from odin_magic.workers.toolbox import RoleToolbox, ToolReports, bash_environment, edit_checker, sandbox_shell

JUDGE_MAX_TOKENS = 4_096
REFUSALS_FILE = "tool-refusals.jsonl"  # in the run dir: every refused tool call
SUMMARY_CHARS = 2_000


class _ReapedChildFilter(logging.Filter):
    """Drop asyncio's "Unknown child process pid" warning.

    The SDK's ``BashSession.close()`` closes bash's stdin (so bash exits) and
    then calls ``kill()``; ``Popen.send_signal`` polls first and reaps the
    exited shell before asyncio's child-watcher thread can, so the watcher logs
    this warning. Harmless, noise in a live view, and the order is the SDK's.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Unknown child process pid")


logging.getLogger("asyncio").addFilter(_ReapedChildFilter())


@contextmanager
def _quiet_unknown_tools() -> Iterator[None]:
    """A call to a tool that does not exist is answered to the model by the tool runner (a tool error)
    and recorded by the worker (tool-refusals.jsonl, the live view); the runner's warning about it
    would only be noise on the terminal."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Tool '.*' not found in tool runner", category=UserWarning)
        yield


def assistant_param(message: Any) -> dict[str, Any]:
    """A reply as a message param for the history we keep."""
    content: list[dict[str, Any]] = []
    for block in message.content:
        if block.type == "text":
            content.append({"type": "text", "text": block.text})
        elif block.type == "tool_use":
            content.append({"type": "tool_use", "id": block.id, "name": block.name, "input": block.input})
        else:
            content.append(block.model_dump(mode="json", exclude_none=True))
    return {"role": "assistant", "content": content or [{"type": "text", "text": "(no reply)"}]}


def final_text(message: Any) -> str:
    return "\n".join(b.text for b in message.content if b.type == "text").strip()


def closed_segment(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A stage's messages made safe to continue from: no dangling tool calls, ending with the assistant."""
    out = [dict(m) for m in messages]
    if out and out[-1]["role"] == "assistant":
        blocks = [b for b in out[-1]["content"] if b.get("type") != "tool_use"]
        out[-1] = {"role": "assistant", "content": blocks or [{"type": "text", "text": "(stage ended)"}]}
    elif out and out[-1]["role"] == "user":
        out.append({"role": "assistant", "content": [{"type": "text", "text": "(stage ended here)"}]})
    return out


class _Lines:
    """Turns streamed text deltas into whole lines for the sink."""

    def __init__(self, emit: Callable[[str], None]):
        self._emit = emit
        self._buf = ""

    def feed(self, delta: str) -> None:
        self._buf += delta
        while "\n" in self._buf:
            line, self._buf = self._buf.split("\n", 1)
            self._emit(line)

    def flush(self) -> None:
        if self._buf.strip():
            self._emit(self._buf)
        self._buf = ""


class _Interrupted(Exception):
    """A reply that broke off in the middle (the connection dropped, the stream ended early, or the
    API sent an overload/server error event): it is asked for again, like an overloaded answer."""


#: Error events inside a begun reply that a new request may not meet again.
_TRANSIENT_ERRORS = ("overloaded_error", "api_error", "rate_limit_error")


@dataclass
class _Turns:
    """What a stage's conversation has come to so far: kept across a reply that broke off."""

    history: list[dict[str, Any]]  # everything to send again (the stage's brief, replies, tool results)
    prior: Usage  # the run's usage before this stage
    text_out: "_Lines"
    emit: Callable[[str, str], None]
    usage: Usage = field(default_factory=Usage)
    last: Any = None
    count: int = 0  # completed model turns


def backoff(retry: int) -> float:
    """Seconds before retry ``retry`` (1, 2, ...): the SDK's schedule, 0.5 s doubling up to 8 s, with jitter."""
    return min(0.5 * 2 ** (retry - 1), 8.0) * (1 - 0.25 * random.random())


def over_budget(loop: Loop, used: Usage) -> str | None:
    """Why ``used`` is past the loop's budget, or None."""
    return loop.budget.exceeded(used.total_tokens, used.cost_usd) if loop.budget is not None else None


class ClaudeWorker:
    """A :class:`~odin_magic.workers.base.Worker` backed by Claude."""

    def __init__(self, settings: Settings, client_factory: ClientFactory | None = None,
                 clock: Callable[[], datetime] | None = None, retry_delay: Callable[[int], float] = backoff):
        self.settings = settings
        self.clock = clock or datetime.now
        self.retry_delay = retry_delay  # seconds before asking again for a reply that broke off
        self._client_factory = client_factory or default_client_factory(settings)
        self._warned_price: set[str] = set()

    # -- the Worker interface ----------------------------------------------------------

    def perform(self, job: StageJob, events: EventSink) -> StageResult:
        return run_coroutine(lambda: self.aperform(job, events))

    def judge(self, job: JudgeJob, events: EventSink) -> JudgeResult:
        return run_coroutine(lambda: self.ajudge(job, events))

    def drive_ended(self) -> None:
        """A drive of the run paused or ended: a client factory that records (``ODIN_RECORD``) renders its
        recording (:func:`odin_magic.workers.base.drive_ended`)."""
        ended = getattr(self._client_factory, "drive_ended", None)
        if callable(ended):
            ended()

    def compare(self, job: JudgeJob, events: EventSink):
        """A judge comparison (``compare: baseline``): :mod:`odin_magic.workers.compare`."""
        from odin_magic.workers.compare import ask_comparison

        return run_coroutine(lambda: ask_comparison(self, job, events))

    # -- helpers ----------------------------------------------------------------------

    def _cost(self, model: str, usage: Usage, emit: Callable[[str], None]) -> Usage:
        if self.settings.price_for(model) is None and model not in self._warned_price:
            self._warned_price.add(model)
            emit(f"no price known for model {model!r}: cost is counted as 0 (set ODIN_PRICES)")
        return usage_with_cost(self.settings, model, usage)

    def _refused(self, job: StageJob, role: str, message: str, emit: Callable[[str, str], None]) -> None:
        """A refused tool call: streamed, and recorded in the run dir (``tool-refusals.jsonl``)."""
        message = redact(message)
        emit("tool_refused", message)
        record = {"at": self.clock().isoformat(timespec="seconds"), "stage": job.stage.id, "role": role,
                  "attempt": job.attempt, "message": message}
        try:
            with open_append(Path(job.run_dir) / REFUSALS_FILE, job.run_dir) as fh:  # never through a worker's link
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        except LinkInPath as exc:
            emit("info", f"{REFUSALS_FILE} was not written: {exc.message}")

    @staticmethod
    def tags(stage: str, purpose: str, run_dir: Path, project_dir: Path) -> dict[str, str]:
        """The headers that tag a request of this worker: its stage, its purpose (work, judge, compare), a call
        id and the run dir relative to the project (the scripted model and the recorder read them)."""
        try:
            run_rel = os.path.relpath(run_dir, project_dir)
        except ValueError:
            run_rel = str(run_dir)
        return {
            "x-odin-stage": stage,
            "x-odin-purpose": purpose,
            "x-odin-call": uuid.uuid4().hex,
            "x-odin-run-dir": run_rel,
        }

    # -- work ---------------------------------------------------------------------------

    async def aperform(self, job: StageJob, events: EventSink) -> StageResult:
        stage_id = job.stage.id

        def emit(kind: str, text: str) -> None:
            events(WorkerEvent(kind=kind, stage=stage_id, text=text))  # type: ignore[arg-type]

        policy = policy_for(job.agent)
        prior = job.spent  # the loop's budget also bounds a stage while it runs
        text_out = _Lines(lambda line: emit("text", line))

        async with AsyncExitStack() as stack:
            client = self._client_factory()
            stack.push_async_callback(client.close)
            env = bash_environment(Path(job.project_dir), Path(job.run_dir), job.run_id, stage_id,
                                   stage_sandbox(job.loop, job.stage, Path(job.project_dir), Path(job.run_dir)))
            stack.callback(drop_placeholders, sandbox_shell(env, Path(job.project_dir)))
            ctx = await stack.enter_async_context(
                AgentToolContext(workdir=str(job.project_dir), allowed_roots=[Path(job.run_dir)], env=env)
            )
            reports = ToolReports(on_call=lambda line: emit("tool", line),
                                  on_refused=lambda msg: self._refused(job, policy.name, msg, emit),
                                  on_error=lambda msg: emit("info", msg),
                                  on_result=ToolLog.start(Path(job.run_dir), stage_id).record)
            toolbox = RoleToolbox(ctx, policy, produces=list(job.produces.values()),
                                  stub_dir=Path(job.run_dir) / STUB_DIR, reports=reports,
                                  check_edit=edit_checker(job.loop.post_edit, Path(job.project_dir), env))
            stack.callback(reap_orphans, Path(job.run_dir), "bash")  # after the shell: what it left running
            stack.push_async_callback(toolbox.aclose)  # ends the bash shell: the tool runner does not
            tools = sum(len(json.dumps(tool.to_dict())) for tool in toolbox.tools)  # the prefix before the system
            system, messages, thread = self._opening(job, policy, emit, tools)
            start = len(messages) - 1  # the new stage's user message
            history = list(messages)
            turns = _Turns(history=history, prior=prior, text_out=text_out, emit=emit)
            try:
                await self._converse(client, job, system, toolbox, turns)
            except WorkerError as exc:
                exc.usage = turns.usage
                raise
            except (anthropic.AnthropicError, ValidationError) as exc:
                err = api_failure(exc, self.settings, f"stage {stage_id}")
                err.usage = turns.usage
                raise err from exc
            except ValueError as exc:  # not JSON, or not a Messages event stream
                err = malformed_reply(exc, f"stage {stage_id}")
                err.usage = turns.usage
                raise err from exc
            usage, last = turns.usage, turns.last

        if last is not None and last.stop_reason == "tool_use" and over_budget(job.loop, prior + usage) is None:
            emit("info", f"the stage used its {job.max_turns or self.settings.max_turns} model turns and ends here")
        summary = final_text(last)[:SUMMARY_CHARS] if last is not None else ""
        if thread is not None:
            thread.add_segment(stage_id, closed_segment(history[start:]), summary)
            thread.save()
        if toolbox.refusals:
            summary = (summary + f"\n({len(toolbox.refusals)} tool call(s) refused by the {policy.name} policy)").strip()
        return StageResult(summary=summary, usage=usage, edit_checks=[c.to_dict() for c in toolbox.edit_checks],
                           report=final_text(last) if last is not None else "")

    def _opening(self, job: StageJob, policy: Any, emit: Callable[[str, str], None], tools: int
                 ) -> tuple[Any, list[dict[str, Any]], RunThread | None]:
        """The stage's system prompt and first messages: a fresh context holds the persona and the brief; an
        inline one continues the run's thread (returned, to be saved), trimmed to its token budget. ``tools``:
        the characters of the tool definitions that come before the system prompt (for its cache mark)."""
        persona = load_persona(job.agent.role, job.project_dir)
        fresh = job.agent.fresh
        cut: list[str] = []
        brief = stage_brief(job, policy, persona, fresh=fresh, shortened=cut)
        if cut:
            emit("info", f"shortened in the brief (its start shown, marked; the worker can read the rest): "
                         f"{', '.join(cut)}")
        if fresh:
            return system_blocks(WORKER_RULES, persona, before_chars=tools), [{"role": "user", "content": brief}], None
        system = system_blocks(WORKER_RULES, loop_context(job.loop), before_chars=tools)
        thread = RunThread.load(job.run_dir)
        reserve = estimate_tokens(brief) + estimate_tokens(system) + self.settings.max_tokens
        dropped = thread.fit(self.settings.context_budget, reserve)
        if dropped:
            emit("info", f"thread trimmed to its token budget: earlier turns of {', '.join(dropped)} summarised")
        return system, thread.request_messages(brief), thread

    async def _converse(self, client: AsyncAnthropic, job: StageJob, system: Any, toolbox: RoleToolbox,
                        turns: _Turns) -> None:
        """The stage's model turns through the tool runner. A reply that breaks off is asked for
        again from the history so far, ``max_retries`` times in a row at most, like an overloaded
        answer; then the stage stops with a :class:`WorkerError` (the run stays resumable)."""
        stage_id = job.stage.id
        retries = 0
        while True:
            done_before = turns.count
            runner = client.beta.messages.tool_runner(
                model=self.settings.model,
                max_tokens=self.settings.max_tokens,
                system=system,
                messages=list(turns.history),
                tools=toolbox.tools,
                stream=True,
                thread=False,
                max_iterations=max(1, (job.max_turns or self.settings.max_turns) - turns.count),
                cache_control={"type": "ephemeral"},
                extra_headers=self.tags(stage_id, "work", job.run_dir, job.project_dir),
                **thinking_request(self.settings, job.stage),
            )
            try:
                await self._turn_loop(runner, job, toolbox, turns)
                return
            except _Interrupted as exc:
                retries = 1 if turns.count > done_before else retries + 1  # counted per reply, as the SDK does
                n = self.settings.max_retries
                if retries > n:
                    raise WorkerError(
                        f"stage {stage_id}: {exc}, after {n} {'retry' if n == 1 else 'retries'}. "
                        "The run stays resumable: `odin run` (or %odin run) performs this step again."
                    ) from None
                turns.emit("info", f"{exc}: asking again (retry {retries} of {n})")
                await asyncio.sleep(self.retry_delay(retries))
            finally:
                await runner.close()

    async def _turn_loop(self, runner: Any, job: StageJob, toolbox: RoleToolbox, turns: _Turns) -> None:
        stage_id = job.stage.id
        emit = turns.emit
        model = self.settings.model
        async for stream in runner:
            last = await self._read_reply(stream, turns)
            turns.last = last
            turns.count += 1
            turns.usage = turns.usage + self._cost(model, usage_of(last), lambda t: emit("info", t))
            turns.history.append(assistant_param(last))
            exceeded = over_budget(job.loop, turns.prior + turns.usage)
            if exceeded is not None and last.stop_reason == "tool_use":
                emit("info", f"the loop's budget is used up ({exceeded}): the stage stops here")
                await runner.close()
                break
            if last.stop_reason == "model_context_window_exceeded":
                raise WorkerError(
                    f"stage {stage_id}: the conversation outgrew the model's context window. "
                    "Lower ODIN_CONTEXT_BUDGET or split the stage; the run stays resumable."
                )
            if last.stop_reason == "refusal":  # the gate decides what the stage did produce
                emit("info", f"the model declined to continue: {final_text(last)[:300]}")
                break
            if last.stop_reason == "tool_use":
                unknown = [b.name for b in last.content if b.type == "tool_use" and b.name not in toolbox.names]
                for name in unknown:
                    toolbox.unknown_tool(name)  # the runner answers it with a tool error
                with _quiet_unknown_tools() if unknown else nullcontext():
                    results = await runner.generate_tool_call_response()  # cached: the runner reuses it
                if results is not None:
                    turns.history.append(redact(dict(results)))
            elif last.stop_reason == "max_tokens":
                emit("info", f"the reply hit max_tokens ({self.settings.max_tokens}); the stage ends here")

    async def _read_reply(self, stream: Any, turns: _Turns) -> Any:
        """Stream one reply to the sink; the whole message, or :class:`_Interrupted` when it broke off."""
        started = complete = False
        try:
            async for event in stream:
                if event.type == "message_start":
                    started = True
                elif event.type == "message_stop":
                    complete = True
                elif event.type == "text":
                    turns.text_out.feed(event.text)
                elif event.type == "content_block_stop":
                    turns.text_out.flush()
        except httpx2.TransportError as exc:  # e.g. RemoteProtocolError: the peer closed the connection
            self._count_partial(stream, turns, started)
            raise _Interrupted(f"the connection to the API dropped in the middle of a reply ({exc or type(exc).__name__})") from None
        except anthropic.APIStatusError as exc:
            error = exc.body.get("error") if isinstance(exc.body, dict) else None
            kind = error.get("type") if isinstance(error, dict) else None
            if exc.status_code >= 400 or kind not in _TRANSIENT_ERRORS:
                raise
            self._count_partial(stream, turns, started)
            raise _Interrupted(f"the API reported an error in the middle of its reply ({api_message(exc)})") from None
        finally:
            turns.text_out.flush()
        if not started:
            raise ValueError("the reply was not a Messages event stream (no message_start event)")
        if not complete:
            self._count_partial(stream, turns, started)
            raise _Interrupted("the reply stream ended before the message was complete")
        return await stream.get_final_message()

    def _count_partial(self, stream: Any, turns: _Turns, started: bool) -> None:
        """A reply that broke off was paid for as far as it went: count what its events reported."""
        if not started:
            return
        try:
            partial = usage_of(stream.current_message_snapshot)
        except Exception:  # nothing readable was accumulated
            return
        turns.usage = turns.usage + self._cost(self.settings.model, partial, lambda t: turns.emit("info", t))

    # -- judge --------------------------------------------------------------------------

    async def ask_structured(self, schema: Any, request: dict, again: Callable[[Any, int], Retry], what: str,
                             emit: Callable[[str], None]) -> tuple[Any, Usage]:
        """One structured request (asked again once when the reply does not fit: ``again``), every reply's usage
        counted, the client closed; an API failure or a malformed body is a WorkerError naming ``what`` and
        carrying the usage so far. (value or None, usage)."""
        model, usage = request["model"], Usage()

        def count(reply: Any) -> None:  # every reply counts, one that fails validation too
            nonlocal usage
            usage = usage + self._cost(model, usage_of(reply), emit)

        value = await ask_or_fail(self._client_factory(), schema, request, count, again,
                                  (self.settings, what, model, lambda: usage))
        return value, usage

    async def ajudge(self, job: JudgeJob, events: EventSink) -> JudgeResult:
        stage_id = job.stage.id

        def emit(text: str) -> None:
            events(WorkerEvent(kind="info", stage=stage_id, text=text))

        failed = [c for c in job.commands if not c.ok]
        if failed:  # a judge can never pass a gate whose commands failed: no need to ask
            reasons = [f"gate command failed: {c.cmd} ({command_status(c)})" for c in failed]
            return JudgeResult(Verdict(passed=False, reasons=reasons, blocking=list(reasons)), Usage())

        model = self.settings.verdict_model
        brief = judge_brief(job)
        problems: list[str] = []

        def again(answer: Any, attempt: int) -> Retry:
            retry = _verdict_retry(answer, brief)
            problems.append(retry.problem)
            emit(f"judge: {retry.problem}" + ("; asking again" if attempt == 1 else ""))
            return retry

        request = {"model": model, "max_tokens": min(self.settings.max_tokens, JUDGE_MAX_TOKENS),
                   "system": system_blocks(JUDGE_RULES), "messages": [{"role": "user", "content": brief}],
                   "extra_headers": self.tags(stage_id, "judge", job.run_dir, job.project_dir)}
        verdict, usage = await self.ask_structured(Verdict, request, again, f"gate judge of stage {stage_id}", emit)
        if verdict is not None:
            return JudgeResult(verdict=verdict, usage=usage)
        reason = "the judge gave no valid verdict twice: " + "; ".join(problems)
        return JudgeResult(Verdict(passed=False, reasons=[reason], blocking=[reason]), usage)


def _verdict_retry(answer: Any, brief: str) -> Retry:
    """Why a judge's reply is no verdict, and the messages that ask for one again."""
    if answer.error is None:
        return Retry("the judge refused to answer", [{"role": "user", "content": brief}])
    exc = answer.error
    problem = f"malformed or refused verdict ({exc.error_count()} validation error(s): {exc.errors()[0]['msg']})"
    return Retry(problem, [
        {"role": "user", "content": brief},
        {"role": "assistant", "content": "(an answer that was not a valid verdict)"},
        {"role": "user", "content": f"That answer was not a valid verdict: {problem}. "
         "Answer again with the verdict only, as the JSON schema requires."},
    ])


__all__ = ["ClaudeWorker", "require_credentials", "has_credentials", "run_coroutine"]
