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
project dir are written as placeholders, so the recording replays in another project and run. A request
that belongs to no run (``x-odin-run-id: -``, :data:`~odin_magic.workers.exchange.NO_RUN`: a roadmap
phase's contract proposal) is recorded without a run id and never starts the recording over.

An exchange is never a rewrite of the file: it is one line appended to the recording's journal,
``<file>.journal`` beside it (:mod:`odin_magic.workers.record_journal`; fsync'd, so a crash, even SIGKILL,
keeps it), and costs the same however long the run. The YAML is rendered from the journal (written
atomically, then the journal removed) when a drive of the run pauses or ends (the worker's
``drive_ended``, :class:`RecordingFactory`), when the process exits, and before anything reads it: a
recorder of the file made again (a resumed run, a new process) and the replay's loader
(:func:`~odin_magic.workers.script_file.load_script`) fold a leftover journal in first. Folding is
idempotent, so a crash between the render and the journal's removal records nothing twice. The recording
is continued when the same run goes on and started over for another run. No secret is written: every
journal line and the rendered document pass :func:`~odin_magic.core.secrets.redact`.
"""

from __future__ import annotations

import atexit
import json
import threading
import weakref
from pathlib import Path
from typing import Any, Callable

import httpx2
from anthropic import AsyncAnthropic, Middleware

from odin_magic.core.errors import ConfigError
from odin_magic.workers import record_journal as journal
from odin_magic.workers.base import Verdict
from odin_magic.workers.exchange import fingerprint, run_id_of, with_placeholders

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


def _usage(message: dict[str, Any]) -> dict[str, int]:
    usage = message.get("usage") or {}
    return {k: int(usage[k]) for k in USAGE_KEYS if isinstance(usage.get(k), int)}


def _sizes(doc: dict[str, Any]) -> dict[tuple, int]:
    """How many places of each list of the recording ``doc`` are filled: where its next records go."""
    sizes: dict[tuple, int] = {}
    for stage, spec in (doc.get("stages") or {}).items():
        attempts = (spec.get("attempts") or []) if isinstance(spec, dict) else []
        sizes[("stages", stage)] = len(attempts)
        for i, attempt in enumerate(attempts):
            sizes[("turns", stage, i)] = len(attempt.get("turns") or [])
    for stage, answers in (doc.get("judge") or {}).items():
        sizes[("judge", stage)] = len(answers or [])
    for purpose, by_stage in (doc.get("answers") or {}).items():
        for stage, answers in (by_stage or {}).items():
            sizes[("answers", purpose, stage)] = len(answers or [])
    return sizes


class Recorder:
    """One recording file; every client of the process that records into it shares this object.

    An exchange is appended to the recording's journal (:mod:`odin_magic.workers.record_journal`); the YAML
    is rendered from it by :meth:`render` (at the end of a drive, at exit) and when a recorder of the file is
    made (a leftover journal, a crash's, folded in first). The recorder keeps only where the next reply of
    each list goes, so an exchange costs the same however many came before it.
    """

    def __init__(self, path: Path, project_dir: Path):
        self.path = Path(path)
        self.project_dir = Path(project_dir).resolve()
        self._lock = threading.Lock()
        self._attempts: dict[str, int] = {}  # call id -> index of its attempt under stages.<stage>
        try:
            doc = journal.settle(self.path) or journal.load(self.path)
        except OSError as exc:
            raise ConfigError(f"ODIN_RECORD: cannot render the recording {self.path} from its journal: {exc}",
                              hint="give ODIN_RECORD a file in a directory you can write") from None
        self.run: str | None = doc["recorded"].get("run")
        self._sizes = _sizes(doc)
        _live.add(self)

    def middleware(self) -> "RecordingMiddleware":
        return RecordingMiddleware(self)

    def render(self) -> None:
        """The YAML recording rendered from the journal (nothing to do when there is none). A file that cannot
        be written keeps its journal: the next recorder of the file, or the replay, folds it in."""
        with self._lock:
            try:
                journal.settle(self.path)
            except OSError:
                pass

    # -- one exchange -------------------------------------------------------------

    def record(self, headers: Any, body: dict[str, Any], reply: dict[str, Any]) -> None:
        """``reply``: the message, or ``{"error": {status, message}}``."""
        stage = headers.get("x-odin-stage")
        if not stage:
            return  # not a request of odin's workers
        purpose = headers.get("x-odin-purpose", "work")
        run_dir = headers.get("x-odin-run-dir") or ""
        tokens = {"run_dir": run_dir, "run_id": run_id_of(headers),
                  "project_dir": str(self.project_dir)}
        with self._lock:
            record: dict[str, Any] = {"run": tokens["run_id"] or None}
            if self._own(record["run"]):
                record["at"] = journal.now()
            entry = self._entry(reply, purpose, tokens)
            entry["request"] = fingerprint(body, tokens)
            if purpose == "work":
                attempt = self._attempt(stage, headers.get("x-odin-call", ""))
                record.update(section="stages", keys=[stage, attempt], index=self._next(("turns", stage, attempt)))
            elif purpose == "judge":
                record.update(section="judge", keys=[stage], index=self._next(("judge", stage)))
            else:
                record.update(section="answers", keys=[purpose, stage], index=self._next(("answers", purpose, stage)))
            record["entry"] = entry
            journal.append(self.path, record)

    def _own(self, run: str | None) -> bool:
        """The recording of ``run``: another run's recording is started over (True)."""
        if run is None or self.run == run:
            return False
        started_over = self.run is not None
        self.run = run
        if started_over:
            self._sizes.clear()
            self._attempts.clear()
        return started_over

    def _attempt(self, stage: str, call: str) -> int:
        """The attempt of ``stage`` the execution ``call`` records into (a new one for a new execution)."""
        if call not in self._attempts:
            self._attempts[call] = self._next(("stages", stage))
        return self._attempts[call]

    def _next(self, key: tuple) -> int:
        index = self._sizes.get(key, 0)
        self._sizes[key] = index + 1
        return index

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


_live: "weakref.WeakSet[Recorder]" = weakref.WeakSet()


@atexit.register
def _render_at_exit() -> None:
    for recorder in list(_live):
        recorder.render()


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


class RecordingFactory:
    """A client factory whose clients each record their exchanges into one :class:`Recorder`."""

    def __init__(self, factory: Callable[[], AsyncAnthropic], recorder: Recorder):
        self.factory = factory
        self.recorder = recorder

    def __call__(self) -> AsyncAnthropic:
        client = self.factory()
        return client.with_options(middleware=[*client.middleware, self.recorder.middleware()])

    def drive_ended(self) -> None:
        """A drive of the run paused or ended: the recording is rendered (see :meth:`Recorder.render`)."""
        self.recorder.render()


def recording_factory(factory: Callable[[], AsyncAnthropic], path: Path | str,
                      project_dir: Path) -> RecordingFactory:
    """``factory``'s clients, each recording its exchanges into ``path``."""
    return RecordingFactory(factory, recorder_for(path, project_dir))


__all__ = ["Recorder", "RecordingFactory", "RecordingMiddleware", "locate_record", "message_from_sse", "recorder_for",
           "recording_factory"]
