"""Every conformance fixture streamed through the client; its advantages fetched equal the expected ones."""

from __future__ import annotations

import pytest

from conftest import assert_close, conformance_fixtures, flat_expected, load


@pytest.mark.parametrize("path", conformance_fixtures(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_advantages_through_the_client(client, path):
    fixture = load(path)
    run = client.create_run(name=f"conformance {path.name}", env="fixtures", method="gigpo", tags=["python-client"])
    run.log_rollouts(0, fixture["batch"])
    for n, expected in enumerate(fixture["expected"]):
        values, index = run.advantages(0, expected["method"], expected["params"])
        want, want_index = flat_expected(expected)
        assert index == want_index
        assert str(values.dtype) == "float32"
        assert_close(values, want, f"{path.name} #{n} {expected['method']} {expected['params']}")
    run.finish()
    assert run.stats.accepted == run.stats.events  # nothing was stored twice, nothing lost
