"""The memory plans of the support counter (ppdm_dask.mining.counting): persisted bitsets,
packed rows and streamed blocks give the same counts (against numpy counts), ``"auto"``
follows the workers' memory, and each plan keeps on the cluster only what it says."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import scipy.sparse as sp

from ppdm_dask import Key, TransactionArray, cluster
from ppdm_dask.data.quest import quest
from ppdm_dask.emask import distort
from ppdm_dask.emask import mine as emask_mine
from ppdm_dask.mining import apriori
from ppdm_dask.mining import counting as C


def _data(seed=3, n=700, d=25, nparts=4):
    rng = np.random.default_rng(seed)
    X = (rng.random((n, d)) < rng.uniform(0.05, 0.5, d)).astype(np.int8)
    return X, TransactionArray.from_scipy(sp.csr_array(X), npartitions=nparts)


@pytest.mark.parametrize("plan", ["persist", "packed", "stream"])
@pytest.mark.parametrize("nnz_known", [True, False])
def test_each_plan_counts_exactly(plan, nnz_known):
    X, tx = _data()
    if nnz_known:
        tx = TransactionArray(tx.blocks, tx.vocabulary, partition_nnz=[int(X[a:b].sum()) for a, b in _bounds(tx)])
    counter = C.SupportCounter(tx, memory_plan=plan)
    np.testing.assert_array_equal(counter.item_counts(), X.sum(axis=0))
    np.testing.assert_array_equal(
        counter.pair_counts(np.arange(0, 25, 4, dtype=np.int32), method="rows"),
        [(X[:, a] & X[:, b]).sum() for a, b in itertools.combinations(range(0, 25, 4), 2)],
    )
    items = np.arange(0, 25, 2, dtype=np.int32)
    pairs = counter.pair_counts(items, method="bitsets")
    ia, ib = np.triu_indices(items.size, 1)
    np.testing.assert_array_equal(pairs, (X[:, items[ia]] & X[:, items[ib]]).sum(axis=0))
    triples = np.array(list(itertools.combinations(range(0, 25, 3), 3)))
    want = X[:, triples[:, 0]] & X[:, triples[:, 1]] & X[:, triples[:, 2]]
    np.testing.assert_array_equal(counter.itemset_counts(triples), want.sum(axis=0))
    assert counter.plan["plan"] == plan and "asked for" in counter.plan["reason"]
    assert counter.plan["bytes"] == int(C.bitset_bytes(tx.partition_rows, counter.bit_items.size).sum())
    assert counter.rows_plan["packed"] == (plan == "packed")
    assert (counter.packed_nbytes() > 0) == (plan == "packed")


def _bounds(tx):
    ends = np.cumsum(tx.partition_rows)
    return list(zip(np.r_[0, ends[:-1]], ends))


def test_auto_plan_follows_the_budget(monkeypatch):
    _, tx = _data()
    n_items = 10
    total = int(C.bitset_bytes(tx.partition_rows, n_items).sum())
    monkeypatch.setattr(cluster, "memory_budget", lambda share, client=None, *, local: (float(10 * total), "test"))
    big = C.SupportCounter(tx)
    big.use_bitsets(np.arange(n_items, dtype=np.int32))
    assert big.plan["plan"] == "persist" and ": persist (within" in big.plan["reason"]
    monkeypatch.setattr(
        cluster, "memory_budget", lambda share, client=None, *, local: (float(total), "test")
    )  # no room for the largest block
    small = C.SupportCounter(tx)
    small.item_counts()
    small.use_bitsets(np.arange(n_items, dtype=np.int32))
    assert small.plan["plan"] == "stream" and "instead of being spilled" in small.plan["reason"]
    assert not small.rows_plan["packed"]
    # room for the packed rows only: the bitsets are decoded from them in every task
    monkeypatch.setattr(
        cluster,
        "memory_budget",
        lambda share, client=None, *, local: (1e9 if share == C.ROWS_MEMORY_SHARE else float(total), "test"),
    )
    rows_only = C.SupportCounter(tx)
    rows_only.item_counts()
    rows_only.use_bitsets(np.arange(n_items, dtype=np.int32))
    assert rows_only.rows_plan["packed"] and rows_only.plan["plan"] == "packed"
    assert "decoded from the packed rows" in rows_only.plan["reason"] and "packed rows of" in rows_only.plan_fields()["rows"]
    with pytest.raises(ValueError, match="memory_plan"):
        C.SupportCounter(tx, memory_plan="spill")


def test_apriori_and_emask_are_identical_across_plans():
    tx = quest("T10.I4.D3K.N200", key=Key(4)).persist(progress=False)
    runs = {plan: apriori(tx, 0.01, memory_plan=plan) for plan in C.MEMORY_PLANS}
    ref = runs["persist"]
    assert ref.max_length >= 3
    for plan, fi in runs.items():
        assert fi.levels.keys() == ref.levels.keys()
        for k in ref.levels:
            np.testing.assert_array_equal(fi.levels[k][0], ref.levels[k][0])
            np.testing.assert_array_equal(fi.levels[k][1], ref.levels[k][1])
        used = [st for st in fi.level_stats if st["length"] >= 3]
        assert used and all(st["memory_plan"] == ("persist" if plan == "auto" else plan) for st in used)
    dist = distort(tx, 0.5, 0.97, key=Key(5)).persist(progress=False)
    a = emask_mine(dist, 0.5, 0.97, 0.01, memory_plan="persist")
    assert max(a.levels) >= 3
    for plan in ("packed", "stream"):
        b = emask_mine(dist, 0.5, 0.97, 0.01, memory_plan=plan)
        assert a.levels.keys() == b.levels.keys()
        for k in a.levels:
            np.testing.assert_array_equal(a.levels[k][0], b.levels[k][0])
            np.testing.assert_array_equal(a.levels[k][1], b.levels[k][1])


@pytest.mark.cluster
def test_budget_from_the_workers_and_nothing_persisted_when_streaming(on_cluster):
    info = on_cluster.scheduler_info()["workers"].values()
    limits = [w["memory_limit"] for w in info]
    budget, where = cluster.memory_budget(C.BITSET_MEMORY_SHARE, on_cluster, local=0)
    assert budget == pytest.approx(C.BITSET_MEMORY_SHARE * min(limits) * len(limits)) and f"{len(limits)} workers" in where
    X, tx = _data(nparts=4)
    tx = tx.persist(progress=False)
    items = np.arange(12, dtype=np.int32)
    counts = {}
    for plan in ("persist", "packed", "stream"):
        counter = C.SupportCounter(tx, client=on_cluster, memory_plan=plan)
        counter.item_counts()
        counts[plan] = counter.pair_counts(items, method="bitsets")
        held = [str(k) for keys in on_cluster.has_what().values() for k in keys]
        assert any("build_bitsets" in k for k in held) == (plan == "persist"), (plan, held)
        assert sum("pack_rows" in k for k in held) == (tx.n_partitions if plan == "packed" else 0), (plan, held)
        counter.release()
        del counter
    np.testing.assert_array_equal(counts["persist"], counts["stream"])
    np.testing.assert_array_equal(counts["persist"], counts["packed"])


def test_mine_packs_or_rereads_the_input(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from ppdm_dask import read
    from ppdm_dask.cli import cli

    src = str(tmp_path / "q")
    quest("T10.I4.D3K.N200", key=Key(4)).to_parquet(src, progress=False)
    tx = read(src)
    blocks = tx.compute(progress=False)
    assert sum(tx.partition_nnz) == blocks.nnz  # from the manifest, no pass
    runs = {}
    for budget in (1e12, 1.0):  # ample, then nothing fits: rows and bitsets streamed
        monkeypatch.setattr(cluster, "memory_budget", lambda share, client=None, *, local, b=budget: (b, "test"))
        r = CliRunner().invoke(cli, ["--scheduler", "sync", "--no-progress", "--json", "mine", src, "--min-support", "0.01"])
        assert r.exit_code == 0, r.output
        runs[budget] = json.loads(r.stdout)
    assert runs[1e12]["input_plan"].startswith("input: read from the Parquet files")
    level1 = runs[1e12]["levels"][0]
    assert level1["rows"].startswith(f"packed rows of {blocks.nnz:,} entries") and ": persist (" in level1["rows"]
    assert ": stream (" in runs[1.0]["levels"][0]["rows"]
    assert {st.get("memory_plan") for st in runs[1.0]["levels"] if st["length"] >= 3} == {"stream"}
    assert {st.get("memory_plan") for st in runs[1e12]["levels"] if st["length"] >= 3} == {"persist"}
    assert runs[1.0]["itemsets"] == runs[1e12]["itemsets"] and runs[1.0]["itemsets"] > 300
