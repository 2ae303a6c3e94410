"""The HTTP transport against a local server that closes idle keep-alive connections."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from creditlab.errors import ApiError
from creditlab.transport import Transport
from support import send_json


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


class _Answers503(BaseHTTPRequestHandler):
    """Answers every GET 503 with the error code of the class; counts the requests."""

    protocol_version = "HTTP/1.1"
    error = ""
    requests = 0

    def do_GET(self):
        type(self).requests += 1
        send_json(self, 503, ('{"error": "%s", "message": "stopped"}' % type(self).error).encode())

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("error, retried", [("STATEMENT_TIMEOUT", False), ("DATABASE_UNAVAILABLE", True)])
def test_a_statement_stopped_at_the_time_limit_is_not_retried_other_503s_are(error, retried):
    handler = type("Handler", (_Answers503,), {"error": error, "requests": 0})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        transport = Transport(f"http://127.0.0.1:{server.server_address[1]}", api_key="k")
        transport.retry = transport.retry._replace(budget=0.5, first_delay=0.01, max_delay=0.05)
        with pytest.raises(ApiError) as refused:
            transport.request("GET", "/v1/runs/x/export")
        assert refused.value.status == 503
        assert (handler.requests > 1) == retried, handler.requests
    finally:
        server.shutdown()
        server.server_close()
