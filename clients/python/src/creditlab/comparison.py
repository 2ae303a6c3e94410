"""`client.compare`: several estimators on the same stored rollouts, as tables."""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Mapping, Optional

from .errors import GraphQLError, InvalidInput
from .tables import table

_COMPARE = """
query($runId: ID!, $methods: [MethodInput!]!, $iterations: [Int!]) {
  compare(runId: $runId, methods: $methods, iterations: $iterations) {
    runId iterations stepCount
    methods { method params advantageSetId rates
              summary { mean std min max p05 p25 p50 p75 p95 fractionPositive fractionZero } }
    pairs { a b %s pearson spearman signAgreement }
    againstEpisode { method %s against goodInFailed badInSucceeded }
  }
}"""
_POSITIONS = ("aIndex bIndex", "methodIndex")

_ROWS = """
query($runId: ID!, $methods: [MethodInput!]!, $iterations: [Int!], $after: String) {
  compare(runId: $runId, methods: $methods, iterations: $iterations) {
    rows(first: 1000, after: $after) {
      nodes { iteration groupId trajectoryId stepIndex state action reward advantages }
      pageInfo { endCursor hasNextPage }
    }
  }
}"""


def method_inputs(methods: Iterable[Any]) -> List[Dict[str, Any]]:
    """`"gigpo"`, `("gigpo", {"gamma": 0.9})` or `{"name": ..., "params": ...}` → GraphQL MethodInput."""
    if isinstance(methods, (str, Mapping)):
        methods = [methods]
    out = []
    for k, m in enumerate(methods):
        if isinstance(m, str):
            out.append({"name": m, "params": {}})
        elif isinstance(m, Mapping) and isinstance(m.get("name"), str):
            out.append({"name": m["name"], "params": dict(m.get("params") or {})})
        elif isinstance(m, (tuple, list)) and len(m) == 2 and isinstance(m[0], str):
            out.append({"name": m[0], "params": dict(m[1] or {})})
        else:
            raise InvalidInput(f'methods[{k}]: expected "name", (name, params) or {{"name", "params"}}, got {m!r}')
    if not out:
        raise InvalidInput("methods: at least one method is needed")
    return out


def label(method: Mapping[str, Any]) -> str:
    """A column name for a method: its name, with its parameters when it has any."""
    params = method.get("params") or {}
    return method["name"] if not params else f'{method["name"]} {json.dumps(params, sort_keys=True, separators=(",", ":"))}'


class Comparison:
    """
    `methods`: one row per method (its advantage set, resolved parameters, summary, method-specific rates);
    `pairs`: Pearson, Spearman and sign agreement per pair; `against_episode`: steps whose sign differs
    from the episode-level (GRPO) sign; `steps()`: every step with one column per method. Tables are pandas
    DataFrames when pandas is installed, else lists of dicts; `raw` is the GraphQL answer.
    """

    def __init__(self, client, run_id: str, methods: List[Dict[str, Any]], iterations: Optional[List[int]], raw: dict):
        self._client = client
        self._args = {"runId": run_id, "methods": methods, "iterations": iterations}
        self.raw = raw
        self.run_id = run_id
        self.step_count: int = raw["stepCount"]
        self.iterations: List[int] = raw["iterations"]
        self.labels = [label(m) for m in methods]
        self.methods = table(
            [
                {"label": lab, "method": m["method"], "params": m["params"], "advantageSetId": m["advantageSetId"],
                 **m["summary"], "rates": m["rates"]}
                for lab, m in zip(self.labels, raw["methods"])
            ]
        )
        # The server names a method compared under several parameter sets "gigpo#2"; the labels name each
        # side as the methods table and the steps' columns do, from the positions the server gives.
        self.pairs = table(
            [
                {**p, "a_label": self.labels[p["aIndex"]], "b_label": self.labels[p["bIndex"]]}
                for p in raw["pairs"]
            ]
        )
        self.against_episode = table(
            [{**a, "label": self.labels[a["methodIndex"]]} for a in raw["againstEpisode"]]
        )

    @staticmethod
    def fetch(client, run_id: str, methods: List[Dict[str, Any]], iterations: Optional[List[int]]) -> "Comparison":
        variables = {"runId": run_id, "methods": methods, "iterations": iterations}
        try:
            raw = client.graphql(_COMPARE % _POSITIONS, variables)["compare"]
        except GraphQLError as e:
            if 'field "aIndex"' not in str(e):
                raise
            # A server older than the sides' positions: read them from its names.
            raw = _with_positions(client.graphql(_COMPARE % ("", ""), variables)["compare"])
        return Comparison(client, run_id, methods, iterations, raw)

    def steps(self):
        """Every compared step in canonical order, with one advantage column per method (pages of 1,000)."""
        rows: List[Dict[str, Any]] = []
        after = None
        while True:
            page = self._client.graphql(_ROWS, {**self._args, "after": after})["compare"]["rows"]
            for node in page["nodes"]:
                advantages = node.pop("advantages")
                rows.append({**node, **dict(zip(self.labels, advantages))})
            if not page["pageInfo"]["hasNextPage"]:
                return table(rows)
            after = page["pageInfo"]["endCursor"]


def _with_positions(raw: dict) -> dict:
    """Positions from the names older servers give (a method, or "gigpo#2" for one compared several times)."""
    names = [m["method"] for m in raw["methods"]]

    def position(name: str) -> int:
        # Older servers name each compared method in `methods` as its pairs do, so the name is found there.
        return names.index(name)

    return {
        **raw,
        "pairs": [{**p, "aIndex": position(p["a"]), "bIndex": position(p["b"])} for p in raw["pairs"]],
        "againstEpisode": [{**a, "methodIndex": position(a["method"])} for a in raw["againstEpisode"]],
    }
