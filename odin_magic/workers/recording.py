"""Recording a run: every model exchange written as a scripted-model script (``ODIN_RECORD=file.yaml``).

A recorder is SDK client middleware (:class:`RecordingMiddleware`) added to every client the workers make
(:func:`recording_factory`): it sees each request (already redacted by
:func:`~odin_magic.core.secrets.redact_request`) and its reply, a streamed one as it passes through to the
worker (the stream is teed, never held back), and writes the reply in the scripted model's own format
(docs/scripted-model.md): a work reply as a *turn* of the stage's current *attempt* (one attempt per stage
execution, the ``x-odin-call`` tag), a judge's as a *verdict*, any other structured reply (the interview's)
under ``answers``; the usage each reply reported is kept, an HTTP error is kept as an ``error:`` turn, and
beside each reply goes the fingerprint of the request it answered (:mod:`odin_magic.workers.exchange`), so
that a replay which sends a different request says where it departed. The run dir, the run id and the
project dir are written as placeholders, so the recording replays in another project and run.

The file is rewritten atomically after every exchange: a crash keeps what was recorded so far. It is
continued when the same run goes on (a resumed run, a new process) and started over for another run.
No secret is written: the whole document passes :func:`~odin_magic.core.secrets.redact`.
"""

from __future__ import annotations

import json
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import httpx2
import yaml
from anthropic import AsyncAnthropic, Middleware

from odin_magic.core.atomic import write_atomic
from odin_magic.core.secrets import redact
from odin_magic.workers.base import Verdict
from odin_magic.workers.exchange import fingerprint, with_placeholders

USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


# -- replies off the wire ----------------------------------------------------------------------


def message_from_sse(data: bytes) -> dict[str, Any] | None:
    """The message a streamed reply's server-sent events carry, or None when it broke off (no message_stop)."""
    message: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    done = False
    for line in data.decode("utf-8", errors="replace").splitlines():
        if not line.startswith("data:"):
            continue
        try:
            event = json.loads(line[5:].strip())
        except ValueError:
            continue
        kind = event.get("type")
        if kind == "message_start":
            message = dict(event["message"])
            message["usage"] = dict(message.get("usage") or {})
        elif kind == "content_block_start":
            blocks[event["index"]] = dict(event["content_block"])
        elif kind == "content_block_delta":
            delta, index = event["delta"], event["index"]
            if delta.get("type") == "text_delta":
                blocks[index]["text"] = blocks[index].get("text", "") + delta["text"]
            elif delta.get("type") == "input_json_delta":
                partial[index] = partial.get(index, "") + delta.get("partial_json", "")
        elif kind == "message_delta" and message is not None:
            message["stop_reason"] = event.get("delta", {}).get("stop_reason")
            message["usage"].update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
        elif kind == "message_stop":
            done = True
    if message is None or not done:
        return None
    for index, text in partial.items():
        blocks[index]["input"] = json.loads(text) if text.strip() else {}
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message


class _Tee(httpx2.AsyncByteStream):
    """A response body passed on as it comes, and handed whole to ``done`` once it has all come."""

    def __init__(self, inner: Any, done: Callable[[bytes], None]):
        self.inner = inner
        self.done = done
        self.chunks: list[bytes] = []
        self.finished = False

    async def __aiter__(self):
        async for chunk in self.inner:
            self.chunks.append(chunk)
            yield chunk
        self._finish()

    def _finish(self) -> None:
        if not self.finished:
            self.finished = True
            self.done(b"".join(self.chunks))

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        finally:
            self._finish()  # a reply the reader stopped early: recorded if it was complete


# -- the recording -----------------------------------------------------------------------------


def _literal(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(str, _literal)


def _usage(message: dict[str, Any]) -> dict[str, int]:
    usage = message.get("usage") or {}
    return {k: int(usage[k]) for k in USAGE_KEYS if isinstance(usage.get(k), int)}


class Recorder:
    """One recording file; every client of the process that records into it shares this object."""

    def __init__(self, path: Path, project_dir: Path):
        self.path = Path(path)
        self.project_dir = Path(project_dir).resolve()
        self._lock = threading.Lock()
        self._attempts: dict[str, int] = {}  # call id -> index of its attempt under stages.<stage>
        self.doc = self._load()

    def _load(self) -> dict[str, Any]:
        try:
            doc = yaml.safe_load(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            doc = None
        return doc if isinstance(doc, dict) and isinstance(doc.get("recorded"), dict) else self._fresh(None)

    @staticmethod
    def _fresh(run: str | None) -> dict[str, Any]:
        at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        return {"version": 1, "description": f"recorded by ODIN_RECORD{f' from run {run}' if run else ''}",
                "recorded": {"run": run, "at": at}, "stages": {}, "judge": {}, "answers": {}}

    def middleware(self) -> "RecordingMiddleware":
        return RecordingMiddleware(self)

    # -- one exchange -------------------------------------------------------------

    def record(self, headers: Any, body: dict[str, Any], reply: dict[str, Any]) -> None:
        """``reply``: the message, or ``{"error": {status, message}}``."""
        stage = headers.get("x-odin-stage")
        if not stage:
            return  # not a request of odin's workers
        purpose = headers.get("x-odin-purpose", "work")
        run_dir = headers.get("x-odin-run-dir") or ""
        tokens = {"run_dir": run_dir, "run_id": Path(run_dir).name if run_dir else "",
                  "project_dir": str(self.project_dir)}
        with self._lock:
            self._own(tokens["run_id"] or None)
            entry = self._entry(reply, purpose, tokens)
            entry["request"] = fingerprint(body, tokens)
            if purpose == "work":
                self._turn(stage, headers.get("x-odin-call", ""), entry)
            elif purpose == "judge":
                self.doc["judge"].setdefault(stage, []).append(entry)
            else:
                self.doc["answers"].setdefault(purpose, {}).setdefault(stage, []).append(entry)
            self._save()

    def _own(self, run: str | None) -> None:
        """The recording of ``run``: another run's recording is started over."""
        recorded = self.doc["recorded"]
        if run is None or recorded.get("run") == run:
            return
        if recorded.get("run") is None:
            recorded["run"] = run
            self.doc["description"] = f"recorded by ODIN_RECORD from run {run}"
            return
        self.doc = self._fresh(run)
        self._attempts.clear()

    def _turn(self, stage: str, call: str, entry: dict[str, Any]) -> None:
        attempts = self.doc["stages"].setdefault(stage, {"attempts": []})["attempts"]
        if call not in self._attempts:
            attempts.append({"turns": []})
            self._attempts[call] = len(attempts) - 1
        attempts[self._attempts[call]]["turns"].append(entry)

    @staticmethod
    def _entry(reply: dict[str, Any], purpose: str, tokens: dict[str, str]) -> dict[str, Any]:
        if "error" in reply:
            return {"error": {**reply["error"], "retry_after_ms": 1}}
        texts = [b.get("text", "") for b in reply.get("content", []) if b.get("type") == "text"]
        text = with_placeholders("\n".join(texts), tokens)
        if purpose != "work":
            return {**_answer(text, reply.get("stop_reason"), purpose, tokens), "usage": _usage(reply)}
        tools = [{b["name"]: with_placeholders(b.get("input") or {}, tokens)}
                 for b in reply.get("content", []) if b.get("type") == "tool_use"]
        entry: dict[str, Any] = {}
        if texts:
            entry["text"] = text
        if tools:
            entry["tools"] = tools
        if reply.get("stop_reason") != ("tool_use" if tools else "end_turn"):
            entry["stop_reason"] = reply.get("stop_reason")
        entry["usage"] = _usage(reply)
        return entry

    def _save(self) -> None:
        text = yaml.dump(redact(self.doc), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)
        write_atomic(self.path, text)


def _answer(text: str, stop_reason: str | None, purpose: str, tokens: dict[str, str]) -> dict[str, Any]:
    """A structured reply in the script's form: ``json`` (a valid verdict, for the judge), ``refusal`` or
    ``malformed``."""
    if stop_reason == "refusal":
        return {"refusal": text}
    try:
        value = json.loads(text)
    except ValueError:
        return {"malformed": text}
    if not isinstance(value, dict):
        return {"malformed": text}
    if purpose == "judge":
        try:
            Verdict.model_validate(value)
        except ValueError:
            return {"malformed": text}
    return {"json": value}


class RecordingMiddleware(Middleware):
    """SDK client middleware that hands every exchange to a :class:`Recorder`."""

    def __init__(self, recorder: Recorder):
        self.recorder = recorder

    async def handle_async(self, request: Any, call_next: Any) -> Any:
        response = await call_next(request)
        headers, body = dict(request.headers or {}), dict(request.json or {})
        http = response.http_response
        if http.status_code >= 400:
            data = await http.aread()
            try:
                message = json.loads(data).get("error", {}).get("message", "")
            except (ValueError, AttributeError):
                message = data.decode("utf-8", errors="replace")[:200]
            self.recorder.record(headers, body, {"error": {"status": http.status_code, "message": message}})
        elif "text/event-stream" in http.headers.get("content-type", ""):
            def done(data: bytes) -> None:
                message = message_from_sse(data)
                if message is not None:  # a reply that broke off is asked again: the retry is recorded
                    self.recorder.record(headers, body, message)

            http.stream = _Tee(http.stream, done)
        else:
            data = await http.aread()
            try:
                message = json.loads(data)
            except ValueError:
                return response
            if isinstance(message, dict) and message.get("type") == "message":
                self.recorder.record(headers, body, message)
        return response


# -- wiring ---------------------------------------------------------------------------------------

_recorders: dict[Path, Recorder] = {}
_registry_lock = threading.Lock()


def locate_record(path: Path | str, project_dir: Path) -> Path:
    """Where ``ODIN_RECORD`` writes: a relative path is taken from the project directory."""
    path = Path(path).expanduser()
    return path if path.is_absolute() else Path(project_dir) / path


def recorder_for(path: Path | str, project_dir: Path) -> Recorder:
    """The process's recorder of ``path`` (one per file, shared by the worker and the interview)."""
    where = locate_record(path, project_dir).resolve()
    with _registry_lock:
        if where not in _recorders:
            _recorders[where] = Recorder(where, project_dir)
        return _recorders[where]


def recording_factory(factory: Callable[[], AsyncAnthropic], path: Path | str,
                      project_dir: Path) -> Callable[[], AsyncAnthropic]:
    """``factory``'s clients, each recording its exchanges into ``path``."""
    recorder = recorder_for(path, project_dir)

    def make() -> AsyncAnthropic:
        client = factory()
        return client.with_options(middleware=[*client.middleware, recorder.middleware()])

    return make


__all__ = ["Recorder", "RecordingMiddleware", "locate_record", "message_from_sse", "recorder_for",
           "recording_factory"]
