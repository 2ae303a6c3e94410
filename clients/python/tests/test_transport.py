"""The HTTP transport against a local server that closes idle keep-alive connections."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from creditlab.transport import Transport


class _ClosesAfterEachAnswer(BaseHTTPRequestHandler):
    """Answers 200 on a keep-alive connection without saying so, then closes it: as a server whose
    idle timeout has just expired."""

    protocol_version = "HTTP/1.1"
    requests = 0

    def do_POST(self):
        length = int(self.headers.get("content-length", 0))
        self.rfile.read(length)
        type(self).requests += 1
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def log_message(self, *args):
        pass


@pytest.fixture
def closing_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ClosesAfterEachAnswer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_connection_the_server_closed_while_idle_is_not_reused_even_for_a_mutation(closing_server):
    transport = Transport(closing_server, api_key="k")
    for _ in range(3):
        res = transport.request("POST", "/graphql", b"{}", content_type="application/json", idempotent=False)
        assert res.status == 200
        time.sleep(0.2)  # the server's close reaches the client while the connection is idle
    assert _ClosesAfterEachAnswer.requests == 3
