"""The shared risk and utility figures of transaction releases, against brute force:
the k^m audit curve, the unique-basket share, and the itemset utility (σ⁺, σ⁻, ρ, scatter)."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import numpy as np
import pytest

from ppdm_dask import TransactionArray
from ppdm_dask.metrics import itemset_accuracy, itemset_utility, km_audit, unique_baskets
from ppdm_dask.metrics.report_figures import audit_figures, unique_basket_figures, utility_figures


def _random_rows(seed: int, n: int = 300, n_items: int = 14, max_len: int = 7) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [sorted(set(rng.integers(0, n_items, rng.integers(0, max_len + 1)).tolist())) for _ in range(n)]


def _itemset_counts(rows: list[list], max_m: int) -> Counter:
    """Brute force: every itemset of 1..max_m items of every row."""
    c: Counter = Counter()
    for r in rows:
        for j in range(1, max_m + 1):
            c.update(frozenset(s) for s in combinations(r, j))
    return c


def _brute_curve(rows: list[list], k: int, max_m: int) -> list[int]:
    c = _itemset_counts(rows, max_m)
    return [sum(1 for s, v in c.items() if len(s) <= m and 1 <= v < k) for m in range(1, max_m + 1)]


@pytest.mark.parametrize("seed", [0, 1])
def test_audit_curve_equals_brute_force_and_ignores_partitions(seed):
    rows = _random_rows(seed)
    one = TransactionArray.from_lists(rows)
    three = one.repartition(npartitions=3)
    assert one.n_partitions == 1 and three.n_partitions == 3
    ks = [2, 3, 7]
    a1, a3 = km_audit(one, ks, 4), km_audit(three, ks, 4)
    brute = _itemset_counts(rows, 4)
    assert a1.m.tolist() == [1, 2, 3, 4] and not a1.truncated and a1.note == ""
    for k in ks:
        expected = _brute_curve(rows, k, 4)
        assert a1.rare[k].tolist() == expected, k
        assert a3.rare[k].tolist() == expected, k
    assert a1.distinct.tolist() == [sum(1 for s in brute if len(s) <= m) for m in range(1, 5)]
    assert a3.distinct.tolist() == a1.distinct.tolist()
    # the cost estimate is the number of itemset occurrences: Σ_rows Σ_{j<=m} C(len, j)
    assert a1.work.tolist() == [
        float(sum(sum(1 for _ in combinations(r, j)) for r in rows for j in range(1, m + 1))) for m in range(1, 5)
    ]


def test_audit_guard_truncates_with_a_note():
    rows = _random_rows(3, n=120)
    tx = TransactionArray.from_lists(rows).repartition(npartitions=2)
    full = km_audit(tx, 3, 3)
    limit = float(full.work[1])  # enough for pairs, not for triples
    cut = km_audit(tx, 3, 3, max_subsets=limit)
    assert cut.max_m == 2 and cut.requested_m == 3 and cut.truncated
    assert "stops at m = 2" in cut.note
    assert cut.rare[3].tolist() == _brute_curve(rows, 3, 2)
    # m beyond the cap
    capped = km_audit(tx, 3, 9, max_subsets=limit)
    assert capped.max_m == 2 and "capped" in capped.note


def test_audit_of_a_k_anonymous_database_is_zero():
    # every basket occurs 4 times: every itemset of every size has support >= 4
    base = [[1, 2, 3], [2, 4], [5], [1, 5, 6, 7]]
    tx = TransactionArray.from_lists(base * 4).repartition(npartitions=3)
    audit = km_audit(tx, [4, 5], 3)
    assert audit.rare[4].tolist() == [0, 0, 0]
    assert audit.rare[5].tolist() == _brute_curve(base * 4, 5, 3) and audit.rare[5][-1] > 0


@pytest.mark.parametrize("parts", [1, 3])
def test_unique_baskets_against_counter(parts):
    rows = _random_rows(5, n=400, n_items=8, max_len=3) + [[], [], [9]]  # empty baskets are baskets too
    tx = TransactionArray.from_lists(rows)
    if parts > 1:
        tx = tx.repartition(npartitions=parts)
    got = unique_baskets(tx)
    counts = Counter(frozenset(r) for r in rows)
    unique = sum(1 for v in counts.values() if v == 1)
    assert got == {"unique": unique, "distinct": len(counts), "rows": len(rows), "share": unique / len(rows)}
    figs = unique_basket_figures(tx, tx)
    assert [v.id for v in figs.risk] == ["unique_baskets_release", "unique_baskets_original"]
    assert figs.risk[0].value == pytest.approx(100.0 * unique / len(rows)) and figs.risk[1].about == "original"


def _supports(rows: list[list], max_len: int) -> Counter:
    return _itemset_counts(rows, max_len)


def test_itemset_utility_against_brute_force():
    orig_rows = _random_rows(7, n=250, n_items=10, max_len=5)
    rng = np.random.default_rng(8)
    # a "release": every row loses or gains an item at random, and there are fewer rows
    rel_rows = []
    for r in orig_rows[:200]:
        r = set(r)
        if r and rng.random() < 0.5:
            r.discard(int(rng.choice(sorted(r))))
        if rng.random() < 0.5:
            r.add(int(rng.integers(0, 10)))
        rel_rows.append(sorted(r))
    original = TransactionArray.from_lists(orig_rows).repartition(npartitions=2)
    release = TransactionArray.from_lists(rel_rows).repartition(npartitions=3)
    min_support, max_len = 0.08, 3
    so, sr = _supports(orig_rows, max_len), _supports(rel_rows, max_len)
    f = {s: v / len(orig_rows) for s, v in so.items() if v >= np.ceil(min_support * len(orig_rows) - 1e-9)}
    r = {s: v / len(rel_rows) for s, v in sr.items() if v >= np.ceil(min_support * len(rel_rows) - 1e-9)}
    assert f.keys() != r.keys()  # the comparison has something to find

    u = itemset_utility(original, release, min_support, max_length=max_len)
    key = lambda s: frozenset(str(x) for x in s)  # noqa: E731 - labels compare as strings
    fs = {key(s): v for s, v in f.items()}
    rs = {key(s): v for s, v in r.items()}
    # σ⁺, σ⁻, ρ by hand from the brute-force sets
    common = fs.keys() & rs.keys()
    assert u["accuracy"]["sigma_plus"] == pytest.approx(100.0 * len(rs.keys() - fs.keys()) / len(fs))
    assert u["accuracy"]["sigma_minus"] == pytest.approx(100.0 * len(fs.keys() - rs.keys()) / len(fs))
    assert u["accuracy"]["rho"] == pytest.approx(100.0 * np.mean([abs(rs[s] - fs[s]) / fs[s] for s in common]))
    assert u["n_original"] == len(f) and u["n_release"] == len(r)
    # one scatter point per itemset of F ∪ R, both coordinates the brute-force supports
    assert len(u["points"]) == len(fs.keys() | rs.keys()) == u["n_points_total"]
    for labels, x, y, in_f, in_r in u["points"]:
        s = frozenset(labels)
        assert x == pytest.approx(so.get(s, 0) / len(orig_rows)) and y == pytest.approx(sr.get(s, 0) / len(rel_rows))
        assert in_f == (key(s) in fs) and in_r == (key(s) in rs)

    figs = utility_figures(original, release, min_support, max_length=max_len)
    by_id = {i.id: i for i in figs.utility}
    assert set(by_id) == {
        "itemsets_max_length",
        "itemsets_sigma_plus",
        "itemsets_sigma_minus",
        "itemsets_rho",
        "itemsets_support_scatter",
    }
    assert all(i.about == "comparison" for i in figs.utility)
    assert by_id["itemsets_rho"].value == pytest.approx(itemset_accuracy(fs, rs)["rho"])
    assert "min_support 0.08" in by_id["itemsets_rho"].note
    assert sum(len(s.x) for s in by_id["itemsets_support_scatter"].series) == len(u["points"])
    # the longest itemset is said, with the |F| of that length (brute force above)
    assert by_id["itemsets_max_length"].value == max_len and f"|F| = {len(f):,} " in by_id["itemsets_max_length"].note


def test_itemset_utility_against_pyfim():
    fim = pytest.importorskip("fim")
    rows = _random_rows(11, n=300, n_items=12, max_len=6)
    tx = TransactionArray.from_lists(rows)
    u = itemset_utility(tx, tx.repartition(npartitions=2), 0.05, max_length=3)
    ref = {frozenset(s): c for s, c in fim.apriori(rows, target="s", supp=-15, zmax=3, report="a")}
    assert len(ref) == u["n_original"] == u["n_release"]
    assert u["accuracy"]["sigma_plus"] == u["accuracy"]["sigma_minus"] == u["accuracy"]["rho"] == 0.0
    for labels, x, y, in_f, in_r in u["points"]:
        assert in_f and in_r and x == y == pytest.approx(ref[frozenset(labels)] / len(rows))


def test_audit_figures_ids_and_about():
    rows = _random_rows(2, n=100)
    tx = TransactionArray.from_lists(rows)
    figs = audit_figures(tx, None, 3, 2)
    assert figs.ids() == ["km_audit_release", "km_rare_itemsets_release"]
    both = audit_figures(tx, tx, 3, 2, guaranteed_m=2)
    assert both.ids() == ["km_audit_release", "km_rare_itemsets_release", "km_audit_original", "km_rare_itemsets_original"]
    plot = both.risk[2]
    assert plot.about == "original" and plot.kind == "step" and [s.name for s in plot.series] == ["original", "release"]
    assert plot.series[0].y == _brute_curve(rows, 3, 2) and "guarantees 0 up to m = 2" in plot.note
    assert both.risk[1].value == _brute_curve(rows, 3, 2)[-1]
