"""One GCP everywhere (the anonymiser's summary on the console, the job's report, the report of
the written release read back with its published hierarchies), the published hierarchies
withhold the leaves, the majority-class rate beside the classifier accuracy (recounted with
pandas), and the table quality score (as-is columns against pandas, quasi-identifiers against a
record-by-record spread)."""

from __future__ import annotations

import json

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from ppdm_dask.anonymity import KAnonymizer, load_hierarchies
from ppdm_dask.anonymity.classifier import is_test
from ppdm_dask.anonymity.public_hierarchies import HIERARCHIES_FILE
from ppdm_dask.data.datasets import sample_files
from ppdm_dask.data.tables import read_table
from ppdm_dask.data.uci import ADULT_QI, load_adult
from ppdm_dask.random import Key
from ppdm_dask.release import Release


def _values(fig):
    return {i.id: i for i in fig.utility if hasattr(i, "value")}


@pytest.fixture(scope="module")
def people():
    csv, zips, _ = sample_files("people")
    table = read_table(str(csv), dtype={"age": "int"})
    hier = load_hierarchies([f"zip={zips}"], None, ["zip"])
    rel = KAnonymizer(
        ["age", "sex", "zip"],
        k=5,
        l=2,
        sensitive="diagnosis",
        identifiers=["name"],
        method="mondrian",
        hierarchies=hier,
        key=Key(8),
    ).fit_release(table)
    return table, hier, rel


@pytest.mark.parametrize("csv", [False, True])
def test_one_gcp_console_job_report_and_read_back(people, tmp_path, csv):
    table, hier, rel = people
    console = rel.summary()["utility"]["gcp"]
    url = str(tmp_path / ("r.csv" if csv else "r"))
    manifest = rel.write(url)
    job = Release.open(url).adopt(rel).report_figures(table)  # the job's report: the release it wrote, handed over
    alone = Release.open(url).report_figures(table)  # `ppdm report`: the folder and the original, nothing else
    assert _values(job)["utility_gcp"].value == pytest.approx(console)
    assert _values(alone)["utility_gcp"].value == pytest.approx(console)
    # the quality score (a score the external report may show) is read from the published part alone: the same
    assert _values(job)["utility_quality_score"].value == _values(alone)["utility_quality_score"].value
    # the per-QI NCP too (zip through its categorical hierarchy's leaf counts, age as a range)
    ncp = {r[0]: r[1] for r in next(i for i in alone.utility if i.id == "utility_ncp").rows}
    assert set(ncp) == {"age", "sex", "zip"} and np.mean(list(ncp.values())) == pytest.approx(console)
    # the manifest publishes no figure of the original: no GCP to disagree with
    assert "gcp" not in json.dumps(manifest.get("summary", {}))
    if not csv:
        entry = next(e for e in manifest["files"] if e["file"] == HIERARCHIES_FILE)
        assert len(entry["sha256"]) == 64
        side = pd.read_parquet(tmp_path / "r" / HIERARCHIES_FILE)
        # leaves are withheld: no zip code of the original appears in the side file
        zips = set(table["zip"].astype(str).compute())
        assert not zips & set(side["node"].astype(str))
        # a node's leaf count is the hierarchy's
        h = hier["zip"]
        node = side[(side["attr"] == "zip") & (side["node"] != "*")].iloc[0]
        level = next(lv for lv in range(1, h.levels - 1) if node["node"] in set(map(str, h.nodes(lv))))
        assert node["leaves"] == h.n_leaves_under(node["node"], level)


def test_lattice_gcp_on_adult_matches(tmp_path):
    df, h = load_adult()
    df = df.iloc[:3000]
    qi = list(ADULT_QI)
    rel = KAnonymizer(
        qi, k=5, sensitive="salary-class", hierarchies={a: h[a] for a in qi}, max_suppression=0.02, key=Key(4)
    ).fit_release(dd.from_pandas(df, npartitions=2))
    rel.write(str(tmp_path / "a"))
    alone = Release.open(str(tmp_path / "a")).report_figures(dd.from_pandas(df, npartitions=3))
    assert _values(alone)["utility_gcp"].value == pytest.approx(rel.summary()["utility"]["gcp"])


def test_majority_rate_and_units(people):
    table, _, rel = people
    v = _values(rel.report_figures(table))
    orig = table.compute().reset_index(drop=True)
    held = orig["diagnosis"][is_test(np.arange(len(orig)))]
    assert v["utility_majority_rate"].value == pytest.approx(held.value_counts(normalize=True).max())
    assert v["utility_majority_rate"].unit == "share" and "majority-class rate" in v["utility_classifier_accuracy"].note
    assert v["utility_query_error_mean"].unit == "share" and "relative error" in v["utility_query_error_mean"].label.lower()


def test_table_quality(people):
    table, _, rel = people
    fig = rel.report_figures(table)
    shapes = {r[0]: r[2] for r in next(i for i in fig.utility if i.id == "utility_column_shape_table").rows}
    orig = table.compute()
    released = rel.data.compute()
    # a column published as is: 1 - TVD of the value shares (nothing suppressed: identical)
    p = orig["diagnosis"].value_counts(normalize=True)
    q = released["diagnosis"].value_counts(normalize=True)
    p, q = p.align(q, fill_value=0)
    assert shapes["diagnosis"] == pytest.approx(1 - 0.5 * (p - q).abs().sum())
    # age: every released record spread evenly over the original ages its range covers, record by record
    ages = np.sort(orig["age"].unique())
    mass = pd.Series(0.0, index=ages)
    for lab in released["age"].astype(str):
        lo, _, hi = lab.partition("-")
        inside = ages[(ages >= float(lo)) & (ages <= float(hi or lo))]
        mass[inside] += 1.0 / len(inside)
    truth = orig["age"].value_counts().reindex(ages, fill_value=0)
    ks = np.max(np.abs(np.cumsum(truth) / truth.sum() - np.cumsum(mass) / mass.sum()))
    assert shapes["age"] == pytest.approx(1 - ks)
    assert 0 < _values(fig)["utility_quality_score"].value < 1 and _values(fig)["utility_quality_score"].score


def test_access_control_imprecision_in_the_report(people, tmp_path):
    """The imprecision per permission and per role the console prints is the report's table,
    recounted here with pandas on the original (true answers) and the released classes."""
    from ppdm_dask.anonymity import AccessControlAnonymizer

    table, hier, _ = people
    perms = [
        {"role": "nurse", "bound": 40, "where": {"age": [20, 40]}, "name": "young"},
        {"role": "nurse", "bound": 5, "where": {"sex": "female"}, "name": "women"},
        {"role": "audit", "bound": 100, "where": {"age": [60, 90], "sex": "male"}, "name": "old men"},
    ]
    est = AccessControlAnonymizer(perms, ["age", "sex"], k=5, sensitive="diagnosis", identifiers=["name", "zip"], key=Key(3))
    rel = est.fit_release(table)
    console = {p["name"]: p for p in est.report_["permission_report"]}
    rel.write(str(tmp_path / "ac"))
    job = Release.open(str(tmp_path / "ac")).adopt(rel).report_figures(table)
    rows = {r[1]: r for r in next(i for i in job.utility if i.id == "utility_imprecision_per_permission").rows}
    orig, released = table.compute(), rel.data.compute()
    for name, p in console.items():
        assert rows[name][5] == p["imprecision"] and rows[name][6] == ("yes" if p["satisfied"] else "no")
    # recount "young": the true answer on the original, the release returns every class whose age range meets [20, 40]
    true = int(orig["age"].between(20, 40).sum())
    lo_hi = released["age"].astype(str).str.split("-", expand=True)
    lo = lo_hi[0].astype(float)
    hi = lo_hi[1].fillna(lo_hi[0]).astype(float) if 1 in lo_hi else lo
    returned = int(((lo <= 40) & (hi >= 20)).sum())
    assert rows["young"][3] == true and rows["young"][4] == returned and rows["young"][5] == returned - true
    roles = {r[0]: r for r in next(i for i in job.utility if i.id == "utility_imprecision_per_role").rows}
    assert roles["nurse"][3] == console["young"]["imprecision"] + console["women"]["imprecision"]
    # the true answers are the original's: not in the public manifest, not in the external report
    assert all(i.about == "comparison" for i in job.utility if i.id.startswith("utility_imprecision"))
    assert "imprecision" not in json.dumps(Release.open(str(tmp_path / "ac")).manifest.get("summary", {}))
