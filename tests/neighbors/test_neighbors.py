"""Exact and approximate kNN (ppdm_dask.neighbors) against a dense brute-force oracle."""

from __future__ import annotations

import dask
import numpy as np
import pytest
import scipy.sparse as sp

from ppdm_dask import TransactionArray
from ppdm_dask.errors import InvalidParameter
from ppdm_dask.neighbors import KNNGraph, approximate_knn, knn, recall
from ppdm_dask.neighbors import _kernels as K


# ----------------------------------------------------------------------------- oracle
def brute_force(X: np.ndarray, k: int, metric: str = "cosine", exclude_self: bool = True, groups=None):
    """Full distance matrix, neighbours by ``np.lexsort((index, dist))``.

    Sums run left to right over the items (``cumsum``), the summation order the library
    documents, so even weighted data compare bit for bit.
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    X2 = X * X
    dot = np.cumsum(X[:, None, :] * X[None, :, :], axis=2)[:, :, -1] if d else np.zeros((n, n))
    cross = np.cumsum(X2[:, None, :] * X2[None, :, :], axis=2)[:, :, -1] if d else np.zeros((n, n))
    sq = np.cumsum(X2, axis=1)[:, -1] if d else np.zeros(n)
    with np.errstate(all="ignore"):
        if metric == "cosine":
            D = 1.0 - dot / np.sqrt(sq[:, None] * sq[None, :])
        else:
            d2 = sq[:, None] + sq[None, :] - 2.0 * dot
            D = np.sqrt(np.where(d2 > 0, d2, 0.0))
    D = np.where(D > 0, D, 0.0)
    valid = sq > 0
    out = (np.full((n, k), -1), np.full((n, k), np.inf), np.full((n, k), np.nan), np.full((n, k), np.nan))
    for i in np.flatnonzero(valid):
        cand = np.flatnonzero(valid)
        if exclude_self:
            cand = cand[cand != i]
        if groups is not None:
            cand = cand[groups[cand] == groups[i]]
        c = cand[np.lexsort((cand, D[i, cand]))][:k]
        out[0][i, : c.size] = c
        out[1][i, : c.size] = D[i, c]
        out[2][i, : c.size] = dot[i, c]
        out[3][i, : c.size] = cross[i, c]
    return out, sq, D


def random_matrix(rng, n, d, density, weights="binary"):
    """Sparse-ish rows with duplicate rows (ties) and all-zero rows."""
    M = (rng.random((n, d)) < density).astype(np.float64)
    M[rng.integers(0, n, max(1, n // 5))] = M[rng.integers(0, n, max(1, n // 5))]  # duplicates
    M[rng.random(n) < 0.1] = 0.0  # empty rows
    if weights == "int":
        M *= rng.integers(1, 4, (n, d))
    elif weights == "float":
        M *= rng.random((n, d)).astype(np.float32) + np.float32(0.01)
    return M.astype(np.float32).astype(np.float64)  # weights are stored as float32


def assert_graph(g: KNNGraph, expected, sq, tol: float = 1e-12):
    idx, dist, dot, cross = expected
    np.testing.assert_array_equal(g.indices, idx)
    np.testing.assert_allclose(g.distances, dist, rtol=0, atol=tol)
    np.testing.assert_allclose(g.dots, dot, rtol=0, atol=tol)
    np.testing.assert_allclose(g.cross, cross, rtol=0, atol=tol)
    np.testing.assert_allclose(g.sqnorms, sq, rtol=0, atol=tol)


CASES = [
    (metric, weights, seed) for metric in ("cosine", "euclidean") for weights in ("binary", "int", "float") for seed in (0, 1)
]


# ----------------------------------------------------------------------------- exact, global
@pytest.mark.parametrize("metric,weights,seed", CASES)
def test_global_equals_brute_force_any_partitioning(metric, weights, seed):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(40, 70)), int(rng.integers(4, 12))
    M = random_matrix(rng, n, d, rng.uniform(0.1, 0.5), weights)
    k = int(rng.integers(1, 9))
    expected, sq, _ = brute_force(M, k, metric)
    for nparts in (1, 3, 7):
        tx = TransactionArray.from_scipy(sp.csr_array(M), npartitions=nparts)
        assert (tx.weights is None) == (weights == "binary" or not np.any((M != 0) & (M != 1)))
        for block_rows in (None, 9, 25):
            g = knn(tx, k, metric=metric, block_rows=block_rows, progress=False)
            assert_graph(g, expected, sq)
            assert (g.k, g.metric, g.scope) == (k, metric, "global")


def test_many_random_instances_bitwise():
    rng = np.random.default_rng(7)
    for trial in range(25):
        n, d = int(rng.integers(2, 45)), int(rng.integers(1, 9))
        metric = ("cosine", "euclidean")[trial % 2]
        M = random_matrix(rng, n, d, rng.uniform(0.05, 0.6), ("binary", "int", "float")[trial % 3])
        k = int(rng.integers(1, n))
        expected, sq, _ = brute_force(M, k, metric)
        tx = TransactionArray.from_scipy(sp.csr_array(M), npartitions=int(rng.integers(1, 5)))
        g = knn(tx, k, metric=metric, block_rows=int(rng.integers(1, n + 1)), progress=False)
        np.testing.assert_array_equal(g.indices, expected[0])
        np.testing.assert_array_equal(g.distances, expected[1])  # same formula, same bits


def test_empty_partitions_and_rows():
    rng = np.random.default_rng(3)
    M = random_matrix(rng, 10, 6, 0.4)
    M[[2, 3]] = 0.0
    tx = TransactionArray.from_scipy(sp.csr_array(M), npartitions=14)  # 4 empty blocks
    assert 0 in tx.partition_rows
    expected, sq, _ = brute_force(M, 3)
    assert_graph(knn(tx, 3, progress=False), expected, sq)
    assert_graph(knn(tx, 3, block_rows=2, progress=False), expected, sq)
    g = knn(tx, 3, progress=False)
    assert np.all(g.indices[[2, 3]] == -1) and np.all(np.isinf(g.distances[[2, 3]]))
    assert not np.isin([2, 3], g.indices).any()  # suppressed rows are nobody's neighbour


def test_fewer_valid_rows_than_k_are_padded():
    M = np.zeros((6, 3))
    M[0, 0] = M[1, 0] = M[2, 1] = 1.0
    g = knn(TransactionArray.from_scipy(sp.csr_array(M), npartitions=2), 4, progress=False)
    np.testing.assert_array_equal(g.indices[0], [1, 2, -1, -1])
    np.testing.assert_array_equal(g.distances[0], [0.0, 1.0, np.inf, np.inf])
    assert np.all(g.indices[3:] == -1)


def test_include_self():
    rng = np.random.default_rng(5)
    M = random_matrix(rng, 30, 8, 0.3, "int")
    n = M.shape[0]
    for metric in ("cosine", "euclidean"):
        expected, sq, _ = brute_force(M, n, metric, exclude_self=False)
        tx = TransactionArray.from_scipy(sp.csr_array(M), npartitions=3)
        g = knn(tx, n, metric=metric, exclude_self=False, block_rows=7, progress=False)
        assert_graph(g, expected, sq)
        valid = sq > 0
        assert np.all(g.distances[valid, 0] == 0.0)


def test_euclidean_prefers_small_norm_rows_without_overlap():
    # Row 0 shares an item with row 1 (big norm) but none with the tiny rows 2, 3: for
    # euclidean the non-overlapping small rows are nearer, and must be found.
    M = np.zeros((5, 6))
    M[0, [0, 1]] = 1.0
    M[1, [0, 2, 3, 4, 5]] = 3.0
    M[2, 2] = 0.5
    M[3, 3] = 0.5
    M[4, [0, 1]] = 1.0
    expected, sq, _ = brute_force(M, 3, "euclidean")
    for block_rows in (1, 2, 5):
        g = knn(TransactionArray.from_scipy(sp.csr_array(M)), 3, metric="euclidean", block_rows=block_rows, progress=False)
        assert_graph(g, expected, sq)
    assert list(g.indices[0]) == [4, 2, 3]


# ----------------------------------------------------------------------------- kernels
@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_pair_kernel_paths_and_caps(metric):
    """Dense scan, touched lists and the completion pass; caps never change the merge."""
    rng = np.random.default_rng(11)
    M = random_matrix(rng, 80, 30, 0.08, "int")
    cosine = metric == "cosine"
    k = 6
    expected, _, _ = brute_force(M, k, metric)
    m = sp.csr_array(M)
    ones = sp.csr_array((np.ones(m.nnz, np.int32), m.indices, m.indptr), shape=m.shape)

    def prep(lo, hi):
        return K.prepare_block(ones[lo:hi], m[lo:hi], np.arange(lo, hi), cosine)

    a, b = prep(0, 35), prep(35, 80)
    for ratio in (0.0, K.DENSE_RATIO, 1e9):
        ra, _ = K.pair_topk(a, a, k, cosine=cosine, diag=True, dense_ratio=ratio)
        rb, _ = K.pair_topk(b, b, k, cosine=cosine, diag=True, dense_ratio=ratio)
        for caps in (None, (ra[0][:, -1], rb[0][:, -1])):
            ab, ba = K.pair_topk(
                a,
                b,
                k,
                cosine=cosine,
                dense_ratio=ratio,
                cap_a=None if caps is None else caps[0],
                cap_b=None if caps is None else caps[1],
            )
            top = K.merge_topk([ra, ab], k), K.merge_topk([ba, rb], k)
            got = [np.concatenate([top[0][f], top[1][f]]) for f in range(4)]
            np.testing.assert_array_equal(got[1], expected[0])
            np.testing.assert_array_equal(got[0], expected[1])


def test_pair_kernel_empty_blocks():
    m = sp.csr_array(np.eye(4, 5))
    p = K.prepare_block(m, None, np.arange(4), True)
    e = K.prepare_block(sp.csr_array((0, 5), dtype=np.int32), None, np.zeros(0, np.int64), True)
    rows, cols = K.pair_topk(p, e, 2)
    assert rows[0].shape == (4, 2) and np.all(rows[1] == -1) and cols[0].shape == (0, 2)
    rows, cols = K.pair_topk(e, p, 2)
    assert rows[0].shape == (0, 2) and np.all(cols[1] == -1)
    rows, _ = K.pair_topk(e, e, 2, diag=True)
    assert rows[0].shape == (0, 2)


def test_merge_topk_unique_removes_repeats():
    rows = np.array([10, 11])
    d1 = np.array([[0.1, 0.3], [0.2, np.inf]])
    j1 = np.array([[5, 7], [4, -1]])
    part = (rows, d1, j1, d1 * 2, d1 * 3)
    d, j, dot, cr = K.merge_topk_unique(
        rows, [part, part, (rows[:1], np.array([[0.3]]), np.array([[6]]), np.array([[1.0]]), np.array([[2.0]]))], 3
    )
    np.testing.assert_array_equal(j, [[5, 6, 7], [4, -1, -1]])
    np.testing.assert_array_equal(d[0], [0.1, 0.3, 0.3])


# ----------------------------------------------------------------------------- partition scope
@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_partition_scope_is_brute_force_per_partition(metric):
    rng = np.random.default_rng(2)
    M = random_matrix(rng, 50, 10, 0.3, "int")
    tx = TransactionArray.from_scipy(sp.csr_array(M), npartitions=4)
    groups = np.repeat(np.arange(tx.n_partitions), tx.partition_rows)
    expected, sq, _ = brute_force(M, 5, metric, groups=groups)
    g = knn(tx, 5, metric=metric, scope="partition", progress=False)
    assert_graph(g, expected, sq)
    assert g.scope == "partition"
    assert np.all(groups[g.indices[g.indices >= 0]] == np.repeat(groups, 5).reshape(-1, 5)[g.indices >= 0])


# ----------------------------------------------------------------------------- result object
def test_graph_helpers():
    rng = np.random.default_rng(4)
    M = random_matrix(rng, 20, 6, 0.4)
    g = knn(TransactionArray.from_scipy(sp.csr_array(M), npartitions=2), 3, progress=False)
    np.testing.assert_array_equal(g.kth_distance(), g.distances[:, 2])
    i, j = g.edges()
    assert i.size == (g.indices >= 0).sum() and np.all(j >= 0)
    df = g.to_pandas()
    assert list(df.columns) == ["row", "rank", "neighbor", "distance", "dot", "cross"]
    assert len(df) == i.size and g.n_rows == 20
    np.testing.assert_array_equal(df["neighbor"].to_numpy(), j)


# ----------------------------------------------------------------------------- errors
def test_invalid_parameters():
    tx = TransactionArray.from_scipy(sp.csr_array(np.eye(5)), npartitions=2)
    for k in (0, -1, 5, 6):
        with pytest.raises(InvalidParameter, match="k must be"):
            knn(tx, k, progress=False)
    with pytest.raises(InvalidParameter, match="k must be"):
        knn(tx, 6, exclude_self=False, progress=False)
    assert knn(tx, 5, exclude_self=False, progress=False).k == 5
    with pytest.raises(InvalidParameter, match="integer"):
        knn(tx, True, progress=False)
    with pytest.raises(InvalidParameter, match="unknown metric"):
        knn(tx, 2, metric="manhattan", progress=False)
    with pytest.raises(InvalidParameter, match="unknown scope"):
        knn(tx, 2, scope="local", progress=False)
    with pytest.raises(InvalidParameter, match="block_rows"):
        knn(tx, 2, block_rows=0, progress=False)
    with pytest.raises(InvalidParameter, match="k must be"):
        approximate_knn(tx, 5, key=1, progress=False)
    with pytest.raises(InvalidParameter, match="unknown metric"):
        approximate_knn(tx, 2, metric="jaccard", key=1, progress=False)
    with pytest.raises(InvalidParameter, match="n_candidates"):
        approximate_knn(tx, 2, n_candidates=1, key=1, progress=False)


# ----------------------------------------------------------------------------- approximate
def clustered(rng, n_clusters=12, per=50, d=200, l=12):
    """Rows drawn around random 'topics' (a neighbour structure, as in real data)."""
    rows = []
    for _ in range(n_clusters):
        topic = rng.choice(d, 3 * l, replace=False)
        for _ in range(per):
            own = rng.choice(topic, l, replace=False)
            noise = rng.choice(d, 2, replace=False)
            rows.append(np.unique(np.r_[own, noise]))
    order = rng.permutation(len(rows))
    M = np.zeros((len(rows), d))
    for i, r in enumerate(order):
        M[i, rows[r]] = rng.integers(1, 4, rows[r].size)
    return M


def test_approximate_recall_determinism_and_exact_values():
    rng = np.random.default_rng(8)
    M = clustered(rng)
    tx = TransactionArray.from_scipy(sp.csr_array(M), npartitions=3)
    exact = knn(tx, 5, progress=False)
    a1 = approximate_knn(tx, 5, n_candidates=64, n_rounds=6, key=123, group_rows=128, progress=False)
    assert a1.scope == "approximate"
    assert recall(a1, exact) >= 0.8
    assert recall(exact, exact) == 1.0
    # same key, other partitioning and grouping: same graph
    tx5 = TransactionArray.from_scipy(sp.csr_array(M), npartitions=5)
    a2 = approximate_knn(tx5, 5, n_candidates=64, n_rounds=6, key=123, group_rows=256, progress=False)
    for f in ("indices", "distances", "dots", "cross"):
        np.testing.assert_array_equal(getattr(a1, f), getattr(a2, f))
    a3 = approximate_knn(tx, 5, n_candidates=64, n_rounds=6, key=124, group_rows=128, progress=False)
    assert not np.array_equal(a1.indices, a3.indices)
    # every returned neighbour carries its exact distance / dot / cross; lists are sorted
    _, sq, D = brute_force(M, 5)
    i, j = np.nonzero(a1.indices >= 0)
    nb = a1.indices[i, j]
    np.testing.assert_allclose(a1.distances[i, j], D[i, nb], rtol=0, atol=1e-12)
    np.testing.assert_allclose(a1.dots[i, j], (M[i] * M[nb]).sum(1), rtol=0, atol=1e-9)
    np.testing.assert_allclose(a1.cross[i, j], (M[i] ** 2 * M[nb] ** 2).sum(1), rtol=0, atol=1e-9)
    assert np.all(np.diff(a1.distances, axis=1)[np.isfinite(a1.distances[:, 1:])] >= 0)
    assert np.all(a1.indices != np.arange(M.shape[0])[:, None])
    # more rounds only add candidates: recall never drops, and the lists stay exact merges
    more = approximate_knn(tx, 5, n_candidates=64, n_rounds=12, key=123, group_rows=128, progress=False)
    assert recall(more, exact) >= recall(a1, exact)
    assert np.all((more.distances <= a1.distances) | (a1.indices < 0))


def test_recall_counts_ties_by_distance():
    idx = np.array([[1, 2], [0, 2], [0, 1]])
    d = np.array([[0.1, 0.5], [0.1, 0.5], [0.5, 0.5]])
    z = np.zeros_like(d)
    exact = KNNGraph(idx, d, z, z, np.ones(3), 2, "cosine", "global")
    other = KNNGraph(
        np.array([[1, 3], [0, -1], [0, 3]]),
        np.array([[0.1, 0.5], [0.1, np.inf], [0.5, 0.7]]),
        z,
        z,
        np.ones(3),
        2,
        "cosine",
        "approximate",
    )
    assert recall(other, exact) == pytest.approx(4 / 6)  # row 0: the tie at 0.5 counts


# ----------------------------------------------------------------------------- cluster
def test_on_local_cluster(on_cluster):
    rng = np.random.default_rng(9)
    M = random_matrix(rng, 300, 25, 0.15, "int")
    tx = TransactionArray.from_scipy(sp.csr_array(M), npartitions=4)
    expected, sq, _ = brute_force(M, 4)
    assert_graph(knn(tx, 4, block_rows=64, client=on_cluster, progress=False), expected, sq)
    a = approximate_knn(tx, 4, n_candidates=64, n_rounds=3, key=5, group_rows=128, client=on_cluster, progress=False)
    with dask.config.set(scheduler="sync"):
        b = approximate_knn(tx, 4, n_candidates=64, n_rounds=3, key=5, group_rows=128, progress=False)
    np.testing.assert_array_equal(a.indices, b.indices)


def test_approximate_memory_plans_give_the_same_graph(monkeypatch):
    """Input kept between the stages or re-read at every stage: the same graph, and the plan says which."""
    import ppdm_dask.neighbors.approximate as approx

    rng = np.random.default_rng(11)
    M = clustered(rng, n_clusters=6, per=40)
    tx = TransactionArray.from_scipy(sp.csr_array(M), npartitions=3)
    kept = approximate_knn(tx, 4, n_candidates=32, n_rounds=5, key=9, group_rows=96, progress=False)
    assert "persist" in kept.plan and "groups of <= 96 rows (3 windows each)" in kept.plan
    monkeypatch.setattr(approx, "LOCAL_INPUT_BYTES", 0)
    streamed = approximate_knn(tx, 4, n_candidates=32, n_rounds=5, key=9, progress=False)
    assert "stream" in streamed.plan
    # a round routed in several waves (each re-reading the input): the same graph
    waved = approximate_knn(tx, 4, n_candidates=32, n_rounds=5, key=9, group_rows=64, wave_rows=70, progress=False)
    assert "waves over 5 rounds" in waved.plan and int(waved.plan.split(" waves")[0].split("; ")[-1]) > 5
    for other in (streamed, waved):
        for f in ("indices", "distances", "dots", "cross", "sqnorms"):
            np.testing.assert_array_equal(getattr(kept, f), getattr(other, f))


class _Workers:
    """A client as the planners see it: the scheduler's view of the workers."""

    def __init__(self, limit: int, rss: int, n: int = 2) -> None:
        self._info = {"workers": {str(i): {"memory_limit": limit, "nthreads": 1, "metrics": {"memory": rss}} for i in range(n)}}

    def scheduler_info(self) -> dict:
        return self._info


def test_wave_budget_is_what_the_workers_have_left():
    """With room to spare the wave gets WAVE_MEMORY_SHARE of the memory; when the workers'
    footprint, the kept input and one window task per thread leave less below the spill target,
    the wave gets what is left (never below WAVE_FLOOR of its share)."""
    import ppdm_dask.neighbors.approximate as A

    mib = 2**20
    n, nnz, packed = 1_000_000, 20_000_000, 100 * mib
    roomy = A.group_plan(n, nnz, packed, 512, 5, False, _Workers(10_000 * mib, 300 * mib))
    in_flight = 2 * (4 * 20 + 28) + 16
    assert roomy["wave_rows"] == int(A.WAVE_MEMORY_SHARE * 2 * 10_000 * mib // in_flight)
    assert roomy["input"] == "persist"
    # 1,000 MiB workers holding 300 MiB: 2 x (600 - 300) - 100 (input) - 2 x 3 x 32 (tasks) = 308 MiB,
    # over the 10 % share (200 MiB): the share holds
    assert A.group_plan(n, nnz, packed, 512, 5, False, _Workers(1000 * mib, 300 * mib))["wave_rows"] == int(
        0.1 * 2000 * mib // in_flight
    )
    # holding 400 MiB: 2 x 200 - 100 - 192 = 108 MiB left
    tight = A.group_plan(n, nnz, packed, 512, 5, False, _Workers(1000 * mib, 400 * mib))
    assert tight["wave_rows"] == int(108 * mib // in_flight) and "left below their spill target" in tight["wave_reason"]
    # nothing left: the floor
    full = A.group_plan(n, nnz, packed, 512, 5, False, _Workers(1000 * mib, 590 * mib))
    assert full["wave_rows"] == int(A.WAVE_FLOOR * 0.1 * 2000 * mib // in_flight)


def test_waves_cover_every_group_once_within_the_budget():
    from ppdm_dask.neighbors.approximate import MAX_WAVE_ROUNDS, _waves

    rng = np.random.default_rng(3)
    windows = np.stack([rng.permutation(1000) // 10 for _ in range(6)]).astype(np.int32)
    windows[2, :50] = -1  # rows without neighbours are routed nowhere
    for budget in (35, 100, 333, 10_000):
        waves = _waves(windows, 3, budget)  # groups of 3 windows = 30 rows
        seen = {r: [] for r in range(6)}
        for wave in waves:
            rounds = {r for r, _, _ in wave}
            assert len(rounds) <= MAX_WAVE_ROUNDS
            rows = sum(int(((windows[r] >= 0) & (windows[r] // 3 >= lo) & (windows[r] // 3 < hi)).sum()) for r, lo, hi in wave)
            assert rows <= max(budget, 30)  # one group alone may exceed a tiny budget
            for r, lo, hi in wave:
                seen[r].extend(range(lo, hi))
        for r in range(6):
            groups = np.unique(windows[r][windows[r] >= 0] // 3)
            assert seen[r] == groups.tolist()
        assert all({r for r, _, _ in w} <= {0} or {r for r, _, _ in w} <= {1} or min(r for r, _, _ in w) >= 2 for w in waves)
