"""Mining does not depend on the partitioning (issue 40): ``apriori`` on 1-16 row blocks, even or
uneven, with empty blocks and blocks of a few rows (scaled thresholds below 2), against brute
force and pyfim's Eclat, for every strategy, threaded and on the 2-process LocalCluster.

Only the public API is used (``TransactionArray.from_scipy``, ``repartition``, the
``TransactionArray`` constructor on blocks laid out one by one, ``apriori``), so the oracles hold
whatever the miner does inside (level-wise passes, per-block local searches, coalesced blocks).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from ppdm_dask import TransactionArray
from ppdm_dask.mining import FrequentItemsets, apriori

#: Equal splits, and uneven ones given as rows per block ("rest": what is left).
EVEN = (1, 2, 3, 4, 8, 16)
#: one row, three rows, an empty block, then the rest; ...; sixteen blocks of a few rows (the
#: last one large), and a large first block followed by single rows and an empty one
UNEVEN: tuple[tuple[int | str, ...], ...] = (
    (1, 3, 0, "rest", 7),
    (*(5,) * 15, "rest"),
    ("rest", 1, 1, 1, 0, 1, 2),
)
PARTITIONINGS: list[int | tuple[int | str, ...]] = [*EVEN, *UNEVEN]
STRATEGIES = ("auto", "levelwise", "partition")


def _pid(p: int | tuple[int | str, ...]) -> str:
    return f"even{p}" if isinstance(p, int) else "uneven-" + "-".join(map(str, p))


# ---------------------------------------------------------------------------- data
def _zipf_rows(seed: int, n_rows: int, n_items: int, max_len: int) -> list[list[int]]:
    """Sparse baskets: Zipf-ish item popularity plus a few recurring bundles, so that low
    thresholds leave frequent itemsets of length 3-5 (and more) as real click streams do."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, n_items + 1) ** 0.9
    weights /= weights.sum()
    bundles = [rng.choice(n_items, size=int(s), replace=False) for s in rng.integers(4, 7, size=6)]
    rows = []
    for _ in range(n_rows):
        items = set(rng.choice(n_items, size=int(min(max_len, 1 + rng.poisson(2.5))), replace=False, p=weights).tolist())
        if rng.random() < 0.35:  # a bundle, most of it
            b = bundles[int(rng.integers(len(bundles)))]
            items.update(b[rng.random(b.size) < 0.85].tolist())
        rows.append(sorted(items)[:max_len])
    return rows


def _dense_rows(seed: int, n_rows: int, n_items: int, density: float) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [np.flatnonzero(rng.random(n_items) < density).tolist() for _ in range(n_rows)]


def _csr(rows: Sequence[Sequence[int]], n_items: int) -> sp.csr_array:
    indptr = np.cumsum([0, *map(len, rows)])
    indices = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int32, count=int(indptr[-1]))
    return sp.csr_array((np.ones(indices.size, np.int32), indices, indptr), shape=(len(rows), n_items))


def _block_rows(p: int | tuple[int | str, ...], n: int) -> list[int]:
    if isinstance(p, int):
        base, extra = divmod(n, p)
        return [base + (i < extra) for i in range(p)]
    fixed = sum(int(v) for v in p if v != "rest")
    return [n - fixed if v == "rest" else int(v) for v in p]


def _partitioned(rows: Sequence[Sequence[int]], n_items: int, p: int | tuple[int | str, ...]) -> TransactionArray:
    """The rows (item ``j`` labelled ``j``) in the blocks ``p`` asks for (empty ones kept)."""
    m = _csr(rows, n_items)
    vocabulary = list(range(n_items))
    whole = TransactionArray.from_scipy(m, vocabulary=vocabulary, npartitions=1)
    if isinstance(p, int):
        tx = whole.repartition(None, npartitions=p)
    else:
        # from_scipy splits evenly only; blocks of chosen sizes (an empty one included) are
        # concatenated single-block arrays, which the constructor takes as they are
        sizes = _block_rows(p, m.shape[0])
        bounds = np.cumsum([0, *sizes])
        parts = [TransactionArray.from_scipy(m[a:b], vocabulary=vocabulary, npartitions=1) for a, b in itertools.pairwise(bounds)]
        # ``da.concatenate`` drops empty blocks: the array is laid out block by block instead
        name = "uneven-blocks-" + tokenize(*(t.blocks for t in parts))
        layer = {(name, i, 0): t.blocks.__dask_keys__()[0][0] for i, t in enumerate(parts)}
        graph = HighLevelGraph.from_collections(name, layer, dependencies=[t.blocks for t in parts])
        blocks = da.Array(graph, name, chunks=(tuple(sizes), (n_items,)), meta=sp.csr_array((0, n_items), dtype=np.int32))
        tx = TransactionArray(blocks, whole.vocabulary)
    assert list(tx.partition_rows) == _block_rows(p, m.shape[0])
    return tx


# ---------------------------------------------------------------------------- oracles
def _brute_force(rows: Sequence[Sequence[int]], min_count: int, max_length: int | None = None) -> dict[frozenset, int]:
    """Every itemset of every transaction counted by enumeration; those reaching min_count."""
    counts: Counter = Counter()
    for r in rows:
        top = len(r) if max_length is None else min(len(r), max_length)
        for k in range(1, top + 1):
            counts.update(map(frozenset, itertools.combinations(r, k)))
    return {s: c for s, c in counts.items() if c >= min_count}


def _pyfim(rows: Sequence[Sequence[int]], min_count: int, max_length: int | None = None) -> dict[frozenset, int]:
    """pyfim's Eclat (Borgelt's C code) at the absolute threshold, with the itemsets pyfim 6.28
    leaves out (non-empty subsets of the items present in every transaction) added back."""
    fim = pytest.importorskip("fim")
    limit = {} if max_length is None else {"zmax": max_length}
    ref = {
        frozenset(s): int(c)
        for s, c in fim.eclat([list(r) for r in rows], target="s", supp=-min_count, zmin=1, report="a", **limit)
    }
    always = sorted(set(rows[0]).intersection(*map(set, rows[1:]))) if len(rows) >= min_count else []
    for k in range(1, min(len(always), max_length or len(always)) + 1):
        for combo in itertools.combinations(always, k):
            ref.setdefault(frozenset(combo), len(rows))
    return ref


def _ours(fi: FrequentItemsets) -> dict[frozenset, int]:
    return {frozenset(int(x) for x in s): int(c) for s, c in fi.as_dict().items()}


def _check_level3_stats(fi: FrequentItemsets, strategy: str) -> None:
    """Level 3's statistics say which strategy mined the deep levels, and why."""
    level3 = [s for s in fi.level_stats if s["length"] == 3]
    assert len(level3) == 1, [s["length"] for s in fi.level_stats]
    st = level3[0]
    assert isinstance(st.get("strategy"), str) and st["strategy"], st
    assert isinstance(st.get("strategy_reason"), str) and st["strategy_reason"], st
    if strategy == "levelwise":  # asked for: nothing to choose, nothing to fall back from
        assert st["strategy"] == "levelwise", st


# ---------------------------------------------------------------------------- fixtures
SPARSE_ITEMS = 40
DENSE_ITEMS = 10


@pytest.fixture(scope="module")
def sparse_small() -> list[list[int]]:
    """300 baskets of 40 items, at most 9 items each (brute force stays cheap)."""
    return _zipf_rows(40, 300, SPARSE_ITEMS, 9)


@pytest.fixture(scope="module")
def sparse_brute(sparse_small) -> dict[int, dict[frozenset, int]]:
    return {mc: _brute_force(sparse_small, mc) for mc in (2, 3, 5)}


@pytest.fixture(scope="module")
def sparse_large() -> list[list[int]]:
    """800 baskets of 60 items, up to 12 each (pyfim is the oracle)."""
    return _zipf_rows(41, 800, 60, 12)


@pytest.fixture(scope="module")
def dense() -> list[list[int]]:
    """80 baskets of 10 items at density 0.75: frequent itemsets of every length up to 6+."""
    return _dense_rows(42, 80, DENSE_ITEMS, 0.75)


def test_the_data_is_deep_enough(sparse_brute, sparse_large, dense):
    # the oracles below would be weak on data whose search stops at level 2: the sparse sets
    # reach length 5 at the low thresholds, the dense one length 6 at the dense threshold
    for mc, ref in sparse_brute.items():
        assert max(map(len, ref)) >= 5, (mc, max(map(len, ref)))
    assert max(map(len, _pyfim(sparse_large, 5))) >= 5
    assert max(map(len, _brute_force(dense, 20))) >= 6


# ---------------------------------------------------------------------------- brute force
@pytest.mark.parametrize("p", PARTITIONINGS, ids=_pid)
def test_low_counts_on_sparse_data_equal_brute_force(sparse_small, sparse_brute, p):
    # 16 blocks of ~19 rows scale min count 2 to 1 per block; the uneven ones hold blocks of
    # 0, 1 and 3 rows: the miner must not trust any block's local view alone
    tx = _partitioned(sparse_small, SPARSE_ITEMS, p)
    for mc, want in sparse_brute.items():
        fi = apriori(tx, mc, progress=False)
        assert fi.min_count == mc and fi.n_transactions == len(sparse_small)
        assert _ours(fi) == want, (_pid(p), mc, len(fi), len(want))
        _check_level3_stats(fi, "auto")


@pytest.mark.parametrize("p", PARTITIONINGS, ids=_pid)
def test_dense_data_and_max_length_equal_brute_force(dense, p):
    tx = _partitioned(dense, DENSE_ITEMS, p)
    for mc, max_length in ((20, None), (20, 4), (3, 3), (12, 6)):
        fi = apriori(tx, mc, max_length=max_length, progress=False)
        assert _ours(fi) == _brute_force(dense, mc, max_length), (_pid(p), mc, max_length)
        if max_length is None or max_length >= 3:
            _check_level3_stats(fi, "auto")


# ---------------------------------------------------------------------------- pyfim
@pytest.mark.parametrize("p", PARTITIONINGS, ids=_pid)
def test_low_counts_on_sparse_data_equal_pyfim(sparse_large, p):
    tx = _partitioned(sparse_large, 60, p)
    for mc in (2, 5):
        fi = apriori(tx, mc, progress=False)
        want = _pyfim(sparse_large, mc)
        assert _ours(fi) == want, (_pid(p), mc, len(fi), len(want))
        _check_level3_stats(fi, "auto")
    fi = apriori(tx, 3, max_length=4, progress=False)
    assert _ours(fi) == _pyfim(sparse_large, 3, max_length=4), _pid(p)


# ---------------------------------------------------------------------------- independence
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_result_does_not_depend_on_partitioning_or_strategy(sparse_small, strategy):
    # the 1-block level-wise result is the reference; every partitioning and every strategy
    # (forced partition searches at scaled thresholds of 1 included) must give it exactly
    ref = _ours(apriori(_partitioned(sparse_small, SPARSE_ITEMS, 1), 3, strategy="levelwise", progress=False))
    assert len(ref) > 100 and max(map(len, ref)) >= 5
    for p in PARTITIONINGS:
        fi = apriori(_partitioned(sparse_small, SPARSE_ITEMS, p), 3, strategy=strategy, progress=False)
        assert _ours(fi) == ref, (_pid(p), strategy)
        _check_level3_stats(fi, strategy)


def test_threads_scheduler_equals_brute_force(sparse_small, sparse_brute):
    import dask

    with dask.config.set(scheduler="threads", num_workers=2):
        for p in (4, 16, UNEVEN[1]):
            fi = apriori(_partitioned(sparse_small, SPARSE_ITEMS, p), 2, progress=False)
            assert _ours(fi) == sparse_brute[2], _pid(p)


@pytest.mark.cluster
def test_on_the_local_cluster_equals_brute_force(on_cluster, sparse_small, sparse_brute):
    # the blocks on two worker processes: what a block misses must come from the other worker
    for p in (4, 16, UNEVEN[0]):
        tx = _partitioned(sparse_small, SPARSE_ITEMS, p).persist(progress=False)
        fi = apriori(tx, 2, progress=False, client=on_cluster)
        assert _ours(fi) == sparse_brute[2], _pid(p)
        _check_level3_stats(fi, "auto")
