"""Report figures of k^m-anonymised releases: the audit curve (0 up to the release's m,
brute force on the original), unique baskets, itemset utility, and BMS-WebView-1."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import numpy as np
import pytest

from ppdm_dask import TransactionArray, read
from ppdm_dask.anonymity.estimators import KmAnonymizer


def _brute_curve(rows, k, max_m):
    c = Counter()
    for r in rows:
        for j in range(1, max_m + 1):
            c.update(frozenset(s) for s in combinations(sorted(set(r)), j))
    return [sum(1 for s, v in c.items() if len(s) <= m and v < k) for m in range(1, max_m + 1)]


def _rows(seed=0, n=400, n_items=30):
    rng = np.random.default_rng(seed)
    return [sorted(set(rng.integers(0, n_items, rng.integers(1, 7)).tolist())) for _ in range(n)]


def test_km_figures_small():
    rows = _rows()
    tx = TransactionArray.from_lists(rows).repartition(npartitions=3)
    k, m = 4, 2
    rel = KmAnonymizer(k=k, m=m, fan_out=3).fit_release(tx)
    alone = rel.report_figures()
    assert [i.id for i in alone.risk] == ["km_audit_release", "km_rare_itemsets_release", "unique_baskets_release"]
    assert [a.id for a in alone.attacks] == ["attack_km_m_plus_1"] and not alone.utility
    assert any("need the original" in n for n in alone.needs_original)
    figs = rel.report_figures(tx)
    by_id = {i.id: i for i in (*figs.risk, *figs.utility)}
    assert set(by_id) >= {
        "km_audit_release",
        "km_rare_itemsets_release",
        "km_audit_original",
        "km_rare_itemsets_original",
        "unique_baskets_release",
        "unique_baskets_original",
        "itemsets_sigma_plus",
        "itemsets_sigma_minus",
        "itemsets_rho",
        "itemsets_support_scatter",
    }
    # the guarantee: no rare itemset of <= m items in the release
    curve = by_id["km_audit_release"].series[0]
    assert curve.x == [1, 2] and curve.y == [0, 0] and by_id["km_rare_itemsets_release"].value == 0
    released = rel.data.to_lists()
    assert _brute_curve(released, k, m) == [0, 0]
    # the original's curve is the brute-force count
    orig_series = by_id["km_audit_original"].series[0]
    assert orig_series.name == "original" and orig_series.y == _brute_curve(rows, k, m)
    assert by_id["km_rare_itemsets_original"].value == _brute_curve(rows, k, m)[-1]
    # unique baskets of the release, brute force on its rows
    counts = Counter(frozenset(r) for r in released)
    assert by_id["unique_baskets_release"].value == pytest.approx(100.0 * sum(v == 1 for v in counts.values()) / len(released))
    assert {i.about for i in figs.utility} == {"comparison"}
    assert "min_support 0.01" in by_id["itemsets_rho"].note
    for item in (*figs.risk, *figs.utility):
        item.to_dict()  # JSON-friendly


def test_km_figures_bms_webview(shared_data):
    full = read(str(shared_data / "fimi" / "BMS-WebView-1.dat"))
    # a 4,000-row sample keeps the test short; long baskets are what make the audit expensive
    sample = [r for r in full.to_lists()[:6000] if len(r) <= 40][:4000]
    tx = TransactionArray.from_lists(sample).repartition(npartitions=2)
    k, m = 5, 2
    rel = KmAnonymizer(k=k, m=m, fan_out=8).fit_release(tx)
    figs = rel.report_figures(tx)
    by_id = {i.id: i for i in (*figs.risk, *figs.utility)}
    assert by_id["km_audit_release"].series[0].y == [0, 0]
    assert _brute_curve(rel.data.to_lists(), k, m) == [0, 0]
    expected = _brute_curve(sample, k, m)
    assert by_id["km_audit_original"].series[0].y == expected and expected[-1] > 0
