"""Per-block support-counting kernels (pure numpy/scipy; no dask).

Counting never uses boolean products (``bool @ bool`` is a logical OR). Level 2 enumerates the
pairs of frequent items inside every row (compiled loop; vectorised numpy and sparse ``X.T @ X``
fallbacks); longer itemsets AND packed uint64 row masks (bit r of word w of item i = row 64 w + r
contains item i) and count bits with ``np.bitwise_count``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = [
    "restrict_columns",
    "pair_counts",
    "pair_counts_bits",
    "item_counts_and_work",
    "build_bitsets",
    "count_extensions",
    "MAX_CHUNK_BYTES",
]

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

#: Rows counted into 16-bit accumulators before they are flushed into the 64-bit totals: a pair
#: gains at most one per row, so 65,535 rows cannot overflow (see :func:`_flush_window`). Half-width counters keep the
#: triangle of a ~900-item level in L2 cache, where the random increments are cheap.
FLUSH_ROWS = 65535
#: :func:`pair_counts` uses its threads from this many pairs (2 MiB of 16-bit counters: below,
#: the counters stay in cache and the loop is fast on one thread) and this many increments
#: (below, reading every row once more per thread costs more than it saves).
THREAD_MIN_PAIRS = 2**20
THREAD_MIN_INCREMENTS = 2_000_000

if _numba is not None:

    @_numba.njit(cache=True, nogil=True)
    def _item_counts_loop(indptr, indices, out):  # pragma: no cover - compiled
        # one pass: the supports into out[:-1], the sum of squared row lengths into out[-1]
        # (np.bincount on int32 ids converts them to intp first: ~3.5x slower on 20 M entries)
        work = np.int64(0)
        for r in range(indptr.size - 1):
            lo, hi = indptr[r], indptr[r + 1]
            for e in range(lo, hi):
                out[indices[e]] += 1
            n = np.int64(hi - lo)
            work += n * n
        out[out.size - 1] = work

    @_numba.njit(cache=True, nogil=True)
    def _pair_loop(indptr, indices, pos, base, lo, hi, window, out):  # pragma: no cover - compiled
        # the pairs (a, b) with lo <= a < hi: a contiguous range of ``out`` (triu order), so
        # threads with disjoint ranges share nothing. Restriction to the counted items is fused
        # in: ``pos`` maps a column id to its position among them (-1 = not counted); positions
        # keep the row's sorted order. The 16-bit counters are flushed every ``window`` rows.
        n_rows = indptr.size - 1
        f = base.size
        start = base[lo] + lo + 1 if lo < f else out.size  # code of pair (lo, lo + 1)
        stop = base[hi] + hi + 1 if hi < f else out.size
        acc = np.zeros(max(0, stop - start), np.uint16)
        row = np.empty(pos.size, np.int32)
        r0 = 0
        while r0 < n_rows:
            r1 = min(n_rows, r0 + window)
            for r in range(r0, r1):
                n = 0
                for i in range(indptr[r], indptr[r + 1]):
                    p = pos[indices[i]]
                    if p >= 0:
                        row[n] = p
                        n += 1
                for i in range(n):
                    a = row[i]
                    if a < lo:
                        continue
                    if a >= hi:
                        break
                    row_base = base[a] - start
                    for j in range(i + 1, n):
                        acc[row_base + row[j]] += 1
            if r1 < n_rows:
                for t in range(acc.size):
                    out[start + t] += acc[t]
                    acc[t] = 0
            else:
                for t in range(acc.size):
                    out[start + t] += acc[t]
            r0 = r1

    @_numba.njit(cache=True, nogil=True)
    def _pair_work(indptr, indices, pos, work):  # pragma: no cover - compiled
        # work[a] = the increments of the pairs whose first position is a (to split them evenly)
        row = np.empty(pos.size, np.int32)
        for r in range(indptr.size - 1):
            n = 0
            for i in range(indptr[r], indptr[r + 1]):
                p = pos[indices[i]]
                if p >= 0:
                    row[n] = p
                    n += 1
            for i in range(n):
                work[row[i]] += n - 1 - i

    @_numba.njit(cache=True, nogil=True)
    def _bitset_loop(indptr, indices, pos, n_words, bits):  # pragma: no cover - compiled
        for r in range(indptr.size - 1):
            word = r >> 6
            bit = np.uint64(1) << np.uint64(r & 63)
            for i in range(indptr[r], indptr[r + 1]):
                p = pos[indices[i]]
                if p >= 0:
                    bits[p * n_words + word] |= bit

    from ..bitops import gram_range  # shared by every family's kernels

    @_numba.njit(cache=True, nogil=True)
    def _gram_loop(bits, out):  # pragma: no cover - compiled
        gram_range(bits, 0, bits.shape[0], out)


def _flush_window(block: sp.csr_array, items: np.ndarray) -> int:
    """Rows counted into the 16-bit accumulators of :func:`pair_counts` between two flushes: all
    of them when no pair can pass 65,535 (a pair's count is at most its second item's, so when
    at most one counted item has a larger support), else :data:`FLUSH_ROWS`. Each flush reads and
    writes every pair's 64-bit total: on retail (7.7 M pairs, 88,162 rows) the one it saves costs
    more than the item counts that prove it unneeded."""
    n_rows = block.shape[0]
    if n_rows <= FLUSH_ROWS:
        return max(1, n_rows)
    counts = np.bincount(block.indices, minlength=block.shape[1])[items]
    return n_rows if int(np.count_nonzero(counts > FLUSH_ROWS)) <= 1 else FLUSH_ROWS


def _positions(n_cols: int, items: np.ndarray) -> np.ndarray:
    """Lookup table column id -> position in the sorted ``items`` (-1 elsewhere)."""
    pos = np.full(n_cols, -1, dtype=np.int32)
    pos[items] = np.arange(items.size, dtype=np.int32)
    return pos


def pair_counts(block: sp.csr_array, items: np.ndarray, *, engine: str = "auto", threads: int = 1) -> np.ndarray:
    """Support counts of every pair ``(items[a], items[b])``, ``a < b``, in ``np.triu_indices``
    order (int64).

    Every pair inside each (restricted) row is coded by its triangular index and counted: by a
    compiled loop (numba, ``engine="numba"``, the default when available) or by vectorised
    numpy (``engine="numpy"``: codes per in-row offset and one ``bincount``, in row chunks that
    bound memory). Work is sum(len^2)/2 either way. For very many frequent items an int32 sparse
    ``X.T @ X`` is used instead.

    ``threads`` > 1 (compiled loop, :data:`THREAD_MIN_PAIRS` and :data:`THREAD_MIN_INCREMENTS`): the
    pairs are split by their first item into ranges of equal work, one thread each (the loop
    releases the GIL); each thread reads every row and counts its range only, into its own part
    of the output, so no memory is added and nothing is merged.
    """
    f = int(items.size)
    n_pairs = f * (f - 1) // 2
    if engine not in ("auto", "numba", "numpy"):
        raise ValueError(f"unknown engine {engine!r}")
    use_numba = _numba is not None and engine != "numpy" and n_pairs <= MAX_DENSE_PAIRS
    if use_numba:
        # code of pair (a, b) = base[a] + b, the pair's position in np.triu_indices order
        a_ = np.arange(f, dtype=np.int64)
        base = (a_ * (2 * f - a_ - 1) // 2 - a_ - 1).astype(np.int32)
        acc = np.zeros(n_pairs, dtype=np.int64)
        if block.nnz:
            pos = _positions(block.shape[1], items)
            ranges = [(0, f)]
            if threads > 1 and n_pairs >= THREAD_MIN_PAIRS:
                work = np.zeros(f, dtype=np.int64)
                _pair_work(block.indptr, block.indices, pos, work)
                total = int(work.sum())
                if total >= THREAD_MIN_INCREMENTS:
                    cuts = np.searchsorted(np.cumsum(work), total * np.arange(1, threads) / threads, side="right")
                    edges = np.unique(np.concatenate(([0], np.minimum(cuts, f), [f])))
                    ranges = list(zip(edges[:-1].tolist(), edges[1:].tolist()))
            window = _flush_window(block, items)
            if len(ranges) == 1:
                _pair_loop(block.indptr, block.indices, pos, base, 0, f, window, acc)
            else:
                from concurrent.futures import ThreadPoolExecutor

                with ThreadPoolExecutor(max_workers=len(ranges), thread_name_prefix="ppdm-pairs") as pool:
                    list(pool.map(lambda r: _pair_loop(block.indptr, block.indices, pos, base, r[0], r[1], window, acc), ranges))
        return acc
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
    base = a_ * (2 * f - a_ - 1) // 2 - a_ - 1
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
        later = (
            np.repeat(indptr[start_row + 1 : stop_row + 1] - lo, lengths[start_row:stop_row]) - np.arange(1, hi - lo + 1)
        ).astype(np.int32)
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


def pair_counts_bits(bits: np.ndarray, positions: np.ndarray, *, engine: str = "auto") -> np.ndarray:
    """Counts of all pairs of the bit rows ``positions`` (sorted), in ``np.triu_indices`` order.

    AND + population count over the packed row masks of :func:`build_bitsets`: the work is
    pairs x words, independent of how many items a row holds, so it beats pair enumeration on
    dense or distorted data (``SupportCounter`` chooses by a cost model).
    """
    f = int(positions.size)
    sub = np.ascontiguousarray(bits[positions])
    ia, ib = np.triu_indices(f, 1)
    if _numba is not None and engine != "numpy":
        gram = np.zeros((f, f), dtype=np.uint64)
        _gram_loop(sub, gram)
        return gram[ia, ib].astype(np.int64)
    out = np.zeros(ia.size, dtype=np.int64)
    per_chunk = max(1, MAX_CHUNK_BYTES // (8 * max(1, sub.shape[1])))
    for s in range(0, ia.size, per_chunk):
        e = min(ia.size, s + per_chunk)
        out[s:e] = np.bitwise_count(sub[ia[s:e]] & sub[ib[s:e]]).sum(axis=1, dtype=np.int64)
    return out


def item_counts_and_work(block: sp.csr_array) -> np.ndarray:
    """Item supports of one block followed by one extra entry: the sum of squared row lengths
    (the cost of enumerating pairs inside rows, for :class:`SupportCounter`'s choice)."""
    out = np.zeros(block.shape[1] + 1, dtype=np.int64)
    if _numba is not None:
        _item_counts_loop(block.indptr, block.indices, out)
        return out
    out[:-1] = np.bincount(block.indices, minlength=block.shape[1])
    lengths = np.diff(block.indptr).astype(np.int64)
    out[-1] = int(np.dot(lengths, lengths))
    return out


def _tri_index(a: np.ndarray, b: np.ndarray, f: int) -> np.ndarray:
    """Position of pair (a, b), a < b, in ``np.triu_indices(f, 1)`` order."""
    return a * (2 * f - a - 1) // 2 + (b - a - 1)


def build_bitsets(block: sp.csr_array, items: np.ndarray, *, engine: str = "auto") -> np.ndarray:
    """Packed row masks, shape ``(len(items), ceil(rows / 64))`` uint64, of the given columns
    (compiled single pass with numba, ``engine="numpy"`` for the vectorised CSC route)."""
    n_rows = block.shape[0]
    n_words = max(1, (n_rows + 63) // 64)
    bits = np.zeros(items.size * n_words, dtype=np.uint64)
    if _numba is not None and engine != "numpy":
        # one pass over the entries, no sort: O(nnz) (the CSC route below is O(nnz log nnz))
        if block.nnz:
            _bitset_loop(block.indptr, block.indices, _positions(block.shape[1], items), n_words, bits)
        return bits.reshape(items.size, n_words)
    x = restrict_columns(block, items)
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
