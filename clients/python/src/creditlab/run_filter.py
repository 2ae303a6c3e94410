"""`Client.runs(**filter)` keyword arguments as the server's RunFilter."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Dict

from .errors import InvalidInput

# Python keyword → GraphQL field; statuses are the wire names (completed), the schema's enum is COMPLETED.
_FIELDS = {
    "project": "project",
    "env": "env",
    "method": "method",
    "methods": "methods",
    "status": "status",
    "tags": "tags",
    "name_contains": "nameContains",
    "created_after": "createdAfter",
    "created_before": "createdBefore",
    "parent_run_id": "parentRunId",
}


def run_filter(filter: Dict[str, Any]) -> Dict[str, Any]:
    """The RunFilter for these keywords; an unknown keyword is refused, naming the known ones."""
    out: Dict[str, Any] = {}
    for key, value in filter.items():
        if key not in _FIELDS:
            raise InvalidInput(f"runs: unknown filter {key!r}; known: {', '.join(_FIELDS)}")
        if value is None:
            continue
        if key == "status":
            value = [s.upper() for s in ([value] if isinstance(value, str) else value)]
        elif key in ("methods", "tags"):
            value = [value] if isinstance(value, str) else list(value)
        elif isinstance(value, datetime):
            value = value.isoformat() if value.tzinfo else value.isoformat() + "Z"
        out[_FIELDS[key]] = value
    return out
