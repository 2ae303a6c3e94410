"""
Creditlab as the advantage estimator of a verl-agent trainer.

verl-agent keeps one batch row per step (one model turn) with the data its advantage computation reads:

- `batch['response_mask']` (rows × response length): 1 on the row's response tokens, 0 on padding;
- `batch['token_level_rewards']` (rows × response length): the episode score on the row's last response
  token (the environment's per-step rewards are `non_tensor_batch['rewards']`);
- `non_tensor_batch['uid']`: the task group of the row; `non_tensor_batch['traj_uid']`: its trajectory;
- `non_tensor_batch['anchor_obs']`: the observation the step was taken in, without the prompt's history.

Rows carry no step index: within a `traj_uid`, steps are in row order, unless `step_index` says otherwise
(pass it whenever rows may have been reordered or copied, as balance_batch and adjust_batch do; rows with
the same trajectory and step index are one step, sent once, and all of them get its advantage). The adapter builds rollout-batch/v1
groups from the rows (groups and trajectories in order of first appearance), streams them to the run (as
many `rollouts.appended` events as the line limit needs), asks the server for the method's advantages, and
returns them shaped like verl-agent's: rows × response length, the step's advantage on each of its response
tokens and 0 on padding, in the caller's row order.

Written from verl-agent's documented data layout and this project's format docs (docs/python.md).
"""

from __future__ import annotations

import hashlib
import logging
import warnings
import weakref
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from ..advantages import in_row_order
from ..errors import InvalidInput, ServerUnavailable

try:
    import numpy as np
except ImportError:  # verl-agent always has numpy; the rest of the client does not need it
    np = None  # type: ignore[assignment]

log = logging.getLogger("creditlab")

# Per run: the digest of the rows each iteration was logged with by this adapter. A call retried after an
# error (a wrong parameter, the server away) must not log its rows again: the server would append them to the
# same trajectories, and the advantages would come from twice the steps, matched to the first ones.
_logged_iterations: "weakref.WeakKeyDictionary[Any, Dict[int, str]]" = weakref.WeakKeyDictionary()


def compute_advantages(
    run,
    iteration: int,
    method: str,
    params: Optional[Mapping[str, Any]] = None,
    *,
    token_level_rewards: Any,
    response_mask: Any,
    uid: Any,
    traj_uid: Any,
    anchor_obs: Any,
    rewards: Any = None,
    step_index: Any = None,
    actions: Any = None,
    nll: Any = None,
    old_log_probs: Any = None,
    embeddings: Any = None,
    values: Any = None,
    outcomes: Any = None,
    fallback: Optional[Callable[[], Any]] = None,
):
    """
    Token-level advantages (rows × response length) of `method` with `params` for one batch of rows.

    rewards: per-row step reward (verl-agent's `non_tensor_batch['rewards']`). Without it, each
      trajectory's episode score (the sum of its last row's `token_level_rewards`) is its last step's
      reward and the other steps get 0, which is what episode-level methods need.
    step_index: per-row step index within its trajectory (default: row order within each `traj_uid`); rows
      with the same `traj_uid` and step index are copies of one step (adjust_batch pads batches so).
    actions: per-row canonical action text (default ""): methods that compare actions need it.
    nll / old_log_probs: per-row mean negative log-likelihood, or the rows × length log-probs it is the
      masked mean of (GACA needs one). embeddings: rows × d hidden states (BiPACE). values: per-row V(s) (PPO-GAE).
    outcomes: per-row "success" / "failure" / "truncated" of the row's trajectory (default: from the return).
    fallback: called (and its result returned, with a warning) when the server cannot be reached, e.g.
      verl-agent's own estimator for the methods it has; without it, ServerUnavailable is raised.

    The output is of the kind of `token_level_rewards`: a torch tensor on its device, or a numpy array.
    """
    if np is None:
        raise ImportError("creditlab.integrations.verl_agent needs numpy")
    mask = _rows(response_mask, "response_mask", ndim=2)
    n = mask.shape[0]
    rows = _RowBatch(n, uid, traj_uid, step_index)
    steps = _step_fields(
        rows, n, mask, token_level_rewards, anchor_obs, rewards, actions, nll, old_log_probs, embeddings, values
    )
    groups = rows.groups(steps, None if outcomes is None else _column(outcomes, "outcomes", n))
    logged = _logged_iterations.setdefault(run, {})
    digest = _digest(groups)
    if iteration not in logged:
        run.log_rollouts(iteration, groups)
        logged[iteration] = digest
    elif logged[iteration] != digest:
        raise InvalidInput(
            f"iteration {iteration}: this run already holds other rows for it, logged by an earlier call; "
            "each training step is its own iteration (the same rows again are a retry, and are not sent twice)"
        )
    try:
        adv, index = run.advantages(iteration, method, params)
    except ServerUnavailable as e:
        if fallback is None:
            raise ServerUnavailable(
                f"{e}. Creditlab could not compute {method} advantages for iteration {iteration}; "
                "pass fallback= to use another estimator meanwhile"
            ) from e
        warnings.warn(f"Creditlab unreachable ({e}); using the fallback estimator for iteration {iteration}")
        return fallback()
    per_row = np.asarray(in_row_order(adv, index, rows.keys()), dtype=np.float32)
    out = np.where(mask > 0, per_row[:, None], np.float32(0))
    return _like(out.astype(np.float32), token_level_rewards)


def step_index_by_row_order(traj_uid: Any):
    """
    Each row's step index within its trajectory, by row order: record it right after the rollout (where rows
    are in time order within each `traj_uid`), before balance_batch reorders rows or adjust_batch copies them.
    """
    seen: Dict[str, int] = {}
    out = []
    for t in _plain(traj_uid):
        k = seen.get(str(t), 0)
        out.append(k)
        seen[str(t)] = k + 1
    return np.asarray(out, dtype=np.int64) if np is not None else out


def apply_to_batch(
    run,
    data,
    iteration: int,
    method: str,
    params: Optional[Mapping[str, Any]] = None,
    *,
    step_index_key: Optional[str] = None,
    actions_key: Optional[str] = None,
    embeddings_key: Optional[str] = None,
    values_key: Optional[str] = None,
    outcomes_key: Optional[str] = None,
    use_old_log_probs: bool = False,
    fallback: Optional[Callable[[Any], Any]] = None,
):
    """
    The same for a verl `DataProto`: reads the fields above from `data.batch` / `data.non_tensor_batch`
    (the optional ones under the keys given: `outcomes_key` names per-row outcomes, e.g. to mark an
    episode cut by the step limit "truncated"),
    sets `data.batch['advantages']` and `data.batch['returns']` (equal, as verl-agent's outcome estimators
    set them) and returns `data`. `fallback(data)` is called instead when the server cannot be reached.
    """
    nt = data.non_tensor_batch
    batch = lambda key: _field(data.batch, key, "data.batch")  # noqa: E731
    rows = lambda key: _field(nt, key, "data.non_tensor_batch")  # noqa: E731
    optional = lambda key: None if key is None else (nt[key] if key in nt else _field(data.batch, key, "data.non_tensor_batch and data.batch"))  # noqa: E731
    try:
        adv = compute_advantages(
            run,
            iteration,
            method,
            params,
            token_level_rewards=batch("token_level_rewards"),
            response_mask=batch("response_mask"),
            uid=rows("uid"),
            traj_uid=rows("traj_uid"),
            anchor_obs=rows("anchor_obs"),
            rewards=nt.get("rewards"),
            step_index=optional(step_index_key),
            actions=optional(actions_key),
            embeddings=optional(embeddings_key),
            values=optional(values_key),
            outcomes=optional(outcomes_key),
            old_log_probs=batch("old_log_probs") if use_old_log_probs else None,
        )
    except ServerUnavailable as e:
        if fallback is None:
            raise
        warnings.warn(f"{e}; using the fallback estimator")
        return fallback(data)
    data.batch["advantages"] = adv
    data.batch["returns"] = adv
    return data


# ---- rows → rollout-batch/v1 -------------------------------------------------------------------


class _RowBatch:
    """Which (group, trajectory, step) each row is, and the canonical order of groups and trajectories."""

    def __init__(self, n: int, uid: Any, traj_uid: Any, step_index: Any):
        groups_of = [str(x) for x in _column(uid, "uid", n)]
        self.traj = [str(x) for x in _column(traj_uid, "traj_uid", n)]
        self.order: Dict[str, Dict[str, List[int]]] = {}  # group → trajectory → rows, by first appearance
        for i in range(n):
            trajs = self.order.setdefault(groups_of[i], {})
            if self.traj[i] not in trajs and any(self.traj[i] in t for t in self.order.values()):
                raise InvalidInput(f"traj_uid[{i}]: trajectory {self.traj[i]!r} appears under two uid groups")
            trajs.setdefault(self.traj[i], []).append(i)
        self.step = [0] * n
        if step_index is None:
            for trajs in self.order.values():
                for members in trajs.values():
                    for k, i in enumerate(members):
                        self.step[i] = k
        else:
            given = _column(step_index, "step_index", n)
            for i in range(n):
                self.step[i] = int(given[i])
            for trajs in self.order.values():
                for tid, members in trajs.items():
                    # Rows copied to pad the batch (verl-agent's adjust_batch) are the same step: sent once.
                    unique = {}
                    for i in sorted(members, key=lambda i: self.step[i]):
                        unique.setdefault(self.step[i], i)
                    members[:] = list(unique.values())
                    found = list(unique)
                    if found != list(range(len(found))):
                        raise InvalidInput(
                            f"step_index: trajectory {tid!r} has steps {found}; expected 0..{len(found) - 1}, each once"
                        )

    def keys(self) -> List[Tuple[str, int]]:
        return [(t, s) for t, s in zip(self.traj, self.step)]

    def last_rows(self) -> Dict[str, int]:
        return {tid: members[-1] for trajs in self.order.values() for tid, members in trajs.items()}

    def groups(self, steps: List[dict], outcomes: Any) -> List[dict]:
        out = []
        for gid, trajs in self.order.items():
            trajectories = []
            for tid, members in trajs.items():
                traj = {"id": tid, "steps": [steps[i] for i in members]}
                if outcomes is not None:
                    traj["outcome"] = str(outcomes[members[0]])
                trajectories.append(traj)
            out.append({"id": gid, "trajectories": trajectories})
        return out


def _step_fields(rows, n, mask, token_level_rewards, anchor_obs, rewards, actions, nll, old_log_probs, embeddings, values):
    obs = _column(anchor_obs, "anchor_obs", n)
    if rewards is not None:
        reward = _rows(rewards, "rewards", ndim=1, n=n).astype(np.float64)
    else:
        scores = _like_mask(token_level_rewards, "token_level_rewards", mask).astype(np.float64).sum(axis=1)
        reward = np.zeros(n)
        for tid, last in rows.last_rows().items():
            reward[last] = scores[last]
    if nll is None and old_log_probs is not None:
        lp = _like_mask(old_log_probs, "old_log_probs", mask).astype(np.float64)
        valid = (mask > 0).sum(axis=1)
        if (valid == 0).any():
            raise InvalidInput(f"response_mask: row {int(np.flatnonzero(valid == 0)[0])} has no response token")
        # Padding may hold -inf (a log-probability of 0): masked out, not multiplied by 0 (which gives NaN).
        nll = -np.where(mask > 0, lp, 0.0).sum(axis=1) / valid
    columns = {
        "action": None if actions is None else _column(actions, "actions", n),
        "nll": None if nll is None else _rows(nll, "nll", ndim=1, n=n),
        "embedding": None if embeddings is None else _rows(embeddings, "embeddings", ndim=2, n=n),
        "value": None if values is None else _rows(values, "values", ndim=1, n=n),
    }
    steps = []
    for i in range(n):
        step = {"state": _state_text(obs[i]), "action": "" if columns["action"] is None else str(columns["action"][i]),
                "reward": float(reward[i])}
        for name in ("nll", "value"):
            if columns[name] is not None:
                step[name] = float(columns[name][i])
        if columns["embedding"] is not None:
            step["embedding"] = columns["embedding"][i]
        steps.append(step)
    return steps


def _state_text(obs: Any) -> str:
    """Anchor observations are compared as text; a non-text observation (an image array) by a digest of its bytes."""
    if isinstance(obs, str):
        return obs
    if np is not None and isinstance(obs, np.ndarray):
        return f"sha256:{hashlib.sha256(np.ascontiguousarray(obs).tobytes()).hexdigest()}:{obs.shape}"
    return str(obs)


def _plain(x: Any):
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor
        return x.detach().cpu().numpy()
    return x


def _field(container: Any, key: str, where: str):
    """`container[key]`, or InvalidInput naming what is missing and where it was looked for."""
    try:
        return container[key]
    except KeyError:
        raise InvalidInput(f"{key}: not in {where}") from None


def _digest(groups: List[dict]) -> str:
    """A digest of the rollout-batch groups the rows make: the same rows give the same digest."""
    h = hashlib.sha256()
    for g in groups:
        h.update(repr(g["id"]).encode())
        for t in g["trajectories"]:
            h.update(repr((t["id"], t.get("outcome"), len(t["steps"]))).encode())
            for s in t["steps"]:
                h.update(repr((s["state"], s["action"], s["reward"], s.get("nll"), s.get("value"))).encode())
                if s.get("embedding") is not None:
                    h.update(np.ascontiguousarray(s["embedding"]).tobytes())
    return h.hexdigest()


def _rows(x: Any, name: str, ndim: int, n: Optional[int] = None):
    arr = np.asarray(_plain(x))
    if arr.dtype == object:
        # verl-agent keeps its per-step rewards in an object array (non_tensor_batch['rewards']). Checked
        # before converting: numpy would turn a None into NaN.
        for v in arr.ravel():
            if not isinstance(v, (int, float, np.number)):
                raise InvalidInput(f"{name}: must hold numbers, got a {type(v).__name__} ({v!r:.40})")
        arr = arr.astype(np.float64)
    if arr.ndim != ndim:
        raise InvalidInput(f"{name}: expected {ndim} dimension(s) (rows{' × length' if ndim == 2 else ''}), got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise InvalidInput(f"{name}: has {arr.shape[0]} rows, response_mask has {n}")
    if arr.dtype.kind not in "fiub":
        raise InvalidInput(f"{name}: must hold numbers, got dtype {arr.dtype}")
    return arr


def _like_mask(x: Any, name: str, mask):
    """A rows × response length array of the mask's shape."""
    arr = _rows(x, name, ndim=2, n=mask.shape[0])
    if arr.shape != mask.shape:
        raise InvalidInput(f"{name}: has shape {arr.shape}, response_mask has {mask.shape}")
    return arr


def _column(x: Any, name: str, n: int):
    x = _plain(x)
    if len(x) != n:
        raise InvalidInput(f"{name}: has {len(x)} rows, response_mask has {n}")
    return x


def _like(out, reference: Any):
    """Back in the caller's kind: a torch tensor on the reference's device, else numpy."""
    if hasattr(reference, "detach") and hasattr(reference, "device"):
        import torch

        return torch.as_tensor(out, device=reference.device)
    return out
