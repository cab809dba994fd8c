"""KRIMP candidates mined in threads and the search on merged rows (issue 40).

The threaded miner deals the top-level extensions out to chunks searched in parallel; its
candidates must be those of a brute-force enumeration and, array for array, those of the serial
miner (same sets, same supports, same standard order) for every number of threads. The search
covers the rows restricted to the candidates' items with identical rows merged; its code tables
must be those of the literal transcription of KRIMP (``_ref_krimp``), which covers every row.
"""

from __future__ import annotations

import numpy as np
import pytest

from ppdm_dask.errors import ResultTooLargeError
from ppdm_dask.krimp import as_database, krimp, mine_candidates
from ppdm_dask.krimp import candidates as CC
from ppdm_dask.krimp._cover import merged_rows

from .test_krimp import _assert_same_as_reference, _brute_frequent, _load, _random_categorical


def _same(a, b) -> bool:
    return np.array_equal(a.offsets, b.offsets) and np.array_equal(a.items, b.items) and np.array_equal(a.supports, b.supports)


@pytest.mark.parametrize("seed", range(3))
def test_threaded_miner_equals_brute_force_and_serial(seed):
    rng = np.random.default_rng(seed)
    doms = [int(x) for x in rng.integers(2, 4, size=6)]
    rows = _random_categorical(200 + seed, 60, doms)
    rows += [sorted({int(x) for x in rng.integers(1, 16, size=4)}) for _ in range(20)]  # some basket rows too
    for closed in (False, True):
        for minsup in (1, 3):
            for max_len in (None, 3):
                want = _brute_frequent(rows, minsup, closed, max_len)
                serial = mine_candidates(rows, minsup, closed=closed, max_len=max_len, threads=1)
                assert {frozenset(x): int(s) for x, s in zip(serial.itemsets(), serial.supports)} == want
                for threads in (2, 4):
                    got = mine_candidates(rows, minsup, closed=closed, max_len=max_len, threads=threads)
                    assert _same(got, serial), (closed, minsup, max_len, threads)
    ex = [[1, 2], [7]]
    serial = mine_candidates(rows, 2, closed=True, exclude=ex, threads=1)
    assert _same(mine_candidates(rows, 2, closed=True, exclude=ex, threads=4), serial)


def test_threaded_miner_splits_the_roots():
    """Several chunks; the closure of the empty set reported once (every row holds items 7 and
    8: {7, 8} is closed); each itemset found by exactly one chunk."""
    rows = [[1, 7, 8], [2, 7, 8], [1, 2, 7, 8], [3, 4, 7, 8], [1, 3, 7, 8], [2, 4, 7, 8]]
    d = as_database(rows)
    assert CC._n_chunks(d, 1, 2) == 3  # 6 frequent items, at least 2 per chunk
    assert CC._n_chunks(d, 1, 1) == 1
    want = _brute_frequent(rows, 1, closed=True)
    for threads in (1, 2, 4):
        c = mine_candidates(rows, 1, closed=True, threads=threads)
        assert {frozenset(x): int(s) for x, s in zip(c.itemsets(), c.supports)} == want
        assert c.itemsets().count([7, 8]) == 1


def _chunk_sets(d, minsup, closed, threads):
    ex = CC.exclusion_bits(d, ())
    depth = CC._before_mining(d, minsup, closed, 0, 0, 0)
    parts = CC._mine(d, minsup, closed, 0, ex, depth, 0, 0, threads)
    labels = d.new_labels
    return [
        [frozenset(int(labels[i]) for i in range(d.n_items) if (b[i >> 6] >> np.uint64(i & 63)) & 1) for b in p[0]] for p in parts
    ]


@pytest.mark.parametrize("closed", [True, False])
def test_threaded_miner_splits_below_a_dominant_item(closed):
    """Item 1 is in 90 % of the rows, so nearly every itemset lies below it (as on mushroom at
    min-support 1): its node is searched by every chunk and the subtrees below it are dealt
    out, so they land in several chunks; still each itemset is found by exactly one chunk and
    the union is the brute-force answer."""
    rng = np.random.default_rng(5)
    rows = [sorted({1} | {int(x) for x in rng.choice(np.arange(2, 14), size=4, replace=False)}) for _ in range(90)]
    rows += [sorted({int(x) for x in rng.choice(np.arange(2, 14), size=4, replace=False)}) for _ in range(10)]
    d = as_database(rows)
    minsup = 3
    want = _brute_frequent(rows, minsup, closed=closed)
    chunks = _chunk_sets(d, minsup, closed, 2)
    assert len(chunks) > 1
    found = [s for c in chunks for s in c]
    assert len(found) == len(set(found)) == len(want)
    assert set(found) == set(want)
    # the sets holding item 1 and at least two more (below its node) come from several chunks
    assert sum(any(1 in s and len(s) >= 3 for s in c) for c in chunks) > 1
    for threads in (2, 4):
        got = mine_candidates(rows, minsup, closed=closed, threads=threads)
        assert _same(got, mine_candidates(rows, minsup, closed=closed, threads=1))


def test_threaded_miner_on_lucs_vs_pyfim(lucs):
    fim = pytest.importorskip("fim")
    rows = _load(lucs / "led7.dat")
    ref = {frozenset(x): s for x, s in fim.eclat(rows, target="c", supp=-2, report="a", zmin=2)}
    serial = mine_candidates(rows, 2, closed=True, threads=1)
    assert {frozenset(x): int(s) for x, s in zip(serial.itemsets(), serial.supports)} == ref
    for threads in (2, 4):
        assert _same(mine_candidates(rows, 2, closed=True, threads=threads), serial)


@pytest.fixture(scope="module")
def lucs(shared_data):
    return shared_data / "lucs"


def test_threaded_stream_with_spilled_runs(lucs, tmp_path):
    """Every thread hands its buffers to the one spiller: the merged runs are the serial order."""
    rows = _load(lucs / "led7.dat")
    whole = mine_candidates(rows, 1, threads=1)
    d = as_database(rows)
    bits = CC.items_to_bits(whole.offsets, whole.new_items, d.n_items)
    for threads in (1, 2, 4):
        with CC.candidate_stream(d, 1, memory=50_000, spill_dir=str(tmp_path), threads=threads) as st:
            assert st.n_runs > 1
            got = list(st.chunks(4096))
        assert np.array_equal(np.concatenate([b for b, _ in got]), bits)
        assert np.array_equal(np.concatenate([s for _, s in got]), whole.supports)


def test_threaded_miner_bound():
    rows = [list(range(1, 13))] * 3
    n_all = 2**12 - 1 - 12  # every subset of >= 2 items of the one distinct row
    assert len(mine_candidates(rows, 1, threads=2, max_candidates=None)) == n_all
    for threads in (1, 2, 4):
        with pytest.raises(ResultTooLargeError):
            mine_candidates(rows, 1, threads=threads, max_candidates=100)


def test_merged_rows():
    # items 0..4 (new ids); candidates hold 0, 1, 2 only
    row_bits = np.array([[0b00111], [0b00111], [0b11011], [0b11000], [0b00111], [0b10001]], np.uint64)
    items = np.array([0b00111], np.uint64)
    rows, wt, tid = merged_rows(row_bits, items, 5)
    got = sorted(zip(rows[:, 0].tolist(), wt.tolist()))
    assert got == [(0b00011, 1), (0b00111, 3)]  # row 3 holds none, row 5 one item: dropped
    for i in range(5):
        want = sum(1 << t for t in range(rows.shape[0]) if rows[t, 0] >> i & 1)
        assert int(tid[i, 0]) == want
    rows, wt, tid = merged_rows(row_bits, np.array([0b11000], np.uint64), 5)
    assert rows.shape[0] == 1 and wt.tolist() == [2]
    rows, wt, _ = merged_rows(row_bits[3:4], items, 5)
    assert wt.tolist() == [0] and not rows.any()  # no row left: one empty row of weight 0


@pytest.mark.parametrize("seed", range(4))
def test_search_on_merged_rows_vs_reference(seed):
    """Many duplicate rows and items below the min-support: the merged search's code table,
    usages and sizes are those of the literal KRIMP, which covers every row."""
    rng = np.random.default_rng(seed)
    base = _random_categorical(300 + seed, 12, [3, 2, 3, 2])
    rows = [base[int(i)] + ([50 + int(rng.integers(0, 8))] if rng.random() < 0.3 else []) for i in rng.integers(0, 12, 90)]
    for minsup in (2, 6):
        for closed in (False, True):
            cands = mine_candidates(rows, minsup, closed=closed)
            for prune in (True, False):
                _assert_same_as_reference(rows, cands, prune)
            mined = krimp(rows, min_support=minsup, closed=closed)
            given = krimp(rows, cands)
            assert [x.tolist() for x in mined.code_table.itemsets] == [x.tolist() for x in given.code_table.itemsets]
            assert mined.code_table.usages.tolist() == given.code_table.usages.tolist()
            assert mined.code_table.sizes()["total"] == given.code_table.sizes()["total"]
