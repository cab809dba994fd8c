"""The single-block search's sparse paths against independent oracles (brute force, pyfim).

The depth-first search of one block keeps a prefix's bitset as its listed nonzero words when its
support is small against the block's words, and walks a popular root's long tails through the
rare items' neighbour lists. Both need many rows (many words) and skewed supports to run, which
the small random blocks of ``test_eclat_kernels.py`` do not have.
"""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp

from ppdm_dask.mining import _eclat_kernels as E
from ppdm_dask.mining import _kernels as K

from .test_eclat_kernels import _as_dict

pytestmark = pytest.mark.skipif(not E.available(), reason="numba not installed")


def _skewed(seed: int, n: int = 16000, m: int = 90) -> np.ndarray:
    """Zipf-like item popularity: a few items in half the rows, most in a few dozen; a planted
    bundle makes some long itemsets frequent among rare items."""
    rng = np.random.default_rng(seed)
    p = 0.5 / (1.0 + np.arange(m)) ** 1.6 + 0.0015
    X = rng.random((n, m)) < p[rng.permutation(m)]
    bundle = rng.choice(m, 6, replace=False)
    rows = rng.choice(n, 40, replace=False)
    X[np.ix_(rows, bundle)] = True
    return X


def _frequent(X: np.ndarray, min_count: int) -> dict[tuple, int]:
    """Brute force: every itemset with its count, grown level by level from the frequent ones."""
    cols = [frozenset(np.flatnonzero(X[:, j]).tolist()) for j in range(X.shape[1])]
    level: dict[tuple[int, ...], int] = {(j,): len(cols[j]) for j in range(X.shape[1]) if len(cols[j]) >= min_count}
    out = dict(level)
    rows_of: dict[tuple[int, ...], frozenset] = {s: cols[s[0]] for s in level}
    while level:
        nxt: dict[tuple[int, ...], int] = {}
        for s in level:
            for j in range(s[-1] + 1, X.shape[1]):
                r = rows_of[s] & cols[j]
                if len(r) >= min_count:
                    t = s + (j,)
                    nxt[t] = len(r)
                    rows_of[t] = r
        out.update(nxt)
        level = nxt
    return out


def _totals(freq: dict[tuple, int], m: int) -> np.ndarray:
    totals = np.zeros((m, m), np.int32)
    for s, c in freq.items():
        if len(s) == 2:
            totals[s[0], s[1]] = totals[s[1], s[0]] = c
    return totals


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("threads", [1, 3])
def test_sparse_search_of_one_block_equals_brute_force(seed, threads):
    X = _skewed(seed)
    m = X.shape[1]
    bits = K.build_bitsets(sp.csr_array(X.astype(np.int32)), np.arange(m, dtype=np.int32))
    counts = np.bitwise_count(bits).sum(axis=1)
    # roots listed (support <= words / LISTED_WORDS_RATIO) and dense ones, whose prefixes are
    # listed deeper down
    listed = counts * E.LISTED_WORDS_RATIO <= bits.shape[1]
    assert listed.any() and not listed.all()
    min_count = 20
    freq = _frequent(X, min_count)
    want = {s: c for s, c in freq.items() if len(s) >= 3}
    assert sum(len(s) >= 4 for s in want) > 10  # deep enough to use listed prefixes below listed ones
    result = E.mine_block(bits, _totals(freq, m), min_count, min_count, None, 10**9, threads)
    assert result[3]
    assert _as_dict(result) == want


def test_long_tails_walked_through_neighbour_lists():
    # one item in every row pairs with every other: its tails are long (>= STAMP_MIN_TAILS),
    # while each other item has one or two frequent neighbours
    rng = np.random.default_rng(7)
    n, m = 4000, 3 * E.STAMP_MIN_TAILS
    X = np.zeros((n, m), bool)
    X[:, 0] = True
    X[np.arange(n), rng.integers(1, m, n)] = True
    X[np.arange(n), rng.integers(1, m, n)] = True
    chain = np.arange(1, m - 1)
    for a in chain[::2]:  # (a, a + 1) together in 30 more rows
        X[rng.choice(n, 30, replace=False)[:, None], [a, a + 1]] = True
    bits = K.build_bitsets(sp.csr_array(X.astype(np.int32)), np.arange(m, dtype=np.int32))
    min_count = 25
    freq = _frequent(X, min_count)
    want = {s: c for s, c in freq.items() if len(s) >= 3}
    assert len(want) > E.STAMP_MIN_TAILS // 2
    totals = _totals(freq, m)
    assert (totals[0] > 0).sum() >= E.STAMP_MIN_TAILS
    for bounds_count in (min_count, min_count + 1):  # one block, and the bounded search of several
        result = E.mine_block(bits, totals, min_count, bounds_count, None, 10**9)
        assert result[3]
        got = _as_dict(result)
        if bounds_count == min_count:
            assert got == want
        else:  # every kept itemset exact, none missed that is frequent here (the others add 0)
            assert {s: c for s, c in got.items()} == {s: c for s, c in freq.items() if len(s) >= 3 and c >= bounds_count}


def test_single_block_apriori_equals_pyfim():
    fim = pytest.importorskip("fim")
    import dask

    from ppdm_dask import TransactionArray
    from ppdm_dask.mining.apriori import apriori

    X = _skewed(11, n=5000, m=120)
    csr = sp.csr_array(X.astype(np.int32))
    tx = TransactionArray.from_scipy(csr)
    lists = [np.flatnonzero(r).tolist() for r in X]
    for min_count in (10, 25):
        with dask.config.set(scheduler="threads"):
            stats: list = []
            got = apriori(tx, min_count, on_level=stats.append)
        ref = Counter({frozenset(s): c for s, c in fim.fpgrowth(lists, target="s", supp=-min_count, zmin=1, report="a")})
        ours = {frozenset(int(x) for x in s): int(c) for s, c in got.as_dict().items()}
        # ours is labelled by the vocabulary; from_scipy labels columns by their index
        assert ours == dict(ref)
        assert any(st.get("strategy") == "partition" for st in stats if st["length"] >= 3)


def test_brute_force_helper_is_exact():
    # the oracle above against plain subset enumeration on a tiny block
    X = _skewed(3, n=60, m=8)
    counts: Counter = Counter()
    for r in X:
        ids = np.flatnonzero(r).tolist()
        for k in range(1, len(ids) + 1):
            counts.update(itertools.combinations(ids, k))
    assert _frequent(X, 4) == {s: c for s, c in counts.items() if c >= 4}


def _pairs_oracle(X: np.ndarray, items: np.ndarray) -> np.ndarray:
    """Pair counts by scipy's sparse product, in np.triu_indices order."""
    sub = sp.csr_array(X[:, items].astype(np.int64))
    gram = (sub.T @ sub).toarray()
    ia, ib = np.triu_indices(items.size, 1)
    return gram[ia, ib].astype(np.int64)


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_threaded_pair_counts_equal_a_sparse_product(threads, monkeypatch):
    # ranges split by work on skewed data: small data with the thresholds lifted, so that every
    # range (and empty ones) occurs
    monkeypatch.setattr(K, "THREAD_MIN_PAIRS", 0)
    monkeypatch.setattr(K, "THREAD_MIN_INCREMENTS", 0)
    X = _skewed(5, n=3000, m=60)
    csr = sp.csr_array(X.astype(np.int32))
    items = np.flatnonzero(X.sum(axis=0) >= 5).astype(np.int32)[::2]  # a subset: restriction fused in
    want = _pairs_oracle(X, items)
    np.testing.assert_array_equal(K.pair_counts(csr, items, threads=threads), want)
    np.testing.assert_array_equal(K.pair_counts(csr, items), want)


def test_threaded_pair_counts_at_their_thresholds():
    # wide enough for the threads to start by themselves (>= THREAD_MIN_PAIRS pairs, >=
    # THREAD_MIN_INCREMENTS increments)
    rng = np.random.default_rng(9)
    n, m = 3000, 1500
    assert m * (m - 1) // 2 >= K.THREAD_MIN_PAIRS
    lengths = rng.integers(20, 80, n)
    X = np.zeros((n, m), bool)
    X[np.repeat(np.arange(n), lengths), np.concatenate([rng.choice(m, k, replace=False) for k in lengths.tolist()])] = True
    csr = sp.csr_array(X.astype(np.int32))
    items = np.arange(m, dtype=np.int32)
    assert (lengths * (lengths - 1) // 2).sum() >= K.THREAD_MIN_INCREMENTS
    np.testing.assert_array_equal(K.pair_counts(csr, items, threads=2), _pairs_oracle(X, items))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("always", [1, 2])
def test_pair_counts_past_the_16_bit_window(threads, always, monkeypatch):
    # more rows than one 16-bit counting window: with two items in every row their pair passes
    # 65,535 (flushed by windows); with one, no pair can (one window, one flush)
    monkeypatch.setattr(K, "THREAD_MIN_PAIRS", 0)
    monkeypatch.setattr(K, "THREAD_MIN_INCREMENTS", 0)
    rng = np.random.default_rng(4)
    n = K.FLUSH_ROWS + 1234
    X = rng.random((n, 6)) < 0.3
    X[:, :always] = True
    items = np.arange(6, dtype=np.int32)
    csr = sp.csr_array(X.astype(np.int32))
    assert K._flush_window(csr, items) == (n if always == 1 else K.FLUSH_ROWS)
    got = K.pair_counts(csr, items, threads=threads)
    np.testing.assert_array_equal(got, _pairs_oracle(X, items))
    assert got[0] == (n if always == 2 else X[:, 1].sum())


def test_pairs_given_as_a_list_equal_the_matrix():
    # the tuple form (frequent pairs and counts) is expanded in the task: same result
    X = _skewed(2, n=4000, m=50)
    m = X.shape[1]
    bits = K.build_bitsets(sp.csr_array(X.astype(np.int32)), np.arange(m, dtype=np.int32))
    min_count = 15
    freq = _frequent(X, min_count)
    pairs = np.array(sorted(s for s in freq if len(s) == 2), np.int32)
    counts = np.array([freq[tuple(p)] for p in pairs.tolist()], np.int64)
    np.testing.assert_array_equal(E.pair_matrix(pairs, counts, m), _totals(freq, m))
    got = _as_dict(E.mine_block(bits, (pairs, counts), min_count, min_count, None, 10**9))
    assert got == {s: c for s, c in freq.items() if len(s) >= 3}
