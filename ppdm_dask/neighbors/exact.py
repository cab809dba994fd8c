"""Exact k-nearest-neighbour graph of a TransactionArray on Dask
(docs/sketches.md#the-k-nearest-neighbour-graph).

``scope="global"`` is the ALLPAIRS pattern: the rows are cut into blocks of ``block_rows``; one
task per block finds the top-k lists inside the block (the *diagonal*), then one task per
unordered pair of blocks finds both directions at once, and a TREE merge per block keeps the k
smallest ``(distance, global index)``. The diagonal lists give every row an upper bound of its
final k-th distance (a k-th distance among fewer rows can only be larger), which the pair tasks
use as a cap; candidates beyond it cannot enter the result, so the pair tasks skip them and the
answer stays exact. The order is total, and every pair of rows is examined by exactly one task
with bitwise identical arithmetic, so the graph does not depend on the partitioning, the block
size or the number of workers.

``scope="partition"`` is the paper's linear-time variant
(docs/sketches.md#clarification-partition-local-neighbours): neighbours are searched only
inside each partition of ``tx`` (a MAP). Definition 3 then holds with respect to that graph only.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import dask
import numpy as np

from ..errors import InvalidParameter
from ..graph import tree_reduce
from . import _kernels as K

__all__ = ["KNNGraph", "knn", "METRICS", "SCOPES", "check_neighbors", "delayed_blocks"]

METRICS = ("cosine", "euclidean")
SCOPES = ("global", "partition")
#: Default block size bounds: blocks carry >= ~50 ms of work (task overhead ~2 ms) and few MB.
MIN_BLOCK_ROWS = 2048
MAX_BLOCK_ROWS = 16384
#: Target number of row blocks of the ALLPAIRS pass (~n(n+1)/2 tasks: balance on a few workers).
TARGET_BLOCKS = 16


@dataclass(frozen=True)
class KNNGraph:
    """A k-nearest-neighbour graph with the quantities k-variance anonymity needs.

    Attributes
    ----------
    indices : ndarray (N, k) of int64
        Global row indices of the neighbours, nearest first, ties by smaller index; -1 pads
        rows with fewer than k neighbours (rows with ``|x| = 0`` have none).
    distances : ndarray (N, k) of float64
        Distances (``inf`` on padding).
    dots : ndarray (N, k) of float64
        ``x_i . x_j`` (NaN on padding).
    cross : ndarray (N, k) of float64
        ``sum_t x_t^2 y_t^2`` (NaN on padding), for ``V = |x|^2|y|^2 + (x.y)^2 - 2 cross``.
    sqnorms : ndarray (N,) of float64
        ``|x_i|^2``.
    k : int
    metric : str
    scope : str
        ``"global"``, ``"partition"`` or ``"approximate"``.
    plan : str
        How the search used memory (the approximate search: group size, whether the input was
        kept between its stages, and why); empty for the exact search.
    """

    indices: np.ndarray
    distances: np.ndarray
    dots: np.ndarray
    cross: np.ndarray
    sqnorms: np.ndarray
    k: int
    metric: str
    scope: str
    plan: str = ""

    @property
    def n_rows(self) -> int:
        """Number of records N."""
        return int(self.indices.shape[0])

    def kth_distance(self) -> np.ndarray:
        """Distance to the k-th neighbour of every row (``inf`` if it has fewer than k)."""
        return self.distances[:, self.k - 1].copy()

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """Directed edges ``(i, j)``, ``j`` among the neighbours of ``i`` (row-major order)."""
        rows, ranks = np.nonzero(self.indices >= 0)
        return rows.astype(np.int64), self.indices[rows, ranks]

    def to_pandas(self):
        """Edge list: columns ``row, rank, neighbor, distance, dot, cross`` (rank 0 = nearest)."""
        import pandas as pd

        rows, ranks = np.nonzero(self.indices >= 0)
        return pd.DataFrame(
            {
                "row": rows.astype(np.int64),
                "rank": ranks.astype(np.int64),
                "neighbor": self.indices[rows, ranks],
                "distance": self.distances[rows, ranks],
                "dot": self.dots[rows, ranks],
                "cross": self.cross[rows, ranks],
            }
        )


# ----------------------------------------------------------------------------- validation
def check_neighbors(tx: Any, k: Any, metric: str, exclude_self: bool) -> int:
    """Check ``metric`` and ``k`` against the records of ``tx``; returns ``k`` as an int."""
    if metric not in METRICS:
        raise InvalidParameter(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise InvalidParameter(f"k must be an integer, got {type(k).__name__}")
    k = int(k)
    n = tx.n_transactions
    if k < 1:
        raise InvalidParameter(f"k must be >= 1, got k={k}")
    if exclude_self and k >= n:
        raise InvalidParameter(f"k must be smaller than the number of records (k={k}, N={n})")
    if not exclude_self and k > n:
        raise InvalidParameter(f"k must be at most the number of records (k={k}, N={n})")
    return k


#: Bound on ``block_rows * k``: a pair task returns 2 x 4 arrays of that many entries.
MAX_BLOCK_ENTRIES = 2**21


def default_block_rows(n: int, k: int = 10) -> int:
    """Rows per block of the ALLPAIRS pass for ``n`` records and lists of length ``k``."""
    rows = min(MAX_BLOCK_ROWS, max(MIN_BLOCK_ROWS, math.ceil(n / TARGET_BLOCKS)))
    return int(max(64, min(rows, MAX_BLOCK_ENTRIES // max(k, 1))))


# ----------------------------------------------------------------------------- tasks
def _prepare(block, weights, start: int, cosine: bool) -> K.Prepared:
    n = block.shape[0]
    return K.prepare_block(block, weights, np.arange(start, start + n, dtype=np.int64), cosine)


def _diag(p: K.Prepared, k: int, cosine: bool, exclude_self: bool):
    rows, _ = K.pair_topk(p, p, k, cosine=cosine, diag=True, exclude_self=exclude_self)
    return rows


def _kth(rows) -> np.ndarray:
    return np.ascontiguousarray(rows[0][:, -1])


def _offdiag(a: K.Prepared, b: K.Prepared, cap_a: np.ndarray, cap_b: np.ndarray, k: int, cosine: bool):
    return K.pair_topk(a, b, k, cosine=cosine, cap_a=cap_a, cap_b=cap_b)


def _merge(parts: list, k: int):
    return K.merge_topk(list(parts), k)


def _sq(p: K.Prepared) -> np.ndarray:
    return p.sq


def _assemble(results: list, sqs: list, k: int, metric: str, scope: str) -> KNNGraph:
    fields = [np.concatenate([r[f] for r in results]) if results else np.zeros((0, k)) for f in range(4)]
    return KNNGraph(
        indices=fields[1].astype(np.int64),
        distances=fields[0],
        dots=fields[2],
        cross=fields[3],
        sqnorms=np.concatenate(sqs) if sqs else np.zeros(0),
        k=k,
        metric=metric,
        scope=scope,
    )


def delayed_blocks(tx: Any) -> tuple[list, list]:
    """``(blocks, weights)``: one delayed object per partition of ``tx`` (weights None when it has none)."""
    blocks = list(tx.blocks.to_delayed().ravel())
    weights = list(tx.weights.to_delayed().ravel()) if tx.weights is not None else [None] * len(blocks)
    return blocks, weights


def _global_graph(tx: Any, k: int, cosine: bool, exclude_self: bool, block_rows: int, split_every: int):
    n = tx.n_transactions
    nb = max(1, math.ceil(n / block_rows))
    txr = tx.repartition(npartitions=nb)
    blocks, weights = delayed_blocks(txr)
    starts = np.r_[0, np.cumsum(txr.partition_rows)]
    dl = functools.partial(dask.delayed, pure=True)
    prep = [dl(_prepare)(blocks[b], weights[b], int(starts[b]), cosine) for b in range(nb)]
    diag = [dl(_diag)(prep[b], k, cosine, exclude_self) for b in range(nb)]
    caps = [dl(_kth)(diag[b]) for b in range(nb)]
    parts: list[list] = [[diag[b]] for b in range(nb)]
    for b in range(nb):
        for c in range(b + 1, nb):
            out = dl(_offdiag, nout=2)(prep[b], prep[c], caps[b], caps[c], k, cosine)
            parts[b].append(out[0])
            parts[c].append(out[1])
    merged = [
        parts[b][0] if len(parts[b]) == 1 else tree_reduce(parts[b], functools.partial(_merge, k=k), split_every=split_every)
        for b in range(nb)
    ]
    sqs = [dl(_sq)(p) for p in prep]
    return merged, sqs


def _partition_task(block, weights, start: int, k: int, cosine: bool, exclude_self: bool):
    p = _prepare(block, weights, start, cosine)
    return _diag(p, k, cosine, exclude_self), p.sq


def _partition_graph(tx: Any, k: int, cosine: bool, exclude_self: bool):
    blocks, weights = delayed_blocks(tx)
    starts = np.r_[0, np.cumsum(tx.partition_rows)]
    outs = [
        dask.delayed(_partition_task, pure=True, nout=2)(blocks[b], weights[b], int(starts[b]), k, cosine, exclude_self)
        for b in range(len(blocks))
    ]
    return [o[0] for o in outs], [o[1] for o in outs]


# ----------------------------------------------------------------------------- public
def knn(
    tx: Any,
    k: int,
    *,
    metric: str = "cosine",
    scope: str = "global",
    exclude_self: bool = True,
    block_rows: int | None = None,
    split_every: int = 8,
    client: Any = None,
    progress: bool = False,
) -> KNNGraph:
    """Exact k nearest neighbours of every record (step 1 of docs/sketches.md#k-variance-anonymity).

    Parameters
    ----------
    tx : TransactionArray
        Records; the values are ``tx.weights`` when present, else 1.0 on every item.
    k : int
        Neighbours per record, ``1 <= k < N`` (``k <= N`` when ``exclude_self=False``).
    metric : {"cosine", "euclidean"}
        ``1 - x.y / (|x||y|)`` or ``sqrt(max(|x|^2 + |y|^2 - 2 x.y, 0))``; dot products and
        squared norms are exact sums over the shared items (integers for binary data).
    scope : {"global", "partition"}
        ``"global"``: exact over all records (ALLPAIRS + TREE merge). ``"partition"``: only
        within each partition of ``tx`` (the paper's linear-time variant,
        docs/sketches.md#clarification-partition-local-neighbours; k-variance
        anonymity then holds w.r.t. this graph only); rows of partitions with ``<= k`` valid
        rows get fewer than k neighbours.
    exclude_self : bool, default True
        Neighbours are other records. With False a record is its own nearest neighbour.
    block_rows : int, optional
        Rows per block of the global pass (default: ``N/16`` clipped to [2048, 16384], and at
        most ``2**21 / k``); ignored by ``scope="partition"``. The result does not depend on it.
    split_every : int
        Fan-in of the merge trees.
    client : distributed.Client, optional
        Run there (default: the active client or the configured scheduler).
    progress : bool
        Progress bar on stderr.

    Returns
    -------
    KNNGraph
        Neighbours ordered by ``(distance, global index)``. Records with ``|x| = 0`` have no
        neighbours (``-1``/``inf``) and are nobody's neighbour (step 0 of
        docs/sketches.md#k-variance-anonymity); lists are
        padded with ``-1``/``inf`` when fewer than k valid other records exist.

    Raises
    ------
    InvalidParameter
        Bad ``k``, ``metric``, ``scope`` or ``block_rows``.

    Notes
    -----
    Cost of the global scope: O(sum_t supp(t)^2 / 2) to accumulate the dot products through
    the item postings plus O(N^2 / 2) for a vectorised scan of them; memory O(block_rows * k)
    per task, never an N x N matrix. Measured on Quest C20.I6.D200K, k = 10, cosine: 41 s on
    one thread, 20 s on a 2-worker LocalCluster (benchmarks/neighbors_timing.py).
    """
    from ..progress import compute

    k = check_neighbors(tx, k, metric, exclude_self)
    if scope not in SCOPES:
        raise InvalidParameter(f"unknown scope {scope!r}; choose one of {', '.join(SCOPES)}")
    if block_rows is None:
        block_rows = default_block_rows(tx.n_transactions, k)
    elif isinstance(block_rows, bool) or not isinstance(block_rows, (int, np.integer)) or block_rows < 1:
        raise InvalidParameter(f"block_rows must be a positive integer, got {block_rows!r}")
    cosine = metric == "cosine"
    if scope == "global":
        results, sqs = _global_graph(tx, k, cosine, exclude_self, int(block_rows), split_every)
    else:
        results, sqs = _partition_graph(tx, k, cosine, exclude_self)
    out = compute(results, sqs, client=client, progress=progress)
    return _assemble(list(out[0]), list(out[1]), k, metric, scope)
