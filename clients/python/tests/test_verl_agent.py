"""
The verl-agent adapter on row-shaped inputs built from the verl-agent fixtures, as verl-agent holds them:
one row per step, rows shuffled (as balance_batch leaves them), responses right-padded, the episode score
on each row's last response token, per-step rewards beside it. The token-level advantages come back in the
caller's row order, equal to the fixture's expected advantages on the response tokens and 0 on padding.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from conftest import conformance_fixtures, events_of, flat_expected, load
from creditlab import InvalidInput, ServerUnavailable
from creditlab.integrations.verl_agent import compute_advantages
from support import Proxy

RESPONSE_LENGTH = 12


def verl_rows(batch: dict, seed: int) -> dict:
    """The fixture's steps as shuffled verl-agent rows (plus, per row, the step it is, for checking)."""
    rows = []
    for g in batch["groups"]:
        for t in g["trajectories"]:
            score = sum(s["reward"] for s in t["steps"])
            for k, s in enumerate(t["steps"]):
                rows.append({"uid": g["id"], "traj_uid": t["id"], "step": k, "step_obj": s, "score": score, "outcome": t.get("outcome")})
    rng = random.Random(seed)
    rng.shuffle(rows)
    n = len(rows)
    mask = np.zeros((n, RESPONSE_LENGTH), dtype=np.int64)
    token_level_rewards = np.zeros((n, RESPONSE_LENGTH), dtype=np.float32)
    for i, r in enumerate(rows):
        valid = rng.randint(1, RESPONSE_LENGTH)  # right padding after the response
        mask[i, :valid] = 1
        token_level_rewards[i, valid - 1] = r["score"]
    return {
        "rows": rows,
        "response_mask": mask,
        "token_level_rewards": token_level_rewards,
        "uid": np.array([r["uid"] for r in rows], dtype=object),
        "traj_uid": np.array([r["traj_uid"] for r in rows], dtype=object),
        "anchor_obs": np.array([r["step_obj"]["state"] for r in rows], dtype=object),
        "rewards": np.array([r["step_obj"]["reward"] for r in rows], dtype=np.float32),
        "step_index": np.array([r["step"] for r in rows]),
        "actions": np.array([r["step_obj"]["action"] for r in rows], dtype=object),
        "nll": np.array([r["step_obj"]["nll"] for r in rows]),
        "embeddings": np.array([r["step_obj"]["embedding"] for r in rows], dtype=np.float32),
        "outcomes": np.array([r["outcome"] for r in rows], dtype=object),
    }


def expected_tokens(expected: dict, data: dict) -> np.ndarray:
    values, index = flat_expected(expected)
    by_step = {(tid, k): v for (_, tid, k), v in zip(index, values)}
    per_row = np.array([by_step[(r["traj_uid"], r["step"])] for r in data["rows"]])
    return per_row[:, None] * data["response_mask"]


def inputs(data: dict, **extra) -> dict:
    keys = ("token_level_rewards", "response_mask", "uid", "traj_uid", "anchor_obs", "rewards", "step_index", "actions", "outcomes")
    return {**{k: data[k] for k in keys}, **extra}


@pytest.mark.parametrize("path", conformance_fixtures("verl-agent"), ids=lambda p: p.name)
def test_token_level_advantages_in_the_callers_row_order(client, path):
    fixture = load(path)
    data = verl_rows(fixture["batch"], seed=len(path.name))
    run = client.create_run(name=f"verl-agent {path.name}", env="fixtures", method="gigpo")
    for it, expected in enumerate(fixture["expected"]):
        got = compute_advantages(run, it, expected["method"], expected["params"], **inputs(data))
        want = expected_tokens(expected, data)
        assert got.shape == want.shape and got.dtype == np.float32
        assert np.all(got[data["response_mask"] == 0] == 0), "padding must get 0"
        err = np.abs(got - want) / (1 + np.abs(want))
        assert err.max() <= 1e-4, f"#{it} {expected['method']} {expected['params']}: off by {err.max()}"
    run.finish()


def test_rows_copied_to_pad_the_batch_get_their_steps_advantage(client):
    """verl-agent's adjust_batch appends copies of random rows to make the batch divisible by the GPUs."""
    fixture = load(conformance_fixtures("verl-agent")[2])
    data = verl_rows(fixture["batch"], seed=7)
    copies = np.random.default_rng(0).choice(len(data["rows"]), 5, replace=False)
    padded = {k: (np.concatenate([v, v[copies]]) if isinstance(v, np.ndarray) else v + [v[i] for i in copies]) for k, v in data.items()}
    expected = fixture["expected"][7]
    run = client.create_run(name="verl-agent padded", env="fixtures", method="gigpo")
    got = compute_advantages(run, 0, expected["method"], expected["params"], **inputs(padded))
    want = expected_tokens(expected, padded)
    assert got.shape[0] == len(data["rows"]) + 5
    assert (np.abs(got - want) / (1 + np.abs(want))).max() <= 1e-4
    assert sum(e["stepCount"] for e in events_of(client, run.id, ["rollouts.appended"])) == len(data["rows"])
    run.finish()


def test_without_a_step_index_row_order_within_a_trajectory_is_step_order(client):
    fixture = load(conformance_fixtures("verl-agent")[0])
    data = verl_rows(fixture["batch"], seed=3)
    # Put rows back into step order inside each trajectory, keeping trajectories interleaved.
    order = sorted(range(len(data["rows"])), key=lambda i: (data["rows"][i]["step"], i))
    reordered = {k: (v[order] if isinstance(v, np.ndarray) else [v[i] for i in order]) for k, v in data.items()}
    expected = fixture["expected"][6]  # gigpo
    run = client.create_run(name="verl-agent row order", env="fixtures", method="gigpo")
    got = compute_advantages(run, 0, expected["method"], expected["params"], **inputs(reordered, step_index=None))
    want = expected_tokens(expected, reordered)
    assert (np.abs(got - want) / (1 + np.abs(want))).max() <= 1e-4
    run.finish()


def test_episode_score_alone_serves_episode_level_methods(client):
    """Without per-step rewards, each trajectory's score (its token_level_rewards) is its last step's reward."""
    fixture = load(conformance_fixtures("verl-agent")[1])
    data = verl_rows(fixture["batch"], seed=5)
    expected = next(e for e in fixture["expected"] if e["method"] == "grpo" and e["params"]["episodeStats"] == "trajectories")
    run = client.create_run(name="verl-agent scores only", env="fixtures", method="grpo")
    got = compute_advantages(run, 0, "grpo", expected["params"], **inputs(data, rewards=None))
    want = expected_tokens(expected, data)
    assert (np.abs(got - want) / (1 + np.abs(want))).max() <= 1e-4
    run.finish()


def test_a_batch_larger_than_the_line_limit_goes_as_several_events(server, tmp_path):
    """Embeddings and NLL (BiPACE, GACA) on a batch split into many rollouts.appended events."""
    import creditlab

    path = conformance_fixtures("spec")[1]
    fixture = load(path)
    data = verl_rows(fixture["batch"], seed=11)
    small = creditlab.Client(*server, spool_dir=str(tmp_path), max_event_bytes=16_000)
    run = small.create_run(name="verl-agent split", env="fixtures", method="bipace")
    for it, expected in enumerate(e for e in fixture["expected"] if e["method"] in ("bipace", "gaca")):
        got = compute_advantages(
            run, it, expected["method"], expected["params"], **inputs(data, nll=data["nll"], embeddings=data["embeddings"])
        )
        want = expected_tokens(expected, data)
        assert (np.abs(got - want) / (1 + np.abs(want))).max() <= 1e-4, f"{expected['method']} {expected['params']}"
    appended = events_of(small, run.id, ["rollouts.appended"])
    assert len(appended) > 2 * (it + 1)  # several events per iteration
    assert sum(e["stepCount"] for e in appended) == len(data["rows"]) * (it + 1)
    run.finish()
    small.close()


def test_bad_rows_are_refused_before_anything_is_sent(client):
    fixture = load(conformance_fixtures("verl-agent")[0])
    data = verl_rows(fixture["batch"], seed=1)
    run = client.create_run(name="verl-agent bad rows", env="fixtures", method="grpo")
    steps = data["step_index"].copy()
    steps[steps == 1] = 7
    with pytest.raises(InvalidInput, match=r"step_index: trajectory '.*' has steps \[0, 2, 3, 4, 5, 7\]"):
        compute_advantages(run, 0, "grpo", **inputs(data, step_index=steps))
    with pytest.raises(InvalidInput, match="rewards: has 3 rows, response_mask has"):
        compute_advantages(run, 0, "grpo", **inputs(data, rewards=[0.0, 1.0, 0.0]))
    run.flush()
    assert run.stats.events == 0
    run.finish()


def test_server_down_fails_fast_or_uses_the_fallback_with_a_warning(server, tmp_path):
    import creditlab

    fixture = load(conformance_fixtures("verl-agent")[0])
    data = verl_rows(fixture["batch"], seed=2)
    proxy = Proxy(server[0])
    client = creditlab.Client(proxy.url, server[1], spool_dir=str(tmp_path), retry=creditlab.RetryPolicy(budget=1.0))
    run = client.create_run(name="verl-agent server down", env="fixtures", method="grpo")
    proxy.down()
    with pytest.raises(ServerUnavailable, match="could not compute grpo advantages for iteration 0; pass fallback="):
        compute_advantages(run, 0, "grpo", **inputs(data))
    own = np.ones((len(data["rows"]), RESPONSE_LENGTH), dtype=np.float32)
    with pytest.warns(UserWarning, match="using the fallback estimator for iteration 1"):
        got = compute_advantages(run, 1, "grpo", fallback=lambda: own, **inputs(data))
    assert got is own
    proxy.up()
    run.finish()  # the spooled rollouts go up once the server is reachable again
    assert run.spool_folder is None and run.stats.spooled > 0


def test_rewards_in_an_object_array_as_verl_agent_holds_them(client):
    fixture = load(conformance_fixtures("verl-agent")[0])
    data = verl_rows(fixture["batch"], seed=4)
    expected = fixture["expected"][6]  # gigpo
    run = client.create_run(name="verl-agent object rewards", env="fixtures", method="gigpo")
    rewards = np.empty(len(data["rows"]), dtype=object)
    rewards[:] = [float(r) for r in data["rewards"]]  # torch_to_numpy(rewards, is_object=True)
    got = compute_advantages(run, 0, expected["method"], expected["params"], **inputs(data, rewards=rewards))
    want = expected_tokens(expected, data)
    assert (np.abs(got - want) / (1 + np.abs(want))).max() <= 1e-4
    rewards[3] = None
    with pytest.raises(InvalidInput, match=r"^rewards: must hold numbers, got a NoneType \(None\)$"):
        compute_advantages(run, 1, "grpo", **inputs(data, rewards=rewards))
    run.finish()


def test_a_retried_call_does_not_log_its_rows_again(client):
    from creditlab import ApiError

    fixture = load(conformance_fixtures("verl-agent")[0])
    data = verl_rows(fixture["batch"], seed=6)
    expected = fixture["expected"][6]  # gigpo
    run = client.create_run(name="verl-agent retried", env="fixtures", method="gigpo")
    # A wrong parameter is refused by the server once the rows are logged; the call is then retried.
    with pytest.raises(ApiError, match='unknown parameter "mode"'):
        compute_advantages(run, 0, "gigpo", {"mode": "mean_norm"}, **inputs(data))
    got = compute_advantages(run, 0, expected["method"], expected["params"], **inputs(data))
    want = expected_tokens(expected, data)
    assert (np.abs(got - want) / (1 + np.abs(want))).max() <= 1e-4
    run.flush(require_sent=True)
    assert sum(e["stepCount"] for e in events_of(client, run.id, ["rollouts.appended"])) == len(data["rows"])
    # Other rows for an iteration already logged are a mistake, said before anything is sent.
    other = verl_rows(load(conformance_fixtures("verl-agent")[1])["batch"], seed=6)
    with pytest.raises(InvalidInput, match=r"^iteration 0: this run already holds other rows for it"):
        compute_advantages(run, 0, "grpo", **inputs(other))
    run.finish()


def test_a_batch_without_a_field_the_adapter_reads_is_refused_naming_it(client):
    from types import SimpleNamespace

    from creditlab.integrations.verl_agent import apply_to_batch

    data = verl_rows(load(conformance_fixtures("verl-agent")[0])["batch"], seed=8)
    nt = {k: data[k] for k in ("uid", "traj_uid", "rewards")}  # no anchor_obs
    batch = {k: data[k] for k in ("token_level_rewards", "response_mask")}
    run = client.create_run(name="verl-agent missing field", env="fixtures", method="grpo")
    with pytest.raises(InvalidInput, match=r"^anchor_obs: not in data.non_tensor_batch$"):
        apply_to_batch(run, SimpleNamespace(batch=batch, non_tensor_batch=nt), 0, "grpo")
    with pytest.raises(InvalidInput, match=r"^old_log_probs: not in data.batch$"):
        apply_to_batch(run, SimpleNamespace(batch=batch, non_tensor_batch={**nt, "anchor_obs": data["anchor_obs"]}), 0, "gaca", use_old_log_probs=True)
    run.finish()


def test_log_probs_masked_out_may_be_minus_infinity_and_shapes_must_match_the_mask(client):
    fixture = load(conformance_fixtures("spec")[1])  # with NLL, and GACA's expected advantages
    data = verl_rows(fixture["batch"], seed=9)
    mask = data["response_mask"]
    # Each row's NLL spread over its response tokens; padding holds -inf, as a log-probability of 0 does.
    nll = np.asarray(data["nll"], dtype=np.float64)
    log_probs = np.where(mask > 0, -nll[:, None], -np.inf)
    expected = next(e for e in fixture["expected"] if e["method"] == "gaca")
    run = client.create_run(name="verl-agent log-probs", env="fixtures", method="gaca")
    got = compute_advantages(run, 0, "gaca", expected["params"], **inputs(data, old_log_probs=log_probs))
    want = expected_tokens(expected, data)
    assert (np.abs(got - want) / (1 + np.abs(want))).max() <= 1e-4
    with pytest.raises(InvalidInput, match=r"^old_log_probs: has shape \(\d+, 11\), response_mask has \(\d+, 12\)$"):
        compute_advantages(run, 1, "gaca", **inputs(data, old_log_probs=log_probs[:, :-1]))
    with pytest.raises(InvalidInput, match=r"^token_level_rewards: has shape \(\d+, 11\), response_mask has \(\d+, 12\)$"):
        compute_advantages(run, 1, "grpo", **inputs(data, rewards=None, token_level_rewards=data["token_level_rewards"][:, :-1]))
    run.finish()


def test_apply_to_batch_sets_advantages_and_returns_and_reads_outcomes_under_their_key(client):
    from types import SimpleNamespace

    from creditlab.integrations.verl_agent import apply_to_batch

    fixture = load(conformance_fixtures("verl-agent")[0])
    data = verl_rows(fixture["batch"], seed=12)
    expected = fixture["expected"][6]  # gigpo
    outcomes = np.array(["truncated" if r["traj_uid"] == data["rows"][0]["traj_uid"] else (r["outcome"] or "failure") for r in data["rows"]], dtype=object)
    nt = {k: data[k] for k in ("uid", "traj_uid", "anchor_obs", "rewards", "step_index", "actions")}
    batch = SimpleNamespace(
        batch={k: data[k] for k in ("token_level_rewards", "response_mask")},
        non_tensor_batch={**nt, "episode_outcome": outcomes},
    )
    run = client.create_run(name="verl-agent apply", env="fixtures", method="gigpo")
    out = apply_to_batch(run, batch, 0, expected["method"], expected["params"], step_index_key="step_index", actions_key="actions", outcomes_key="episode_outcome")
    assert out is batch and out.batch["returns"] is out.batch["advantages"]
    assert out.batch["advantages"].shape == data["response_mask"].shape
    run.flush(require_sent=True)
    truncated = client.graphql(
        'query($id: ID!) { run(id: $id) { groups(iteration: 0, first: 100) { nodes { trajectories { id outcome } } } } }',
        {"id": run.id},
    )["run"]["groups"]["nodes"]
    marked = {t["id"]: t["outcome"] for g in truncated for t in g["trajectories"]}
    assert marked[data["rows"][0]["traj_uid"]] == "TRUNCATED"
    run.finish()
