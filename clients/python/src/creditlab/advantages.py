"""Advantages back from the server: values in canonical step order, the step each belongs to, and row order."""

from __future__ import annotations

from typing import Any, Hashable, List, Sequence, Tuple

from .arrays import HAS_NUMPY, f32_array, np, plain
from .errors import InvalidInput

StepKey = Tuple[str, str, int]  # (group id, trajectory id, step index)


def from_document(doc: dict) -> Tuple[Any, List[StepKey]]:
    """An advantages/v1 document as (float32 values, [(group id, trajectory id, step index), ...])."""
    values: List[float] = []
    index: List[StepKey] = []
    for group in doc["groups"]:
        gid = group["id"]
        for traj in group["trajectories"]:
            tid = traj["id"]
            adv = traj["advantages"]
            values.extend(adv)
            index.extend((gid, tid, k) for k in range(len(adv)))
    return f32_array(values), index


def in_row_order(values: Any, index: Sequence[StepKey], rows: Sequence[Sequence[Hashable]]):
    """
    The advantage of each of the caller's rows, in the caller's order.

    `rows[i]` names row i's step as (trajectory id, step index) or (group id, trajectory id, step index);
    trajectory ids are unique within an iteration, so the group is only checked when given. A row naming a
    step the server has no advantage for raises InvalidInput naming the row. Numpy in, numpy out.
    """
    where = {}
    for k, (gid, tid, step) in enumerate(index):
        where[(tid, step)] = (k, gid)
    positions = []
    for i, row in enumerate(rows):
        row = tuple(plain(x) for x in row)
        tid, step = (str(row[1]), int(row[2])) if len(row) == 3 else (str(row[0]), int(row[1]))
        found = where.get((tid, step))
        if found is None or (len(row) == 3 and found[1] != str(row[0])):
            raise InvalidInput(f"rows[{i}]: no advantage for {row!r} in this iteration")
        positions.append(found[0])
    if HAS_NUMPY:
        return np.asarray(values, dtype=np.float32)[np.asarray(positions, dtype=np.int64)]
    return [values[p] for p in positions]
