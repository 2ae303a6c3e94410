"""
`rollouts.appended` with its steps as columns (docs/events.md, "Columnar steps"): each text once, numbers as
base64 little-endian float64, vectors as base64 float32, and each trajectory's `stepCount`. The server checks
and stores it column by column, without an object per step. Steps are checked here as for the row form, with
the same paths; a step's fields beyond rollout-batch/v1 go in the `extra` column, as the row form's step would
have them (servers before 2026-12-05 refuse that column).
"""

from __future__ import annotations

import array
import base64
import json
import re
import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .arrays import HAS_NUMPY, np
from .errors import ApiError, InvalidInput
from . import events as ev

_FIELDS = frozenset(
    ("state", "action", "reward", "nll", "value", "nextValue", "nextState", "embedding", "tokenLogprobs")
)
_OPTIONAL_NUMBERS = ("nll", "value", "nextValue")
_VECTORS = ("tokenLogprobs", "embedding")
_NAN = float("nan")
# Bytes a step adds to an event at most apart from its texts, vectors and extra fields: four base64 float64
# (11 each), three indices with commas (12 each) and three nulls with commas (vectors, extra).
_STEP_BYTES = 4 * 11 + 3 * 12 + 3 * 5
_ENVELOPE = 300  # the envelope, the column names and their punctuation (270 with every column)


def f64_base64(values: List[float]) -> str:
    """base64 of little-endian float64 (exact)."""
    if HAS_NUMPY:
        return base64.b64encode(np.asarray(values, dtype="<f8").tobytes()).decode("ascii")
    arr = array.array("d", values)
    if sys.byteorder == "big":
        arr.byteswap()
    return base64.b64encode(arr.tobytes()).decode("ascii")


class _ColumnarEvent:
    """One columnar `rollouts.appended` being filled, with an upper bound of its size."""

    def __init__(self, iteration: int):
        self.iteration = iteration
        self.groups: List[list] = []  # [group id, [[trajectory head, step count]]]
        self.texts: Dict[str, int] = {}
        names = ("state", "action", "reward", "nextState", *_OPTIONAL_NUMBERS, *_VECTORS)
        self.columns: Dict[str, list] = {name: [] for name in names}
        self.extra: List[Optional[str]] = []  # each step's fields beyond v1 as JSON, or None
        self.size = _ENVELOPE
        self.steps = 0

    def open_group(self, gid: str) -> None:
        self.groups.append([gid, []])
        self.size += len(ev._dumps(gid)) + 30  # as written: escapes can make an id several times longer

    def open_trajectory(self, head: dict) -> None:
        self.groups[-1][1].append([head, 0])
        self.size += len(ev._dumps(head)) + 16

    def text(self, value: str) -> int:
        index = self.texts.get(value)
        if index is None:
            index = self.texts[value] = len(self.texts)
        return index

    def cost(self, step: dict, extra: Optional[str]) -> int:
        """What the step would add to the event at most."""
        new = {step[n] for n in ("state", "action", "nextState") if n in step and step[n] not in self.texts}
        texts = sum(len(ev._dumps(text)) + 1 for text in new)
        extra_bytes = len(extra) + 1 if extra is not None else 0
        return _STEP_BYTES + texts + extra_bytes + sum(len(step[n]) + 3 for n in _VECTORS if n in step)

    def add_step(self, step: dict, extra: Optional[str], cost: int) -> None:
        c = self.columns
        c["state"].append(self.text(step["state"]))
        c["action"].append(self.text(step["action"]))
        c["reward"].append(step["reward"])
        c["nextState"].append(self.text(step["nextState"]) if "nextState" in step else -1)
        for name in _OPTIONAL_NUMBERS:
            c[name].append(step.get(name, _NAN))
        for name in _VECTORS:
            vector = step.get(name)
            c[name].append(vector)
        self.extra.append(extra)
        self.size += cost
        self.groups[-1][1][-1][1] += 1
        self.steps += 1

    def render(self) -> bytes:
        c = self.columns
        columns: Dict[str, Any] = {
            "texts": list(self.texts),
            "state": c["state"],
            "action": c["action"],
            "reward": f64_base64(c["reward"]),
        }
        for name in _OPTIONAL_NUMBERS:
            if any(x == x for x in c[name]):  # a number that is not NaN: some step has one
                columns[name] = f64_base64(c[name])
        if any(i >= 0 for i in c["nextState"]):
            columns["nextState"] = c["nextState"]
        groups = [
            {"id": gid, "trajectories": [{**head, "stepCount": n} for head, n in trajs]} for gid, trajs in self.groups
        ]
        data = {"iteration": self.iteration, "groups": groups, "columns": columns}
        text = ev._dumps(data)  # ends with the columns' and the data's closing braces
        # The extra fields as the JSON they were sized by (serialised once, at the check), then the vector
        # columns last, their base64 appended as is: json.dumps would scan every character of it for
        # escapes, which made 4096-d embeddings a fifth slower to encode than the row form (that appends
        # them the same way).
        spliced = [_json_list("extra", self.extra)] if any(x is not None for x in self.extra) else []
        spliced += [_base64_list(name, c[name]) for name in _VECTORS if any(v is not None for v in c[name])]
        if spliced:
            text = text[:-2] + "".join(spliced) + "}}"
        return ev._line("rollouts.appended", text)


def columnar_lines(iteration: int, groups: Any, encoder: ev.StepEncoder, max_event_bytes: int) -> List[bytes]:
    """Columnar `rollouts.appended` events for a batch, split by size."""
    groups = ev.batch_groups(groups)
    lines: List[bytes] = []
    event = _ColumnarEvent(iteration)
    for gi, group in enumerate(groups):
        where = f"groups[{gi}]"
        gid = ev.group_id(group, where)
        event.open_group(gid)
        for ti, traj in enumerate(ev._list(group.get("trajectories"), f"{where}.trajectories")):
            head = ev.trajectory_head(traj, f"{where}.trajectories[{ti}]")
            event.open_trajectory(head)
            for si, step in enumerate(ev._list(traj.get("steps"), f"{where}.trajectories[{ti}].steps")):
                checked, extra = _checked(step, encoder, f"{where}.trajectories[{ti}].steps[{si}]")
                cost = event.cost(checked, extra)
                if event.steps and event.size + cost > max_event_bytes:
                    lines.append(event.render())
                    event = _ColumnarEvent(iteration)  # the server continues the group and the trajectory
                    event.open_group(gid)
                    event.open_trajectory(head)
                    cost = event.cost(checked, extra)
                event.add_step(checked, extra, cost)
    if event.groups:
        lines.append(event.render())
    return lines


def batch_lines(
    iteration: int, groups: Any, encoder: ev.StepEncoder, max_event_bytes: int, columnar: bool
) -> List[bytes]:
    """A `log_rollouts` batch's NDJSON lines: as columns if asked, else as rows."""
    if columnar:
        return columnar_lines(iteration, groups, encoder, max_event_bytes)
    return ev.rollout_lines(iteration, groups, encoder, max_event_bytes)


def _base64_list(name: str, items: List[Optional[str]]) -> str:
    """`,"name":[...]`: base64 texts (which need no escaping) and nulls, as JSON."""
    return f',"{name}":[' + ",".join("null" if v is None else '"' + v + '"' for v in items) + "]"


def _json_list(name: str, items: List[Optional[str]]) -> str:
    """`,"name":[...]`: JSON texts and nulls."""
    return f',"{name}":[' + ",".join("null" if v is None else v for v in items) + "]"


def _checked(step: Any, encoder: ev.StepEncoder, where: str) -> Tuple[dict, Optional[str]]:
    """
    The step checked as for the row form, its vectors as base64 float32; and its fields beyond v1 as JSON (None
    without any), in its own key order, serialised as the row form serialises them (so a value JSON cannot
    hold fails the same way).
    """
    if not isinstance(step, Mapping):
        raise InvalidInput(f"{where}: a step must be a mapping (state, action, reward, ...), got {type(step).__name__}")
    out: dict = {}
    extra: dict = {}
    for name, value in step.items():
        if value is None:
            continue
        path = f"{where}.{name}"
        if name in ("state", "action", "nextState"):
            if not isinstance(value, str):
                raise InvalidInput(f"{path}: must be a string, got {type(value).__name__}")
            out[name] = ev.storable(value, path)
        elif name in _VECTORS:
            out[name] = encoder.vector_base64(name, value, path)
        elif name in _FIELDS:
            out[name] = float(ev.number(value, path))
        else:
            extra[name] = value  # sent as it is, as in the row form
    for required in ("state", "action", "reward"):
        if required not in out:
            raise InvalidInput(f"{where}.{required}: required field is missing")
    return out, ev._dumps(extra) if extra else None


# How a server older than the columnar form (before 2026-12-01) refuses a trajectory sent as columns: it reads
# one with no steps (the same words as a trajectory sent with neither steps nor columns).
_STEPS_MISSING = re.compile(r"data\.groups\[\d+\]\.trajectories\[\d+\]\.steps")
_STEPS_MISSING_REASON = "required array is missing"


# How a server older than the `extra` column (before 2026-12-05) refuses one: as a column it does not know.
_EXTRA_PATH = "data.columns.extra"


def older_server_advice(error: ApiError, lines: Sequence[bytes]) -> ApiError:
    """The refusal `error` of a request of `lines`, with advice if it is that of a server older than columnar
    steps, or than their `extra` column, refusing one: nothing in the server's own message says why."""
    if error.status != 400 or not isinstance(error.line, int) or not isinstance(error.path, str):
        return error
    steps_missing = _STEPS_MISSING.fullmatch(error.path) and error.reason == _STEPS_MISSING_REASON
    extra_unknown = error.path == _EXTRA_PATH and str(error.reason).startswith("unknown column")
    if not (steps_missing or extra_unknown):
        return error
    if not 1 <= error.line <= len(lines):
        return error
    try:
        data = json.loads(lines[error.line - 1]).get("data")
    except (ValueError, AttributeError):
        return error
    if not isinstance(data, dict) or "columns" not in data:
        return error
    if extra_unknown and not (isinstance(data["columns"], dict) and "extra" in data["columns"]):
        return error
    what = (
        "its steps' fields beyond rollout-batch/v1 in the extra column, which servers before 2026-12-05"
        if extra_unknown
        else "its steps as columns, which servers before 2026-12-01"
    )
    return error.with_advice(
        f"the event on this line sends {what} do not read: "
        "update the server, or send steps as objects with Client(columnar_steps=False) or "
        "CREDITLAB_COLUMNAR_STEPS=0 in the environment (events already spooled as columns need the newer server)"
    )
