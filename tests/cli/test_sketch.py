"""``ppdm sketch`` (anonymize by default, evaluate) and ``ppdm verify`` on sketch releases."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner

from ppdm_dask import TransactionArray
from ppdm_dask.cli import cli
from tests.release.helpers import flip_byte, manifest_of

BASE = ["--scheduler", "sync", "--no-progress"]


def run(*args):
    return CliRunner().invoke(cli, [*BASE, *args])


@pytest.fixture
def src(tmp_path):
    rng = np.random.default_rng(8)
    x = (rng.random((120, 40)) < 0.2).astype(float)
    x[:60, :8] = 1  # two classes with different dense blocks
    x[60:, 8:16] = 1
    path = str(tmp_path / "in")
    TransactionArray.from_scipy(sp.csr_array(x), npartitions=2, columns={"label": np.repeat([0, 1], 60)}).to_parquet(path, progress=False)
    return path


def test_delta_default_command_verify_and_tampering(tmp_path, src):
    out = str(tmp_path / "d")
    r = run("--json", "--key-file", str(tmp_path / "key"), "sketch", src, out, "--delta", "0.5", "--rows-per-file", "50")
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert summary["family"] == "sketch" and summary["method"] == "delta" and summary["records"]["input"] == 120
    assert summary["verdict"]["ok"] and summary["parameters"]["delta"] == 0.5
    ok = run("verify", out, "--original", src)
    assert ok.exit_code == 0 and "δ rule" in ok.output, ok.output
    name = manifest_of(out)["partitions"][0]["file"]
    flip_byte(tmp_path / "d" / name)
    bad = run("verify", out)
    assert bad.exit_code == 2 and f"in {name}" in bad.output
    again = run("sketch", "anonymize", src, out, "--delta", "0.5")
    assert again.exit_code == 2 and "already exists" in again.output


def test_kvariance_and_floor(tmp_path, src):
    r = run("--json", "sketch", "anonymize", src, str(tmp_path / "k"), "--k", "3", "--m-max", "64")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["method"] == "k-variance" and out["privacy"]["violations"] == 0 and out["verdict"]["ok"]
    assert run("verify", str(tmp_path / "k"), "--original", src).exit_code == 0
    weak = run("sketch", src, str(tmp_path / "w"), "--k", "1")
    assert weak.exit_code == 2 and "k >= 2" in weak.output and "--allow-weak" in weak.output
    assert not (tmp_path / "w").exists()
    r = run("--json", "sketch", src, str(tmp_path / "w"), "--k", "1", "--allow-weak")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["overrides"] == ["k >= 2"] and manifest_of(tmp_path / "w")["release"]["overrides"] == ["k >= 2"]


def test_evaluate_and_usage_errors(tmp_path, src):
    r = run("--json", "sketch", "evaluate", src, "--delta", "0.5", "--neighbors", "3", "--clusters", "2")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert 0 <= out["accuracy"] <= 1 and out["baseline_accuracy"] > 0.9 and "similarity_ratio" in out
    r = run("sketch", src, str(tmp_path / "x"), "--delta", "0.5", "--k", "3")
    assert r.exit_code != 0 and "exactly one of --delta" in r.output
    r = run("sketch", src, str(tmp_path / "y"), "--k", "500")
    assert r.exit_code == 2 and "smaller than the number of records" in r.output
    r = run("sketch", src, str(tmp_path / "z"), "--delta", "-1")
    assert r.exit_code == 2 and "delta must be a positive" in r.output and "Traceback" not in r.output
