"""``ppdm condense`` (static and dynamic, typed CSV input) and ``ppdm verify`` on condensed
releases."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from ppdm_dask.cli import cli
from ppdm_dask.condensation import privacy_levels, read_groups
from tests.release.helpers import flip_byte, manifest_of

BASE = ["--scheduler", "sync", "--no-progress"]


def run(*args):
    return CliRunner().invoke(cli, [*BASE, *args])


def _mixture(n, d=3, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.uniform(-10, 10, size=(6, d))
    return c[rng.integers(6, size=n)] + rng.standard_normal((n, d))


@pytest.fixture
def parquet_src(tmp_path):
    X = _mixture(400, seed=12)
    df = pd.DataFrame(X, columns=["a0", "a1", "a2"]).assign(level=privacy_levels(400, 2, 6, key=5))
    path = str(tmp_path / "in.parquet")
    df.to_parquet(path)
    return path, X


def test_condense_parquet_verify_and_tampering(tmp_path, parquet_src):
    src, X = parquet_src
    out = str(tmp_path / "out")
    r = run("--json", "condense", src, out, "--privacy-column", "level")
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert summary["family"] == "condensation" and summary["method"] == "static" and summary["verdict"]["ok"]
    assert summary["records"]["input"] == 400 and summary["parameters"]["columns"] == ["a0", "a1", "a2"]
    assert summary["memory_plan"].startswith("one cell")  # 400 rows: one k-d cell
    manifest = manifest_of(out)
    assert manifest["columns"] == ["a0", "a1", "a2"] and manifest["n_records"] == 400
    groups, cols = read_groups(out)
    assert sorted(groups) == ["n", "p_max"] and groups["n"].sum() == 400 and manifest["statistics"] is None
    assert (groups["n"] >= groups["p_max"]).all() and (groups["n"] >= 2).all() and pd.read_parquet(out).shape == (400, 3)
    ok = run("verify", out, "--original", src)
    assert ok.exit_code == 0 and "ok pseudo-data copies original records" in ok.output, ok.output
    # a second run without --overwrite refuses before any work and keeps the release
    again = run("condense", src, out, "--privacy-level", "3")
    assert again.exit_code == 2 and "already exists" in again.output
    assert manifest_of(out)["n_groups"] == manifest["n_groups"]
    flip_byte(tmp_path / "out" / "_groups.parquet")
    bad = run("verify", out)
    assert bad.exit_code == 2 and "in _groups.parquet" in bad.output


def test_condense_dynamic_and_errors(tmp_path, parquet_src):
    src, _ = parquet_src
    r = run("--json", "condense", src, str(tmp_path / "o1"), "--privacy-range", "2:5", "--dynamic", "--columns", "a0,a1,a2")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["method"] == "dynamic" and out["verdict"]["ok"] and out["parameters"]["privacy_range"] == [2, 5]
    assert run("verify", str(tmp_path / "o1"), "--original", src).exit_code == 0
    r = run("condense", src, str(tmp_path / "o2"), "--privacy-level", "401", "--columns", "a0,a1,a2")
    assert r.exit_code == 2 and "only 400 records" in r.output
    assert not os.path.exists(tmp_path / "o2")
    r = run("condense", src, str(tmp_path / "o3"), "--privacy-column", "nope")
    assert r.exit_code == 2 and "no privacy column 'nope'" in r.output
    r = run("condense", src, str(tmp_path / "o4"))
    assert r.exit_code != 0 and "exactly one" in r.output
    r = run("condense", src, str(tmp_path / "o5"), "--privacy-level", "1", "--columns", "a0,a1,a2")
    assert r.exit_code == 2 and "largest privacy level >= 2" in r.output and "--allow-weak" in r.output


def test_condense_csv_strings_typed_or_converted(tmp_path):
    X = _mixture(300, seed=13)
    df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(level=privacy_levels(300, 2, 5, key=3))
    df.insert(0, "id", [f"{i:05d}" for i in range(300)])
    csv = str(tmp_path / "t.csv")
    df.to_csv(csv, index=False, sep=";")
    r = run("condense", csv, str(tmp_path / "x"), "--privacy-column", "level")
    assert r.exit_code == 2 and "non-numeric columns" in r.output and "--dtype" in r.output
    typed = ["--dtype", "a=float", "--dtype", "b=float", "--dtype", "c=float", "--dtype", "level=int", "--columns", "a,b,c"]
    r = run("--json", "condense", csv, str(tmp_path / "typed"), "--privacy-column", "level", *typed)
    assert r.exit_code == 0, r.output
    r = run("--json", "condense", csv, str(tmp_path / "conv"), "--privacy-column", "level", "--columns", "a,b,c")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["verdict"]["ok"]
    assert run("verify", str(tmp_path / "conv"), "--original", csv).exit_code == 0
    r = run("condense", csv, str(tmp_path / "two"), "--privacy-level", "2", "--columns", "a,b")
    assert r.exit_code == 0, r.output
    assert manifest_of(tmp_path / "two")["columns"] == ["a", "b"]
    df["b"] = df["b"].astype(object)
    df.loc[7, "b"] = "n/a"
    df.to_csv(csv, index=False, sep=";")
    r = run("condense", csv, str(tmp_path / "bad3"), "--privacy-column", "level", "--columns", "a,b,c")
    assert r.exit_code == 2 and "'b'" in r.output and "n/a" in r.output
