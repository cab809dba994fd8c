"""Kernels of k-variance anonymity (docs/sketches.md#k-variance-anonymity): edge bounds M_ij and the
ordered m-sweeps.

Pure numpy/numba, no dask. The sweeps are the driver step of docs/sketches.md#distributed-execution: they run on the driver over
the kNN edge list (a few numbers per edge), in the paper's order, so the distributed pipeline
gives exactly the sequential algorithm's result for the same kNN graph.
"""

from __future__ import annotations

import numpy as np

from ._kernels import dot_variance, ifloor, max_components

try:
    import numba as _numba
except ImportError:  # pragma: no cover - numba ships with pydata sparse, a dependency
    _numba = None

__all__ = ["edge_bounds", "processing_order", "symmetric_adjacency", "sweep", "repair", "violations"]


def edge_bounds(
    indices: np.ndarray, dots: np.ndarray, cross: np.ndarray, sqnorms: np.ndarray, m_max: int, threshold: str = "corrected"
) -> np.ndarray:
    """M_ij for every kNN edge ``(i, indices[i, c])`` (``-1`` where there is no neighbour).

    ``threshold="corrected"`` (default,
    docs/sketches.md#correction-the-k-variance-threshold-is-the-cauchy-schwarz-gap): ``M_ij = ifloor(V_ij / tau_ij^2)`` capped at
    ``m_max``, with the corrected dot-product variance ``V``
    (docs/sketches.md#correction-variance-of-the-dot-product-estimate) and the Cauchy-Schwarz gap
    ``tau = |x_i||x_j| - |x_i.x_j|``; invariant to rescaling either record.
    ``threshold="paper"`` (reproduction studies only): the printed threshold
    ``sqrt(|x_i||x_j| - |x_i.x_j|)``, i.e. ``M_ij = ifloor(V_ij / tau_ij)``; dimensionally
    inconsistent (units of x where a standard deviation of a dot product has units of x^2), so it
    depends on the scale of the data and allows far more components on 0/1 or count data.
    """
    valid = indices >= 0
    j = np.where(valid, indices, 0)
    sqi = np.broadcast_to(sqnorms[:, None], indices.shape)
    sqj = sqnorms[j]
    v = dot_variance(sqi, sqj, dots, cross)
    if threshold == "corrected":
        m = max_components(v, sqi, sqj, dots, m_max)
    elif threshold == "paper":
        norms = np.sqrt(sqi * sqj)
        tau = norms - np.abs(dots)
        degenerate = tau <= 1e-12 * norms
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(degenerate, np.inf, v / np.where(degenerate, 1.0, tau))
        m = np.where(degenerate, m_max, np.clip(ifloor(np.where(degenerate, 0.0, ratio)), 0, m_max))
    else:
        raise ValueError(f"unknown threshold {threshold!r}")
    return np.where(valid, m, -1).astype(np.int64)


def processing_order(kth_distance: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Active rows by decreasing k-NN distance, ties by index ("largest first",
    docs/sketches.md#clarification-processing-order)."""
    rows = np.flatnonzero(active)
    return rows[np.lexsort((rows, -kth_distance[rows]))].astype(np.int64)


def symmetric_adjacency(indices: np.ndarray, bounds: np.ndarray, symmetric: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR adjacency (indptr, neighbour, M) of the kNN edges, both directions if ``symmetric``.

    ``M`` is symmetric in (i, j), so the reversed edge carries the same bound.
    """
    n, k = indices.shape
    src = np.repeat(np.arange(n, dtype=np.int64), k)
    dst = indices.ravel().astype(np.int64)
    bnd = bounds.ravel()
    keep = dst >= 0
    src, dst, bnd = src[keep], dst[keep], bnd[keep]
    if symmetric:
        src, dst, bnd = np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([bnd, bnd])
    order = np.lexsort((dst, src))
    src, dst, bnd = src[order], dst[order], bnd[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return indptr, dst, bnd


def _sweep_py(order: np.ndarray, indptr: np.ndarray, nbr: np.ndarray, bnd: np.ndarray, m: np.ndarray, m_max: int) -> int:
    change = 0
    for q in order:
        new = m_max
        for e in range(indptr[q], indptr[q + 1]):
            b = bnd[e]
            if m[nbr[e]] > b and b < new:
                new = b
        change += abs(new - m[q])
        m[q] = new
    return change


_sweep_nb = _numba.njit(cache=True, nogil=True)(_sweep_py) if _numba is not None else None


def sweep(order: np.ndarray, indptr: np.ndarray, nbr: np.ndarray, bnd: np.ndarray, m: np.ndarray, m_max: int) -> int:
    """One major iteration in place: for q in ``order``,
    ``m_q <- min({M_ql : l in Adj(q), m_l > M_ql} U {m_max})`` — the LARGEST admissible m_q
    given the current neighbours (docs/sketches.md#correction-each-record-gets-the-largest-admissible-number-of-components).
    Returns sum |change of m|."""
    fn = _sweep_nb if _sweep_nb is not None else _sweep_py
    return int(fn(order, indptr, nbr, bnd, m, np.int64(m_max)))


def repair(indices: np.ndarray, bounds: np.ndarray, m: np.ndarray) -> int:
    """Paper-literal mode's final pass (docs/sketches.md#correction-symmetric-neighbourhood-or-a-repair-pass):
    for every q and l in kNN(q) with
    ``min(m_q, m_l) > M_ql`` set ``m_q = M_ql``. Returns the number of rows lowered."""
    n, k = indices.shape
    lowered = 0
    for q in range(n):
        for c in range(k):
            l = indices[q, c]
            if l >= 0 and min(m[q], m[l]) > bounds[q, c]:
                m[q] = bounds[q, c]
                lowered += 1
    return lowered


def violations(indices: np.ndarray, bounds: np.ndarray, m: np.ndarray) -> int:
    """Number of kNN edges with ``min(m_i, m_j) > M_ij`` (0 for a k-variance anonymous output)."""
    valid = indices >= 0
    j = np.where(valid, indices, 0)
    lo = np.minimum(m[:, None], m[j])
    return int(np.sum(valid & (lo > bounds)))
