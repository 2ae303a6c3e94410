"""
The compact encoding of embeddings and token log-probs (base64 little-endian float32) against the server:
stored and read back as the float32 of what was logged, exactly as JSON numbers are, in fewer bytes.
"""

from __future__ import annotations

import numpy as np

import creditlab
from conftest import conformance_fixtures, load


def logged_and_read_back(server, tmp_path, compact: bool, batch: dict):
    # Steps as objects either way, so that only the vectors' encoding differs (columns carry base64 only).
    client = creditlab.Client(
        *server, spool_dir=str(tmp_path / str(compact)), compact_floats=compact, columnar_steps=False
    )
    run = client.create_run(name=f"compact={compact}", env="fixtures", method="bipace")
    run.log_rollouts(0, batch)
    run.finish()
    groups = client.graphql(
        "query($id: ID!) { run(id: $id) { groups(iteration: 0, first: 100) { nodes { trajectories { steps { embedding tokenLogprobs } } } } } }",
        {"id": run.id},
    )["run"]["groups"]["nodes"]
    steps = [s for g in groups for t in g["trajectories"] for s in t["steps"]]
    return run.stats.bytes, steps


def test_compact_floats_round_trip_at_float32_in_fewer_bytes(server, tmp_path):
    batch = load(conformance_fixtures("spec")[1])["batch"]
    rng = np.random.default_rng(1)
    for g in batch["groups"]:
        for t in g["trajectories"]:
            for s in t["steps"]:
                s["embedding"] = rng.standard_normal(256).tolist()
                s["tokenLogprobs"] = (-rng.random(16)).tolist()
    want = [(np.float32(s["embedding"]).tolist(), np.float32(s["tokenLogprobs"]).tolist())
            for g in batch["groups"] for t in g["trajectories"] for s in t["steps"]]
    json_bytes, json_steps = logged_and_read_back(server, tmp_path, False, batch)
    compact_bytes, compact_steps = logged_and_read_back(server, tmp_path, True, batch)
    assert [(s["embedding"], s["tokenLogprobs"]) for s in json_steps] == want
    assert [(s["embedding"], s["tokenLogprobs"]) for s in compact_steps] == want
    assert compact_bytes * 2.5 < json_bytes, (compact_bytes, json_bytes)
