"""An HTTP proxy in front of a real S3 server (SeaweedFS) that refuses chosen requests, so a test can
put a gateway between two object-store calls it makes (e.g. after a WAL append, before a delete) and
kill it there. Requests are forwarded unchanged (same Host header: SigV4 signatures still verify);
while `refusing(method, path)` is true a request is answered 503 (S3 "SlowDown", retriable) instead.

    with RefusingProxy(server.endpoint) as proxy:  proxy.endpoint, proxy.refuse = fn, proxy.refused

It also counts: `proxy.seen` lists (method, path) of every request it received, in order.
"""
from __future__ import annotations

import http.client
import http.server
import threading
import urllib.parse

_SLOW_DOWN = b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>refused by the test proxy</Message></Error>'
_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "upgrade"}


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:  # a gateway killed mid-request: not news
        pass


class RefusingProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = urllib.parse.urlsplit(upstream)
        self.refuse = lambda method, path: False
        self.refused: list[tuple[str, str]] = []
        self.seen: list[tuple[str, str]] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                proxy.seen.append((self.command, self.path))
                if proxy.refuse(self.command, self.path):
                    proxy.refused.append((self.command, self.path))
                    self._answer(503, [("Content-Type", "application/xml")], _SLOW_DOWN)
                    return
                upstream = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=30)
                try:
                    upstream.request(self.command, self.path, body=body,
                                     headers={k: v for k, v in self.headers.items() if k.lower() not in _HOP})
                    answer = upstream.getresponse()
                    data = answer.read()
                    headers = [(k, v) for k, v in answer.getheaders()
                               if k.lower() not in _HOP and k.lower() != "content-length"]
                    self._answer(answer.status, headers, data)
                finally:
                    upstream.close()

            def _answer(self, status: int, headers: list, data: bytes) -> None:
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "RefusingProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
