"""Per-block kernels of the partition strategy (pure numpy/numba; no dask).

:func:`mine_block` is a depth-first vertical miner (Eclat, Zaki 2000) on the packed row masks
of :func:`~ppdm_dask.mining._kernels.build_bitsets`: the bitset of an itemset X + b is that of X
ANDed with the bitset of item b, computed once and kept on a stack of one bitset per depth, so
every candidate costs one AND + popcount over the block's words (the level-wise counter ANDs
the k - 1 items of a candidate's prefix again at every level). Candidates are pruned by the
local threshold, by the globally frequent pairs, and by what the other blocks can add at most
(bounded by the pairs' global counts). :func:`count_itemsets` counts a given list
of itemsets the same way (a shared prefix is ANDed once).

Sparse data (low support on retail, click streams): a prefix whose support is small against
the block's words is kept as its listed nonzero words, so its extensions cost its support
rather than the block's words; a node's candidates come from the shorter of its tails and its
last item's list of frequent neighbours (a popular root has thousands of tails, a rare item a
few neighbours); with one block the roots' pair counts are the level-2 counts, not recounted.
"""

from __future__ import annotations

import numpy as np

from ._kernels import _numba

__all__ = ["mine_block", "pair_matrix", "count_itemsets", "LocalResult", "available"]

#: (lengths (m,) int32, items flat int32 = positions into the block's bitsets, counts (m,) int64, complete)
LocalResult = tuple[np.ndarray, np.ndarray, np.ndarray, bool]

#: Roots per chunk of a threaded search (at least): a chunk's call costs its own stack.
_ROOTS_PER_CHUNK = 2
#: A prefix's bitset is kept as its listed nonzero words when its support (a bound on them)
#: times this is at most the block's words: a listed word costs an index load and a gather,
#: about this many streamed (vectorised) words of the dense AND + popcount.
LISTED_WORDS_RATIO = 4
#: A node's tails are indexed for the neighbour walk (see ``_mine_loop``) from this many on.
STAMP_MIN_TAILS = 64


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
    def _compact_and(out_idx, out_val, x, y):  # pragma: no cover - compiled
        # the nonzero words of x & y, listed (index, value); returns how many
        # branch-free: every word is written, the count advances past the nonzero ones
        n = 0
        for w in range(x.size):
            v = x[w] & y[w]
            out_idx[n] = w
            out_val[n] = v
            n += v != 0
        return n

    @_numba.njit(cache=True, nogil=True)
    def _compact(out_idx, out_val, x):  # pragma: no cover - compiled
        n = 0
        for w in range(x.size):
            v = x[w]
            out_idx[n] = w
            out_val[n] = v
            n += v != 0
        return n

    @_numba.njit(cache=True, nogil=True)
    def _compact_and_listed(out_idx, out_val, idx, val, n, y):  # pragma: no cover - compiled
        # (listed words of a prefix) & y, listed: only the prefix's nonzero words are read
        m = 0
        for t in range(n):
            w = idx[t]
            v = val[t] & y[w]
            out_idx[m] = w
            out_val[m] = v
            m += v != 0
        return m

    @_numba.njit(cache=True, nogil=True)
    def _count1_listed(idx, val, n, y):  # pragma: no cover - compiled
        s = np.uint64(0)
        for t in range(n):
            s += ctpop(val[t] & y[idx[t]])
        return np.int64(s)

    @_numba.njit(cache=True, nogil=True)
    def _count4_listed(idx, val, n, y0, y1, y2, y3, out, o):  # pragma: no cover - compiled
        s0 = np.uint64(0)
        s1 = np.uint64(0)
        s2 = np.uint64(0)
        s3 = np.uint64(0)
        for t in range(n):
            w = idx[t]
            v = val[t]
            s0 += ctpop(v & y0[w])
            s1 += ctpop(v & y1[w])
            s2 += ctpop(v & y2[w])
            s3 += ctpop(v & y3[w])
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
    def _mine_loop(
        bits, pair_total, nbr_ptr, nbr_idx, nbr_cnt, min_count, global_count, max_len, max_out, roots, bounds
    ):  # pragma: no cover - compiled
        # State at depth d: the node X = path[0..d-1]; tails[d, :tlen[d]] the items c with X + c
        # kept, tcnt their counts, teb the bound min over x in X of elsewhere(x, c), nb[d] the
        # bound of X itself (min over its pairs). elsewhere(a, b) = pair_total[a, b] - the pair's
        # count here >= the pair's count in the other blocks >= that of any superset there.
        # nbr_*: the frequent pairs (b, c > b) as adjacency lists (see _upper_adjacency).
        f, n_words = bits.shape
        big = np.int64(1) << np.int64(62)
        depth_cap = f if max_len <= 0 else min(f, max_len)
        # filled row by row, roots taken last to first; only with ``bounds`` (several blocks: with
        # one block the bound is implied by the local threshold, which is the global one)
        elsewhere = np.zeros((f, f) if bounds else (1, 1), np.int32)
        # the stack grows with the search (f x f rows of it would not fit on wide data)
        alloc = min(depth_cap + 1, 16)
        # the bitset of path[0..d] at depth d, kind[d]: 0 = the root's own row bits[path[0]] (d = 0),
        # 1 = dense in pbits[d], 2 = its plen[d] nonzero words listed (pidx[d], pbits[d]). Sparse
        # data has few nonzero words per prefix: listing them makes every deeper AND and count
        # cost the prefix's support instead of the block's words.
        pbits = np.zeros((alloc, n_words), np.uint64)
        pidx = np.zeros((alloc, n_words), np.int32)
        kind = np.zeros(alloc, np.int64)
        plen = np.zeros(alloc, np.int64)
        tails = np.zeros((alloc, f), np.int32)
        # membership of tails[d]: c is in it iff stamp[d, c] == sid[d], at index mark[d, c]
        # (stamped, never cleared: a new node's tails get a new stamp)
        stamp = np.zeros((alloc, f), np.int64)
        mark = np.zeros((alloc, f), np.int32)
        sid = np.zeros(alloc, np.int64)
        next_sid = np.int64(0)
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
            # (the shorter of b's later neighbours and X's later tails is walked: on skewed data a
            # popular root has thousands of tails and its rare items a few neighbours each)
            n_c = 0
            lo = nbr_ptr[b]
            hi = nbr_ptr[b + 1]
            if d == 0:
                for t in range(lo, hi):
                    c = nbr_idx[t]
                    cand[n_c] = c
                    cpos[n_c] = c
                    ccnt[n_c] = nbr_cnt[t]
                    n_c += 1
            elif sid[d] < 0 or tlen[d] - i - 1 <= hi - lo:
                for j in range(i + 1, tlen[d]):
                    c = tails[d, j]
                    if pair_total[b, c] > 0:
                        cand[n_c] = c
                        cpos[n_c] = j
                        n_c += 1
            else:
                s_d = sid[d]
                for t in range(lo, hi):
                    c = nbr_idx[t]
                    if stamp[d, c] == s_d:  # c > b in the sorted tails: after position i
                        cand[n_c] = c
                        cpos[n_c] = mark[d, c]
                        n_c += 1
            if n_c == 0:
                continue
            if d + 1 >= alloc:
                grow = min(depth_cap + 1, 2 * alloc)
                pbits = _grow2(pbits, grow)
                pidx = _grow2(pidx, grow)
                kind = _grow1(kind, grow)
                plen = _grow1(plen, grow)
                tails = _grow2(tails, grow)
                stamp = _grow2(stamp, grow)
                mark = _grow2(mark, grow)
                sid = _grow1(sid, grow)
                tcnt = _grow2(tcnt, grow)
                teb = _grow2(teb, grow)
                nb = _grow1(nb, grow)
                tlen = _grow1(tlen, grow)
                tidx = _grow1(tidx, grow)
                path = _grow1(path, grow)
                alloc = grow
            # the bitset of Y = path[0..d], from the parent's (one level up, still on the stack)
            if d == 0:
                nz = _compact(pidx[0], pbits[0], bits[b])
                kind[0] = 2 if nz * LISTED_WORDS_RATIO <= n_words else 0
                plen[0] = nz
            elif kind[d - 1] == 2:
                plen[d] = _compact_and_listed(pidx[d], pbits[d], pidx[d - 1], pbits[d - 1], plen[d - 1], bits[b])
                kind[d] = 2
            else:
                x = bits[path[0]] if kind[d - 1] == 0 else pbits[d - 1]
                if tcnt[d, i] * LISTED_WORDS_RATIO <= n_words:  # at most that many nonzero words
                    plen[d] = _compact_and(pidx[d], pbits[d], x, bits[b])
                    kind[d] = 2
                else:
                    _and_into(pbits[d], x, bits[b])
                    kind[d] = 1
            if d == 0 and not bounds:
                pass  # one block: the pairs' totals (set above) are their counts here
            elif kind[d] == 2:
                n_l = plen[d]
                j = 0
                while j + 4 <= n_c:
                    y0, y1, y2, y3 = bits[cand[j]], bits[cand[j + 1]], bits[cand[j + 2]], bits[cand[j + 3]]
                    _count4_listed(pidx[d], pbits[d], n_l, y0, y1, y2, y3, ccnt, j)
                    j += 4
                while j < n_c:
                    ccnt[j] = _count1_listed(pidx[d], pbits[d], n_l, bits[cand[j]])
                    j += 1
            else:
                px = bits[b] if d == 0 else pbits[d]
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
                sid[d + 1] = -1  # short tails are always walked: not worth stamping
                if n >= STAMP_MIN_TAILS:
                    next_sid += 1
                    sid[d + 1] = next_sid
                    for j in range(n):
                        stamp[d + 1, tails[d + 1, j]] = next_sid
                        mark[d + 1, tails[d + 1, j]] = j
                tlen[d + 1] = n
                tidx[d + 1] = 0
                nb[d + 1] = y_bound
                d += 1
        return out_len[:n_out], out_items[:n_items_out], out_cnt[:n_out], True

    @_numba.njit(cache=True, nogil=True)
    def _split_kernel(lengths, items, counts, max_k, n_first):  # pragma: no cover - compiled
        # stable counting sort of the itemsets by (length, first item); output grouped by
        # length (ascending), rows one after the other
        m = lengths.size
        slot = np.zeros((max_k + 1) * n_first + 1, np.int64)  # itemsets per (k, first), then starts
        off = 0
        for t in range(m):
            slot[lengths[t] * n_first + items[off] + 1] += 1
            off += lengths[t]
        n_by_k = np.zeros(max_k + 1, np.int64)
        for k in range(max_k + 1):
            for a in range(n_first):
                n_by_k[k] += slot[k * n_first + a + 1]
        for j in range(1, slot.size):
            slot[j] += slot[j - 1]
        # slot[k * n_first + a] = the itemset index where (k, a) starts; item offsets follow
        # from the number of shorter itemsets and their lengths
        item_base = np.zeros(max_k + 1, np.int64)  # first flat item of length k
        set_base = np.zeros(max_k + 1, np.int64)  # first itemset index of length k
        for k in range(1, max_k + 1):
            item_base[k] = item_base[k - 1] + n_by_k[k - 1] * (k - 1)
            set_base[k] = set_base[k - 1] + n_by_k[k - 1]
        flat = np.empty(off, np.int32)
        flat_counts = np.empty(m, counts.dtype)
        off = 0
        for t in range(m):
            k = lengths[t]
            key = k * n_first + items[off]
            dest = slot[key]
            slot[key] += 1
            flat_counts[dest] = counts[t]
            start = item_base[k] + (dest - set_base[k]) * k
            for j in range(k):
                flat[start + j] = items[off + j]
            off += k
        return flat, flat_counts, n_by_k

    @_numba.njit(cache=True, nogil=True)
    def _upper_adjacency(pair_total):  # pragma: no cover - compiled
        # the pairs (b, c), c > b, with pair_total[b, c] > 0: row b's later neighbours c, sorted,
        # nbr_idx[nbr_ptr[b]:nbr_ptr[b + 1]], and their totals
        f = pair_total.shape[0]
        ptr = np.zeros(f + 1, np.int64)
        for b in range(f):
            n = 0
            for c in range(b + 1, f):
                if pair_total[b, c] > 0:
                    n += 1
            ptr[b + 1] = ptr[b] + n
        idx = np.empty(ptr[f], np.int32)
        cnt = np.empty(ptr[f], np.int64)
        for b in range(f):
            t = ptr[b]
            for c in range(b + 1, f):
                if pair_total[b, c] > 0:
                    idx[t] = c
                    cnt[t] = pair_total[b, c]
                    t += 1
        return ptr, idx, cnt

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
    pair_total: np.ndarray | tuple[np.ndarray, np.ndarray],
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
    pair_total : (f, f) int32, or a tuple (pairs (m, 2) int, counts (m,) int)
        Global counts of the frequent pairs (symmetric), 0 for the others: only frequent pairs
        are joined. With one block (``min_count == global_count``) they are this block's counts.
        The tuple form (the frequent pairs as positions and their counts) is expanded here, in
        the task: a graph then carries and hashes m pairs instead of f x f counts (f = 2,635
        items on retail: 27 MB, ~40 ms of hashing to name the task).
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
    if isinstance(pair_total, tuple):
        pair_total = pair_matrix(pair_total[0], pair_total[1], f)
    pair_total = np.ascontiguousarray(pair_total, dtype=np.int32)
    args = (np.int64(min_count), np.int64(global_count), np.int64(0 if max_length is None else max_length), np.int64(max_out))
    bounds = global_count > min_count  # several blocks: what the others can add prunes too
    order = np.arange(f - 1, -1, -1, dtype=np.int64)  # roots last to first
    adjacency = _upper_adjacency(pair_total)
    if threads <= 1 or bounds or f < 2 * _ROOTS_PER_CHUNK:
        ln, it, ct, complete = _mine_loop(bits, pair_total, *adjacency, *args, order, bounds)
        return ln.copy(), it.copy(), ct.copy(), bool(complete)
    from concurrent.futures import ThreadPoolExecutor

    n_chunks = min(f // _ROOTS_PER_CHUNK, 8 * threads)
    chunks = [order[j::n_chunks] for j in range(n_chunks)]
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ppdm-eclat") as pool:
        parts = list(pool.map(lambda roots: _mine_loop(bits, pair_total, *adjacency, *args, roots, False), chunks))
    complete = all(p[3] for p in parts)
    lengths = np.concatenate([p[0] for p in parts])
    items = np.concatenate([p[1] for p in parts])
    counts = np.concatenate([p[2] for p in parts])
    if lengths.size > max_out:  # each chunk stopped at max_out on its own
        complete = False
        keep = int(max_out)
        items, lengths, counts = items[: int(lengths[:keep].sum())], lengths[:keep], counts[:keep]
    return lengths, items, counts, bool(complete)


def pair_matrix(pairs: np.ndarray, counts: np.ndarray, f: int) -> np.ndarray:
    """The symmetric ``(f, f)`` int32 matrix of the pairs' counts (0 elsewhere) that
    :func:`mine_block` looks pairs up in, from the pairs (positions) and their counts."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    out = np.zeros((f, f), dtype=np.int32)
    out[pairs[:, 0], pairs[:, 1]] = counts
    out[pairs[:, 1], pairs[:, 0]] = counts
    return out


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
    if _numba is not None:
        # one stable counting sort by (length, first item), compiled: O(itemsets + items)
        lengths = np.asarray(lengths, np.int32)
        max_k = int(lengths.max())
        n_first = int(items.max()) + 1 if items.size else 1
        flat, flat_counts, n_by_k = _split_kernel(lengths, np.asarray(items, np.int32), counts, max_k, n_first)
        pos, cpos = 0, 0
        for k in range(1, max_k + 1):
            n_k = int(n_by_k[k])
            if n_k:
                out[k] = (flat[pos : pos + n_k * k].reshape(n_k, k), flat_counts[cpos : cpos + n_k])
                pos += n_k * k
                cpos += n_k
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
