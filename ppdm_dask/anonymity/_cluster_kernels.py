"""Pure kernels of the clustering l-diverse partition (docs/anonymity.md#the-clustering-l-diverse-partition);
numpy + numba, no dask.

Input of every kernel is an *encoded* table already in the sorted order of step 1 of the algorithm:

* ``X`` float64 ``(n, q_num)``: numeric QIs (raw values, not scaled);
* ``C`` int64 ``(n, q_cat)``: categorical QIs as codes ``0..d_a-1``; column ``a`` owns rows
  ``offs[a]..offs[a+1]-1`` of the flattened value-count tables;
* ``S`` int64 ``(n,)``: sensitive codes ``0..n_sens-1`` in value order.

Distances
---------
The record-cluster distance (docs/anonymity.md#clarification-seeds-order-and-distance)
``dist(r, P) = sum_num |x_a - mean_a(P)| / range_a + sum_cat (1 - f_P(x_a))`` is evaluated as

    dist = (sum_num |n x_a - s_a| * w_a + (q_cat n - sum_cat c_a) * W) / (W n)

(``n = |P|``, ``s_a`` the sum of attribute ``a`` over P, ``c_a`` the count of r's value in P).
With ``w_a = W / range_a`` this is the documented value. :func:`distance_weights` picks ``W`` = lcm of the
ranges (and integer ``w_a``) when the numeric QIs are integers small enough for the numerator
to be an exact integer in float64: the one rounding left is the final division, so two
distances that are mathematically equal are equal floats and the tie rules ("lowest index")
apply exactly. Otherwise ``W = 1``, ``w_a = 1 / range_a`` (ties then up to float64 rounding).
A numeric QI with range 0 gets weight 0 (the definition divides by the range; a constant column cannot
separate clusters). The cluster-cluster distance of Repair-L is scaled the same way
(denominator ``W n_P n_Q``).

Memory of one greedy run: ``4 K (D + n_sens) + 8 K (q_num + 3)`` bytes for ``K`` clusters and
``D`` = total number of categorical values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from ..errors import InfeasiblePrivacyError
from ._diversity import Closeness, diverse_mask

# float64 represents every integer below 2**53 exactly
_EXACT = float(2**53)


def distance_weights(lo: np.ndarray, hi: np.ndarray, integral: bool, n_cat: int, n_total: int) -> tuple[np.ndarray, float]:
    """Weights ``(w, W)`` of the scaled distance numerator (see the module docstring).

    Parameters
    ----------
    lo, hi : ndarray, shape (q_num,)
        Minimum and maximum of each numeric QI over the **whole** table (ranges are global).
    integral : bool
        All numeric QI values are integers.
    n_cat : int
        Number of categorical QIs.
    n_total : int
        Number of rows of the whole table (bounds cluster sizes).

    Returns
    -------
    w : ndarray, shape (q_num,)
    W : float
    """
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    q = lo.shape[0]
    rng = hi - lo
    if q and integral:
        amax = float(max(np.abs(lo).max(), np.abs(hi).max(), 1.0))
        pos = [int(r) for r in rng if r > 0]
        L = math.lcm(*pos) if pos else 1
        n2 = float(n_total) ** 2
        # numerators of both distances stay below 2**53: |s_P n_Q - s_Q n_P| <= n^2 range_a,
        # times L / range_a, summed over q_num + q_cat terms; and n^2 max|x| for the products
        if (q + n_cat + 1) * n2 * L < _EXACT and n2 * amax < _EXACT:
            w = np.array([L // int(r) if r > 0 else 0 for r in rng], dtype=np.float64)
            return w, float(L)
    w = np.where(rng > 0, 1.0 / np.where(rng > 0, rng, 1.0), 0.0)
    return w.astype(np.float64), 1.0


# --------------------------------------------------------------------------- greedy (steps 3-5)
@numba.njit(cache=True, nogil=True)
def choose_seeds(S: np.ndarray, n_sens: int, K: int) -> np.ndarray:
    """Step 3: round-robin seeds over the sensitive values (descending frequency, ties by code).

    Each turn takes the first not-yet-chosen record (in the given order) with the current
    value; exhausted values are skipped. Returns the K seed positions in the order chosen.
    """
    n = S.shape[0]
    freq = np.zeros(n_sens, np.int64)
    for r in range(n):
        freq[S[r]] += 1
    # positions of each value in order (counting sort keeps the record order)
    start = np.zeros(n_sens + 1, np.int64)
    for v in range(n_sens):
        start[v + 1] = start[v] + freq[v]
    fill = start[:-1].copy()
    pos = np.empty(n, np.int64)
    for r in range(n):
        pos[fill[S[r]]] = r
        fill[S[r]] += 1
    # values by (-freq, code); mergesort is stable so equal frequencies keep code order
    order = np.argsort(-freq, kind="mergesort")
    active = np.empty(n_sens, np.int64)
    n_act = 0
    for t in range(n_sens):
        if freq[order[t]] > 0:
            active[n_act] = order[t]
            n_act += 1
    ptr = np.zeros(n_sens, np.int64)
    seeds = np.empty(K, np.int64)
    got = 0
    while got < K and n_act > 0:
        kept = 0
        for t in range(n_act):
            v = active[t]
            if got < K:
                seeds[got] = pos[start[v] + ptr[v]]
                ptr[v] += 1
                got += 1
            if ptr[v] < freq[v]:
                active[kept] = v  # compacting in place keeps the cyclic order
                kept += 1
        n_act = kept
    return seeds


@numba.njit(cache=True, nogil=True)
def _add(r, i, X, C, offs, S, size, sums, cat, sens, ndist, labels):
    size[i] += 1
    for a in range(X.shape[1]):
        sums[a, i] += X[r, a]
    for a in range(C.shape[1]):
        cat[offs[a] + C[r, a], i] += 1
    s = S[r]
    sens[s, i] += 1
    if sens[s, i] == 1:
        ndist[i] += 1
    labels[r] = i


@numba.njit(cache=True, nogil=True)
def greedy_assign(X, C, offs, S, n_sens, w, W, k, l, seeds):
    """Steps 4-5: seed clusters, then place every other record greedily (sorted order).

    A record joins the nearest cluster (ties: lowest index) among those with ``|P| < k`` or
    ``s(r)`` not in ``s(P)`` and ``|s(P)| < l``; if none qualifies, the nearest cluster.

    Returns
    -------
    labels : int64 (n,)
        Cluster of each record (0..K-1, K = len(seeds); cluster i is seeded by seeds[i]).
    size : int64 (K,); sums : float64 (q_num, K); cat : int32 (D, K); sens : int32 (n_sens, K)
        Final cluster summaries (value counts laid out value-major for contiguous scans).
    """
    n, qn = X.shape
    qc = C.shape[1]
    K = seeds.shape[0]
    D = offs[qc]
    size = np.zeros(K, np.int64)
    sums = np.zeros((qn, K), np.float64)
    cat = np.zeros((D, K), np.int32)
    sens = np.zeros((n_sens, K), np.int32)
    ndist = np.zeros(K, np.int64)
    labels = np.full(n, -1, np.int64)
    for i in range(K):
        _add(seeds[i], i, X, C, offs, S, size, sums, cat, sens, ndist, labels)
    acc = np.empty(K, np.float64)
    cc = np.empty(K, np.int64)
    for r in range(n):
        if labels[r] >= 0:
            continue
        # distance numerators of r to all clusters, attribute by attribute (contiguous in i)
        acc[:] = 0.0
        for a in range(qn):
            wa = w[a]
            if wa == 0.0:
                continue
            xa = X[r, a]
            sa = sums[a]
            for i in range(K):
                acc[i] += abs(size[i] * xa - sa[i]) * wa
        cc[:] = 0
        for a in range(qc):
            row = cat[offs[a] + C[r, a]]
            for i in range(K):
                cc[i] += row[i]
        srow = sens[S[r]]
        best_any = -1
        d_any = np.inf
        best_ok = -1
        d_ok = np.inf
        for i in range(K):
            d = (acc[i] + (qc * size[i] - cc[i]) * W) / (W * size[i])
            if d < d_any:  # strict: the lowest index wins ties
                d_any = d
                best_any = i
            if d < d_ok and (size[i] < k or (srow[i] == 0 and ndist[i] < l)):
                d_ok = d
                best_ok = i
        target = best_ok if best_ok >= 0 else best_any
        _add(r, target, X, C, offs, S, size, sums, cat, sens, ndist, labels)
    return labels, size, sums, cat, sens


@numba.njit(cache=True, nogil=True)
def cluster_minmax(X, labels, K):
    """Per-cluster min and max of each numeric QI, shape (q_num, K) each."""
    qn = X.shape[1]
    mins = np.full((qn, K), np.inf)
    maxs = np.full((qn, K), -np.inf)
    for r in range(X.shape[0]):
        i = labels[r]
        for a in range(qn):
            v = X[r, a]
            if v < mins[a, i]:
                mins[a, i] = v
            if v > maxs[a, i]:
                maxs[a, i] = v
    return mins, maxs


@dataclass
class Clusters:
    """Summaries of a list of clusters (cluster axis last except ``sens``).

    Attributes
    ----------
    size : int64 (M,)
    sums, mins, maxs : float64 (q_num, M)
    cat : int32 (D, M)
        Value counts of the categorical QIs (rows ``offs[a]..offs[a+1]-1`` for QI ``a``).
    sens : int64 (M, n_sens)
        Sensitive-value counts (class-major, the layout of :func:`diverse_mask`).
    """

    size: np.ndarray
    sums: np.ndarray
    mins: np.ndarray
    maxs: np.ndarray
    cat: np.ndarray
    sens: np.ndarray

    @property
    def n(self) -> int:
        return int(self.size.shape[0])

    @staticmethod
    def concat(parts: list[Clusters]) -> Clusters:
        """Clusters of several partitions, in partition order (indices continue)."""
        return Clusters(
            size=np.concatenate([p.size for p in parts]),
            sums=np.concatenate([p.sums for p in parts], axis=1),
            mins=np.concatenate([p.mins for p in parts], axis=1),
            maxs=np.concatenate([p.maxs for p in parts], axis=1),
            cat=np.concatenate([p.cat for p in parts], axis=1),
            sens=np.concatenate([p.sens for p in parts], axis=0),
        )


def greedy_clusters(
    X: np.ndarray, C: np.ndarray, S: np.ndarray, offs: np.ndarray, n_sens: int, w: np.ndarray, W: float, k: int, l: float
) -> tuple[np.ndarray, Clusters]:
    """Steps 2-5 of docs/anonymity.md#the-clustering-l-diverse-partition on one sorted (partition of
    the) table.

    ``K = floor(n / k)``. A table with ``0 < n < k`` (a partition smaller than k; never the
    whole table, which is checked before) becomes one under-sized cluster that Repair-L merges
    into its nearest neighbour. ``l`` is the distinct-count bound of the greedy condition.

    Returns
    -------
    labels : int64 (n,)
        Cluster of each record (indices into the returned clusters).
    clusters : Clusters
    """
    # one compiled signature: C-contiguous, writable (pandas may hand out read-only views,
    # which numba types separately and would compile again)
    X = np.require(X, np.float64, ["C", "W"])
    C = np.require(C, np.int64, ["C", "W"])
    S = np.require(S, np.int64, ["C", "W"])
    offs = np.require(offs, np.int64, ["C", "W"])
    n = S.shape[0]
    K = n // k
    if n == 0 or K == 0:
        K = 1 if n else 0
        labels = np.zeros(n, np.int64)
        size = np.full(K, n, np.int64)
        sums = X.sum(axis=0).reshape(-1, 1)[:, :K]
        cat = np.zeros((int(offs[-1]), K), np.int32)
        sens = np.zeros((n_sens, K), np.int32)
        if n:
            for a in range(C.shape[1]):
                np.add.at(cat[:, 0], offs[a] + C[:, a], 1)
            np.add.at(sens[:, 0], S, 1)
    else:
        seeds = choose_seeds(S, n_sens, K)
        labels, size, sums, cat, sens = greedy_assign(
            X, C, offs, S, int(n_sens), np.require(w, np.float64, ["C", "W"]), float(W), int(k), float(l), seeds
        )
    mins, maxs = cluster_minmax(X, labels, K)
    return labels, Clusters(size=size, sums=sums, mins=mins, maxs=maxs, cat=cat, sens=sens.T.astype(np.int64))


# --------------------------------------------------------------------------- Repair-L (step 6)
@numba.njit(cache=True, nogil=True)
def nearest_cluster(p, alive, size, sums, cat, rows, vals, n_cat, w, W):
    """Index of the alive cluster nearest to cluster ``p`` (ties: lowest index), -1 if none.

    ``rows``/``vals``: the non-zero categorical counts of p (``cat[rows, p] = vals``); the
    total-variation sum is taken over p's support only:
    ``sum_v |a_v n_Q - b_v n_P| = sum_{a_v > 0} (|a_v n_Q - b_v n_P| - b_v n_P) + q_cat n_P n_Q``.
    """
    M = size.shape[0]
    qn = sums.shape[0]
    npp = size[p]
    acc = np.zeros(M, np.float64)
    for a in range(qn):
        wa = w[a]
        if wa == 0.0:
            continue
        sp = sums[a, p]
        sa = sums[a]
        for q in range(M):
            acc[q] += abs(sp * size[q] - sa[q] * npp) * wa
    tv = np.zeros(M, np.int64)
    for t in range(rows.shape[0]):
        row = cat[rows[t]]
        av = np.int64(vals[t])
        for q in range(M):
            b = np.int64(row[q]) * npp
            tv[q] += abs(av * size[q] - b) - b
    best = -1
    dbest = np.inf
    for q in range(M):
        if q == p or not alive[q]:
            continue
        tvq = tv[q] + n_cat * npp * size[q]  # even: positive and negative parts cancel
        d = (acc[q] + 0.5 * tvq * W) / (W * npp * size[q])
        if d < dbest:
            dbest = d
            best = q
    return best


def repair_l(
    cl: Clusters,
    offs: np.ndarray,
    w: np.ndarray,
    W: float,
    k: int,
    l: float | None,
    kind: str = "distinct",
    c: float | None = None,
    closeness: Closeness | None = None,
) -> tuple[np.ndarray, int]:
    """Repair-L (docs/anonymity.md#addition-repair-l) on cluster summaries; ``cl`` is updated in place.

    While some cluster has fewer than k rows or is not l-diverse (``kind``) or, with
    ``closeness``, not t-close to the whole table (decided by :func:`diverse_mask`): merge the smallest violating cluster (ties: lowest index) into the
    nearest other cluster (ties: lowest index). The merged cluster keeps the position of the one
    it was merged into.

    Returns
    -------
    root : int64 (M,)
        For every input cluster, the index of the surviving cluster that holds it.
    n_merges : int

    Raises
    ------
    InfeasiblePrivacyError
        Only one cluster is left and it still violates.
    """
    M = cl.n
    n_cat = len(offs) - 1
    alive = np.ones(M, dtype=bool)
    viol = (cl.size < k) | ~diverse_mask(cl.sens, l, kind, c, closeness)
    parent = np.arange(M, dtype=np.int64)
    n_alive, merges = M, 0
    sizes_masked = np.where(viol, cl.size, np.iinfo(np.int64).max)
    w = np.require(w, np.float64, ["C", "W"])
    while viol.any():
        if n_alive == 1:
            raise InfeasiblePrivacyError(
                f"Repair-L merged everything into one cluster of {int(cl.size[alive][0])} rows and it is still not "
                f"{k}-anonymous / {l}-diverse ({kind})" + (f" / {closeness.t:g}-close" if closeness is not None else "")
            )
        p = int(np.argmin(sizes_masked))  # first minimum = lowest index among the smallest
        rows = np.flatnonzero(cl.cat[:, p])
        vals = cl.cat[rows, p]
        q = int(nearest_cluster(p, alive, cl.size, cl.sums, cl.cat, rows.astype(np.int64), vals, n_cat, w, float(W)))
        cl.size[q] += cl.size[p]
        cl.sums[:, q] += cl.sums[:, p]
        cl.mins[:, q] = np.minimum(cl.mins[:, q], cl.mins[:, p])
        cl.maxs[:, q] = np.maximum(cl.maxs[:, q], cl.maxs[:, p])
        cl.cat[rows, q] += vals
        cl.sens[q] += cl.sens[p]
        alive[p] = False
        viol[p] = False
        sizes_masked[p] = np.iinfo(np.int64).max
        viol[q] = bool(cl.size[q] < k or not diverse_mask(cl.sens[q : q + 1], l, kind, c, closeness)[0])
        sizes_masked[q] = cl.size[q] if viol[q] else np.iinfo(np.int64).max
        parent[p] = q
        n_alive -= 1
        merges += 1
    # follow merge chains to the surviving cluster, compressing paths
    root = parent.copy()
    for i in range(M):
        r = i
        while root[r] != r:
            r = root[r]
        j = i
        while root[j] != r:
            root[j], j = r, root[j]
    return root, merges


def compact(cl: Clusters, root: np.ndarray) -> tuple[np.ndarray, Clusters]:
    """Renumber the surviving clusters 0..m-1 in index order; returns (new id per input cluster, clusters)."""
    alive = root == np.arange(root.shape[0])
    new_id = np.cumsum(alive) - 1
    keep = np.flatnonzero(alive)
    out = Clusters(
        size=cl.size[keep],
        sums=cl.sums[:, keep],
        mins=cl.mins[:, keep],
        maxs=cl.maxs[:, keep],
        cat=cl.cat[:, keep],
        sens=cl.sens[keep],
    )
    return new_id[root], out
