"""EMASK's level-2 block search (ppdm_dask/emask/block_search.py, _pair_kernels.py) against
brute force on dense matrices, and against the mining engine's counting (the old path)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from ppdm_dask import Key, TransactionArray
from ppdm_dask.data.packed import pack_rows
from ppdm_dask.emask import _pair_kernels as P
from ppdm_dask.emask import distort, mine
from ppdm_dask.emask.block_search import ENTRY_COST, BlockSearchCounter, threads_per_block
from ppdm_dask.errors import InvalidParameter
from ppdm_dask.mining import SupportCounter
from ppdm_dask.mining.counting import ROW_INCREMENT_COST


def _random_csr(n_rows, n_items, density, seed):
    rng = np.random.default_rng(seed)
    return sp.csr_array((rng.random((n_rows, n_items)) < density).astype(np.int32))


def _distorted(n_rows=1200, n_items=24, density=0.3, p=0.5, q=0.9, nparts=3, seed=0):
    x = _random_csr(n_rows, n_items, density, seed)
    return distort(TransactionArray.from_scipy(x, npartitions=nparts), p, q, key=Key(seed + 5))


# ---------------------------------------------------------------------- kernels


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("n_rows", [1, 63, 64, 65, 700])
def test_bitsets_and_pair_counts_equal_the_dense_products(n_rows, threads):
    x = _random_csr(n_rows, 30, 0.3, seed=n_rows)
    items = np.array([0, 3, 4, 9, 10, 11, 17, 21, 28, 29], dtype=np.int32)
    dense = x.toarray()[:, items].astype(np.int64)
    bits = P.block_bitsets(x, items, threads)
    # oracle of the layout: bit r of word w of item i <=> row 64 w + r holds items[i]
    unpacked = np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")[:, :n_rows]
    assert np.array_equal(unpacked, dense.T.astype(np.uint8))
    assert np.array_equal(P.block_bitsets(pack_rows(x), items), bits)  # packed rows decode the same
    gram = dense.T @ dense
    ia, ib = np.triu_indices(items.size, 1)
    assert P.gram_pair_counts(bits, threads).tolist() == gram[ia, ib].tolist()
    assert P.block_pair_counts(x, items, threads).tolist() == gram[ia, ib].tolist()


@pytest.mark.parametrize("f", [2, 3, 7, 8, 31])
@pytest.mark.parametrize("parts", [1, 2, 4])
def test_item_ranges_cover_every_first_item_once(f, parts):
    ranges = P.item_ranges(f, parts)
    covered = [a for a0, a1 in ranges for a in range(a0, a1)]
    assert covered == list(range(f))
    assert all(a0 % 2 == 0 for a0, _ in ranges)  # the kernel pairs first items from even starts
    # odd numbers of items split over threads still count every pair (the lone-item branch)
    x = _random_csr(200, f, 0.4, seed=f)
    dense = x.toarray().astype(np.int64)
    ia, ib = np.triu_indices(f, 1)
    bits = P.block_bitsets(x, np.arange(f, dtype=np.int32))
    assert P.gram_pair_counts(bits, parts).tolist() == (dense.T @ dense)[ia, ib].tolist()


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_extension_counts_equal_brute_force(threads):
    x = _random_csr(900, 12, 0.45, seed=3)
    dense = x.toarray().astype(bool)
    bits = P.block_bitsets(x, np.arange(12, dtype=np.int32))
    for k in (3, 4):
        cands = np.array(list(itertools.combinations(range(12), k)))
        prefixes, parent_of = np.unique(cands[:, :-1], axis=0, return_inverse=True)
        got = P.extension_counts(bits, prefixes, parent_of.ravel(), cands[:, -1], threads)
        assert got.tolist() == dense[:, cands].all(axis=2).sum(axis=0).tolist()
    assert P.extension_counts(bits, np.zeros((0, 2), np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)).size == 0


# ---------------------------------------------------------------------- the counter


@pytest.mark.parametrize("nparts", [1, 4])
def test_block_search_pair_counts_equal_brute_force_and_the_mining_engine(nparts):
    d = _distorted(nparts=nparts)
    y = d.compute().toarray().astype(np.int64)
    counter = BlockSearchCounter(SupportCounter(d, progress=False), engine="block")
    counter.item_counts()
    items = np.array([1, 2, 5, 8, 13, 20, 23], dtype=np.int32)
    got = counter.pair_counts(items)
    ia, ib = np.triu_indices(items.size, 1)
    assert got.tolist() == (y[:, items].T @ y[:, items])[ia, ib].tolist()
    assert counter.choice["engine"] == "block"
    # the old path: the mining engine's pair enumeration and bitsets
    for method in ("rows", "bitsets"):
        assert SupportCounter(d, progress=False).pair_counts(items, method=method).tolist() == got.tolist()
    # the levels >= 3 reuse the block search's bitsets (positions into bit_items)
    counter.use_bitsets(items[[0, 2, 4, 5]])
    assert counter.bit_items.tolist() == items.tolist()
    cands = np.array(list(itertools.combinations(range(items.size), 3)))
    prefixes, parent_of = np.unique(cands[:, :-1], axis=0, return_inverse=True)
    (counts,) = counter.extension_counts_many([(prefixes, parent_of.ravel(), cands[:, -1])])
    assert counts.tolist() == y[:, items[cands]].all(axis=2).sum(axis=0).tolist()
    counter.release()
    assert counter.bit_items is None


def test_the_cost_estimate_is_the_documented_formula_and_decides():
    d = _distorted(n_rows=1000, n_items=20, nparts=2)
    y = d.compute().toarray()
    counter = BlockSearchCounter(SupportCounter(d, progress=False))
    counter.item_counts()
    items = np.arange(0, 20, 2, dtype=np.int32)
    block, rows = counter.estimate(items)
    n, f = 1000, items.size
    mu = y[:, items].sum() / n
    assert block == pytest.approx(f * (f - 1) / 2 * n / 64)
    assert rows == pytest.approx(0.5 * n * (mu * mu + mu) * ROW_INCREMENT_COST + ENTRY_COST * y.sum())
    counter.pair_counts(items)
    assert counter.choice["engine"] == ("block" if block < rows else "counter")
    # many items over few rows: the pairs' words cost more than enumerating them in rows
    sparse = TransactionArray.from_scipy(_random_csr(64, 400, 0.01, seed=1), npartitions=1)
    c2 = BlockSearchCounter(SupportCounter(sparse, progress=False))
    c2.item_counts()
    many = np.arange(400, dtype=np.int32)
    b2, r2 = c2.estimate(many)
    assert b2 > r2
    c2.pair_counts(many)
    assert c2.choice["engine"] == "counter" and "pairs counted by the mining engine" in c2.choice["reason"]


@pytest.mark.parametrize("pq", [(0.5, 0.9), (0.7, 0.95)])
def test_mine_gives_the_same_result_with_every_engine_and_partitioning(pq):
    d = _distorted(n_rows=1500, n_items=16, density=0.4, p=pq[0], q=pq[1], nparts=3, seed=2)
    ref = mine(d, *pq, 0.04, progress=False, engine="rows")
    assert all(st.get("pair_search", "").startswith("pairs counted by the mining engine") for st in ref.level_stats[1:])
    assert max(len(s) for s in ref.itemsets) >= 3  # the levels >= 3 run on the block search's bitsets below
    for engine in ("block", "auto"):
        for nparts in (1, 3, 7):
            got = mine(d.repartition(npartitions=nparts), *pq, 0.04, progress=False, engine=engine)
            # exact counts, the same reconstruction: identical estimates, not merely close ones
            assert got.as_dict() == ref.as_dict(), (engine, nparts)
    blocked = mine(d, *pq, 0.04, progress=False, engine="block")
    assert blocked.level_stats[1]["pair_search"].startswith("block search")
    assert blocked.level_stats[1]["memory_plan"] == "persist"


def test_a_plan_that_keeps_no_bitsets_leaves_level_2_to_the_mining_engine():
    d = _distorted(nparts=2)
    ref = mine(d, 0.5, 0.9, 0.1, progress=False, engine="rows")
    for plan in ("stream", "packed"):
        got = mine(d, 0.5, 0.9, 0.1, progress=False, engine="block", memory_plan=plan)
        assert "bitsets not kept" in got.level_stats[1]["pair_search"]
        assert got.as_dict() == ref.as_dict()


def test_block_search_on_the_cluster(on_cluster):
    d = _distorted(nparts=3)
    ref = mine(d, 0.5, 0.9, 0.1, progress=False, engine="rows")
    got = mine(d, 0.5, 0.9, 0.1, progress=False, engine="block")
    assert got.level_stats[1]["pair_search"].startswith("block search")
    assert got.as_dict() == ref.as_dict()


def test_an_unknown_engine_is_refused_by_name():
    d = _distorted(n_rows=100)
    with pytest.raises(InvalidParameter) as err:
        mine(d, 0.5, 0.9, 0.1, engine="fast")
    assert err.value.parameter == "engine" and "'fast'" in str(err.value)
    with pytest.raises(InvalidParameter):
        BlockSearchCounter(SupportCounter(d), engine="fast")


def test_threads_per_block_share_the_cores_among_the_blocks():
    class Fake:
        def __init__(self, threads):
            self.threads = threads

        def nthreads(self):
            return {f"w{i}": t for i, t in enumerate(self.threads)}

    two_by_two = Fake([2, 2])
    assert threads_per_block(1, two_by_two) == 2  # one block: its worker's two threads
    assert threads_per_block(2, two_by_two) == 2  # one block per worker
    assert threads_per_block(4, two_by_two) == 1  # two blocks per worker share its two threads
    assert threads_per_block(1, Fake([16])) == 4  # never more than MAX_THREADS
    assert threads_per_block(1, Fake([])) == 1
