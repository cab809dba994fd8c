"""Mining on sketches (docs/sketches.md#mining-on-sketches): k-nearest-neighbour classification and
k-means.

Both miners see only the published sketches: per record ``i`` the first ``m_i`` components of
its sketch (``m_i = 0``: suppressed, nothing published). Every similarity between two sketches
uses the same ``m = min(m_i, m_j)`` components for all its terms (see
:mod:`ppdm_dask.sketch._mining_kernels`), the estimated cosine being
``c_m = dot_m / sqrt(sqnorm_i,m * sqnorm_j,m)``. The default similarity ``"shrunk"`` ranks by
``c_m * m / (m + lam)`` (docs/sketches.md#the-variance-aware-similarity): an estimate from few
components is pulled toward 0 by its variance, so records with one or two components no longer
look identical to everything.

Inputs are "SketchArray-like": any object with ``values`` (dask or numpy float array
``(N, m_max)``, zero padded beyond each ``m_i``), ``m`` (``(N,)`` ints, same row chunks) and
optionally ``columns`` (name -> row-aligned array, e.g. ``"label"``) and ``generator`` (the shared
±1 generator; train and test sketches with different generators are rejected); a plain
``(values, m)`` tuple works too.

Dask decomposition (docs/sketches.md#distributed-execution):

* kNN: ALLPAIRS over (test block, train block) pairs, each giving per-row top-k lists in the
  total order (similarity desc, train index asc), merged by a TREE reduction; then a MAP vote.
  Exact and independent of the partitioning (a total order).
* k-means: per iteration one MAP assignment pass plus a TREE sum of per-cluster partials (sum of
  sketches per component, histogram of member lengths); centroids, re-seeding and convergence
  are decided on the client from those small totals and the ``N`` labels.

Randomness: streams ``(tag, b)`` of the estimator's key, with a tag per use (``Tag.KNN_PRIOR``,
``Tag.KMEANS_INIT``, ``Tag.KMEANS_SUPPRESSED``) and ``b`` a fixed block of :data:`ppdm_dask.random.BLOCK_ROWS` global rows, so random labels of
suppressed records do not depend on the partitioning.

Reproducibility: for integer-valued data (counts, 0/1 baskets) with ±1 sketches, all the
quantities compared are exact, so results are bit-identical for every partitioning and
scheduler. For real-valued sketches, dot products and float sums may differ in the last bits
between partitionings, which can only swap candidates that tie to within rounding.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp

from ..errors import InvalidParameter
from ..graph import tree_reduce
from ..progress import compute, persist
from ..random import BLOCK_ROWS, Key, KeyLike, Tag, as_key
from . import _mining_kernels as K
from .primitives import check_shrinkage

__all__ = [
    "SketchKNNClassifier",
    "SketchKMeans",
    "average_cosine_similarity",
    "classification_accuracy",
]


# ------------------------------------------------------------------------------ inputs
class _Blocks:
    """Row-blocked sketches: ``values`` (N, w) with one column chunk, ``m`` (N,) int64."""

    def __init__(self, values: da.Array, m: da.Array, columns: dict[str, Any], generator: Any = None):
        self.values = values
        self.m = m
        self.columns = columns
        self.generator = generator  # the shared ±1 generator when known (compared with ==)

    @property
    def n(self) -> int:
        return int(self.values.shape[0])

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.values.chunks[0])]).astype(np.int64)

    def delayed_blocks(self) -> list[tuple[Any, Any, int]]:
        """``(S_b, m_b, first_global_row)`` per row block."""
        vs = self.values.to_delayed().ravel()
        ms = self.m.to_delayed().ravel()
        return list(zip(vs, ms, self.offsets[:-1].tolist()))

    def persisted(self, **ckw: Any) -> _Blocks:
        values, m = persist(self.values, self.m, **ckw)
        return _Blocks(values, m, self.columns, self.generator)


def _as_dask(x: Any, row_chunks: Any) -> da.Array:
    if isinstance(x, da.Array):
        return x
    x = np.asarray(x)
    return da.from_array(x, chunks=(row_chunks,) + (-1,) * (x.ndim - 1))


def _as_blocks(sketches: Any, block_rows: int | None) -> _Blocks:
    """Normalise a SketchArray-like object or a ``(values, m)`` tuple."""
    if isinstance(sketches, tuple) and len(sketches) == 2:
        values, m, columns, generator = sketches[0], sketches[1], {}, None
    elif hasattr(sketches, "values") and hasattr(sketches, "m"):
        values, m = sketches.values, sketches.m
        columns = dict(getattr(sketches, "columns", None) or {})
        generator = getattr(sketches, "generator", None)
        if generator is None:
            generator = (getattr(sketches, "metadata", None) or {}).get("generator")
    else:
        raise InvalidParameter(
            f"sketches must be a SketchArray (with .values and .m) or a (values, m) tuple, got {type(sketches).__name__}"
        )
    n = int(np.shape(values)[0])
    values = _as_dask(values, block_rows or max(n, 1))
    if values.ndim != 2:
        raise InvalidParameter(f"sketch values must be 2-D (records x components), got {values.ndim}-D")
    if values.dtype != np.float64:
        values = values.astype(np.float64)
    m = _as_dask(m, values.chunks[0]).astype(np.int64)
    if m.shape != (n,):
        raise InvalidParameter(f"m has shape {m.shape}, expected ({n},) (one length per sketch)")
    if any(np.isnan(c) for c in values.chunks[0]):
        raise InvalidParameter("sketch values have unknown row chunk sizes; call compute_chunk_sizes()")
    if block_rows is not None:
        values = values.rechunk({0: int(block_rows), 1: -1})
    elif len(values.chunks[1]) > 1:
        values = values.rechunk({1: -1})
    if m.chunks[0] != values.chunks[0]:
        m = m.rechunk({0: values.chunks[0]})
    return _Blocks(values, m, columns, generator)


def _check_shared_generator(ga: Any, gb: Any) -> None:
    """Sketches are only comparable under the same ±1 generator
    (docs/sketches.md#clarification-one-generator-shared-by-all-records)."""
    if ga is not None and gb is not None and not ga == gb:
        raise InvalidParameter(
            "the two sketch sets were made with different generators; dot products between "
            "them are meaningless (sketch both with the same key / generator)"
        )


def _resolve_labels(blocks: _Blocks, labels: Any, **ckw: Any) -> np.ndarray:
    if isinstance(labels, str):
        if labels not in blocks.columns:
            raise InvalidParameter(
                f"the sketches have no column {labels!r} (columns: {sorted(blocks.columns)}); pass the labels as an array"
            )
        (y,) = compute(blocks.columns[labels], **ckw)
    else:
        y = labels.compute() if isinstance(labels, da.Array) else labels
    y = np.asarray(y).ravel()
    if y.shape[0] != blocks.n:
        raise InvalidParameter(f"{y.shape[0]} labels for {blocks.n} sketches")
    return y


def _check_block_rows(block_rows: Any) -> None:
    if block_rows is not None and (
        isinstance(block_rows, bool) or not isinstance(block_rows, (int, np.integer)) or block_rows < 1
    ):
        raise InvalidParameter(f"block_rows must be a positive integer or None, got {block_rows!r}")


def _check_similarity(similarity: Any, shrinkage: Any = "auto") -> None:
    if similarity not in K.SIMILARITIES:
        raise InvalidParameter(f"similarity must be one of {K.SIMILARITIES}, got {similarity!r}")
    check_shrinkage(shrinkage, auto=True)


def _resolve_shrinkage(similarity: str, shrinkage: Any, blocks: _Blocks, m: np.ndarray, **ckw: Any) -> float:
    """``lam`` of the ``"shrunk"`` similarity (0 for the others): the given number, or for
    ``"auto"`` the empirical-Bayes estimate (:func:`_mining_kernels.estimate_shrinkage`) on
    :data:`_mining_kernels.SHRINKAGE_SAMPLE` unsuppressed records evenly spaced by global row,
    so that it does not depend on the partitioning."""
    if similarity != "shrunk":
        return 0.0
    if shrinkage != "auto":
        return float(shrinkage)
    rows = K.shrinkage_sample(m)
    (S,) = compute(blocks.values[rows], **ckw) if rows.size else (np.zeros((0, blocks.values.shape[1])),)
    lam, _ = K.estimate_shrinkage(np.asarray(S), np.asarray(m)[rows])
    return lam


def row_uniforms(key: Key, tag: Tag, start: int, stop: int) -> np.ndarray:
    """Uniforms in [0, 1) for global rows ``start..stop-1`` of stream ``(tag, b)``.

    Row ``r`` takes value ``r % BLOCK_ROWS`` of block ``b = r // BLOCK_ROWS``, whatever the
    partition that holds it.
    """
    out = np.empty(max(0, stop - start))
    r = start
    while r < stop:
        b = r // BLOCK_ROWS
        lo, hi = r - b * BLOCK_ROWS, min(stop, (b + 1) * BLOCK_ROWS) - b * BLOCK_ROWS
        out[r - start : r - start + hi - lo] = key.generator(tag, b).random(hi)[lo:]
        r += hi - lo
    return out


# ------------------------------------------------------------------------------ kNN
def _finish_knn_block(
    top: tuple[np.ndarray, np.ndarray],
    m: np.ndarray,
    codes: np.ndarray,
    counts: np.ndarray,
    key: Key,
    start: int,
) -> np.ndarray:
    """Vote, then label suppressed rows (and rows without neighbours) at random by the prior."""
    pred = K.vote(top[1], codes, counts.size)
    need = (np.asarray(m) <= 0) | (pred < 0)
    if need.any():
        u = row_uniforms(key, Tag.KNN_PRIOR, start, start + pred.size)
        pred[need] = K.draw_by_counts(u[need], counts)
    return pred


class SketchKNNClassifier:
    """k-nearest-neighbour classifier on sketches (the paper's §4.1 protocol;
    docs/sketches.md#mining-on-sketches).

    Parameters
    ----------
    k : int, default 1
        Number of neighbours.
    similarity : {"shrunk", "cosine", "euclidean"}, default "shrunk"
        ``"shrunk"``: the estimated cosine times ``m / (m + lam)``, ``m = min(m_i, m_j)``
        (docs/sketches.md#the-variance-aware-similarity); ``"cosine"``: the estimated cosine
        ``dot / sqrt(sqnorm_i * sqnorm_j)``; ``"euclidean"``: minus the estimated squared
        distance. All on the same first ``min(m_i, m_j)`` components.
    shrinkage : "auto" or float >= 0, default "auto"
        ``lam`` of ``"shrunk"``: ``"auto"`` estimates it from the training sketches (empirical
        Bayes, ``shrinkage_``); 0 gives the plain cosine.
    key : Key, int or bytes, optional
        Secret key of the random labels of suppressed test records; ``None`` draws a fresh one
        at :meth:`fit` (predictions of one fitted model are then reproducible, runs are not).
    block_rows : int, optional
        Re-chunk train and test sketches to blocks of this many rows (the ALLPAIRS grain);
        default: keep the input partitioning.

    Attributes
    ----------
    classes_ : ndarray
        Sorted distinct training labels.
    class_counts_ : ndarray of int64
        Number of unsuppressed training records per class (the class prior).
    n_train_ : int
        Number of unsuppressed training records (the only ones used).
    shrinkage_ : float
        ``lam`` used by ``"shrunk"`` (0 for the other similarities).

    Notes
    -----
    * Suppressed training records are excluded. A suppressed test record (and one that has no
      neighbour, which cannot happen once a training record exists) gets a label drawn at random
      with probabilities ``class_counts_ / n_train_``, from stream ``(Tag.KNN_PRIOR, b)`` of
      the key by global test row — the paper's "labelled at random in accordance with a-priori
      class distribution probabilities".
    * Neighbours are ranked by (similarity desc, training index asc) — a total order, so the
      result is exact and independent of the partitioning.
    * ``k > 1``: majority vote; a tie between labels goes to the label of the nearest neighbour
      among the tied labels.
    """

    def __init__(
        self,
        k: int = 1,
        similarity: str = "shrunk",
        key: KeyLike = None,
        block_rows: int | None = None,
        shrinkage: Any = "auto",
    ) -> None:
        self.k = k
        self.similarity = similarity
        self.shrinkage = shrinkage
        self.key = key
        self.block_rows = block_rows

    # -- fitting
    def fit(self, sketches: Any, labels: Any = "label", *, client: Any = None, progress: bool = False) -> SketchKNNClassifier:
        """Store the (unsuppressed) training sketches and the class prior.

        Parameters
        ----------
        sketches : SketchArray-like or (values, m)
            Training sketches.
        labels : str or array-like, default "label"
            Name of a column of ``sketches`` or one label per record.
        client : distributed.Client, optional
        progress : bool, default False
            Progress bar on stderr (see :func:`ppdm_dask.progress.compute`).

        Returns
        -------
        self
        """
        if isinstance(self.k, bool) or not isinstance(self.k, (int, np.integer)) or self.k < 1:
            raise InvalidParameter(f"k must be a positive integer, got {self.k!r}")
        _check_similarity(self.similarity, self.shrinkage)
        _check_block_rows(self.block_rows)
        ckw = {"client": client, "progress": progress}
        train = _as_blocks(sketches, self.block_rows)
        y = _resolve_labels(train, labels, **ckw)
        train = train.persisted(**ckw)  # predict re-reads the training blocks
        (m,) = compute(train.m, **ckw)
        live = np.asarray(m) > 0
        if not live.any():
            raise InvalidParameter("every training sketch is suppressed (m = 0): nothing to learn from")
        if self.k > live.size:  # the top-k buffers are (rows, k): a k beyond the training set only costs memory
            raise InvalidParameter(
                f"k={self.k} neighbours but only {live.size} training records",
                python=f"k <= {live.size}",
                fix=f"`neighbors` <= {live.size}",
            )
        classes, codes = np.unique(y, return_inverse=True)
        self.classes_ = classes
        self.class_counts_ = np.bincount(codes[live], minlength=classes.size).astype(np.int64)
        self.n_train_ = int(live.sum())
        self.shrinkage_ = _resolve_shrinkage(self.similarity, self.shrinkage, train, m, **ckw)
        self._codes = codes.astype(np.int64)
        self._train = train
        self.key_ = as_key(self.key)  # resolved once, at fit (a fresh secret key when None)
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "_train"):
            raise InvalidParameter("this SketchKNNClassifier is not fitted yet; call fit() first")

    def _topk_graph(self, test: _Blocks) -> list[tuple[Any, Any, int]]:
        """Per test block: (delayed merged top-k, delayed m block, first global row)."""
        _check_shared_generator(self._train.generator, test.generator)
        k = int(self.k)
        merge = functools.partial(K.merge_topk, k=k)
        train_blocks = self._train.delayed_blocks()
        out = []
        for Sa, ma, start in test.delayed_blocks():
            parts = [
                dask.delayed(K.knn_block_topk, pure=True)(Sa, ma, Sb, mb, off, k, self.similarity, self.shrinkage_)
                for Sb, mb, off in train_blocks
            ]
            out.append((tree_reduce(parts, merge), ma, start))
        return out

    def kneighbors(self, sketches: Any, *, client: Any = None, progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Estimated similarities and training indices of the ``k`` nearest neighbours.

        Returns
        -------
        (similarities, indices) : ndarrays (n_test, k)
            Best first; empty slots (suppressed test records, fewer than ``k`` training records)
            are ``(-inf, -1)``. Indices are global row numbers of the training sketches.
        """
        self._check_fitted()
        test = _as_blocks(sketches, self.block_rows)
        graph = self._topk_graph(test)
        res = compute(*[t for t, _, _ in graph], client=client, progress=progress)
        sim = np.concatenate([r[0] for r in res]) if res else np.empty((0, int(self.k)))
        idx = np.concatenate([r[1] for r in res]) if res else np.empty((0, int(self.k)), np.int64)
        idx = np.where(idx == K.NO_INDEX, -1, idx)
        return sim, idx

    def predict(self, sketches: Any, *, client: Any = None, progress: bool = False) -> np.ndarray:
        """Predicted label of every test sketch (random by the prior for suppressed ones)."""
        self._check_fitted()
        test = _as_blocks(sketches, self.block_rows)
        codes = dask.delayed(self._codes)  # one shared key in the graph
        preds = [
            dask.delayed(_finish_knn_block, pure=False)(top, ma, codes, self.class_counts_, self.key_, start)
            for top, ma, start in self._topk_graph(test)
        ]
        res = compute(*preds, client=client, progress=progress)
        pred = np.concatenate(res) if res else np.empty(0, np.int64)
        return self.classes_[pred]

    def score(self, sketches: Any, labels: Any = "label", *, client: Any = None, progress: bool = False) -> float:
        """Accuracy of :meth:`predict` against ``labels`` (a column name or an array)."""
        test = _as_blocks(sketches, self.block_rows)
        y = _resolve_labels(test, labels, client=client, progress=progress)
        return classification_accuracy(y, self.predict(sketches, client=client, progress=progress))


# ------------------------------------------------------------------------------ k-means
def _assign_partial(
    S: np.ndarray, m: np.ndarray, C: np.ndarray, mc: np.ndarray, n_clusters: int, similarity: str, shrinkage: float
):
    labels, best = K.assign_block(S, m, C, mc, similarity, shrinkage)
    sums, hist = K.cluster_partials(S, m, labels, n_clusters)
    return labels, best, (sums, hist)


def _sum_partials(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    sums = parts[0][0].copy()
    hist = parts[0][1].copy()
    for s, h in parts[1:]:
        sums += s
        hist += h
    return sums, hist


def _item(t: tuple, i: int) -> Any:
    return t[i]


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts)


class SketchKMeans:
    """k-means on sketches (the paper's §4.2 protocol; docs/sketches.md#mining-on-sketches).

    Parameters
    ----------
    n_clusters : int, default 10
        Number of clusters K (the paper uses 10).
    max_iter : int, default 20
        Maximum number of assignment passes.
    tol : float, default 0
        Stop when at most ``tol * n_active`` records changed cluster in a pass (0: stop at a
        fixed point).
    centroid_mode : {"available", "common"}, default "available"
        Centroid sketch of a cluster C (docs/sketches.md#centroid-sketches): ``"available"``: component j is the mean of
        the members' component j over the members with ``m_i >= j``, ``m_c = max m_i``;
        ``"common"``: ``m_c = min m_i`` and the mean over all members.
    init : {"k-means++", "random"} or array-like of ints, default "k-means++"
        ``"k-means++"``: the first centroid is a uniformly drawn unsuppressed record, each next
        one a record drawn with probability proportional to its distance to the nearest chosen
        centroid (``1 - estimated cosine``, the squared distance of the normalised vectors up to
        a factor 2; the estimated squared distance for ``similarity="euclidean"``).
        ``"random"``: K distinct unsuppressed records drawn uniformly. An array: the global
        indices of K distinct unsuppressed records. Draws use the key's stream
        ``(Tag.KMEANS_INIT, 0)`` on the client, in global row order.
    similarity : {"shrunk", "cosine", "euclidean"}, default "shrunk"
        Assignment by the shrunk estimated cosine (docs/sketches.md#the-variance-aware-similarity),
        the estimated cosine (the paper) or the estimated squared distance, on the first
        ``min(m_i, m_c)`` components. A record's shrinkage factor is the same for every
        centroid with at least ``m_i`` components, so ``"shrunk"`` changes the k-means++ seeds
        (records with few components no longer look maximally far) more than the assignments.
    shrinkage : "auto" or float >= 0, default "auto"
        ``lam`` of ``"shrunk"`` (``"auto"``: estimated from the sketches, ``shrinkage_``).
    key : Key, int or bytes, optional
        Secret key (initialisation, random clusters of suppressed records); ``None``: fresh.
    block_rows : int, optional
        Re-chunk the sketches to blocks of this many rows; default: keep the partitioning.

    Attributes
    ----------
    labels_ : ndarray of int64 (N,)
        Cluster of every record, -1 for suppressed records.
    assigned_labels_ : ndarray of int64 (N,)
        ``labels_`` with every suppressed record put in a random cluster with probabilities
        proportional to the cluster sizes (the paper's evaluation protocol).
    centroids_ : ndarray (K, m_max)
        Centroid sketches of the final clusters, zero beyond ``centroid_m_``.
    centroid_m_ : ndarray of int64 (K,)
        Number of components of every centroid sketch.
    cluster_sizes_ : ndarray of int64 (K,)
        Unsuppressed members per cluster.
    n_iter_ : int
        Assignment passes run.
    init_indices_ : ndarray of int64 (K,)
        Records that seeded the centroids.
    shrinkage_ : float
        ``lam`` used by ``"shrunk"`` (0 for the other similarities).

    Notes
    -----
    Assignment ties go to the smaller cluster index. A cluster left empty by a pass is
    re-seeded deterministically with the record farthest from its own centroid (smallest
    estimated similarity, ties by index) whose cluster keeps at least one other member; the
    record moves to the empty cluster before the next centroids are computed. ``centroids_`` are
    the centroids of the final ``labels_``.
    """

    def __init__(
        self,
        n_clusters: int = 10,
        max_iter: int = 20,
        tol: float = 0.0,
        centroid_mode: str = "available",
        key: KeyLike = None,
        *,
        init: Any = "k-means++",
        similarity: str = "shrunk",
        block_rows: int | None = None,
        shrinkage: Any = "auto",
    ) -> None:
        self.n_clusters = n_clusters
        self.max_iter = max_iter
        self.tol = tol
        self.centroid_mode = centroid_mode
        self.key = key
        self.init = init
        self.similarity = similarity
        self.shrinkage = shrinkage
        self.block_rows = block_rows

    def _validate(self) -> None:
        for name in ("n_clusters", "max_iter"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise InvalidParameter(f"{name} must be a positive integer, got {v!r}")
        if isinstance(self.tol, bool) or not isinstance(self.tol, (int, float, np.number)) or not 0 <= self.tol <= 1:
            raise InvalidParameter(f"tol must be a number in [0, 1], got {self.tol!r}")
        if self.centroid_mode not in ("available", "common"):
            raise InvalidParameter(f"centroid_mode must be 'available' or 'common', got {self.centroid_mode!r}")
        _check_similarity(self.similarity, self.shrinkage)
        _check_block_rows(self.block_rows)

    # -- passes over the data
    @staticmethod
    def _fetch_rows(blocks: _Blocks, rows: Sequence[int] | np.ndarray, **ckw: Any) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size == 0:
            return np.zeros((0, blocks.values.shape[1]))
        (out,) = compute(blocks.values[rows], **ckw)
        return np.asarray(out, dtype=np.float64)

    def _assign_pass(self, blocks: _Blocks, C: np.ndarray, mc: np.ndarray, **ckw: Any):
        n_clusters = int(C.shape[0])
        Cd, mcd = dask.delayed(C), dask.delayed(mc)
        outs = [
            dask.delayed(_assign_partial, pure=True)(S, m, Cd, mcd, n_clusters, self.similarity, self.shrinkage_)
            for S, m, _ in blocks.delayed_blocks()
        ]
        labels = dask.delayed(_concat, pure=True)([dask.delayed(_item, pure=True)(o, 0) for o in outs])
        best = dask.delayed(_concat, pure=True)([dask.delayed(_item, pure=True)(o, 1) for o in outs])
        totals = tree_reduce([dask.delayed(_item, pure=True)(o, 2) for o in outs], _sum_partials)
        labels, best, (sums, hist) = compute(labels, best, totals, **ckw)
        return labels, best, sums, hist

    def _similarity_to(self, blocks: _Blocks, row: np.ndarray, m_row: int, **ckw: Any) -> np.ndarray:
        """Estimated similarity of every record to one sketch (NaN for suppressed records)."""
        _, best, _, _ = self._assign_pass(blocks, row[None, :], np.array([m_row], np.int64), **ckw)
        return best

    def _choose_init(self, blocks: _Blocks, m: np.ndarray, key: Key, **ckw: Any) -> np.ndarray:
        n_clusters = int(self.n_clusters)
        live = np.flatnonzero(m > 0)
        init = self.init
        if isinstance(init, str):
            rng = key.generator(Tag.KMEANS_INIT, 0)
            if init == "random":
                return live[rng.choice(live.size, n_clusters, replace=False)]
            if init != "k-means++":
                raise InvalidParameter(f"init must be 'k-means++', 'random' or an array of indices, got {init!r}")
            seeds = [int(live[rng.integers(live.size)])]
            dist = np.full(live.size, np.inf)
            for _ in range(1, n_clusters):
                i = seeds[-1]
                row = self._fetch_rows(blocks, [i], **ckw)[0]
                sim = self._similarity_to(blocks, row, int(m[i]), **ckw)[live]
                d = -sim if self.similarity == "euclidean" else 1.0 - sim
                dist = np.minimum(dist, np.maximum(d, 0.0))
                w = dist.copy()
                w[np.isin(live, seeds)] = 0.0
                cum = np.cumsum(w)
                if cum[-1] > 0:
                    pick = int(np.searchsorted(cum, rng.random() * cum[-1], side="right"))
                    pick = min(pick, live.size - 1)
                    while w[pick] == 0:  # guard against rounding at the top end
                        pick -= 1
                else:  # every remaining record coincides with a seed: take the first unused
                    pick = int(np.flatnonzero(~np.isin(live, seeds))[0])
                seeds.append(int(live[pick]))
            return np.asarray(seeds, dtype=np.int64)
        seeds = np.asarray(init).ravel()
        if seeds.dtype.kind not in "iu":
            raise InvalidParameter("init indices must be integers")
        seeds = seeds.astype(np.int64)
        if (
            seeds.size != n_clusters
            or np.unique(seeds).size != seeds.size
            or seeds.min() < 0
            or seeds.max() >= m.size
            or (m[seeds] <= 0).any()
        ):
            raise InvalidParameter(f"init must hold {n_clusters} distinct indices of unsuppressed records")
        return seeds

    # -- public API
    def fit(self, sketches: Any, *, client: Any = None, progress: bool = False) -> SketchKMeans:
        """Cluster the sketches.

        Parameters
        ----------
        sketches : SketchArray-like or (values, m)
        client : distributed.Client, optional
        progress : bool, default False
            Progress bars on stderr (one per pass).

        Returns
        -------
        self
        """
        self._validate()
        ckw = {"client": client, "progress": progress}
        n_clusters = int(self.n_clusters)
        blocks = _as_blocks(sketches, self.block_rows).persisted(**ckw)
        (m,) = compute(blocks.m, **ckw)
        m = np.asarray(m, dtype=np.int64)
        live = m > 0
        n_active = int(live.sum())
        if n_active < n_clusters:
            raise InvalidParameter(
                f"{n_active} unsuppressed records cannot form {n_clusters} clusters",
                python="fewer n_clusters, or a sketch that suppresses fewer records (smaller delta or k, larger m_max)",
                fix="fewer `n_clusters`, or a sketch that suppresses fewer records (smaller `delta` or `k`, larger `m_max`)",
            )
        key = as_key(self.key)
        self.shrinkage_ = _resolve_shrinkage(self.similarity, self.shrinkage, blocks, m, **ckw)
        seeds = self._choose_init(blocks, m, key, **ckw)
        rows, _ = K.clean_block(self._fetch_rows(blocks, seeds, **ckw), m[seeds])
        width = blocks.values.shape[1]
        sums = rows.copy()
        hist = np.zeros((n_clusters, width + 1), dtype=np.int64)
        hist[np.arange(n_clusters), m[seeds]] = 1

        previous = None
        n_iter = 0
        labels = np.full(m.size, -1, dtype=np.int64)
        for n_iter in range(1, int(self.max_iter) + 1):  # noqa: B007 (n_iter_ after the loop)
            C, mc = K.centroids_from_partials(sums, hist, self.centroid_mode)
            labels, best, sums, hist = self._assign_pass(blocks, C, mc, **ckw)
            sizes = hist.sum(axis=1)
            empty = np.flatnonzero(sizes == 0)
            if empty.size:
                picks = K.pick_reseeds(empty, labels, best, sizes)
                prow, _ = K.clean_block(self._fetch_rows(blocks, picks, **ckw), m[picks])
                for c, i, r in zip(empty, picks, prow):
                    old = labels[i]
                    sums[old] -= r
                    hist[old, m[i]] -= 1
                    sums[c] += r
                    hist[c, m[i]] += 1
                    labels[i] = c
            changed = n_active if previous is None else int(np.count_nonzero(labels != previous))
            previous = labels
            if changed <= self.tol * n_active:
                break

        self.centroids_, self.centroid_m_ = K.centroids_from_partials(sums, hist, self.centroid_mode)
        self.cluster_sizes_ = hist.sum(axis=1)
        self.labels_ = labels
        self.n_iter_ = n_iter
        self.init_indices_ = seeds
        self.key_ = key  # resolved once, at fit
        self._generator = blocks.generator
        assigned = labels.copy()
        supp = ~live
        if supp.any():
            u = row_uniforms(key, Tag.KMEANS_SUPPRESSED, 0, m.size)
            assigned[supp] = K.draw_by_counts(u[supp], self.cluster_sizes_)
        self.assigned_labels_ = assigned
        return self

    def fit_predict(self, sketches: Any, *, client: Any = None, progress: bool = False) -> np.ndarray:
        """:meth:`fit`, then ``labels_`` (-1 for suppressed records)."""
        return self.fit(sketches, client=client, progress=progress).labels_

    def predict(self, sketches: Any, *, client: Any = None, progress: bool = False) -> np.ndarray:
        """Nearest centroid of every sketch (-1 for suppressed sketches)."""
        if not hasattr(self, "centroids_"):
            raise InvalidParameter("this SketchKMeans is not fitted yet; call fit() first")
        blocks = _as_blocks(sketches, self.block_rows)
        _check_shared_generator(self._generator, blocks.generator)
        labels, _, _, _ = self._assign_pass(blocks, self.centroids_, self.centroid_m_, client=client, progress=progress)
        return labels


# ------------------------------------------------------------------------------ evaluation
def average_cosine_similarity(X: Any, labels: Any, *, normalize: bool = False) -> float:
    """Mean over records of the cosine between the record and its cluster's centroid, both in
    the original representation — the paper's clustering quality (§4.2).

    Parameters
    ----------
    X : scipy.sparse matrix/array or ndarray (N, d)
        Original records.
    labels : array-like of int (N,)
        Cluster of every record, in ``0..K-1`` (assign suppressed records first, e.g.
        ``SketchKMeans.assigned_labels_``).
    normalize : bool, default False
        L2-normalise the records before averaging them into centroids (spherical k-means'
        centroid); default: the plain mean of the records.

    Returns
    -------
    float
        ``mean_i cos(x_i, centroid(cluster(i)))``; a record or centroid of zero norm contributes 0.
    """
    X = sp.csr_array(X, dtype=np.float64)
    labels = np.asarray(labels).ravel()
    n = X.shape[0]
    if labels.shape[0] != n:
        raise InvalidParameter(f"{labels.shape[0]} labels for {n} records")
    if n == 0:
        raise InvalidParameter("no records")
    if labels.dtype.kind not in "iu" or labels.min() < 0:
        raise InvalidParameter("labels must be non-negative cluster ids (assign suppressed records first)")
    labels = labels.astype(np.int64)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    if normalize:
        X = sp.csr_array(sp.diags_array(np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1), 0.0)) @ X)
        norms = np.where(norms > 0, 1.0, 0.0)
    k = int(labels.max()) + 1
    onehot = sp.csr_array((np.ones(n), (labels, np.arange(n))), shape=(k, n))
    centroids = sp.csr_array(onehot @ X)  # sums: the cosine does not depend on the scale
    cnorms = np.sqrt(np.asarray(centroids.multiply(centroids).sum(axis=1)).ravel())
    dots = np.asarray((X @ centroids.T).toarray())[np.arange(n), labels]
    den = norms * cnorms[labels]
    cos = np.where(den > 0, dots / np.where(den > 0, den, 1.0), 0.0)
    return float(cos.mean())


def classification_accuracy(y_true: Any, y_pred: Any) -> float:
    """Fraction of records whose predicted label equals the true label."""
    y_true = np.asarray(y_true).ravel()
    y_pred = np.asarray(y_pred).ravel()
    if y_true.shape != y_pred.shape:
        raise InvalidParameter(f"{y_true.size} true labels but {y_pred.size} predictions")
    if y_true.size == 0:
        raise InvalidParameter("no labels to compare")
    return float(np.mean(y_true == y_pred))
