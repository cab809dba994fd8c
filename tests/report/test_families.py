"""A report of a release of real data for every family (Adult; BMS-WebView-1 k^m; T10I4D100K
distorted with EMASK; 20 Newsgroups sketches; Pima condensed; led7 generated): the JSON is valid
against the schema, the HTML has every section and figure and shows the JSON's numbers, the
headline figures equal an independent recount from the written files, and the page renders in
headless Chromium with every figure in its place.

The family figures are tested one by one against their oracles in each family's
``test_report_figures``; samples keep this file within a minute (the benchmark ``report`` makes
the same reports on the full files)."""

from __future__ import annotations

import json
import math
from collections import Counter
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from ppdm_dask import Key, open_release, read
from ppdm_dask.data.transactions import TransactionArray
from ppdm_dask.report import SECTIONS, validate_report
from ppdm_dask.report.html import show_value

from .test_render import check_rendered
from .test_report import _Links

pytestmark = pytest.mark.oldest  # also run on the oldest supported versions (.ci/run)


def _parquet(folder: Path) -> pd.DataFrame:
    return pd.concat([pq.read_table(f).to_pandas() for f in sorted(folder.glob("part-*.parquet"))], ignore_index=True)


def _rows(folder: Path) -> list[frozenset]:
    """Released baskets as sets of item labels (the vocabulary maps ids to labels)."""
    vocab = folder / "_vocabulary.parquet"
    labels = pq.read_table(vocab).to_pandas() if vocab.exists() else None
    out = []
    for items in _parquet(folder)["items"]:
        ids = list(items)
        out.append(frozenset(str(labels.iloc[i, -1]) for i in ids) if labels is not None else frozenset(map(str, ids)))
    return out


# ---------------------------------------------------------------------- one release per family
def relational(shared):
    import dask.dataframe as dd

    from ppdm_dask.anonymity import KAnonymizer
    from ppdm_dask.data.uci import ADULT_QI, load_adult

    df, h = load_adult(full=True)
    qi = list(ADULT_QI)
    ddf = dd.from_pandas(df, npartitions=3)
    rel = KAnonymizer(
        qi, k=10, sensitive="salary-class", method="mondrian", hierarchies={a: h[a] for a in qi}, key=Key(11)
    ).fit_release(ddf)

    def recount(folder, values):
        released = _parquet(folder)
        sizes = released.groupby(qi, observed=True).size()
        assert values["risk_marketer"] == pytest.approx(len(sizes) / len(released))
        assert values["risk_prosecutor_max"] == pytest.approx(1 / sizes.min())
        assert values["risk_sample_uniques"] == pytest.approx(0.0)
        orig = df.groupby(qi, observed=True).size()
        assert values["risk_original_sample_uniques"] == pytest.approx((orig == 1).sum() / len(df))

    return rel, ddf, recount


def km(shared):
    from ppdm_dask.anonymity import KmAnonymizer

    full = read(str(shared / "fimi" / "BMS-WebView-1.dat"))
    sample = [r for r in full.to_lists()[:6000] if len(r) <= 40][:4000]
    tx = TransactionArray.from_lists(sample).repartition(npartitions=2)
    rel = KmAnonymizer(None, k=5, m=2, fan_out=5, key=Key(12)).fit_release(tx)

    def recount(folder, values):
        rows = _rows(folder)
        counts = Counter(s for r in rows for m in (1, 2) for s in combinations(sorted(r), m))
        assert values["km_rare_itemsets_release"] == sum(1 for c in counts.values() if c < 5) == 0
        uniq = Counter(rows)
        assert values["unique_baskets_release"] == pytest.approx(100 * sum(1 for r in rows if uniq[r] == 1) / len(rows))

    return rel, tx, recount


def emask(shared):
    from ppdm_dask.emask import Distorter, choose_parameters

    full = read(str(shared / "fimi" / "T10I4D100K.dat"))
    tx = TransactionArray.from_lists(full.to_lists()[:8000]).repartition(npartitions=2)
    s0 = tx.describe(progress=False)["mean_length"] / tx.n_items
    choice = max(choose_parameters(s0, 0.01), key=lambda c: c.basic_privacy)  # above the 90 % floor
    p, q = choice.p, choice.q
    rel = Distorter(p, q, key=Key(13)).fit_transform(tx)

    def recount(folder, values):
        # local DP of one bit kept with probability p (a 1) or q (a 0): ln of the largest likelihood ratio
        assert values["ldp_epsilon_item"] == pytest.approx(math.log(max(p / (1 - q), (1 - q) / p, (1 - p) / q, q / (1 - p))))
        rows = _rows(folder)
        assert len(rows) == 8000

    return rel, tx, recount


def sketch(shared):
    import scipy.sparse as sp

    from ppdm_dask.sketch import DeltaAnonymizer

    z = np.load(shared / "text" / "20news_bydate_counts.npz")
    X = sp.csr_array((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
    rows = np.sort(np.random.default_rng(0).choice(X.shape[0], 1500, replace=False))
    tx = TransactionArray.from_scipy(
        X[rows], npartitions=3, columns={"label": np.asarray(z["labels"])[rows], "record_id": rows.astype(np.int64)}
    )
    rel = DeltaAnonymizer(delta=20.0, m_max=32, key=Key(14), keep_record_ids=True).fit_transform(tx)

    def recount(folder, values):
        m = _parquet(folder)["m"].to_numpy()
        assert values["suppressed_share"] == pytest.approx(100 * (1500 - m.size) / 1500)
        assert values["records_below_threshold"] == 0

    return rel, tx, recount


def condensation(shared):
    from ppdm_dask.condensation import Condenser, privacy_levels
    from ppdm_dask.data.uci import load_uci

    X, y = load_uci("pima", shared / "uci")
    df = pd.DataFrame(X, columns=[f"a{j}" for j in range(X.shape[1])])
    df["class"] = y.astype(float)
    levels = privacy_levels(len(df), 6, 10, key=2)
    rel = Condenser(key=Key(15)).fit(df, levels).release()

    def recount(folder, values):
        t = pq.read_table(folder / "_groups.parquet").to_pandas()
        assert values["groups_below_level"] == int((t["n"] < t["p_max"]).sum()) == 0
        assert values["groups"] == len(t) and values["smallest_group"] == t["n"].min()

    return rel, df, recount


def krimp(shared):
    from ppdm_dask.krimp import KrimpGenerator

    tx = read(str(shared / "lucs" / "led7.dat"))
    rel = KrimpGenerator(min_support=2, laplace=0.001, key=Key(16)).fit(tx).release()
    original = [frozenset(map(str, r)) for r in tx.to_lists()]

    def recount(folder, values):
        generated = set(_rows(folder))
        assert values["rows_reproduced"] == pytest.approx(100 * sum(1 for r in original if r in generated) / len(original))

    return rel, tx, recount


FAMILIES = {"relational": relational, "km": km, "emask": emask, "sketch": sketch, "condensation": condensation, "krimp": krimp}


#: in the default suite; the others are marked slow (CI runs them in its slow pass and in the
#: oldest-versions job) to keep the default suite within its time budget
DEFAULT_FAMILIES = ("relational", "emask")


@pytest.mark.parametrize("family", [f if f in DEFAULT_FAMILIES else pytest.param(f, marks=pytest.mark.slow) for f in FAMILIES])
def test_report_of_real_data(family, shared_data, tmp_path):
    rel, original, recount = FAMILIES[family](shared_data)
    folder = tmp_path / family
    rel.write(str(folder))
    doc = open_release(str(folder)).adopt(rel).report(original)
    assert doc["release"]["family"] == family and doc["verdict"]["ok"]
    on_disk = json.loads((tmp_path / f"{family}.report.json").read_text())
    validate_report(on_disk)
    assert [s["id"] for s in on_disk["sections"]] == [s[0] for s in SECTIONS]
    items = [i for s in on_disk["sections"] for i in s["items"]]
    values = {i["id"]: i["value"] for i in items if i["type"] == "value"}
    units = {i["id"]: i.get("unit") for i in items if i["type"] == "value"}
    plots = {i["id"] for i in items if i["type"] == "plot"}
    section = {s["id"]: s["items"] for s in on_disk["sections"]}
    risk = [i for i in section["privacy"] if i["id"] != "privacy_checks"]
    assert risk and section["utility"] and plots, "risk, utility and plots"
    assert on_disk["decision"]["colour"] in ("green", "amber", "red") and section["summary"][0]["id"] == "summary_guarantee"
    # the headline figures against a recount from the written files and the original
    recount(folder, values)
    # the page shows every section, every figure and the JSON's numbers
    page = _Links()
    page.feed((tmp_path / f"{family}.report.html").read_text(encoding="utf-8"))
    assert page.sections == [s[0] for s in SECTIONS] and page.scripts == 0 and page.refs == []
    assert set(page.figures) == {f"fig-{p}" for p in plots} and all(n == 1 for n in page.figures.values())
    for vid, v in values.items():
        assert page.values[vid].strip() == show_value(v, units[vid]), vid
    # and it renders: not blank, the decision first, every figure drawn in its own place
    check_rendered(tmp_path / f"{family}.report.html", tmp_path, decision=on_disk["decision"])
