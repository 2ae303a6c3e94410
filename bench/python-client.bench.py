"""
Measures the Python client (clients/python) against a running server: steps per second through
`run.log_rollouts` + `run.flush` (encoding, the background sender, HTTP, ingest), against the raw HTTP
ingest rate of the same events packed into requests of up to max_request_bytes, posted back to back, and
bytes per step with embeddings and token log-probs as JSON numbers and in the compact encoding (base64
little-endian float32), with the steps as objects (the row form) and as columns (the client's default).

Run by bench/python-client.bench.ts, which starts the server and writes docs/benchmarks.md; prints one
JSON object per scenario on stdout. Arguments: URL API_KEY, then scenarios as LABEL:DIM:STEPS.
"""

from __future__ import annotations

import http.client
import json
import sys
import time
from urllib.parse import urlsplit

import numpy as np

import creditlab
from creditlab.columnar import batch_lines
from creditlab.events import StepEncoder

GROUPS, SIZE, MAX_STEPS = 16, 8, 40  # one iteration: 16 tasks × G = 8 rollouts × up to 40 steps


def iteration(it: int, dim: int, rng) -> list:
    groups = []
    for g in range(GROUPS):
        trajs = []
        for t in range(SIZE):
            n = int(rng.integers(MAX_STEPS // 2, MAX_STEPS + 1))
            steps = []
            for k in range(n):
                step = {
                    "state": f"[task {it}-{g}] You are in room {rng.integers(20)}. " + "You see a drawer, a shelf and a lamp. " * 4,
                    "action": f"go to room {rng.integers(20)}",
                    "reward": float(k == n - 1 and t % 3 == 0),
                    "nll": float(rng.random()),
                    "value": float(rng.random()),
                }
                if dim:
                    step["embedding"] = rng.standard_normal(dim).astype(np.float32)
                    step["tokenLogprobs"] = -rng.random(24).astype(np.float32)
                steps.append(step)
            trajs.append({"id": f"it{it}-g{g}-t{t}", "outcome": "success" if t % 3 == 0 else "failure", "steps": steps})
        groups.append({"id": f"it{it}-g{g}", "trajectories": trajs})
    return groups


def batches(dim: int, steps: int) -> list:
    rng = np.random.default_rng(dim)
    out, total = [], 0
    while total < steps:
        groups = iteration(len(out), dim, rng)
        total += sum(len(t["steps"]) for g in groups for t in g["trajectories"])
        out.append(groups)
    return out


def through_client(client: creditlab.Client, data: list) -> dict:
    run = client.create_run(name="bench python client", env="synthetic", method="grpo")
    blocked = 0.0
    t0 = time.perf_counter()
    for it, groups in enumerate(data):
        t = time.perf_counter()
        run.log_rollouts(it, groups)
        blocked += time.perf_counter() - t
    run.flush(require_sent=True)
    seconds = time.perf_counter() - t0
    run.finish()
    return {"seconds": seconds, "blocked": blocked, "requests": run.stats.requests, "bytes": run.stats.bytes, "events": run.stats.events}


def raw_http(url: str, key: str, compact: bool, columnar: bool, data: list, max_event_bytes: int, max_request_bytes: int) -> dict:
    """The same events, encoded beforehand, posted back to back on one connection: ingest alone."""
    client = creditlab.Client(url, key, compact_floats=compact, columnar_steps=columnar)
    run_id = client.create_run(name="bench raw http", env="synthetic", method="grpo").id
    encoder = StepEncoder(compact)
    bodies, body, size = [], [], 0
    for it, groups in enumerate(data):
        for line in batch_lines(it, groups, encoder, max_event_bytes, columnar):
            if body and size + len(line) > max_request_bytes:
                bodies.append(b"".join(body))
                body, size = [], 0
            body.append(line)
            size += len(line)
    bodies.append(b"".join(body))
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=3600)
    headers = {"content-type": "application/x-ndjson", "authorization": f"Bearer {key}"}
    t0 = time.perf_counter()
    for b in bodies:
        conn.request("POST", f"/v1/runs/{run_id}/events", body=b, headers=headers)
        res = conn.getresponse()
        answer = res.read()
        if res.status != 200:
            raise creditlab.ApiError(res.status, json.loads(answer))
    return {"seconds": time.perf_counter() - t0, "requests": len(bodies), "bytes": sum(map(len, bodies))}


def main() -> None:
    url, key, *scenarios = sys.argv[1:]
    for scenario in scenarios:
        label, dim, steps = scenario.split(":")
        data = batches(int(dim), int(steps))
        n = sum(len(t["steps"]) for groups in data for g in groups for t in g["trajectories"])
        # (compact floats, columnar steps): columns carry vectors as base64 only; without vectors the first is moot.
        forms = ((False, False), (True, False), (True, True)) if int(dim) else ((True, False), (True, True))
        for compact, columnar in forms:
            result = {"label": label, "dim": int(dim), "steps": n, "compact": compact, "columnar": columnar}
            try:
                client = creditlab.Client(url, key, compact_floats=compact, columnar_steps=columnar)
                result["client"] = through_client(client, data)
                result["raw"] = raw_http(url, key, compact, columnar, data, client.max_event_bytes, client.max_request_bytes)
            except creditlab.ApiError as e:
                result["refused"] = str(e)[:300]
                encoder = StepEncoder(compact)
                result["bytesPerStep"] = sum(len(x) for it, g in enumerate(data) for x in batch_lines(it, g, encoder, 8 << 20, columnar)) / n
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
