"""Distributed KRIMP search (docs/krimp.md#distributed-search) and the streamed candidates
(docs/krimp.md#memory).

Oracle: the single-machine search, itself equal to the authors' code tables
(test_krimp.py::test_krimp_equals_authors_code_table) — the distributed search must give the same
elements, order, usages and sizes for any partitioning, on blocks in this process and on a
2-worker LocalCluster, also when a block is lost and rebuilt. The Apriori candidate path is
checked against pyfim's closed itemsets, the merge of spilled runs against one in-memory sort,
the batch-size model against its defining sum.
"""

from __future__ import annotations

import numpy as np
import pytest

from ppdm_dask.data.datasets import load_sample
from ppdm_dask.errors import InvalidParameter, ResultTooLargeError
from ppdm_dask.krimp import KrimpGenerator, krimp, mine_candidates
from ppdm_dask.krimp import distributed as D
from ppdm_dask.krimp.candidates import candidate_stream, standard_order
from ppdm_dask.random import Key


def _table(res) -> list:
    ct = res.code_table
    return [(tuple(int(i) for i in x), int(u), int(s)) for x, u, s in zip(ct.itemsets, ct.usages, ct.supports)]


@pytest.fixture(scope="module")
def led7():
    return load_sample("led7").persist()


@pytest.mark.parametrize(
    "name, closed, ms, prune",
    [("led7", False, 1, True), ("pima", False, 1, True), ("pima", False, 2, False), ("mushroom", True, 400, True)],
)
def test_same_code_table_for_1_2_8_blocks(name, closed, ms, prune):
    tx = load_sample(name).persist()
    want = krimp(tx, min_support=ms, closed=closed, prune=prune)
    for parts in (1, 2, 8):
        got = D.krimp_distributed(tx.repartition(npartitions=parts), min_support=ms, closed=closed, prune=prune)
        assert _table(got) == _table(want)
        assert got.code_table.sizes() == want.code_table.sizes()
        assert (got.n_accepted, got.n_pruned, got.n_candidates) == (want.n_accepted, want.n_pruned, want.n_candidates)
        assert got.stats["round_trips"] > 0 and "block" in got.stats["blocks"]


@pytest.mark.parametrize("batch_size", [1, 7, 300])
def test_any_batch_size_gives_the_same_table(led7, batch_size):
    want = krimp(led7, min_support=2)
    got = D.krimp_distributed(led7.repartition(npartitions=3), min_support=2, batch_size=batch_size)
    assert _table(got) == _table(want)
    assert got.stats["planner"]["batch_size"] == batch_size


def test_given_candidates_and_options(led7):
    cands = mine_candidates(led7, 20)
    plain = [x.tolist() for x in cands][::-1]  # any order: put into the standard order
    want = krimp(led7, plain, max_len=4, exclude=[[1, 8]])
    for given in (cands, plain):
        got = D.krimp_distributed(led7.repartition(npartitions=2), given, max_len=4, exclude=[[1, 8]])
        assert _table(got) == _table(want)
    assert all(not {1, 8} <= set(x.tolist()) and len(x) <= 4 for x in got.code_table.itemsets)
    with pytest.raises(InvalidParameter):
        D.krimp_distributed([[1, 2], [2, 3]], min_support=1)
    with pytest.raises(InvalidParameter):
        D.krimp_distributed(led7, min_support=1, miner="eclat")


def test_krimp_distributed_option(led7):
    assert _table(krimp(led7, min_support=5, distributed=True)) == _table(krimp(led7, min_support=5))


def test_apriori_candidates_equal_the_miner(led7):
    """Candidates counted on the cluster by Apriori (closed ones filtered on the driver) are the
    depth-first miner's, so the tables agree; the closed filter against pyfim's closed itemsets."""
    fim = pytest.importorskip("fim")
    for closed in (False, True):
        want = krimp(led7, min_support=30, closed=closed)
        got = D.krimp_distributed(led7.repartition(npartitions=2), min_support=30, closed=closed, miner="apriori")
        assert got.n_candidates == want.n_candidates
        assert _table(got) == _table(want)
    rows = led7.to_lists()
    ref = {frozenset(x) for x, _ in fim.fpgrowth(rows, target="c", supp=-30, zmin=2, report="a")}
    got = {frozenset(x.tolist()) for x in mine_candidates(led7, 30, closed=True)}
    assert got == ref


def test_a_rebuilt_block_is_brought_up_to_date(led7, monkeypatch):
    """A block that comes back empty (version 0) mid-search is replayed from the change log."""
    want = krimp(led7, min_support=2)
    trips = {"n": 0}
    original = D.LocalBlocks.round_trip

    def losing(self, log, base, n_new, request, sizes):
        trips["n"] += 1
        if trips["n"] in (40, 200):
            b = self.blocks[1]
            self.blocks[1] = D.CoverBlock(_rows_of(b), np.arange(b.n_items), b.n_items, self._longest, self._index_memory)
        return original(self, log, base, n_new, request, sizes)

    monkeypatch.setattr(D.LocalBlocks, "round_trip", losing)
    got = D.krimp_distributed(led7.repartition(npartitions=3), min_support=2, batch_size=16)
    assert trips["n"] > 200 and got.stats["blocks_replayed"] == 2
    assert _table(got) == _table(want)


def _rows_of(block: D.CoverBlock):
    """The rows of a block as a CSR over new ids (to rebuild it)."""
    import scipy.sparse as sp

    bits = block.rec[:, : block.w]
    rows, cols = [], []
    for t in range(block.n_rows):
        for k in range(block.w):
            x = int(bits[t, k])
            while x:
                b = (x & -x).bit_length() - 1
                x &= x - 1
                rows.append(t)
                cols.append(k * 64 + b)
    return sp.csr_array((np.ones(len(rows), np.int32), (rows, cols)), shape=(block.n_rows, block.n_items))


@pytest.mark.cluster
def test_on_a_two_worker_local_cluster(cluster_client, led7):
    want = krimp(led7, min_support=20)  # 285 acceptances, 170 prunings: every kind of round trip
    for parts in (2, 8):
        got = D.krimp_distributed(led7.repartition(npartitions=parts), min_support=20, client=cluster_client)
        assert _table(got) == _table(want)
        assert got.stats["blocks"] == f"{parts} cover blocks on 2 worker(s)"


@pytest.mark.cluster
def test_a_lost_worker_is_replaced_on_the_cluster(cluster_client, led7, monkeypatch):
    """The worker holding a block host is restarted mid-search: the host is rebuilt elsewhere from
    the partitions and replayed, and the code table is unchanged."""
    want = krimp(led7, min_support=2)
    trips = {"n": 0}
    original = D.ClusterBlocks.round_trip

    def restarting(self, log, base, n_new, request, sizes):
        trips["n"] += 1
        if trips["n"] == 30:
            addr = sorted(self.client.scheduler_info()["workers"])[0]
            self.client.restart_workers([addr])
        return original(self, log, base, n_new, request, sizes)

    monkeypatch.setattr(D.ClusterBlocks, "round_trip", restarting)
    got = D.krimp_distributed(led7.repartition(npartitions=4), min_support=2, client=cluster_client, batch_size=32)
    assert trips["n"] > 30 and got.stats["blocks_replayed"] >= 1
    assert _table(got) == _table(want)


def test_batch_planner_model():
    p = D.BatchPlanner()
    p.accepts, p.tried = 1.0, 50.0
    for b in (1, 7, 64):
        # candidates consumed by a batch of b: the first acceptance ends it
        assert p.expected(b) == pytest.approx(sum((1 - p.p) ** i for i in range(b)))
    p.e = 1e-6
    p.c0 = 1e-5
    small = p.best()
    p.c0 = 1e-1
    large = p.best()
    assert small < large  # a slow round trip pays for bigger batches
    for c0 in (1e-5, 1e-3, 1e-1):  # the pick maximises candidates per second over the sizes
        p.c0 = c0
        rate = {b: p.expected(b) / (c0 + b * p.e) for b in p.SIZES}
        assert rate[p.best()] == max(rate.values())
    fixed = D.BatchPlanner(12)
    fixed.update(12, 3, True, 0.01, 0.001)
    assert fixed.size == 12


# ----------------------------------------------------------------------------- streamed candidates
def test_spilled_runs_merge_in_the_standard_order(led7):
    d = led7
    whole = mine_candidates(d, 1)
    with candidate_stream(d, 1, memory=50_000) as st:
        assert st.n_runs > 3 and st.n_candidates == len(whole)
        bits = np.concatenate([b for b, _ in st.chunks(1000)])
    with candidate_stream(d, 1) as st2:
        assert st2.n_runs == 0
        ref_bits = np.concatenate([b for b, _ in st2.chunks(1 << 20)])
        ref_sup = np.concatenate([s for _, s in st2.chunks(1 << 20)])
    assert np.array_equal(bits, ref_bits)
    # the in-memory order is the lexsort of standard_order: a permutation of itself
    assert np.array_equal(standard_order(ref_bits, ref_sup), np.arange(ref_sup.size))
    a = krimp(d, min_support=1)
    b = krimp(d, min_support=1, memory=50_000)
    assert b.stats["spilled_runs"] > 3 and _table(a) == _table(b)


def test_spill_folder_is_removed(led7, tmp_path):
    with candidate_stream(led7, 1, memory=50_000, spill_dir=str(tmp_path)) as st:
        assert st.n_runs > 1 and any(tmp_path.iterdir())
        next(iter(st.chunks(10)))
    assert not any(tmp_path.iterdir())


def test_candidate_explosion_is_refused_before_memory_runs_out():
    mush = load_sample("mushroom")
    with pytest.raises(ResultTooLargeError, match="min-support 1") as e:
        KrimpGenerator(min_support=1, allow_weak=True, key=Key(1), max_candidates=200_000).fit(mush)
    assert "closed" in str(e.value)
    with pytest.raises(ResultTooLargeError):
        krimp(mush, min_support=1, max_candidates=100_000)


def test_generator_on_the_distributed_cover(led7):
    """The generator fitted with the distributed search has the same code table, so the same
    rows for the same key."""
    a = KrimpGenerator(min_support=20, key=Key(3)).fit(led7)
    b = KrimpGenerator(min_support=20, key=Key(3), distributed=True).fit(led7.repartition(npartitions=3))
    ta, tb = a.code_table_, b.code_table_
    assert [x.tolist() for x in ta.itemsets] == [x.tolist() for x in tb.itemsets] and ta.usages.tolist() == tb.usages.tolist()
    assert a.sample_lists(500) == b.sample_lists(500)


def test_indexes_are_accelerators_only(led7):
    """Without the row indexes (no memory for them) the search takes the same decisions."""
    mush = load_sample("mushroom")
    for db, ms, closed in ((led7, 1, False), (mush, 300, True)):
        want = krimp(db, min_support=ms, closed=closed)
        assert _table(krimp(db, min_support=ms, closed=closed, index_memory=0)) == _table(want)
        assert _table(
            D.krimp_distributed(db.repartition(npartitions=2), min_support=ms, closed=closed, index_memory=0)
        ) == _table(want)
