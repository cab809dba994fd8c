"""Exact Apriori against brute force; kernels alone; errors; guard; partitions; CLI."""

from __future__ import annotations

import itertools
import json
import warnings
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdm_dask import TransactionArray, read
from ppdm_dask.cli import cli
from ppdm_dask.data.datasets import sample_path
from ppdm_dask.errors import DataFormatError, DuplicateItemsWarning, InvalidParameter
from ppdm_dask.mining import ItemsetExplosionWarning, ResultTooLargeError, apriori, association_rules, min_count_of
from ppdm_dask.mining import _kernels as K
from ppdm_dask.mining.candidates import apriori_gen, rows_in


def brute_force(rows, min_count, max_length=None):
    """Every itemset contained in some transaction, counted by enumeration."""
    counts: Counter = Counter()
    for r in rows:
        r = sorted(set(r))
        top = len(r) if max_length is None else min(len(r), max_length)
        for k in range(1, top + 1):
            counts.update(frozenset(c) for c in itertools.combinations(r, k))
    return {s: c for s, c in counts.items() if c >= min_count}


@given(st.lists(st.lists(st.integers(0, 11), max_size=8), min_size=1, max_size=60), st.integers(1, 6), st.integers(1, 5))
@settings(max_examples=120, deadline=None)
def test_apriori_equals_brute_force(rows, min_count, nparts):
    min_count = min(min_count, len(rows))  # a count above N is an error (tested below)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DuplicateItemsWarning)
        tx = TransactionArray.from_lists(rows, npartitions=nparts)
    fi = apriori(tx, min_count, progress=False)
    assert fi.as_dict() == brute_force(rows, min_count)


@pytest.mark.parametrize("bound", [0, 1500, 10**6])
def test_counting_later_levels_ahead_changes_nothing(monkeypatch, bound):
    # bound 0: one pass per level; 1500: level 4 counted with level 3; 10**6: all levels >= 3 in one pass
    import importlib

    A = importlib.import_module("ppdm_dask.mining.ahead")

    rng = np.random.default_rng(8)
    rows = [list(np.flatnonzero(rng.random(14) < 0.55)) for _ in range(150)]
    want = brute_force(rows, 12)
    tx = TransactionArray.from_lists(rows, npartitions=3)
    monkeypatch.setattr(A, "COMBINE_MAX_CANDIDATES", bound)
    fi = apriori(tx, 12, strategy="levelwise", progress=False)  # the partition strategy has no per-level passes
    assert fi.as_dict() == want and max(len(s) for s in want) >= 5
    ahead = [st for st in fi.level_stats if "counted_with" in st]
    assert (len(ahead) > 0) == (bound > 0)
    if bound == 10**6:
        assert {st["counted_with"] for st in ahead} == {3} and max(st["length"] for st in ahead) == max(len(s) for s in want)
    # the statistics still count each level's real candidates (grown from the frequent sets)
    by_len = {st["length"]: st["candidates"] for st in fi.level_stats}
    for k in range(3, max(by_len) + 1):
        prev = np.array(sorted(sorted(s) for s in want if len(s) == k - 1))
        assert by_len[k] == apriori_gen(prev)[0].shape[0]
    maxlen = apriori(tx, 12, max_length=4, strategy="levelwise", progress=False)
    assert maxlen.as_dict() == {s: c for s, c in want.items() if len(s) <= 4}
    # EMASK mining counts ahead the same way: its estimates do not change
    from ppdm_dask import Key
    from ppdm_dask.emask import distort
    from ppdm_dask.emask import mine as emask_mine

    d = distort(tx, 0.8, 0.9, key=Key(3))
    got = emask_mine(d, 0.8, 0.9, 12)
    monkeypatch.setattr(A, "COMBINE_MAX_CANDIDATES", 0)
    ref = emask_mine(d, 0.8, 0.9, 12)
    assert max(ref.levels) >= 4 and got.levels.keys() == ref.levels.keys()
    for k in ref.levels:
        np.testing.assert_array_equal(got.levels[k][0], ref.levels[k][0])
        np.testing.assert_array_equal(got.levels[k][1], ref.levels[k][1])
    assert any("counted_with" in st for st in got.level_stats) == (bound > 0)


def test_max_length_and_fraction_threshold():
    rows = [[1, 2, 3], [1, 2, 3], [1, 2], [3]]
    tx = TransactionArray.from_lists(rows)
    assert apriori(tx, 2, max_length=2, progress=False).as_dict() == brute_force(rows, 2, max_length=2)
    fi = apriori(tx, 0.5, progress=False)  # ceil(0.5 * 4) = 2
    assert fi.min_count == 2 and fi.as_dict() == brute_force(rows, 2)
    assert min_count_of(0.003, 100_000) == 300  # no float round-up to 301
    assert min_count_of(1.0, 7) == 7


def test_string_labels_and_results_api(tmp_path):
    tx = TransactionArray.from_lists([["milk", "bread"], ["milk", "bread", "beer"], ["beer"], ["milk"]])
    fi = apriori(tx, 2, progress=False)
    assert fi.as_dict() == {
        frozenset({"milk"}): 3,
        frozenset({"bread"}): 2,
        frozenset({"beer"}): 2,
        frozenset({"bread", "milk"}): 2,
    }
    df = fi.to_pandas()
    assert set(df.columns) == {"itemset", "length", "count", "support"}
    assert df.loc[df.length == 2, "itemset"].tolist() == [("bread", "milk")]
    assert set(fi.by_length()) == {1, 2}
    fi.to_parquet(str(tmp_path / "fi.parquet"))
    import pyarrow.parquet as pq

    t = pq.read_table(tmp_path / "fi.parquet")
    assert t.num_rows == 4 and t.column("items").to_pylist()[-1] == ["bread", "milk"]


def test_rules_against_definition():
    rows = [[1, 2, 3], [1, 2], [1, 3], [2, 3], [1, 2, 3], [4]]
    tx = TransactionArray.from_lists(rows)
    fi = apriori(tx, 2, progress=False)
    support = fi.as_dict()
    n = len(rows)
    expected = {}
    for s, c in support.items():
        for r in range(1, len(s)):
            for a in itertools.combinations(sorted(s), r):
                a = frozenset(a)
                conf = c / support[a]
                if conf >= 0.6:
                    cq = s - a
                    sc = support[cq] / n
                    expected[(a, cq)] = (
                        conf,
                        conf / sc,
                        c / n - support[a] / n * sc,
                        (1 - sc) / (1 - conf) if conf < 1 else np.inf,
                    )
    rules = association_rules(fi, 0.6).to_pandas()
    got = {
        (frozenset(r.antecedent), frozenset(r.consequent)): (r.confidence, r.lift, r.leverage, r.conviction)
        for r in rules.itertuples()
    }
    assert got.keys() == expected.keys()
    for key, vals in expected.items():
        assert np.allclose(got[key], vals, rtol=1e-12)


def test_kernels_alone():
    block = sp.csr_array(np.array([[1, 1, 0, 1], [0, 1, 1, 1], [1, 1, 1, 1], [0, 0, 0, 0]], dtype=np.int32))
    items = np.array([0, 1, 3])
    r = K.restrict_columns(block, items)
    assert r.toarray().tolist() == [[1, 1, 1], [0, 1, 1], [1, 1, 1], [0, 0, 0]]
    # pairs (0,1), (0,3), (1,3), by both engines
    assert K.pair_counts(block, items, engine="numba").tolist() == [2, 2, 3]
    assert K.pair_counts(block, items, engine="numpy").tolist() == [2, 2, 3]
    bits = K.build_bitsets(block, np.array([0, 1, 2, 3]))
    assert bits.shape == (4, 1) and int(bits[1, 0]) == 0b0111 and int(bits[2, 0]) == 0b0110
    # {0,1,3} (prefix (0,1) + 3) and {1,2,3} (prefix (1,2) + 3)
    out = K.count_extensions(bits, np.array([[0, 1], [1, 2]]), np.array([0, 1]), np.array([3, 3]))
    assert out.tolist() == [2, 2]
    # many rows: bits across words
    # random_state=: the keyword of every supported scipy (rng= only from 1.15)
    big = sp.csr_array(sp.random_array((300, 5), density=0.5, format="csr", random_state=np.random.default_rng(0)))
    big.data[:] = 1
    big = big.astype(np.int32)
    bb = K.build_bitsets(big, np.arange(5))
    dense = big.toarray().astype(bool)
    got = K.count_extensions(bb, np.array([[0, 1]]), np.array([0, 0, 0]), np.array([2, 3, 4]))
    assert got.tolist() == [int((dense[:, 0] & dense[:, 1] & dense[:, j]).sum()) for j in (2, 3, 4)]


def test_candidate_generation_textbook_example():
    # Agrawal & Srikant 1994: L3 = {123, 124, 134, 135, 234} -> C4 = {1234} (1345 pruned)
    cands, left = apriori_gen(np.array([[1, 2, 3], [1, 2, 4], [1, 3, 4], [1, 3, 5], [2, 3, 4]]))
    assert cands.tolist() == [[1, 2, 3, 4]] and left.tolist() == [0]
    wide = np.array([[2**40, 1], [5, 6]])
    assert rows_in(np.array([[5, 6], [7, 8]]), wide).tolist() == [True, False]
    assert rows_in(
        np.array([[5, 6, 1, 2, 3, 4, 5, 6, 7, 8]]) * 1000, np.array([[5, 6, 1, 2, 3, 4, 5, 6, 7, 8]]) * 1000
    ).tolist() == [True]


def test_errors_and_guard():
    tx = TransactionArray.from_lists([[1, 2], [2]])
    for bad in (0.0, -0.1, 1.5, 0, 3, float("nan"), "0.1"):
        with pytest.raises(InvalidParameter):
            apriori(tx, bad, progress=False)
    with pytest.raises(DataFormatError, match="empty"):
        apriori(TransactionArray.from_lists([]), 1, progress=False)
    dense = TransactionArray.from_lists([list(range(12))] * 5)
    with pytest.raises(ResultTooLargeError, match="max_itemsets"):
        apriori(dense, 1, max_itemsets=500, progress=False)
    with pytest.warns(ItemsetExplosionWarning):
        apriori(dense, 1, max_itemsets=5000, progress=False)


def test_partition_independence_on_sample():
    tx = read(str(sample_path("chess")), progress=False)
    ref = apriori(tx, 0.85, progress=False).as_dict()
    for n in (1, 8, 64):
        assert apriori(tx.repartition(npartitions=n), 0.85, progress=False).as_dict() == ref


def test_cli_mine(tmp_path):
    r = CliRunner().invoke(
        cli,
        [
            "--scheduler",
            "sync",
            "--no-progress",
            "--json",
            "mine",
            str(sample_path("chess")),
            "--min-support",
            "0.9",
            "--rules",
            "--min-confidence",
            "0.95",
            "--out",
            str(tmp_path / "fi.parquet"),
            "--rules-out",
            str(tmp_path / "rules.parquet"),
        ],
    )
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    tx = read(str(sample_path("chess")), progress=False)
    assert d["itemsets"] == len(apriori(tx, 0.9, progress=False)) and d["rules"] > 0
    assert [lv["length"] for lv in d["levels"]][:3] == [1, 2, 3]
    assert (tmp_path / "fi.parquet").exists() and (tmp_path / "rules.parquet").exists()
    bad = CliRunner().invoke(cli, ["--scheduler", "sync", "mine", str(sample_path("chess")), "--min-support", "2.5"])
    assert bad.exit_code == 2 and "ppdm: error:" in bad.output and "Traceback" not in bad.output


@given(st.integers(1, 4), st.booleans(), st.lists(st.lists(st.integers(0, 9), min_size=4, max_size=4), min_size=1, max_size=40))
@settings(max_examples=200, deadline=None)
def test_apriori_gen_equals_brute_force(width, wide, draws):
    offset = 2**22 if wide else 0  # wide ids exercise the unpacked (structured) path
    sets = sorted({tuple(sorted(set(d)))[:width] for d in draws if len(set(d)) >= width})
    if not sets:
        return
    table = np.array(sets, dtype=np.int64) + offset
    cands, left = apriori_gen(table)
    known = {tuple(r) for r in table.tolist()}
    expected = sorted({tuple(a) + (b[-1],) for a in table.tolist() for b in table.tolist() if a[:-1] == b[:-1] and a[-1] < b[-1]})
    expected = [e for e in expected if all(e[:d] + e[d + 1 :] in known for d in range(len(e)))]
    assert [tuple(r) for r in cands.tolist()] == expected
    assert all(tuple(table[i]) == tuple(r[:-1]) for i, r in zip(left.tolist(), cands.tolist()))


def test_support_counter_arbitrary_itemsets():
    from ppdm_dask.mining import SupportCounter

    rows = [[0, 1, 2, 5], [1, 2, 5], [0, 2], [5, 1], [], [0, 1, 2]]
    tx = TransactionArray.from_lists(rows, npartitions=3)
    counter = SupportCounter(tx, progress=False)
    queries = np.array([[2, 1], [0, 5], [1, 5], [0, 1], [0, 2], [1, 2]])
    expected = [sum(set(q) <= set(r) for r in rows) for q in queries.tolist()]
    ids = tx.vocabulary.encode  # labels -> column ids
    assert counter.itemset_counts(ids(queries)).tolist() == expected
    triples = np.array([[0, 1, 2], [1, 2, 5], [0, 1, 5]])
    assert counter.itemset_counts(ids(triples)).tolist() == [sum(set(q) <= set(r) for r in rows) for q in triples.tolist()]
    assert counter.item_counts().tolist() == [3, 4, 4, 3]  # labels 0, 1, 2, 5 -> column ids 0..3


def test_pair_count_engines_agree_with_chunking_and_sparse_fallback(monkeypatch):
    rng = np.random.default_rng(3)
    m = sp.random_array((400, 30), density=0.3, format="csr", random_state=rng)
    m.data[:] = 1
    m = sp.csr_array(m.astype(np.int32))
    items = np.array([0, 2, 3, 7, 11, 12, 19, 25, 29], dtype=np.int32)
    x = K.restrict_columns(m, items)
    ref = (x.T @ x).toarray()[np.triu_indices(items.size, 1)]
    assert np.array_equal(K.pair_counts(m, items, engine="numba"), ref)
    monkeypatch.setattr(K, "MAX_PAIRS_PER_CHUNK", 5)  # many row chunks in the numpy path
    assert np.array_equal(K.pair_counts(m, items, engine="numpy"), ref)
    monkeypatch.setattr(K, "MAX_DENSE_PAIRS", 3)  # sparse-product fallback
    assert np.array_equal(K.pair_counts(m, items), ref)


def test_bitset_pair_counts_and_builders_agree_with_enumeration():
    # the Gram kernel's 2 x 4 register blocks and tail paths: odd and even item counts, a
    # word count above one tile, rows not a multiple of 64
    rng = np.random.default_rng(11)
    for n_rows, n_cols in [(1, 3), (63, 5), (700, 9), (70_000, 14)]:
        m = sp.csr_array((rng.random((n_rows, n_cols)) < 0.35).astype(np.int32))
        items = np.arange(n_cols, dtype=np.int32)
        ref = K.pair_counts(m, items, engine="numpy")
        bits = K.build_bitsets(m, items)
        assert np.array_equal(bits, K.build_bitsets(m, items, engine="numpy"))
        assert np.array_equal(K.pair_counts_bits(bits, items), ref)
        assert np.array_equal(K.pair_counts_bits(bits, items, engine="numpy"), ref)
        sub = items[1::2]
        assert np.array_equal(K.pair_counts_bits(bits, sub), K.pair_counts(m, sub, engine="numpy"))


def test_support_counter_pair_methods_agree_and_keep_bitsets_for_later_levels():
    from ppdm_dask.mining import SupportCounter

    rng = np.random.default_rng(5)
    dense = sp.csr_array((rng.random((3000, 40)) < 0.5).astype(np.int32))  # long rows: bitsets win
    tx = TransactionArray.from_scipy(dense, npartitions=4)
    counter = SupportCounter(tx, progress=False)
    counter.item_counts()
    items = np.arange(0, 40, 3, dtype=np.int32)
    assert counter.pair_method(items) == "bitsets"
    by_rows = counter.pair_counts(items, method="rows")
    assert counter.bit_items is None
    assert np.array_equal(counter.pair_counts(items), by_rows)
    kept = counter.bit_items
    assert np.array_equal(kept, items)
    counter.use_bitsets(items[:5])  # a subset: the persisted bitsets are reused
    assert counter.bit_items is kept
    sparse_tx = TransactionArray.from_lists([[0, 1], [1, 2], [2, 3], [0, 3]] * 50, npartitions=2)
    c2 = SupportCounter(sparse_tx, progress=False)
    c2.item_counts()
    assert c2.pair_method(np.arange(4, dtype=np.int32)) == "rows"
    with pytest.raises(ValueError):
        counter.pair_counts(items, method="gram")
