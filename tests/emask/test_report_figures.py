"""Report figures of EMASK releases: local-DP ε by hand, basic privacy by hand and by the
library function, reconstructed itemset supports against a brute-force closed form, T10I4D100K."""

from __future__ import annotations

import math
from collections import Counter
from functools import partial
from itertools import combinations

import numpy as np
import pytest

from ppdm_dask import Key, TransactionArray, read
from ppdm_dask.emask import Distorter
from ppdm_dask.emask.privacy import basic_privacy
from ppdm_dask.emask.release import _emask_miner, reconstructed_supports


def _rows(seed=1, n=1500, n_items=20):
    rng = np.random.default_rng(seed)
    return [sorted(set(rng.integers(0, n_items, rng.integers(1, 7)).tolist())) for _ in range(n)]


def _release(tx, p, q):
    return Distorter(p, q, key=Key(11), allow_weak=True).fit(tx).transform(tx)


@pytest.mark.parametrize(
    "p, q, ratios",
    [
        # p/(1-q), (1-q)/p, (1-p)/q, q/(1-p)
        (0.4, 0.98, (0.4 / 0.02, 0.02 / 0.4, 0.6 / 0.98, 0.98 / 0.6)),  # 20, 0.05, 0.612, 1.633 -> ln 20
        (0.9, 0.9, (0.9 / 0.1, 0.1 / 0.9, 0.1 / 0.9, 0.9 / 0.1)),  # 9 -> ln 9
        (0.7, 0.95, (0.7 / 0.05, 0.05 / 0.7, 0.3 / 0.95, 0.95 / 0.3)),  # 14, 0.071, 0.316, 3.167 -> ln 14
    ],
)
def test_epsilon_by_hand(p, q, ratios):
    tx = TransactionArray.from_lists(_rows(n=300))
    figs = _release(tx, p, q).report_figures()
    by_id = {i.id: i for i in figs.risk}
    eps = math.log(max(ratios))
    assert by_id["ldp_epsilon_item"].value == pytest.approx(eps, rel=1e-12)
    line = by_id["ldp_epsilon_record"]
    assert line.kind == "line" and line.about == "release"
    n, y = np.asarray(line.series[0].x), np.asarray(line.series[0].y)
    assert n[0] == 1 and n[-1] == tx.n_items and np.allclose(y, n * eps)
    assert by_id["ldp_epsilon_all_items"].value == pytest.approx(tx.n_items * eps)
    assert all(by_id[i].about == "release" for i in ("ldp_epsilon_item", "ldp_epsilon_record", "basic_privacy"))


def test_epsilon_examples_and_infinite():
    tx = TransactionArray.from_lists(_rows(n=200))
    assert _release(tx, 0.4, 0.98).report_figures().risk[0].value == pytest.approx(2.995732, abs=1e-6)  # ln 20
    figs = _release(tx, 1.0, 0.9).report_figures()  # a kept 1 ... p = 1: a 0 in the output proves a 0
    by_id = {i.id: i for i in figs.risk}
    assert by_id["ldp_epsilon_item"].value == math.inf and "ldp_epsilon_record" not in by_id


def test_basic_privacy_by_hand():
    # p = q = 0.9, s0 = 0.1: R1 = 0.81·0.1/(0.09 + 0.09) + 0.01·0.1/(0.01 + 0.81) = 0.45 + 0.0012195 -> BP = 54.878 %
    hand = 100.0 * (1.0 - (0.81 * 0.1 / 0.18 + 0.01 * 0.1 / 0.82))
    assert hand == pytest.approx(54.8780488, abs=1e-6)
    assert basic_privacy(0.9, 0.9, s0=0.1) == pytest.approx(hand)
    # 10 items, rows holding one item each: s0 = 0.1 exactly
    tx = TransactionArray.from_lists([[i % 10] for i in range(200)])
    rel = _release(tx, 0.9, 0.9)
    assert "s0" not in rel.parameters and rel.owner_s0() == pytest.approx(0.1)  # the owner's figure
    by_id = {i.id: i for i in rel.report_figures().risk}
    # the exact s0 is the owner's (about the original); the public figure is at the s0 the
    # release's own density gives: (ones / (N d) - (1 - q)) / (p + q - 1)
    assert by_id["basic_privacy_original"].value == pytest.approx(hand) and by_id["basic_privacy_original"].about == "original"
    s_hat = (sum(len(r) for r in rel.data.to_lists()) / 2000 - 0.1) / 0.8
    assert (
        by_id["basic_privacy"].value == pytest.approx(basic_privacy(0.9, 0.9, s0=s_hat))
        and by_id["basic_privacy"].about == "release"
    )


def _closed_form(rows_d, itemset, p, q):
    """EMASK estimate written out: (p+q-1)^-n Σ_{U ⊆ I} (-(1-q))^{n-|U|} N_D(U), N_D(∅) = N."""
    n = len(itemset)
    total = 0.0
    for j in range(n + 1):
        for u in combinations(sorted(itemset), j):
            total += (-(1 - q)) ** (n - j) * sum(1 for r in rows_d if set(u) <= r)
    return total / (p + q - 1) ** n


def test_utility_and_privacy_with_original():
    rows = _rows()
    tx = TransactionArray.from_lists(rows).repartition(npartitions=2)
    p, q = 0.8, 0.95
    rel = _release(tx, p, q)
    figs = rel.report_figures(tx)
    by_id = {i.id: i for i in (*figs.risk, *figs.utility)}
    assert {
        "basic_privacy_items",
        "reinterrogated_privacy",
        "km_audit_original",
        "unique_baskets_original",
        "itemsets_sigma_plus",
        "itemsets_sigma_minus",
        "itemsets_rho",
        "itemsets_support_scatter",
    } <= set(by_id)
    supports = np.bincount([i for r in rows for i in r], minlength=tx.n_items) / len(rows)
    assert by_id["basic_privacy_items"].value == pytest.approx(basic_privacy(p, q, supports=supports))
    assert 0.0 <= by_id["reinterrogated_privacy"].value <= 100.0
    # every scatter point: exact original support, and the release support reconstructed by hand
    rows_d = [set(r) for r in rel.data.to_lists()]
    counts_o = Counter(frozenset(s) for r in rows for j in (1, 2, 3) for s in combinations(r, j))
    scatter = by_id["itemsets_support_scatter"]
    points = [(x, y) for s in scatter.series for x, y in zip(s.x, s.y)]
    assert points
    f_count = sum(len(s.x) for s in scatter.series if s.name in ("in both", "original only"))
    minc = math.ceil(0.01 * len(rows) - 1e-9)
    assert f_count == sum(1 for v in counts_o.values() if v >= minc)
    # recompute a few points exactly (the brute-force closed form is slow in Python)
    from ppdm_dask.metrics import itemset_utility

    u = itemset_utility(
        tx, rel.data, 0.01, max_length=3, miner=partial(_emask_miner, p=p, q=q), recount=partial(reconstructed_supports, p=p, q=q)
    )
    for labels, x, y, _, _ in u["points"][:: max(1, len(u["points"]) // 25)]:
        assert x == pytest.approx(counts_o[frozenset(labels)] / len(rows))
        assert y == pytest.approx(_closed_form(rows_d, labels, p, q) / len(rows), abs=1e-9)


def test_written_release_needs_the_key_for_rp(tmp_path):
    rows = _rows(n=600)
    tx = TransactionArray.from_lists(rows)
    rel = _release(tx, 0.8, 0.95)
    rel.write(str(tmp_path / "rel"))
    from ppdm_dask.release import Release

    opened = Release.open(str(tmp_path / "rel"))
    figs = opened.report_figures(tx)
    assert "reinterrogated_privacy" not in figs.ids() and any("keyed order" in n for n in figs.notes)
    assert "itemsets_rho" in figs.ids()


def test_t10i4d100k(shared_data):
    fim = pytest.importorskip("fim")
    full = read(str(shared_data / "fimi" / "T10I4D100K.dat"))
    rows = full.to_lists()[:8000]  # a sample: keeps the test well under 20 s
    tx = TransactionArray.from_lists(rows).repartition(npartitions=2)
    p, q = 0.5, 0.99
    rel = _release(tx, p, q)
    figs = rel.report_figures(tx)
    by_id = {i.id: i for i in (*figs.risk, *figs.utility)}
    assert by_id["ldp_epsilon_item"].value == pytest.approx(math.log(max(p / (1 - q), (1 - q) / p, (1 - p) / q, q / (1 - p))))
    # σ and ρ against F mined by pyfim on the original and R read off the scatter
    ref = {frozenset(str(i) for i in s): c / len(rows) for s, c in fim.apriori(rows, target="s", supp=1, zmax=3, report="a")}
    from ppdm_dask.metrics import itemset_accuracy, itemset_utility

    u = itemset_utility(
        tx, rel.data, 0.01, max_length=3, miner=partial(_emask_miner, p=p, q=q), recount=partial(reconstructed_supports, p=p, q=q)
    )
    r = {frozenset(str(i) for i in lab): y for lab, _, y, _, in_r in u["points"] if in_r}
    f = {frozenset(str(i) for i in lab) for lab, _, _, in_f, _ in u["points"] if in_f}
    assert f == set(ref) and u["n_points_total"] == len(u["points"])
    acc = itemset_accuracy(ref, r)
    for name in ("sigma_plus", "sigma_minus", "rho"):
        assert by_id[f"itemsets_{name}"].value == pytest.approx(acc[name])
