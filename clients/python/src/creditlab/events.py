"""
Events as NDJSON lines: checked here (so a mistake raises at the `log_*` call that made it, naming the
field), given their id once (a retry or a later `sync` sends the very same bytes, which is what makes a
resend idempotent), and split so that no line exceeds the size the server accepts.

The payloads are those of libs/events/src/event-schemas.ts. Step-bearing events are assembled from steps
serialised one at a time, so splitting a batch costs nothing beyond serialising it once.
"""

from __future__ import annotations

import json
import math
import uuid
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Tuple

from .arrays import HAS_NUMPY, encode_f32, finite_floats, plain, to_list
from .errors import InvalidInput

OUTCOMES = ("success", "failure", "truncated")
_STEP_NUMBERS = ("reward", "nll", "value", "nextValue")
_STEP_ARRAYS = ("embedding", "tokenLogprobs")
_STEP_TEXTS = ("state", "action", "nextState")


def new_id() -> str:
    return str(uuid.uuid4())


def line(type_: str, data: Mapping[str, Any]) -> bytes:
    """One event with a fresh id, as an NDJSON line."""
    return _line(type_, _dumps(data))


def _line(type_: str, data_json: str) -> bytes:
    return f'{{"id":"{new_id()}","type":"{type_}","data":{data_json}}}\n'.encode("ascii")


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False, default=json_default)


def json_default(value: Any) -> Any:
    value = plain(value)
    if HAS_NUMPY and hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (int, float, str, bool, list, dict)) or value is None:
        return value
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


# ---- field checks ------------------------------------------------------------------------------


MAX_INT32 = 2**31 - 1  # the server stores iterations and step indexes as PostgreSQL integers


def iteration(value: Any, where: str = "iteration") -> int:
    value = plain(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT32:
        raise InvalidInput(f"{where}: must be an integer in [0, 2^31 - 1], got {value!r}")
    return value


def key(value: Any, where: str) -> str:
    """A group or trajectory id, or a metric name: a string of 1–512 characters, as the server takes
    them (it counts code points, as len() does); integers are turned into strings."""
    value = plain(value)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not 1 <= len(value) <= 512:
        shown = f"{value[:64]!r}… ({len(value)} characters)" if isinstance(value, str) and len(value) > 64 else repr(value)
        raise InvalidInput(f"{where}: must be a string of 1 to 512 characters, got {shown}")
    return storable(value, where)


def storable(value: str, where: str) -> str:
    """Text PostgreSQL can store: no NUL character, no lone surrogate (half of a UTF-16 pair)."""
    if "\x00" in value:
        raise InvalidInput(f"{where}: contains the NUL character (U+0000) at {value.index(chr(0))}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidInput(f"{where}: contains a lone surrogate at {e.start}") from None
    return value


def number(value: Any, where: str) -> float:
    value = plain(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInput(f"{where}: must be a finite number, got {value!r}")
    return value


def finite_json(value: Any, where: str) -> Any:
    """`value` (a config, params, a summary), refused naming the first NaN or infinity in it: JSON has neither."""
    def visit(v: Any, path: str) -> None:
        v = plain(v)
        if hasattr(v, "tolist"):  # a numpy array or scalar
            v = v.tolist()
        if isinstance(v, float) and not math.isfinite(v):
            raise InvalidInput(f"{path}: must be a finite number, got {v!r} (JSON has no NaN or infinity)")
        if isinstance(v, Mapping):
            for k, item in v.items():
                visit(item, f"{path}.{k}")
        elif isinstance(v, (list, tuple)):
            for i, item in enumerate(v):
                visit(item, f"{path}[{i}]")

    visit(value, where)
    return value


def outcome(value: Any, where: str) -> Optional[str]:
    if value is not None and value not in OUTCOMES:
        raise InvalidInput(f"{where}: must be one of {', '.join(OUTCOMES)}, got {value!r}")
    return value


# ---- steps -------------------------------------------------------------------------------------


class StepEncoder:
    """Checks a step and serialises it; remembers the run's embedding dimension (one per run)."""

    def __init__(self, compact: bool):
        self.compact = compact
        self.embedding_dim: Optional[int] = None

    def encode(self, step: Mapping[str, Any], where: str) -> str:
        if not isinstance(step, Mapping):
            raise InvalidInput(f"{where}: a step must be a mapping (state, action, reward, ...), got {type(step).__name__}")
        out = {}
        spliced = []  # base64 needs no JSON escaping: appended to the text as is, not scanned by json.dumps
        for name, value in step.items():
            if value is None:
                continue  # absent, as rollout-batch/v1 says (never null)
            path = f"{where}.{name}"
            if name in _STEP_TEXTS:
                if not isinstance(value, str):
                    raise InvalidInput(f"{path}: must be a string, got {type(value).__name__}")
                out[name] = storable(value, path)
            elif name in _STEP_NUMBERS:
                out[name] = number(value, path)
            elif name in _STEP_ARRAYS:
                floats = self._floats(name, value, path)
                if isinstance(floats, str):
                    spliced.append(f',"{name}":"{floats}"')
                else:
                    out[name] = floats
            else:
                out[name] = value
        for required in ("state", "action", "reward"):
            if required not in out:
                raise InvalidInput(f"{where}.{required}: required field is missing")
        text = _dumps(out)
        return text[:-1] + "".join(spliced) + "}" if spliced else text

    def _floats(self, name: str, value: Any, where: str):
        values = self._checked_floats(name, value, where)
        return encode_f32(values, where) if self.compact else to_list(values)

    def vector_base64(self, name: str, value: Any, where: str) -> str:
        """A step's embedding or token log-probs, checked, as base64 little-endian float32."""
        return encode_f32(self._checked_floats(name, value, where), where)

    def _checked_floats(self, name: str, value: Any, where: str) -> Sequence[float]:
        values = finite_floats(value, where)
        if name == "embedding":
            if len(values) == 0:
                raise InvalidInput(f"{where}: must have at least one dimension")
            if self.embedding_dim is None:
                self.embedding_dim = len(values)
            elif len(values) != self.embedding_dim:
                raise InvalidInput(
                    f"{where}: has {len(values)} dimensions, but this run's embeddings have {self.embedding_dim}"
                )
        return values


# ---- step-bearing events, split by size --------------------------------------------------------


# Bytes an event's envelope, a group and a trajectory add around their contents (upper bounds), so that
# the size of an event is known before it is rendered.
_ENVELOPE = 150  # {"id":"<uuid>","type":"rollouts.appended","data":{"iteration":<int>,"groups":[ ... ]}}\n
_GROUP = 28  # {"id":<id>,"trajectories":[ ... ]}, and a comma
_TRAJECTORY = 16  # <head>,"steps":[ ... ]}, and a comma


class _RolloutEvent:
    """One `rollouts.appended` event being filled: groups → trajectories → serialised steps."""

    def __init__(self, iteration_: int):
        self.iteration = iteration_
        self.groups: List[list] = []  # [group id JSON, [[trajectory head JSON, [step JSON...]]]]
        self.size = _ENVELOPE
        self.steps = 0

    def open_group(self, gid: str) -> None:
        self.groups.append([gid, []])
        self.size += len(gid) + _GROUP

    def open_trajectory(self, head: str) -> None:
        self.groups[-1][1].append([head, []])
        self.size += len(head) + _TRAJECTORY

    def add_step(self, text: str) -> None:
        self.groups[-1][1][-1][1].append(text)
        self.size += len(text) + 1
        self.steps += 1

    def split(self, carry: int) -> "Tuple[bytes, _RolloutEvent]":
        """
        This event rendered, and the next one, which continues the last group (carry ≥ 1) and its last
        trajectory (carry = 2): the server appends to both. A group or trajectory carried over while still
        empty here is left out here.
        """
        gid, trajs = self.groups[-1]
        head = trajs[-1][0] if trajs else None
        if carry == 2 and not trajs[-1][1]:
            trajs.pop()
        if carry >= 1 and not trajs:
            self.groups.pop()
        nxt = _RolloutEvent(self.iteration)
        if carry >= 1:
            nxt.open_group(gid)
        if carry == 2:
            nxt.open_trajectory(head)
        return self.render(), nxt

    def render(self) -> bytes:
        groups = ",".join(
            '{"id":' + gid + ',"trajectories":[' + ",".join(_trajectory(head, steps) for head, steps in trajs) + "]}"
            for gid, trajs in self.groups
        )
        return _line("rollouts.appended", '{"iteration":%d,"groups":[%s]}' % (self.iteration, groups))


def _trajectory(head: str, steps: List[str]) -> str:
    return head + ',"steps":[' + ",".join(steps) + "]}"


def rollout_lines(
    iteration_: int, groups: Any, encoder: StepEncoder, max_event_bytes: int
) -> List[bytes]:
    """`rollouts.appended` events for a batch (rollout-batch/v1 groups), as few as the size limit allows."""
    groups = batch_groups(groups)
    lines: List[bytes] = []
    event = _RolloutEvent(iteration_)

    def room(extra: int, carry: int) -> None:
        nonlocal event
        if event.steps and event.size + extra > max_event_bytes:
            line, event = event.split(carry)
            lines.append(line)

    for gi, group in enumerate(groups):
        where = f"groups[{gi}]"
        gid = _dumps(group_id(group, where))
        room(len(gid) + _GROUP, 0)
        event.open_group(gid)
        for ti, traj in enumerate(_list(group.get("trajectories"), f"{where}.trajectories")):
            twhere = f"{where}.trajectories[{ti}]"
            head = trajectory_head(traj, twhere)
            head_text = _dumps(head)[:-1]
            room(len(head_text) + _TRAJECTORY, 1)
            event.open_trajectory(head_text)
            for si, step in enumerate(_list(traj.get("steps"), f"{twhere}.steps")):
                text = encoder.encode(step, f"{twhere}.steps[{si}]")
                room(len(text) + 1, 2)
                event.add_step(text)
    if event.groups:
        lines.append(event.render())
    return lines


def batch_groups(groups: Any) -> Sequence:
    """The groups of a batch given as a list of groups or as a rollout-batch/v1 document."""
    if isinstance(groups, Mapping) and "groups" in groups:
        groups = groups["groups"]
    if not isinstance(groups, Sequence) or isinstance(groups, (str, bytes)):
        raise InvalidInput("groups: must be a list of groups (or a rollout-batch/v1 document)")
    return groups


def trajectory_head(traj: Any, where: str) -> dict:
    """A trajectory's id and outcome (if given), checked."""
    if not isinstance(traj, Mapping):
        raise InvalidInput(f"{where}: must be a mapping with id, outcome and steps")
    no_unknown_fields(traj, _TRAJECTORY_FIELDS, where)
    head = {"id": key(traj.get("id"), f"{where}.id")}
    if outcome(traj.get("outcome"), f"{where}.outcome"):
        head["outcome"] = traj["outcome"]
    return head


def steps_lines(
    iteration_: int,
    group_id: str,
    trajectory_id: str,
    first_step_index: int,
    steps: Iterable[Mapping[str, Any]],
    encoder: StepEncoder,
    max_event_bytes: int,
) -> List[bytes]:
    """`steps.appended` events for consecutive steps of one trajectory, split by size."""
    head = f'{{"iteration":{iteration_},"groupId":{_dumps(group_id)},"trajectoryId":{_dumps(trajectory_id)},'
    lines: List[bytes] = []
    batch: List[str] = []
    size, first = len(head) + _ENVELOPE, first_step_index
    for k, step in enumerate(steps):
        text = encoder.encode(step, f"steps[{k}]")
        if batch and size + len(text) > max_event_bytes:
            lines.append(_steps_line(head, first, batch))
            first += len(batch)
            batch, size = [], len(head) + _ENVELOPE
        batch.append(text)
        size += len(text) + 1
    if batch:
        lines.append(_steps_line(head, first, batch))
    if not lines:
        raise InvalidInput("steps: at least one step is needed")
    return lines


def _steps_line(head: str, first: int, steps: List[str]) -> bytes:
    return _line("steps.appended", head + '"firstStepIndex":%d,"steps":[%s]}' % (first, ",".join(steps)))


_GROUP_FIELDS = ("id", "trajectories")
_TRAJECTORY_FIELDS = ("id", "outcome", "steps")


def no_unknown_fields(value: Mapping, known: Sequence[str], where: str) -> None:
    """Refuses a field rollout-batch/v1 does not define (the server would): it would be lost, not sent."""
    for name in value:
        if name not in known:
            raise InvalidInput(f"{where}.{name}: unknown field; known: {', '.join(known)}")


def group_id(group: Any, where: str) -> str:
    """A group's id, checked, and the group checked for fields rollout-batch/v1 does not define."""
    if not isinstance(group, Mapping):
        raise InvalidInput(f"{where}: must be a mapping with id and trajectories")
    no_unknown_fields(group, _GROUP_FIELDS, where)
    return key(group.get("id"), f"{where}.id")


def _list(value: Any, where: str) -> Sequence:
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise InvalidInput(f"{where}: must be a list")
    return value
