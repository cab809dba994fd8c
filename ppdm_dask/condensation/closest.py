"""How close pseudo-records come to the original records: distance to closest record (DCR)
against the originals' own nearest-neighbour distances (docs/condensation.md#distance-to-closest-record).

For a measured pseudo-record ``y``:

* ``dcr(y)`` — the Euclidean distance to its closest original record ``x*(y)``;
* ``neighbour(y)`` — the distance from ``x*(y)`` to *its* nearest other original record: how far
  apart the originals themselves are where ``y`` landed.

A pseudo-record with ``dcr(y) < neighbour(y)`` sits closer to one original than that original's
own nearest neighbour does — it singles the record out more than the data itself does. A
**copy** is a pseudo-record within float tolerance of an original (``dcr <= COPY_RTOL ·
max(1, max|x*|)``), a copy of a **unique** original when ``x*`` has no other original within
that tolerance.

Computed distributed and exactly for the measured pseudo-records: they are fetched to the
client (every one when the release has at most :data:`QUERY_LIMIT` rows, else a public-seeded
sample of about that many), broadcast to every block of the original, where a k-d tree of the
block answers them; the per-block answers are merged by ``(distance, global row)``. A second
pass answers the closest originals themselves (their own row left out) and a sample of the
originals for the reference distribution. Ties among the three nearest rows of a block go to
the smaller global row.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import dask
import numpy as np
from scipy.spatial import cKDTree

__all__ = [
    "QUERY_LIMIT",
    "COPY_RTOL",
    "Closeness",
    "nearest_in_block",
    "merge_nearest",
    "sample_block",
    "nearest_original",
    "closeness",
    "fetch_sample",
]

#: Pseudo-records (and originals) measured at most; beyond, a public-seeded sample of about that many.
QUERY_LIMIT = 100_000
#: Float tolerance of a copy, relative to the original record's largest absolute value (at least 1).
COPY_RTOL = 1e-9
#: Public seed of the samples (the measurement is owner-side; the seed only makes it reproducible).
SAMPLE_SEED = 0x5EED_0035
_K = 3


def _matrix(part: Any) -> np.ndarray:
    if hasattr(part, "to_numpy"):
        return part.to_numpy(dtype=np.float64, na_value=np.nan)
    A = np.asarray(part, dtype=np.float64)
    return A[:, None] if A.ndim == 1 else A


def sample_block(part: Any, block: int, fraction: float, which: int) -> np.ndarray:
    """Kernel: the rows of one block in the public sample (each row with probability
    ``fraction``, from the seed ``(SAMPLE_SEED, which, block)``; every row when ``fraction >= 1``)."""
    A = _matrix(part)
    if fraction >= 1.0:
        return A
    keep = np.random.default_rng([SAMPLE_SEED, int(which), int(block)]).random(A.shape[0]) < fraction
    return A[keep]


def sample_rows_block(part: Any, block: int, start: int, fraction: float, which: int) -> tuple[np.ndarray, np.ndarray]:
    """Kernel: :func:`sample_block` with the global rows of the sampled records."""
    A = _matrix(part)
    rows = np.arange(start, start + A.shape[0], dtype=np.int64)
    if fraction >= 1.0:
        return A, rows
    keep = np.random.default_rng([SAMPLE_SEED, int(which), int(block)]).random(A.shape[0]) < fraction
    return A[keep], rows[keep]


def nearest_in_block(
    part: Any, start: int, queries: np.ndarray, exclude: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kernel: the nearest row of one original block to every query.

    Returns ``(distance (q,), global row (q,), the row's values (q, d))``; ``exclude[i]`` is a
    global row that query ``i`` must not be answered with (itself), -1 for none. ``inf`` / -1 /
    NaN where the block has no candidate.
    """
    A = _matrix(part)
    q = np.asarray(queries, np.float64).reshape(-1, A.shape[1] if A.ndim == 2 else 1)
    nq, n = q.shape[0], A.shape[0]
    if not n or not nq:
        return np.full(nq, np.inf), np.full(nq, -1, np.int64), np.full((nq, A.shape[1]), np.nan)
    k = min(_K, n)
    dist, j = cKDTree(A).query(q, k=k)
    dist, j = np.asarray(dist, np.float64).reshape(nq, k), np.asarray(j).reshape(nq, k)
    g = np.where(j < n, start + j, -1).astype(np.int64)
    dist = np.where(j < n, dist, np.inf)
    if exclude is not None:
        dist = np.where(g == np.asarray(exclude, np.int64)[:, None], np.inf, dist)
    big = np.iinfo(np.int64).max
    best = np.lexsort((np.where(g >= 0, g, big), dist), axis=1)[:, 0]
    r = np.arange(nq)
    d, gi, ji = dist[r, best], g[r, best], j[r, best]
    gi = np.where(np.isfinite(d), gi, -1)
    pts = np.where(np.isfinite(d)[:, None], A[np.minimum(ji, n - 1)], np.nan)
    return d, gi, pts


def merge_nearest(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The nearest over all blocks: smallest ``(distance, global row)``."""
    d = np.stack([p[0] for p in parts])
    g = np.stack([np.where(p[1] >= 0, p[1], np.iinfo(np.int64).max) for p in parts])
    best = np.lexsort((g, d), axis=0)[0]
    r = np.arange(d.shape[1])
    pts = np.stack([p[2] for p in parts])
    return d[best, r], np.stack([p[1] for p in parts])[best, r], pts[best, r]


def _blocks(X: Any) -> tuple[list, np.ndarray]:
    """Delayed row blocks of an original (dask array with one column chunk) and their offsets."""
    X = X.rechunk({1: -1}) if len(X.chunks[1]) > 1 else X
    offsets = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
    return list(X.to_delayed().ravel()), offsets


def nearest_original(
    queries: np.ndarray, X: Any, *, exclude: np.ndarray | None = None, **compute_kwargs: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The nearest original record (rows of the dask array ``X``) to every query: ``(distance,
    global row, values)``, exact; ``exclude`` as :func:`nearest_in_block`."""
    from ..progress import compute

    compute_kwargs.setdefault("progress", False)
    blocks, offsets = _blocks(X)
    q = np.asarray(queries, np.float64)
    if not blocks or not q.shape[0]:
        d = int(X.shape[1])
        return np.full(q.shape[0], np.inf), np.full(q.shape[0], -1, np.int64), np.full((q.shape[0], d), np.nan)
    task = dask.delayed(nearest_in_block, pure=True)
    (parts,) = compute([task(b, int(o), q, exclude) for b, o in zip(blocks, offsets[:-1])], **compute_kwargs)
    return merge_nearest(list(parts))


def fetch_sample(parts: list, total: int, which: int, **compute_kwargs: Any) -> np.ndarray:
    """The public-seeded sample of about :data:`QUERY_LIMIT` rows (every row when ``total`` is
    at most that) of the delayed blocks ``parts``, as one array."""
    from ..progress import compute

    compute_kwargs.setdefault("progress", False)
    f = 1.0 if total <= QUERY_LIMIT else QUERY_LIMIT / float(total)
    (got,) = compute([dask.delayed(sample_block, pure=True)(p, i, f, which) for i, p in enumerate(parts)], **compute_kwargs)
    got = [np.asarray(g) for g in got]
    return np.concatenate(got) if got else np.zeros((0, 0))


class Closeness(NamedTuple):
    """Distances of measured pseudo-records to the originals (see the module docstring)."""

    measured: int  #: pseudo-records measured
    released: int  #: pseudo-records in the release
    dcr: np.ndarray  #: distance of each measured pseudo-record to its closest original
    nearest: np.ndarray  #: global row of that original
    neighbour: np.ndarray  #: that original's distance to its nearest other original
    tolerance: np.ndarray  #: the copy tolerance at that original
    original_nn: np.ndarray  #: nearest-other-original distance of the sampled originals

    @property
    def copies(self) -> np.ndarray:
        """Mask: measured pseudo-records within float tolerance of an original."""
        return self.dcr <= self.tolerance

    @property
    def unique_copies(self) -> np.ndarray:
        """Mask: copies of an original that has no other original within the tolerance."""
        return self.copies & (self.neighbour > self.tolerance)

    @property
    def share_closer(self) -> float:
        """Share of measured pseudo-records closer to their closest original than that
        original's nearest other original (NaN when none was measured)."""
        return float(np.mean(self.dcr < self.neighbour)) if self.dcr.size else float("nan")

    def percentile(self, q: float) -> tuple[float, float, float]:
        """``(q-th percentile of dcr, of original_nn, their ratio)``."""
        a = float(np.percentile(self.dcr, q)) if self.dcr.size else float("nan")
        b = float(np.percentile(self.original_nn, q)) if self.original_nn.size else float("nan")
        return a, b, (a / b if b > 0 else float("nan"))


def closeness(pseudo_parts: list, released: int, X: Any, **compute_kwargs: Any) -> Closeness:
    """The :class:`Closeness` of the pseudo-data (delayed blocks ``pseudo_parts``, ``released``
    rows in all) to the original ``X`` (a dask array, float64), in three distributed passes
    (fetch the measured pseudo-records; their closest originals and the originals' sample; the
    nearest other original of both)."""
    from ..progress import compute

    compute_kwargs.setdefault("progress", False)
    d = int(X.shape[1])
    queries = fetch_sample(pseudo_parts, released, 0, **compute_kwargs).reshape(-1, d)
    blocks, offsets = _blocks(X)
    N = int(offsets[-1])
    f = 1.0 if N <= QUERY_LIMIT else QUERY_LIMIT / float(N)
    near = dask.delayed(nearest_in_block, pure=True)
    samp = dask.delayed(sample_rows_block, pure=True, nout=2)
    tasks = [near(b, int(o), queries, None) for b, o in zip(blocks, offsets[:-1])]
    samples = [samp(b, i, int(o), f, 1) for i, (b, o) in enumerate(zip(blocks, offsets[:-1]))]
    parts, sampled = compute(tasks, samples, **compute_kwargs)
    dcr, nearest, points = merge_nearest(list(parts)) if parts else (np.zeros(0), np.zeros(0, np.int64), np.zeros((0, d)))
    s_pts = np.concatenate([s[0] for s in sampled]).reshape(-1, d) if sampled else np.zeros((0, d))
    s_rows = np.concatenate([s[1] for s in sampled]) if sampled else np.zeros(0, np.int64)
    # the nearest other original of the closest originals and of the sample, in one pass
    uniq, first, inv = np.unique(nearest, return_index=True, return_inverse=True)
    q2 = np.concatenate([points[first].reshape(-1, d), s_pts])
    ex2 = np.concatenate([uniq, s_rows]).astype(np.int64)
    nn2 = nearest_original(q2, X, exclude=ex2, **compute_kwargs)[0] if q2.shape[0] else np.zeros(0)
    neighbour = nn2[: uniq.size][inv.reshape(-1)] if uniq.size else np.zeros(0)
    tol = COPY_RTOL * np.maximum(1.0, np.abs(points).max(axis=1)) if points.size else np.zeros(0)
    return Closeness(int(queries.shape[0]), int(released), dcr, nearest, neighbour, tol, nn2[uniq.size :])
