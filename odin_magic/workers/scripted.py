"""The offline scripted model: a fake Messages API that replays a YAML script.

It is an HTTP transport (``httpx2.MockTransport``) given to a real
``AsyncAnthropic`` client, so the REAL SDK and the REAL Claude worker run a
loop with real tools, real files and real gate commands, without a network or
an API key. Select it with ``Settings(script=...)`` / ``ODIN_SCRIPT``. The
script format is documented in ``docs/scripted-model.md``.

How a request finds its answer: the Claude worker tags every request with the
stage (``x-odin-stage``), the purpose (``x-odin-purpose``: ``work`` or
``judge``) and a call id (``x-odin-call``, one per stage execution or judge
call). A new work call of a stage takes the stage's next attempt; each request
within the call takes the attempt's next turn. Each judge call takes the
stage's next verdict. When a stage runs more often than the script lists, its
last attempt (or verdict) repeats.

This module also holds the wire encoding of replies (JSON and server-sent
events), which the tests' fake Messages API reuses.
"""

from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path
from typing import Any, Callable

import httpx2
from anthropic import AsyncAnthropic

from odin_magic.core.atomic import write_atomic
from odin_magic.core.secrets import redact_request
from odin_magic.workers.exchange import fingerprint, run_id_of
from odin_magic.workers.script_file import Answer, Attempt, Script, ScriptedError, Sent, Turn, load_script

__all__ = ["Answer", "Attempt", "Script", "ScriptedError", "ScriptedModel", "Turn", "load_script"]

CHARS_PER_TOKEN = 4
POSITION_FILE = "scripted-model.json"  # in the run dir: where the replay stands

# -- wire encoding ---------------------------------------------------------------------------

_ids = itertools.count(1)


def new_id(prefix: str) -> str:
    return f"{prefix}_{next(_ids):06d}"


def message_body(
    *,
    model: str,
    content: list[dict[str, Any]],
    stop_reason: str,
    usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    """A complete Messages API reply."""
    full_usage = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    full_usage.update(usage or {})
    return {
        "id": new_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": full_usage,
    }


def sse_bytes(message: dict[str, Any]) -> bytes:
    """``message`` as the server-sent events of a streamed reply."""
    out: list[str] = []

    def event(name: str, data: dict[str, Any]) -> None:
        out.append(f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n")

    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    event("message_start", {"message": start})
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
            text = block["text"]
            for chunk in [text[i : i + 200] for i in range(0, len(text), 200)] or [""]:
                event("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": chunk}})
        elif block["type"] == "tool_use":
            event("content_block_start", {"index": index, "content_block": {**block, "input": {}}})
            event(
                "content_block_delta",
                {"index": index, "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}},
            )
        else:
            event("content_block_start", {"index": index, "content_block": block})
        event("content_block_stop", {"index": index})
    event(
        "message_delta",
        {"delta": {"stop_reason": message["stop_reason"], "stop_sequence": None}, "usage": {"output_tokens": usage["output_tokens"]}},
    )
    event("message_stop", {})
    return "".join(out).encode()


def reply_response(request_body: dict[str, Any], message: dict[str, Any]) -> httpx2.Response:
    """The HTTP response carrying ``message``, streamed if the request asked for it."""
    headers = {"request-id": new_id("req")}
    if request_body.get("stream"):
        return httpx2.Response(200, headers={**headers, "content-type": "text/event-stream"}, content=sse_bytes(message))
    return httpx2.Response(200, headers=headers, json=message)


def request_problem(body: dict[str, Any]) -> str | None:
    """What the Messages API would reject in a request, of the checks the fakes mirror (None: nothing).

    ``thinking`` (enabled): a whole ``budget_tokens`` of at least 1024 and below ``max_tokens``."""
    thinking = body.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled":
        return None
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or budget < 1024:
        return f"thinking.budget_tokens: must be an integer of at least 1024 (got {budget!r})"
    if budget >= int(body.get("max_tokens", 0)):
        return f"max_tokens must be greater than thinking.budget_tokens ({body.get('max_tokens')} <= {budget})"
    return None


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def error_response(status: int, message: str, *, retry_after_ms: int | None = None) -> httpx2.Response:
    headers = {"request-id": new_id("req")}
    if retry_after_ms is not None:
        headers["retry-after-ms"] = str(retry_after_ms)
    body = {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}
    return httpx2.Response(status, headers=headers, json=body)


def estimate_usage(request_body: dict[str, Any], content: list[dict[str, Any]], cache: set[str]) -> dict[str, int]:
    """Token counts for a scripted reply: sizes of request and reply, with a simple prompt cache.

    The cached prefix is the tools and the system prompt when the system
    carries ``cache_control``: the first request writes it, later identical
    prefixes read it.
    """
    prefix = json.dumps([request_body.get("tools", []), request_body.get("system", "")], sort_keys=True)
    rest = json.dumps(request_body.get("messages", []))
    prefix_tokens = len(prefix) // CHARS_PER_TOKEN
    usage = {
        "input_tokens": len(rest) // CHARS_PER_TOKEN + 1,
        "output_tokens": len(json.dumps(content)) // CHARS_PER_TOKEN + 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    if "cache_control" in json.dumps(request_body.get("system", "")):
        if prefix in cache:
            usage["cache_read_input_tokens"] = prefix_tokens
        else:
            cache.add(prefix)
            usage["cache_creation_input_tokens"] = prefix_tokens
    else:
        usage["input_tokens"] += prefix_tokens
    return usage


# -- the script: odin_magic.workers.script_file (models, shorthands, located errors) -----------


# -- the fake API ------------------------------------------------------------------------------


def _substitute(value: Any, tokens: dict[str, str]) -> Any:
    if isinstance(value, str):
        for key, replacement in tokens.items():
            value = value.replace("{" + key + "}", replacement)
        return value
    if isinstance(value, list):
        return [_substitute(v, tokens) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, tokens) for k, v in value.items()}
    return value


class ScriptedModel:
    """Replays a :class:`Script` as a Messages API. One instance keeps the replay position."""

    def __init__(self, script: Script, source: str = "script", project_dir: Path | None = None):
        self.script = script
        self.source = source
        self.project_dir = Path(project_dir) if project_dir is not None else None
        self._lock = threading.Lock()
        self._positions: dict[str, dict[str, dict[str, int]]] = {}  # run dir -> replay position
        self._calls: dict[str, tuple[Attempt, int]] = {}  # call id -> (attempt, next turn)
        self._attempt_numbers: dict[str, int] = {}  # call id -> which attempt (1, 2, ...) it replays
        self._cache: set[str] = set()
        self._phases: dict[str, str | None] = {}  # run dir -> its roadmap phase (None: not a phase's run)
        self.requests: list[dict[str, Any]] = []  # every request body, in order
        self.usages: list[dict[str, int] | None] = []  # the usage each request's reply reported (None: an error)
        self.departures: list[str] = []  # where a replay of a recording departed from it
        self.root: Path | None = self.project_dir  # the project, for the {project_dir} placeholder

    @classmethod
    def from_file(cls, path: Path, project_dir: Path | None = None) -> "ScriptedModel":
        """``project_dir`` given: the replay position is kept in each run's dir, so a resumed run
        (a new process, a restarted kernel) continues the script where it left off."""
        return cls(load_script(path), source=str(path), project_dir=project_dir)

    # -- replay position ------------------------------------------------------

    def _position_file(self, run_dir: str) -> Path | None:
        return self.project_dir / run_dir / POSITION_FILE if self.project_dir is not None else None

    def _position(self, run_dir: str) -> dict[str, dict[str, int]]:
        if run_dir not in self._positions:
            position: dict[str, dict[str, int]] = {"attempts": {}, "answers": {}}
            path = self._position_file(run_dir)
            if path is not None and path.is_file():
                try:
                    loaded = json.loads(path.read_text(encoding="utf-8"))
                    position = {"attempts": dict(loaded["attempts"]), "answers": dict(loaded["answers"])}
                except (ValueError, KeyError, TypeError):
                    pass  # a damaged position file: replay from the start
            self._positions[run_dir] = position
        return self._positions[run_dir]

    def _advance(self, run_dir: str, kind: str, key: str) -> int:
        """The number of ``kind`` entries ``key`` has taken so far; counts one more."""
        position = self._position(run_dir)
        n = position[kind].get(key, 0)
        position[kind][key] = n + 1
        path = self._position_file(run_dir)
        if path is not None and path.parent.is_dir():
            write_atomic(path, json.dumps(position), within=path.parent)  # never through a link in the run dir
        return n

    # -- clients ---------------------------------------------------------------

    def transport(self) -> httpx2.MockTransport:
        return httpx2.MockTransport(self.handle)

    def client(self, *, max_retries: int = 2) -> AsyncAnthropic:
        return AsyncAnthropic(
            api_key="scripted-offline",
            base_url="http://scripted.invalid",
            max_retries=max_retries,
            http_client=httpx2.AsyncClient(transport=self.transport()),
            middleware=[redact_request],
        )

    def client_factory(self, *, max_retries: int = 2) -> Callable[[], AsyncAnthropic]:
        return lambda: self.client(max_retries=max_retries)

    # -- replies ---------------------------------------------------------------

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        if not request.url.path.endswith("/messages"):
            return error_response(404, f"scripted model: only POST /v1/messages is served, not {request.url.path}")
        body = json.loads(request.content or b"{}")
        stage = request.headers.get("x-odin-stage")
        purpose = request.headers.get("x-odin-purpose", "work")
        call = request.headers.get("x-odin-call", "")
        run_dir = request.headers.get("x-odin-run-dir", ".")
        with self._lock:
            self.requests.append(body)
            self.usages.append(None)
            problem = request_problem(body)
            if problem is not None:
                return error_response(400, f"scripted model: {problem}")
            if not stage:
                return error_response(400, "scripted model: the request has no x-odin-stage header (not from the Claude worker?)")
            tokens = {"run_dir": run_dir, "run_id": run_id_of(request.headers), "stage": stage}
            stage = self._phase_key(stage, purpose, run_dir)
            if self.root is not None:
                tokens["project_dir"] = str(Path(self.root).resolve())
            if purpose == "work":
                return self._work(body, stage, call, tokens)
            return self._answer(body, purpose, stage, tokens)

    # -- a roadmap phase's own script ------------------------------------------------

    def _phase_of(self, run_dir: str) -> str | None:
        """The roadmap phase whose run ``run_dir`` is (its task names it), or None; read once per run."""
        if run_dir not in self._phases:
            phase = None
            if self.project_dir is not None:
                from odin_magic.core.errors import OdinError
                from odin_magic.runs.roadmap_progress import phase_of_task
                from odin_magic.runs.store import RunStore

                try:
                    phase = phase_of_task(RunStore(self.project_dir).load(Path(run_dir).name).state.task)
                except (OdinError, OSError, ValueError):
                    phase = None
            self._phases[run_dir] = phase
        return self._phases[run_dir]

    def _phase_key(self, stage: str, purpose: str, run_dir: str) -> str:
        """``<phase>/<stage>`` when the run is a roadmap phase's and the script has that key for ``purpose``
        (so each phase of a roadmap can have its own turns and verdicts for the same loop), else ``stage``."""
        keyed = self.script.stages if purpose == "work" else (
            self.script.judge if purpose == "judge" else self.script.answers.get(purpose, {}))
        if not any("/" in key for key in keyed):
            return stage
        phase = self._phase_of(run_dir)
        return f"{phase}/{stage}" if phase is not None and f"{phase}/{stage}" in keyed else stage

    def _reported(self, usage: dict[str, int]) -> dict[str, int]:
        """``usage``, kept as the reply of the request being answered (the last one: under the lock)."""
        self.usages[-1] = dict(usage)
        return usage

    def _work(self, body: dict[str, Any], stage: str, call: str, tokens: dict[str, str]) -> httpx2.Response:
        if call not in self._calls:
            attempts = self.script.stages.get(stage)
            if not attempts:
                return error_response(
                    400, f"scripted model: {self.source} has no turns for stage {stage!r} (add stages.{stage})"
                )
            n = self._advance(tokens["run_dir"], "attempts", stage)
            if self.strict and n >= len(attempts):
                return self._depart(f"stage {stage} runs a {_nth(n + 1)} time; the recording ran it {len(attempts)} time(s)")
            self._calls[call] = (attempts[min(n, len(attempts) - 1)], 0)
            self._attempt_numbers[call] = min(n, len(attempts) - 1) + 1
        attempt, index = self._calls[call]
        self._calls[call] = (attempt, index + 1)
        where = f"stage {stage}, attempt {self._attempt_numbers[call]}, turn {index + 1}"
        if index >= len(attempt.turns):
            if self.strict:
                return self._depart(f"{where}: the recording's attempt ended after {len(attempt.turns)} turn(s)")
            turn = Turn(text="(end of the scripted turns for this stage)")
        else:
            turn = attempt.turns[index]
        if (departed := self._differs(turn.request, body, tokens, where)) is not None:
            return departed
        if turn.error is not None:
            return error_response(turn.error.status, turn.error.message, retry_after_ms=turn.error.retry_after_ms)
        content: list[dict[str, Any]] = []
        if turn.text:
            content.append({"type": "text", "text": _substitute(turn.text, tokens)})
        for item in turn.tools:
            (name, args), = item.items()
            content.append({"type": "tool_use", "id": new_id("toolu"), "name": name, "input": _substitute(args or {}, tokens)})
        if not content:
            content.append({"type": "text", "text": ""})
        stop = turn.stop_reason or ("tool_use" if turn.tools else "end_turn")
        usage = self._reported(turn.usage or estimate_usage(body, content, self._cache))
        return reply_response(body, message_body(model=body.get("model", self.script.model), content=content, stop_reason=stop, usage=usage))

    def _answer(self, body: dict[str, Any], purpose: str, stage: str, tokens: dict[str, str]) -> httpx2.Response:
        if purpose == "judge":
            answers = self.script.judge.get(stage) or ([self.script.default_verdict] if self.script.default_verdict else [])
        else:
            answers = self.script.answers.get(purpose, {}).get(stage, [])
        if not answers:
            where = f"judge.{stage} (or default_verdict)" if purpose == "judge" else f"answers.{purpose}.{stage}"
            return error_response(400, f"scripted model: {self.source} has no answer for {purpose} of stage {stage!r} (add {where})")
        n = self._advance(tokens["run_dir"], "answers", f"{purpose}/{stage}")
        if self.strict and n >= len(answers):
            return self._depart(f"{purpose} of stage {stage} is asked a {_nth(n + 1)} time; "
                                f"the recording asked it {len(answers)} time(s)")
        answer = answers[min(n, len(answers) - 1)]
        departed = self._differs(answer.request, body, tokens, f"stage {stage}, {purpose} {n + 1}")
        if departed is not None:
            return departed
        if answer.error is not None:
            return error_response(answer.error.status, answer.error.message, retry_after_ms=answer.error.retry_after_ms)
        stop = "end_turn"
        if answer.json_ is not None:
            text = json.dumps(_substitute(answer.json_, tokens))
        elif answer.refusal is not None:
            text, stop = answer.refusal, "refusal"
        else:
            text = answer.malformed or ""
        content = [{"type": "text", "text": text}]
        usage = self._reported(answer.usage or estimate_usage(body, content, self._cache))
        return reply_response(body, message_body(model=body.get("model", self.script.model), content=content, stop_reason=stop, usage=usage))


    # -- a recording's replay ------------------------------------------------------

    @property
    def strict(self) -> bool:
        """A recording (``recorded:``) replays exactly: no last reply repeats, every request is checked."""
        return self.script.recorded is not None

    def _depart(self, what: str) -> httpx2.Response:
        message = f"the replay departs from its recording {self.source} at {what}"
        self.departures.append(message)
        return error_response(400, f"scripted model: {message}")

    def _differs(self, recorded: Sent | None, body: dict[str, Any], tokens: dict[str, str],
                 where: str) -> httpx2.Response | None:
        """The departure when the request is not the one the recorded reply answered, else None."""
        if recorded is None:
            return None
        now = fingerprint(body, tokens)
        if now["digest"] == recorded.digest:
            return None
        return self._depart(f"{where}: the request differed (recorded: {recorded.sent!r}; now: {now['sent']!r})")


def _nth(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"
