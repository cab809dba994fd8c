"""``ppdm report --hierarchies``: the owner gives the hierarchies the job used, and the report
of the written release has the job's figures (a release publishes its hierarchies' node sizes,
not their leaves, so without them the query estimates of released nodes differ)."""

from __future__ import annotations

import json

import pytest

from ppdm_dask.data.datasets import sample_path

from .test_cli import run

QI = "sex,age,race,marital-status,education,native-country,workclass,occupation"


def _items(path):
    doc = json.loads(path.read_text())
    return doc, {i["id"]: i for s in doc["sections"] for i in s["items"]}


def test_report_with_the_owners_hierarchies_equals_the_jobs(tmp_path):
    run("samples", "--copy", "adult", "--to", str(tmp_path / "adult"))  # the CSV and its hierarchies, alone in a folder
    src, folder = tmp_path / "adult" / "adult_2k.csv", tmp_path / "adult"
    out = tmp_path / "rel"
    run(
        "anonymize",
        str(src),
        str(out),
        "--qi",
        QI,
        "--sensitive",
        "salary-class",
        "--hierarchies",
        str(folder),
        "--k",
        "5",
        "--t",
        "0.2",
        "--method",
        "mondrian",
    )
    job, job_items = _items(tmp_path / "rel.report.json")
    run("report", str(out), "--original", str(src), "--hierarchies", str(folder), "--out", str(tmp_path / "h.html"))
    again, items = _items(tmp_path / "h.json")
    run("report", str(out), "--original", str(src), "--out", str(tmp_path / "p.html"))
    _, public_only = _items(tmp_path / "p.json")
    for fid in ("utility_gcp", "utility_query_error_mean", "utility_discernibility", "utility_quality_score"):
        assert items[fid]["value"] == pytest.approx(job_items[fid]["value"], rel=1e-12), fid
    assert public_only["utility_gcp"]["value"] == pytest.approx(job_items["utility_gcp"]["value"], rel=1e-12)
    assert job["decision"]["colour"] == again["decision"]["colour"] == "green"  # t = 0.2: no homogeneous class flagged


def test_hierarchies_apply_to_tables_only(tmp_path):
    out = tmp_path / "em"
    run("emask", "distort", str(sample_path("mushroom")), str(out), "--p", "0.4", "--q", "0.98", "--allow-weak")
    r = run("report", str(out), "--hierarchies", str(tmp_path), "--out", str(tmp_path / "r.html"), ok=False)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and "--hierarchies" in lines[0] and "table releases" in lines[0]
