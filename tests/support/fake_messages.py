"""A local fake of the Messages API for tests: an httpx2 mock transport (or a server on 127.0.0.1) that records every request.

Tests queue replies (``reply``/``tool``/``error``/``verdict``/``raw``) and drive
the REAL ``AsyncAnthropic`` client (and through it the Claude worker) against
it; every request the SDK sent is kept in :attr:`FakeMessages.requests` with
its headers and JSON body, so tests assert on what was actually sent.
"""

from __future__ import annotations

import contextlib
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator

import httpx2
from anthropic import AsyncAnthropic

from odin_magic.workers.scripted import error_response, message_body, new_id, reply_response, request_problem


@dataclass
class Recorded:
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def text(self) -> str:
        """Everything the request carried as model input: system, messages and tools, as JSON."""
        return json.dumps({k: self.body.get(k) for k in ("system", "messages")}, ensure_ascii=False)

    @property
    def retry_count(self) -> int:
        return int(self.headers.get("x-stainless-retry-count", "0"))


Responder = Callable[[dict[str, Any]], httpx2.Response]

#: A response carrying this header is cut after that many bytes of its body: the connection drops
#: (served over HTTP, the server closes it short of its content-length; through the mock transport,
#: reading the body raises httpx's RemoteProtocolError, as a real dropped connection does).
CUT_HEADER = "x-fake-cut-after"


class _DroppedStream(httpx2.AsyncByteStream):
    def __init__(self, data: bytes):
        self.data = data

    async def __aiter__(self):
        yield self.data
        raise httpx2.RemoteProtocolError("peer closed connection without sending complete message body")


class FakeMessages:
    """Replies in the order queued; a request with nothing queued fails the test loudly (HTTP 500 + record)."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._queue: list[Responder] = []
        self._lock = threading.Lock()
        self.unexpected: list[dict[str, Any]] = []
        self.served: list[dict[str, int]] = []  # the usage of every reply served (queued with ``reply``)

    # -- queueing replies ------------------------------------------------------------

    def raw(self, responder: Responder) -> "FakeMessages":
        self._queue.append(responder)
        return self

    def reply(
        self,
        text: str | None = None,
        *,
        tools: list[tuple[str, dict[str, Any]]] | None = None,
        usage: dict[str, int] | None = None,
        stop_reason: str | None = None,
    ) -> "FakeMessages":
        content: list[dict[str, Any]] = []
        if text is not None:
            content.append({"type": "text", "text": text})
        for name, args in tools or []:
            content.append({"type": "tool_use", "id": new_id("toolu"), "name": name, "input": args})
        stop = stop_reason or ("tool_use" if tools else "end_turn")
        use = usage or {"input_tokens": 10, "output_tokens": 5}

        def respond(body: dict[str, Any]) -> httpx2.Response:
            self.served.append(dict(use))
            return reply_response(body, message_body(model=body["model"], content=content, stop_reason=stop, usage=use))

        return self.raw(respond)

    def tool(self, name: str, args: dict[str, Any], *, text: str | None = None, **kw: Any) -> "FakeMessages":
        return self.reply(text, tools=[(name, args)], **kw)

    def verdict(self, **fields: Any) -> "FakeMessages":
        return self.reply(json.dumps(fields), usage={"input_tokens": 7, "output_tokens": 3})

    def truncated(self, text: str = "I will now write the fi", *, keep: float = 0.5,
                  usage: dict[str, int] | None = None) -> "FakeMessages":
        """A reply whose connection drops after ``keep`` of its body (its usage counts as served)."""
        use = usage or {"input_tokens": 10, "output_tokens": 5}

        def respond(body: dict[str, Any]) -> httpx2.Response:
            self.served.append(dict(use))
            full = reply_response(body, message_body(model=body["model"], content=[{"type": "text", "text": text}],
                                                     stop_reason="end_turn", usage=use))
            data = full.read()
            return httpx2.Response(200, headers={**full.headers, CUT_HEADER: str(int(len(data) * keep))}, content=data)

        return self.raw(respond)

    def error(self, status: int, message: str = "error", retry_after_ms: int | None = 1) -> "FakeMessages":
        return self.raw(lambda body: error_response(status, message, retry_after_ms=retry_after_ms))

    # -- the transport -----------------------------------------------------------------

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content or b"{}")
        with self._lock:
            self.requests.append(Recorded(dict(request.headers), body))
            problem = request_problem(body)  # what the real API would reject, e.g. a thinking budget over max_tokens
            if problem is not None:
                self.unexpected.append(body)
                return error_response(400, f"fake Messages API: {problem}")
            if not self._queue:
                self.unexpected.append(body)
                return error_response(400, "fake Messages API: no reply queued for this request")
            responder = self._queue.pop(0)
        return responder(body)

    @property
    def pending(self) -> int:
        return len(self._queue)

    def _handle_cut(self, request: httpx2.Request) -> httpx2.Response:
        response = self.handle(request)
        cut = response.headers.get(CUT_HEADER)
        if cut is None:
            return response
        headers = {k: v for k, v in response.headers.items() if k.lower() not in (CUT_HEADER, "content-length")}
        return httpx2.Response(response.status_code, headers=headers, stream=_DroppedStream(response.read()[: int(cut)]))

    def client(self, max_retries: int = 2) -> AsyncAnthropic:
        return AsyncAnthropic(
            api_key="test-key",
            base_url="http://fake-messages.invalid",
            max_retries=max_retries,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(self._handle_cut)),
        )

    def factory(self, max_retries: int = 2) -> Callable[[], AsyncAnthropic]:
        return lambda: self.client(max_retries=max_retries)

    def serve(self) -> contextlib.AbstractContextManager[str]:
        """Serve this fake over real HTTP on 127.0.0.1; yields the base URL."""
        return serve_handle(self.handle)

    def bodies(self, purpose: str | None = None, stage: str | None = None) -> list[Recorded]:
        return [
            r for r in self.requests
            if (purpose is None or r.headers.get("x-odin-purpose") == purpose)
            and (stage is None or r.headers.get("x-odin-stage") == stage)
        ]


@contextlib.contextmanager
def serve_handle(handle: Callable[[httpx2.Request], httpx2.Response]) -> Iterator[str]:
    """Serve ``handle`` (a fake's, or the scripted model's) over real HTTP on 127.0.0.1 until the block ends;
    yields the base URL, for code in another process (``ANTHROPIC_BASE_URL``). A response with the cut header
    promises its whole body, sends part of it and hangs up."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("content-length", "0"))
            request = httpx2.Request("POST", f"http://127.0.0.1{self.path}", headers=dict(self.headers.items()),
                                     content=self.rfile.read(length))
            response = handle(request)
            body = response.read()
            cut = response.headers.get(CUT_HEADER)
            self.send_response(response.status_code)
            for key, value in response.headers.items():
                if key.lower() not in ("content-length", "transfer-encoding", "connection", CUT_HEADER):
                    self.send_header(key, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            if cut is not None:  # promise the whole body, send part of it, hang up
                self.wfile.write(body[: int(cut)])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
