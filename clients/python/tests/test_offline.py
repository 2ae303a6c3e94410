"""Offline mode: a run written to the spool only, uploaded later by `creditlab sync`, exactly once and in order."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import creditlab
from conftest import cli_env, conformance_fixtures, events_of, load, run_info


def sync(path, server, *extra):
    env = cli_env(CREDITLAB_URL=server[0], CREDITLAB_API_KEY=server[1])
    return subprocess.run(
        [sys.executable, "-m", "creditlab", "sync", str(path), *extra], env=env, capture_output=True, text=True, timeout=300
    )


def test_offline_run_then_sync_stores_everything_once_in_order(server, tmp_path):
    spool_dir = tmp_path / "spool"
    offline = creditlab.Client(*server, mode="offline", spool_dir=str(spool_dir), max_event_bytes=8_000)
    batch = load(conformance_fixtures("spec")[0])["batch"]
    with offline.create_run(name="offline", env="fixtures", method="gigpo", tags=["offline"]) as run:
        for it in range(3):
            run.log_rollouts(it, batch)
            run.log({"loss": 1.0 / (it + 1)}, iteration=it)
    logged = run.stats.logged
    assert logged > 3 * 2 + 1  # the small event limit split each batch
    online = creditlab.Client(*server, spool_dir=str(tmp_path / "online"))
    assert online.graphql("query($id: ID!) { run(id: $id) { id } }", {"id": run.id})["run"] is None  # nothing sent yet

    first = sync(spool_dir, server)
    assert first.returncode == 0, first.stderr
    # A sync cut short after the server stored events but before the spool noted it (a crash), resumed.
    meta = Path(run.spool_folder, "sent")
    meta.write_text("0")
    again = sync(run.spool_folder, server)
    assert again.returncode == 0, again.stderr
    assert f"{logged} events uploaded" in again.stdout and f"(0 stored, {logged} already there)" in again.stdout

    run_id = first.stdout.split()[1].rstrip(":")  # the id the server gave the run
    info = run_info(online, run_id)
    steps = sum(len(t["steps"]) for g in batch["groups"] for t in g["trajectories"])
    assert [i["stepCount"] for i in info["iterations"]] == [steps] * 3
    assert info["status"] == "COMPLETED"
    stream = [e for e in events_of(online, run_id, []) if e["type"] != "run.created"]
    assert len(stream) == logged
    order = [(e["type"], (e["data"] or {}).get("iteration")) for e in stream]
    assert order == sorted(order, key=lambda x: (x[1] if x[1] is not None else 99, x[0] == "metrics.logged"))


def test_sync_refuses_a_folder_without_runs(tmp_path, server):
    res = sync(tmp_path, server)
    assert res.returncode == 2
    assert res.stderr.strip() == f"creditlab: {tmp_path}: no spooled runs here (a run's folder holds run.json and events.ndjson)"


CRASHING_TRAINER = """
import os, signal, sys, numpy as np, creditlab
client = creditlab.Client(sys.argv[1], sys.argv[2], durable=True, spool_dir=sys.argv[3], max_event_bytes=64_000)
run = client.create_run(name="durable crash", env="synthetic", method="grpo")
print(run.id, flush=True)
rng = np.random.default_rng(0)
for it in range(30):
    run.log_rollouts(it, [{"id": f"g{it}", "trajectories": [{"id": f"t{it}-{t}", "steps": [
        {"state": "s", "action": "a", "reward": 1.0, "embedding": rng.standard_normal(512)} for _ in range(20)]}
        for t in range(8)]}])
    if it == 29:
        os.kill(os.getpid(), signal.SIGKILL)  # dies with events still queued, and maybe one on the wire
"""


def test_durable_run_killed_mid_stream_is_completed_by_sync_exactly_once(server, tmp_path):
    spool_dir = tmp_path / "spool"
    crashed = subprocess.run(
        [sys.executable, "-c", CRASHING_TRAINER, *server, str(spool_dir)], env=cli_env(), capture_output=True, text=True, timeout=300
    )
    assert crashed.returncode == -9, crashed.stderr
    run_id = crashed.stdout.strip()
    folder = spool_dir / run_id
    assert int((folder / "sent").read_text() if (folder / "sent").exists() else 0) < (folder / "events.ndjson").stat().st_size

    synced = sync(folder, server)
    assert synced.returncode == 0, synced.stderr
    client = creditlab.Client(*server, spool_dir=str(tmp_path / "reader"))
    assert [i["stepCount"] for i in run_info(client, run_id)["iterations"]] == [8 * 20] * 30
    appended = events_of(client, run_id, ["rollouts.appended"])
    assert len(appended) == len((folder / "events.ndjson").read_bytes().splitlines())
