"""
`rollouts.appended` with its steps as columns (docs/events.md, "Columnar steps"): each text once, numbers as
base64 little-endian float64, vectors as base64 float32, and each trajectory's `stepCount`. The server checks
and stores it column by column, without an object per step. Steps are checked here as for the row form, with
the same paths; a batch with fields beyond rollout-batch/v1 goes in the row form (`columnar_lines` gives None).
"""

from __future__ import annotations

import array
import base64
import json
import re
import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence

from .arrays import HAS_NUMPY, np
from .errors import ApiError, InvalidInput
from . import events as ev

_FIELDS = frozenset(
    ("state", "action", "reward", "nll", "value", "nextValue", "nextState", "embedding", "tokenLogprobs")
)
_OPTIONAL_NUMBERS = ("nll", "value", "nextValue")
_VECTORS = ("tokenLogprobs", "embedding")
_NAN = float("nan")
# Bytes a step adds to an event at most apart from its texts and vectors: four base64 float64 (11 each),
# three indices with commas (12 each) and two nulls.
_STEP_BYTES = 4 * 11 + 3 * 12 + 2 * 5
_ENVELOPE = 300  # the envelope, the column names and their punctuation


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

    def cost(self, step: dict) -> int:
        """What the step would add to the event at most."""
        new = {step[n] for n in ("state", "action", "nextState") if n in step and step[n] not in self.texts}
        texts = sum(len(ev._dumps(text)) + 1 for text in new)
        return _STEP_BYTES + texts + sum(len(step[n]) + 3 for n in _VECTORS if n in step)

    def add_step(self, step: dict, cost: int) -> None:
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
        # The vector columns last, their base64 appended as is: json.dumps would scan every character of
        # it for escapes, which made 4096-d embeddings a fifth slower to encode than the row form (that
        # appends them the same way).
        spliced = [_base64_list(name, c[name]) for name in _VECTORS if any(v is not None for v in c[name])]
        if spliced:
            text = text[:-2] + "".join(spliced) + "}}"
        return ev._line("rollouts.appended", text)


def columnar_lines(
    iteration: int, groups: Any, encoder: ev.StepEncoder, max_event_bytes: int
) -> Optional[List[bytes]]:
    """Columnar `rollouts.appended` events for a batch, split by size; None if a step has a field beyond v1."""
    groups = ev.batch_groups(groups)
    for group in groups:
        for traj in group.get("trajectories") or () if isinstance(group, Mapping) else ():
            for step in traj.get("steps") or () if isinstance(traj, Mapping) else ():
                if isinstance(step, Mapping) and any(k not in _FIELDS for k in step):
                    return None
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
                checked = _checked(step, encoder, f"{where}.trajectories[{ti}].steps[{si}]")
                cost = event.cost(checked)
                if event.steps and event.size + cost > max_event_bytes:
                    lines.append(event.render())
                    event = _ColumnarEvent(iteration)  # the server continues the group and the trajectory
                    event.open_group(gid)
                    event.open_trajectory(head)
                    cost = event.cost(checked)
                event.add_step(checked, cost)
    if event.groups:
        lines.append(event.render())
    return lines


def batch_lines(
    iteration: int, groups: Any, encoder: ev.StepEncoder, max_event_bytes: int, columnar: bool
) -> List[bytes]:
    """A `log_rollouts` batch's NDJSON lines: as columns if asked and they carry it, else as rows."""
    lines = columnar_lines(iteration, groups, encoder, max_event_bytes) if columnar else None
    return lines if lines is not None else ev.rollout_lines(iteration, groups, encoder, max_event_bytes)


def _base64_list(name: str, items: List[Optional[str]]) -> str:
    """`,"name":[...]`: base64 texts (which need no escaping) and nulls, as JSON."""
    return f',"{name}":[' + ",".join("null" if v is None else '"' + v + '"' for v in items) + "]"


def _checked(step: Any, encoder: ev.StepEncoder, where: str) -> dict:
    """The step checked as for the row form; vectors as base64 float32."""
    if not isinstance(step, Mapping):
        raise InvalidInput(f"{where}: a step must be a mapping (state, action, reward, ...), got {type(step).__name__}")
    out: dict = {}
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
        else:
            out[name] = float(ev.number(value, path))
    for required in ("state", "action", "reward"):
        if required not in out:
            raise InvalidInput(f"{where}.{required}: required field is missing")
    return out


# How a server older than the columnar form (before 2026-12-01) refuses a trajectory sent as columns: it reads
# one with no steps (the same words as a trajectory sent with neither steps nor columns).
_STEPS_MISSING = re.compile(r"data\.groups\[\d+\]\.trajectories\[\d+\]\.steps")
_STEPS_MISSING_REASON = "required array is missing"


def older_server_advice(error: ApiError, lines: Sequence[bytes]) -> ApiError:
    """The refusal `error` of a request of `lines`, with advice if it is that of a server older than columnar
    steps refusing one: nothing in the server's own message says why."""
    if error.status != 400 or not isinstance(error.line, int) or not isinstance(error.path, str):
        return error
    if not _STEPS_MISSING.fullmatch(error.path) or error.reason != _STEPS_MISSING_REASON:
        return error
    if not 1 <= error.line <= len(lines):
        return error
    try:
        data = json.loads(lines[error.line - 1]).get("data")
    except (ValueError, AttributeError):
        return error
    if not isinstance(data, dict) or "columns" not in data:
        return error
    return error.with_advice(
        "the event on this line sends its steps as columns, which servers before 2026-12-01 do not read: "
        "update the server, or send steps as objects with Client(columnar_steps=False) or "
        "CREDITLAB_COLUMNAR_STEPS=0 in the environment (events already spooled as columns need the newer server)"
    )
