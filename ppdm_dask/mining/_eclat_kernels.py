"""Per-block kernels of the partition strategy (pure numpy/numba; no dask).

:func:`mine_block` is a depth-first vertical miner (Eclat, Zaki 2000) on the packed row masks
of :func:`~ppdm_dask.mining._kernels.build_bitsets`: the bitset of an itemset X + b is that of X
ANDed with the bitset of item b, computed once and kept on a stack of one bitset per depth, so
every candidate costs one AND + popcount over the block's words (the level-wise counter ANDs
the k - 1 items of a candidate's prefix again at every level). Candidates are pruned by the
local threshold, by the globally frequent pairs, and by what the other blocks can add at most
(bounded by the pairs' global counts). :func:`count_itemsets` counts a given list
of itemsets the same way (a shared prefix is ANDed once).
"""

from __future__ import annotations

import numpy as np

from ._kernels import _numba

__all__ = ["mine_block", "count_itemsets", "LocalResult", "available"]

#: (lengths (m,) int32, items flat int32 = positions into the block's bitsets, counts (m,) int64, complete)
LocalResult = tuple[np.ndarray, np.ndarray, np.ndarray, bool]


def available() -> bool:
    """The compiled kernels exist (numba installed): the partition strategy can run."""
    return _numba is not None


if _numba is not None:
    from ..bitops import ctpop

    @_numba.njit(cache=True, nogil=True)
    def _and_into(out, x, y):  # pragma: no cover - compiled
        for w in range(out.size):
            out[w] = x[w] & y[w]

    @_numba.njit(cache=True, nogil=True)
    def _count1(x, y):  # pragma: no cover - compiled
        s = np.uint64(0)
        for w in range(x.size):
            s += ctpop(x[w] & y[w])
        return np.int64(s)

    @_numba.njit(cache=True, nogil=True)
    def _count4(x, y0, y1, y2, y3, out, o):  # pragma: no cover - compiled
        # four extensions of one prefix per sweep: each word of the prefix is loaded once
        s0 = np.uint64(0)
        s1 = np.uint64(0)
        s2 = np.uint64(0)
        s3 = np.uint64(0)
        for w in range(x.size):
            xw = x[w]
            s0 += ctpop(xw & y0[w])
            s1 += ctpop(xw & y1[w])
            s2 += ctpop(xw & y2[w])
            s3 += ctpop(xw & y3[w])
        out[o] = np.int64(s0)
        out[o + 1] = np.int64(s1)
        out[o + 2] = np.int64(s2)
        out[o + 3] = np.int64(s3)

    @_numba.njit(cache=True, nogil=True)
    def _grow2(a, rows):  # pragma: no cover - compiled
        out = np.zeros((rows, a.shape[1]), a.dtype)
        out[: a.shape[0]] = a
        return out

    @_numba.njit(cache=True, nogil=True)
    def _grow1(a, rows):  # pragma: no cover - compiled
        out = np.zeros(rows, a.dtype)
        out[: a.size] = a
        return out

    @_numba.njit(cache=True, nogil=True)
    def _mine_loop(bits, pair_total, min_count, global_count, max_len, max_out, roots, bounds):  # pragma: no cover - compiled
        # State at depth d: the node X = path[0..d-1]; tails[d, :tlen[d]] the items c with X + c
        # kept, tcnt their counts, teb the bound min over x in X of elsewhere(x, c), nb[d] the
        # bound of X itself (min over its pairs). elsewhere(a, b) = pair_total[a, b] - the pair's
        # count here >= the pair's count in the other blocks >= that of any superset there.
        f, n_words = bits.shape
        big = np.int64(1) << np.int64(62)
        depth_cap = f if max_len <= 0 else min(f, max_len)
        # filled row by row, roots taken last to first; only with ``bounds`` (several blocks: with
        # one block the bound is implied by the local threshold, which is the global one)
        elsewhere = np.zeros((f, f) if bounds else (1, 1), np.int32)
        # the stack grows with the search (f x f rows of it would not fit on wide data)
        alloc = min(depth_cap + 1, 16)
        pbits = np.zeros((alloc, n_words), np.uint64)  # pbits[d]: bitset of path[0..d] (d >= 1)
        tails = np.zeros((alloc, f), np.int32)
        tcnt = np.zeros((alloc, f), np.int64)
        teb = np.zeros((alloc, f), np.int64)
        nb = np.zeros(alloc, np.int64)
        tlen = np.zeros(alloc, np.int64)
        tidx = np.zeros(alloc, np.int64)
        path = np.zeros(alloc, np.int32)
        cand = np.empty(f, np.int32)
        cpos = np.empty(f, np.int64)
        ccnt = np.empty(f, np.int64)
        # output: every kept itemset of length >= 3, roots last to first, each root's subtree in
        # lexicographic preorder
        cap = 1024
        out_len = np.empty(cap, np.int32)
        out_cnt = np.empty(cap, np.int64)
        icap = 8 * cap
        out_items = np.empty(icap, np.int32)
        n_out = 0
        n_items_out = 0
        for i in range(f):
            tails[0, i] = i
            teb[0, i] = big
        tlen[0] = roots.size
        nb[0] = big
        d = 0
        while d >= 0:
            if tidx[d] >= tlen[d]:
                d -= 1
                continue
            i = tidx[d] if d > 0 else roots[tidx[0]]  # (with bounds) roots from the last: their pairs are then known
            tidx[d] += 1
            b = tails[d, i]
            path[d] = b
            k = d + 1  # length of Y = path[0..d]
            y_bound = min(nb[d], teb[d, i])
            if k >= 3:
                if n_out >= max_out:
                    return out_len[:n_out], out_items[:n_items_out], out_cnt[:n_out], False
                if n_out == cap:
                    cap *= 2
                    out_len = _grow1(out_len, cap)
                    out_cnt = _grow1(out_cnt, cap)
                if n_items_out + k > icap:
                    icap = max(2 * icap, n_items_out + k)
                    out_items = _grow1(out_items, icap)
                out_len[n_out] = k
                out_cnt[n_out] = tcnt[d, i]
                for j in range(k):
                    out_items[n_items_out + j] = path[j]
                n_items_out += k
                n_out += 1
            if k >= depth_cap:
                continue
            # candidates Y + c: c a later item kept with X, its pair with b globally frequent
            n_c = 0
            if d == 0:
                for c in range(b + 1, f):
                    if pair_total[b, c] > 0:
                        cand[n_c] = c
                        cpos[n_c] = c
                        n_c += 1
            else:
                for j in range(i + 1, tlen[d]):
                    c = tails[d, j]
                    if pair_total[b, c] > 0:
                        cand[n_c] = c
                        cpos[n_c] = j
                        n_c += 1
            if n_c == 0:
                continue
            if d + 1 >= alloc:
                grow = min(depth_cap + 1, 2 * alloc)
                pbits = _grow2(pbits, grow)
                tails = _grow2(tails, grow)
                tcnt = _grow2(tcnt, grow)
                teb = _grow2(teb, grow)
                nb = _grow1(nb, grow)
                tlen = _grow1(tlen, grow)
                tidx = _grow1(tidx, grow)
                path = _grow1(path, grow)
                alloc = grow
            if d == 0:
                px = bits[b]
            elif d == 1:
                _and_into(pbits[1], bits[path[0]], bits[b])
                px = pbits[1]
            else:
                _and_into(pbits[d], pbits[d - 1], bits[b])
                px = pbits[d]
            j = 0
            while j + 4 <= n_c:
                _count4(px, bits[cand[j]], bits[cand[j + 1]], bits[cand[j + 2]], bits[cand[j + 3]], ccnt, j)
                j += 4
            while j < n_c:
                ccnt[j] = _count1(px, bits[cand[j]])
                j += 1
            n = 0
            for j in range(n_c):
                c = cand[j]
                if not bounds:
                    eb = big
                elif d == 0:  # the pair's count here: what the other blocks can add
                    e = np.int32(pair_total[b, c] - ccnt[j])
                    elsewhere[b, c] = e
                    elsewhere[c, b] = e
                    eb = np.int64(e)
                else:
                    eb = min(teb[d, cpos[j]], np.int64(elsewhere[b, c]))
                # kept: frequent here, and able to reach the global threshold with the most
                # the other blocks can add (anti-monotone, so subtrees are cut)
                if ccnt[j] >= min_count and ccnt[j] + min(y_bound, eb) >= global_count:
                    tails[d + 1, n] = c
                    tcnt[d + 1, n] = ccnt[j]
                    teb[d + 1, n] = eb
                    n += 1
            if n > 0:
                tlen[d + 1] = n
                tidx[d + 1] = 0
                nb[d + 1] = y_bound
                d += 1
        return out_len[:n_out], out_items[:n_items_out], out_cnt[:n_out], True

    @_numba.njit(cache=True, nogil=True)
    def _count_loop(bits, lengths, items, out):  # pragma: no cover - compiled
        n_words = bits.shape[1]
        max_k = 0
        for t in range(lengths.size):
            max_k = max(max_k, lengths[t])
        pbits = np.zeros((max(1, max_k), n_words), np.uint64)  # pbits[j]: AND of the first j + 1 items
        path = np.full(max(1, max_k), -1, np.int64)
        depth = 0  # number of valid rows of pbits (the current path's length)
        off = 0
        for t in range(lengths.size):
            k = lengths[t]
            same = 0  # shared prefix with the path whose ANDs are on the stack
            while same < min(depth, k - 1) and path[same] == items[off + same]:
                same += 1
            for j in range(same, k - 1):
                it = items[off + j]
                if j == 0:
                    pbits[0, :] = bits[it]
                else:
                    _and_into(pbits[j], pbits[j - 1], bits[it])
                path[j] = it
            depth = k - 1
            last = items[off + k - 1]
            if k == 1:
                s = np.uint64(0)
                row = bits[last]
                for w in range(n_words):
                    s += ctpop(row[w])
                out[t] = np.int64(s)
            else:
                out[t] = _count1(pbits[k - 2], bits[last])
            off += k


def mine_block(
    bits: np.ndarray,
    pair_total: np.ndarray,
    min_count: int,
    global_count: int,
    max_length: int | None,
    max_out: int,
    threads: int = 1,
) -> LocalResult:
    """Every itemset of length >= 3 kept by this block's local search.

    An itemset is kept when its count here is at least ``min_count`` (the block's threshold) and
    its count here plus the most the other blocks can add reaches ``global_count``: those can
    add no more than ``pair_total - (the pair's count here)`` for any pair of the itemset. Both
    conditions hold for every itemset that is globally frequent and frequent in this block.

    Parameters
    ----------
    bits : (f, n_words) uint64
        Row masks of the block's items (positions ``0..f-1``).
    pair_total : (f, f) int32
        Global counts of the frequent pairs (symmetric), 0 for the others: only frequent pairs
        are joined.
    min_count : int
        The block's threshold.
    global_count : int
        The global threshold (with one block, equal to ``min_count``).
    max_length : int or None
        Longest itemsets to mine.
    max_out : int
        Stop after this many itemsets (``complete`` is then False and the result is partial).
    threads : int
        With one block (``min_count == global_count``) the roots' subtrees are independent: they
        are searched by this many threads (the kernel releases the GIL), roots dealt out in
        interleaved chunks so that the heavy first roots are spread. The result is the same
        itemsets in another order of roots, which :func:`split_by_length` does not depend on.

    Returns
    -------
    lengths, items, counts, complete
        Every itemset's positions (ascending) one after the other; see :func:`split_by_length`.
    """
    bits = np.ascontiguousarray(bits, dtype=np.uint64)
    f = bits.shape[0]
    if f == 0:
        return np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int64), True
    pair_total = np.ascontiguousarray(pair_total, dtype=np.int32)
    args = (np.int64(min_count), np.int64(global_count), np.int64(0 if max_length is None else max_length), np.int64(max_out))
    bounds = global_count > min_count  # several blocks: what the others can add prunes too
    order = np.arange(f - 1, -1, -1, dtype=np.int64)  # roots last to first
    if threads <= 1 or bounds or f < 2 * _ROOTS_PER_CHUNK:
        ln, it, ct, complete = _mine_loop(bits, pair_total, *args, order, bounds)
        return ln.copy(), it.copy(), ct.copy(), bool(complete)
    from concurrent.futures import ThreadPoolExecutor

    n_chunks = min(f // _ROOTS_PER_CHUNK, 8 * threads)
    chunks = [order[j::n_chunks] for j in range(n_chunks)]
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ppdm-eclat") as pool:
        parts = list(pool.map(lambda roots: _mine_loop(bits, pair_total, *args, roots, False), chunks))
    complete = all(p[3] for p in parts)
    lengths = np.concatenate([p[0] for p in parts])
    items = np.concatenate([p[1] for p in parts])
    counts = np.concatenate([p[2] for p in parts])
    if lengths.size > max_out:  # each chunk stopped at max_out on its own
        complete = False
        keep = int(max_out)
        items, lengths, counts = items[: int(lengths[:keep].sum())], lengths[:keep], counts[:keep]
    return lengths, items, counts, bool(complete)


#: Roots per chunk of a threaded search (at least): a chunk's call costs its own stack.
_ROOTS_PER_CHUNK = 2


def count_itemsets(bits: np.ndarray, lengths: np.ndarray, items: np.ndarray) -> np.ndarray:
    """Counts in this block of the itemsets ``items`` (positions, one itemset after the other,
    each of ``lengths[t]`` items). Consecutive itemsets sharing a prefix AND it once, so a list in
    lexicographic order costs about one AND per itemset."""
    lengths = np.asarray(lengths, np.int64)
    out = np.zeros(lengths.size, np.int64)
    if lengths.size:
        _count_loop(np.ascontiguousarray(bits, dtype=np.uint64), lengths, np.asarray(items, np.int64), out)
    return out


def split_by_length(result: LocalResult) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """``{k: (rows (n_k, k) int32, counts)}`` of a :func:`mine_block` result, rows in
    lexicographic order: each root's subtree comes out in lexicographic preorder, the roots last
    to first, so a stable sort on the first item suffices."""
    lengths, items, counts, _ = result
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    if lengths.size == 0:
        return out
    offsets = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    # one stable sort by (length, first item) instead of a scan and a sort per length
    order = np.lexsort((items[offsets[:-1]], lengths))
    by_len = lengths[order]
    cuts = np.concatenate(([0], np.flatnonzero(by_len[1:] != by_len[:-1]) + 1, [order.size]))
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        idx = order[a:b]
        k = int(by_len[a])
        rows = items[offsets[idx][:, None] + np.arange(k)]
        out[k] = (rows.astype(np.int32, copy=False), counts[idx])
    return out


def count_missing(
    bits: np.ndarray, result: LocalResult, query: list[tuple[int, np.ndarray]], rows_of: np.ndarray | None = None
) -> np.ndarray:
    """The counts in this block of the ``query`` itemsets (per length k, an ``(n, k)`` array of
    positions) that its local result ``result`` does not hold, 0 for those it holds (the driver
    already added their counts); concatenated in the order of ``query``.

    ``rows_of``: the sorted positions whose bitsets ``bits`` holds, in order (default: all)."""
    from .candidates import RowIndex

    local = split_by_length(result)
    parts = []
    for k, rows in query:
        out = np.zeros(rows.shape[0], np.int64)
        found = RowIndex(local[k][0]).find(rows)[1] if k in local else np.zeros(rows.shape[0], bool)
        miss = np.flatnonzero(~found)
        if miss.size:
            flat = rows[miss].ravel()
            if rows_of is not None:
                flat = np.searchsorted(rows_of, flat)
            out[miss] = count_itemsets(bits, np.full(miss.size, k, np.int64), flat)
        parts.append(out)
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)
