"""Uploading a spool: create the run if it was never created, then its unsent events, in order."""

from __future__ import annotations

import json
from typing import List, NamedTuple, Optional

from .columnar import older_server_advice
from .errors import ApiError
from .spool import Spool
from .transport import Transport


class SyncResult(NamedTuple):
    run_id: str
    events: int
    accepted: int
    duplicates: int


def upload(
    spool: Spool, transport: Transport, max_request_bytes: int, on_retry=None, budget: Optional[float] = None
) -> SyncResult:
    """Everything the spool holds beyond `sent`; raises ServerUnavailable or ApiError, keeping `sent` where it got."""
    with spool.lock():
        meta = spool.meta()
        if not meta.get("created"):
            res = transport.request(
                "POST", "/v1/runs", json.dumps(meta["run"]).encode(), content_type="application/json", budget=budget
            )
            meta["created"] = True
            server_id = res.json().get("id")
            if server_id and server_id != meta["runId"]:
                meta["serverId"] = server_id  # a server that assigns ids itself (before client-chosen ids)
            spool.write_meta(meta)
        run_id = meta.get("serverId") or meta["runId"]
        events = accepted = duplicates = 0
        for batch, end in spool.pending(max_request_bytes):
            res = post_events(transport, run_id, batch, on_retry=on_retry, budget=budget)
            spool.mark_sent(end)
            events += len(batch)
            accepted += res.get("accepted", 0)
            duplicates += res.get("duplicates", 0)
        return SyncResult(run_id, events, accepted, duplicates)


def post_events(
    transport: Transport, run_id: str, lines: List[bytes], on_retry=None, budget: Optional[float] = None
) -> dict:
    """One request of NDJSON `lines` to a run's events (the sender's and sync's): the server's answer. A refusal
    an older server gives columns it cannot read comes with advice (columnar.older_server_advice)."""
    try:
        return transport.request(
            "POST",
            f"/v1/runs/{run_id}/events",
            b"".join(lines),
            content_type="application/x-ndjson",
            on_retry=on_retry,
            budget=budget,
        ).json()
    except ApiError as e:
        raise older_server_advice(e, lines) from None


def pending_bytes(spool: Spool) -> int:
    return spool.size() - spool.sent()


def describe(result: SyncResult, folder: Optional[str] = None) -> str:
    where = f" from {folder}" if folder else ""
    return (
        f"run {result.run_id}: {result.events} events uploaded{where} "
        f"({result.accepted} stored, {result.duplicates} already there)"
    )
