"""Incremental KRIMP cover of one block of rows (numba kernels, no dask).

The same kernels serve the single-machine search (one block holding every row, driven from one
compiled loop in :mod:`.search`) and the distributed search (one block per row partition, kept
on a worker, driven by :mod:`.distributed`). Covers are per row, so a block's usage changes are
its rows' share of the whole database's, and the sum over blocks is exact.

State of a block (rows ``t`` in the block's own numbering, items in the search's new ids)
    One record per row, so that looking at a row touches one or two cache lines: ``rec`` (n, R)
    uint64 holds the row as an item bitset (words ``0..W-1``) and the items its cover leaves to
    singletons (words ``W..2W-1``); its int32 view ``rec32`` (n, 2R) holds, from int32 ``4W``
    on, the number of non-singleton elements of the cover and their code-table slots in cover
    order (at most longest-row // 2 of them). ``wt`` (n,) int64: how many identical rows of the
    database a record stands for (covers depend on a row's items only, so identical rows share
    one record and count with their weight; 1 when rows are not merged). ``tid_bits`` (n_items, ceil(n/64)) lists the rows
    holding each item. ``blocked`` (n_items, L − 1, ceil(n/64)), when it fits the memory plan,
    lists for every item i and length ℓ = 2..L the rows whose cover holds i in an element of
    length ≥ ℓ: X can only be used in the rows of ∩_{i∈X} (tid(i) ∖ blocked(i, |X|)) — the
    elements before X are exactly those of length ≥ |X| — so evaluating X visits only those rows
    instead of every row holding X (with ``blocked`` of shape (n_items, 0, ·) every row holding X
    is looked at, as the reference does). ``urows`` (slots, ceil(n/64)), when it fits, lists the
    rows whose cover uses each slot, so evaluating a removal visits only those rows.

The code-table replica (identical on every block and on the driver)
    Elements live in *slots*: ``sbits[s]`` (W words) is the itemset, ``skey[s]`` its cover-order
    key — ``(n_items + 1 − |X|)·2^40 + rank``, rank = position in the standard candidate order,
    so smaller keys come first: length descending, then candidate order. ``idx_off``/``idx``
    list every element of the table under its *canonical item* (its largest new id), in key
    order, so re-covering a remainder ``r`` only looks at elements whose rarest item is in ``r``
    (``scanon[s]``, kept per slot).

Evaluation never changes the state: it writes the usage changes of a proposed insertion or
removal into stamped scratch vectors (``d_ns``/``t_ns`` per slot, ``d_s``/``t_s`` per item).
Committing recomputes the affected rows and writes their new covers (acceptances are rare, so
the second pass costs little and evaluation keeps no per-row buffers).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from ._kernels import fits, take

__all__ = ["KEY_SHIFT", "cover_key", "rebuild_index"]

#: Share of the memory where the cover lives (the machine, or a worker's limit) that its row
#: indexes (``blocked``, ``urows``) may take when no budget is given.
INDEX_SHARE = 0.25

#: Cover-order keys: (n_items + 1 - length) << KEY_SHIFT | rank (ranks stay below 2^40).
KEY_SHIFT = 40

_DEBRUIJN = np.array(
    [
        0,
        47,
        1,
        56,
        48,
        27,
        2,
        60,
        57,
        49,
        41,
        37,
        28,
        16,
        3,
        61,
        54,
        58,
        35,
        52,
        50,
        42,
        21,
        44,
        38,
        32,
        29,
        23,
        17,
        11,
        4,
        62,
        46,
        55,
        26,
        59,
        40,
        36,
        15,
        53,
        34,
        51,
        20,
        43,
        31,
        22,
        10,
        45,
        25,
        39,
        14,
        33,
        19,
        30,
        9,
        24,
        13,
        18,
        8,
        12,
        7,
        6,
        5,
        63,
    ],
    dtype=np.int64,
)  # bitScanForward via de Bruijn (x ^ (x-1)) * 0x03f79d71b4cb0a89 >> 58


@numba.njit(cache=True, nogil=True, inline="always")
def ctz(x):
    """Index of the lowest set bit of a non-zero uint64."""
    return _DEBRUIJN[((x ^ (x - np.uint64(1))) * np.uint64(0x03F79D71B4CB0A89)) >> np.uint64(58)]


@numba.njit(cache=True, nogil=True, inline="always")
def popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@numba.njit(cache=True, nogil=True)
def cover_key(bits, rank, n_items):
    """Cover-order key of an itemset (see the module docstring)."""
    L = 0
    for k in range(bits.size):
        L += popcount(bits[k])
    return (np.int64(n_items + 1 - L) << np.int64(KEY_SHIFT)) + rank


@numba.njit(cache=True, nogil=True)
def std_length(bits, st_s):
    """stdlen of an itemset: the item stdlens summed in ascending new-id order (the order
    :meth:`CodeTable.sizes` and the reference use, so sizes agree to the last bit)."""
    s = 0.0
    for k in range(bits.size):
        x = bits[k]
        while x:
            b = ctz(x)
            x &= x - np.uint64(1)
            s += st_s[k * 64 + b]
    return s


@numba.njit(cache=True, nogil=True)
def canonical_item(bits):
    """The largest new id of an itemset (its rarest item), -1 for the empty set."""
    for k in range(bits.size - 1, -1, -1):
        x = bits[k]
        if x:
            c = 0
            while x:  # index of the highest set bit: strip the lowest ones
                c = ctz(x)
                x &= x - np.uint64(1)
            return k * 64 + c
    return -1


@numba.njit(cache=True, nogil=True)
def rebuild_index(order, m, scanon, sbits, skey, n_items, idx, idx_off, cnt, lkey, lbits):
    """List the elements ``order[:m]`` (cover order) under their canonical item ``scanon[s]``,
    in key order; ``lkey``/``lbits`` hold their keys and bitsets in list order, so a scan of a
    list reads contiguous memory."""
    for i in range(n_items):
        cnt[i] = 0
    for j in range(m):
        cnt[scanon[order[j]]] += 1
    idx_off[0] = 0
    for i in range(n_items):
        idx_off[i + 1] = idx_off[i] + cnt[i]
        cnt[i] = idx_off[i]
    for j in range(m):
        s = order[j]
        c = scanon[s]
        q = cnt[c]
        idx[q] = s
        lkey[q] = skey[s]
        for k in range(sbits.shape[1]):
            lbits[q, k] = sbits[s, k]
        cnt[c] += 1


@numba.njit(cache=True, nogil=True, inline="always")
def _last_item(bits):
    """The largest item of a bitset (the least frequent one: new ids descend with frequency), -1 if empty."""
    for k in range(bits.size - 1, -1, -1):
        x = bits[k]
        if x:
            b = 0
            while x:
                b = ctz(x)
                x &= x - np.uint64(1)
            return k * 64 + b
    return -1


@numba.njit(cache=True, nogil=True)
def rows_with(bits, tid_bits, acc):
    """``acc`` = the rows holding every item of ``bits`` (AND of the items' tid bitsets).

    Starts from the least frequent item and then only reads the words still non-zero, stopping
    once none is: most candidates occur in few rows, so most words are skipped.
    """
    last = _last_item(bits)
    if last < 0:
        for w in range(acc.size):
            acc[w] = 0
        return
    live = False
    for w in range(acc.size):
        acc[w] = tid_bits[last, w]
        live |= acc[w] != 0
    for k in range(bits.size):
        x = bits[k]
        while x and live:
            b = ctz(x)
            x &= x - np.uint64(1)
            i = k * 64 + b
            if i == last:
                continue
            live = False
            for w in range(acc.size):
                if acc[w]:
                    acc[w] &= tid_bits[i, w]
                    live |= acc[w] != 0


@numba.njit(cache=True, nogil=True)
def recover(r, kthr, idx, idx_off, lkey, lbits, surv, out):
    """Greedy cover of bitset ``r`` (in place) by the elements with key > ``kthr``, in cover order.

    Only elements ⊆ r can be used (r only shrinks), so candidates are gathered from the lists of
    the items of r, merged by key (``surv``: list positions, then keys) and tried greedily.
    Returns their number; slots in ``out``.
    """
    nsv = 0
    for k in range(r.size):
        x = r[k]
        while x:
            b = ctz(x)
            x &= x - np.uint64(1)
            i = k * 64 + b
            o1 = idx_off[i + 1]
            lo_ = idx_off[i]
            hi_ = o1
            while lo_ < hi_:  # first element with key > kthr
                mid = (lo_ + hi_) >> 1
                if lkey[mid] > kthr:
                    hi_ = mid
                else:
                    lo_ = mid + 1
            for j in range(lo_, o1):
                if fits(lbits[j], r):
                    q = nsv
                    kc = lkey[j]
                    while q > 0 and surv[1, q - 1] > kc:
                        surv[0, q] = surv[0, q - 1]
                        surv[1, q] = surv[1, q - 1]
                        q -= 1
                    surv[0, q] = j
                    surv[1, q] = kc
                    nsv += 1
    ns = 0
    for a in range(nsv):
        j = surv[0, a]
        if fits(lbits[j], r):
            take(lbits[j], r)
            out[ns] = idx[j]
            ns += 1
    return ns


@numba.njit(cache=True, nogil=True, inline="always")
def touch(c, dv, delta, stamp, touched, nt, epoch):
    """Add ``dv`` to the stamped scratch entry ``c`` (reset on first touch in this epoch)."""
    if stamp[c] != epoch:
        stamp[c] = epoch
        delta[c] = 0
        touched[nt] = c
        nt += 1
    delta[c] += dv
    return nt


@numba.njit(cache=True, nogil=True)
def touch_singletons(new_r, old_r, wt, d_s, stamp_s, t_s, nt_s, epoch):
    """Singleton usage changes of one row of weight ``wt``: +wt for items newly left over, −wt
    for items now covered."""
    for k in range(new_r.size):
        plus = new_r[k] & ~old_r[k]
        minus = old_r[k] & ~new_r[k]
        while plus:
            b = ctz(plus)
            plus &= plus - np.uint64(1)
            nt_s = touch(k * 64 + b, wt, d_s, stamp_s, t_s, nt_s, epoch)
        while minus:
            b = ctz(minus)
            minus &= minus - np.uint64(1)
            nt_s = touch(k * 64 + b, -wt, d_s, stamp_s, t_s, nt_s, epoch)
    return nt_s


@numba.njit(cache=True, nogil=True)
def free_rows(xbits, L, tid_bits, blocked, acc):
    """``acc`` = the rows holding X in which no item of X is covered by an element of length ≥ L.

    As :func:`rows_with`: the least frequent item first, then only the words still non-zero.
    """
    last = _last_item(xbits)
    if last < 0:
        for w in range(acc.size):
            acc[w] = 0
        return
    live = False
    for w in range(acc.size):
        acc[w] = tid_bits[last, w] & ~blocked[last, L - 2, w]
        live |= acc[w] != 0
    for k in range(xbits.size):
        x = xbits[k]
        while x and live:
            b = ctz(x)
            x &= x - np.uint64(1)
            i = k * 64 + b
            if i == last:
                continue
            live = False
            for w in range(acc.size):
                if acc[w]:
                    acc[w] &= tid_bits[i, w] & ~blocked[i, L - 2, w]
                    live |= acc[w] != 0


@numba.njit(cache=True, nogil=True)
def mark(row32, o32, j0, sbits, blocked, urows, t, on):
    """Set (``on``) or clear row ``t`` in ``blocked`` and ``urows`` for its cover elements ``j0..``."""
    word = t >> 6
    bit = np.uint64(1) << np.uint64(t & 63)
    for j in range(j0, row32[o32 - 1]):
        c = row32[o32 + j]
        if urows.shape[1] > 0:
            if on:
                urows[c, word] |= bit
            else:
                urows[c, word] &= ~bit
        if blocked.shape[1] == 0:
            continue
        L = 0
        for k in range(sbits.shape[1]):
            L += popcount(sbits[c, k])
        for k in range(sbits.shape[1]):
            x = sbits[c, k]
            while x:
                b = ctz(x)
                x &= x - np.uint64(1)
                i = k * 64 + b
                for q in range(L - 1):
                    if on:
                        blocked[i, q, word] |= bit
                    else:
                        blocked[i, q, word] &= ~bit


@numba.njit(cache=True, nogil=True, inline="always")
def _commit_row(row, row32, o32, kk, head, r, kthr, idx, idx_off, lkey, lbits, surv, sfx, sbits, blocked, urows, t):
    """Write row ``t``'s new cover: the prefix up to ``kk`` kept, then ``head`` (the inserted
    slot, or −1), then the greedy cover of ``r`` by the elements of key > ``kthr``."""
    ns = recover(r, kthr, idx, idx_off, lkey, lbits, surv, sfx)
    mark(row32, o32, kk, sbits, blocked, urows, t, False)
    j0 = kk
    if head >= 0:
        row32[o32 + kk] = head
        j0 = kk + 1
    for j in range(ns):
        row32[o32 + j0 + j] = sfx[j]
    row32[o32 - 1] = j0 + ns
    mark(row32, o32, kk, sbits, blocked, urows, t, True)
    w = r.size
    for k in range(w):
        row[w + k] = r[k]


@numba.njit(cache=True, nogil=True, inline="always")
def _row_changes(
    row,
    row32,
    wt,
    o32,
    kk,
    r,
    kthr,
    idx,
    idx_off,
    lkey,
    lbits,
    surv,
    sfx,
    d_ns,
    stamp_ns,
    t_ns,
    nt_ns,
    d_s,
    stamp_s,
    t_s,
    nt_s,
    epoch,
):
    """The usage changes of one row (standing for ``wt`` identical rows) whose cover from ``kk``
    on is replaced by the greedy cover of ``r`` (modified) by the elements of key > ``kthr``."""
    for j in range(kk, row32[o32 - 1]):
        nt_ns = touch(row32[o32 + j], -wt, d_ns, stamp_ns, t_ns, nt_ns, epoch)
    ns = recover(r, kthr, idx, idx_off, lkey, lbits, surv, sfx)
    for j in range(ns):
        nt_ns = touch(sfx[j], wt, d_ns, stamp_ns, t_ns, nt_ns, epoch)
    w = r.size
    nt_s = touch_singletons(r, row[w : 2 * w], wt, d_s, stamp_s, t_s, nt_s, epoch)
    return nt_ns, nt_s


@numba.njit(cache=True, nogil=True)
def insert_change(
    commit,
    xbits,
    kx,
    slot,
    rec,
    rec32,
    wt,
    tid_bits,
    blocked,
    urows,
    sbits,
    skey,
    idx,
    idx_off,
    lkey,
    lbits,
    acc,
    r,
    surv,
    sfx,
    d_ns,
    stamp_ns,
    t_ns,
    d_s,
    stamp_s,
    t_s,
    epoch,
):
    """Inserting X (bitset ``xbits``, key ``kx``): its usage and the other usage changes.

    Only rows t ⊇ X can change, and only if X ⊆ what the elements before X leave of t; such a row
    keeps its cover prefix, uses X, and the rest is re-covered by the elements after X. Returns
    ``(usage of X, #slots touched, #items touched)``; with ``commit`` the new covers are written
    (X in ``slot``) and nothing is counted.
    """
    w = xbits.size
    o32 = 4 * w + 1
    if blocked.shape[1] > 0:
        L = 0
        for k in range(w):
            L += popcount(xbits[k])
        free_rows(xbits, L, tid_bits, blocked, acc)
    else:
        rows_with(xbits, tid_bits, acc)
    nx = 0
    nt_ns = 0
    nt_s = 0
    for ww in range(acc.size):
        bits = acc[ww]
        while bits:
            b = ctz(bits)
            bits &= bits - np.uint64(1)
            t = ww * 64 + b
            row = rec[t]
            row32 = rec32[t]
            for k in range(w):
                r[k] = row[k]
            kk = 0
            cn = row32[o32 - 1]
            while kk < cn:
                c = row32[o32 + kk]
                if skey[c] > kx:
                    break
                take(sbits[c], r)
                kk += 1
            if not fits(xbits, r):
                continue
            take(xbits, r)
            nx += wt[t]
            if commit:
                _commit_row(row, row32, o32, kk, slot, r, kx, idx, idx_off, lkey, lbits, surv, sfx, sbits, blocked, urows, t)
            else:
                nt_ns, nt_s = _row_changes(
                    row,
                    row32,
                    wt[t],
                    o32,
                    kk,
                    r,
                    kx,
                    idx,
                    idx_off,
                    lkey,
                    lbits,
                    surv,
                    sfx,
                    d_ns,
                    stamp_ns,
                    t_ns,
                    nt_ns,
                    d_s,
                    stamp_s,
                    t_s,
                    nt_s,
                    epoch,
                )
    return nx, nt_ns, nt_s


@numba.njit(cache=True, nogil=True)
def remove_change(
    commit,
    y,
    rec,
    rec32,
    wt,
    tid_bits,
    blocked,
    urows,
    sbits,
    skey,
    idx,
    idx_off,
    lkey,
    lbits,
    acc,
    r,
    surv,
    sfx,
    d_ns,
    stamp_ns,
    t_ns,
    d_s,
    stamp_s,
    t_s,
    epoch,
):
    """Removing the element in slot ``y``: the usage changes (``y`` itself included, to 0).

    Rows whose cover uses y keep the elements before it; the rest is re-covered by the elements
    after y (y itself has key ``skey[y]`` and is not among them). Returns ``(usage of y, #slots
    touched, #items touched)``; with ``commit`` the new covers are written instead.
    """
    if urows.shape[1] > 0:
        for w in range(acc.size):
            acc[w] = urows[y, w]
    else:
        rows_with(sbits[y], tid_bits, acc)
    ky = skey[y]
    w = r.size
    o32 = 4 * w + 1
    na = 0
    nt_ns = 0
    nt_s = 0
    for ww in range(acc.size):
        bits = acc[ww]
        while bits:
            b = ctz(bits)
            bits &= bits - np.uint64(1)
            t = ww * 64 + b
            row32 = rec32[t]
            cn = row32[o32 - 1]
            kk = 0
            while kk < cn and row32[o32 + kk] != y:
                kk += 1
            if kk == cn:
                continue
            na += wt[t]
            row = rec[t]
            for k in range(w):
                r[k] = row[k]
            for j in range(kk):
                take(sbits[row32[o32 + j]], r)
            if commit:
                _commit_row(row, row32, o32, kk, -1, r, ky, idx, idx_off, lkey, lbits, surv, sfx, sbits, blocked, urows, t)
            else:
                nt_ns, nt_s = _row_changes(
                    row,
                    row32,
                    wt[t],
                    o32,
                    kk,
                    r,
                    ky,
                    idx,
                    idx_off,
                    lkey,
                    lbits,
                    surv,
                    sfx,
                    d_ns,
                    stamp_ns,
                    t_ns,
                    nt_ns,
                    d_s,
                    stamp_s,
                    t_s,
                    nt_s,
                    epoch,
                )
    return na, nt_ns, nt_s


@numba.njit(cache=True, nogil=True)
def _columns(row_bits, n_items):
    """Vertical tid bitsets of bitset rows: item ``i`` → the rows holding it."""
    n, w = row_bits.shape
    out = np.zeros((n_items, max(1, (n + 63) // 64)), np.uint64)
    for t in range(n):
        bit = np.uint64(1) << np.uint64(t & 63)
        for k in range(w):
            x = row_bits[t, k]
            while x:
                b = ctz(x)
                x &= x - np.uint64(1)
                out[k * 64 + b, t >> 6] |= bit
    return out


def merged_rows(row_bits: np.ndarray, items: np.ndarray, n_items: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows a cover has to look at: restricted to ``items`` (a bitset of W words), those
    with ≥ 2 of them, identical ones merged. Returns ``(row_bits, weights, tid_bits)``.

    Exact for a search whose candidates hold only ``items``: an item outside them is covered by
    its singleton in every code table (its usage stays its frequency), a row with < 2 of them
    holds no candidate, and covers depend on a row's items only, so identical rows change every
    usage alike and count once with their number (``wt`` in the kernels). With no such row, one
    empty row of weight 0 keeps the arrays non-empty.
    """
    rows = np.ascontiguousarray(row_bits & np.asarray(items, np.uint64)[None, :])
    w = rows.shape[1]
    lengths = np.bitwise_count(rows).sum(axis=1, dtype=np.int64)
    rows = np.ascontiguousarray(rows[lengths >= 2])
    if rows.shape[0] == 0:
        return np.zeros((1, w), np.uint64), np.zeros(1, np.int64), np.zeros((n_items, 1), np.uint64)
    flat = rows.view(np.dtype((np.void, 8 * w))).ravel()
    _, first, counts = np.unique(flat, return_index=True, return_counts=True)
    rows = np.ascontiguousarray(rows[first])
    return rows, counts.astype(np.int64), _columns(rows, n_items)


def initial_state(row_bits: np.ndarray, n_cover: int) -> tuple[np.ndarray, np.ndarray]:
    """Row records (``rec``, ``rec32``) of the singleton-only code table: no elements, every
    item left to singletons. ``n_cover`` = the most non-singleton elements a row can hold."""
    n, w = row_bits.shape
    words = 2 * w + (1 + max(int(n_cover), 1) + 1) // 2
    rec = np.zeros((n, words), np.uint64)
    rec[:, :w] = row_bits
    rec[:, w : 2 * w] = row_bits
    return rec, rec.view(np.int32)


def resize_slots(obj: Any, cap: int, old: int, words: int, names: tuple[str, ...], float_names: tuple[str, ...] = ()) -> None:
    """Give ``obj`` per-slot arrays for ``cap`` slots, keeping the first ``old``: the int64
    vectors ``names`` (float64 for ``float_names``), the bitsets ``sbits``/``lbits`` (``words``
    per slot) and the gather scratch ``surv`` (2 × cap)."""
    for name in names + float_names:
        a = np.zeros(cap, np.float64 if name in float_names else np.int64)
        if old:
            a[:old] = getattr(obj, name)
        setattr(obj, name, a)
    for name in ("sbits", "lbits"):
        b = np.zeros((cap, words), np.uint64)
        if old:
            b[:old] = getattr(obj, name)
        setattr(obj, name, b)
    obj.surv = np.zeros((2, cap), np.int64)


def index_budget(budget: int | None, memory_limit: int | None) -> int:
    """Bytes for the row indexes: ``budget`` if given, else :data:`INDEX_SHARE` of
    ``memory_limit`` (the machine's memory when that is unknown or unlimited)."""
    if budget is not None:
        return int(budget)
    if not memory_limit:
        from distributed.system import MEMORY_LIMIT

        memory_limit = MEMORY_LIMIT
    return int(INDEX_SHARE * memory_limit)


def block_state(row_bits: np.ndarray, n_items: int, longest_row: int, budget: int) -> tuple:
    """A block's starting state: its row records (every row covered by singletons), the
    ``blocked`` index if it fits ``budget``, and the bytes that leaves for the usage rows."""
    rec, rec32 = initial_state(row_bits, max(1, int(longest_row) // 2))
    blocked = blocked_index(n_items, longest_row, row_bits.shape[0], budget)
    return rec, rec32, blocked, max(0, int(budget) - blocked.nbytes)


def blocked_index(n_items: int, longest_row: int, n_rows: int, budget: int) -> np.ndarray:
    """The ``blocked`` index (all clear: the singleton-only table), or a (n_items, 0, ·) stand-in
    when it would take more than ``budget`` bytes (evaluation then looks at every row holding X)."""
    tw = max(1, (int(n_rows) + 63) // 64)
    nl = max(0, int(longest_row) - 1)
    if n_items * nl * tw * 8 > budget:
        nl = 0
    return np.zeros((n_items, nl, tw), np.uint64)


def usage_rows(cap: int, n_rows: int, budget: int) -> np.ndarray:
    """The ``urows`` index for ``cap`` slots (all clear), or a (cap, 0) stand-in beyond ``budget`` bytes."""
    tw = max(1, (int(n_rows) + 63) // 64)
    return np.zeros((int(cap), tw if int(cap) * tw * 8 <= budget else 0), np.uint64)


def grow_usage_rows(urows: np.ndarray, cap: int, n_rows: int, budget: int) -> np.ndarray:
    """``urows`` for more slots: the rows kept, or the stand-in once it would outgrow ``budget``."""
    if urows.shape[1] == 0:
        return np.zeros((int(cap), 0), np.uint64)
    out = usage_rows(cap, n_rows, budget)
    if out.shape[1] == 0:
        return out
    out[: urows.shape[0]] = urows
    return out


# ----------------------------------------------------------------------------- batches (distributed search)
@numba.njit(cache=True, nogil=True)
def _grow(a, need):
    if need <= a.size:
        return a
    cap = 2 * a.size
    while cap < need:
        cap *= 2
    b = np.empty(cap, a.dtype)
    b[: a.size] = a
    return b


@numba.njit(cache=True, nogil=True)
def evaluate_batch(
    kind,
    cbits,
    keys,
    slots,
    rec,
    rec32,
    wt,
    tid_bits,
    blocked,
    urows,
    sbits,
    skey,
    idx,
    idx_off,
    lkey,
    lbits,
    acc,
    r,
    surv,
    sfx,
    d_ns,
    stamp_ns,
    t_ns,
    d_s,
    stamp_s,
    t_s,
    epoch0,
):
    """The usage changes of every proposal of a batch, each against the same (current) state.

    ``kind`` 0: insert ``cbits[b]`` with key ``keys[b]``; 1: remove slot ``slots[b]``. Returns
    ``(own, ptr_ns, ids_ns, val_ns, ptr_s, ids_s, val_s)``: ``own[b]`` the usage of the inserted
    itemset (or the rows that used the removed one) in this block, and per proposal the nonzero
    changes of element slots and of singleton items (CSR by proposal).
    """
    nb = keys.size if kind == 0 else slots.size
    own = np.zeros(nb, np.int64)
    ptr_ns = np.zeros(nb + 1, np.int64)
    ptr_s = np.zeros(nb + 1, np.int64)
    ids_ns = np.empty(256, np.int64)
    val_ns = np.empty(256, np.int64)
    ids_s = np.empty(256, np.int64)
    val_s = np.empty(256, np.int64)
    n_ns = 0
    n_s = 0
    for b in range(nb):
        epoch = epoch0 + b
        if kind == 0:
            o, nt_ns, nt_s = insert_change(
                False,
                cbits[b],
                keys[b],
                -1,
                rec,
                rec32,
                wt,
                tid_bits,
                blocked,
                urows,
                sbits,
                skey,
                idx,
                idx_off,
                lkey,
                lbits,
                acc,
                r,
                surv,
                sfx,
                d_ns,
                stamp_ns,
                t_ns,
                d_s,
                stamp_s,
                t_s,
                epoch,
            )
        else:
            o, nt_ns, nt_s = remove_change(
                False,
                slots[b],
                rec,
                rec32,
                wt,
                tid_bits,
                blocked,
                urows,
                sbits,
                skey,
                idx,
                idx_off,
                lkey,
                lbits,
                acc,
                r,
                surv,
                sfx,
                d_ns,
                stamp_ns,
                t_ns,
                d_s,
                stamp_s,
                t_s,
                epoch,
            )
        own[b] = o
        ids_ns = _grow(ids_ns, n_ns + nt_ns)
        val_ns = _grow(val_ns, n_ns + nt_ns)
        for a in range(nt_ns):
            c = t_ns[a]
            if d_ns[c] != 0:
                ids_ns[n_ns] = c
                val_ns[n_ns] = d_ns[c]
                n_ns += 1
        ptr_ns[b + 1] = n_ns
        ids_s = _grow(ids_s, n_s + nt_s)
        val_s = _grow(val_s, n_s + nt_s)
        for a in range(nt_s):
            i = t_s[a]
            if d_s[i] != 0:
                ids_s[n_s] = i
                val_s[n_s] = d_s[i]
                n_s += 1
        ptr_s[b + 1] = n_s
    return own, ptr_ns, ids_ns[:n_ns].copy(), val_ns[:n_ns].copy(), ptr_s, ids_s[:n_s].copy(), val_s[:n_s].copy()


@numba.njit(cache=True, nogil=True)
def keys_of(cbits, rank0, n_items):
    """Cover-order keys of candidates ``cbits`` with ranks ``rank0, rank0 + 1, ...``."""
    out = np.empty(cbits.shape[0], np.int64)
    for x in range(cbits.shape[0]):
        out[x] = cover_key(cbits[x], rank0 + x, n_items)
    return out
