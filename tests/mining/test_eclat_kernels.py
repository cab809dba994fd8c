"""The partition strategy's per-block kernels alone, against brute force (no dask)."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp

from ppdm_dask.mining import _eclat_kernels as E
from ppdm_dask.mining import _kernels as K

pytestmark = pytest.mark.skipif(not E.available(), reason="numba not installed")


def _all_counts(X: np.ndarray) -> Counter:
    counts: Counter = Counter()
    for r in X:
        ids = np.flatnonzero(r).tolist()
        for k in range(1, len(ids) + 1):
            counts.update(itertools.combinations(ids, k))
    return counts


def _as_dict(result) -> dict[tuple, int]:
    lengths, items, counts, _ = result
    out, off = {}, 0
    for k, c in zip(lengths.tolist(), counts.tolist()):
        out[tuple(items[off : off + k].tolist())] = c
        off += k
    assert len(out) == lengths.size  # no itemset twice
    return out


def _pair_totals(freq: dict[tuple, int], m: int) -> np.ndarray:
    totals = np.zeros((m, m), np.int32)
    for s, c in freq.items():
        if len(s) == 2:
            totals[s[0], s[1]] = totals[s[1], s[0]] = c
    return totals


@pytest.mark.parametrize("density", [0.15, 0.5, 0.9])
@pytest.mark.parametrize("seed", range(4))
def test_mine_block_equals_brute_force(density, seed):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(20, 200)), 13 if density < 0.9 else 11
    X = (rng.random((n, m)) < density).astype(np.int32)
    bits = K.build_bitsets(sp.csr_array(X), np.arange(m, dtype=np.int32))
    counts = _all_counts(X)
    min_count = max(1, int(n * (0.6 if density >= 0.9 else 0.1 if density >= 0.5 else 0.03)))
    freq = {s: c for s, c in counts.items() if c >= min_count}
    totals = _pair_totals(freq, m)
    for max_length in (None, 3, 5):
        result = E.mine_block(bits, totals, min_count, min_count, max_length, 10**9)
        assert result[3]
        want = {s: c for s, c in freq.items() if len(s) >= 3 and (max_length is None or len(s) <= max_length)}
        assert _as_dict(result) == want
        for k, (rows, c) in E.split_by_length(result).items():  # lexicographic rows, their counts
            assert [tuple(r) for r in rows.tolist()] == sorted(want_k for want_k in want if len(want_k) == k)
            assert c.tolist() == [want[tuple(r)] for r in rows.tolist()]


def test_deep_search_grows_its_stack():
    # every itemset of 18 items in all 50 rows: lengths up to 18 (the stack starts with 16 rows)
    m = 18
    X = np.ones((50, m), np.int32)
    bits = K.build_bitsets(sp.csr_array(X), np.arange(m, dtype=np.int32))
    lengths, items, counts, complete = E.mine_block(bits, np.full((m, m), 50, np.int32), 50, 50, None, 10**9)
    assert complete and lengths.max() == m and (counts == 50).all()
    assert lengths.size == 2**m - 1 - m - m * (m - 1) // 2
    assert np.bincount(lengths).tolist()[3:] == [math.comb(m, k) for k in range(3, m + 1)]


def test_local_search_keeps_every_globally_frequent_itemset_of_its_block():
    # two blocks: each keeps (at least) the itemsets frequent globally and at its scaled
    # threshold, and nothing below that threshold or unable to reach the global one
    rng = np.random.default_rng(11)
    X = (rng.random((300, 12)) < 0.45).astype(np.int32)
    X[:150, :6] |= (rng.random((150, 6)) < 0.5).astype(np.int32)  # the first block is denser on 0..5
    glob = _all_counts(X)
    mc = 40
    freq = {s: c for s, c in glob.items() if c >= mc}
    totals = _pair_totals(freq, 12)
    for lo, hi in ((0, 150), (150, 300)):
        local = _all_counts(X[lo:hi])
        t = (mc * (hi - lo) + 299) // 300
        got = _as_dict(
            E.mine_block(K.build_bitsets(sp.csr_array(X[lo:hi]), np.arange(12, dtype=np.int32)), totals, t, mc, None, 10**9)
        )
        assert all(c == local[s] and c >= t for s, c in got.items())
        must = {s for s in freq if len(s) >= 3 and local[s] >= t}
        assert must <= set(got)
        for s in got:  # kept only when its pairs elsewhere could complete it
            elsewhere = min(glob[p] - local[p] for p in itertools.combinations(s, 2))
            assert local[s] + elsewhere >= mc and all(p in freq for p in itertools.combinations(s, 2))


def test_bound_stops_the_search():
    X = np.ones((10, 12), np.int32)
    bits = K.build_bitsets(sp.csr_array(X), np.arange(12, dtype=np.int32))
    totals = np.full((12, 12), 10, np.int32)
    lengths, _, _, complete = E.mine_block(bits, totals, 1, 1, None, 100)
    assert not complete and lengths.size == 100
    assert E.mine_block(bits, totals, 1, 1, None, 2**12)[3]  # 2^12 - 1 - 12 - 66 itemsets of length >= 3


def test_count_itemsets_and_count_missing():
    rng = np.random.default_rng(2)
    X = (rng.random((150, 10)) < 0.5).astype(np.int32)
    bits = K.build_bitsets(sp.csr_array(X), np.arange(10, dtype=np.int32))
    counts = _all_counts(X)
    sets = sorted(counts, key=lambda s: (s, len(s)))[:300] + [(0,), (3, 9)]
    lengths = np.array([len(s) for s in sets])
    flat = np.array([i for s in sets for i in s])
    assert E.count_itemsets(bits, lengths, flat).tolist() == [counts[s] for s in sets]
    # count_missing: counts of the queried itemsets the local result lacks, 0 for those it holds
    freq = {s: c for s, c in counts.items() if c >= 20}
    result = E.mine_block(bits, _pair_totals(freq, 10), 20, 20, None, 10**9)
    held = set(_as_dict(result))
    query3 = np.array(sorted(s for s in counts if len(s) == 3)[:50], np.int32)
    got = E.count_missing(bits, result, [(3, query3)])
    assert got.tolist() == [0 if tuple(r) in held else counts[tuple(r)] for r in query3.tolist()]


@pytest.mark.parametrize("threads", [2, 3, 8])
@pytest.mark.parametrize("seed", range(3))
def test_threaded_search_of_one_block_equals_brute_force(threads, seed):
    """With one block the roots are searched by several threads (interleaved chunks): the same
    itemsets and counts, each once, and :func:`split_by_length` gives the single-thread rows."""
    rng = np.random.default_rng(100 + seed)
    n, m = 150, 14
    X = (rng.random((n, m)) < 0.5).astype(np.int32)
    bits = K.build_bitsets(sp.csr_array(X), np.arange(m, dtype=np.int32))
    min_count = int(n * 0.1)
    freq = {s: c for s, c in _all_counts(X).items() if c >= min_count}
    totals = _pair_totals(freq, m)
    one = E.mine_block(bits, totals, min_count, min_count, None, 10**9)
    many = E.mine_block(bits, totals, min_count, min_count, None, 10**9, threads)
    assert many[3]
    assert _as_dict(many) == _as_dict(one) == {s: c for s, c in freq.items() if len(s) >= 3}
    split_one, split_many = E.split_by_length(one), E.split_by_length(many)
    assert split_one.keys() == split_many.keys()
    for k in split_one:
        np.testing.assert_array_equal(split_one[k][0], split_many[k][0])
        np.testing.assert_array_equal(split_one[k][1], split_many[k][1])
    capped = E.mine_block(bits, totals, min_count, min_count, None, 50, threads)
    assert not capped[3] and capped[0].size == 50 and capped[1].size == int(capped[0].sum())
