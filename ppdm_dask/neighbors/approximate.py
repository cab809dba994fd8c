"""Approximate k-nearest neighbours for data too large for the exact all-pairs pass.

Candidate generation (partition-then-merge over a keyed sort). In each of ``n_rounds`` rounds
every record gets a sort key made of three independent *weighted MinHash* winners: for race q
the winner is ``argmin_t E[q, t] / |x_t|`` over the record's items, with ``E ~ Exponential(1)``
per item drawn from the key (for binary data this is plain MinHash; two records have the same
winner with probability equal to their probability-Jaccard similarity, and the winner does not
change when a record is rescaled, as cosine needs). Records are sorted by
``(winner labels, global index)`` and the sorted order is cut into windows of ``n_candidates``
consecutive records at a random offset; every record is compared exactly with the other records
of its window. Similar records share winners, hence sort keys, hence windows.

Re-ranking is exact: the windows run the same kernel as :func:`~ppdm_dask.neighbors.knn`, so
the returned distances, dot products and ``sum x_t^2 y_t^2`` are exactly those of the exact
graph; only some true neighbours may be missing (see :func:`recall`). The lists of all rounds
are merged per record (k smallest ``(distance, index)``, repeated candidates removed).

Cost per round: O(nnz) for the keys, a sort of N keys on the client (8 bytes per record),
one shuffle of the rows, and about ``N * n_candidates / 2`` exact pair evaluations, instead of
``N^2 / 2``. The result depends on the key but not on the partitioning or the workers.

Randomness: stream ``key.generator(Tag.SAMPLE, KNN_UNIT, round)``; the key itself never enters
the task graph or the output.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import dask
import numpy as np
import scipy.sparse as sp
from numba import njit

from ..errors import InvalidParameter
from ..random import KeyLike, Tag, as_key
from . import _kernels as K
from .exact import KNNGraph, _assemble, _check, _delayed_blocks, default_block_rows

__all__ = ["approximate_knn", "recall", "KNN_UNIT"]

#: Purpose-specific first unit of the ``Tag.SAMPLE`` streams used here ("knn" in ASCII).
KNN_UNIT = 0x6B6E6E
_RACES = 3
_LABEL_BITS = 21
_INVALID = np.uint64(np.iinfo(np.uint64).max)


# ----------------------------------------------------------------------------- kernels
@njit(cache=True, nogil=True)
def _minhash_keys(indptr, indices, values, expo, labels):  # pragma: no cover - compiled
    """Packed sort key per row: the labels of the 3 weighted-MinHash winners (21 bits each)."""
    n = indptr.size - 1
    out = np.empty(n, np.uint64)
    for i in range(n):
        if indptr[i] == indptr[i + 1]:
            out[i] = np.uint64(0xFFFFFFFFFFFFFFFF)
            continue
        key = np.uint64(0)
        for q in range(expo.shape[0]):
            best = np.inf
            win = -1
            for p in range(indptr[i], indptr[i + 1]):
                x = values[p] * values[p]
                if x == 0.0:
                    continue
                v = expo[q, indices[p]] / x
                if v < best:
                    best = v
                    win = indices[p]
            lab = np.uint64(labels[q, win]) if win >= 0 else np.uint64(0)
            key = (key << np.uint64(_LABEL_BITS)) | lab
        out[i] = key
    return out


def _values(block: sp.csr_array, weights: sp.csr_array | None) -> np.ndarray:
    if weights is None:
        return np.ones(block.indices.size, np.float64)
    return np.asarray(weights.data, dtype=np.float64)


def _block_keys(block, weights, round_params: list) -> np.ndarray:
    """Sort keys of one block for every round: ``(n_rounds, n)`` uint64; also ``|x|^2``."""
    vals = _values(block, weights)
    indptr = np.asarray(block.indptr, np.int64)
    keys = np.stack([_minhash_keys(indptr, block.indices, vals, e, lab) for e, lab in round_params]) if round_params else np.zeros((0, block.shape[0]), np.uint64)
    sq = K._row_sq(indptr, vals)
    keys[:, sq == 0] = _INVALID  # |x| = 0 (explicit zeros): no neighbours
    return keys, sq


def _split(block, weights, start: int, dest: np.ndarray, window: np.ndarray, n_groups: int) -> dict:
    """Rows of one block routed to their window groups: ``{group: (csr, gidx, window)}``."""
    vals = _values(block, weights)
    m = sp.csr_array((vals, block.indices, block.indptr), shape=block.shape)
    out = {}
    for g in np.unique(dest[dest >= 0]):
        rows = np.flatnonzero(dest == g)
        out[int(g)] = (sp.csr_array(m[rows]), rows.astype(np.int64) + start, window[rows])
    return out


def _window_knn(pieces: list, k: int, cosine: bool, exclude_self: bool):
    """Exact top-k inside every window of one group: ``(gidx, dist, index, dot, cross)``."""
    pieces = [p for p in pieces if p[1].size]
    if not pieces:
        e = K.empty_topk(0, k)
        return (np.zeros(0, np.int64), *e)
    m = sp.csr_array(sp.vstack([p[0] for p in pieces], format="csr"))
    gidx = np.concatenate([p[1] for p in pieces])
    win = np.concatenate([p[2] for p in pieces])
    order = np.lexsort((gidx, win))  # by window, then global index (the kernel's tie order)
    m, gidx, win = sp.csr_array(m[order]), gidx[order], win[order]
    m.sort_indices()
    bounds = np.flatnonzero(np.r_[True, win[1:] != win[:-1], True])
    res = K.empty_topk(gidx.size, k)
    for a, b in zip(bounds[:-1], bounds[1:]):
        blk = sp.csr_array(m[a:b])
        ones = sp.csr_array((np.ones(blk.indices.size, np.int32), blk.indices, blk.indptr), shape=blk.shape)
        p = K.prepare_block(ones, blk, gidx[a:b], cosine)
        rows, _ = K.pair_topk(p, p, k, cosine=cosine, diag=True, exclude_self=exclude_self)
        for f in range(4):
            res[f][a:b] = rows[f]
    return (gidx, *res)


def _select(res, lo: int, hi: int):
    g = res[0]
    a, b = np.searchsorted(g, lo), np.searchsorted(g, hi)
    if np.all(np.diff(g) >= 0):
        return tuple(x[a:b] for x in res)
    sel = (g >= lo) & (g < hi)
    return tuple(x[sel] for x in res)


def _merge_block(lo: int, hi: int, k: int, *pieces):
    return K.merge_topk_unique(np.arange(lo, hi, dtype=np.int64), list(pieces), k)


def _sort_result(res):
    order = np.argsort(res[0], kind="stable")
    return tuple(x[order] for x in res)


# ----------------------------------------------------------------------------- public
def approximate_knn(
    tx: Any,
    k: int,
    *,
    metric: str = "cosine",
    n_candidates: int = 512,
    n_rounds: int = 8,
    key: KeyLike = None,
    exclude_self: bool = True,
    group_rows: int | None = None,
    client: Any = None,
    progress: bool = True,
) -> KNNGraph:
    """Approximate kNN graph with exact distances: keyed MinHash windows + exact re-ranking.

    Parameters
    ----------
    tx : TransactionArray
        Records (values from ``tx.weights`` when present, else 1.0).
    k : int
        Neighbours per record, ``1 <= k < N``.
    metric : {"cosine", "euclidean"}
        As in :func:`~ppdm_dask.neighbors.knn`. The candidates favour cosine similarity.
    n_candidates : int, default 512
        Window size: each record is compared exactly with ``n_candidates - 1`` others per round.
    n_rounds : int, default 8
        Independent rounds (more rounds: higher recall, linear cost).
    key : Key, int or bytes, optional
        Randomness (default: a fresh secret key). Same key, same result.
    exclude_self : bool
        Neighbours are other records.
    group_rows : int, optional
        Rows handled by one window task (a multiple of ``n_candidates``; default ~16K rows).
    client, progress
        As in :func:`~ppdm_dask.neighbors.knn`.

    Returns
    -------
    KNNGraph
        ``scope="approximate"``. Every returned neighbour carries its exact distance, dot
        product and cross term; rows may miss some true neighbours and, rarely, have fewer than
        k (padding ``-1``/``inf``).
    """
    from ..progress import compute

    k = _check(tx, k, metric, exclude_self)
    for name, value, low in (("n_candidates", n_candidates, 2), ("n_rounds", n_rounds, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise InvalidParameter(f"{name} must be an integer >= {low}, got {value!r}")
    n_candidates, n_rounds = int(n_candidates), int(n_rounds)
    cosine = metric == "cosine"
    n, n_items = tx.n_transactions, tx.n_items
    rng_key = as_key(key)
    rounds = []
    for r in range(n_rounds):
        g = rng_key.generator(Tag.SAMPLE, KNN_UNIT, r)
        expo = g.exponential(size=(_RACES, n_items))
        labels = g.integers(0, 2**_LABEL_BITS, size=(_RACES, n_items), dtype=np.int64)
        shift = int(g.integers(0, n_candidates))
        rounds.append((expo, labels, shift))
    params = dask.delayed([(e, lab) for e, lab, _ in rounds], pure=True, traverse=False)

    if group_rows is None:
        group_rows = default_block_rows(n)
    # result blocks of ~group_rows rows: parallel merges of bounded size
    tx = tx.repartition(npartitions=max(1, math.ceil(n / int(group_rows))))
    blocks, weights = _delayed_blocks(tx)
    rows_per = np.asarray(tx.partition_rows, np.int64)
    starts = np.r_[0, np.cumsum(rows_per)]
    nb = len(blocks)
    dl = functools.partial(dask.delayed, pure=True)
    key_tasks = [dl(_block_keys, nout=2)(blocks[b], weights[b], params) for b in range(nb)]
    out = compute([t[0] for t in key_tasks], [t[1] for t in key_tasks], client=client, progress=progress)
    keys = np.concatenate([np.asarray(x).reshape(n_rounds, -1) for x in out[0]], axis=1)
    sqs = list(out[1])

    per_group = max(1, int(group_rows) // n_candidates)  # windows per group task
    results_by_block: list[list] = [[] for _ in range(nb)]
    for r, (_, _, shift) in enumerate(rounds):
        kr = keys[r]
        valid = np.flatnonzero(kr != _INVALID)
        order = valid[np.argsort(kr[valid], kind="stable")]  # ties: global index
        rank = np.empty(n, np.int64)
        rank[order] = np.arange(order.size)
        window = np.full(n, -1, np.int64)
        window[order] = (rank[order] + shift) // n_candidates
        dest = np.where(window >= 0, window // per_group, -1)
        n_groups = int(dest.max()) + 1 if valid.size else 0
        splits = []
        for b in range(nb):
            d_b, w_b = dest[starts[b]:starts[b + 1]], window[starts[b]:starts[b + 1]]
            splits.append((dl(_split)(blocks[b], weights[b], int(starts[b]), d_b, w_b, n_groups), set(np.unique(d_b[d_b >= 0]).tolist())))
        for g in range(n_groups):
            pieces = [s[g] for s, present in splits if g in present]
            res = dl(_sort_result)(dl(_window_knn)(pieces, k, cosine, exclude_self))
            members = np.flatnonzero(dest == g)
            for b in np.unique(np.searchsorted(starts, members, side="right") - 1):
                results_by_block[b].append(dl(_select)(res, int(starts[b]), int(starts[b + 1])))
    merged = [dl(_merge_block)(int(starts[b]), int(starts[b + 1]), k, *results_by_block[b]) for b in range(nb)]
    (res,) = compute(merged, client=client, progress=progress)
    return _assemble(list(res), sqs, k, metric, "approximate")


def recall(approx: KNNGraph, exact: KNNGraph, *, rtol: float = 1e-12) -> float:
    """Fraction of the exact neighbours that ``approx`` found, ties counted by distance.

    For every row with ``m`` exact neighbours (``m <= k``), the approximate neighbours at a
    distance ``<=`` the exact m-th distance are hits (a different record at the same distance as
    the exact k-th one is as good), capped at ``m``. Returns ``sum hits / sum m`` (1.0 if the
    exact graph has no edges).
    """
    if approx.indices.shape != exact.indices.shape:
        raise InvalidParameter("the two graphs must have the same number of rows and the same k")
    valid_e = exact.indices >= 0
    m = valid_e.sum(axis=1)
    if m.sum() == 0:
        return 1.0
    rows = np.arange(m.size)
    kth = np.where(m > 0, exact.distances[rows, np.maximum(m - 1, 0)], -np.inf)
    limit = kth + rtol * np.maximum(1.0, np.abs(np.where(np.isfinite(kth), kth, 0.0)))
    hits = ((approx.indices >= 0) & (approx.distances <= limit[:, None])).sum(axis=1)
    return float(np.minimum(hits, m).sum() / m.sum())
