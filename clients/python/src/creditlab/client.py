"""The entry point: a connection to one Creditlab server, which creates and opens runs and reads results."""

from __future__ import annotations

import atexit
import json
import logging
import os
import sys
import threading
import weakref
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union
from urllib.parse import urlencode

from . import checkpoints as ck
from . import events as ev
from .advantages import from_document
from .checkpoints import Checkpoint, CheckpointDownload
from .comparison import Comparison, method_inputs
from .credentials import resolve_connection
from .errors import ApiError, CreditlabError, GraphQLError, InvalidInput, ServerUnavailable
from .run import Run
from .run_filter import run_filter
from .sender import OfflineSink, Sender
from .spool import Spool, default_root
from .tables import csv_table, table
from .transport import RetryPolicy, Transport

log = logging.getLogger("creditlab")
MiB = 1 << 20
_open_clients: "weakref.WeakSet[Client]" = weakref.WeakSet()


# The exception that ends the program, if one does: the runs it leaves open are finished as failed.
_uncaught: Optional[BaseException] = None
_previous_excepthook = sys.excepthook


def _remember_uncaught(kind, error, tb) -> None:
    global _uncaught
    _uncaught = error
    _previous_excepthook(kind, error, tb)


sys.excepthook = _remember_uncaught


@atexit.register
def _close_all() -> None:
    """
    At exit, as W&B and MLflow do, every run this program created (`create_run`) and left open is finished:
    completed, or failed with the exception that ended the program (aborted on Ctrl-C); then every client
    flushes (what cannot reach the server stays spooled). A run meant to go on in another process is reopened
    there with `run.resume()`. Runs opened with `client.run(id)` are left as they are: they may be another
    program's.
    """
    for client in list(_open_clients):
        client._finish_open_runs(_uncaught)
        client.close()


class Client:
    """
    A connection to one server: `url` and `api_key` explicit, else CREDITLAB_URL / CREDITLAB_API_KEY, else
    the credentials file the server wrote on its first start (its key only for the URL saved with it).

    mode: "online" sends events from a background thread and spools them to `spool_dir` only while the
      server cannot be reached; "offline" never contacts the server: runs live in `spool_dir` until
      `creditlab sync` uploads them.
    durable: write every event to the spool before `log_*` returns (always so offline), so that even a
      crash of this process loses nothing: a later `creditlab sync` uploads what the server lacks. Without
      it, events still in the in-memory queue when the process dies are lost.
    compact_floats: send embeddings and token log-probs as base64 little-endian float32 (3–5× smaller than
      JSON numbers; the server stores float32 anyway). Turn off for a server older than that encoding.
    columnar_steps: send `log_rollouts` batches with their steps as columns (docs/events.md, "Columnar steps"),
      the default: fewer bytes, and about half the server's CPU per step of one object per step (without
      embeddings; a quarter less with 256-d ones). Turn off (or CREDITLAB_COLUMNAR_STEPS=0) for a server
      older than that form, which refuses it (only "0" turns it off, as for CREDITLAB_COMPACT_FLOATS); off
      unless set when `compact_floats` is off. Step fields beyond rollout-batch/v1 go in the `extra` column,
      which servers before 2026-12-05 refuse: turn columns off for them if your steps have such fields.
    max_event_bytes / max_request_bytes: the largest NDJSON line and request the client sends; keep them
      under the server's CREDITLAB_MAX_LINE_BYTES / CREDITLAB_MAX_REQUEST_BYTES.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        mode: str = "online",
        spool_dir: Optional[str] = None,
        durable: bool = False,
        fsync: bool = False,
        compact_floats: Optional[bool] = None,
        columnar_steps: Optional[bool] = None,
        max_event_bytes: int = 8 * MiB,
        max_request_bytes: int = 32 * MiB,
        max_queue_bytes: int = 512 * MiB,
        timeout: float = 600.0,
        retry: RetryPolicy = RetryPolicy(),
        resync_interval: float = 10.0,
    ):
        if mode not in ("online", "offline"):
            raise InvalidInput(f'mode: must be "online" or "offline", got {mode!r}')
        conn = resolve_connection(url, api_key)
        self.url = conn.url
        self.transport = Transport(conn.url, conn.api_key, timeout=timeout, retry=retry)
        self.mode = mode
        self.spool_dir = Path(spool_dir) if spool_dir else default_root()
        self.durable = durable or mode == "offline"
        self.fsync = fsync
        if compact_floats is None:
            compact_floats = os.environ.get("CREDITLAB_COMPACT_FLOATS", "1") != "0"
        self.compact_floats = compact_floats
        if columnar_steps is None:
            # A server that takes no base64 vectors is older than the columns too.
            columnar_steps = os.environ.get("CREDITLAB_COLUMNAR_STEPS", "1" if compact_floats else "0") != "0"
        self.columnar_steps = columnar_steps
        self.max_event_bytes = max_event_bytes
        self.max_request_bytes = max(max_request_bytes, max_event_bytes)
        self.max_queue_bytes = max_queue_bytes
        self.resync_interval = resync_interval
        self._runs: "weakref.WeakSet[Run]" = weakref.WeakSet()
        self._lock = threading.Lock()
        _open_clients.add(self)

    def __repr__(self) -> str:
        return f"Client(url={self.url!r}, mode={self.mode!r})"

    # ---- runs ----

    def create_run(
        self,
        name: str,
        env: str,
        method: str,
        params: Optional[Mapping[str, Any]] = None,
        config: Optional[Mapping[str, Any]] = None,
        tags: Optional[Sequence[str]] = None,
        project: Optional[str] = None,
        seed: Optional[int] = None,
        id: Optional[str] = None,
        parent_run_id: Optional[str] = None,
        fork_iteration: Optional[int] = None,
    ) -> Run:
        """
        Creates a run (or, with the `id` of an existing run and the same arguments, opens it again: creation
        is idempotent, so a retried or repeated call never makes two runs).
        """
        body: Dict[str, Any] = {"id": id or ev.new_id(), "name": name, "env": env, "method": method}
        for k, v in (
            ("params", params),
            ("config", config),
            ("tags", list(tags) if tags is not None else None),
            ("project", project),
            ("seed", seed),
            ("parentRunId", parent_run_id),
            ("forkIteration", fork_iteration),
        ):
            if v is not None:
                body[k] = dict(v) if isinstance(v, Mapping) else v
        for k in ("params", "config"):
            ev.finite_json(body.get(k), k)  # else the server's "not valid JSON" would not say where
        payload = json.dumps(body, default=ev.json_default).encode()
        if self.mode == "offline":
            Spool.create(self.spool_dir, body["id"], body, created=False, url=self.url)
            return self._open(body["id"], name, body, own=True)
        res = self.transport.request("POST", "/v1/runs", payload, content_type="application/json")
        run_id = res.json()["id"]
        return self._open(run_id, name, {**body, "id": run_id}, own=True)

    def run(self, run_id: str) -> Run:
        """An existing run, to log more to it or read its advantages (not finished at exit: it is another's)."""
        found = self.graphql("query($id: ID!) { run(id: $id) { id name env method status } }", {"id": run_id})["run"]
        if found is None:
            raise InvalidInput(f"run {run_id}: not found (or in another project)")
        return self._open(found["id"], found["name"], {"id": found["id"], "name": found["name"]})

    def _open(self, run_id: str, name: str, body: Mapping[str, Any], own: bool = False) -> Run:
        run = Run(self, run_id, name, self._new_sink(run_id, body), self._encoder())
        run._finish_at_exit = own
        return self._track(run)

    def _new_sink(self, run_id: str, body: Mapping[str, Any]):
        """Where a run's events go: its spool (offline), or a background sender (online)."""
        if self.mode == "offline":
            spool = Spool.create(self.spool_dir, run_id, dict(body), created=False, url=self.url)
            return OfflineSink(spool, run_id, self.fsync)
        durable = Spool.create(self.spool_dir, run_id, dict(body), True, self.url) if self.durable else None
        return Sender(
            self.transport,
            run_id,
            max_request_bytes=self.max_request_bytes,
            max_queue_bytes=self.max_queue_bytes,
            durable=durable,
            fsync=self.fsync,
            spool_factory=lambda: Spool.create(self.spool_dir, run_id, dict(body), True, self.url),
            resync_interval=self.resync_interval,
        )

    def _encoder(self) -> ev.StepEncoder:
        return ev.StepEncoder(self.compact_floats)

    def _track(self, run: Run) -> Run:
        with self._lock:
            self._runs.add(run)
        return run

    def _forget(self, run: Run) -> None:
        with self._lock:
            self._runs.discard(run)

    def _finish_open_runs(self, error: Optional[BaseException]) -> None:
        with self._lock:
            runs = [run for run in self._runs if run._finish_at_exit and not run.finished]
        for run in runs:
            try:
                run._finish_on_exit(error)
            except Exception as e:  # the program is ending: say what could not be recorded, and go on
                log.error("creditlab: could not finish run %s at exit: %s", run.id, e)

    def close(self, timeout: Optional[float] = 60.0) -> None:
        """Flushes the runs still open (at exit too): what cannot reach the server stays in the spool."""
        with self._lock:
            runs = list(self._runs)
        for run in runs:
            self._forget(run)
            try:
                run._sink.close(timeout)
            except Exception as e:
                log.error("creditlab: run %s: %s (spool: %s)", run.id, e, run.spool_folder)

    # ---- reading ----

    def advantages(self, run_id: str, iteration: int, method: str, params: Optional[Mapping[str, Any]] = None):
        """Read-only: `(values, index)` of a stored run's iteration under a method; records nothing."""
        query = urlencode({"method": method, "params": json.dumps(dict(params or {})), "diagnostics": "false"})
        res = self.transport.request("GET", f"/v1/runs/{run_id}/iterations/{ev.iteration(iteration)}/advantages?{query}")
        return from_document(res.json())

    def compare(self, run_id: str, methods: Iterable[Any], iterations: Optional[Iterable[int]] = None) -> Comparison:
        """Several methods on the same stored rollouts: summaries, pairwise agreement, per-step rows."""
        return Comparison.fetch(self, run_id, method_inputs(methods), None if iterations is None else list(iterations))

    def runs(self, limit: int = 100, sort: str = "created_desc", sort_metric: Optional[str] = None, **filter: Any):
        """
        Runs this key sees (at most `limit`, every page walked), newest first unless `sort` says
        created_asc, name_asc or last_iteration_desc, or metric_desc / metric_asc with `sort_metric`:
        by the last value each run logged of that metric (e.g. "successRate", or "evaluation.successRate"
        for held-out success), runs that never logged it last. Filters: project, env, method, methods
        (any of), status (one or a list: running, completed, failed, aborted), tags (all of),
        name_contains, created_after, created_before (datetime or ISO text), parent_run_id.
        """
        by_metric = sort.lower() in ("metric_desc", "metric_asc")
        if by_metric != (sort_metric is not None):
            raise InvalidInput(
                f"sort_metric: goes with sort='metric_desc' or 'metric_asc', not {sort!r}" if sort_metric is not None
                else f"sort_metric: sort={sort!r} needs the metric to sort by, e.g. sort_metric='successRate'"
            )
        # sortMetric only when asked for, so that other sorts still work with servers older than it.
        metric_arg = (", $sortMetric: String", ", sortMetric: $sortMetric") if by_metric else ("", "")
        query = f"""query($first: Int, $after: String, $filter: RunFilter, $sort: RunSort!{metric_arg[0]}) {{
            runs(first: $first, after: $after, filter: $filter, sort: $sort{metric_arg[1]}) {{ nodes {{
            id name project env method status tags seed lastIteration lastSeq createdAt finishedAt parentRunId
            lastTrainingSuccess lastEvaluationSuccess }} pageInfo {{ hasNextPage endCursor }} }} }}"""
        variables = {"filter": run_filter(filter) or None, "sort": sort.upper(),
                     **({"sortMetric": sort_metric} if by_metric else {})}
        nodes: List[Dict[str, Any]] = []
        after = None
        while len(nodes) < limit:
            page = self.graphql(query, {**variables, "first": min(100, limit - len(nodes)), "after": after})["runs"]
            nodes.extend({**n, "status": n["status"].lower()} for n in page["nodes"])
            if not page["pageInfo"]["hasNextPage"]:
                break
            after = page["pageInfo"]["endCursor"]
        return table(nodes)

    def export(self, run_id: str, iterations: Optional[Iterable[int]] = None, methods: Any = None, path: Optional[str] = None):
        """
        A run's steps with the advantages of `methods`, as the server's CSV export: written to `path` (returned)
        when given, else a DataFrame (pandas) or a list of dicts.
        """
        query: Dict[str, str] = {"format": "csv"}
        if iterations is not None:
            query["iterations"] = ",".join(str(ev.iteration(i)) for i in iterations)
        if methods is not None:
            query["methods"] = json.dumps(method_inputs(methods))
        res = self.transport.request("GET", f"/v1/runs/{run_id}/export?{urlencode(query)}", accept="text/csv")
        if path is not None:
            Path(path).write_bytes(res.body)
            return Path(path)
        return csv_table(res.body)

    # ---- checkpoints ----

    def upload_checkpoint(
        self, run_id: str, iteration: int, source: ck.Source, format: str = "application/octet-stream"
    ) -> Checkpoint:
        """
        Stores checkpoint `iteration` of a run: `source` is a path, bytes, or a binary file object (read from where
        it is), streamed a chunk at a time. The same bytes again are acknowledged (so a failed upload is retried,
        if its source can be read again: not a file object that cannot seek); other bytes for the same iteration
        are refused (ApiError 409). The server records a `checkpoint.saved` event; a finished run takes none.
        """
        it = ev.iteration(iteration)
        headers = {"X-Creditlab-Checkpoint-Format": ck.checkpoint_format(format)}
        with ck.UploadSource(source) as body:
            if body.size is not None:
                headers["Content-Length"] = str(body.size)
            res = self.transport.request(
                "PUT",
                ck.checkpoint_path(run_id, it),
                body,
                content_type="application/octet-stream",
                headers=headers,
                idempotent=body.rereadable,
            )
        stored = Checkpoint.from_json(res.json())
        ck.check_sha256(run_id, it, stored.sha256, body.sha256, "uploaded")
        return stored

    def checkpoints(self, run_id: str) -> List[Checkpoint]:
        """A run's stored checkpoints, by iteration."""
        res = self.transport.request("GET", f"/v1/runs/{run_id}/checkpoints")
        return [Checkpoint.from_json(doc) for doc in res.json()]

    def checkpoint_url(self, run_id: str, iteration: int) -> Dict[str, Any]:
        """
        The server's description of a checkpoint (as JSON: iteration, format, sha256, bytes, ...) plus `url`, a
        presigned URL its bytes may be downloaded from without a key until `expiresAt`, or None when the server
        keeps them in its database. ApiError 404 from a server older than this route.
        """
        return self.transport.request("GET", f"{ck.checkpoint_path(run_id, ev.iteration(iteration))}/url").json()

    def download_checkpoint(
        self,
        run_id: str,
        iteration: int,
        dest: Optional[Union[str, "os.PathLike[str]"]] = None,
        via_server: bool = False,
    ) -> CheckpointDownload:
        """
        Checkpoint `iteration` of a run, its SHA-256 checked (ChecksumMismatch if it is not the one recorded): its
        bytes in `.data`, or written to `dest` (a file path; `.file`), which gets them only once they are checked.
        Straight from the server's bucket when it keeps them in one (a presigned URL), so that many trainers
        fetching a large checkpoint do not all go through the server; through the server if that fails (a bucket
        this machine cannot reach, say: logged as a warning), or always with `via_server=True`.
        """
        it = ev.iteration(iteration)
        target = None if dest is None else ck.destination(dest)
        described = None if via_server else self._checkpoint_location(run_id, it)
        with ck.DownloadSink(target) as sink:
            fetched = described is not None and described.get("url") and self._fetch_from_bucket(run_id, it, described, sink)
            if fetched:
                info = Checkpoint.from_json(described)
                sha256, fmt = info.sha256, info.format
            else:
                sha256, fmt = self._fetch_from_server(run_id, it, sink, described)
            got = sink.finish(run_id, it, sha256, "downloaded")
        data, file = (got, None) if target is None else (None, got)
        return CheckpointDownload(it, fmt, sha256, sink.size, data, file, bool(fetched))

    def _fetch_from_bucket(self, run_id: str, iteration: int, described: Mapping[str, Any], sink) -> bool:
        """The bytes from the presigned URL into `sink`; False, with a warning, when the bucket does not give them."""
        try:
            ck.fetch_presigned(described["url"], sink.read_from, self.transport.timeout, described.get("expiresAt"))
            return True
        except (ApiError, ServerUnavailable) as e:
            log.warning("checkpoint %s of run %s: %s; downloading it through the server", iteration, run_id, e)
            return False

    def _fetch_from_server(self, run_id: str, iteration: int, sink, described: Optional[Mapping[str, Any]]):
        """The bytes from the server's own download into `sink`: (sha256, format) as the server gives them."""
        res = self.transport.request(
            "GET", ck.checkpoint_path(run_id, iteration), accept="application/octet-stream", read_body=sink.read_from
        )
        sha256 = res.headers.get("x-creditlab-sha256") or (described or {}).get("sha256")
        fmt = res.headers.get("x-creditlab-checkpoint-format") or (described or {}).get("format", "")
        if not sha256:
            raise CreditlabError(f"checkpoint {iteration} of run {run_id}: the server's answer has no SHA-256 to check")
        return sha256, fmt

    def _checkpoint_location(self, run_id: str, iteration: int) -> Optional[Dict[str, Any]]:
        """
        `checkpoint_url`'s answer; None for any 404 (a server older than the route, or no such run or
        checkpoint), whose download then says what is missing, as the TypeScript client does.
        """
        try:
            return self.checkpoint_url(run_id, iteration)
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def graphql(self, query: str, variables: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """One GraphQL operation; errors raise GraphQLError. Queries are retried, mutations are not."""
        mutation = query.lstrip().startswith("mutation")
        try:
            res = self.transport.request(
                "POST",
                "/graphql",
                json.dumps({"query": query, "variables": dict(variables or {})}, default=ev.json_default).encode(),
                content_type="application/json",
                idempotent=not mutation,
            ).json()
        except ApiError as e:
            if isinstance(e.body, dict) and e.body.get("errors"):
                raise GraphQLError(e.body["errors"]) from None
            raise
        if res.get("errors"):
            raise GraphQLError(res["errors"])
        return res["data"]
