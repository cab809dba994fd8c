"""Kernels of the flip-rate checks (:mod:`.flip_rates`): pure numpy/scipy, no dask.

One row block of the original ``t`` and the same rows of the release ``d`` (put back in the
original's order with the owner's key) give, per row, the ones of the original ``n1``, the ones
kept ``k11``, the zeros ``n0`` and the zeros turned into ones ``k01``. Under a (p, q) distortion
every bit is drawn independently, so ``k11 ~ Binomial(n1, p)`` and ``k01 ~ Binomial(n0, 1 - q)``
row by row; the block returns the sums the test needs (totals and the dispersion of the rows
around their binomial means, with its exact variance).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["ROW_SUMS", "row_flip_sums", "dispersion_variance"]

#: the entries of the vector :func:`row_flip_sums` returns, in order
ROW_SUMS = ("ones", "kept", "zeros", "added", "dev_kept", "var_dev_kept", "dev_added", "var_dev_added")


def dispersion_variance(n: np.ndarray, v: float) -> np.ndarray:
    """``Var((X - n r)^2)`` of ``X ~ Binomial(n, r)`` with ``v = r (1 - r)``, elementwise.

    From the central moments ``E(X - nr)^2 = n v`` and ``E(X - nr)^4 = n v (1 + 3 (n - 2) v)``:
    ``n v + (2 n^2 - 6 n) v^2``.
    """
    n = np.asarray(n, dtype=np.float64)
    return n * v + (2.0 * n * n - 6.0 * n) * v * v


def row_flip_sums(
    t: sp.csr_array, d: sp.csr_array, t_map: np.ndarray | None, d_map: np.ndarray | None, n_items: int, p: float, q: float
) -> np.ndarray:
    """Kernel: the sums of :data:`ROW_SUMS` over the rows of one block.

    Parameters
    ----------
    t, d : csr_array
        The same rows of the original and of the release (binary; ``d`` in the original's row
        order).
    t_map, d_map : ndarray or None
        Column in the item universe of every column of ``t`` and of ``d`` (None: the columns
        are the universe's).
    n_items : int
        Items of the universe (the zeros of a row are ``n_items - n1``).
    p, q : float
        The declared distortion parameters.
    """
    if t.shape[0] != d.shape[0]:
        raise ValueError(f"row blocks of {t.shape[0]} and {d.shape[0]} rows")
    n_rows = t.shape[0]
    d_cols = np.asarray(d.indices, dtype=np.int64)
    if d_map is not None:
        d_cols = np.asarray(d_map, dtype=np.int64)[d_cols]
    t_cols = np.asarray(t.indices, dtype=np.int64)
    if t_map is not None:
        t_cols = np.asarray(t_map, dtype=np.int64)[t_cols]
    d_rows = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(np.asarray(d.indptr, dtype=np.int64)))
    t_rows = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(np.asarray(t.indptr, dtype=np.int64)))
    # the kept ones of a row are the (row, column) cells present in both: count them on one
    # sorted array of cell ids (rows of a CSR hold each column once)
    cells_t = t_rows * n_items + t_cols
    cells_d = d_rows * n_items + d_cols
    both = np.intersect1d(cells_t, cells_d, assume_unique=True)
    kept = np.bincount(both // n_items, minlength=n_rows).astype(np.float64) if both.size else np.zeros(n_rows)
    n1 = np.diff(np.asarray(t.indptr, dtype=np.int64)).astype(np.float64)
    released = np.diff(np.asarray(d.indptr, dtype=np.int64)).astype(np.float64)
    n0 = float(n_items) - n1
    added = released - kept
    v1, v0 = p * (1.0 - p), q * (1.0 - q)
    return np.array(
        [
            n1.sum(),
            kept.sum(),
            n0.sum(),
            added.sum(),
            ((kept - p * n1) ** 2).sum(),
            dispersion_variance(n1, v1).sum(),
            ((added - (1.0 - q) * n0) ** 2).sum(),
            dispersion_variance(n0, v0).sum(),
        ],
        dtype=np.float64,
    )
