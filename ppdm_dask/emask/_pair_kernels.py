"""Per-block kernels of EMASK's level-2 block search (pure numpy/numba; no dask).

On distorted data every row holds about ``(1 - q) * d`` noise items, so enumerating the pairs
inside rows costs ~ rows x (counted items per row)^2 / 2 random increments, while the block
search ANDs the packed row masks of every pair of counted items and counts the bits: pairs x
rows / 64 streamed words, independent of how many items a row holds. Both are exact.

The kernels are compiled without the GIL, so one big block (a single partition) is split over
threads: the bitsets by ranges of 64-row words (each thread writes its own words), the pair
counts by ranges of first items (each thread writes its own rows of the count matrix).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..data.packed import PackedRows, packed_bitsets

try:  # numba ships with pydata ``sparse`` (a dependency); the numpy paths below are the fallback
    import numba as _numba
except ImportError:  # pragma: no cover
    _numba = None

__all__ = ["block_bitsets", "gram_pair_counts", "block_pair_counts", "item_ranges", "extension_counts", "query_counts"]

#: Bound on the temporary AND buffer of the numpy fallback.
MAX_CHUNK_BYTES = 32 * 2**20

if _numba is not None:
    # the pair kernel is exact mining's (ranges of first items: threads write disjoint rows)
    from ..bitops import and_count as _and_count
    from ..bitops import gram_range as _gram_range

    @_numba.njit(cache=True, nogil=True)
    def _bits_range(indptr, indices, pos, bits, r0, r1):  # pragma: no cover - compiled
        # rows r0 .. r1 - 1 (r0 a multiple of 64): only their words are written
        for r in range(r0, r1):
            word = r >> 6
            bit = np.uint64(1) << np.uint64(r & 63)
            for i in range(indptr[r], indptr[r + 1]):
                p = pos[indices[i]]
                if p >= 0:
                    bits[p, word] |= bit

    @_numba.njit(cache=True, nogil=True)
    def _extend_range(bits, parents, parent_of, last, c0, c1, out):  # pragma: no cover - compiled
        # candidates c0 .. c1 - 1 (parent_of non-decreasing): the AND of a prefix is built once
        # into one word buffer, then ANDed with each last item's row while counting
        n_words = bits.shape[1]
        buf = np.empty(n_words, np.uint64)
        current = -1
        for c in range(c0, c1):
            g = parent_of[c]
            if g != current:
                current = g
                first = bits[parents[g, 0]]
                for w in range(n_words):
                    buf[w] = first[w]
                for j in range(1, parents.shape[1]):
                    row = bits[parents[g, j]]
                    for w in range(n_words):
                        buf[w] &= row[w]
            out[c] = _and_count(buf, bits[last[c]])


def _run(jobs: list[Any], threads: int) -> None:
    """Run the zero-argument ``jobs`` (nogil kernels) on ``threads`` threads (inline for one)."""
    if threads <= 1 or len(jobs) <= 1:
        for job in jobs:
            job()
        return
    with ThreadPoolExecutor(max_workers=min(threads, len(jobs))) as pool:
        for fut in [pool.submit(job) for job in jobs]:
            fut.result()  # re-raise a kernel's error here


def _positions(n_cols: int, items: np.ndarray) -> np.ndarray:
    """Lookup table column id -> position in the sorted ``items`` (-1 elsewhere)."""
    pos = np.full(n_cols, -1, dtype=np.int32)
    pos[items] = np.arange(items.size, dtype=np.int32)
    return pos


def block_bitsets(block: Any, items: np.ndarray, threads: int = 1) -> np.ndarray:
    """Packed row masks ``(len(items), ceil(rows / 64))`` uint64 of the sorted column ids
    ``items`` (bit r of word w of item i: row 64 w + r holds item i), from a CSR block or packed
    rows (:mod:`ppdm_dask.data.packed`). ``threads`` > 1 splits the rows of a CSR block."""
    items = np.asarray(items, dtype=np.int32)
    if isinstance(block, PackedRows):
        return packed_bitsets(block, items)
    n_rows = int(block.shape[0])
    n_words = max(1, (n_rows + 63) // 64)
    bits = np.zeros((items.size, n_words), dtype=np.uint64)
    if block.nnz == 0 or items.size == 0:
        return bits
    indptr, indices = block.indptr, block.indices
    pos = _positions(int(block.shape[1]), items)
    if _numba is None:  # pragma: no cover - numba is installed with the package
        lengths = np.diff(indptr)
        rows = np.repeat(np.arange(n_rows, dtype=np.int64), lengths)
        p = pos[indices]
        keep = p >= 0
        rows, p = rows[keep], p[keep].astype(np.int64)
        np.bitwise_or.at(bits, (p, rows >> 6), np.left_shift(np.uint64(1), (rows & 63).astype(np.uint64)))
        return bits
    # ranges of whole words: no two threads write the same word
    step = 64 * max(1, -(-n_words // max(1, threads)))
    bounds = list(range(0, n_rows, step)) + [n_rows]
    _run(
        [lambda r0=r0, r1=r1: _bits_range(indptr, indices, pos, bits, r0, r1) for r0, r1 in zip(bounds[:-1], bounds[1:])],
        threads,
    )
    return bits


def item_ranges(f: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` ranges of first items ``[a0, a1)`` with about equal numbers of pairs (item a
    pairs with the f - 1 - a items after it); even bounds, as the kernel pairs first items."""
    if f < 2:
        return []
    work = np.cumsum(np.arange(f - 1, -1, -1, dtype=np.int64))  # pairs of the items 0 .. a
    cuts = np.searchsorted(work, work[-1] * np.arange(1, parts) / parts)
    bounds = sorted({0, f, *(int(c) + (int(c) & 1) for c in cuts if 0 < c < f)})
    return [(a0, a1) for a0, a1 in zip(bounds[:-1], bounds[1:]) if a0 < a1]


def gram_pair_counts(bits: np.ndarray, threads: int = 1) -> np.ndarray:
    """Counts of every pair of bit rows ``(a, b)``, ``a < b``, in ``np.triu_indices`` order
    (int64): AND + population count, threads over ranges of first items."""
    bits = np.ascontiguousarray(bits)
    f = int(bits.shape[0])
    ia, ib = np.triu_indices(f, 1)
    if _numba is None:  # pragma: no cover - numba is installed with the package
        out = np.zeros(ia.size, dtype=np.int64)
        per_chunk = max(1, MAX_CHUNK_BYTES // (8 * max(1, bits.shape[1])))
        for s in range(0, ia.size, per_chunk):
            e = min(ia.size, s + per_chunk)
            out[s:e] = np.bitwise_count(bits[ia[s:e]] & bits[ib[s:e]]).sum(axis=1, dtype=np.int64)
        return out
    gram = np.zeros((f, f), dtype=np.uint64)
    ranges = item_ranges(f, max(1, threads))
    _run([lambda a0=a0, a1=a1: _gram_range(bits, a0, a1, gram) for a0, a1 in ranges], threads)
    return gram[ia, ib].astype(np.int64)


def block_pair_counts(block: Any, items: np.ndarray, threads: int = 1) -> np.ndarray:
    """Counts of every pair of the sorted column ids ``items`` in one block (``np.triu_indices``
    order): its bitsets, then :func:`gram_pair_counts`."""
    return gram_pair_counts(block_bitsets(block, items, threads), threads)


def extension_counts(
    bits: np.ndarray, parents: np.ndarray, parent_of: np.ndarray, last: np.ndarray, threads: int = 1
) -> np.ndarray:
    """Counts of the candidates ``parents[parent_of[c]] + (last[c],)`` in one block (int64).

    ``parents``: ``(g, k - 1)`` positions into ``bits`` (the distinct prefixes); ``parent_of``:
    non-decreasing index into ``parents`` of each candidate; ``last``: each candidate's last
    item. A prefix's AND is built once; threads split the candidates."""
    m = int(parent_of.size)
    out = np.zeros(m, dtype=np.int64)
    if m == 0:
        return out
    parents = np.ascontiguousarray(parents, dtype=np.int64)
    parent_of = np.ascontiguousarray(parent_of, dtype=np.int64)
    last = np.ascontiguousarray(last, dtype=np.int64)
    if _numba is None:  # pragma: no cover - numba is installed with the package
        acc = bits[parents[parent_of, 0]].copy()
        for j in range(1, parents.shape[1]):
            acc &= bits[parents[parent_of, j]]
        acc &= bits[last]
        return np.bitwise_count(acc).sum(axis=1, dtype=np.int64)
    counts = np.zeros(m, dtype=np.uint64)
    parts = max(1, min(threads, m))
    bounds = sorted({0, m, *(m * i // parts for i in range(1, parts))})
    _run(
        [
            lambda c0=c0, c1=c1: _extend_range(bits, parents, parent_of, last, c0, c1, counts)
            for c0, c1 in zip(bounds[:-1], bounds[1:])
        ],
        threads,
    )
    out[:] = counts
    return out


def query_counts(bits: np.ndarray, queries: list[tuple[np.ndarray, np.ndarray, np.ndarray]], threads: int = 1) -> np.ndarray:
    """:func:`extension_counts` of every query ``(parents, parent_of, last)``, concatenated."""
    return np.concatenate([extension_counts(bits, *q, threads=threads) for q in queries])
