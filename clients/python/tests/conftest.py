"""
Shared fixtures. The tests run against a real server: CREDITLAB_URL and CREDITLAB_API_KEY (an admin key)
name it; test/python-client.e2e.spec.ts starts one and runs this suite with them set.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

import creditlab

ROOT = Path(__file__).resolve().parents[3]
CONFORMANCE = ROOT / "test" / "fixtures" / "conformance"


def cli_env(**extra: str) -> dict:
    """The environment for `python -m creditlab` in a subprocess: this package importable, plus `extra`."""
    src = str(Path(creditlab.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


def conformance_fixtures(kind: str = "*") -> List[Path]:
    return sorted(CONFORMANCE.glob(f"{kind}/*.json"))


def load(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.fixture(scope="session")
def server() -> Tuple[str, str]:
    url, key = os.environ.get("CREDITLAB_URL"), os.environ.get("CREDITLAB_API_KEY")
    if not url or not key:
        pytest.fail("set CREDITLAB_URL and CREDITLAB_API_KEY (an admin key) to a running server; npm test does")
    return url, key


@pytest.fixture
def client(server, tmp_path) -> Iterator[creditlab.Client]:
    c = creditlab.Client(*server, spool_dir=str(tmp_path / "spool"))
    yield c
    c.close()


def events_of(client: creditlab.Client, run_id: str, types: List[str]) -> List[dict]:
    """Every event of the given types (the log's words: "rollouts.appended") in the run's stream,
    through GraphQL page by page; each event's type comes back as the log's word too."""
    query = """query($id: ID!, $types: [EventType!], $after: String) { run(id: $id) {
      events(types: $types, after: $after, first: 1000) { nodes { seq id type data stepCount } pageInfo { hasNextPage endCursor } } } }"""
    enum_names = [t.upper().replace(".", "_") for t in types]  # GraphQL's EventType: ROLLOUTS_APPENDED
    out: List[dict] = []
    after = None
    while True:
        page = client.graphql(query, {"id": run_id, "types": enum_names, "after": after})["run"]["events"]
        for node in page["nodes"]:
            node["type"] = node["type"].lower().replace("_", ".")
        out.extend(page["nodes"])
        if not page["pageInfo"]["hasNextPage"]:
            return out
        after = page["pageInfo"]["endCursor"]


def run_info(client: creditlab.Client, run_id: str) -> dict:
    return client.graphql(
        "query($id: ID!) { run(id: $id) { status summary lastSeq iterations { index stepCount metrics evaluationSuccessRate } } }",
        {"id": run_id},
    )["run"]


def flat_expected(doc: dict) -> Tuple[List[float], List[tuple]]:
    values, index = [], []
    for g in doc["groups"]:
        for t in g["trajectories"]:
            values.extend(t["advantages"])
            index.extend((g["id"], t["id"], k) for k in range(len(t["advantages"])))
    return values, index


def assert_close(got, want, what: str) -> None:
    """Within 1e-4·(1+|want|), the conformance tolerance."""
    assert len(got) == len(want), f"{what}: {len(got)} values, expected {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        assert abs(float(g) - w) <= 1e-4 * (1 + abs(w)), f"{what}: value {k} is {g}, expected {w}"
