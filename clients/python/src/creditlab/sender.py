"""
The background sender of one run: a queue bounded in bytes, and a thread that drains it into NDJSON
requests under the size limit, in the order the events were logged.

`submit` returns as soon as the lines are queued (and, for a durable run, written to its spool); it blocks
only while the queue is full. When the server cannot be reached for the whole retry budget, the sender
spools what it holds and everything after it, tries the spool again every `resync_interval` seconds, and
goes back to sending directly once the spool is empty, so events still reach the server in order.
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections import deque
from typing import Callable, List, Optional

from .errors import ApiError, CreditlabError, ServerUnavailable
from .spool import Spool
from .sync import post_events, upload
from .transport import Transport

log = logging.getLogger("creditlab")


class SenderStats:
    """What the sender did so far (read it any time; the sender thread writes it): `events` went up in
    `requests`, of which the server stored `accepted` and had already stored `duplicates`."""

    def __init__(self) -> None:
        self.logged = 0  # events handed to the sender
        self.requests = 0
        self.events = 0
        self.accepted = 0
        self.duplicates = 0
        self.retries = 0
        self.bytes = 0
        self.spooled = 0
        self.last_seq = 0
        self.in_flight = False

    def __repr__(self) -> str:
        return "SenderStats(" + ", ".join(f"{k}={v!r}" for k, v in vars(self).items()) + ")"


class _Item:
    __slots__ = ("lines", "size", "end")

    def __init__(self, lines: List[bytes], end: Optional[int]):
        self.lines = lines
        self.size = sum(len(x) for x in lines)
        self.end = end  # offset in the durable spool after these lines


class _Marker:
    __slots__ = ("done", "spooling")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.spooling = False


_STOP = object()


class Sender:
    def __init__(
        self,
        transport: Transport,
        run_id: str,
        *,
        max_request_bytes: int,
        max_queue_bytes: int,
        durable: Optional[Spool],
        fsync: bool,
        spool_factory: Callable[[], Spool],
        resync_interval: float = 10.0,
        resync_budget: float = 5.0,
    ):
        self.transport = transport
        self.run_id = run_id
        self.max_request_bytes = max_request_bytes
        self.max_queue_bytes = max_queue_bytes
        self.durable = durable
        self.fsync = fsync
        self.spool_factory = spool_factory
        self.resync_interval = resync_interval
        self.resync_budget = resync_budget
        self.stats = SenderStats()
        self.error: Optional[CreditlabError] = None
        self.fallback: Optional[Spool] = None
        self._spooling = False
        self._closed = False
        self._reported = False
        self._synced_to = 0
        self._queue: deque = deque()
        self._queued_bytes = 0
        self._cond = threading.Condition()
        self._submit_lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name=f"creditlab-sender-{run_id[:8]}", daemon=True)
        self._thread.start()

    # ---- caller side ----

    def submit(self, lines: List[bytes]) -> None:
        self.raise_error()
        if self._closed:
            raise CreditlabError(f"run {self.run_id}: its sender is closed")
        with self._submit_lock:  # the spool's order is the queue's order
            end = self.durable.append(lines, self.fsync) if self.durable else None
            self._put(_Item(lines, end))
            self.stats.logged += len(lines)

    def flush(self, timeout: Optional[float] = None, require_sent: bool = False) -> None:
        """Waits until everything submitted so far is stored by the server, or spooled."""
        if self._closed:
            self.raise_error()
            return
        marker = _Marker()
        self._put(marker)
        if not marker.done.wait(timeout):
            raise TimeoutError(f"events of run {self.run_id} not sent within {timeout} s")
        self.raise_error()
        if require_sent and marker.spooling:
            raise ServerUnavailable(
                f"cannot reach Creditlab at {self.transport.url}: events of run {self.run_id} are waiting in "
                f"{self.spool_folder()} (they go up when the server is back, or with `creditlab sync`)"
            )

    def close(self, timeout: Optional[float] = None) -> None:
        if self._closed:
            return
        seen = self._reported  # an error the caller was already given is not raised again
        try:
            self.flush(timeout)
        except CreditlabError:
            if not seen:
                raise
        finally:
            self._closed = True
            self._put(_STOP)
            self._thread.join(timeout)
            if self.durable:
                self.durable.close()
                if not self._spooling and self.error is None and self.durable.sent() == self.durable.size():
                    shutil.rmtree(self.durable.folder, ignore_errors=True)  # all acknowledged: nothing to keep
            if self.fallback:
                self.fallback.close()

    @property
    def spooling(self) -> bool:
        return self._spooling

    def spool_folder(self) -> Optional[str]:
        spool = self.durable or self.fallback
        return str(spool.folder) if spool else None

    def raise_error(self) -> None:
        if self.error is not None:
            self._reported = True
            raise self.error

    def _put(self, item) -> None:
        size = item.size if isinstance(item, _Item) else 0
        with self._cond:
            while self._queued_bytes and self._queued_bytes + size > self.max_queue_bytes:
                self._cond.wait()
            self._queue.append(item)
            self._queued_bytes += size
            self._cond.notify_all()

    # ---- sender thread ----

    def _take(self, timeout: Optional[float]):
        with self._cond:
            if not self._queue and not self._cond.wait_for(lambda: self._queue, timeout):
                return None
            first = self._queue.popleft()
            batch = [first]
            if isinstance(first, _Item):
                size = first.size
                while self._queue and isinstance(self._queue[0], _Item):
                    if size + self._queue[0].size > self.max_request_bytes:
                        break
                    nxt = self._queue.popleft()
                    batch.append(nxt)
                    size += nxt.size
            self._queued_bytes -= sum(i.size for i in batch if isinstance(i, _Item))
            self._cond.notify_all()
            return batch

    def _loop(self) -> None:
        while True:
            batch = self._take(self.resync_interval if self._spooling else None)
            if batch is None:
                self._resync()
                continue
            head = batch[0]
            if head is _STOP:
                return
            if isinstance(head, _Marker):
                if self._spooling:
                    self._resync()
                head.spooling = self._spooling
                head.done.set()
                continue
            try:
                self._deliver(batch)
            except Exception as e:  # never let the thread die silently
                self.error = e if isinstance(e, CreditlabError) else CreditlabError(f"sender failed: {e!r}")
                log.error("creditlab: %s", self.error)

    def _deliver(self, items: List[_Item]) -> None:
        if self.durable:
            items = [i for i in items if i.end is None or i.end > self._synced_to]
        if self.error is not None or not items:
            return
        if self._spooling:
            self._to_spool([x for i in items for x in i.lines])
            return
        lines = [x for i in items for x in i.lines]
        start = 0
        while start < len(lines):
            end, size = start, 0
            while end < len(lines) and (end == start or size + len(lines[end]) <= self.max_request_bytes):
                size += len(lines[end])
                end += 1
            try:
                self._post(lines[start:end], size)
            except ServerUnavailable as e:
                log.warning("creditlab: %s; spooling events of run %s until it is back", e, self.run_id)
                self._spooling = True
                self._to_spool(lines[start:])
                return
            except ApiError as e:
                self.error = e
                log.error("creditlab: events of run %s refused: %s", self.run_id, e)
                return
            start = end
        if self.durable and items[-1].end is not None:
            self.durable.mark_sent(items[-1].end)

    def _post(self, lines: List[bytes], size: int) -> None:
        self.stats.in_flight = True
        try:
            res = post_events(self.transport, self.run_id, lines, on_retry=self._count_retry)
        finally:
            self.stats.in_flight = False
        s = self.stats
        s.requests += 1
        s.events += len(lines)
        s.bytes += size
        s.accepted += res.get("accepted", 0)
        s.duplicates += res.get("duplicates", 0)
        s.last_seq = res.get("lastSeq", s.last_seq)

    def _count_retry(self) -> None:
        self.stats.retries += 1

    def _to_spool(self, lines: List[bytes]) -> None:
        if self.durable:
            return  # already there: written before log_* returned
        if self.fallback is None:
            self.fallback = self.spool_factory()
        self.fallback.append(lines, fsync=True)
        self.stats.spooled += len(lines)

    def _resync(self) -> None:
        spool = self.durable or self.fallback
        if spool is None:
            self._spooling = False
            return
        try:
            result = upload(spool, self.transport, self.max_request_bytes, self._count_retry, budget=self.resync_budget)
        except ServerUnavailable:
            return
        except ApiError as e:
            self.error = e
            return
        self.stats.requests += 1 if result.events else 0
        self.stats.events += result.events
        self.stats.accepted += result.accepted
        self.stats.duplicates += result.duplicates
        self._synced_to = spool.sent()
        self._spooling = False
        log.warning("creditlab: server back; %d spooled events of run %s uploaded", result.events, self.run_id)
        if spool is self.fallback:
            self.fallback.close()
            shutil.rmtree(self.fallback.folder, ignore_errors=True)
            self.fallback = None


class OfflineSink:
    """Where an offline run's events go: straight into its spool, for `creditlab sync` to upload later."""

    spooling = True

    def __init__(self, spool: Spool, run_id: str, fsync: bool):
        self.spool = spool
        self.run_id = run_id
        self.fsync = fsync
        self.stats = SenderStats()
        self.error = None

    def submit(self, lines: List[bytes]) -> None:
        self.spool.append(lines, self.fsync)
        self.stats.logged += len(lines)
        self.stats.spooled += len(lines)

    def flush(self, timeout: Optional[float] = None, require_sent: bool = False) -> None:
        if require_sent:
            raise CreditlabError(
                f"run {self.run_id} is offline: its events are in {self.spool.folder}; "
                f"upload them with `creditlab sync {self.spool.folder}` first"
            )

    def close(self, timeout: Optional[float] = None) -> None:
        self.spool.close()

    def spool_folder(self) -> str:
        return str(self.spool.folder)

    def raise_error(self) -> None:
        pass
