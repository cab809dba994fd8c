"""``ppdm anonymize``, ``ppdm km-anonymize`` and ``ppdm access-control``: releases, summaries,
independent checks and one-line errors."""

from __future__ import annotations

import json

import pandas as pd
import pycanon.anonymity as pycanon

from ppdm_dask import read
from ppdm_dask.anonymity import check_k_anonymity, check_l_diversity
from ppdm_dask.anonymity.km import is_km_anonymous
from ppdm_dask.data.datasets import sample_path

from .test_cli import run

QI = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]


def _subset(shared_data, tmp_path, n=3000):
    src = tmp_path / "adult.csv"
    pd.read_csv(shared_data / "adult" / "adult.csv", sep=";").head(n).to_csv(src, sep=";", index=False)
    return src


def test_anonymize_lattice_and_mondrian(shared_data, tmp_path):
    src = _subset(shared_data, tmp_path)
    hdir = shared_data / "adult"
    out = tmp_path / "rel"
    r = run("--json", "anonymize", str(src), str(out), "--sep", ";", "--sensitive", "salary-class", "--hierarchies", str(hdir),
            "--k", "5", "--l", "2", "--max-suppression", "0.02")
    s = json.loads(r.stdout)
    assert s["check"]["ok"] and s["method"] == "lattice" and s["n_suppressed"] <= 60
    rel = pd.read_parquet(out)
    assert list(rel.columns) == [*QI, "salary-class"] and len(rel) == 3000
    assert check_k_anonymity(rel, QI, 5)["k_anonymous"] and check_l_diversity(rel, QI, "salary-class", 2)["l_diverse"]
    manifest = json.loads((out / "_SUCCESS").read_text())
    assert manifest["format"] == "ppdm-anonymized" and manifest["discernibility"] == s["discernibility"]
    text = run("anonymize", str(src), str(tmp_path / "m"), "--sep", ";", "--sensitive", "salary-class", "--k", "10",
               "--method", "mondrian", "--qi", ",".join(QI)).stdout
    assert "independent check  k achieved" in text and "DM" in text
    rel = pd.read_parquet(tmp_path / "m")
    assert pycanon.k_anonymity(rel, QI) >= 10
    # existing output is not overwritten
    bad = run("anonymize", str(src), str(out), "--sep", ";", "--hierarchies", str(hdir), "--k", "5", ok=False)
    assert bad.exit_code != 0 and "already exists" in bad.output


def test_anonymize_errors(shared_data, tmp_path):
    src = _subset(shared_data, tmp_path, 200)
    hdir = shared_data / "adult"
    r = run("anonymize", str(src), str(tmp_path / "x"), "--sep", ";", "--sensitive", "salary-class",
            "--hierarchy", f"sex={hdir / 'adult_hierarchy_sex.csv'}", "--k", "2", ok=False)
    assert r.exit_code != 0 and "no generalisation hierarchy" in r.output and "education" in r.output
    r = run("anonymize", str(src), str(tmp_path / "x"), "--sep", ";", "--hierarchies", str(hdir), "--k", "500", ok=False)
    assert r.exit_code != 0 and "larger than the number of records" in r.output
    r = run("anonymize", str(src), str(tmp_path / "x"), "--sep", ";", "--sensitive", "disease", "--hierarchies", str(hdir),
            "--k", "2", ok=False)
    assert r.exit_code != 0 and "disease" in r.output
    assert not (tmp_path / "x").exists()  # nothing half-written


def test_km_anonymize_cli(tmp_path):
    src = sample_path("bms-webview-1-5k")
    out = tmp_path / "km"
    s = json.loads(run("--json", "km-anonymize", str(src), str(out), "--k", "5", "--m", "2", "--fan-out", "5").stdout)
    assert s["check"]["km_anonymous"] and 0 < s["ncp"] < 1
    released = read(str(out))
    assert is_km_anonymous(released, 5, 2, progress=False)["km_anonymous"]
    r = run("km-anonymize", str(src), str(tmp_path / "y"), "--k", "5", ok=False)
    assert r.exit_code != 0 and "--hierarchy" in r.output


def test_access_control_cli(shared_data, tmp_path):
    src = _subset(shared_data, tmp_path)
    perms = tmp_path / "perms.json"
    perms.write_text(json.dumps([
        {"role": "census", "name": "teenagers", "bound": 20, "where": {"age": [17, 19]}},
        {"role": "marketing", "name": "doctorates", "bound": 10, "where": {"education": "Doctorate"}},
    ]))
    out = tmp_path / "ac"
    s = json.loads(run("--json", "access-control", str(src), "--permissions", str(perms), "--sep", ";", "--sensitive", "salary-class",
                       "--k", "5", "--out", str(out)).stdout)
    assert s["check"]["ok"] and s["permissions"] == 2
    assert s["permissions_satisfied"] >= s["mondrian_permissions_satisfied"]
    assert {p["name"] for p in s["permission_report"]} == {"teenagers", "doctorates"}
    assert pycanon.k_anonymity(pd.read_parquet(out), QI) >= 5
    perms.write_text(json.dumps([{"role": "x", "bound": 1, "where": {"salary": [1, 2]}}]))
    r = run("access-control", str(src), "--permissions", str(perms), "--sep", ";", "--sensitive", "salary-class", "--k", "5", ok=False)
    assert r.exit_code != 0 and "salary" in r.output
