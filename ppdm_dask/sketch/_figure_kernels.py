"""Kernels of the report figures of sketch releases (docs/sketches.md#report-figures): pure
numpy / scipy, no dask.

The *variance ratio* of a record says how far it is above the condition it must meet, as
achieved variance over required variance (``>= 1`` meets it, ``1`` is exactly at the threshold):

* δ-anonymity: reconstructing attribute t from m components has variance
  ``(|x|^2 - x_t^2) / m``; the worst attribute gives ``V / m`` with ``V = |x|^2 - max_t x_t^2``,
  which must be at least δ, so the ratio is ``V / (m δ)``;
* k-variance anonymity: for every k-NN edge (i, j) the min(m_i, m_j)-component estimate of
  x_i.x_j has variance ``V_ij / min(m_i, m_j)`` which must be at least ``tau_ij^2`` (the
  Cauchy-Schwarz gap squared); a record's ratio is the smallest over its own k-NN edges.

Suppressed records (m = 0) publish nothing and have no ratio (NaN); a record none of whose
edges constrains it (parallel neighbours, suppressed neighbours) has ratio ``inf``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ._kernels import dot_variance, row_sq_stats

__all__ = [
    "TOLERANCE",
    "delta_ratios",
    "kvariance_ratios",
    "ratio_summary",
    "ratio_histogram",
    "ratio_edges",
    "take_rows",
    "take_sketch_rows",
    "pair_estimates",
    "exact_pairs",
    "integer_bins",
]

#: ratios within this of 1 count as meeting the condition: m comes from a tolerant floor
#: (docs/sketches.md#clarification-tolerant-floor), so a record exactly at the threshold may
#: sit a rounding error below 1
TOLERANCE = 1e-6


def delta_ratios(block: Any, weights: Any, m: np.ndarray, delta: float) -> np.ndarray:
    """Variance ratio ``V / (m δ)`` of every record of one row block (NaN where m = 0).

    ``block`` / ``weights`` are the CSR blocks of a TransactionArray (``weights`` None: 0/1 data).
    """
    src = weights if weights is not None else block
    data = src.data if weights is not None else np.ones(np.asarray(src.indices).size)
    total, top = row_sq_stats(src.indptr, data)
    nnz = np.diff(np.asarray(src.indptr, dtype=np.int64))
    v = np.where(nnz > 1, total - top, 0.0)
    m = np.asarray(m, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(m > 0, v / (np.where(m > 0, m, 1.0) * float(delta)), np.nan)


def kvariance_ratios(indices: np.ndarray, dots: np.ndarray, cross: np.ndarray, sqnorms: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Per record the smallest variance ratio ``V_ij / (min(m_i, m_j) tau_ij^2)`` over its k-NN
    edges (``indices[i]``, -1 = no neighbour); NaN where m_i = 0, inf when no edge constrains it."""
    indices = np.asarray(indices, dtype=np.int64)
    m = np.asarray(m, dtype=np.int64)
    valid = indices >= 0
    j = np.where(valid, indices, 0)
    sqi = np.broadcast_to(np.asarray(sqnorms, np.float64)[:, None], indices.shape)
    sqj = np.asarray(sqnorms, np.float64)[j]
    v = dot_variance(sqi, sqj, dots, cross)
    norms = np.sqrt(sqi * sqj)
    tau = norms - np.abs(np.asarray(dots, np.float64))
    lo = np.minimum(m[:, None], m[j])
    # an edge with a suppressed end has no estimate; parallel vectors meet it for every m
    # (the rule kernel's degenerate case): neither constrains the record
    active = valid & (lo > 0) & (tau > 1e-12 * norms)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(active, v / (np.where(active, lo, 1) * np.where(active, tau, 1.0) ** 2), np.inf)
    out = r.min(axis=1) if r.shape[1] else np.full(m.shape, np.inf)
    return np.where(m > 0, out, np.nan)


def ratio_summary(r: np.ndarray) -> dict[str, Any]:
    """Counts and range of the finite ratios of one block (``below``: under ``1 - TOLERANCE``)."""
    r = np.asarray(r, dtype=np.float64)
    fin = r[np.isfinite(r)]
    return {
        "finite": int(fin.size),
        "infinite": int(np.count_nonzero(np.isinf(r))),
        "below": int(np.count_nonzero(fin < 1.0 - TOLERANCE)),
        "min": float(fin.min()) if fin.size else np.inf,
        "max": float(fin.max()) if fin.size else -np.inf,
    }


def ratio_edges(lo: float, hi: float, bins: int = 40) -> tuple[np.ndarray, bool]:
    """Histogram edges over ``[lo, hi]`` and whether they are logarithmic (ratios spanning more
    than a decade: records capped at m_max sit far above the others)."""
    if not np.isfinite(lo) or not np.isfinite(hi):
        return np.array([0.0, 1.0]), False
    if hi <= lo:
        return np.array([lo - 0.5, lo + 0.5]) if lo > 0.5 else np.array([lo, lo + 1.0]), False
    if lo > 0 and hi / lo > 10:
        return np.geomspace(lo, hi, bins + 1), True
    return np.linspace(lo, hi, bins + 1), False


def ratio_histogram(r: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Counts of the finite ratios of one block in ``edges`` (the last bin closed)."""
    r = np.asarray(r, dtype=np.float64)
    return np.histogram(r[np.isfinite(r)], bins=edges)[0].astype(np.int64)


def take_rows(block: Any, weights: Any, start: int, rows: np.ndarray, n_items: int) -> sp.csr_array:
    """Rows ``rows`` (global, sorted, inside this block which starts at ``start``) of a
    TransactionArray block as a float64 CSR array (the weights, or 1)."""
    indptr = np.asarray(block.indptr, dtype=np.int64)
    data = np.asarray(weights.data, dtype=np.float64) if weights is not None else np.ones(np.asarray(block.indices).size)
    X = sp.csr_array((data, np.asarray(block.indices), indptr), shape=(indptr.size - 1, int(n_items)))
    return sp.csr_array(X[np.asarray(rows, dtype=np.int64) - int(start)])


def take_sketch_rows(values: np.ndarray, m: np.ndarray, start: int, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``rows`` (global, inside this block) of a block of sketches: ``(values, m)``."""
    local = np.asarray(rows, dtype=np.int64) - int(start)
    return np.asarray(values, dtype=np.float64)[local], np.asarray(m, dtype=np.int64)[local]


def pair_estimates(Sa: np.ndarray, ma: np.ndarray, Sb: np.ndarray, mb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Estimated dot products and cosines of the record pairs ``(a[p], b[p])`` from their
    sketches, on the same first ``m = min(m_a, m_b)`` components for every term:
    ``dot = sum_{j<m} s_a^j s_b^j / m`` (each component is an unbiased estimate of x_a.x_b) and
    ``cos = sum s_a s_b / sqrt(sum s_a^2 * sum s_b^2)`` (0 when a sum of squares is 0)."""
    Sa, Sb = np.asarray(Sa, np.float64), np.asarray(Sb, np.float64)
    m = np.minimum(np.asarray(ma, np.int64), np.asarray(mb, np.int64))
    keep = np.arange(Sa.shape[1])[None, :] < m[:, None]
    a, b = np.where(keep, Sa, 0.0), np.where(keep, Sb, 0.0)
    dot = (a * b).sum(axis=1)
    den = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        est_dot = np.where(m > 0, dot / np.maximum(m, 1), np.nan)
        est_cos = np.where(den > 0, dot / np.where(den > 0, den, 1.0), 0.0)
    return est_dot, np.where(m > 0, est_cos, np.nan)


def exact_pairs(Xa: sp.csr_array, Xb: sp.csr_array) -> tuple[np.ndarray, np.ndarray]:
    """Exact dot products and cosines of the row pairs ``(Xa[p], Xb[p])`` (cosine 0 for a zero row)."""
    Xa, Xb = sp.csr_array(Xa, dtype=np.float64), sp.csr_array(Xb, dtype=np.float64)
    dot = np.asarray(Xa.multiply(Xb).sum(axis=1)).ravel()
    na = np.sqrt(np.asarray(Xa.multiply(Xa).sum(axis=1)).ravel())
    nb = np.sqrt(np.asarray(Xb.multiply(Xb).sum(axis=1)).ravel())
    den = na * nb
    with np.errstate(divide="ignore", invalid="ignore"):
        cos = np.where(den > 0, dot / np.where(den > 0, den, 1.0), 0.0)
    return dot, cos


def integer_bins(counts: np.ndarray, max_bins: int = 50) -> tuple[list[float], list[int]]:
    """A histogram ``(edges, counts)`` of integer values 0, 1, ... given their counts
    (``counts[v]`` records with value v): one bin per value up to ``max_bins`` values, else
    bins of equal integer width; trailing empty values are dropped."""
    counts = np.asarray(counts, dtype=np.int64)
    nz = np.flatnonzero(counts)
    if not nz.size:
        return [-0.5, 0.5], [0]
    lo, hi = int(nz[0]), int(nz[-1])
    width = max(1, -(-(hi - lo + 1) // max_bins))
    n_bins = -(-(hi - lo + 1) // width)
    padded = np.zeros(n_bins * width, dtype=np.int64)
    padded[: hi - lo + 1] = counts[lo : hi + 1]
    edges = lo - 0.5 + width * np.arange(n_bins + 1)
    return [float(e) for e in edges], [int(c) for c in padded.reshape(n_bins, width).sum(axis=1)]
