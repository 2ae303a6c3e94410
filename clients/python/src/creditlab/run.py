"""A run being logged: W&B/MLflow-like calls that turn into events and go to the background sender."""

from __future__ import annotations

import json
import logging
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import events as ev
from .advantages import from_document
from .checkpoints import Checkpoint, CheckpointDownload, Source, checkpoint_format
from .columnar import batch_lines
from .errors import CreditlabError, InvalidInput
from .sender import OfflineSink

log = logging.getLogger("creditlab")
STATUSES = ("completed", "failed", "aborted")


class Run:
    """
    One training run. Every `log_*` call checks its input, turns it into events with their ids, and hands
    them to the sender; it returns without waiting for the network (unless the sender's queue is full).
    Use it as a context manager to finish it as completed, or as failed when the block raises.
    """

    def __init__(self, client, run_id: str, name: str, sink, encoder: ev.StepEncoder):
        self._client = client
        self._sink = sink
        self._encoder = encoder
        self.name = name
        self.finished: Optional[str] = None
        #: Finished when the program ends, if still open (runs it created; see client._close_all).
        self._finish_at_exit = False
        self._next_step: Dict[int, Dict[str, int]] = {}  # iteration → trajectory id → next step index

    @property
    def id(self) -> str:
        return self._sink.run_id

    @property
    def stats(self):
        """The sender's counters: requests, events, accepted, duplicates, retries, bytes, spooled, in_flight."""
        return self._sink.stats

    @property
    def spool_folder(self) -> Optional[str]:
        """Where this run's events wait when the server cannot take them (None while nothing had to wait)."""
        return self._sink.spool_folder()

    def __repr__(self) -> str:
        return f"Run(id={self.id!r}, name={self.name!r})"

    # ---- logging ----

    def log_rollouts(self, iteration: int, groups: Any) -> None:
        """A batch of rollouts: rollout-batch/v1 groups (or the whole document); split into as many events as the size limit needs."""
        it = ev.iteration(iteration)
        lines = batch_lines(it, groups, self._encoder, self._client.max_event_bytes, self._client.columnar_steps)
        counts = self._counts(it)
        for group in groups["groups"] if isinstance(groups, Mapping) else groups:
            for traj in group["trajectories"]:
                tid = ev.key(traj["id"], "trajectory id")
                counts[tid] = counts.get(tid, 0) + len(traj["steps"])
        self._submit(lines)

    def log_steps(
        self,
        iteration: int,
        group_id: Any,
        trajectory_id: Any,
        steps: Sequence[Mapping[str, Any]],
        first_step_index: Optional[int] = None,
        outcome: Optional[str] = None,
    ) -> None:
        """Steps of one trajectory as they happen; the step index continues from what this run logged (or give it)."""
        it = ev.iteration(iteration)
        gid, tid = ev.key(group_id, "group_id"), ev.key(trajectory_id, "trajectory_id")
        ev.outcome(outcome, "outcome")
        counts = self._counts(it)
        first = counts.get(tid, 0) if first_step_index is None else ev.iteration(first_step_index, "first_step_index")
        lines = ev.steps_lines(it, gid, tid, first, steps, self._encoder, self._client.max_event_bytes)
        if outcome:
            lines.append(self._trajectory_finished(it, gid, tid, outcome))
        counts[tid] = first + len(steps)
        self._submit(lines)

    def finish_trajectory(self, iteration: int, group_id: Any, trajectory_id: Any, outcome: str) -> None:
        """Marks a trajectory logged step by step as ended: success, failure or truncated."""
        it = ev.iteration(iteration)
        gid, tid = ev.key(group_id, "group_id"), ev.key(trajectory_id, "trajectory_id")
        if ev.outcome(outcome, "outcome") is None:
            raise InvalidInput("outcome: required (success, failure or truncated)")
        self._submit([self._trajectory_finished(it, gid, tid, outcome)])

    def log(self, metrics: Mapping[str, Any], iteration: int) -> None:
        """Scalar metrics of an iteration (loss, entropy, success rate, ...)."""
        it = ev.iteration(iteration)
        if not isinstance(metrics, Mapping) or not metrics:
            raise InvalidInput("metrics: must be a non-empty mapping of name → number")
        data = {}
        for name, value in metrics.items():
            name = ev.key(name, "metrics: a name")
            data[name] = ev.number(value, f"metrics[{name!r}]")
        self._submit([ev.line("metrics.logged", {"iteration": it, "metrics": data})])

    def log_evaluation(self, iteration: int, success_rate: float, tasks: Optional[Iterable[Mapping[str, Any]]] = None) -> None:
        """A held-out evaluation: its success rate in [0, 1] and, optionally, per task `{task, success, ...}`."""
        it = ev.iteration(iteration)
        rate = ev.number(success_rate, "success_rate")
        if not 0 <= rate <= 1:
            raise InvalidInput(f"success_rate: must be in [0, 1], got {rate}")
        data: Dict[str, Any] = {"iteration": it, "successRate": rate}
        if tasks is not None:
            data["tasks"] = []
            for k, task in enumerate(tasks):
                if not isinstance(task, Mapping) or not isinstance(task.get("task"), str) or not isinstance(task.get("success"), bool):
                    raise InvalidInput(f"tasks[{k}]: must be a mapping with task (string) and success (bool)")
                data["tasks"].append(dict(task))
        self._submit([ev.line("evaluation.logged", data)])

    def log_checkpoint(
        self, iteration: int, uri: str, sha256: Optional[str] = None, size: Optional[int] = None, format: Optional[str] = None
    ) -> None:
        """Where a checkpoint of this run was saved elsewhere (`checkpoint.saved`); `upload_checkpoint` stores its bytes."""
        data: Dict[str, Any] = {"iteration": ev.iteration(iteration), "uri": uri}
        if not isinstance(uri, str) or not uri:
            raise InvalidInput("uri: must be a non-empty string")
        for name, value in (("sha256", sha256), ("bytes", size), ("format", format)):
            if value is not None:
                data[name] = value
        self._submit([ev.line("checkpoint.saved", data)])

    # ---- checkpoints ----

    def upload_checkpoint(self, iteration: int, source: Source, format: str = "application/octet-stream") -> Checkpoint:
        """Stores checkpoint `iteration` of this run from a path, bytes or a binary file (see Client.upload_checkpoint)."""
        # The server records the upload as a `checkpoint.saved` event in this run's stream: everything logged before
        # goes first, so that whoever finds the checkpoint (a fork from it, a reader of the stream) finds the
        # iterations that led to it; and an offline run, not on the server yet, is told so instead of "not found".
        ev.iteration(iteration)  # bad input is refused now, not after waiting for the flush
        checkpoint_format(format)
        self.flush(require_sent=True)
        return self._client.upload_checkpoint(self.id, iteration, source, format)

    def checkpoints(self) -> List[Checkpoint]:
        """This run's stored checkpoints, by iteration."""
        # No flush: events do not make stored checkpoints (only uploads do), so none pending changes the answer.
        return self._client.checkpoints(self.id)

    def download_checkpoint(
        self, iteration: int, dest: Optional[Union[str, "os.PathLike[str]"]] = None, via_server: bool = False
    ) -> CheckpointDownload:
        """Checkpoint `iteration` of this run, checked, as bytes or written to `dest` (see Client.download_checkpoint)."""
        return self._client.download_checkpoint(self.id, iteration, dest, via_server)

    # ---- advantages ----

    def advantages(self, iteration: int, method: str, params: Optional[Mapping[str, Any]] = None, record: bool = True):
        """
        The advantages of `iteration` under `method` (any registered estimator, with any parameters), after
        flushing everything logged before: `(values, index)`, float32 values in canonical step order and the
        `(group id, trajectory id, step index)` of each. `record=True` is the trainer's consumption (it records
        one `advantages.used` event, once however often the request is retried; needs a write key);
        `record=False` reads without recording anything (a read key is enough).
        """
        self.flush(require_sent=True)
        if not record:
            return self._client.advantages(self.id, iteration, method, params)
        body = {"method": method, "params": dict(params or {}), "eventId": ev.new_id()}
        res = self._client.transport.request(
            "POST",
            f"/v1/runs/{self.id}/iterations/{ev.iteration(iteration)}/advantages",
            json.dumps(body).encode(),
            content_type="application/json",
        )
        return from_document(res.json())

    def export(self, iterations: Optional[Iterable[int]] = None, methods: Any = None, path: Optional[str] = None):
        """This run's steps with the advantages of `methods` as CSV (see Client.export)."""
        self.flush(require_sent=True)
        return self._client.export(self.id, iterations=iterations, methods=methods, path=path)

    # ---- lifecycle ----

    def flush(self, timeout: Optional[float] = None, require_sent: bool = False) -> None:
        """Waits until everything logged so far is stored by the server (or spooled, unless `require_sent`)."""
        self._sink.flush(timeout, require_sent)

    def finish(self, status: str = "completed", summary: Optional[Mapping[str, Any]] = None, timeout: Optional[float] = None) -> None:
        """Sends `run.finished` and waits for the sender to drain (events that cannot go up stay spooled)."""
        if status not in STATUSES:
            raise InvalidInput(f"status: must be one of {', '.join(STATUSES)}, got {status!r}")
        if self.finished:
            return
        data: Dict[str, Any] = {"status": status}
        if summary is not None:
            data["summary"] = ev.finite_json(dict(summary), "summary")
        self._submit([ev.line("run.finished", data)])
        self.finished = status
        self._sink.close(timeout)
        self._client._forget(self)
        if isinstance(self._sink, OfflineSink):
            log.info("creditlab: offline run %s is in %s (`creditlab sync` uploads it)", self.id, self.spool_folder)
        elif self._sink.spooling:
            log.warning(
                "creditlab: run %s finished while the server was unreachable; upload it with `creditlab sync %s`",
                self.id,
                self._sink.spool_folder(),
            )

    def resume(self, reason: Optional[str] = None) -> None:
        """Reopens a finished run for more events (`run.resumed`)."""
        if self.finished:
            self._sink = self._client._new_sink(self.id, {"id": self.id, "name": self.name})
            self._client._track(self)
            self.finished = None
        self._submit([ev.line("run.resumed", {} if reason is None else {"reason": reason})])

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, kind, error, tb) -> None:
        if self.finished:
            return
        if kind is None:
            self.finish("completed")
            return
        try:
            self._finish_on_exit(error)
        except Exception as e:  # the block's own exception is the one to see
            log.error("creditlab: could not record how run %s ended: %s", self.id, e)

    def _finish_on_exit(self, error: Optional[BaseException]) -> None:
        """Finished as the block or the program ended: completed, or failed with `error` (aborted on Ctrl-C)."""
        if error is None:
            self.finish("completed")
            return
        status = "aborted" if isinstance(error, KeyboardInterrupt) else "failed"
        self.finish(status, {"error": f"{type(error).__name__}: {error}"[:2000]})

    # ---- internals ----

    def _submit(self, lines) -> None:
        if self.finished:
            raise CreditlabError(f"run {self.id} is finished ({self.finished}); call resume() to log more")
        self._sink.submit(lines)

    def _counts(self, iteration: int) -> Dict[str, int]:
        counts = self._next_step.get(iteration)
        if counts is None:
            for old in [i for i in self._next_step if i < iteration - 1]:
                del self._next_step[old]  # a trainer does not go back; keep memory flat over a long run
            counts = self._next_step[iteration] = {}
        return counts

    @staticmethod
    def _trajectory_finished(it: int, gid: str, tid: str, outcome: str) -> bytes:
        return ev.line("trajectory.finished", {"iteration": it, "groupId": gid, "trajectoryId": tid, "outcome": outcome})
