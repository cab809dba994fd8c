"""Accuracy metrics of reconstructed itemsets (docs/emask.md#accuracy-metrics): the example
F = {A, B, C, D}, R = {A, B, E} of docs/emask.md#correction-the-support-error-is-averaged-over-the-correctly-found-itemsets
and spot checks of the paper's Tables 4-5."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppdm_dask.errors import InvalidParameter
from ppdm_dask.metrics import identity_errors, itemset_accuracy, support_error

A, B, C, D, E = (frozenset(x) for x in ("a", "ab", "ac", "bcd", "e"))


def test_o38_basic():
    true = {A: 100, B: 50, C: 40, D: 20}
    rec = {A: 110, B: 45, E: 30}
    assert identity_errors(true, rec) == (25.0, 50.0)
    # ρ over F ∩ R = {A, B} only, normalised by |F ∩ R| = 2
    # (docs/emask.md#correction-the-support-error-is-averaged-over-the-correctly-found-itemsets)
    assert support_error(true, rec) == pytest.approx(100 * (10 / 100 + 5 / 50) / 2)


@pytest.mark.parametrize("n_f,fp,fn,sp,sm", [(21, 1, 18, 4.76, 85.71), (115, 62, 0, 53.91, 0.0), (115, 0, 62, 0.0, 53.91)])
def test_o38_table_spot_checks(n_f, fp, fn, sp, sm):
    true = {frozenset({i}): 10 for i in range(n_f)}
    rec = {frozenset({i}): 10 for i in range(fn, n_f)}
    rec.update({frozenset({1000 + i}): 10 for i in range(fp)})
    got = identity_errors(true, rec)
    assert round(got[0], 2) == sp and round(got[1], 2) == sm


def test_rho_empty_intersection_is_zero():
    # Table 5, level 8: nothing found -> σ⁻ = 100, ρ = 0
    acc = itemset_accuracy({frozenset(range(8)): 5}, {})
    assert acc["rho"] == 0.0 and acc["sigma_minus"] == 100.0 and acc["sigma_plus"] == 0.0
    assert support_error({A: 1}, {E: 1}) == 0.0


def test_itemset_accuracy_levels_and_variance():
    true = {A: 100, frozenset("b"): 80, B: 50, C: 40, D: 20}
    rec = {A: 90, frozenset("b"): 80, B: 60, E: 30, frozenset("abc"): 7}
    acc = itemset_accuracy(true, rec)
    assert (acc["n_true"], acc["n_reconstructed"], acc["n_common"]) == (5, 5, 3)
    assert acc["sigma_plus"] == pytest.approx(40) and acc["sigma_minus"] == pytest.approx(40)
    assert acc["rho"] == pytest.approx(100 * (0.1 + 0 + 0.2) / 3)
    lv = acc["levels"]
    assert sorted(lv) == [1, 2, 3]
    assert lv[1] == {
        "rho": pytest.approx(5.0),
        "sigma_plus": 50.0,
        "sigma_minus": 0.0,
        "n_true": 2,
        "n_reconstructed": 3,
        "n_common": 2,
    }
    assert lv[2]["rho"] == pytest.approx(20.0) and lv[2]["sigma_minus"] == 50.0 and lv[2]["sigma_plus"] == 0.0
    assert lv[3]["sigma_plus"] == pytest.approx(100.0) and lv[3]["sigma_minus"] == pytest.approx(100.0)
    assert lv[3]["rho"] == 0.0
    assert acc["variance"]["rho"] == pytest.approx(np.var([5.0, 20.0, 0.0]))
    assert acc["variance"]["sigma_minus"] == pytest.approx(np.var([0.0, 50.0, 100.0]))


def test_level_with_no_true_itemsets():
    acc = itemset_accuracy({A: 10}, {A: 10, B: 3})
    assert math.isinf(acc["levels"][2]["sigma_plus"])
    assert acc["variance"]["sigma_plus"] == 0.0  # only the finite level 1 value
    assert identity_errors({}, {}) == (0.0, 0.0)


def test_inputs_frequent_itemsets_and_fractions():
    from ppdm_dask.data.vocabulary import Vocabulary
    from ppdm_dask.mining.results import FrequentItemsets

    voc = Vocabulary(["x", "y", "z"])
    fi = FrequentItemsets(
        levels={
            1: (np.array([[0], [1], [2]], np.int32), np.array([50, 40, 30])),
            2: (np.array([[0, 1]], np.int32), np.array([20])),
        },
        vocabulary=voc,
        n_transactions=100,
        min_count=10,
    )
    rec = {("x",): 55, frozenset({"x", "y"}): 10, "y": 40}  # keys: tuples, sets and single labels
    acc = itemset_accuracy(fi, rec)
    assert acc["n_common"] == 3 and acc["sigma_minus"] == pytest.approx(25)
    assert acc["rho"] == pytest.approx(100 * (0.1 + 0.5 + 0) / 3)
    # fractions work the same (ρ is relative)
    frac = {k: v / 100 for k, v in fi.as_dict().items()}
    assert support_error(frac, {k: v / 100 for k, v in _norm(rec).items()}) == pytest.approx(acc["rho"])
    with pytest.raises(InvalidParameter):
        support_error({A: 0}, {A: 1})
    with pytest.raises(InvalidParameter):
        support_error([A], {A: 1})


def _norm(d):
    return {frozenset([k]) if isinstance(k, str) else frozenset(k): v for k, v in d.items()}
