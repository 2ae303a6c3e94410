"""
`log_rollouts` with columnar_steps=True sends the steps as columns (docs/events.md, "Columnar steps"): the
server stores the same steps and computes the same advantages as from the row form, in fewer bytes; events
split by size continue their trajectory; a bad step is refused at the call, naming it, as in the row form.
"""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import uuid

import numpy as np
import pytest

import creditlab
from creditlab import columnar
from conftest import cli_env, conformance_fixtures, load
from support import send_json

STEPS_QUERY = """query($id: ID!) { run(id: $id) { groups(iteration: 0, first: 100) { nodes { id trajectories {
  id outcome steps { state action reward nll value nextState nextValue embedding tokenLogprobs } } } } } }"""


def batch_with_gaps() -> dict:
    """A conformance batch with embeddings, token log-probs on some steps and nll on others."""
    batch = load(conformance_fixtures("spec")[1])["batch"]
    rng = np.random.default_rng(3)
    for k, s in enumerate(st for g in batch["groups"] for t in g["trajectories"] for st in t["steps"]):
        s["embedding"] = rng.standard_normal(8).tolist()
        if k % 2:
            s["tokenLogprobs"] = (-rng.random(3)).tolist()
        if k % 3 == 0:
            s["nll"] = float(rng.random())
        else:
            s.pop("nll", None)
    return batch


def logged(server, tmp_path, batch: dict, columnar_steps: bool, **options):
    spool = str(tmp_path / f"c{columnar_steps}")
    client = creditlab.Client(*server, spool_dir=spool, columnar_steps=columnar_steps, **options)
    run = client.create_run(name=f"columnar={columnar_steps}", env="fixtures", method="gigpo")
    run.log_rollouts(0, batch)
    run.finish()
    groups = client.graphql(STEPS_QUERY, {"id": run.id})["run"]["groups"]["nodes"]
    advantages = {m: run.advantages(0, m, record=False)[0].tolist() for m in ("gigpo", "bipace")}
    bytes_sent = run.stats.bytes
    client.close()
    return groups, advantages, bytes_sent


def test_columnar_steps_store_what_rows_store_in_fewer_bytes(server, tmp_path):
    batch = batch_with_gaps()
    lines = columnar.columnar_lines(0, batch, creditlab.events.StepEncoder(True), 8 << 20)
    assert lines is not None and all("columns" in json.loads(line)["data"] for line in lines)
    rows = logged(server, tmp_path, batch, False)
    cols = logged(server, tmp_path, batch, True)
    assert any(s["nll"] is None for g in rows[0] for t in g["trajectories"] for s in t["steps"])
    assert cols[0] == rows[0]
    assert cols[1] == rows[1]
    assert cols[2] < rows[2], (cols[2], rows[2])


def test_events_split_by_size_continue_their_trajectories(server, tmp_path):
    batch = batch_with_gaps()
    lines = columnar.columnar_lines(0, batch, creditlab.events.StepEncoder(True), 1500)
    assert len(lines) > 3 and all(len(line) <= 1500 for line in lines)
    assert logged(server, tmp_path, batch, True, max_event_bytes=1500)[0] == logged(server, tmp_path, batch, False)[0]


def test_float64_columns_without_numpy_are_the_same_bytes(monkeypatch):
    values = [0.1, -2.5, 1e300, float("nan")]
    with_numpy = columnar.f64_base64(values)
    monkeypatch.setattr(columnar, "HAS_NUMPY", False)
    assert columnar.f64_base64(values) == with_numpy


def test_a_bad_step_is_refused_at_the_call_naming_it(client):
    run = client.create_run(name="bad columnar", env="e", method="grpo")
    client.columnar_steps = True
    steps = [{"state": "s", "action": "a", "reward": 0.0}, {"state": "s", "action": "a", "reward": float("inf")}]
    with pytest.raises(creditlab.InvalidInput, match=r"groups\[0\]\.trajectories\[0\]\.steps\[1\]\.reward"):
        run.log_rollouts(0, [{"id": "g", "trajectories": [{"id": "t", "steps": steps}]}])
    bad_dim = [{"state": "s", "action": "a", "reward": 0.0, "embedding": e} for e in ([1.0, 2.0], [1.0])]
    with pytest.raises(creditlab.InvalidInput, match=r"steps\[1\]\.embedding: has 1 dimensions"):
        run.log_rollouts(1, [{"id": "g", "trajectories": [{"id": "t", "steps": bad_dim}]}])
    run.finish()


def test_a_batch_with_fields_beyond_v1_goes_as_rows():
    step = {"state": "s", "action": "a", "reward": 1, "toolCall": "x"}
    batch = [{"id": "g", "trajectories": [{"id": "t", "steps": [step]}]}]
    assert columnar.columnar_lines(0, batch, creditlab.events.StepEncoder(True), 8 << 20) is None


def test_columns_are_the_default_unless_turned_off_or_floats_are_not_compact(monkeypatch, tmp_path):
    def columnar(**options) -> bool:
        client = creditlab.Client("http://127.0.0.1:9", "cl_unused", spool_dir=str(tmp_path), **options)
        try:
            return client.columnar_steps
        finally:
            client.close()

    monkeypatch.delenv("CREDITLAB_COLUMNAR_STEPS", raising=False)
    monkeypatch.delenv("CREDITLAB_COMPACT_FLOATS", raising=False)
    assert columnar() is True
    assert columnar(columnar_steps=False) is False
    # A server that takes no base64 vectors is older than the columns too.
    assert columnar(compact_floats=False) is False
    monkeypatch.setenv("CREDITLAB_COLUMNAR_STEPS", "0")
    assert columnar() is False
    monkeypatch.setenv("CREDITLAB_COLUMNAR_STEPS", "1")
    assert columnar(compact_floats=False) is True


def test_a_columnar_line_is_the_json_dumps_writes_with_its_vectors_appended_as_they_are():
    batch = batch_with_gaps()  # token log-probs on every other step: nulls between them
    for line in columnar.columnar_lines(0, batch, creditlab.events.StepEncoder(True), 1 << 20):
        event = json.loads(line)
        assert None in event["data"]["columns"]["tokenLogprobs"]
        again = json.dumps(event, separators=(",", ":"), allow_nan=False).encode() + b"\n"
        assert line == again


def test_events_stay_under_the_limit_when_ids_are_escaped_in_json():
    # 200 CJK characters are 1,200 bytes of JSON (\uXXXX each): counted as 200, 30 one-step groups
    # made a 14 kB line under a 4,000-byte limit.
    groups = [
        {"id": f"{g}" + "群" * 200, "trajectories": [{"id": f"t{g}", "steps": [{"state": "s", "action": "a", "reward": 0.0}]}]}
        for g in range(30)
    ]
    lines = columnar.columnar_lines(0, groups, creditlab.events.StepEncoder(True), 4000)
    assert len(lines) > 1 and all(len(line) <= 4000 for line in lines), [len(x) for x in lines]


class _OlderServer:
    """A stand-in for a server older than columnar steps (before 2026-12-01): it creates runs, and answers every
    events request with `refusal`, the answer such a server gives a trajectory sent as columns."""

    def __init__(self) -> None:
        self.refusal: dict = {}
        older = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.path == "/v1/runs":
                    send_json(self, 201, json.dumps({"id": json.loads(body)["id"]}).encode())
                else:
                    send_json(self, 400, json.dumps(older.refusal).encode())

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _refusal(server, events: list) -> dict:
    """This server's answer to `events`, posted as one request to a new run: a 400 is expected."""
    url, key = server

    def post(path: str, body: bytes, content_type: str):
        headers = {"authorization": f"Bearer {key}", "content-type": content_type}
        return urllib.request.urlopen(urllib.request.Request(f"{url}{path}", body, headers), timeout=60)

    run = json.dumps({"name": "older", "env": "e", "method": "gigpo"}).encode()
    run_id = json.loads(post("/v1/runs", run, "application/json").read())["id"]
    with pytest.raises(urllib.error.HTTPError) as answer:
        ndjson = "".join(json.dumps(e) + "\n" for e in events).encode()
        post(f"/v1/runs/{run_id}/events", ndjson, "application/x-ndjson")
    assert answer.value.code == 400
    return json.loads(answer.value.read())


def test_an_older_server_refusing_columns_gets_advice(server, tmp_path):
    # A server before 2026-12-01 validated trajectories in the row form only, so it read a columnar trajectory
    # as one without steps. This server refuses a row-form trajectory without steps in the same words: its
    # answers, replayed by a stand-in for the older server, are what the client sees.
    metrics = {"id": str(uuid.uuid4()), "type": "metrics.logged", "data": {"iteration": 0, "metrics": {"loss": 1}}}
    no_steps = {"id": str(uuid.uuid4()), "type": "rollouts.appended"}
    no_steps["data"] = {"iteration": 0, "groups": [{"id": "g", "trajectories": [{"id": "a"}]}]}
    at_line_1 = _refusal(server, [no_steps])
    at_line_2 = _refusal(server, [metrics, no_steps])
    for refusal, line in ((at_line_1, 1), (at_line_2, 2)):
        assert refusal["line"] == line and refusal["path"] == "data.groups[0].trajectories[0].steps", refusal
    advice = "servers before 2026-12-01 do not read"

    batch = load(conformance_fixtures("spec")[0])["batch"]
    older = _OlderServer()
    try:
        # The sender: one log_rollouts call of this batch is one event, sent alone (nothing was logged before it).
        older.refusal = at_line_1
        for columnar_steps, advised in ((True, True), (False, False)):
            spool_dir = str(tmp_path / f"s{columnar_steps}")
            client = creditlab.Client(older.url, "k", spool_dir=spool_dir, columnar_steps=columnar_steps)
            run = client.create_run(name="older", env="e", method="gigpo")
            run.log_rollouts(0, batch)
            assert run.stats.logged == 1
            with pytest.raises(creditlab.ApiError) as refused:
                run.flush()
            e = refused.value
            message = str(e)
            assert message.startswith(f"400 INVALID_EVENT: {at_line_1['message']}"), message
            assert (advice in message) == advised, message
            assert (e.advice is not None) == advised
            # The server's answer is kept whole.
            kept = (e.status, e.body, e.line, e.path, e.reason)
            assert kept == (400, at_line_1, 1, at_line_1["path"], at_line_1["reason"])
            if advised:
                assert "Client(columnar_steps=False)" in message and "CREDITLAB_COLUMNAR_STEPS=0" in message
            run._finish_at_exit = False
            client.close()

        # A spool written with columns, uploaded by `creditlab sync` in one request, in order: the metrics line
        # first, the rollouts on line 2 (then run.finished). The same advice, exit status 1.
        older.refusal = at_line_2
        spool = tmp_path / "offline"
        offline = creditlab.Client(older.url, "k", mode="offline", spool_dir=str(spool), columnar_steps=True)
        with offline.create_run(name="offline", env="e", method="gigpo") as run:
            run.log({"loss": 1.0}, iteration=0)
            run.log_rollouts(0, batch)
        assert run.stats.logged == 3
        env = cli_env(CREDITLAB_URL=older.url, CREDITLAB_API_KEY="k")
        synced = subprocess.run(
            [sys.executable, "-m", "creditlab", "sync", str(spool)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert advice in synced.stderr, synced.stderr
        assert synced.returncode == 1
    finally:
        older.close()
