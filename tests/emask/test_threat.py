"""The officer's summary of EMASK releases (ppdm_dask.emask.threat): ε per item and per record
against hand computations, the item-inference attack against numpy counts of the released and
true ones, the row linkage against a brute-force ranking of every row, and consistency with the
one-release precision of tests/emask/test_attacks.py (0.168 at (0.4, 0.98) on Quest)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from ppdm_dask import Key, TransactionArray
from ppdm_dask.data.quest import quest
from ppdm_dask.emask import Distorter
from ppdm_dask.emask.threat import (
    ITEM_INFERENCE_THRESHOLD,
    MEANINGFUL_EPSILON,
    emask_threat,
    item_inference,
    item_posteriors,
    record_epsilon_text,
    row_linkage,
)
from ppdm_dask.release.figures import Figures

CKW = {"client": None, "progress": False}


def _rows(seed=1, n=600, n_items=12):
    rng = np.random.default_rng(seed)
    return [sorted(set(rng.integers(0, n_items, rng.integers(1, 6)).tolist())) for _ in range(n)]


def _release(tx, p, q, key=11):
    return Distorter(p, q, key=Key(key), allow_weak=True).fit(tx).transform(tx)


def _csr(tx):
    X = sp.csr_array(tx.compute(progress=False))
    X.data[:] = 1
    return X


def test_posteriors_and_record_epsilon_by_hand():
    # (0.4, 0.98) at s = 0.01: a released 1 has P = 0.004 / (0.004 + 0.99·0.02) = 0.004 / 0.0238
    one, zero = item_posteriors(0.4, 0.98, 0.01)
    assert one == pytest.approx(0.004 / 0.0238, rel=1e-12) and one == pytest.approx(0.16807, abs=1e-5)
    assert zero == pytest.approx(0.006 / (0.006 + 0.99 * 0.98), rel=1e-12)
    # 1,000 items × ln 20 = 2,995.7 > 10: no meaningful bound; floor(10 / ln 20) = 3 items stay within 10
    text, rec = record_epsilon_text(math.log(20), 1000)
    assert rec == pytest.approx(1000 * math.log(20)) and "2,996" in text and "no meaningful record-level bound" in text
    assert "at most 3 items" in text and MEANINGFUL_EPSILON == 10
    # 3 items × ln 9 = 6.59 <= 10: the odds factor e^6.59 = 9^3 = 729
    text, rec = record_epsilon_text(math.log(9), 3)
    assert rec == pytest.approx(3 * math.log(9)) and "729" in text and "no meaningful" not in text
    assert "certainty" in record_epsilon_text(math.inf, 5)[0]


def test_epsilon_translated_in_the_summary():
    tx = TransactionArray.from_lists(_rows(n=400))
    rel = _release(tx, 0.4, 0.98)
    figs = rel.report_figures()
    by_id = {i.id: i for i in figs.learn}
    assert by_id["learn_item_odds_factor"].value == pytest.approx(20.0)
    # the posterior at ŝ0 = (density − (1 − q)) / (p + q − 1) recounted from the released rows
    D = _csr(rel.data)
    s = (D.nnz / (D.shape[0] * tx.n_items) - 0.02) / 0.38
    assert by_id["learn_item_posterior_one"].value == pytest.approx(100 * 0.4 * s / (0.4 * s + (1 - s) * 0.02), rel=1e-9)
    assert by_id["learn_record_epsilon"].value == pytest.approx(tx.n_items * math.log(20))
    assert "e^ε = 20" in figs.guarantee and "p = 0.4" in figs.guarantee
    assert "unique by construction" in by_id["learn_unique_baskets"].text
    assert [a.id for a in figs.attacks] == ["attack_item_inference"] and not figs.headline


def test_item_inference_by_hand():
    # two items, N = 100, (p, q) = (0.5, 0.9): counts 30 and 14 reconstruct to
    # (0.3 − 0.1) / 0.4 = 0.5 and (0.14 − 0.1) / 0.4 = 0.1; true ones expected 0.5·50 + 0.5·10 = 30 of 44
    ok, base = item_inference(np.array([30.0, 14.0]), 100, 0.5, 0.9)
    assert ok == pytest.approx(30 / 44) and base == pytest.approx((30 * 0.5 + 14 * 0.1) / 44)
    assert item_inference(np.zeros(2), 100, 0.5, 0.9) == (0.0, 0.0)


def test_item_inference_against_the_original():
    tx = TransactionArray.from_lists(_rows(n=3000, n_items=15)).repartition(npartitions=3)
    rel = _release(tx, 0.6, 0.9)
    figs = emask_threat(rel, Figures(), tx, CKW)
    by_id = {a.id: a for a in figs.attacks}
    T, D = _csr(tx), _csr(rel.data)  # the release in memory is in input order
    measured = by_id["attack_item_inference_measured"]
    assert measured.about == "comparison" and "row by row" in measured.found
    assert measured.success == pytest.approx(D.multiply(T).nnz / D.nnz, rel=1e-12)
    c, k = np.asarray(T.sum(axis=0)).ravel(), np.asarray(D.sum(axis=0)).ravel()
    assert measured.baseline == pytest.approx((k * c).sum() / (T.shape[0] * k.sum()), rel=1e-12)
    # the estimate from the release alone is the expectation of the measured precision
    est = by_id["attack_item_inference"]
    assert est.about == "release" and abs(est.success - measured.success) < 0.03
    assert measured.threshold == ITEM_INFERENCE_THRESHOLD


@pytest.mark.parametrize("npartitions, p, q, sign", [(1, 0.7, 0.97, 1), (4, 0.7, 0.97, 1), (3, 0.1, 0.3, -1)])
def test_row_linkage_against_brute_force(npartitions, p, q, sign):
    # (0.1, 0.3): p < 1 − q, a held item speaks against the row, so the fewest hits rank first
    tx = TransactionArray.from_lists(_rows(n=300, n_items=25, seed=3)).repartition(npartitions=npartitions)
    rel = _release(tx, p, q)
    link = row_linkage(tx, rel.data, CKW, sign=sign)
    D = _csr(rel.data).toarray()
    hits = sign * (D @ link["known"].toarray())  # every row against every target's known items
    expected = []
    for j, t in enumerate(link["targets"]):
        best = hits[:, j].max()
        expected.append(1.0 / (hits[:, j] == best).sum() if hits[t, j] == best else 0.0)
    assert link["success"] == pytest.approx(np.mean(expected), rel=1e-12) and link["rows"] == 300
    assert link["success"] > 1 / 300  # knowing 3 items of a basket finds rows better than chance here
    if sign < 0:
        return
    figs = emask_threat(rel, Figures(), tx, CKW)
    attack = {a.id: a for a in figs.attacks}["attack_row_linkage"]
    assert attack.success == pytest.approx(link["success"]) and attack.baseline == pytest.approx(1 / 300)


def test_item_list_warning_only_without_catalogue():
    rows = _rows(n=200, n_items=10) + [[99]]  # item 99: one basket alone holds it
    tx = TransactionArray.from_lists(rows)
    figs = emask_threat(_release(tx, 0.4, 0.98), Figures(), tx, CKW)
    assert len(figs.warnings) == 1 and figs.warnings[0].text.startswith(
        "1 item of the published item list is held by a single basket"
    )
    assert figs.warnings[0].about == "comparison"  # counted on the original: the owner's report only


def test_quest_precision_matches_the_attack_tests():
    """tests/emask/test_attacks.py measures one release's precision 0.168 at (0.4, 0.98) on
    T10.I4.D5K.N1K; the summary's measured item inference is that figure."""
    tx = quest("T10.I4.D5K.N1K", key=Key(1)).persist(progress=False)
    rel = _release(tx, 0.4, 0.98)
    figs = emask_threat(rel, Figures(), tx, CKW)
    measured = {a.id: a for a in figs.attacks}["attack_item_inference_measured"]
    assert 0.15 < measured.success < 0.19 and not measured.flagged
