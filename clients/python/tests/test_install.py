"""
The package installs offline on Debian's Python (standard library, setuptools and wheel from Debian, no
package index), its console script runs, and it works there without numpy: values come back as lists.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

DEBIAN_PYTHON = "/usr/bin/python3"
PACKAGE = Path(__file__).resolve().parents[1]


def run(cmd, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
    assert res.returncode == 0, f"{' '.join(map(str, cmd))} exited {res.returncode}:\n{res.stdout}\n{res.stderr}"
    return res


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    if not Path(DEBIAN_PYTHON).exists():
        pytest.fail(f"{DEBIAN_PYTHON} is missing: the offline install is checked with Debian's Python (apt-get install python3-venv python3-wheel)")
    tmp = tmp_path_factory.mktemp("install")
    source = tmp / "python"  # a copy, so the build leaves nothing in the working tree
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "tests"))
    env = tmp / "venv"
    run([DEBIAN_PYTHON, "-m", "venv", "--system-site-packages", str(env)])
    run([str(env / "bin" / "pip"), "install", "--no-build-isolation", "--no-index", str(source)])
    return env


def test_installs_offline_and_the_console_script_runs(venv):
    version = run([str(venv / "bin" / "python"), "-c", "import creditlab; print(creditlab.__version__)"], cwd="/")
    assert version.stdout.strip() == "0.1.0"
    helped = run([str(venv / "bin" / "creditlab"), "--help"], cwd="/")
    assert "sync" in helped.stdout and "upload spooled runs" in helped.stdout
    sync_help = run([str(venv / "bin" / "creditlab"), "sync", "--help"], cwd="/")
    assert "--url" in sync_help.stdout


def test_without_numpy_values_are_lists(venv, server, tmp_path):
    has_numpy = subprocess.run([str(venv / "bin" / "python"), "-c", "import numpy"], capture_output=True).returncode == 0
    batch = json.loads((ROOT / "examples" / "get-the-key.json").read_text())
    script = f"""
import json, creditlab
from creditlab.arrays import HAS_NUMPY
assert HAS_NUMPY == {has_numpy}
client = creditlab.Client({server[0]!r}, {server[1]!r}, spool_dir={str(tmp_path)!r})
with client.create_run(name="stdlib only", env="examples", method="gigpo") as run:
    run.log_rollouts(0, json.loads({json.dumps(batch)!r}))
    values, index = run.advantages(0, "gigpo")
    rows = creditlab.in_row_order(values, index, [(t, k) for (_, t, k) in reversed(index)])
print(json.dumps({{"type": type(values).__name__, "values": list(map(float, values)), "rows": list(map(float, rows)), "n": len(index)}}))
"""
    out = json.loads(run([str(venv / "bin" / "python"), "-c", script], cwd="/").stdout)
    assert out["n"] == sum(len(t["steps"]) for g in batch["groups"] for t in g["trajectories"])
    assert out["rows"] == out["values"][::-1]
    assert [round(v, 3) for v in out["values"][:3]] == [2.987, 0.787, 2.201]  # the README's GiGPO row
    if not has_numpy:
        assert out["type"] == "list"
