"""k-variance anonymity (docs/sketches.md#k-variance-anonymity) against a brute-force sequential
reference, the hand-computed bound of two 0/1 records (M = 4, unchanged by rescaling) and the
invariants: every kNN edge satisfies the definition after any number of sweeps, the symmetric
sweep reaches a fixed point, and the result does not depend on the chunking."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

from ppdm_dask import TransactionArray
from ppdm_dask.errors import InvalidParameter, NotFittedError
from ppdm_dask.sketch import KVarianceAnonymizer, kvariance_components
from ppdm_dask.sketch import _kvariance_kernels as KV


# ---------------------------------------------------------------- independent reference
def reference_knn(x: np.ndarray, k: int, metric: str = "cosine"):
    """Dense brute force: k other rows by (distance, index); zero rows excluded."""
    n = x.shape[0]
    sq = (x**2).sum(axis=1)
    g = x @ x.T
    with np.errstate(divide="ignore", invalid="ignore"):
        if metric == "cosine":
            d = 1.0 - g / np.sqrt(np.outer(sq, sq))
        else:
            d = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * g, 0))
    idx = np.full((n, k), -1)
    for i in range(n):
        if sq[i] == 0:
            continue
        cand = [j for j in range(n) if j != i and sq[j] > 0]
        cand.sort(key=lambda j: (d[i, j], j))
        idx[i, : min(k, len(cand))] = cand[:k]
    return idx, d, g, sq


def reference_m(x: np.ndarray, k: int, m_max: int, symmetric: bool = True, max_iter: int = 20, metric="cosine"):
    """docs/sketches.md#k-variance-anonymity written out with Python loops and exact per-edge formulas."""
    idx, d, g, sq = reference_knn(x, k, metric)
    n = x.shape[0]

    def bound(i, j):
        v = sq[i] * sq[j] + g[i, j] ** 2 - 2 * float(np.sum(x[i] ** 2 * x[j] ** 2))
        tau = math.sqrt(sq[i] * sq[j]) - abs(g[i, j])
        if tau <= 1e-12 * math.sqrt(sq[i] * sq[j]):
            return m_max
        r = v / tau**2
        return min(m_max, max(0, math.floor(r + 1e-9 * max(1.0, abs(r)))))

    adj = {i: set() for i in range(n)}
    for i in range(n):
        for j in idx[i]:
            if j >= 0:
                adj[i].add(int(j))
                if symmetric:
                    adj[int(j)].add(i)
    kd = [d[i, idx[i, -1]] if idx[i, -1] >= 0 else math.inf for i in range(n)]
    order = sorted((i for i in range(n) if sq[i] > 0), key=lambda i: (-kd[i], i))
    m = [m_max if sq[i] > 0 else 0 for i in range(n)]
    for _ in range(max_iter):
        change = 0
        for q in order:
            new = min([bound(q, l) for l in adj[q] if m[l] > bound(q, l)] + [m_max])
            change += abs(new - m[q])
            m[q] = new
        if change == 0:
            break
    if not symmetric:
        for q in range(n):
            for l in idx[q]:
                if l >= 0 and min(m[q], m[l]) > bound(q, l):
                    m[q] = bound(q, l)
    return np.array(m), idx


def random_sparse(n=60, d=40, density=0.15, seed=0, weighted=False):
    rng = np.random.default_rng(seed)
    x = (rng.random((n, d)) < density).astype(float)
    if weighted:
        x *= rng.integers(1, 5, size=x.shape)
    x[3] = 0.0  # an all-zero record
    x[7] = x[8]  # duplicates force distance ties
    return x


# ---------------------------------------------------------------- oracles
def test_o04_bound_example_and_scale_invariance():
    # binary x, y with 20 ones each and overlap 10: V = 480, tau = 10, M = 4 (also normalised)
    x = np.zeros(40)
    y = np.zeros(40)
    x[:20] = 1
    y[10:30] = 1
    for a, b in [(1.0, 1.0), (1 / math.sqrt(20), 1 / math.sqrt(20)), (3.0, 0.5)]:
        xa, yb = a * x, b * y
        dot, cross = xa @ yb, np.sum(xa**2 * yb**2)
        m = KV.edge_bounds(
            np.array([[1], [0]]), np.array([[dot], [dot]]), np.array([[cross], [cross]]), np.array([xa @ xa, yb @ yb]), 256
        )
        assert m.tolist() == [[4], [4]]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("symmetric", [True, False])
def test_components_equal_sequential_reference(weighted, symmetric):
    from ppdm_dask.neighbors import knn

    x = random_sparse(weighted=weighted, seed=1 + weighted)
    ref, ref_idx = reference_m(x, 4, 64, symmetric=symmetric)
    tx = TransactionArray.from_scipy(sp.csr_array(x), npartitions=3)
    graph = knn(tx, 4, progress=False)
    assert np.array_equal(graph.indices, ref_idx)
    m, info = kvariance_components(graph, m_max=64, neighbourhood="symmetric" if symmetric else "knn")
    assert np.array_equal(m, ref)
    assert info["violations"] == 0
    assert m[3] == 0  # the zero record is suppressed


def test_o05_invariants_every_max_iter_and_partitioning():
    from ppdm_dask.neighbors import knn

    x = random_sparse(n=80, d=50, seed=4)
    results = []
    for parts in (1, 4, 7):
        tx = TransactionArray.from_scipy(sp.csr_array(x), npartitions=parts)
        graph = knn(tx, 5, progress=False)
        for max_iter in (1, 2, 20):
            m, info = kvariance_components(graph, m_max=128, max_iter=max_iter)
            assert info["violations"] == 0  # (a) valid after any number of sweeps
        assert info["converged"] and info["changes"][-1] == 0 and info["n_iter"] <= 20  # (b)
        results.append(m)
    assert all(np.array_equal(results[0], r) for r in results[1:])  # (c)


def test_anonymizer_sketches_follow_m_and_report(tmp_path):
    from ppdm_dask.sketch import read_sketches

    x = random_sparse(n=50, d=30, seed=2)
    tx = TransactionArray.from_scipy(sp.csr_array(x), npartitions=2)
    an = KVarianceAnonymizer(k=3, m_max=32, key=5)
    release = an.fit_release(tx, progress=False)
    sk = release.data
    values, m = sk.compute()
    assert np.array_equal(m, an.m_)
    r = an.report_
    assert r["n_suppressed"] == int((an.m_ == 0).sum()) and r["violations"] == 0 and r["k"] == 3
    # sketch values are exactly the shared generator's first m_i components
    R = an.generator_.signs(np.arange(x.shape[1]), 32).astype(float)
    full = x @ R.T
    mask = np.arange(32)[None, :] < m[:, None]
    assert np.allclose(values, np.where(mask, full, 0.0))
    sk.to_parquet(str(tmp_path / "kv"), progress=False, keep_suppressed=True)
    back = read_sketches(str(tmp_path / "kv"))
    assert back.metadata["method"] == "k-variance" and back.metadata["k"] == 3
    assert np.array_equal(back.compute()[1], m)


def test_partition_scope_uses_only_neighbours_inside_partitions():
    x = random_sparse(n=40, d=30, seed=6)
    tx = TransactionArray.from_scipy(sp.csr_array(x), npartitions=2)
    an = KVarianceAnonymizer(k=3, m_max=32, knn_scope="partition", key=1).fit(tx, progress=False)
    rows = tx.partition_rows
    part_of = np.repeat(np.arange(len(rows)), rows)
    idx = an.graph_.indices
    valid = idx >= 0
    assert np.all(part_of[np.where(valid, idx, 0)][valid] == np.broadcast_to(part_of[:, None], idx.shape)[valid])
    assert an.report_["violations"] == 0


def test_bad_parameters():
    x = random_sparse(n=10, d=8, seed=3)
    tx = TransactionArray.from_scipy(sp.csr_array(x), npartitions=1)
    with pytest.raises(InvalidParameter, match="smaller than the number of records"):
        KVarianceAnonymizer(k=10).fit(tx, progress=False)
    for kw in ({"k": 0}, {"m_max": 0}, {"knn_scope": "world"}, {"approximate": True, "knn_scope": "partition"}):
        with pytest.raises(InvalidParameter):
            KVarianceAnonymizer(**kw).fit(tx, progress=False)
    graph = SimpleNamespace(
        indices=np.zeros((1, 1), int),
        distances=np.zeros((1, 1)),
        dots=np.zeros((1, 1)),
        cross=np.zeros((1, 1)),
        sqnorms=np.ones(1),
    )
    with pytest.raises(InvalidParameter):
        kvariance_components(graph, neighbourhood="both")
    with pytest.raises(InvalidParameter):
        kvariance_components(graph, tol=-1)
    with pytest.raises(NotFittedError):
        KVarianceAnonymizer().release()


def test_paper_threshold_is_the_printed_square_root():
    # the 20-ones pair under the printed threshold sqrt(|x||y| - |x.y|): M = V / tau = 480 / 10 = 48,
    # and it is not scale invariant
    # (docs/sketches.md#correction-the-k-variance-threshold-is-the-cauchy-schwarz-gap)
    x = np.zeros(40)
    y = np.zeros(40)
    x[:20] = 1
    y[10:30] = 1
    args = (np.array([[1], [0]]), np.array([[10.0], [10.0]]), np.array([[10.0], [10.0]]), np.array([20.0, 20.0]), 256)
    assert KV.edge_bounds(*args, threshold="paper").tolist() == [[48], [48]]
    scaled = (args[0], args[1] * 4, args[2] * 16, args[3] * 4, 256)  # both records x2
    assert KV.edge_bounds(*scaled, threshold="paper").tolist() == [[192], [192]]
    assert KV.edge_bounds(*scaled).tolist() == [[4], [4]]
    with pytest.raises(InvalidParameter):
        KVarianceAnonymizer(k=2, threshold="loose").fit(
            TransactionArray.from_scipy(sp.csr_array(random_sparse(n=10, d=8))), progress=False
        )


def test_paper_threshold_is_a_weak_parameter_overridden_on_record():
    from ppdm_dask.errors import WeakParameterError

    rng = np.random.default_rng(2)
    tx = TransactionArray.from_scipy(sp.csr_array((rng.random((40, 30)) < 0.3).astype(float)), npartitions=2)
    with pytest.raises(WeakParameterError, match="threshold = corrected"):
        KVarianceAnonymizer(3, key=1, threshold="paper").fit(tx)
    rel = KVarianceAnonymizer(3, key=1, threshold="paper", allow_weak=["threshold = corrected"]).fit_release(tx)
    assert rel.overrides == ("threshold = corrected",) and rel.parameters["threshold"] == "paper"
    # allow_weak=True records only the floors that actually fail
    assert KVarianceAnonymizer(3, key=1, allow_weak=True).fit_release(tx).overrides == ()
