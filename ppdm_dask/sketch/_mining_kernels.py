"""Per-block kernels of mining on sketches (docs/sketches.md#mining-on-sketches): pure numpy / scipy,
no dask.

A block of sketches is ``S`` (n, m_max) float64 with ``m`` (n,) components per row; components
``j >= m_i`` are ignored (they are zeroed by :func:`clean_block`, so the row product of two
cleaned sketches sums exactly over the first ``min(m_i, m_j)`` components). ``m_i = 0`` marks a
suppressed record.

Every similarity between two sketches ``a`` and ``b`` uses the same ``m = min(m_a, m_b)``
components for all its terms (docs/sketches.md#clarification-pairwise-estimates-use-the-same-components):

* ``"cosine"``: ``c_m = dot_m / sqrt(sq_a,m * sq_b,m)`` (0 when the denominator is 0),
* ``"shrunk"``: ``c_m * m / (m + lam)``, the posterior mean of the cosine under a prior
  ``N(0, 1/lam)`` when ``c_m`` has noise variance ``1/m``
  (docs/sketches.md#the-variance-aware-similarity); ``lam`` from :func:`estimate_shrinkage`,
* ``"euclidean"``: ``-(sq_a,m + sq_b,m - 2 dot_m) / m`` (minus the estimated squared distance),

where ``sq_x,m`` is the sum of squares of the first ``m`` components, looked up in the per-row
prefix sums of :func:`prefix_sqnorms`.

Exactness: for integer-valued data sketched with ±1 signs (counts, 0/1 baskets) every sketch
value, dot product and prefix sum is an integer below 2**53, hence exact whatever the block
shapes; the results of the block algorithms are then bit-identical for every partitioning.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

__all__ = [
    "SIMILARITIES",
    "NO_INDEX",
    "clean_block",
    "prefix_sqnorms",
    "pair_similarity",
    "estimate_shrinkage",
    "shrinkage_sample",
    "topk_select",
    "merge_topk",
    "knn_block_topk",
    "vote",
    "draw_by_counts",
    "assign_block",
    "cluster_partials",
    "centroids_from_partials",
    "pick_reseeds",
]

SIMILARITIES = ("shrunk", "cosine", "euclidean")
_MODE = {"cosine": 0, "euclidean": 1, "shrunk": 2}
#: Empirical-Bayes shrinkage: pairs with fewer common components do not enter the estimate of
#: the prior (the noise model 1/m is only accurate for larger m), bounds of lam, and the
#: sample of records it is estimated from.
SHRINKAGE_MIN_COMPONENTS = 8
SHRINKAGE_BOUNDS = (1.0, 4096.0)
SHRINKAGE_SAMPLE = 2000
#: Index of an empty top-k slot: sorts after every real index.
NO_INDEX = np.iinfo(np.int64).max
#: Elements of one (test rows x train rows) similarity tile; bounds the temporaries (~16 MB each).
TILE_ELEMENTS = 1 << 21


def clean_block(S: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(S, m)`` as C-contiguous float64 / int64 with every component ``j >= m_i`` set to 0.

    Zero padding is the SketchArray contract; re-applying it is cheap and also accepts
    NaN-padded input.
    """
    S = np.asarray(S, dtype=np.float64)
    m = np.asarray(m, dtype=np.int64).ravel()
    if S.ndim != 2 or S.shape[0] != m.shape[0]:
        raise ValueError(f"sketch block {S.shape} and m {m.shape} do not match")
    m = np.clip(m, 0, S.shape[1])
    keep = np.arange(S.shape[1])[None, :] < m[:, None]
    return np.ascontiguousarray(np.where(keep, S, 0.0)), m


def prefix_sqnorms(S: np.ndarray) -> np.ndarray:
    """``P[i, q] = sum_{j < q} S[i, j]**2`` for ``q = 0..m_max`` (shape ``(n, m_max + 1)``)."""
    P = np.zeros((S.shape[0], S.shape[1] + 1), dtype=np.float64)
    np.cumsum(S * S, axis=1, out=P[:, 1:])
    return P


@numba.njit(cache=True, nogil=True)
def _similarity_from_dots(dots, ma, Pa, mb, Pb, mode, lam):  # pragma: no cover - compiled
    # one fused pass instead of numpy's two (na x nb) gathers; same IEEE operations in the
    # same order as the formulas in the module docstring (no fastmath: bit-reproducible)
    na, nb = dots.shape
    out = np.empty((na, nb))
    for i in range(na):
        for j in range(nb):
            q = min(ma[i], mb[j])
            if q == 0:
                out[i, j] = -np.inf
                continue
            a = Pa[i, q]
            b = Pb[j, q]
            if mode == 1:
                out[i, j] = -(a + b - 2.0 * dots[i, j]) / q
                continue
            den = np.sqrt(a * b)
            c = dots[i, j] / den if den > 0 else 0.0
            out[i, j] = c if mode == 0 else c * (q / (q + lam))
    return out


def pair_similarity(
    Sa: np.ndarray,
    ma: np.ndarray,
    Pa: np.ndarray,
    Sb: np.ndarray,
    mb: np.ndarray,
    Pb: np.ndarray,
    similarity: str = "cosine",
    shrinkage: float = 0.0,
) -> np.ndarray:
    """Estimated similarity of every pair (row of ``a``, row of ``b``), shape ``(na, nb)``.

    Inputs are cleaned blocks (:func:`clean_block`) with their prefix sums ``P``. Pairs with
    ``min(m_a, m_b) = 0`` (a suppressed side) get ``-inf``. ``shrinkage`` is ``lam`` of
    ``"shrunk"`` (ignored otherwise).
    """
    if similarity not in SIMILARITIES:
        raise ValueError(f"unknown similarity {similarity!r}; use one of {SIMILARITIES}")
    w = min(Sa.shape[1], Sb.shape[1])  # no pair uses a component beyond the shorter width
    dots = np.ascontiguousarray(Sa[:, :w] @ Sb[:, :w].T)
    return _similarity_from_dots(
        dots,
        np.ascontiguousarray(ma, dtype=np.int64),
        np.ascontiguousarray(Pa),
        np.ascontiguousarray(mb, dtype=np.int64),
        np.ascontiguousarray(Pb),
        _MODE[similarity],
        float(shrinkage),
    )


def shrinkage_sample(m: np.ndarray) -> np.ndarray:
    """Rows the empirical-Bayes shrinkage is estimated from: at most :data:`SHRINKAGE_SAMPLE`
    unsuppressed rows evenly spaced by row number (by global row: independent of the blocks)."""
    live = np.flatnonzero(np.asarray(m) > 0)
    return live[np.unique(np.linspace(0, live.size - 1, min(live.size, SHRINKAGE_SAMPLE)).astype(np.int64))]


def estimate_shrinkage(S: np.ndarray, m: np.ndarray) -> tuple[float, int]:
    """Empirical-Bayes ``lam = 1 / tau^2`` of the ``"shrunk"`` similarity from a sample of records.

    Over all pairs ``i < j`` of the unsuppressed rows with ``q = min(m_i, m_j) >=``
    :data:`SHRINKAGE_MIN_COMPONENTS`, the same-component cosine ``c_q`` has
    ``E[c_q^2] = E[c^2] + E[noise]`` with noise variance ``1/q``, so
    ``tau^2 = mean(c_q^2) - mean(1/q)`` estimates the spread of the true cosines around 0.
    ``lam`` is clipped to :data:`SHRINKAGE_BOUNDS`; with fewer than 50 such pairs (or
    ``tau^2 <= 0``: the estimates are all noise) it is the upper bound (the strongest shrinkage).

    Returns
    -------
    (lam, n_pairs) : float, int
    """
    S, m = clean_block(S, m)
    live = np.flatnonzero(m > 0)
    S, m = S[live], m[live]
    lo, hi = SHRINKAGE_BOUNDS
    if m.size < 2:
        return hi, 0
    P = prefix_sqnorms(S)
    cos = pair_similarity(S, m, P, S, m, P, "cosine")
    q = np.minimum.outer(m, m)
    use = np.triu(q >= SHRINKAGE_MIN_COMPONENTS, k=1)
    n_pairs = int(use.sum())
    if n_pairs < 50:
        return hi, n_pairs
    tau2 = float(np.mean(cos[use] ** 2) - np.mean(1.0 / q[use]))
    lam = hi if tau2 <= 1.0 / hi else min(hi, max(lo, 1.0 / tau2))
    return float(lam), n_pairs


def _sort_topk(sim: np.ndarray, idx: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows sorted by (similarity desc, index asc), cut or padded to ``k`` columns."""
    n, c = sim.shape
    if c < k:
        sim = np.concatenate([sim, np.full((n, k - c), -np.inf)], axis=1)
        idx = np.concatenate([idx, np.full((n, k - c), NO_INDEX, dtype=np.int64)], axis=1)
    order = np.lexsort((idx, -sim), axis=-1)[:, :k]
    return np.take_along_axis(sim, order, axis=1), np.take_along_axis(idx, order, axis=1)


def topk_select(sim: np.ndarray, index: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the ``k`` best columns in the total order (similarity desc, index asc).

    Parameters
    ----------
    sim : ndarray (n, c)
        Similarities; ``-inf`` entries are never selected.
    index : ndarray (c,)
        Global index of every column, strictly increasing.
    k : int

    Returns
    -------
    (sim, idx) : ndarrays (n, k)
        Sorted best-first; empty slots are ``(-inf, NO_INDEX)``.
    """
    n, c = sim.shape
    index = np.asarray(index, dtype=np.int64)
    if c <= k:
        top_sim, top_idx = _sort_topk(sim, np.broadcast_to(index, (n, c)).copy(), k)
    else:
        # O(c) per row: threshold = k-th largest value; keep every value above it and the
        # lowest-index ties at it (columns are in increasing index order), exactly k per row
        thr = -np.partition(-sim, k - 1, axis=1)[:, k - 1]
        above = sim > thr[:, None]
        need = k - above.sum(axis=1)
        ties = sim == thr[:, None]
        keep = above | (ties & (np.cumsum(ties, axis=1) <= need[:, None]))
        rows, cols = np.nonzero(keep)  # row-major: exactly k per row
        cols = cols.reshape(n, k)
        top_sim, top_idx = _sort_topk(np.take_along_axis(sim, cols, axis=1), index[cols], k)
    top_idx[top_sim == -np.inf] = NO_INDEX  # excluded pairs are empty slots
    return top_sim, top_idx


def merge_topk(parts: list[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Merge per-row top-k lists of the same rows (associative and commutative: a total order)."""
    if len(parts) == 1:
        return parts[0]
    sim = np.concatenate([p[0] for p in parts], axis=1)
    idx = np.concatenate([p[1] for p in parts], axis=1)
    return _sort_topk(sim, idx, k)


def knn_block_topk(
    Sa: np.ndarray,
    ma: np.ndarray,
    Sb: np.ndarray,
    mb: np.ndarray,
    offset_b: int,
    k: int,
    similarity: str = "cosine",
    shrinkage: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Top-k of every row of block ``a`` among the unsuppressed rows of block ``b``.

    ``offset_b`` is the global index of the first row of ``b``. Rows of ``a`` are processed in
    tiles so that the temporaries stay near :data:`TILE_ELEMENTS` elements.
    """
    Sa, ma = clean_block(Sa, ma)
    Sb, mb = clean_block(Sb, mb)
    live = np.flatnonzero(mb > 0)  # suppressed training rows publish nothing
    Sb, mb = Sb[live], mb[live]
    index = live.astype(np.int64) + int(offset_b)
    Pa, Pb = prefix_sqnorms(Sa), prefix_sqnorms(Sb)
    na = Sa.shape[0]
    out_sim = np.full((na, k), -np.inf)
    out_idx = np.full((na, k), NO_INDEX, dtype=np.int64)
    if na == 0 or live.size == 0:
        return out_sim, out_idx
    tile = max(1, TILE_ELEMENTS // live.size)
    for lo in range(0, na, tile):
        hi = min(na, lo + tile)
        sim = pair_similarity(Sa[lo:hi], ma[lo:hi], Pa[lo:hi], Sb, mb, Pb, similarity, shrinkage)
        out_sim[lo:hi], out_idx[lo:hi] = topk_select(sim, index, k)
    return out_sim, out_idx


def vote(top_idx: np.ndarray, codes: np.ndarray, n_classes: int) -> np.ndarray:
    """Majority vote of each row's neighbours (sorted best-first; empty slots ignored).

    A tie between labels goes to the label of the nearest neighbour among the tied labels (the
    first in the (similarity desc, index asc) order). Rows without neighbours get -1.
    """
    n, k = top_idx.shape
    valid = top_idx != NO_INDEX
    lab = np.where(valid, codes[np.where(valid, top_idx, 0)], -1)
    counts = np.zeros((n, n_classes + 1), dtype=np.int64)  # last column collects empty slots
    np.add.at(counts, (np.repeat(np.arange(n), k), lab.ravel()), 1)
    counts = counts[:, :n_classes]
    best = counts.max(axis=1, initial=0)
    tied = (counts == best[:, None]) & (best[:, None] > 0)
    # first neighbour (in order) whose label is among the tied ones
    hit = valid & tied[np.arange(n)[:, None], np.where(valid, lab, 0)]
    first = np.argmax(hit, axis=1)
    out = lab[np.arange(n), first]
    out[~hit.any(axis=1)] = -1
    return out.astype(np.int64)


def draw_by_counts(u: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Category ``c`` with probability ``counts[c] / counts.sum()`` for every uniform ``u`` in [0, 1)."""
    counts = np.asarray(counts, dtype=np.int64)
    cum = np.cumsum(counts)
    if cum.size == 0 or cum[-1] <= 0:
        raise ValueError("no category has a positive count")
    out = np.searchsorted(cum, np.asarray(u) * cum[-1], side="right")
    return np.minimum(out, counts.size - 1).astype(np.int64)


# ------------------------------------------------------------------------------ k-means
def assign_block(
    S: np.ndarray,
    m: np.ndarray,
    C: np.ndarray,
    mc: np.ndarray,
    similarity: str = "cosine",
    shrinkage: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Nearest centroid of every row by estimated similarity (ties: the smaller cluster index).

    Returns ``(labels, best)``: labels are -1 and best NaN for suppressed rows. A centroid with
    ``m_c = 0`` (empty cluster) is never chosen.
    """
    S, m = clean_block(S, m)
    C, mc = clean_block(C, mc)
    n = S.shape[0]
    labels = np.full(n, -1, dtype=np.int64)
    best = np.full(n, np.nan)
    live = np.flatnonzero(m > 0)
    if live.size == 0 or not (mc > 0).any():
        return labels, best
    Pc = prefix_sqnorms(C)
    tile = max(1, TILE_ELEMENTS // max(1, C.shape[0]))
    for lo in range(0, live.size, tile):
        rows = live[lo : lo + tile]
        Sr = S[rows]
        sim = pair_similarity(Sr, m[rows], prefix_sqnorms(Sr), C, mc, Pc, similarity, shrinkage)
        lab = np.argmax(sim, axis=1)  # first maximum: smaller cluster index on ties
        labels[rows] = lab
        best[rows] = sim[np.arange(rows.size), lab]
    return labels, best


def cluster_partials(S: np.ndarray, m: np.ndarray, labels: np.ndarray, n_clusters: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster sums of the (zero-padded) sketches and histogram of member lengths.

    Returns ``(sums, hist)``: ``sums[c, j] = sum of s_i^j over members i of c`` (the padding makes
    it the sum over members with ``m_i > j``) and ``hist[c, q] = #members of c with m_i = q``.
    Rows with label < 0 are ignored. Both partials add over blocks (TREE).
    """
    S, m = clean_block(S, m)
    labels = np.asarray(labels, dtype=np.int64)
    live = np.flatnonzero(labels >= 0)
    onehot = sp.csr_array((np.ones(live.size), (labels[live], live)), shape=(n_clusters, S.shape[0]))
    sums = np.asarray(onehot @ S, dtype=np.float64).reshape(n_clusters, S.shape[1])
    hist = np.zeros((n_clusters, S.shape[1] + 1), dtype=np.int64)
    np.add.at(hist, (labels[live], m[live]), 1)
    return sums, hist


def centroids_from_partials(sums: np.ndarray, hist: np.ndarray, mode: str = "available") -> tuple[np.ndarray, np.ndarray]:
    """Centroid sketches ``(C (K, m_max), m_c (K,))`` from :func:`cluster_partials` totals.

    ``"available"``: ``c^j = mean{s_i^j : m_i >= j}`` for ``j = 1..max m_i`` (component j is the
    exact sketch of the centroid of the members with at least j components). ``"common"``:
    ``m_c = min m_i`` and ``c^j = mean_i s_i^j`` (an unbiased sketch of the centroid). Empty
    clusters get ``m_c = 0``. Components beyond ``m_c`` are 0.
    """
    K, width = sums.shape
    # count[c, j] = #members with m_i > j (0-based j) = reverse cumulative sum of the histogram
    count = np.cumsum(hist[:, ::-1], axis=1)[:, ::-1][:, 1:]
    size = hist.sum(axis=1)
    present = hist > 0
    if mode == "available":
        mc = np.where(size > 0, width - np.argmax(present[:, ::-1], axis=1), 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            C = np.where(count > 0, sums / np.maximum(count, 1), 0.0)
    elif mode == "common":
        has_m = present[:, 1:]  # m = 0 never occurs among members
        mc = np.where(size > 0, 1 + np.argmax(has_m, axis=1), 0)
        C = sums / np.maximum(size, 1)[:, None]
        C[np.arange(width)[None, :] >= mc[:, None]] = 0.0
    else:
        raise ValueError(f"unknown centroid_mode {mode!r}; use 'available' or 'common'")
    return np.ascontiguousarray(C), mc.astype(np.int64)


def pick_reseeds(empty: np.ndarray, labels: np.ndarray, best: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Records that re-seed the ``empty`` clusters (in increasing cluster order).

    Each pick is the record farthest from its own centroid — smallest estimated similarity
    ``best``, ties by smaller index — among records whose cluster still has more than one member
    (moving a singleton would just empty another cluster). Returns one record index per empty
    cluster, or fewer when no record qualifies.
    """
    sizes = np.array(sizes, dtype=np.int64)
    live = np.flatnonzero(labels >= 0)
    order = live[np.lexsort((live, best[live]))]
    picks: list[int] = []
    pos = 0
    for _ in range(len(empty)):
        while pos < order.size and sizes[labels[order[pos]]] <= 1:
            pos += 1
        if pos == order.size:
            break
        i = int(order[pos])
        sizes[labels[i]] -= 1
        picks.append(i)
        pos += 1
    return np.asarray(picks, dtype=np.int64)
