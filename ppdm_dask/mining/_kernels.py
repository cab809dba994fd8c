"""Per-block support-counting kernels (pure numpy/scipy; no dask).

Counting never uses boolean products (``bool @ bool`` is a logical OR). Level 2 counts pairs with
an int32 ``X.T @ X`` over the frequent columns; longer itemsets AND packed uint64 row masks
(bit r of word w of item i = row 64 w + r contains item i) and count bits with
``np.bitwise_count``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["restrict_columns", "pair_counts", "build_bitsets", "count_extensions", "MAX_CHUNK_BYTES"]

#: Bound on the temporary AND buffer of :func:`count_extensions`.
MAX_CHUNK_BYTES = 32 * 2**20


def restrict_columns(block: sp.csr_array, items: np.ndarray) -> sp.csr_array:
    """The block restricted to the sorted column ids ``items``, renumbered ``0..len(items)-1``.

    Vectorised (no scipy fancy indexing): a lookup table maps kept columns, order preserved.
    """
    n_cols = block.shape[1]
    pos = np.full(n_cols, -1, dtype=np.int32)
    pos[items] = np.arange(items.size, dtype=np.int32)
    mapped = pos[block.indices]
    keep = mapped >= 0
    kept_before = np.zeros(keep.size + 1, dtype=np.int64)
    np.cumsum(keep, out=kept_before[1:])
    indptr = kept_before[block.indptr].astype(np.int32)
    data = np.ones(int(indptr[-1]), dtype=np.int32)
    return sp.csr_array((data, mapped[keep], indptr), shape=(block.shape[0], items.size))


def pair_counts(block: sp.csr_array, items: np.ndarray) -> np.ndarray:
    """Support counts of every pair ``(items[a], items[b])``, ``a < b``, in ``np.triu_indices``
    order (int64). One int32 sparse product ``X.T @ X`` per block."""
    f = items.size
    x = restrict_columns(block, items)
    gram = (x.T @ x).toarray()
    iu = np.triu_indices(f, 1)
    return gram[iu].astype(np.int64)


def build_bitsets(block: sp.csr_array, items: np.ndarray) -> np.ndarray:
    """Packed row masks, shape ``(len(items), ceil(rows / 64))`` uint64, of the given columns."""
    x = restrict_columns(block, items)
    n_rows = x.shape[0]
    n_words = max(1, (n_rows + 63) // 64)
    bits = np.zeros(items.size * n_words, dtype=np.uint64)
    if x.indices.size:
        rows = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(x.indptr))
        key = x.indices.astype(np.int64) * n_words + (rows >> 6)
        val = np.left_shift(np.uint64(1), (rows & 63).astype(np.uint64))
        order = np.argsort(key, kind="stable")
        key, val = key[order], val[order]
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        bits[key[starts]] = np.bitwise_or.reduceat(val, starts)
    return bits.reshape(items.size, n_words)


def count_extensions(bits: np.ndarray, parents: np.ndarray, parent_of: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Counts of candidates ``parents[parent_of[c]] + (last[c],)`` in one block.

    Parameters
    ----------
    bits : (n_items, n_words) uint64 from :func:`build_bitsets`.
    parents : (g, k-1) int positions into ``bits``: the distinct (k-1)-prefixes.
    parent_of : (m,) index into ``parents`` of each candidate (non-decreasing).
    last : (m,) position of each candidate's last item.

    The AND of a prefix is computed once per prefix, in chunks that bound memory.
    """
    m = parent_of.size
    out = np.zeros(m, dtype=np.int64)
    if m == 0:
        return out
    n_words = bits.shape[1]
    per_chunk = max(1, MAX_CHUNK_BYTES // (8 * n_words))
    # chunk over candidates; parents needed by a chunk are a contiguous range (parent_of sorted)
    for s in range(0, m, per_chunk):
        e = min(m, s + per_chunk)
        p_lo, p_hi = int(parent_of[s]), int(parent_of[e - 1]) + 1
        pb = bits[parents[p_lo:p_hi, 0]].copy()
        for j in range(1, parents.shape[1]):
            pb &= bits[parents[p_lo:p_hi, j]]
        acc = pb[parent_of[s:e] - p_lo]
        acc &= bits[last[s:e]]
        out[s:e] = np.bitwise_count(acc).sum(axis=1, dtype=np.int64)
    return out
