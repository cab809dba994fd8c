"""EMASK per-block kernels: sparse per-bit distortion and support reconstruction (pure numpy)."""

from __future__ import annotations

from math import comb

import numpy as np
import scipy.sparse as sp

__all__ = [
    "distort_block",
    "sample_distinct",
    "transition_matrix",
    "class_counts_from_subsets",
    "closed_form_estimate",
    "closed_form_variance",
]


def sample_distinct(m: np.ndarray, k: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """For each row r, a uniformly random set of ``k[r]`` distinct values in ``[0, m[r])``.

    The first ``k`` distinct values of an i.i.d. uniform stream form a uniform ``k``-subset; the
    stream is drawn in vectorised rounds (only the deficit is redrawn). Rows asking for more than
    half of their range draw the values to leave out instead.

    Returns
    -------
    rows, values : int64 arrays sorted by (row, value).
    """
    m = np.asarray(m, np.int64)
    k = np.asarray(k, np.int64)
    flip = k * 2 > m
    want = np.where(flip, m - k, k)
    rows_acc = np.zeros(0, np.int64)
    vals_acc = np.zeros(0, np.int64)
    need = want.copy()
    width = int(m.max()) + 1 if m.size else 1
    while need.sum() > 0:
        r = np.repeat(np.arange(m.size, dtype=np.int64), need)
        v = (rng.random(r.size) * m[r]).astype(np.int64)
        keys = np.concatenate([rows_acc * width + vals_acc, r * width + v])
        # keep first occurrences in stream order (accumulated first, then this round's order)
        uniq, first = np.unique(keys, return_index=True)
        order = np.sort(first)
        keys = keys[order]
        rows_acc, vals_acc = keys // width, keys % width
        # only the deficit is ever drawn, so no row can exceed its target
        need = want - np.bincount(rows_acc, minlength=m.size)
    keys = np.sort(rows_acc * width + vals_acc)
    rows, vals = keys // width, keys % width
    if flip.any():
        # complement inside [0, m) for the flipped rows, via a dense mask per such row
        fr = np.flatnonzero(flip)
        mask = np.ones((fr.size, width), dtype=bool)
        mask[np.arange(width)[None, :] >= m[fr][:, None]] = False
        sel = flip[rows]
        pos = np.searchsorted(fr, rows[sel])
        mask[pos, vals[sel]] = False
        fr_rows, fr_vals = np.nonzero(mask)
        rows = np.concatenate([rows[~sel], fr[fr_rows]])
        vals = np.concatenate([vals[~sel], fr_vals.astype(np.int64)])
        keys = np.sort(rows * width + vals)
        rows, vals = keys // width, keys % width
    return rows, vals


def distort_block(block: sp.csr_array, p: float, q: float, rng: np.random.Generator) -> sp.csr_array:
    """MASK/EMASK distortion of one block: each 1 kept w.p. ``p``, each 0 flipped w.p. ``1 - q``.

    Sparse and exact: kept ones are Bernoulli(p) on the stored entries; per row,
    K ~ Binomial(d - len, 1 - q) new items are drawn uniformly among the absent ones.
    """
    n_rows, d = block.shape
    indptr = block.indptr.astype(np.int64)
    lengths = np.diff(indptr)
    row_of = np.repeat(np.arange(n_rows, dtype=np.int64), lengths)
    ids = block.indices.astype(np.int64)
    keep = rng.random(ids.size) < p
    absent = d - lengths
    k = rng.binomial(absent, 1.0 - q)
    rows_new, ranks = sample_distinct(absent, k, rng)
    # rank r among the absent items of a row -> item id: r + #present items with (id - index) <= r
    local_idx = np.arange(ids.size, dtype=np.int64) - indptr[row_of]
    gap_key = row_of * (d + 1) + (ids - local_idx)
    q_key = rows_new * (d + 1) + ranks
    below = np.searchsorted(gap_key, q_key, side="right") - indptr[rows_new]
    new_items = ranks + below
    all_rows = np.concatenate([row_of[keep], rows_new])
    all_items = np.concatenate([ids[keep], new_items])
    order = np.argsort(all_rows * d + all_items, kind="stable")
    all_rows, all_items = all_rows[order], all_items[order]
    out_indptr = np.zeros(n_rows + 1, np.int64)
    np.cumsum(np.bincount(all_rows, minlength=n_rows), out=out_indptr[1:])
    return sp.csr_array(
        (np.ones(all_items.size, np.int32), all_items.astype(np.int32), out_indptr.astype(np.int32)), shape=(n_rows, d)
    )


def transition_matrix(n: int, p: float, q: float) -> np.ndarray:
    """M[i, j] = P(distorted n-itemset has i ones | true has j ones) (corrected Eq. 4,
    docs/emask.md#correction-the-transition-matrix).

    Rows and columns are ordered by the number of ones, 0..n; columns sum to 1.
    """
    m = np.zeros((n + 1, n + 1))
    for i in range(n + 1):
        for j in range(n + 1):
            m[i, j] = sum(
                comb(j, k) * p**k * (1 - p) ** (j - k) * comb(n - j, i - k) * (1 - q) ** (i - k) * q ** (n - j - i + k)
                for k in range(max(0, i + j - n), min(i, j) + 1)
            )
    return m


def class_counts_from_subsets(sigma: np.ndarray) -> np.ndarray:
    """Counts c_i (rows with exactly i ones in I's columns), i = 0..n, from
    sigma_j = sum of supports of the j-subsets of I (sigma_0 = N) by inclusion-exclusion
    (docs/emask.md#class-counts-by-inclusion-exclusion).

    ``sigma`` may be (n+1,) or (n+1, m) for m itemsets at once.
    """
    sigma = np.asarray(sigma, dtype=np.float64)
    n = sigma.shape[0] - 1
    c = np.zeros_like(sigma)
    for i in range(n + 1):
        for j in range(i, n + 1):
            c[i] += (-1) ** (j - i) * comb(j, i) * sigma[j]
    return c


def closed_form_estimate(subset_counts_by_size: list[np.ndarray], n: int, p: float, q: float) -> np.ndarray:
    """Unbiased support estimate of n-itemsets: Δ^-n Σ_{U⊆I} (-(1-q))^{n-|U|} N_D(U).

    ``subset_counts_by_size[j]`` holds, per itemset, the SUM of the distorted supports of its
    j-subsets (sigma_j; sigma_0 = N).
    """
    delta = p + q - 1.0
    c = 1.0 - q
    total = np.zeros_like(np.asarray(subset_counts_by_size[n], dtype=np.float64))
    for j in range(n + 1):
        total = total + (-c) ** (n - j) * np.asarray(subset_counts_by_size[j], dtype=np.float64)
    return total / delta**n


def closed_form_variance(subset_counts_by_size: list[np.ndarray], n: int, p: float, q: float, estimate: np.ndarray) -> np.ndarray:
    """Unbiased estimate of Var ŝ(I) from distorted counts alone
    (docs/emask.md#addition-a-standard-error-from-the-distorted-data):
    Δ^-2n Σ_{U⊆I} (1-2c)^{|U|} c^{2(n-|U|)} N_D(U) − ŝ(I), c = 1 - q."""
    delta = p + q - 1.0
    c = 1.0 - q
    total = np.zeros_like(np.asarray(estimate, dtype=np.float64))
    for j in range(n + 1):
        total = total + (1 - 2 * c) ** j * c ** (2 * (n - j)) * np.asarray(subset_counts_by_size[j], dtype=np.float64)
    return total / delta ** (2 * n) - estimate
