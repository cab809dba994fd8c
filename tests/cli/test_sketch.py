"""``ppdm sketch`` (anonymize by default, evaluate) and ``ppdm verify`` on sketch releases."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner

from ppdm_dask import Key, TransactionArray
from ppdm_dask.cli import cli
from ppdm_dask.io import read
from ppdm_dask.sketch.evaluation import train_test_split
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
    TransactionArray.from_scipy(sp.csr_array(x), npartitions=2, columns={"label": np.repeat([0, 1], 60)}).to_parquet(
        path, progress=False
    )
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
    # the later runs are further releases of the same input, not what this test is about (the
    # ledger's composition of sketch releases: tests/sketch/test_composition.py)
    r = run("--no-ledger", "sketch", "anonymize", src, str(tmp_path / "a"), "--k", "3", "--m-max", "64", "--approximate")
    assert r.exit_code == 0, r.output
    assert (
        "memory plan" in r.output
        and "waves over 8 rounds" in r.output
        and "as they arrive" in r.output
        and "input rows" in r.output
    )
    weak = run("--no-ledger", "sketch", src, str(tmp_path / "w"), "--k", "1")
    assert weak.exit_code == 2 and "k >= 2" in weak.output and "--allow-weak" in weak.output
    assert not (tmp_path / "w").exists()
    r = run("--json", "--no-ledger", "sketch", src, str(tmp_path / "w"), "--k", "1", "--allow-weak")
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
    assert r.exit_code == 2 and "'--delta': -1.0 is not in the range x>0" in r.output and "Traceback" not in r.output


def test_evaluate_sweep_table_json_plot_and_recount(tmp_path, src):
    plot = tmp_path / "frontier.svg"
    r = run(
        "--json",
        "--key-file",
        str(tmp_path / "key"),
        "sketch",
        "evaluate",
        src,
        "--sweep",
        "delta=0.1,0.5,2",
        "--neighbors",
        "3",
        "--clusters",
        "2",
        "--plot",
        str(plot),
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["method"] == "delta" and [row["level"] for row in out["levels"]] == [0.1, 0.5, 2.0]
    assert out["similarity_measure"] == "shrunk" and out["plot"] == str(plot)
    assert plot.read_text().lstrip().startswith("<?xml") and "<svg" in plot.read_text()
    # independent recount of the δ rule on the input: m = min(floor((|x|^2 - max x_t^2) / δ), 256)
    x = read(src).compute(progress=False).toarray()
    v = (x**2).sum(1) - (x**2).max(1)
    # chance accuracy: labels drawn from the training prior, recounted on the key's 2:1 split
    train, test = train_test_split(120, key=Key.from_file(tmp_path / "key"))
    y = np.repeat([0, 1], 60)
    p_train, p_test = np.bincount(y[train]) / train.size, np.bincount(y[test]) / test.size
    for row in out["levels"]:
        m = np.minimum(np.floor(v / row["level"] + 1e-9), 256)
        assert row["suppressed"] == pytest.approx(np.mean(m < 1))
        assert row["mean_components"] == pytest.approx(m[m >= 1].mean())
        assert row["accuracy_ratio"] == pytest.approx(row["accuracy"] / row["baseline_accuracy"])
        assert row["chance_accuracy"] == pytest.approx(float(p_train @ p_test))
    # the text table: one line per level, and the plot is refused if it exists (before any work)
    text = run(
        "--key-file",
        str(tmp_path / "key"),
        "sketch",
        "evaluate",
        src,
        "--sweep",
        "k=2,3",
        "--task",
        "classify",
        "--neighbors",
        "3",
    )
    assert text.exit_code == 0, text.output
    lines = [ln.split() for ln in text.stdout.splitlines()]
    assert [ln[0] for ln in lines if ln and ln[0] in ("2", "3")] == ["2", "3"]
    again = run("sketch", "evaluate", src, "--sweep", "delta=1", "--plot", str(plot))
    assert again.exit_code == 2 and "already exists" in again.output and "--overwrite" in again.output
    for args, msg in (
        (["--sweep", "delta=1", "--delta", "1"], "leave out --delta"),
        (["--sweep", "x=1"], "delta=V1"),
        (["--sweep", "k=2.5"], "integers"),
        (["--sweep", "delta=0,1"], "positive"),
        (["--delta", "1", "--plot", str(tmp_path / "p.svg")], "--plot draws the frontier of a sweep"),
        (["--sweep", "delta=1", "--plot", str(tmp_path / "p.pdf")], ".svg or .png"),
    ):
        bad = run("sketch", "evaluate", src, *args)
        assert bad.exit_code == 2 and msg in bad.output and "Traceback" not in bad.output, (args, bad.output)
    assert not (tmp_path / "p.svg").exists()
