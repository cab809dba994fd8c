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


#: Above this many pairs, level 2 uses the sparse product instead of a dense bincount.
MAX_DENSE_PAIRS = 2**24
#: Bound on the pair codes materialised at once by :func:`pair_counts`.
MAX_PAIRS_PER_CHUNK = 2**23


try:  # numba ships with pydata ``sparse`` (a dependency); the numpy path below is the fallback
    import numba as _numba
except ImportError:  # pragma: no cover
    _numba = None

if _numba is not None:

    @_numba.njit(cache=True, nogil=True)
    def _pair_loop(indptr, ids, base, out):  # pragma: no cover - compiled
        for r in range(indptr.size - 1):
            start, end = indptr[r], indptr[r + 1]
            for i in range(start, end):
                row_base = base[ids[i]]
                for j in range(i + 1, end):
                    out[row_base + ids[j]] += 1


def pair_counts(block: sp.csr_array, items: np.ndarray, *, engine: str = "auto") -> np.ndarray:
    """Support counts of every pair ``(items[a], items[b])``, ``a < b``, in ``np.triu_indices``
    order (int64).

    Every pair inside each (restricted) row is coded by its triangular index and counted: by a
    compiled loop (numba, ``engine="numba"``, the default when available) or by vectorised
    numpy (``engine="numpy"``: codes per in-row offset and one ``bincount``, in row chunks that
    bound memory). Work is sum(len^2)/2 either way. For very many frequent items an int32 sparse
    ``X.T @ X`` is used instead.
    """
    f = int(items.size)
    n_pairs = f * (f - 1) // 2
    x = restrict_columns(block, items)
    if n_pairs > MAX_DENSE_PAIRS:
        gram = (x.T.tocsr() @ x).tocoo()
        a, b = gram.row.astype(np.int64), gram.col.astype(np.int64)
        upper = a < b
        out = np.zeros(n_pairs, dtype=np.int64)
        out[_tri_index(a[upper], b[upper], f)] = gram.data[upper]
        return out
    out = np.zeros(n_pairs, dtype=np.int64)
    if x.indices.size == 0:
        return out
    # code of pair (a, b) = base[a] + b, the pair's position in np.triu_indices order
    a_ = np.arange(f, dtype=np.int64)
    base = (a_ * (2 * f - a_ - 1) // 2 - a_ - 1).astype(np.int32 if n_pairs < 2**31 else np.int64)
    if engine not in ("auto", "numba", "numpy"):
        raise ValueError(f"unknown engine {engine!r}")
    if _numba is not None and engine != "numpy":
        # compiled loop, releases the GIL so threads count blocks in parallel; int32 counters
        # (a block has < 2^31 rows) halve the cache footprint of the random increments
        acc = np.zeros(n_pairs, dtype=np.int32)
        _pair_loop(x.indptr, x.indices, base.astype(np.int32, copy=False) if n_pairs < 2**31 else base, acc)
        return acc.astype(np.int64)
    indptr = x.indptr.astype(np.int64)
    lengths = np.diff(indptr)
    cum = np.cumsum(lengths * (lengths - 1) // 2)
    start_row, n_rows = 0, lengths.size
    while start_row < n_rows:
        done = cum[start_row - 1] if start_row else 0
        stop_row = min(n_rows, max(start_row + 1, int(np.searchsorted(cum, done + MAX_PAIRS_PER_CHUNK, side="right"))))
        lo, hi = int(indptr[start_row]), int(indptr[stop_row])
        ids = x.indices[lo:hi]
        # later items in the same row, for each position
        later = (np.repeat(indptr[start_row + 1 : stop_row + 1] - lo, lengths[start_row:stop_row]) - np.arange(1, hi - lo + 1)).astype(np.int32)
        codes = np.empty(int(cum[stop_row - 1] - done), dtype=base.dtype)
        # positions by decreasing number of later items (stable radix sort on small ints): the
        # positions with at least d later items are then a prefix, for every offset d
        small = later.astype(np.int16) if later.size and later.max() < 2**15 else later
        order = np.argsort(-small, kind="stable").astype(np.int32)
        n_with = np.bincount(later, minlength=1)[::-1].cumsum()[::-1]  # n_with[d] = #(later >= d)
        left = base[ids[order]]
        filled = 0
        for d in range(1, n_with.size):
            k = int(n_with[d])
            # pairs (p, p + d) for every position p with at least d later items in its row
            np.add(left[:k], ids[order[:k] + d], out=codes[filled : filled + k])
            filled += k
        out += np.bincount(codes, minlength=n_pairs)
        start_row = stop_row
    return out


def _tri_index(a: np.ndarray, b: np.ndarray, f: int) -> np.ndarray:
    """Position of pair (a, b), a < b, in ``np.triu_indices(f, 1)`` order."""
    return a * (2 * f - a - 1) // 2 + (b - a - 1)


def build_bitsets(block: sp.csr_array, items: np.ndarray) -> np.ndarray:
    """Packed row masks, shape ``(len(items), ceil(rows / 64))`` uint64, of the given columns."""
    x = restrict_columns(block, items)
    n_rows = x.shape[0]
    n_words = max(1, (n_rows + 63) // 64)
    bits = np.zeros(items.size * n_words, dtype=np.uint64)
    if x.indices.size:
        # column-major order: entries sorted by (item, row), hence by (item, word)
        xc = x.tocsc()
        xc.sort_indices()
        rows = xc.indices.astype(np.int64)
        cols = np.repeat(np.arange(items.size, dtype=np.int64), np.diff(xc.indptr))
        key = cols * n_words + (rows >> 6)
        val = np.left_shift(np.uint64(1), (rows & 63).astype(np.uint64))
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
