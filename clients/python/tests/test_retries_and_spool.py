"""
Exactly once when things break: a server killed with SIGKILL in the middle of an ingest request and
started again, and a server that is gone long enough for the events to be spooled and synced later.
These use a second server process of their own (on the test database), since they kill it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import creditlab
from conftest import cli_env, events_of, run_info
from support import ServerProcess


def synthetic_groups(iteration: int, groups: int = 8, size: int = 8, steps: int = 12, dim: int = 256) -> list:
    rng = np.random.default_rng(iteration)
    return [
        {
            "id": f"it{iteration}-g{g}",
            "trajectories": [
                {
                    "id": f"it{iteration}-g{g}-t{t}",
                    "steps": [
                        {
                            "state": f"task {g} room {rng.integers(5)}",
                            "action": f"go {rng.integers(4)}",
                            "reward": float(k == steps - 1 and t % 2),
                            "nll": float(rng.random()),
                            "embedding": rng.standard_normal(dim).astype(np.float32),
                        }
                        for k in range(steps)
                    ],
                }
                for t in range(size)
            ],
        }
        for g in range(groups)
    ]


@pytest.fixture(scope="module")
def second(server, tmp_path_factory):
    srv = ServerProcess(server[1], tmp_path_factory.mktemp("credentials") / "credentials.json")
    srv.start()
    yield srv
    srv.stop()


def test_killed_mid_request_every_event_is_stored_exactly_once(second, server, tmp_path):
    client = creditlab.Client(
        second.url,
        server[1],
        spool_dir=str(tmp_path),
        max_event_bytes=256 << 10,
        max_request_bytes=1 << 20,
        retry=creditlab.RetryPolicy(budget=600, max_delay=1.0),
    )
    run = client.create_run(name="killed mid-request", env="synthetic", method="grpo")
    killed = {}

    def kill_mid_request():  # watches the sender while the trainer logs; kills once a request is on the wire
        deadline = time.monotonic() + 240
        while not (run.stats.requests >= 2 and run.stats.in_flight):
            if time.monotonic() > deadline:
                return
            time.sleep(0.0005)
        second.kill()
        killed["after"] = run.stats.requests

    watcher = threading.Thread(target=kill_mid_request)
    watcher.start()
    iterations = 24
    for it in range(iterations):  # logging goes on whether the server is up or not
        run.log_rollouts(it, synthetic_groups(it))
    watcher.join()
    assert "after" in killed, f"never caught a request on the wire: {run.stats}"
    second.start()
    run.finish(timeout=600)
    killed_after = killed["after"]

    assert run.stats.retries > 0 and killed_after < run.stats.requests, run.stats
    assert run.spool_folder is None  # nothing had to wait on disk: the retries were enough
    appended = events_of(client, run.id, ["rollouts.appended"])
    assert len(appended) == len({e["id"] for e in appended}) == run.stats.logged - 1  # all but run.finished
    info = run_info(client, run.id)
    assert [i["stepCount"] for i in info["iterations"]] == [8 * 8 * 12] * iterations
    assert info["status"] == "COMPLETED"
    assert run.stats.accepted + run.stats.duplicates == run.stats.events


def test_unreachable_server_spools_and_sync_uploads_once_in_order(second, server, tmp_path):
    spool_dir = tmp_path / "spool"
    client = creditlab.Client(
        second.url, server[1], spool_dir=str(spool_dir), retry=creditlab.RetryPolicy(budget=1.0), resync_interval=3600
    )
    run = client.create_run(name="spooled", env="synthetic", method="grpo")
    run.log_rollouts(0, synthetic_groups(0, groups=2))
    run.log({"loss": 0.5}, iteration=0)
    run.flush(require_sent=True)
    second.kill()
    for it in (1, 2, 3):
        run.log_rollouts(it, synthetic_groups(it, groups=2))
        run.log({"loss": 0.5 / (it + 1)}, iteration=it)
    run.log_evaluation(3, 0.25)
    run.finish()  # does not wait for the server: what it could not send is in the spool
    folder = run.spool_folder
    assert folder and os.path.isdir(folder) and run.stats.spooled > 0, run.stats
    with pytest.raises(creditlab.ServerUnavailable):
        client.run(run.id)

    second.start()
    env = cli_env(CREDITLAB_API_KEY=server[1])
    env.pop("CREDITLAB_URL")  # the spool knows the server it was meant for
    first = subprocess.run([sys.executable, "-m", "creditlab", "sync", str(spool_dir)], env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert f"run {run.id}: {run.stats.spooled} events uploaded" in first.stdout
    again = subprocess.run([sys.executable, "-m", "creditlab", "sync", folder], env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "0 events uploaded" in again.stdout, again.stdout + again.stderr

    reader = creditlab.Client(second.url, server[1], spool_dir=str(tmp_path / "reader"))
    info = run_info(reader, run.id)
    assert [i["stepCount"] for i in info["iterations"]] == [2 * 8 * 12] * 4
    assert [i["metrics"]["loss"] for i in info["iterations"]] == [0.5, 0.25, 0.5 / 3, 0.125]
    assert info["iterations"][3]["evaluationSuccessRate"] == 0.25 and info["status"] == "COMPLETED"
    stream = events_of(reader, run.id, [])
    kinds = [(e["type"], (e["data"] or {}).get("iteration")) for e in stream if e["type"] != "run.created"]
    assert kinds == [
        ("rollouts.appended", 0), ("metrics.logged", 0),
        ("rollouts.appended", 1), ("metrics.logged", 1),
        ("rollouts.appended", 2), ("metrics.logged", 2),
        ("rollouts.appended", 3), ("metrics.logged", 3),
        ("evaluation.logged", 3), ("run.finished", None),
    ]
