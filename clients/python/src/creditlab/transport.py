"""
HTTP to one Creditlab server: persistent connections (one per thread), the API key, and retries.

Only idempotent requests are retried (event appends carry event ids, run creation carries the run id,
the online path carries the id of the event it records, reads change nothing). Retried: network errors,
5xx answers, and 429 after the server's Retry-After. A request that is not idempotent is retried only when
the connection was refused, i.e. when it cannot have reached the server.
"""

from __future__ import annotations

import http.client
import itertools
import json
import random
import select
import threading
import time
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Optional, Union
from urllib.parse import urlsplit

from . import __version__
from .errors import ApiError, ServerUnavailable


#: A request body: bytes, or a function that opens it afresh (as chunks) for each attempt, so that a large
#: body is streamed, never held whole, and a retry sends it from its start.
Body = Union[bytes, Callable[[], Iterable[bytes]], None]

#: Reads a successful answer's body from the response as it arrives (a large download), instead of the
#: transport reading it into memory; called again from the start for each attempt.
BodyReader = Callable[[http.client.HTTPResponse], Any]


class Response(NamedTuple):
    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self):
        return json.loads(self.body) if self.body else {}


class RetryPolicy(NamedTuple):
    """Backoff doubles from `first_delay` up to `max_delay`, with jitter, for at most `budget` seconds."""

    budget: float = 120.0
    first_delay: float = 0.2
    max_delay: float = 10.0


class Transport:
    def __init__(self, url: str, api_key: Optional[str], timeout: float = 600.0, retry: RetryPolicy = RetryPolicy()):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"server URL must be http(s)://host[:port], got {url!r}")
        self.url = url.rstrip("/")
        self._base_path = parts.path.rstrip("/")
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname, parts.port
        self.api_key = api_key
        self.timeout = timeout
        self.retry = retry
        self._local = threading.local()

    def request(
        self,
        method: str,
        path: str,
        body: Body = None,
        *,
        content_type: Optional[str] = None,
        accept: str = "application/json",
        headers: Optional[Mapping[str, str]] = None,
        read_body: Optional[BodyReader] = None,
        idempotent: bool = True,
        on_retry=None,
        budget: Optional[float] = None,
    ) -> Response:
        """
        The first successful answer; ApiError for an answer not retried, ServerUnavailable when out of budget.
        With `read_body`, a 2xx answer's body goes to it (the Response's body is then empty).
        """
        headers = {"Accept": accept, "User-Agent": f"creditlab-python/{__version__}", **(headers or {})}
        if content_type:
            headers["Content-Type"] = content_type
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        deadline = time.monotonic() + (self.retry.budget if budget is None else budget)
        for attempt in itertools.count():
            payload = body() if callable(body) else body
            try:
                res = self._send(method, self._base_path + path, payload, headers, read_body)
            except (OSError, http.client.HTTPException) as e:
                self._drop_connection()
                refused = isinstance(e, ConnectionRefusedError)
                delay = self._delay(attempt)
                if not (idempotent or refused) or time.monotonic() + delay > deadline:
                    raise ServerUnavailable(
                        f"cannot reach Creditlab at {self.url} ({method} {path}): {e!r}; "
                        f"gave up after {attempt + 1} attempts"
                    ) from e
            else:
                if res.status < 400:
                    return res
                retryable = _retryable(res)
                delay = self._delay(attempt, res.headers.get("retry-after"))
                if not retryable or not idempotent or time.monotonic() + delay > deadline:
                    raise ApiError(res.status, _json_body(res.body), method, path)
            if on_retry:
                on_retry()
            time.sleep(delay)
        raise AssertionError("itertools.count() does not end")

    def _send(self, method: str, path: str, body, headers: dict, read_body: Optional[BodyReader]) -> Response:
        try:
            return self._exchange(self._connection(), method, path, body, headers, read_body)
        except BaseException:
            # Cut off in the middle of a request or an answer (a network error, a checkpoint file that could
            # not be read, Ctrl-C): the connection is in no state to carry another request.
            self._drop_connection()
            raise

    def _exchange(self, conn, method: str, path: str, body, headers: dict, read_body: Optional[BodyReader]) -> Response:
        try:
            conn.request(method, path, body=body, headers=headers)
        except (BrokenPipeError, ConnectionResetError) as e:
            # A server that refuses a request (403, 409, 413, ...) may answer and close before it has read
            # the whole body: the answer is what the caller needs, not a retry of the same refusal.
            early = self._early_answer(conn)
            if early is None:
                raise e
            return early
        res = conn.getresponse()
        if read_body is not None and 200 <= res.status < 300:
            read_body(res)
            data = b""
        else:
            data = res.read()
        if res.getheader("connection", "").lower() == "close":
            self._drop_connection()
        return Response(res.status, {k.lower(): v for k, v in res.getheaders()}, data)

    def _early_answer(self, conn: http.client.HTTPConnection) -> Optional[Response]:
        try:
            res = conn.getresponse()
            data = res.read()
        except (OSError, http.client.HTTPException):
            return None
        finally:
            self._drop_connection()
        return Response(res.status, {k.lower(): v for k, v in res.getheaders()}, data)

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and conn.sock is not None and _closed_by_peer(conn.sock):
            # The server closed this idle keep-alive connection: a request sent on it would fail (and a
            # mutation would not be retried), so open a new one instead.
            self._drop_connection()
            conn = None
        if conn is None:
            cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            conn = cls(self._host, self._port, timeout=self.timeout)
            self._local.conn = conn
        return conn

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _delay(self, attempt: int, retry_after: Optional[str] = None) -> float:
        try:
            if retry_after is not None and float(retry_after) > 0:
                return float(retry_after)
        except ValueError:
            pass
        base = min(self.retry.max_delay, self.retry.first_delay * 2**attempt)
        return base * (0.5 + random.random() / 2)


def _closed_by_peer(sock) -> bool:
    """Whether an idle connection's socket has something to read: on a connection with no request in
    flight that can only be the peer's close (or garbage), so it must not be reused."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _retryable(res: Response) -> bool:
    """429 and 5xx, but not a statement the server stopped at its time limit (STATEMENT_TIMEOUT): the same
    request would hold a database connection as long again, and retries of heavy reads pile up on a server
    that is already loaded."""
    if res.status == 429:
        return True
    return res.status >= 500 and _json_body(res.body).get("error") != "STATEMENT_TIMEOUT"


def _json_body(body: bytes) -> dict:
    try:
        parsed = json.loads(body) if body else {}
        return parsed if isinstance(parsed, dict) else {"message": parsed}
    except ValueError:
        return {"message": body.decode("utf-8", "replace")[:500]}
