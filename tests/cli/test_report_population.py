"""``ppdm report --sampling-fraction / --population-size / --weight-column`` (docs/anonymity.md#population-risk):
the options reach the figures (the report's values equal the models run on the written
release's class sizes recounted with pandas), and bad values stop with one error line naming the
flag."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ppdm_dask.anonymity import population as P
from ppdm_dask.data.datasets import sample_path

from .test_cli import run

QI = ["sex", "age", "race", "marital-status"]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("poprisk")
    src = tmp / "adult.csv"
    df = pd.read_csv(sample_path("adult"), sep=";")[[*QI, "salary-class"]]
    df.assign(w=20.0).to_csv(src, index=False)
    out = tmp / "rel"
    run(
        "anonymize",
        str(src),
        str(out),
        "--qi",
        ",".join(QI),
        "--sensitive",
        "salary-class",
        "--insensitive",
        "w",
        "--k",
        "2",
        "--method",
        "mondrian",
    )
    return src, out, tmp


def test_report_population_options(written):
    src, out, tmp = written
    run(
        "report",
        str(out),
        "--original",
        str(src),
        "--population-size",
        "40000",
        "--weight-column",
        "w",
        "--out",
        str(tmp / "r.html"),
    )
    doc = json.loads((tmp / "r.json").read_text())
    items = {i["id"]: i for s in doc["sections"] for i in s["items"]}
    released = pd.read_parquet(out)
    sizes = released.groupby(QI).size()
    want = P.population_uniqueness(sizes.value_counts(), population_size=40000)
    assert items["risk_sampling_fraction"]["value"] == pytest.approx(len(released) / 40000)
    assert items["risk_population_uniques"]["value"] == pytest.approx(want.share("dankar"))
    # the published weights (20 per record): the release's individual risk is recounted
    assert items["risk_weighted_expected"]["value"] > 0 and "risk_original_weighted_expected" in items
    assert "risk_qi_combinations" in items and "risk_original_qi_combinations" in items


@pytest.mark.parametrize(
    "args, flag",
    [
        (["--sampling-fraction", "0"], "--sampling-fraction"),
        (["--sampling-fraction", "1.5"], "--sampling-fraction"),
        (["--population-size", "10"], "--population-size"),
        (["--sampling-fraction", "0.1", "--population-size", "5000"], "--population-size"),
        (["--weight-column", "nope"], "--weight-column"),
    ],
)
def test_report_population_option_errors(written, args, flag):
    src, out, tmp = written
    r = run("report", str(out), "--original", str(src), *args, "--out", str(tmp / "bad.html"), ok=False)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("ppdm: error:") and flag in lines[0]
