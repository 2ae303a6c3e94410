"""The client's pieces on their own (no server): connection resolution, events and their splitting, spools."""

from __future__ import annotations

import base64
import json
import struct

import numpy as np
import pytest

from creditlab import InvalidInput, in_row_order
from creditlab.credentials import resolve_connection, same_server
from creditlab.events import StepEncoder, iteration, rollout_lines, steps_lines
from creditlab.spool import Spool
from creditlab.columnar import columnar_lines


def write_credentials(tmp_path, url="http://127.0.0.1:4000", key="cl_saved"):
    path = tmp_path / "credentials.json"
    path.write_text(json.dumps({"url": url, "apiKey": key, "project": None, "role": "admin"}))
    return {"CREDITLAB_CREDENTIALS": str(path)}


def test_connection_resolution_follows_the_typescript_tools(tmp_path):
    env = write_credentials(tmp_path)
    assert resolve_connection(env=env) == ("http://127.0.0.1:4000", "cl_saved")
    assert resolve_connection(env={**env, "CREDITLAB_URL": "http://localhost:4000"}) == ("http://localhost:4000", "cl_saved")
    # A saved key never goes to another server.
    assert resolve_connection(env={**env, "CREDITLAB_URL": "https://lab.example"}) == ("https://lab.example", None)
    assert resolve_connection("http://127.0.0.1:4001", env=env) == ("http://127.0.0.1:4001", None)
    # Explicit beats the environment, which beats the file.
    assert resolve_connection(env={**env, "CREDITLAB_API_KEY": "cl_env"}).api_key == "cl_env"
    assert resolve_connection(api_key="cl_arg", env={**env, "CREDITLAB_API_KEY": "cl_env"}).api_key == "cl_arg"
    assert resolve_connection(env={"CREDITLAB_CREDENTIALS": str(tmp_path / "none.json")}) == ("http://127.0.0.1:4000", None)
    assert same_server("http://[::1]:4000", "http://localhost:4000")
    assert same_server("https://lab.example", "https://lab.example:443")
    assert not same_server("http://lab.example", "https://lab.example")


def test_a_bad_credentials_file_names_itself(tmp_path):
    env = write_credentials(tmp_path)
    (tmp_path / "credentials.json").write_text('{"url": 1}')
    with pytest.raises(InvalidInput, match=r'credentials.json: expected \{"url": \.\.\., "apiKey": \.\.\.\}'):
        resolve_connection(env=env)


def batch(trajectories=3, steps=40, dim=16):
    rng = np.random.default_rng(0)
    return [
        {"id": f"g{g}", "trajectories": [
            {"id": f"g{g}/t{t}", "outcome": "success", "steps": [
                {"state": f"s{k}", "action": "a", "reward": float(k), "embedding": rng.standard_normal(dim)} for k in range(steps)
            ]} for t in range(trajectories)
        ]} for g in range(2)
    ]


@pytest.mark.parametrize("compact", [True, False])
def test_rollouts_split_under_the_limit_and_reassemble_in_order(compact):
    groups = batch()
    limit = 3_000
    lines = rollout_lines(4, groups, StepEncoder(compact), limit)
    assert len(lines) > 10 and all(len(line) <= limit for line in lines)
    assert len({json.loads(x)["id"] for x in lines}) == len(lines)
    seen = []
    for line in lines:
        event = json.loads(line)
        assert event["type"] == "rollouts.appended" and event["data"]["iteration"] == 4
        for g in event["data"]["groups"]:
            for t in g["trajectories"]:
                assert t["outcome"] == "success"
                seen += [(g["id"], t["id"], s["reward"]) for s in t["steps"]]
    assert seen == [(g["id"], t["id"], s["reward"]) for g in groups for t in g["trajectories"] for s in t["steps"]]


def test_envelopes_are_counted_in_full():
    """Many one-step trajectories in many groups, a long iteration number: the overheads, not the steps, fill events."""
    groups = [{"id": f"group-{g}", "trajectories": [{"id": f"g{g}t{t}", "outcome": "truncated", "steps": [
        {"state": "s", "action": "a", "reward": 0}]} for t in range(3)]} for g in range(200)]
    for limit in (300, 1_000, 5_000):
        lines = rollout_lines(9_999_999_999, groups, StepEncoder(True), limit)
        assert max(len(x) for x in lines) <= limit
        assert sum(len(t["steps"]) for x in lines for g in json.loads(x)["data"]["groups"] for t in g["trajectories"]) == 600
    lines = steps_lines(9_999_999_999, "g" * 100, "t" * 100, 9_999_999, [{"state": "s", "action": "a", "reward": 0}] * 50, StepEncoder(True), 600)
    assert len(lines) > 1 and max(len(x) for x in lines) <= 600


def test_compact_floats_are_little_endian_float32():
    [line] = rollout_lines(0, [{"id": "g", "trajectories": [{"id": "t", "steps": [
        {"state": "s", "action": "a", "reward": 0, "embedding": [1.5, -2.0, 0.1], "tokenLogprobs": np.array([-0.5])}]}]}],
        StepEncoder(True), 1 << 20)
    step = json.loads(line)["data"]["groups"][0]["trajectories"][0]["steps"][0]
    assert struct.unpack("<3f", base64.b64decode(step["embedding"])) == (1.5, -2.0, np.float32(0.1))
    assert struct.unpack("<f", base64.b64decode(step["tokenLogprobs"])) == (-0.5,)
    with pytest.raises(InvalidInput, match=r"steps\[0\]\.embedding\[0\]: 1e\+39 is beyond float32's range"):
        steps_lines(0, "g", "t", 0, [{"state": "s", "action": "a", "reward": 0, "embedding": [1e39]}], StepEncoder(True), 1 << 20)


def test_embedding_dimension_is_one_per_run():
    enc = StepEncoder(True)
    steps_lines(0, "g", "t", 0, [{"state": "s", "action": "a", "reward": 0, "embedding": [1.0, 2.0]}], enc, 1 << 20)
    with pytest.raises(InvalidInput, match=r"steps\[0\]\.embedding: has 3 dimensions, but this run's embeddings have 2"):
        steps_lines(0, "g", "t", 1, [{"state": "s", "action": "a", "reward": 0, "embedding": [1.0, 2.0, 3.0]}], enc, 1 << 20)


def test_steps_events_number_their_first_step():
    steps = [{"state": f"s{k}", "action": "a", "reward": 0.0} for k in range(10)]
    lines = steps_lines(1, "g", "t", 5, steps, StepEncoder(True), 400)
    firsts = [json.loads(x)["data"]["firstStepIndex"] for x in lines]
    counts = [len(json.loads(x)["data"]["steps"]) for x in lines]
    assert len(lines) > 1 and firsts[0] == 5 and sum(counts) == 10
    assert all(firsts[k + 1] == firsts[k] + counts[k] for k in range(len(lines) - 1))


def test_row_order_helper():
    values = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    index = [("g", "a", 0), ("g", "a", 1), ("g", "b", 0)]
    assert in_row_order(values, index, [("b", 0), ("a", 1), ("a", 0), ("a", 1)]).tolist() == pytest.approx([0.3, 0.2, 0.1, 0.2])
    assert in_row_order(list(values), index, [("g", "b", 0)]) == pytest.approx([0.3])
    with pytest.raises(InvalidInput, match=r"rows\[1\]: no advantage for \('h', 'a', 0\) in this iteration"):
        in_row_order(values, index, [("g", "a", 0), ("h", "a", 0)])


def test_spool_drops_a_line_cut_by_a_crash(tmp_path):
    spool = Spool.create(tmp_path, "run", {"id": "run"}, created=True)
    spool.append([b'{"a":1}\n', b'{"b":2}\n'])
    spool.close()
    with open(spool.events_file, "ab") as f:
        f.write(b'{"half')  # the process died in the middle of this write
    again = Spool(spool.folder)
    again.append([b'{"c":3}\n'])
    again.close()
    assert spool.events_file.read_bytes() == b'{"a":1}\n{"b":2}\n{"c":3}\n'
    batches = list(Spool(spool.folder).pending(12))
    assert [len(b) for b, _ in batches] == [1, 1, 1] and batches[-1][1] == spool.size()


def test_step_index_by_row_order():
    from creditlab.integrations.verl_agent import step_index_by_row_order

    got = step_index_by_row_order(np.array(["a", "b", "a", "c", "b", "a"], dtype=object))
    assert got.tolist() == [0, 0, 1, 0, 1, 2]


def test_text_postgres_cannot_store_is_refused_at_the_call():
    enc = StepEncoder(True)
    with pytest.raises(InvalidInput, match=r"^steps\[0\]\.state: contains the NUL character \(U\+0000\) at 3$"):
        steps_lines(0, "g", "t", 0, [{"state": "abc\x00", "action": "a", "reward": 0}], enc, 1 << 20)
    with pytest.raises(InvalidInput, match=r"^groups\[0\]\.id: contains a lone surrogate at 1$"):
        rollout_lines(0, [{"id": "g\ud800", "trajectories": []}], enc, 1 << 20)
    with pytest.raises(InvalidInput, match=r"^iteration: must be an integer in \[0, 2\^31 - 1\], got 2147483648$"):
        iteration(2**31)


def test_a_field_rollout_batch_does_not_define_is_refused_not_dropped():
    enc = StepEncoder(True)
    step = {"state": "s", "action": "a", "reward": 1.0}
    batch = [{"id": "g", "trajectories": [{"id": "t", "steps": [step], "reward": 1.0}]}]
    with pytest.raises(InvalidInput, match=r"^groups\[0\]\.trajectories\[0\]\.reward: unknown field; known: id, outcome, steps$"):
        rollout_lines(0, batch, enc, 1 << 20)
    with pytest.raises(InvalidInput, match=r"^groups\[0\]\.task: unknown field; known: id, trajectories$"):
        rollout_lines(0, [{"id": "g", "task": "x", "trajectories": []}], enc, 1 << 20)
    with pytest.raises(InvalidInput, match=r"^groups\[0\]\.trajectories\[0\]\.reward: unknown field"):
        columnar_lines(0, batch, enc, 1 << 20)
    # A step's fields beyond rollout-batch/v1 are its `extra`, sent as they are.
    (line,) = rollout_lines(0, [{"id": "g", "trajectories": [{"id": "t", "steps": [{**step, "turn": 2}]}]}], enc, 1 << 20)
    assert b'"turn":2' in line


def test_a_nan_in_a_runs_config_or_summary_is_refused_naming_where(tmp_path):
    from creditlab.events import finite_json

    with pytest.raises(InvalidInput, match=r"^config\.optim\.lr\[1\]: must be a finite number, got nan \(JSON has no NaN or infinity\)$"):
        finite_json({"seed": 1, "optim": {"lr": [0.1, float("nan")]}}, "config")
    with pytest.raises(InvalidInput, match=r"^summary\.best: must be a finite number, got inf"):
        finite_json({"best": np.float64("inf")}, "summary")
    with pytest.raises(InvalidInput, match=r"^params\.w\[0\]\[1\]: must be a finite number, got nan"):
        finite_json({"w": np.array([[1.0, np.nan]])}, "params")
    assert finite_json({"a": [1, 2.5, "x", None, np.float32(3)]}, "config") == {"a": [1, 2.5, "x", None, np.float32(3)]}
    # Before anything is sent: the server's answer would be a "not valid JSON" that does not say where.
    import creditlab

    client = creditlab.Client("http://127.0.0.1:9", "cl_unused", spool_dir=str(tmp_path))
    with pytest.raises(InvalidInput, match=r"^config\.loss: must be a finite number, got nan"):
        client.create_run(name="r", env="e", method="grpo", config={"loss": float("nan")})
