"""The client's exceptions: one base class, and one subclass per kind of failure a caller handles."""

from __future__ import annotations

from typing import Any, Optional


class CreditlabError(Exception):
    """Anything the client raises on purpose."""


class InvalidInput(CreditlabError, ValueError):
    """Input refused before anything was sent; the message names the field and where it is."""


class ServerUnavailable(CreditlabError):
    """The server could not be reached (or kept failing) for the whole retry budget."""


class ApiError(CreditlabError):
    """An answer the server gave on purpose (4xx, or 5xx after the retries): its status and JSON body."""

    def __init__(self, status: int, body: dict, method: str = "", path: str = "", advice: Optional[str] = None):
        self.status = status
        self.body = body
        self.error: Optional[str] = body.get("error") if isinstance(body, dict) else None
        self.line: Optional[int] = body.get("line") if isinstance(body, dict) else None
        self.path: Optional[str] = body.get("path") if isinstance(body, dict) else None
        self.reason: Optional[str] = body.get("reason") if isinstance(body, dict) else None
        # What the client adds to the server's message when it can tell more (columnar.older_server_advice).
        self.advice = advice
        self._request = (method, path)
        message = body.get("message") if isinstance(body, dict) else None
        where = f" ({method} {path.split('?')[0]})" if method else ""
        told = f"; {advice}" if advice else ""
        super().__init__(f"{status} {self.error or ''}: {message or body}{told}{where}".replace("  ", " "))

    def with_advice(self, advice: str) -> "ApiError":
        """The same answer, with the client's advice after the server's message."""
        return type(self)(self.status, self.body, *self._request, advice=advice)


class ChecksumMismatch(CreditlabError):
    """A checkpoint's bytes whose SHA-256 is not the one the server recorded for them (downloaded, or uploaded)."""

    def __init__(self, run_id: str, iteration: int, expected: str, actual: str, what: str):
        self.run_id = run_id
        self.iteration = iteration
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"checkpoint {iteration} of run {run_id}: the {what} bytes' SHA-256 is {actual}, "
            f"the server recorded {expected}"
        )


class GraphQLError(CreditlabError):
    """GraphQL errors of an answer; `codes` are their `extensions.code` (NOT_FOUND, BAD_USER_INPUT, ...)."""

    def __init__(self, errors: list[dict[str, Any]]):
        self.errors = errors
        self.codes = [(e.get("extensions") or {}).get("code", "UNKNOWN") for e in errors]
        super().__init__("; ".join(str(e.get("message")) for e in errors))
