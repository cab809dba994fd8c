"""Per-block kernels of the partition strategy (pure numpy/numba; no dask).

:func:`mine_block` is a depth-first vertical miner (Eclat, Zaki 2000) on the packed row masks
of :func:`~ppdm_dask.mining._kernels.build_bitsets`: the bitset of an itemset X + b is that of X
ANDed with the bitset of item b, computed once and kept on a stack of one bitset per depth, so
every candidate costs one AND + popcount over the block's words (the level-wise counter ANDs
the k - 1 items of a candidate's prefix again at every level). Candidates are pruned by the
local threshold and by the globally frequent pairs. :func:`count_itemsets` counts a given list
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
    from ._kernels import _ctpop

    @_numba.njit(cache=True, nogil=True)
    def _and_into(out, x, y):  # pragma: no cover - compiled
        for w in range(out.size):
            out[w] = x[w] & y[w]

    @_numba.njit(cache=True, nogil=True)
    def _count1(x, y):  # pragma: no cover - compiled
        s = np.uint64(0)
        for w in range(x.size):
            s += _ctpop(x[w] & y[w])
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
            s0 += _ctpop(xw & y0[w])
            s1 += _ctpop(xw & y1[w])
            s2 += _ctpop(xw & y2[w])
            s3 += _ctpop(xw & y3[w])
        out[o] = np.int64(s0)
        out[o + 1] = np.int64(s1)
        out[o + 2] = np.int64(s2)
        out[o + 3] = np.int64(s3)

    @_numba.njit(cache=True, nogil=True)
    def _mine_loop(bits, order, adj, min_count, max_len, max_out):  # pragma: no cover - compiled
        f, n_words = bits.shape
        depth_cap = f if max_len <= 0 else min(f, max_len)
        # the stack grows with the search (deep searches are rare on wide data: f x f would not fit)
        alloc = min(depth_cap + 1, 16)
        pbits = np.zeros((alloc, n_words), np.uint64)  # pbits[d]: bitset of path[0..d] (d >= 1)
        tails = np.empty((alloc, f), np.int32)  # extension items of the node at each depth
        tcnt = np.empty((alloc, f), np.int64)  # and the counts of the extended itemsets
        tlen = np.zeros(alloc, np.int64)
        tidx = np.zeros(alloc, np.int64)
        path = np.empty(alloc, np.int32)
        cand = np.empty(f, np.int32)
        ccnt = np.empty(f, np.int64)
        # output: every itemset of length >= 3 that is frequent in the block, in DFS preorder
        cap = 1024
        out_len = np.empty(cap, np.int32)
        out_cnt = np.empty(cap, np.int64)
        icap = 8 * cap
        out_items = np.empty(icap, np.int32)
        n_out = 0
        n_items_out = 0
        for i in range(f):
            tails[0, i] = order[i]
            tcnt[0, i] = 0
        tlen[0] = f
        tidx[0] = 0
        d = 0
        while d >= 0:
            if tidx[d] >= tlen[d]:
                d -= 1
                continue
            i = tidx[d]
            tidx[d] += 1
            b = tails[d, i]
            path[d] = b
            k = d + 1  # length of the itemset path[0..d]
            if k >= 3:
                if n_out >= max_out:
                    return out_len[:n_out], out_items[:n_items_out], out_cnt[:n_out], False
                if n_out == cap:
                    cap *= 2
                    nl = np.empty(cap, np.int32)
                    nl[:n_out] = out_len[:n_out]
                    out_len = nl
                    nc = np.empty(cap, np.int64)
                    nc[:n_out] = out_cnt[:n_out]
                    out_cnt = nc
                if n_items_out + k > icap:
                    icap = max(2 * icap, n_items_out + k)
                    ni = np.empty(icap, np.int32)
                    ni[:n_items_out] = out_items[:n_items_out]
                    out_items = ni
                out_len[n_out] = k
                out_cnt[n_out] = tcnt[d, i]
                for j in range(k):
                    out_items[n_items_out + j] = path[j]
                n_items_out += k
                n_out += 1
            if k >= depth_cap:
                continue
            # the candidates X + b + c: c a later extension of X (so X + c is frequent in the
            # block) whose pair with b is globally frequent
            n_c = 0
            for j in range(i + 1, tlen[d]):
                c = tails[d, j]
                if adj[b, c]:
                    cand[n_c] = c
                    n_c += 1
            if n_c == 0:
                continue
            if d + 1 >= alloc:
                grow = min(depth_cap + 1, 2 * alloc)
                pb = np.zeros((grow, n_words), np.uint64)
                pb[:alloc] = pbits
                pbits = pb
                tl = np.empty((grow, f), np.int32)
                tl[:alloc] = tails
                tails = tl
                tc = np.empty((grow, f), np.int64)
                tc[:alloc] = tcnt
                tcnt = tc
                t1 = np.zeros(grow, np.int64)
                t1[:alloc] = tlen
                tlen = t1
                t2 = np.zeros(grow, np.int64)
                t2[:alloc] = tidx
                tidx = t2
                pa = np.empty(grow, np.int32)
                pa[:alloc] = path
                path = pa
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
                if ccnt[j] >= min_count:
                    tails[d + 1, n] = cand[j]
                    tcnt[d + 1, n] = ccnt[j]
                    n += 1
            if n > 0:
                tlen[d + 1] = n
                tidx[d + 1] = 0
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
                    s += _ctpop(row[w])
                out[t] = np.int64(s)
            else:
                out[t] = _count1(pbits[k - 2], bits[last])
            off += k


def mine_block(bits: np.ndarray, order: np.ndarray, adjacent: np.ndarray, min_count: int, max_length: int | None,
               max_out: int) -> LocalResult:
    """Every itemset of length >= 3 with at least ``min_count`` rows in this block.

    Parameters
    ----------
    bits : (f, n_words) uint64
        Row masks of the block's items (positions ``0..f-1``).
    order : (f,) int
        The search order of the positions: an itemset is grown only by items later in it (rarest
        first keeps the tails of deep nodes short).
    adjacent : (f, f) bool
        ``adjacent[a, b]``: the pair is globally frequent. Symmetric; only such pairs are joined.
    min_count : int
        The block's threshold.
    max_length : int or None
        Longest itemsets to mine.
    max_out : int
        Stop after this many itemsets (``complete`` is then False and the result is partial).

    Returns
    -------
    lengths, items, counts, complete
        ``items`` holds every itemset's positions in search order, one after the other.
    """
    bits = np.ascontiguousarray(bits, dtype=np.uint64)
    f = bits.shape[0]
    if f == 0:
        return np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int64), True
    ln, it, ct, complete = _mine_loop(bits, np.asarray(order, np.int32), np.ascontiguousarray(adjacent, dtype=np.bool_),
                                      np.int64(min_count), np.int64(0 if max_length is None else max_length), np.int64(max_out))
    return ln.copy(), it.copy(), ct.copy(), bool(complete)


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
    """``{k: (rows (n_k, k) int32, counts)}`` of a :func:`mine_block` result searched in the order
    of the positions: the depth-first preorder is then lexicographic, and so is every length's
    share of it (no sort needed)."""
    lengths, items, counts, _ = result
    offsets = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for k in np.unique(lengths).tolist():
        idx = np.flatnonzero(lengths == k)
        rows = items[offsets[idx][:, None] + np.arange(k)]
        out[int(k)] = (rows.astype(np.int32, copy=False), counts[idx])
    return out


def count_missing(bits: np.ndarray, result: LocalResult, query: list[tuple[int, np.ndarray]]) -> np.ndarray:
    """The counts in this block of the ``query`` itemsets (per length k, an ``(n, k)`` array of
    positions) that its local result ``result`` does not hold, 0 for those it holds (the driver
    already added their counts); concatenated in the order of ``query``."""
    from .candidates import RowIndex

    local = split_by_length(result)
    parts = []
    for k, rows in query:
        out = np.zeros(rows.shape[0], np.int64)
        found = RowIndex(local[k][0]).find(rows)[1] if k in local else np.zeros(rows.shape[0], bool)
        miss = np.flatnonzero(~found)
        if miss.size:
            out[miss] = count_itemsets(bits, np.full(miss.size, k, np.int64), rows[miss].ravel())
        parts.append(out)
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)
