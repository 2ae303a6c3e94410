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
EXTRA_QUERY = STEPS_QUERY.replace("tokenLogprobs }", "tokenLogprobs extra }")


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


def logged(server, tmp_path, batch: dict, columnar_steps: bool, query: str = STEPS_QUERY, **options):
    spool = str(tmp_path / f"c{columnar_steps}")
    client = creditlab.Client(*server, spool_dir=spool, columnar_steps=columnar_steps, **options)
    run = client.create_run(name=f"columnar={columnar_steps}", env="fixtures", method="gigpo")
    run.log_rollouts(0, batch)
    run.finish()
    groups = client.graphql(query, {"id": run.id})["run"]["groups"]["nodes"]
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


def batch_with_extras(extra_bytes: int = 0) -> dict:
    """batch_with_gaps with fields beyond v1 on some steps (in each step's own order, before and after its v1
    fields), one of them `extra_bytes` long; a None field is absent, as in the row form."""
    batch = batch_with_gaps()
    k = 0
    for traj in (t for g in batch["groups"] for t in g["trajectories"]):
        for si, s in enumerate(traj["steps"]):
            if k % 3 == 0:
                extra = {"toolCall": {"name": "open", "args": [k, "fridge"]}, "seed": k, "note": "é" * extra_bytes}
                traj["steps"][si] = {"turn": k, **s, **extra}
            elif k % 3 == 1:
                s["skipped"] = None
            k += 1
    return batch


def extras_in_order(batch: dict) -> list:
    """Each step's fields beyond v1 (None-valued ones left out, as the row form leaves them), or None."""
    out = []
    for s in (st for g in batch["groups"] for t in g["trajectories"] for st in t["steps"]):
        extra = {k: v for k, v in s.items() if k not in columnar._FIELDS and v is not None}
        out.append(extra or None)
    return out


def test_fields_beyond_v1_go_in_the_extra_column_step_by_step():
    batch = batch_with_extras()
    expected = extras_in_order(batch)
    assert any(x is None for x in expected) and any(x is not None for x in expected)
    (line,) = columnar.columnar_lines(0, batch, creditlab.events.StepEncoder(True), 8 << 20)
    columns = json.loads(line)["data"]["columns"]
    assert columns["extra"] == expected
    assert [list(x) for x in columns["extra"] if x] == [list(x) for x in expected if x]  # the step's key order
    assert set(columns["extra"][0]) == {"turn", "toolCall", "seed", "note"}


def test_events_split_by_size_carry_their_own_steps_extras():
    batch = batch_with_extras()
    lines = columnar.columnar_lines(0, batch, creditlab.events.StepEncoder(True), 1500)
    assert len(lines) > 3 and all(len(line) <= 1500 for line in lines)
    got = []
    for line in lines:
        data = json.loads(line)["data"]
        n = sum(t["stepCount"] for g in data["groups"] for t in g["trajectories"])
        extra = data["columns"].get("extra", [None] * n)
        assert len(extra) == len(data["columns"]["state"]) == n
        got += extra
    assert got == extras_in_order(batch)


def test_columnar_steps_with_fields_beyond_v1_store_what_rows_store(server, tmp_path):
    batch = batch_with_extras()
    rows = logged(server, tmp_path, batch, False, EXTRA_QUERY, max_event_bytes=1500)
    cols = logged(server, tmp_path, batch, True, EXTRA_QUERY, max_event_bytes=1500)
    steps = [s for g in rows[0] for t in g["trajectories"] for s in t["steps"]]
    assert any(s["extra"] for s in steps) and any(s["extra"] is None for s in steps)
    assert cols[0] == rows[0]
    assert cols[1] == rows[1]


def test_no_extra_column_without_fields_beyond_v1():
    for line in columnar.columnar_lines(0, batch_with_gaps(), creditlab.events.StepEncoder(True), 1500):
        assert "extra" not in json.loads(line)["data"]["columns"]
    only_none = [{"id": "g", "trajectories": [{"id": "t", "steps": [{"state": "s", "action": "a", "reward": 0, "x": None}]}]}]
    (line,) = columnar.columnar_lines(0, only_none, creditlab.events.StepEncoder(True), 1 << 20)
    assert "extra" not in json.loads(line)["data"]["columns"]


def test_events_stay_under_the_limit_with_large_extra_fields():
    # Escaped text (6 bytes of JSON a character) in the extras, as in ids: sized as written.
    batch = batch_with_extras(extra_bytes=300)
    for limit in (3000, 6000, 20000):
        lines = columnar.columnar_lines(0, batch, creditlab.events.StepEncoder(True), limit)
        assert len(lines) > 1 and all(len(line) <= limit for line in lines), (limit, [len(x) for x in lines])
        got = [x for line in lines for x in json.loads(line)["data"]["columns"].get("extra") or ()]
        assert [x for x in got if x] == [x for x in extras_in_order(batch) if x]


def test_an_extra_field_json_cannot_hold_fails_as_in_the_row_form():
    for bad in (object(), float("nan"), {1: {2: set()}}):
        batch = [{"id": "g", "trajectories": [{"id": "t", "steps": [{"state": "s", "action": "a", "reward": 0, "x": bad}]}]}]
        with pytest.raises((TypeError, ValueError)) as rows:
            creditlab.events.rollout_lines(0, batch, creditlab.events.StepEncoder(True), 1 << 20)
        with pytest.raises(type(rows.value)) as cols:
            columnar.columnar_lines(0, batch, creditlab.events.StepEncoder(True), 1 << 20)
        assert str(cols.value) == str(rows.value)


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
    # Token log-probs on every other step: nulls between them; fields beyond v1 on some steps, spliced too.
    for batch in (batch_with_gaps(), batch_with_extras(extra_bytes=3)):
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


def test_a_server_older_than_the_extra_column_refusing_it_gets_advice(server, tmp_path):
    # A server from 2026-12-01 to 12-04 reads columns but not the extra column: it refuses that as an unknown
    # column, in the words this server refuses a column it does not know (its answer, renamed, replayed).
    line = columnar.columnar_lines(0, batch_with_extras(), creditlab.events.StepEncoder(True), 1 << 20)[0]
    event = json.loads(line)
    event["data"]["columns"]["extras"] = event["data"]["columns"].pop("extra")
    own = _refusal(server, [event])
    assert own["path"] == "data.columns.extras" and own["reason"].startswith("unknown column"), own
    older = _OlderServer()
    older.refusal = {**own, "path": "data.columns.extra", "message": own["message"].replace("extras", "extra")}
    try:
        for steps, advised in ((batch_with_extras(), True), (load(conformance_fixtures("spec")[0])["batch"], False)):
            client = creditlab.Client(older.url, "k", spool_dir=str(tmp_path / str(advised)), columnar_steps=True)
            run = client.create_run(name="older", env="e", method="gigpo")
            run.log_rollouts(0, steps)
            with pytest.raises(creditlab.ApiError) as refused:
                run.flush()
            message = str(refused.value)
            # Advice only where the refused line has an extra column.
            assert ("servers before 2026-12-05 do not read" in message) == advised, message
            run._finish_at_exit = False
            client.close()
    finally:
        older.close()
