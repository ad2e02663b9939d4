"""The offline scripted model (odin_magic.workers.scripted.ScriptedModel) served over HTTP on 127.0.0.1: a local
fake of the Messages API for code in another process (a kernel), reached with ``ANTHROPIC_BASE_URL``."""

from __future__ import annotations

import contextlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

import httpx2

from odin_magic.workers.scripted import ScriptedModel

_HOP = {"content-length", "transfer-encoding", "connection", "content-encoding"}


@contextlib.contextmanager
def serving(model: ScriptedModel) -> Iterator[str]:
    """Serve ``model`` until the block ends; yields the base URL (``http://127.0.0.1:PORT``)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            request = httpx2.Request("POST", f"http://127.0.0.1{self.path}", headers=dict(self.headers.items()),
                                     content=body)
            response = model.handle(request)
            content = response.read()
            self.send_response(response.status_code)
            for key, value in response.headers.items():
                if key.lower() not in _HOP:
                    self.send_header(key, value)
            self.send_header("content-length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def log_message(self, *args) -> None:  # quiet: the test reads the model's requests instead
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
