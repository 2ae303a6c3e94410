"""The W&B/MLflow-like surface against the server: runs, logging calls, finishing, reading back."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

import creditlab
from creditlab.comparison import Comparison
from conftest import assert_close, conformance_fixtures, events_of, flat_expected, load, run_info


def test_with_block_raising_marks_the_run_failed(client):
    with pytest.raises(ZeroDivisionError):
        with client.create_run(name="raises", env="fixtures", method="grpo") as run:
            run.log({"loss": 1.0}, iteration=0)
            1 / 0
    info = run_info(client, run.id)
    assert info["status"] == "FAILED"
    assert info["summary"] == {"error": "ZeroDivisionError: division by zero"}
    with client.create_run(name="fine", env="fixtures", method="grpo") as ok:
        ok.log({"loss": 1.0}, iteration=0)
    assert run_info(client, ok.id)["status"] == "COMPLETED"


LEFT_OPEN = """
import sys, creditlab
client = creditlab.Client(sys.argv[1], sys.argv[2], spool_dir=sys.argv[3])
run = client.create_run(name="left open", env="fixtures", method="grpo")
watched = client.run(sys.argv[4])  # another program's run, opened to read: not this program's to finish
print(run.id, flush=True)
run.log({"loss": 1.0}, iteration=0)
if sys.argv[5] == "raise":
    raise RuntimeError("diverged")
"""


@pytest.mark.parametrize("ending", ["return", "raise"])
def test_a_run_the_program_leaves_open_is_finished_at_exit(client, server, tmp_path, ending):
    """As W&B and MLflow do (verl-agent's fit() returns from inside its loop, past a finish() after it)."""
    import subprocess
    import sys

    from conftest import cli_env

    other = client.create_run(name="still training", env="fixtures", method="grpo")
    done = subprocess.run(
        [sys.executable, "-c", LEFT_OPEN, *server, str(tmp_path), other.id, ending],
        env=cli_env(), capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == (0 if ending == "return" else 1), done.stderr
    info = run_info(client, done.stdout.strip())
    if ending == "return":
        assert (info["status"], info["summary"]) == ("COMPLETED", None)
    else:
        assert "RuntimeError: diverged" in done.stderr  # the program's own report is kept
        assert (info["status"], info["summary"]) == ("FAILED", {"error": "RuntimeError: diverged"})
    assert info["iterations"][0]["metrics"] == {"loss": 1.0}
    assert run_info(client, other.id)["status"] == "RUNNING"
    other.finish()


def test_create_run_is_idempotent_by_id(client):
    run_id = str(uuid.uuid4())
    args = dict(name="idempotent", env="fixtures", method="gigpo", params={"gamma": 0.9}, tags=["a"], seed=3)
    first = client.create_run(id=run_id, **args)
    again = client.create_run(id=run_id, **args)
    assert first.id == again.id == run_id
    with pytest.raises(creditlab.ApiError) as refused:
        client.create_run(id=run_id, **{**args, "seed": 4})
    assert refused.value.status == 409


def test_step_by_step_logging_with_outcomes(client):
    run = client.create_run(name="steps", env="fixtures", method="grpo")
    for k in range(3):  # one step at a time, as a trainer streams them; indexes continue by themselves
        run.log_steps(0, "g0", "g0/t0", [{"state": f"s{k}", "action": "a", "reward": 0.0}])
    run.log_steps(0, "g0", "g0/t0", [{"state": "s3", "action": "b", "reward": 1.0}], outcome="success")
    run.log_steps(0, "g0", "g0/t1", [{"state": "s0", "action": "a", "reward": 0.0, "nll": 0.3}] * 2)
    run.finish_trajectory(0, "g0", "g0/t1", "failure")
    run.log_evaluation(0, 0.5, tasks=[{"task": "t1", "success": True}, {"task": "t2", "success": False}])
    values, index = run.advantages(0, "grpo")
    assert index == [("g0", "g0/t0", k) for k in range(4)] + [("g0", "g0/t1", 0), ("g0", "g0/t1", 1)]
    assert values[0] > 0 > values[4]
    trajs = client.graphql(
        'query($id: ID!) { run(id: $id) { groups(iteration: 0) { nodes { trajectories { id outcome outcomeGiven steps { index state } } } } } }',
        {"id": run.id},
    )["run"]["groups"]["nodes"][0]["trajectories"]
    assert [(t["id"], t["outcome"], [s["state"] for s in t["steps"]]) for t in trajs] == [
        ("g0/t0", "SUCCESS", ["s0", "s1", "s2", "s3"]),
        ("g0/t1", "FAILURE", ["s0", "s0"]),
    ]
    assert run_info(client, run.id)["iterations"][0]["evaluationSuccessRate"] == 0.5
    run.finish()


def test_advantages_record_one_used_event_per_call_and_read_only_records_none(client):
    fixture = load(conformance_fixtures("spec")[0])
    run = client.create_run(name="used", env="fixtures", method="gigpo")
    run.log_rollouts(2, fixture["batch"])
    expected = next(e for e in fixture["expected"] if e["method"] == "gaca")
    values, index = run.advantages(2, "gaca", expected["params"])
    assert_close(values, flat_expected(expected)[0], "gaca (online path)")
    used = events_of(client, run.id, ["advantages.used"])
    assert [(e["data"]["method"], e["data"]["iteration"]) for e in used] == [("gaca", 2)]

    ro_values, ro_index = run.advantages(2, "gaca", expected["params"], record=False)
    assert ro_index == index and np.array_equal(ro_values, values)
    assert len(events_of(client, run.id, ["advantages.used"])) == 1  # the read-only path records nothing
    run.finish()


def test_events_after_finish_are_refused_until_resumed(client):
    run = client.create_run(name="resumed", env="fixtures", method="grpo")
    run.log({"loss": 1.0}, iteration=0)
    run.finish()
    with pytest.raises(creditlab.CreditlabError, match="is finished"):
        run.log({"loss": 0.5}, iteration=1)
    run.resume("one more iteration")
    run.log({"loss": 0.5}, iteration=1)
    run.finish()
    assert [i["metrics"]["loss"] for i in run_info(client, run.id)["iterations"]] == [1.0, 0.5]

    other = client.run(run.id)  # another process opening the finished run, without resuming
    other.log({"loss": 0.25}, iteration=2)
    with pytest.raises(creditlab.ApiError) as refused:
        other.flush()
    assert refused.value.status == 409 and refused.value.error == "RUN_FINISHED"


def test_bad_input_raises_at_the_call_naming_the_field(client):
    run = client.create_run(name="bad input", env="fixtures", method="grpo")
    bad = [{"id": "g0", "trajectories": [{"id": "t0", "steps": [{"state": "s", "action": "a", "reward": float("nan")}]}]}]
    with pytest.raises(creditlab.InvalidInput, match=r"^groups\[0\]\.trajectories\[0\]\.steps\[0\]\.reward: must be a finite number, got nan$"):
        run.log_rollouts(0, bad)
    with pytest.raises(creditlab.InvalidInput, match=r"embedding\[1\]: must be a finite number"):
        run.log_steps(0, "g", "t", [{"state": "s", "action": "a", "reward": 0, "embedding": [1.0, float("inf")]}])
    with pytest.raises(creditlab.InvalidInput, match="success_rate: must be in \\[0, 1\\], got 1.5"):
        run.log_evaluation(0, 1.5)
    with pytest.raises(creditlab.InvalidInput, match=r"^metrics: a name: must be a string of 1 to 512 characters, got 'l{64}'… \(513 characters\)$"):
        run.log({"l" * 513: 1.0}, iteration=0)
    with pytest.raises(creditlab.InvalidInput, match="^metrics: a name: must be a string of 1 to 512 characters, got ''$"):
        run.log({"": 1.0}, iteration=0)
    run.finish()
    assert run.stats.logged == 1  # only run.finished


def test_compare_gives_tables_of_methods_pairs_and_steps(client):
    fixture = load(conformance_fixtures("spec")[0])
    run = client.create_run(name="compare", env="fixtures", method="gigpo")
    run.log_rollouts(0, fixture["batch"])
    run.finish()
    cmp = client.compare(run.id, ["grpo", ("gigpo", {"gamma": 0.9})])
    rows = cmp.methods if isinstance(cmp.methods, list) else cmp.methods.to_dict("records")
    assert [(r["label"], r["method"]) for r in rows] == [("grpo", "grpo"), ('gigpo {"gamma":0.9}', "gigpo")]
    steps = cmp.steps()
    steps = steps if isinstance(steps, list) else steps.to_dict("records")
    want = next(e for e in fixture["expected"] if e["method"] == "grpo" and e["params"]["normalize"] == "mean-std")
    assert_close([s["grpo"] for s in steps], flat_expected(want)[0], "compare rows, grpo column")
    assert len(steps) == cmp.step_count
    # One method under two parameter sets: the pairs name each side as the methods table does.
    twice = client.compare(run.id, ["grpo", ("gigpo", {"gamma": 0.9}), "gigpo"])
    pairs = twice.pairs if isinstance(twice.pairs, list) else twice.pairs.to_dict("records")
    assert [(p["a"], p["b"]) for p in pairs] == [("grpo", "gigpo#1"), ("grpo", "gigpo#2"), ("gigpo#1", "gigpo#2")]
    assert [(p["aIndex"], p["bIndex"]) for p in pairs] == [(0, 1), (0, 2), (1, 2)]
    assert [(p["a_label"], p["b_label"]) for p in pairs] == [
        ("grpo", 'gigpo {"gamma":0.9}'),
        ("grpo", "gigpo"),
        ('gigpo {"gamma":0.9}', "gigpo"),
    ]
    # A server older than the positions: the same labels, read from its names.
    class OlderServer:
        def graphql(self, query, variables=None):
            if "aIndex" in query:
                raise creditlab.GraphQLError([{"message": 'Cannot query field "aIndex" on type "MethodPair".'}])
            return client.graphql(query, variables)

    older = Comparison.fetch(OlderServer(), run.id, twice._args["methods"], None)
    assert records(older.pairs) == pairs
    assert records(older.against_episode) == records(twice.against_episode)
    credit = twice.against_episode if isinstance(twice.against_episode, list) else twice.against_episode.to_dict("records")
    assert [(c["method"], c["label"]) for c in credit] == [
        ("grpo", "grpo"),
        ("gigpo#1", 'gigpo {"gamma":0.9}'),
        ("gigpo#2", "gigpo"),
    ]


def test_a_refusal_before_the_body_is_read_is_reported_not_retried(client, server, tmp_path):
    """A read key's ingest request is refused (403) before the server reads its large body."""
    key = client.graphql('mutation { createApiKey(input: { role: read, project: "default" }) { key } }')["createApiKey"]["key"]
    run = client.create_run(name="read key", env="fixtures", method="grpo")
    reader = creditlab.Client(server[0], key, spool_dir=str(tmp_path), retry=creditlab.RetryPolicy(budget=30))
    other = reader.run(run.id)
    rng = np.random.default_rng(0)
    steps = [{"state": "s", "action": "a", "reward": 0.0, "embedding": rng.standard_normal(4096)} for _ in range(300)]
    other.log_rollouts(0, [{"id": "g", "trajectories": [{"id": "t", "steps": steps}]}])
    with pytest.raises(creditlab.ApiError) as refused:
        other.flush()
    assert refused.value.status == 403, refused.value
    assert other.stats.retries == 0
    run.finish()


def test_finish_raises_what_the_server_refused_in_the_background(client, server, tmp_path):
    key = client.graphql('mutation { createApiKey(input: { role: read, project: "default" }) { key } }')["createApiKey"]["key"]
    run = client.create_run(name="read key finish", env="fixtures", method="grpo")
    other = creditlab.Client(server[0], key, spool_dir=str(tmp_path)).run(run.id)
    other.log({"loss": 1.0}, iteration=0)
    with pytest.raises(creditlab.ApiError, match="403 FORBIDDEN"):
        other.finish()
    run.finish()


def records(table):
    return table if isinstance(table, list) else table.to_dict("records")


def test_runs_filter_walk_every_page_and_speak_in_wire_statuses(client):
    tag = f"listing-{uuid.uuid4()}"
    made = [client.create_run(name=f"Sweep {k}", env="fixtures", method=m, tags=[tag]) for k, m in
            enumerate(["grpo", "gigpo", "gigpo"])]
    made[0].finish("failed")
    assert [r["name"] for r in records(client.runs(tags=[tag], status="failed"))] == ["Sweep 0"]
    assert records(client.runs(tags=[tag], status="failed"))[0]["status"] == "failed"
    assert len(records(client.runs(tags=[tag], status=["running", "failed"]))) == 3
    assert [r["name"] for r in records(client.runs(tags=[tag], sort="name_asc", limit=2))] == ["Sweep 0", "Sweep 1"]
    assert [r["name"] for r in records(client.runs(tags=tag, methods="gigpo", sort="created_asc"))] == ["Sweep 1", "Sweep 2"]
    assert len(records(client.runs(tags=[tag], name_contains="sweep", limit=1000))) == 3
    # By the last value of a metric: highest first, a run that never logged it last.
    for run, rates in [(made[1], [0.9, 0.2]), (made[2], [0.7])]:
        for iteration, rate in enumerate(rates):
            run.log({"successRate": rate}, iteration=iteration)
        run.flush()
    by_success = client.runs(tags=[tag], sort="metric_desc", sort_metric="successRate")
    assert [r["name"] for r in records(by_success)] == ["Sweep 2", "Sweep 1", "Sweep 0"]
    with pytest.raises(creditlab.InvalidInput, match="sort_metric: sort='metric_desc' needs the metric"):
        client.runs(sort="metric_desc")
    with pytest.raises(creditlab.InvalidInput, match="sort_metric: goes with sort='metric_desc'"):
        client.runs(sort_metric="successRate")
    with pytest.raises(creditlab.InvalidInput, match="unknown filter 'stauts'"):
        client.runs(stauts="failed")
    with pytest.raises(creditlab.GraphQLError, match="RunStatus"):
        client.runs(status="done")


def test_export_gives_every_step_with_each_methods_advantages(client, tmp_path):
    fixture = load(conformance_fixtures("spec")[0])
    run = client.create_run(name="export", env="fixtures", method="grpo")
    run.log_rollouts(0, fixture["batch"])
    run.finish()
    rows = records(run.export(methods=["grpo"]))
    want = next(e for e in fixture["expected"] if e["method"] == "grpo" and e["params"]["normalize"] == "mean-std")
    values, index = flat_expected(want)
    assert [(r["group_id"], r["trajectory_id"], r["step_index"]) for r in rows] == index
    assert_close([r["adv:grpo"] for r in rows], values, "export, grpo column")
    path = run.export(iterations=[0], methods=["grpo"], path=str(tmp_path / "run.csv"))
    assert path.read_text().splitlines()[0].startswith("run_id,iteration,group_id")
    assert len(path.read_text().splitlines()) == len(rows) + 1
