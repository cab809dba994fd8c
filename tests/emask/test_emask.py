"""EMASK distortion, reconstruction and EMASK-Apriori against the hand-computed examples of
docs/emask.md (the n = 2, p = 0.4, q = 0.98 transition matrix and its inverse, exact recovery of class
counts) and brute force."""

from __future__ import annotations

import itertools
from math import comb

import dask
import numpy as np
import pytest
import scipy.sparse as sp

from ppdm_dask import Key, TransactionArray
from ppdm_dask.emask import _kernels as K
from ppdm_dask.emask import distort, distort_record, mine, reconstruct_classes, reconstruct_support, transition_matrix
from ppdm_dask.errors import InvalidParameter
from ppdm_dask.mining import SupportCounter


def brute_transition(n, p, q):
    """M by enumerating all 2^n true and distorted patterns (independent of Eq. 4)."""
    m = np.zeros((n + 1, n + 1))
    for true in itertools.product([0, 1], repeat=n):
        for dist in itertools.product([0, 1], repeat=n):
            pr = 1.0
            for x, y in zip(true, dist):
                pr *= (p if y else 1 - p) if x else ((1 - q) if y else q)
            m[sum(dist), sum(true)] += pr / comb(n, sum(true))
    return m


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("pq", [(0.4, 0.98), (0.9, 0.9), (0.3, 0.2)])
def test_transition_matrix_equals_enumeration(n, pq):
    m = transition_matrix(n, *pq)
    assert np.allclose(m, brute_transition(n, *pq), atol=1e-14)
    assert np.allclose(m.sum(axis=0), 1.0)
    assert np.linalg.det(m) == pytest.approx((pq[0] + pq[1] - 1) ** (n * (n + 1) // 2))


def test_oracle_O3_1_and_printed_eq4_erratum():
    m = transition_matrix(2, 0.4, 0.98)[::-1, ::-1]  # the paper orders classes 2, 1, 0
    assert np.allclose(m, [[0.16, 0.008, 0.0004], [0.48, 0.404, 0.0392], [0.36, 0.588, 0.9604]])
    inv = np.linalg.inv(m)
    assert np.allclose(inv[0], [6.6509695291, -0.1357340720, 0.0027700831])
    # with the printed exponent (1-p)^(i-k) the columns do not sum to 1
    # (docs/emask.md#correction-the-transition-matrix)
    n, p, q = 2, 0.4, 0.98
    printed = np.array(
        [
            [
                sum(
                    comb(j, k) * p**k * (1 - p) ** (i - k) * comb(n - j, i - k) * q ** (n + k - i - j) * (1 - q) ** (i - k)
                    for k in range(max(0, i + j - n), min(i, j) + 1)
                )
                for j in range(3)
            ]
            for i in range(3)
        ]
    )
    assert np.allclose(printed.sum(axis=0), [0.984, 1.389, 1.96], atol=1e-3)


def test_oracle_O3_2_exact_recovery():
    m = transition_matrix(2, 0.4, 0.98)
    ct = np.array([9600.0, 300.0, 100.0])
    cd = m @ ct
    assert np.allclose(cd[::-1], [22.24, 545.52, 9432.24])
    assert np.allclose(reconstruct_classes(cd, 0.4, 0.98), ct, rtol=1e-9)
    # n = 1: E[n'] = 40 + 18 = 58 -> n̄ = 100
    assert reconstruct_support(np.array([1000.0, 58.0]), 0.4, 0.98) == pytest.approx(100.0)


def test_inclusion_exclusion_and_three_estimators_agree():
    rng = np.random.default_rng(0)
    y = rng.random((20_000, 3)) < [0.3, 0.2, 0.25]
    n = y.shape[0]
    sigma = np.array(
        [n, y.sum(), sum((y[:, a] & y[:, b]).sum() for a, b in [(0, 1), (0, 2), (1, 2)]), y.all(axis=1).sum()], float
    )
    assert K.class_counts_from_subsets(sigma).tolist() == np.bincount(y.sum(axis=1), minlength=4).tolist()
    per_transaction = np.prod((y - 0.02) / 0.38, axis=1).sum()
    closed, var = reconstruct_support(sigma, 0.4, 0.98, return_variance=True)
    assert closed == pytest.approx(per_transaction, rel=1e-9)
    assert reconstruct_support(sigma, 0.4, 0.98, method="matrix") == pytest.approx(per_transaction, rel=1e-9)
    z = np.prod((y - 0.02) / 0.38, axis=1)
    assert var == pytest.approx((z**2).sum() - closed, rel=1e-9)  # V̂ = Σ z² − ŝ


def _random_tx(n_rows=3000, n_items=40, density=0.15, seed=0, nparts=3):
    rng = np.random.default_rng(seed)
    # random_state=: the keyword of every supported scipy (rng= only from 1.15)
    m = sp.random_array((n_rows, n_items), density=density, format="csr", random_state=rng)
    m.data[:] = 1
    return TransactionArray.from_scipy(sp.csr_array(m.astype(np.int32)), npartitions=nparts)


def test_distortion_bit_probabilities_and_determinism():
    tx = _random_tx(n_rows=20_000, n_items=50)
    d = distort(tx, 0.4, 0.9, key=Key(3))
    x = tx.compute().toarray().astype(bool)
    y = d.compute().toarray().astype(bool)
    for observed, prob, count in ((y[x].mean(), 0.4, x.sum()), (y[~x].mean(), 0.1, (~x).sum())):
        assert abs(observed - prob) < 4 * np.sqrt(prob * (1 - prob) / count)
    out = d.compute()
    assert all(np.all(np.diff(out.indices[out.indptr[i] : out.indptr[i + 1]]) > 0) for i in range(500))
    assert out.data.dtype == np.int32 and out.indices.dtype == np.int32
    again = distort(tx, 0.4, 0.9, key=Key(3))
    for scheduler in ("sync", "threads", "processes"):
        with dask.config.set(scheduler=scheduler):
            assert (again.compute() != out).nnz == 0
    assert (distort(tx, 0.4, 0.9, key=Key(4)).compute() != out).nnz > 0
    assert d.metadata["p"] == 0.4 and d.metadata["q"] == 0.9 and d.metadata["n_items"] == 50
    assert not any("key" in k.lower() for k in d.metadata)


def test_distortion_extremes_and_errors():
    tx = _random_tx(n_rows=200, n_items=30)
    x = tx.compute()
    assert (distort(tx, 1.0, 1.0, key=Key(1)).compute() != x).nnz == 0  # identity
    flipped = distort(tx, 0.0, 0.0, key=Key(1)).compute().toarray()
    assert np.array_equal(flipped, 1 - x.toarray())  # complement
    for p, q in ((0.5, 0.5), (0.3, 0.7), (1.2, 0.9), (-0.1, 0.5)):
        with pytest.raises(InvalidParameter):
            distort(tx, p, q)
    rec = distort_record([3, 7, 1], 0.4, 0.98, 100, key=Key(9))
    assert np.all(np.diff(rec) > 0) and rec.max() < 100
    assert np.array_equal(rec, distort_record([1, 3, 7], 0.4, 0.98, 100, key=Key(9)))


def test_reconstruction_is_unbiased_over_many_keys():
    tx = _random_tx(n_rows=2000, n_items=12, density=0.3, seed=5, nparts=2)
    x = tx.compute().toarray().astype(bool)
    p, q = 0.6, 0.9
    itemsets = [(0,), (1, 2), (3, 4, 5)]
    truth = [x[:, list(s)].all(axis=1).sum() for s in itemsets]
    est = {s: [] for s in itemsets}
    for seed in range(150):
        y = distort(tx, p, q, key=Key(seed)).compute().toarray().astype(bool)
        n = y.shape[0]
        for s in itemsets:
            sigma = [float(n)] + [
                sum(y[:, list(u)].all(axis=1).sum() for u in itertools.combinations(s, j)) for j in range(1, len(s) + 1)
            ]
            est[s].append(reconstruct_support(np.array(sigma), p, q))
    for s, t in zip(itemsets, truth):
        e = np.array(est[s])
        assert abs(e.mean() - t) < 3 * e.std(ddof=1) / np.sqrt(e.size), (s, e.mean(), t)


def _brute_emask(y, p, q, threshold):
    """Level-wise EMASK-Apriori on a dense distorted matrix with the per-transaction estimator."""
    n, d = y.shape
    z = (y - (1 - q)) / (p + q - 1)
    est = lambda s: float(np.prod(z[:, list(s)], axis=1).sum())  # noqa: E731
    out = {}
    level = [(i,) for i in range(d) if est((i,)) >= threshold]
    out.update({s: est(s) for s in level})
    k = 2
    while level:
        prev = set(level)
        cands = sorted({a + (b[-1],) for a in level for b in level if a[:-1] == b[:-1] and a[-1] < b[-1]})
        cands = [c for c in cands if all(c[:i] + c[i + 1 :] in prev for i in range(k))]
        level = [c for c in cands if est(c) >= threshold]
        out.update({s: est(s) for s in level})
        k += 1
    return out


@pytest.mark.parametrize("pq", [(0.4, 0.98), (0.7, 0.95)])
def test_emask_apriori_equals_brute_force(pq):
    tx = _random_tx(n_rows=1500, n_items=14, density=0.35, seed=2, nparts=3)
    d = distort(tx, *pq, key=Key(11))
    y = d.compute().toarray().astype(float)
    ref = _brute_emask(y, *pq, threshold=0.08 * 1500)
    got = mine(d, *pq, 0.08, progress=False).as_dict()
    assert {tuple(sorted(s)) for s in got} == set(ref)
    for s, v in got.items():
        assert v == pytest.approx(ref[tuple(sorted(s))], rel=1e-9, abs=1e-6)
    # the same distorted data in other partitionings gives the same result
    for nparts in (1, 7):
        again = mine(d.repartition(npartitions=nparts), *pq, 0.08, progress=False).as_dict()
        assert again.keys() == got.keys()
        assert all(again[s] == pytest.approx(got[s], rel=1e-9) for s in got)


def test_emask_prune_margin_and_standard_errors():
    tx = _random_tx(n_rows=1500, n_items=14, density=0.35, seed=2)
    d = distort(tx, 0.5, 0.95, key=Key(1))
    base = mine(d, 0.5, 0.95, 0.1, progress=False, return_se=True)
    wide = mine(d, 0.5, 0.95, 0.1, prune_margin=0.3, progress=False)
    assert set(base.as_dict()) <= set(wide.as_dict())  # margin can only add itemsets
    assert all(v >= 0.1 * 1500 for v in wide.as_dict().values())  # reports still meet the threshold
    assert repr(base).startswith("EstimatedItemsets(") and "\n" not in repr(base)
    se = base.std_errors()
    assert se.shape == base.counts.shape and np.all(se > 0)
    with pytest.raises(InvalidParameter):
        mine(d, 0.5, 0.5, 0.1)


def test_support_counter_on_distorted_matches_dense():
    tx = _random_tx(n_rows=800, n_items=20)
    d = distort(tx, 0.4, 0.9, key=Key(2))
    y = d.compute().toarray().astype(bool)
    q = np.array([[0, 5, 9], [1, 2, 3], [4, 7, 19]])
    expected = [int(y[:, row].all(axis=1).sum()) for row in q]
    assert SupportCounter(d, progress=False).itemset_counts(q).tolist() == expected
