"""KRIMP candidates: frequent or closed frequent itemsets in the standard candidate order.

``mine_candidates(db, min_support, closed=False, max_len=None, exclude=())`` (docs/krimp.md#krimp-code-tables-and-the-search):

* all itemsets X with |X| ≥ 2 and absolute support ≥ ``min_support`` — depth-first Eclat;
* ``closed=True``: the closed ones only, by LCM (Uno et al.) prefix-preserving closure
  extension: a node P with core item c is extended by every frequent e > c, e ∉ P, to
  Q = closure(P ∪ {e}) = AND of the row bitsets of the rows holding P ∪ {e}; Q is kept iff it adds
  no item below e. Every closed set is generated exactly once and non-closed sets are never
  enumerated. Extensions that failed that test at a node are not tried again below it while
  their witness item stays outside (LCM's pruning); note that the closure of the empty set
  (items in every row) is reported when it has ≥ 2 items — pyfim omits it;
* both modes keep, per node, a reduced conditional database: the rows restricted to the node's
  frequent extension items, identical restrictions merged (weights added, remaining bits
  AND-ed), and fill the tid lists of all extensions in one pass (occurrence delivery);
* ``max_len`` keeps |X| ≤ max_len (for closed: the closed sets of at most that length);
  ``exclude`` drops every itemset containing all items of one of the given combinations. Both
  prune whole subtrees (every descendant is a superset).

Everything runs in one numba kernel on the renumbered items (docs/krimp.md#clarification-item-renumbering-decides-every-tie: frequency descending, ties
larger original id first). Standard candidate order: support descending, length descending, then
lexicographically ascending on the sorted tuples of new ids — for sets of equal length that is
"the set holding the smallest item of the symmetric difference first", i.e. descending order of
the bitmask read with new id 0 as the most significant bit; one ``np.lexsort`` does it.
"""

from __future__ import annotations

import math
import os
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np

from ..constraints import Interval, validate
from ..errors import InvalidParameter, ResultTooLargeError
from ..mining.apriori import DEFAULT_MAX_CANDIDATES  # one bound for both miners
from ._cover import ctz, popcount  # the one compiled bit scan and popcount of the KRIMP kernels (inlined)
from ._kernels import Database, as_database, fits, n_words

# the miner hands full buffers to Python in object mode (rarely, between long compiled stretches)
warnings.filterwarnings(
    "ignore", message="Code running in object mode won't allow parallel execution", category=numba.NumbaWarning
)

__all__ = [
    "Candidates",
    "mine_candidates",
    "standard_order",
    "bits_to_items",
    "items_to_bits",
    "DEFAULT_MAX_CANDIDATES",
    "CandidateStream",
    "candidate_stream",
    "DEFAULT_CANDIDATE_MEMORY",
    "MINER_CONSTRAINTS",
    "exclusion_bits",
    "Spiller",
    "MINER_THREADS",
    "miner_threads",
]


@numba.njit(cache=True, nogil=True)
def _grow1(a, need):
    if need <= a.shape[0]:
        return a
    cap = a.shape[0] * 2
    while cap < need:
        cap *= 2
    b = np.empty(cap, a.dtype)
    b[: a.shape[0]] = a
    return b


@numba.njit(cache=True, nogil=True)
def _grow2(a, need):
    if need <= a.shape[0]:
        return a
    cap = a.shape[0] * 2
    while cap < need:
        cap *= 2
    b = np.empty((cap, a.shape[1]), a.dtype)
    b[: a.shape[0]] = a
    return b


@numba.njit(cache=True, nogil=True)
def _mine_kernel(
    row_bits,
    n_items,
    minsup,
    closed,
    max_len,
    exbits,
    n_ex,
    max_depth,
    max_out,
    flush_every,
    chunk,
    n_chunks,
    share_min,
    counter,
    root_fail,
    root_wit,
    use_root,
):
    """Depth-first Eclat / LCM over *reduced, merged* conditional databases.

    Every node keeps its conditional database as weighted bitset transactions: rows restricted to
    the node's frequent extension items, identical restrictions merged (weights added, the
    remaining bits AND-ed — which keeps exactly what later closures need: an item outside the
    frequent extensions of a node can never enter the closure of a descendant). Occurrence
    delivery fills the tid lists (indices into the node's merged database) of all extensions in
    one pass. Returns (bits[n_out, W], supports[n_out]); with ``max_out > 0`` it stops as soon as
    it has found ``max_out + 1`` itemsets (the caller reports the explosion before memory runs
    out). With ``flush_every > 0`` it hands every ``flush_every`` itemsets to the thread's sink
    (:func:`_emit`, set by :class:`Spiller`) and keeps only the rest.

    Threads (:func:`_mine`): call ``chunk`` of ``n_chunks`` searches its share of the subtrees.
    The root is *shared* (searched by every chunk), and so is a child of a shared node whose
    support is at least ``share_min``; every other child of a shared node is dealt to the chunks
    in turn (the shared nodes and their children come in the same order in every chunk, so the
    deal is the same), and the chunks it is not dealt to skip its subtree. Only chunk 0 reports
    the sets of shared nodes. ``counter[0]`` (shared by the threads) counts the itemsets found
    for ``max_out``. In closed mode the chunks must inherit the known failures of the serial
    search: a child that is not searched still gets its prefix-preservation test, except at the
    top level with ``use_root``: then the top-level failures and witnesses come from
    ``root_fail``/``root_wit`` (a top-level test depends on its item only). ``chunk = -1``
    searches no subtree and leaves the top-level failures in ``root_fail``/``root_wit``, computed
    once for the chunks to share.

    Closed mode, known failures (LCM): the extensions of a node are tried in descending item
    order, so when a child Q = closure(P ∪ {e'}) is built every e > e' has been tried at P. If
    closure(P ∪ {e}) held an item j < e, j ∉ P (prefix-preservation failed, witness j), then for
    Q ∌ j, T(Q ∪ {e}) ⊆ T(P ∪ {e}) ⊆ T(j), so e fails at Q as well: it is not tried (nor counted)
    below, but stays in the transaction bits, which the closures of descendants need.
    """
    n, w = row_bits.shape
    out_bits = np.empty((1024, w), np.uint64)
    out_sup = np.empty(1024, np.int64)
    n_out = 0
    pcap = max(1024, 2 * n)
    pb = np.empty((pcap, w), np.uint64)  # pool of merged transactions (stack of levels)
    pw = np.empty(pcap, np.int64)
    buf = np.empty(max(1024, 2 * n), np.int64)  # tid lists (indices into the pool)
    ecap = max(64, 2 * n_items)
    ext_item = np.empty(ecap, np.int64)
    ext_start = np.empty(ecap, np.int64)
    ext_end = np.empty(ecap, np.int64)
    maxd = max_depth + 2
    P = np.zeros((maxd, w), np.uint64)
    KF = np.zeros((maxd, w), np.uint64)  # known-failing extension items per level (closed)
    wit = np.zeros((maxd if closed else 1, n_items if closed else 1), np.int64)  # their witnesses (closed mode only)
    lo = np.zeros(maxd, np.int64)
    hi = np.zeros(maxd, np.int64)
    cur = np.zeros(maxd, np.int64)
    bbase = np.zeros(maxd, np.int64)
    pbase = np.zeros(maxd, np.int64)
    cnt = np.zeros(n_items, np.int64)
    bc = np.zeros(n_items, np.int64)
    fill = np.zeros(n_items, np.int64)
    touched = np.empty(n_items, np.int64)
    hsize = 16
    while hsize < 2 * n + 2:
        hsize *= 2
    htab = np.empty(hsize, np.int64)
    hstamp = np.zeros(hsize, np.int64)
    hepoch = 0
    Q = np.zeros(w, np.uint64)
    Fm = np.zeros(w, np.uint64)
    keep = np.zeros(w, np.uint64)
    gt = np.zeros(w, np.uint64)
    key = np.zeros(w, np.uint64)
    empty_b = out_bits[:0].copy()
    empty_s = out_sup[:0].copy()
    shared = np.zeros(maxd, np.bool_)  # the node at this level is searched by every chunk
    shared[0] = n_chunks > 1 or chunk < 0
    splits = 0  # children of shared nodes dealt out so far (the same sequence in every chunk)

    if n < minsup or n == 0:
        return empty_b, empty_s
    for k in range(w):
        Q[k] = ~np.uint64(0) if closed else np.uint64(0)
    if closed:
        for t in range(n):
            for k in range(w):
                Q[k] &= row_bits[t, k]
    qlen = 0
    for k in range(w):
        qlen += popcount(Q[k])
    if max_len > 0 and qlen > max_len:
        return empty_b, empty_s
    for x in range(n_ex):
        if fits(exbits[x], Q):
            return empty_b, empty_s
    if qlen >= 2 and chunk == 0:
        out_bits[0, :] = Q
        out_sup[0] = n
        n_out = 1
        counter[0] += 1
    # the rows as a level -1 pool, one tid list holding all of them
    for t in range(n):
        for k in range(w):
            pb[t, k] = row_bits[t, k]
        pw[t] = 1
        buf[t] = t
    ptop = n
    btop = n
    etop = 0
    s0 = 0
    s1 = n
    core = -1
    d = 0
    building = True
    while True:
        if building:
            # ---- level d: node Q with core item `core`, source tid list buf[s0:s1]
            for k in range(w):
                P[d, k] = Q[k]
                # items above core
                if core < 64 * k:
                    gt[k] = ~np.uint64(0)
                elif core >= 64 * k + 63:
                    gt[k] = np.uint64(0)
                else:
                    gt[k] = ~((np.uint64(2) << np.uint64(core - 64 * k)) - np.uint64(1))
            bbase[d] = btop
            pbase[d] = ptop
            # inherited known failures: witness not in Q
            for k in range(w):
                KF[d, k] = 0
            if closed and d > 0:
                for k in range(w):
                    x = KF[d - 1, k] & gt[k] & ~Q[k]
                    while x:
                        b = ctz(x)
                        x &= x - np.uint64(1)
                        e = k * 64 + b
                        j = wit[d - 1, e]
                        if not ((Q[j >> 6] >> np.uint64(j & 63)) & np.uint64(1)):
                            KF[d, k] |= np.uint64(1) << np.uint64(b)
                            wit[d, e] = j
            # 1. weighted counts of the candidate extension items; at min-support 1 every item
            # present is frequent (weights are >= 1), so word-level ORs give them without
            # visiting a bit (the counts are not needed)
            nt = 0
            for k in range(w):
                Fm[k] = 0
            if minsup <= 1:
                for j in range(s0, s1):
                    t = buf[j]
                    for k in range(w):
                        Fm[k] |= pb[t, k]
            for j in range(s0, s1 if minsup > 1 else s0):
                t = buf[j]
                wt = pw[t]
                for k in range(w):
                    x = pb[t, k] & gt[k] & ~Q[k] & ~KF[d, k]
                    while x:
                        b = ctz(x)
                        x &= x - np.uint64(1)
                        e = k * 64 + b
                        if cnt[e] == 0:
                            touched[nt] = e
                            nt += 1
                        cnt[e] += wt
            ne = 0
            if minsup <= 1:
                for k in range(w):
                    Fm[k] &= gt[k] & ~Q[k] & ~KF[d, k]
                    ne += popcount(Fm[k])
            for a in range(nt):
                e = touched[a]
                if cnt[e] >= minsup:
                    Fm[e >> 6] |= np.uint64(1) << np.uint64(e & 63)
                    ne += 1
                cnt[e] = 0
            for k in range(w):
                keep[k] = ~(gt[k] & ~Fm[k] & ~Q[k] & ~KF[d, k])
            # 2. merged conditional database (only rows holding a frequent extension item)
            total = 0
            if ne > 0:
                need = ptop + (s1 - s0)
                if need > pb.shape[0]:
                    cap = pb.shape[0] * 2
                    while cap < need:
                        cap *= 2
                    nb = np.empty((cap, w), np.uint64)
                    nb[:ptop] = pb[:ptop]
                    pb = nb
                    nw = np.empty(cap, np.int64)
                    nw[:ptop] = pw[:ptop]
                    pw = nw
                hm = 16
                while hm < 2 * (s1 - s0) + 2:
                    hm *= 2
                hm -= 1
                hepoch += 1
                for j in range(s0, s1):
                    t = buf[j]
                    h = np.uint64(0x9E3779B97F4A7C15)
                    nz = False
                    for k in range(w):
                        key[k] = pb[t, k] & Fm[k]
                        if key[k]:
                            nz = True
                        key[k] |= pb[t, k] & KF[d, k]  # may become extensions again below
                        h = (h ^ key[k]) * np.uint64(0xFF51AFD7ED558CCD)
                        h ^= h >> np.uint64(33)
                    if not nz:
                        continue
                    slot = np.int64(h & np.uint64(hm))
                    while True:
                        if hstamp[slot] != hepoch:
                            hstamp[slot] = hepoch
                            htab[slot] = ptop
                            for k in range(w):
                                pb[ptop, k] = pb[t, k] & keep[k]
                                # count the merged rows of every extension for its tid list (step
                                # 3) here: merging leaves the bits of the extensions as they are
                                x = pb[t, k] & Fm[k]
                                while x:
                                    b = ctz(x)
                                    x &= x - np.uint64(1)
                                    bc[k * 64 + b] += 1
                                    total += 1
                            pw[ptop] = pw[t]
                            ptop += 1
                            break
                        q = htab[slot]
                        same = True
                        for k in range(w):
                            if (pb[q, k] & (Fm[k] | KF[d, k])) != key[k]:
                                same = False
                                break
                        if same:
                            for k in range(w):
                                pb[q, k] &= pb[t, k]
                            pw[q] += pw[t]
                            break
                        slot = (slot + 1) & hm
            # 3. tid lists of the extension items (ascending items)
            if etop + ne > ext_item.shape[0]:
                cap = ext_item.shape[0] * 2
                while cap < etop + ne:
                    cap *= 2
                ei = np.empty(cap, np.int64)
                ei[:etop] = ext_item[:etop]
                ext_item = ei
                es = np.empty(cap, np.int64)
                es[:etop] = ext_start[:etop]
                ext_start = es
                ee = np.empty(cap, np.int64)
                ee[:etop] = ext_end[:etop]
                ext_end = ee
            if btop + total > buf.shape[0]:
                cap = buf.shape[0] * 2
                while cap < btop + total:
                    cap *= 2
                nbf = np.empty(cap, np.int64)
                nbf[:btop] = buf[:btop]
                buf = nbf
            pos = btop
            a = etop
            for k in range(w):
                x = Fm[k]
                while x:
                    b = ctz(x)
                    x &= x - np.uint64(1)
                    e = k * 64 + b
                    ext_item[a] = e
                    ext_start[a] = pos
                    fill[e] = pos
                    pos += bc[e]
                    ext_end[a] = pos
                    bc[e] = 0
                    a += 1
            for t in range(pbase[d], ptop):
                for k in range(w):
                    x = pb[t, k] & Fm[k]
                    while x:
                        b = ctz(x)
                        x &= x - np.uint64(1)
                        e = k * 64 + b
                        buf[fill[e]] = t
                        fill[e] += 1
            lo[d] = etop
            hi[d] = etop + ne
            cur[d] = etop + ne - 1  # descending item order
            etop += ne
            btop = pos
            building = False
            if d == 0 and use_root and closed:
                # every top-level failure at once: children only read those above their core
                for e in range(n_items):
                    if root_fail[e]:
                        KF[0, e >> 6] |= np.uint64(1) << np.uint64(e & 63)
                        wit[0, e] = root_wit[e]
        # ---- next extension of level d
        if cur[d] < lo[d]:
            if d == 0:
                if closed and not use_root:
                    for e in range(n_items):
                        root_fail[e] = (KF[0, e >> 6] >> np.uint64(e & 63)) & np.uint64(1)
                        root_wit[e] = wit[0, e]
                break
            etop = lo[d]
            btop = bbase[d]
            ptop = pbase[d]
            d -= 1
            continue
        bi = cur[d]
        cur[d] -= 1
        e = ext_item[bi]
        s0 = ext_start[bi]
        s1 = ext_end[bi]
        sup = 0
        for j in range(s0, s1):
            sup += pw[buf[j]]
        # a child of a shared node is shared too if its support is at least share_min (few such
        # nodes, but they can hold nearly everything: on mushroom 97 % of the closed sets are
        # below the two most frequent items); otherwise it is dealt to one chunk in turn, and
        # for the others it is foreign: another thread searches its subtree
        child_shared = False
        foreign = False
        if shared[d]:
            if chunk < 0:
                foreign = True
            elif sup >= share_min:
                child_shared = True
            else:
                foreign = splits % n_chunks != chunk
                splits += 1
        if foreign and ((use_root and d == 0) or not closed):
            continue
        if d == 0 and use_root and closed and root_fail[e]:
            continue  # its test fails (known from the pass over the top level)
        if closed:
            for k in range(w):
                Q[k] = pb[buf[s0], k]
            for j in range(s0 + 1, s1):
                t = buf[j]
                for k in range(w):
                    Q[k] &= pb[t, k]
            # prefix-preserving: no new item below e
            ok = True
            ew = e >> 6
            for k in range(ew + 1):
                diff = Q[k] & ~P[d, k]
                if k == ew:
                    diff &= (np.uint64(1) << np.uint64(e & 63)) - np.uint64(1)
                if diff:
                    ok = False
                    wit[d, e] = k * 64 + ctz(diff)
                    KF[d, e >> 6] |= np.uint64(1) << np.uint64(e & 63)
                    break
            if not ok or foreign:
                continue
        else:
            for k in range(w):
                Q[k] = P[d, k]
            Q[e >> 6] |= np.uint64(1) << np.uint64(e & 63)
        qlen = 0
        for k in range(w):
            qlen += popcount(Q[k])
        if max_len > 0 and qlen > max_len:
            continue
        excluded = False
        for x in range(n_ex):
            if fits(exbits[x], Q):
                excluded = True
                break
        if excluded:
            continue
        if qlen >= 2 and (chunk == 0 or not child_shared):  # a shared node's set: one chunk reports it
            if n_out >= out_bits.shape[0]:
                out_bits = _grow2(out_bits, n_out + 1)
                out_sup = _grow1(out_sup, n_out + 1)
            for k in range(w):
                out_bits[n_out, k] = Q[k]
            out_sup[n_out] = sup
            n_out += 1
            counter[0] += 1  # shared by the threads: a lost update only undercounts
            if max_out > 0 and counter[0] > max_out:
                return out_bits[:n_out].copy(), out_sup[:n_out].copy()
            if flush_every > 0 and n_out >= flush_every:
                with numba.objmode():
                    _emit(out_bits[:n_out], out_sup[:n_out])
                n_out = 0
        if max_len > 0 and qlen >= max_len:
            continue  # every extension would be longer
        d += 1
        shared[d] = child_shared
        core = e
        building = True
    return out_bits[:n_out].copy(), out_sup[:n_out].copy()


@numba.njit(cache=True, nogil=True)
def _bits_to_sorted_items(bits, labels_of_new):
    """Bitsets → (offsets, new ids ascending, original ids ascending) per set."""
    n, w = bits.shape
    off = np.zeros(n + 1, np.int64)
    for i in range(n):
        c = 0
        for k in range(w):
            c += popcount(bits[i, k])
        off[i + 1] = off[i] + c
    new = np.empty(off[n], np.int64)
    orig = np.empty(off[n], np.int64)
    for i in range(n):
        p = off[i]
        for k in range(w):
            x = bits[i, k]
            while x:
                b = ctz(x)
                x &= x - np.uint64(1)
                r = k * 64 + b
                new[p] = r
                # insertion into the ascending original-id list
                v = labels_of_new[r]
                q = p
                while q > off[i] and orig[q - 1] > v:
                    orig[q] = orig[q - 1]
                    q -= 1
                orig[q] = v
                p += 1
    return off, new, orig


def items_to_bits(offsets: np.ndarray, items: np.ndarray, n_bits: int) -> np.ndarray:
    """Flat itemsets (offsets + new ids) → (n, W) uint64 bitsets."""
    from ._kernels import pack_rows

    return pack_rows(
        np.asarray(offsets, np.int64), np.asarray(items, np.int64), np.arange(max(n_bits, 1), dtype=np.int64), n_bits
    )


def bits_to_items(bits: np.ndarray, n_bits: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(n, W) bitsets → (offsets, new ids ascending per set)."""
    bits = np.ascontiguousarray(bits, dtype=np.uint64)
    ident = np.arange(64 * bits.shape[1], dtype=np.int64)
    off, new, _ = _bits_to_sorted_items(bits, ident)
    return off, new


@numba.njit(cache=True, nogil=True)
def _order_keys(bits):
    """Per set: popcount and the bit-reversed words (new id 0 → most significant bit)."""
    n, w = bits.shape
    lengths = np.empty(n, np.int64)
    rev = np.empty((n, w), np.uint64)
    for i in range(n):
        c = 0
        for k in range(w):
            x = bits[i, k]
            c += popcount(x)
            r = np.uint64(0)
            for _ in range(64):
                r = (r << np.uint64(1)) | (x & np.uint64(1))
                x >>= np.uint64(1)
            rev[i, k] = r
        lengths[i] = c
    return lengths, rev


def standard_order(bits: np.ndarray, supports: np.ndarray, n_bits: int | None = None) -> np.ndarray:
    """Permutation into the standard candidate order (support desc, length desc, lex asc).

    For sets of equal length, lexicographic order of the sorted new-id tuples = "the set holding
    the smallest item of the symmetric difference comes first" = descending order of the bitmask
    read with new id 0 as the most significant bit.
    """
    n = bits.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    lengths, rev = _order_keys(np.ascontiguousarray(bits))
    keys = [~rev[:, k] for k in range(rev.shape[1] - 1, -1, -1)]
    keys += [-lengths, -np.asarray(supports, np.int64)]
    return np.lexsort(keys).astype(np.int64)


@dataclass(eq=False)
class Candidates:
    """Itemsets in the standard candidate order (original ids, each sorted ascending).

    ``offsets`` (n+1) and flat ``items``: itemset ``k`` is ``items[offsets[k]:offsets[k+1]]``;
    ``supports[k]`` is its absolute support. Iteration yields the itemsets (int64 arrays).
    ``new_items`` holds the same sets in the renumbered ids of ``database`` (ascending).
    """

    offsets: np.ndarray
    items: np.ndarray
    supports: np.ndarray
    min_support: int | None = None
    closed: bool = False
    database: Database | None = field(default=None, repr=False)
    new_items: np.ndarray | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return int(self.offsets.size - 1)

    def __getitem__(self, k: int) -> np.ndarray:
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(k)
        return self.items[self.offsets[k] : self.offsets[k + 1]]

    def __iter__(self) -> Iterator[np.ndarray]:
        for k in range(len(self)):
            yield self.items[self.offsets[k] : self.offsets[k + 1]]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def itemsets(self) -> list[list[int]]:
        """All itemsets as Python lists (small outputs / tests)."""
        flat = self.items.tolist()
        off = self.offsets.tolist()
        return [flat[off[k] : off[k + 1]] for k in range(len(self))]

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame({"itemset": self.itemsets(), "length": self.lengths, "support": self.supports})

    def __repr__(self) -> str:
        kind = "closed " if self.closed else ""
        return f"Candidates({len(self)} {kind}itemsets, min_support={self.min_support})"


def exclusion_bits(d: Any, exclude: Sequence[Sequence[int]]) -> np.ndarray:
    """Bitsets (new ids) of the excluded combinations whose items all occur in ``d`` (a
    :class:`Database` or anything with its sorted ``labels`` and ``new_ids``); a combination
    with an item that does not occur excludes nothing."""
    w = n_words(d.labels.size)
    rows = []
    for combo in exclude:
        a = np.unique(np.asarray(list(combo), dtype=np.int64).ravel())
        if a.size == 0:
            raise InvalidParameter("an excluded combination must hold at least one item")
        known = np.isin(a, d.labels)
        if not np.all(known):
            continue  # no itemset of this database can contain it
        b = np.zeros(w, np.uint64)
        for r in d.new_ids[np.searchsorted(d.labels, a)].tolist():
            b[r >> 6] |= np.uint64(1) << np.uint64(r & 63)
        rows.append(b)
    if not rows:
        return np.zeros((1, w), np.uint64)[:0]
    return np.stack(rows)


def _frequent_lengths(d: Any, minsup: int) -> np.ndarray:
    """Per row, the number of its items with frequency >= ``minsup`` (int64)."""
    frequent = d.frequencies[d.indices] >= minsup
    ends = np.zeros(frequent.size + 1, np.int32 if frequent.size < 2**31 else np.int64)
    np.cumsum(frequent, out=ends[1:])
    return (ends[d.indptr[1:]] - ends[d.indptr[:-1]]).astype(np.int64)


def _max_depth(d: Any, minsup: int, closed: bool, max_len: int) -> int:
    """Deepest level of :func:`_mine_kernel`'s search, which sizes its per-level tables.

    A node at level j holds j items (all mode) or at least j (closed mode: each level adds an
    item), all frequent and all in one row, so j <= the most frequent items of a row; it is only
    extended while shorter than ``max_len``; in closed mode each level also lowers the support by
    at least one (a closed set extended by an item outside it loses a row), from at most
    ``n_rows`` down to ``minsup``.
    """
    depth = int(_frequent_lengths(d, minsup).max(initial=0))
    if max_len:
        depth = min(depth, int(max_len))
    if closed:
        depth = min(depth, d.n_rows - int(minsup) + 1)
    return max(depth, 1)


def _kernel_bytes(d: Any, closed: bool, max_depth: int) -> int:
    """Bytes :func:`_mine_kernel` allocates before it finds its first itemset."""
    n, w, m = d.n_rows, d.n_words, d.n_items
    maxd = max_depth + 2
    words = 2 * maxd * w + (maxd * m if closed else 1) + max(1024, 2 * n) * (w + 2) + 1024 * (w + 1) + 10 * m + 4 * n
    return 8 * int(words)


def _subsets(length: int, max_len: int, stop: int) -> int:
    """Subsets of 2..max_len items (all sizes when 0) of ``length`` items: exact, or the first
    partial sum above ``stop``."""
    top = length if not max_len else min(length, max_len)
    total = 0
    for k in range(2, top + 1):
        total += math.comb(length, k)
        if total > stop:
            break
    return total


def _magnitude(length: int, max_len: int) -> str:
    """How many subsets of 2..max_len of ``length`` items, in words (exact up to 10^15)."""
    top = length if not max_len else min(length, max_len)
    exact = _subsets(length, max_len, 10**15)
    if exact <= 10**15:
        return f"{exact:,}"
    if top == length:
        return f"about 2^{length:,}"
    k = min(top, length // 2)
    log10 = (math.lgamma(length + 1) - math.lgamma(k + 1) - math.lgamma(length - k + 1)) / math.log(10)
    return f"more than 10^{int(log10):,}"


def _check_candidate_floor(d: Any, minsup: int, closed: bool, max_len: int, n_excluded: int, cap: int) -> None:
    """Refuse, before the miner allocates anything, a database whose frequent itemsets surely
    exceed ``cap``: items that occur together in at least ``minsup`` rows — a whole row at
    min-support 1, the frequent items of a row repeated ``minsup`` times — make every subset of
    2 or more of them a candidate (less one item per excluded combination). All mode only (the
    closed sets of such items may be few)."""
    if closed or not cap:
        return
    lengths = _frequent_lengths(d, minsup) - n_excluded
    longest = int(lengths.max(initial=0))
    if longest < 2 or _subsets(longest, max_len, cap) <= cap:
        return  # even the longest row cannot reach the bound
    if minsup == 1:
        witness, seen = longest, 1
    else:  # rows whose frequent items repeat in >= minsup rows
        long_rows = np.flatnonzero(_subsets_over(lengths, max_len, cap))
        mask = np.zeros(d.n_words, np.uint64)
        for r in d.new_ids[d.frequencies >= minsup].tolist():
            mask[r >> 6] |= np.uint64(1) << np.uint64(r & 63)
        bits = d.row_bits[long_rows] & mask
        uniq, inverse, counts = np.unique(bits, axis=0, return_inverse=True, return_counts=True)
        ok = counts[inverse.ravel()] >= minsup
        if not ok.any():
            return
        witness, seen = int(lengths[long_rows[ok]].max()), int(counts[inverse.ravel()][ok].max())
    what = (
        f"transaction of {witness + n_excluded:,} items"
        if seen == 1
        else f"set of {witness + n_excluded:,} items found in {seen:,} transactions"
    )
    raise ResultTooLargeError(
        f"a {what} at min-support {minsup} makes every {_sizes(max_len)} of its items a "
        f"KRIMP candidate: {_magnitude(witness, max_len)} itemsets, over the bound of {cap:,} (refused before mining)",
        python="raise min_support, closed=True, max_len=..., or max_candidates",
        fix="raise `min_support` or `min_count`, or add `closed`, `max_len` or `max_candidates`",
    )


def _sizes(max_len: int) -> str:
    return "pair" if max_len == 2 else f"subset of 2 to {max_len}" if max_len else "subset of 2 or more"


def _subsets_over(lengths: np.ndarray, max_len: int, cap: int) -> np.ndarray:
    """Mask of the row lengths whose subsets of 2..max_len items exceed ``cap``."""
    out = np.zeros(lengths.size, bool)
    for v in np.unique(lengths[lengths >= 2]).tolist():
        if _subsets(v, max_len, cap) > cap:
            out |= lengths >= v
            break
    return out


def _check_kernel_memory(d: Any, closed: bool, max_depth: int) -> None:
    """Refuse a search whose per-level tables would not fit in half the available memory."""
    from ..mining.guards import check_memory, format_bytes

    need = _kernel_bytes(d, closed, max_depth)
    check_memory(
        need,
        f"the candidate miner's tables for {d.n_items:,} items, {d.n_rows:,} rows and {max_depth:,} levels would take "
        f"{format_bytes(need)}",
        python="set max_len=... (fewer levels) or raise min_support",
        fix="set `max_len` (fewer levels) or raise `min_support` or `min_count`",
    )


def _before_mining(d: Any, minsup: int, closed: bool, ml: int, n_excluded: int, cap: int) -> int:
    """The checks every miner entry makes before :func:`_mine_kernel` allocates; its depth."""
    _check_candidate_floor(d, minsup, closed, ml, n_excluded, cap)
    depth = _max_depth(d, minsup, closed, ml)
    _check_kernel_memory(d, closed, depth)
    return depth


#: Threads of the candidate miner (at most; never more than the machine's cores): the subtrees
#: of the top-level extensions are independent and the kernel releases the GIL.
MINER_THREADS = 4

#: Top-level extensions per chunk of a threaded search (at least): each chunk's call builds
#: the root's conditional database again.
_ROOTS_PER_CHUNK = 2

#: Chunks per thread: enough to even out the subtrees dealt out, few enough that repeating the
#: shared nodes (:func:`_share_min`) per chunk stays small (mushroom at min-support 1: 2 chunks
#: per thread cost 4 % more CPU than 1, 4 chunks 15 %).
_CHUNKS_PER_THREAD = 2


def miner_threads(d: Any, closed: bool, max_depth: int, threads: int | None = None) -> int:
    """Threads for :func:`_mine`: ``threads``, by default :data:`MINER_THREADS` but at most the
    machine's cores, and no more than the per-thread tables of :func:`_mine_kernel` fit in the
    memory share the single search may take."""
    from ..mining.guards import MEMORY_SHARE, available_bytes

    t = min(MINER_THREADS, os.cpu_count() or 1) if threads is None else max(1, int(threads))
    if t > 1:
        avail = available_bytes()
        if avail is not None:
            t = max(1, min(t, int(MEMORY_SHARE * avail) // max(1, _kernel_bytes(d, closed, max_depth))))
    return t


def _n_chunks(d: Any, minsup: int, threads: int) -> int:
    """Chunks of a search in ``threads`` threads: :data:`_CHUNKS_PER_THREAD` per thread, with
    at least :data:`_ROOTS_PER_CHUNK` top-level extensions each; 1 for a serial search."""
    roots = int(np.count_nonzero(d.new_frequencies >= minsup))
    return max(1, min(roots // _ROOTS_PER_CHUNK, _CHUNKS_PER_THREAD * threads)) if threads > 1 else 1


def _share_min(d: Any, minsup: int) -> int:
    """Support from which a node is searched by every chunk: halfway from ``minsup`` to all rows
    (few nodes, each cheap to repeat, but on dense data they lead to nearly every itemset)."""
    return minsup + max(1, -(-(d.n_rows - minsup) // 2))


def _mine(
    d: Any,
    minsup: int,
    closed: bool,
    ml: int,
    ex: np.ndarray,
    max_depth: int,
    cap: int,
    flush: int,
    threads: int,
    spiller: Spiller | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Run :func:`_mine_kernel` in ``threads`` threads, each chunk on its share of the subtrees.

    Returns the itemsets each chunk kept (the rest went to ``spiller`` when ``flush > 0``). The
    union is the serial search's output in another order; callers sort it into the standard
    candidate order, which is total, so the result does not depend on the threads.
    """
    counter = np.zeros(1, np.int64)
    n_chunks = _n_chunks(d, minsup, threads)
    share = _share_min(d, minsup)
    n = max(1, d.n_items)
    root_fail, root_wit = np.zeros(n, np.uint8), np.zeros(n, np.int64)
    use_root = closed and n_chunks > 1
    if use_root:  # the top-level failures once (no subtree searched), shared by the chunks
        _mine_kernel(
            d.row_bits, d.n_items, minsup, closed, ml, ex, ex.shape[0], max_depth, 0, 0, -1, n_chunks, share,
            np.zeros(1, np.int64), root_fail, root_wit, False,
        )  # fmt: skip

    def run(j: int) -> tuple[np.ndarray, np.ndarray]:
        _sink.spiller = spiller
        try:
            return _mine_kernel(
                d.row_bits, d.n_items, minsup, closed, ml, ex, ex.shape[0], max_depth, cap, flush, j, n_chunks, share,
                counter, root_fail, root_wit, use_root,
            )  # fmt: skip
        finally:
            _sink.spiller = None

    if n_chunks == 1:
        return [run(0)]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ppdm-krimp-miner") as pool:
        return list(pool.map(run, range(n_chunks)))


def _too_many(cap: int, closed: bool, minsup: int) -> ResultTooLargeError:
    kind = "closed" if closed else "frequent"
    return ResultTooLargeError(
        f"more than {cap:,} {kind} itemsets at min-support {minsup}: too many KRIMP candidates (the search over them would run "
        "for very long)",
        python="raise min_support, closed=True, max_len=..., or max_candidates=None",
        fix="raise `min_support` or `min_count`, or add `closed`, `max_len` or `max_candidates`",
    )


#: the parameters of the candidate miners and of the searches over their candidates
#: (:mod:`ppdm_dask.constraints`); None leaves a bound off or takes the default
MINER_CONSTRAINTS: dict[str, list[Any]] = {
    "min_support": [Interval(int, 1, None)],
    "max_len": [None, Interval(int, 2, None)],
    "max_candidates": [None, Interval(int, 1, None)],
    "memory": [None, Interval(int, 1, None)],
    "index_memory": [None, Interval(int, 0, None)],
    "batch_size": [None, Interval(int, 1, None)],
}


def mine_candidates(
    db: Any,
    min_support: int,
    *,
    closed: bool = False,
    max_len: int | None = None,
    exclude: Sequence[Sequence[int]] = (),
    max_candidates: int | None = DEFAULT_MAX_CANDIDATES,
    threads: int | None = None,
) -> Candidates:
    """Frequent (or closed frequent) itemsets with |X| ≥ 2 in the standard candidate order.

    Parameters
    ----------
    db : TransactionArray, scipy sparse matrix/array, Database, or iterable of item-id lists
        See :func:`ppdm_dask.krimp.as_database`.
    min_support : int
        Absolute minimum support (≥ 1).
    closed : bool
        Only closed itemsets (no proper superset with the same support).
    max_len : int, optional
        Keep itemsets with at most ``max_len`` items (≥ 2).
    exclude : sequence of item-id sequences
        Drop every itemset that contains all items of one of these combinations.
    max_candidates : int or None
        Stop with :class:`~ppdm_dask.errors.ResultTooLargeError` as soon as more itemsets than this are found
        (low min-support on dense data explodes: mushroom, all itemsets at min-support 1, has
        billions); None for no bound.
    threads : int, optional
        Threads of the search (default :data:`MINER_THREADS`, at most the machine's cores): the
        subtrees of the top-level extensions are searched in parallel. The result is the same
        for every number of threads.

    Raises
    ------
    ResultTooLargeError
        More than ``max_candidates`` candidates.
    """
    d = as_database(db)
    v = validate(MINER_CONSTRAINTS, {"max_candidates": max_candidates, "min_support": min_support, "max_len": max_len})
    cap, minsup, ml = v["max_candidates"] or 0, v["min_support"], v["max_len"] or 0
    if exclude is None:
        exclude = ()
    ex = exclusion_bits(d, exclude)
    max_depth = _before_mining(d, minsup, bool(closed), ml, ex.shape[0], cap)
    parts = _mine(d, minsup, bool(closed), ml, ex, max_depth, cap, 0, miner_threads(d, bool(closed), max_depth, threads))
    bits = np.concatenate([p[0] for p in parts]) if len(parts) > 1 else parts[0][0]
    sup = np.concatenate([p[1] for p in parts]) if len(parts) > 1 else parts[0][1]
    if cap and sup.size > cap:
        raise _too_many(cap, closed, minsup)
    perm = standard_order(bits, sup, d.n_items)
    bits = bits[perm]
    sup = sup[perm]
    off, new, orig = _bits_to_sorted_items(bits, d.new_labels.astype(np.int64))
    return Candidates(
        offsets=off,
        items=orig.astype(np.int64),
        supports=sup.astype(np.int64),
        min_support=minsup,
        closed=bool(closed),
        database=d,
        new_items=new,
    )


# ----------------------------------------------------------------------------- streamed candidates
#: Bytes the mined candidates may take in memory (while being sorted) before they are written
#: to sorted runs on disk and merged back (docs/krimp.md#memory).
DEFAULT_CANDIDATE_MEMORY = 1 << 30

_sink = threading.local()


def _emit(bits: np.ndarray, sup: np.ndarray) -> None:
    """Called from the compiled miner (object mode) with every full buffer of itemsets."""
    _sink.spiller.add(bits, sup)


def _bytes_per_candidate(w: int) -> int:
    """Peak bytes per candidate while a run is sorted: the bitsets and support, their sort keys
    (bit-reversed words, negated copies, lengths), the permutation and the reordered copy."""
    return 32 * w + 40


@numba.njit(cache=True, nogil=True, inline="always")
def _before(a, b):
    """Record ``a`` comes before record ``b`` in the standard candidate order (records: W bitset
    words then the support): support descending, length descending, then the set holding the
    smallest item of the symmetric difference first (= lexicographic order of sorted ids)."""
    w = a.size - 1
    if a[w] != b[w]:
        return a[w] > b[w]
    la = 0
    lb = 0
    for k in range(w):
        la += popcount(a[k])
        lb += popcount(b[k])
    if la != lb:
        return la > lb
    for k in range(w):
        x = a[k] ^ b[k]
        if x:
            return (a[k] & (x & (~x + np.uint64(1)))) != 0
    return False


@numba.njit(cache=True, nogil=True)
def _merge_runs(recs, pos, end, out):
    """k-way merge of the sorted runs ``recs[pos[j]:end[j]]`` into ``out`` (as many records as
    fit); ``pos`` advances. Returns the number of records written."""
    k = pos.size
    n = 0
    while n < out.shape[0]:
        best = -1
        for j in range(k):
            if pos[j] < end[j] and (best < 0 or _before(recs[pos[j]], recs[pos[best]])):
                best = j
        if best < 0:
            break
        out[n] = recs[pos[best]]
        pos[best] += 1
        n += 1
    return n


class Spiller:
    """Collects the miner's output; sorts it into runs on disk when it outgrows the budget."""

    def __init__(self, w: int, budget: int, spill_dir: str | None) -> None:
        self.w = w
        self.run_cap = max(1024, budget // _bytes_per_candidate(w))
        self.spill_dir = spill_dir
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []
        self.held = 0
        self.total = 0
        self.runs: list[tuple[int, int]] = []
        self.folder: str | None = None
        self.file = None
        self.lock = threading.Lock()  # the miner's threads hand their buffers over concurrently

    def add(self, bits: np.ndarray, sup: np.ndarray) -> None:
        with self.lock:
            self.parts.append((bits.copy(), sup.copy()))
            self.held += sup.size
            self.total += sup.size
            if self.held >= self.run_cap:
                self.spill()

    def take(self) -> tuple[np.ndarray, np.ndarray]:
        """Everything held, sorted in the standard candidate order."""
        if not self.parts:
            return np.zeros((0, self.w), np.uint64), np.zeros(0, np.int64)
        bits = np.concatenate([p[0] for p in self.parts]) if len(self.parts) > 1 else self.parts[0][0]
        sup = np.concatenate([p[1] for p in self.parts]) if len(self.parts) > 1 else self.parts[0][1]
        self.parts, self.held = [], 0
        perm = standard_order(bits, sup)
        return bits[perm], sup[perm].astype(np.int64)

    def spill(self) -> None:
        bits, sup = self.take()
        if sup.size == 0:
            return
        if self.file is None:
            import tempfile

            self.folder = tempfile.mkdtemp(prefix="ppdm-krimp-candidates-", dir=self.spill_dir)
            self.file = open(os.path.join(self.folder, "runs.bin"), "wb")
        start = sum(e - s for s, e in self.runs)
        rec = np.empty((sup.size, self.w + 1), np.uint64)
        rec[:, : self.w] = bits
        rec[:, self.w] = sup.astype(np.uint64)
        self.file.write(rec.tobytes())
        self.runs.append((start, start + sup.size))

    def stream(self, t0: float) -> CandidateStream:
        """Everything added, as a stream: sorted in memory, or (after a spill) merged from runs."""
        if not self.runs:
            bits, sup = self.take()
            return CandidateStream(bits, sup, seconds=time.perf_counter() - t0)
        self.spill()
        self.file.close()
        return CandidateStream(None, None, self, seconds=time.perf_counter() - t0)

    def close(self) -> None:
        if self.file is not None and not self.file.closed:
            self.file.close()
        if self.folder is not None:
            import shutil

            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


class CandidateStream:
    """Candidates in the standard candidate order, handed out in chunks of bitsets (new ids)
    and supports. Held in memory when they fit the budget, else merged from sorted runs on disk
    (removed when the stream is closed; use it as a context manager).

    Attributes
    ----------
    n_candidates : int
        Number of candidates.
    n_runs : int
        Sorted runs written to disk (0: everything in memory).
    seconds : float
        Time spent mining, sorting and merging (also while chunks are handed out).
    """

    def __init__(
        self, bits: np.ndarray | None, sup: np.ndarray | None, spiller: Spiller | None = None, seconds: float = 0.0
    ) -> None:
        self._bits, self._sup, self._spiller = bits, sup, spiller
        self.n_candidates = int(sup.size) if sup is not None else int(spiller.total)
        self.n_runs = 0 if spiller is None else len(spiller.runs)
        self.seconds = float(seconds)

    @classmethod
    def given(cls, bits: np.ndarray, sup: np.ndarray) -> CandidateStream:
        """A stream over candidates already in memory, in their order."""
        return cls(np.ascontiguousarray(bits, np.uint64), np.asarray(sup, np.int64))

    def chunks(self, size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        if self._spiller is None:
            for s in range(0, self.n_candidates, size):
                yield self._bits[s : s + size], self._sup[s : s + size]
            return
        sp_ = self._spiller
        w = sp_.w
        recs = np.memmap(os.path.join(sp_.folder, "runs.bin"), dtype=np.uint64, mode="r", shape=(sp_.total, w + 1))
        pos = np.array([s for s, _ in sp_.runs], np.int64)
        end = np.array([e for _, e in sp_.runs], np.int64)
        out = np.empty((size, w + 1), np.uint64)
        while True:
            t = time.perf_counter()
            n = _merge_runs(recs, pos, end, out)
            self.seconds += time.perf_counter() - t
            if n == 0:
                break
            yield np.ascontiguousarray(out[:n, :w]), out[:n, w].astype(np.int64)
        del recs

    def close(self) -> None:
        if self._spiller is not None:
            self._spiller.close()

    def __enter__(self) -> CandidateStream:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def candidate_stream(
    db: Any,
    min_support: int,
    *,
    closed: bool = False,
    max_len: int | None = None,
    exclude: Sequence[Sequence[int]] = (),
    max_candidates: int | None = DEFAULT_MAX_CANDIDATES,
    memory: int | None = None,
    spill_dir: str | None = None,
    threads: int | None = None,
) -> CandidateStream:
    """Mine the candidates of :func:`mine_candidates` as a :class:`CandidateStream`.

    The miner hands its itemsets over in buffers; while they fit in ``memory`` bytes (default
    :data:`DEFAULT_CANDIDATE_MEMORY`, counted at the peak of sorting them) they stay in memory
    and are sorted once; beyond it every ``memory``-sized batch is sorted into a run written to
    ``spill_dir`` (default: the system's temporary folder) and the runs are merged on the fly
    while the search consumes them, so memory stays bounded for any number of candidates.
    ``threads`` as in :func:`mine_candidates`.
    """
    d = as_database(db)
    v = validate(
        MINER_CONSTRAINTS, {"max_candidates": max_candidates, "min_support": min_support, "max_len": max_len, "memory": memory}
    )
    cap, minsup, ml = v["max_candidates"] or 0, v["min_support"], v["max_len"] or 0
    budget = DEFAULT_CANDIDATE_MEMORY if v["memory"] is None else v["memory"]
    ex = exclusion_bits(d, exclude or ())
    max_depth = _before_mining(d, minsup, bool(closed), ml, ex.shape[0], cap)
    spiller = Spiller(d.n_words, budget, spill_dir)
    t = time.perf_counter()
    try:
        nt = miner_threads(d, bool(closed), max_depth, threads)
        flush = max(1024, min(spiller.run_cap, 1 << 20) // nt)  # every thread holds up to one buffer
        for bits, sup in _mine(d, minsup, bool(closed), ml, ex, max_depth, cap, flush, nt, spiller):
            spiller.add(bits, sup)
        if cap and spiller.total > cap:
            raise _too_many(cap, closed, minsup)
        return spiller.stream(t)
    except BaseException:
        spiller.close()
        raise
