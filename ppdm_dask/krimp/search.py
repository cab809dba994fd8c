"""KRIMP search (docs/krimp.md#krimp-code-tables-and-the-search): strict acceptance, optional post-acceptance ("pop") pruning.

Implementation
--------------
Everything after the set-up runs in numba on the renumbered items:

* the database is held twice: rows as item bitsets (W = ceil(|I|/64) words) and items as tid
  bitsets; every row also stores its current cover (non-singleton element ids in cover order)
  and the bitset of the items it leaves to singletons;
* **incremental cover.** Inserting X at cover position p changes only rows t ⊇ X (AND of the tid
  bitsets of X) for which X ⊆ rem_p(t), the items left after the row's cover elements that come
  before p (those of length ≥ |X|). For such a row the cover prefix is kept, X is added, and the
  rest is re-covered with the elements after p. Removing Y (pruning) re-covers, from Y's
  position on, the rows whose cover holds Y. The result is a sparse usage delta, committed on
  acceptance and dropped on rejection;
* re-covering a row's rest r only tries elements ⊆ r: every CT element is listed under its
  canonical item (its largest new id), the lists are kept in cover order by a static key
  (length descending, then position in the candidate order — the cover order of docs/krimp.md#krimp-code-tables-and-the-search), and only the
  lists of the items of r are scanned;
* **exact sizes and decisions** (docs/krimp.md#exact-sizes-and-decisions). The documented size is L(D,CT) = fsum(u·l) + fsum(stdlen + l) over the
  elements with usage > 0 (math.fsum, l = −log2(u/U)). Recomputing that for every candidate
  costs O(|CT|); instead an incrementally maintained approximation
  ``U·log2 U − Σ u·log2 u + Σ stdlen + K·log2 U − Σ log2 u`` (K = #used elements) is compared
  with the current best first, with a safety margin (1e-12·(K+64) relative to the magnitudes
  involved, ≥ 10^4 times any rounding error of either expression). Only when the approximation
  lies within that margin of the decision boundary — in practice for accepted candidates and
  near ties — the exact documented value is computed: the same terms in the same floating-point
  operations as ``math.fsum`` gets them in the reference, summed by :func:`exact_sum`, a port of
  CPython's ``math.fsum`` (correctly rounded, so term order is immaterial). Every decision is
  therefore the one the literal computation takes, bit for bit; a candidate with usage 0
  changes nothing and is rejected without any size computation (equal size ⇒ reject).
* ``math.log2`` in numba calls the C library's ``log2``, as CPython's ``math.log2`` does
  (tested on many values).
* stdlen(X) is the sequential sum of the item stdlens in ascending new-id order (as the
  reference's itemset code computes it); :meth:`CodeTable.sizes` uses the same order, so the
  table's ``sizes()['total']`` equals the search's final best size bit for bit.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numba
import numpy as np

from ..errors import InvalidParameter
from ._kernels import Database, as_database, exact_sum, fits, pack_rows, take
from .candidates import DEFAULT_MAX_CANDIDATES, Candidates, _check_int, _exclusion_bits, mine_candidates, standard_order
from .codetable import CodeTable

__all__ = ["krimp", "KrimpResult"]

_DEBRUIJN = np.array(
    [
        0, 47, 1, 56, 48, 27, 2, 60, 57, 49, 41, 37, 28, 16, 3, 61,
        54, 58, 35, 52, 50, 42, 21, 44, 38, 32, 29, 23, 17, 11, 4, 62,
        46, 55, 26, 59, 40, 36, 15, 53, 34, 51, 20, 43, 31, 22, 10, 45,
        25, 39, 14, 33, 19, 30, 9, 24, 13, 18, 8, 12, 7, 6, 5, 63,
    ],
    dtype=np.int64,
)  # bitScanForward via de Bruijn (x ^ (x-1)) * 0x03f79d71b4cb0a89 >> 58


@numba.njit(cache=True, nogil=True, inline="always")
def _ctz(x):
    return _DEBRUIJN[((x ^ (x - np.uint64(1))) * np.uint64(0x03F79D71B4CB0A89)) >> np.uint64(58)]


@numba.njit(cache=True, nogil=True)
def _itemset_stdlens(off, items, st_new):
    n = off.size - 1
    out = np.empty(n, np.float64)
    for k in range(n):
        s = 0.0
        for j in range(off[k], off[k + 1]):
            s += st_new[items[j]]
        out[k] = s
    return out


@numba.njit(cache=True, nogil=True)
def _supports(off, items, tid_bits):
    n = off.size - 1
    tw = tid_bits.shape[1]
    out = np.zeros(n, np.int64)
    acc = np.empty(tw, np.uint64)
    for k in range(n):
        if off[k + 1] == off[k]:
            continue
        for w in range(tw):
            acc[w] = tid_bits[items[off[k]], w]
        for j in range(off[k] + 1, off[k + 1]):
            for w in range(tw):
                acc[w] &= tid_bits[items[j], w]
        s = 0
        for w in range(tw):
            x = acc[w]
            while x:
                x &= x - np.uint64(1)
                s += 1
        out[k] = s
    return out


# ----------------------------------------------------------------------------- state
# istate: 0 m (non-singletons in CT), 1 U (total usage), 2 n_accepted, 3 n_pruned, 4 K (#used),
#         5 epoch, 6 n_exact (exact size evaluations), 7 n_evaluated (usage > 0)
# fstate: 0 best, 1 A = Σ u·log2 u, 2 B = Σ log2 u, 3 S = Σ stdlen (used elements),
#         4 max |approx − exact| / margin seen


@numba.njit(cache=True, nogil=True)
def _exact_size(order, m, extra, usage_ns, cst, usage_s, st_s, U, tld, tlct):
    """L(D|CT) + L(CT|D) (docs/krimp.md#krimp-code-tables-and-the-search) with the reference's floating-point operations."""
    k = 0
    Uf = np.float64(U)
    for j in range(m + 1):
        if j < m:
            c = order[j]
        else:
            c = extra
            if c < 0:
                break
        u = usage_ns[c]
        if u > 0:
            lg = math.log2(np.float64(u) / Uf)
            tld[k] = -np.float64(u) * lg
            tlct[k] = cst[c] - lg
            k += 1
    for i in range(usage_s.size):
        u = usage_s[i]
        if u > 0:
            lg = math.log2(np.float64(u) / Uf)
            tld[k] = -np.float64(u) * lg
            tlct[k] = st_s[i] - lg
            k += 1
    return exact_sum(tld, k) + exact_sum(tlct, k)


@numba.njit(cache=True, nogil=True)
def _refresh_accumulators(order, m, usage_ns, cst, usage_s, st_s, flog, lg, istate, fstate):
    A = 0.0
    B = 0.0
    S = 0.0
    K = 0
    for j in range(m):
        c = order[j]
        u = usage_ns[c]
        if u > 0:
            A += flog[u]
            B += lg[u]
            S += cst[c]
            K += 1
    for i in range(usage_s.size):
        u = usage_s[i]
        if u > 0:
            A += flog[u]
            B += lg[u]
            S += st_s[i]
            K += 1
    fstate[1] = A
    fstate[2] = B
    fstate[3] = S
    istate[4] = K


@numba.njit(cache=True, nogil=True)
def _approx_size(istate, fstate, usage_ns, d_ns, t_ns, nt_ns, cst, usage_s, d_s, t_s, nt_s, st_s, flog, lg):
    """Approximate new total size after the pending delta, and its safety margin."""
    A = fstate[1]
    B = fstate[2]
    S = fstate[3]
    K = istate[4]
    U = istate[1]
    for a in range(nt_ns):
        c = t_ns[a]
        u0 = usage_ns[c]
        u1 = u0 + d_ns[c]
        U += d_ns[c]
        A += flog[u1] - flog[u0]
        B += lg[u1] - lg[u0]
        if u0 > 0 and u1 == 0:
            S -= cst[c]
            K -= 1
        elif u0 == 0 and u1 > 0:
            S += cst[c]
            K += 1
    for a in range(nt_s):
        i = t_s[a]
        u0 = usage_s[i]
        u1 = u0 + d_s[i]
        U += d_s[i]
        A += flog[u1] - flog[u0]
        B += lg[u1] - lg[u0]
        if u0 > 0 and u1 == 0:
            S -= st_s[i]
            K -= 1
        elif u0 == 0 and u1 > 0:
            S += st_s[i]
            K += 1
    lU = math.log2(np.float64(U))
    approx = U * lU - A + S + K * lU - B
    mag = U * lU + A + S + K * lU + B
    margin = mag * 1e-12 * (K + 64) + 1e-9
    return approx, margin, U


@numba.njit(cache=True, nogil=True)
def _apply_delta(usage_ns, d_ns, t_ns, nt_ns, usage_s, d_s, t_s, nt_s, sign):
    for a in range(nt_ns):
        c = t_ns[a]
        usage_ns[c] += sign * d_ns[c]
    for a in range(nt_s):
        i = t_s[a]
        usage_s[i] += sign * d_s[i]


@numba.njit(cache=True, nogil=True)
def _decide(accept_equal, istate, fstate, order, m, extra, usage_ns, d_ns, t_ns, nt_ns, cst,
            usage_s, d_s, t_s, nt_s, st_s, flog, lg, tld, tlct):
    """True (and usages updated, best set) if the pending change is accepted."""
    best = fstate[0]
    approx, margin, U2 = _approx_size(istate, fstate, usage_ns, d_ns, t_ns, nt_ns, cst, usage_s, d_s, t_s, nt_s,
                                      st_s, flog, lg)
    if approx > best + margin:
        return False
    _apply_delta(usage_ns, d_ns, t_ns, nt_ns, usage_s, d_s, t_s, nt_s, 1)
    exact = _exact_size(order, m, extra, usage_ns, cst, usage_s, st_s, U2, tld, tlct)
    istate[6] += 1
    r = abs(approx - exact) / margin
    if r > fstate[4]:
        fstate[4] = r
    ok = exact <= best if accept_equal else exact < best
    if not ok:
        _apply_delta(usage_ns, d_ns, t_ns, nt_ns, usage_s, d_s, t_s, nt_s, -1)
        return False
    fstate[0] = exact
    istate[1] = U2
    return True


@numba.njit(cache=True, nogil=True, inline="always")
def _touch(c, dv, delta, stamp, touched, nt, epoch):
    if stamp[c] != epoch:
        stamp[c] = epoch
        delta[c] = 0
        touched[nt] = c
        nt += 1
    delta[c] += dv
    return nt


@numba.njit(cache=True, nogil=True)
def _rows_of(items, o0, o1, tid_bits, acc):
    tw = tid_bits.shape[1]
    for w in range(tw):
        acc[w] = tid_bits[items[o0], w]
    for j in range(o0 + 1, o1):
        it = items[j]
        for w in range(tw):
            acc[w] &= tid_bits[it, w]


@numba.njit(cache=True, nogil=True)
def _recover_suffix_idx(r, kthr, lst, lst_off, lcnt, ekey, cbits, out_row, surv, w):
    """Greedy cover of bitset r (in place) by the CT elements with key > kthr, in cover order.

    Only elements ⊆ r can be used (r only shrinks), and every element is listed under its
    canonical item (its largest new id), so the candidates are gathered from the lists of the
    items of r, sorted by key (= cover order) and tried greedily.
    """
    nsv = 0
    for k in range(w):
        x = r[k]
        while x:
            b = _ctz(x)
            x &= x - np.uint64(1)
            i = k * 64 + b
            o0 = lst_off[i]
            o1 = o0 + lcnt[i]
            # first element with key > kthr (lists are sorted by key)
            lo_ = o0
            hi_ = o1
            while lo_ < hi_:
                mid = (lo_ + hi_) >> 1
                if ekey[lst[mid]] > kthr:
                    hi_ = mid
                else:
                    lo_ = mid + 1
            for j in range(lo_, o1):
                c = lst[j]
                if fits(cbits[c], r):
                    # insertion by key
                    q = nsv
                    kc = ekey[c]
                    while q > 0 and ekey[surv[q - 1]] > kc:
                        surv[q] = surv[q - 1]
                        q -= 1
                    surv[q] = c
                    nsv += 1
    ns = 0
    for a in range(nsv):
        c = surv[a]
        if fits(cbits[c], r):
            take(cbits[c], r)
            out_row[ns] = c
            ns += 1
    return ns


@numba.njit(cache=True, nogil=True)
def _list_insert(c, i, lst, lst_off, lcnt, ekey):
    o0 = lst_off[i]
    q = o0 + lcnt[i]
    kc = ekey[c]
    while q > o0 and ekey[lst[q - 1]] > kc:
        lst[q] = lst[q - 1]
        q -= 1
    lst[q] = c
    lcnt[i] += 1


@numba.njit(cache=True, nogil=True)
def _list_remove(c, i, lst, lst_off, lcnt):
    o0 = lst_off[i]
    o1 = o0 + lcnt[i]
    q = o0
    while lst[q] != c:
        q += 1
    for j in range(q, o1 - 1):
        lst[j] = lst[j + 1]
    lcnt[i] -= 1


@numba.njit(cache=True, nogil=True)
def _touch_singletons(new_r, old_r, w, d_s, stamp_s, t_s, nt_s, epoch):
    for k in range(w):
        plus = new_r[k] & ~old_r[k]
        minus = old_r[k] & ~new_r[k]
        while plus:
            b = _ctz(plus)
            plus &= plus - np.uint64(1)
            nt_s = _touch(k * 64 + b, 1, d_s, stamp_s, t_s, nt_s, epoch)
        while minus:
            b = _ctz(minus)
            minus &= minus - np.uint64(1)
            nt_s = _touch(k * 64 + b, -1, d_s, stamp_s, t_s, nt_s, epoch)
    return nt_s


@numba.njit(cache=True, nogil=True)
def _sort_pending(plist, npl, usage):
    """The authors' sort of the pending pruning list by usage, ascending, reproduced as it is.

    Pass ``a`` bubbles from position ``a`` to the end and the sort stops after a pass without a
    swap; position ``a`` is never revisited after pass ``a``, so the result is not always sorted
    (e.g. usages 3, 2, 1 become 2, 1, 3). Equal code tables need exactly this order.
    """
    for a in range(npl - 1):
        changed = False
        for b in range(a, npl - 1):
            if usage[plist[b]] > usage[plist[b + 1]]:
                t = plist[b]
                plist[b] = plist[b + 1]
                plist[b + 1] = t
                changed = True
        if not changed:
            break


@numba.njit(cache=True, nogil=True)
def _run(start, stop, prune, cand_off, cand_items, cbits, clen, cst, row_bits, tid_bits, st_s, flog, lg,
         order, usage_ns, usage_s, cov, covn, rem, istate, fstate,
         d_ns, stamp_ns, t_ns, d_s, stamp_s, t_s, aff, apre, sfx, sfxn, sfxrem, acc, tld, tlct, plist, pos_of, pdec,
         ekey, lst, lst_off, lcnt, surv, lmax, crank):
    n, w = row_bits.shape
    r = np.empty(w, np.uint64)
    two40 = np.int64(1) << np.int64(40)
    for x in range(start, stop):
        L = clen[x]
        if L < 2:
            continue
        m = istate[0]
        # insertion position: cover order key (length descending, then standard candidate rank)
        kx = (lmax - L) * two40 + crank[x]
        lo_ = 0
        hi_ = m
        while lo_ < hi_:
            mid = (lo_ + hi_) >> 1
            if ekey[order[mid]] < kx:
                lo_ = mid + 1
            else:
                hi_ = mid
        p = lo_
        # ---- evaluate: rows t ⊇ X with X ⊆ rem_p(t)
        istate[5] += 1
        epoch = istate[5]
        nt_ns = 0
        nt_s = 0
        na = 0
        _rows_of(cand_items, cand_off[x], cand_off[x + 1], tid_bits, acc)
        for ww in range(acc.size):
            bits = acc[ww]
            while bits:
                b = _ctz(bits)
                bits &= bits - np.uint64(1)
                t = ww * 64 + b
                # prefix: cover elements of length >= L
                for k in range(w):
                    r[k] = row_bits[t, k]
                kk = 0
                cn = covn[t]
                while kk < cn:
                    c = cov[t, kk]
                    if ekey[c] > kx:
                        break
                    for k in range(w):
                        r[k] &= ~cbits[c, k]
                    kk += 1
                if not fits(cbits[x], r):
                    continue
                take(cbits[x], r)
                aff[na] = t
                apre[na] = kk
                nt_ns = _touch(x, 1, d_ns, stamp_ns, t_ns, nt_ns, epoch)
                for j in range(kk, cn):
                    nt_ns = _touch(cov[t, j], -1, d_ns, stamp_ns, t_ns, nt_ns, epoch)
                ns = _recover_suffix_idx(r, kx, lst, lst_off, lcnt, ekey, cbits,
                                         sfx[na], surv, w)
                sfxn[na] = ns
                for j in range(ns):
                    nt_ns = _touch(sfx[na, j], 1, d_ns, stamp_ns, t_ns, nt_ns, epoch)
                nt_s = _touch_singletons(r, rem[t], w, d_s, stamp_s, t_s, nt_s, epoch)
                for k in range(w):
                    sfxrem[na, k] = r[k]
                na += 1
        if na == 0:
            continue  # usage 0: nothing changes, equal size -> reject
        istate[7] += 1
        if not _decide(False, istate, fstate, order, m, x, usage_ns, d_ns, t_ns, nt_ns, cst,
                       usage_s, d_s, t_s, nt_s, st_s, flog, lg, tld, tlct):
            continue
        # ---- commit X
        for a in range(na):
            t = aff[a]
            kk = apre[a]
            cov[t, kk] = x
            for j in range(sfxn[a]):
                cov[t, kk + 1 + j] = sfx[a, j]
            covn[t] = kk + 1 + sfxn[a]
            for k in range(w):
                rem[t, k] = sfxrem[a, k]
        for j in range(m, p, -1):
            order[j] = order[j - 1]
        order[p] = x
        m += 1
        istate[0] = m
        istate[2] += 1
        ekey[x] = kx
        _list_insert(x, cand_items[cand_off[x + 1] - 1], lst, lst_off, lcnt, ekey)
        _refresh_accumulators(order, m, usage_ns, cst, usage_s, st_s, flog, lg, istate, fstate)
        if not prune:
            continue
        # ---- post-acceptance pruning
        for j in range(m):
            pos_of[order[j]] = j
        npl = 0
        for a in range(nt_ns):
            c = t_ns[a]
            if c != x and d_ns[c] < 0:
                # insert in cover order
                q = npl
                while q > 0 and pos_of[plist[q - 1]] > pos_of[c]:
                    plist[q] = plist[q - 1]
                    q -= 1
                plist[q] = c
                npl += 1
        while npl > 0:
            # the pending element that comes first in cover order (the list is kept in cover order)
            y = plist[0]
            for a in range(1, npl):
                plist[a - 1] = plist[a]
            npl -= 1
            m = istate[0]
            qy = 0
            while order[qy] != y:
                qy += 1
            if usage_ns[y] == 0:
                _list_remove(y, cand_items[cand_off[y + 1] - 1], lst, lst_off, lcnt)
                for j in range(qy, m - 1):
                    order[j] = order[j + 1]
                istate[0] = m - 1
                istate[3] += 1
                continue
            # evaluate CT \ Y: rows whose cover holds Y
            istate[5] += 1
            epoch = istate[5]
            nt_ns = 0
            nt_s = 0
            na = 0
            _rows_of(cand_items, cand_off[y], cand_off[y + 1], tid_bits, acc)
            for ww in range(acc.size):
                bits = acc[ww]
                while bits:
                    b = _ctz(bits)
                    bits &= bits - np.uint64(1)
                    t = ww * 64 + b
                    cn = covn[t]
                    kk = 0
                    while kk < cn and cov[t, kk] != y:
                        kk += 1
                    if kk == cn:
                        continue
                    for k in range(w):
                        r[k] = row_bits[t, k]
                    for j in range(kk):
                        c = cov[t, j]
                        for k in range(w):
                            r[k] &= ~cbits[c, k]
                    aff[na] = t
                    apre[na] = kk
                    for j in range(kk, cn):
                        nt_ns = _touch(cov[t, j], -1, d_ns, stamp_ns, t_ns, nt_ns, epoch)
                    ns = _recover_suffix_idx(r, ekey[y], lst, lst_off, lcnt, ekey, cbits, sfx[na], surv, w)
                    sfxn[na] = ns
                    for j in range(ns):
                        nt_ns = _touch(sfx[na, j], 1, d_ns, stamp_ns, t_ns, nt_ns, epoch)
                    nt_s = _touch_singletons(r, rem[t], w, d_s, stamp_s, t_s, nt_s, epoch)
                    for k in range(w):
                        sfxrem[na, k] = r[k]
                    na += 1
            if not _decide(True, istate, fstate, order, m, -1, usage_ns, d_ns, t_ns, nt_ns, cst,
                           usage_s, d_s, t_s, nt_s, st_s, flog, lg, tld, tlct):
                continue
            # commit removal of Y
            for a in range(na):
                t = aff[a]
                kk = apre[a]
                for j in range(sfxn[a]):
                    cov[t, kk + j] = sfx[a, j]
                covn[t] = kk + sfxn[a]
                for k in range(w):
                    rem[t, k] = sfxrem[a, k]
            _list_remove(y, cand_items[cand_off[y + 1] - 1], lst, lst_off, lcnt)
            for j in range(qy, m - 1):
                order[j] = order[j + 1]
            m -= 1
            istate[0] = m
            istate[3] += 1
            _refresh_accumulators(order, m, usage_ns, cst, usage_s, st_s, flog, lg, istate, fstate)
            for j in range(m):
                pos_of[order[j]] = j
            # the authors' list update after a removal: the pending elements are re-sorted by usage
            # (their sort, see _sort_pending), then every element whose usage the removal
            # decreased, taken in cover order, is inserted before the first pending element of
            # larger usage, unless it is pending already
            _sort_pending(plist, npl, usage_ns)
            nd = 0
            for a in range(nt_ns):
                c = t_ns[a]
                if c == y or d_ns[c] >= 0:
                    continue
                q = nd
                while q > 0 and pos_of[pdec[q - 1]] > pos_of[c]:
                    pdec[q] = pdec[q - 1]
                    q -= 1
                pdec[q] = c
                nd += 1
            for a in range(nd):
                c = pdec[a]
                present = False
                for q in range(npl):
                    if plist[q] == c:
                        present = True
                        break
                if present:
                    continue
                uc = usage_ns[c]
                q = 0
                while q < npl and usage_ns[plist[q]] <= uc:
                    q += 1
                for j in range(npl, q, -1):
                    plist[j] = plist[j - 1]
                plist[q] = c
                npl += 1
    return 0


# ----------------------------------------------------------------------------- driver
@dataclass(eq=False)
class KrimpResult:
    """Outcome of :func:`krimp`."""

    code_table: CodeTable
    n_candidates: int
    n_accepted: int
    n_pruned: int
    seconds_mining: float
    seconds_search: float
    prune: bool = True
    min_support: int | None = None
    closed: bool = False
    stats: dict = field(default_factory=dict)

    @property
    def sizes(self) -> dict:
        return self.code_table.sizes()

    def summary(self) -> dict:
        """The figures of the run as a dict (parameters, counts, sizes in bits, seconds)."""
        return {"closed": self.closed, "min_support": self.min_support, "prune": self.prune,
                "n_candidates": int(self.n_candidates), "n_accepted": int(self.n_accepted), "n_pruned": int(self.n_pruned),
                "code_table_itemsets": int(self.code_table.n_nontrivial), "sizes": self.code_table.sizes(),
                "seconds_mining": float(self.seconds_mining), "seconds_search": float(self.seconds_search)}

    def __str__(self) -> str:
        s = self.code_table.sizes()
        ms = "given" if self.min_support is None else str(self.min_support)
        return "\n".join(
            [
                f"KRIMP ({'closed' if self.closed else 'all'} candidates, min_support {ms}, "
                f"prune={'on' if self.prune else 'off'})",
                f"  candidates      {self.n_candidates:,}   accepted {self.n_accepted:,}   pruned {self.n_pruned:,}",
                f"  |CT \\ I|        {self.code_table.n_nontrivial:,}   used singletons {s['n_used_singletons']}",
                f"  L(D|CT)         {s['L_D_CT']:,.1f} bits",
                f"  L(CT|D)         {s['L_CT_D']:,.1f} bits",
                f"  L(D,CT)         {s['total']:,.1f} bits   (standard code table {s['total_ST']:,.1f})",
                f"  L%              {s['L_percent']:.2f}",
                f"  time            mining {self.seconds_mining:.2f} s, search {self.seconds_search:.2f} s",
            ]
        )

    def __repr__(self) -> str:
        return (
            f"KrimpResult(|CT\\I|={self.code_table.n_nontrivial}, n_candidates={self.n_candidates}, "
            f"n_accepted={self.n_accepted}, n_pruned={self.n_pruned})"
        )


def _normalise_candidates(
    d: Database,
    candidates: Any,
    min_support: int | None,
    max_len: int | None,
    exclude: Sequence[Sequence[int]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Given candidates → (offsets, new ids ascending per set, supports), filtered and ordered."""
    if isinstance(candidates, Candidates):
        off = candidates.offsets.astype(np.int64)
        sup = candidates.supports.astype(np.int64)
        if candidates.database is d and candidates.new_items is not None:
            new = candidates.new_items.astype(np.int64)
        else:
            new = d.to_new(candidates.items)
            rowid = np.repeat(np.arange(off.size - 1, dtype=np.int64), np.diff(off))
            new = new[np.lexsort((new, rowid))]
            # supports in this database (they decide nothing in the search, but are reported)
            sup = _supports(off, new, d.tid_bits)
        keep_order = True
    else:
        sets = [np.unique(np.asarray(list(x), dtype=np.int64).ravel()) for x in candidates]
        lens = np.array([s.size for s in sets], dtype=np.int64)
        off = np.zeros(len(sets) + 1, np.int64)
        np.cumsum(lens, out=off[1:])
        flat = np.concatenate(sets) if sets else np.zeros(0, np.int64)
        new = d.to_new(flat)
        rowid = np.repeat(np.arange(len(sets), dtype=np.int64), lens)
        new = new[np.lexsort((new, rowid))]
        sup = _supports(off, new, d.tid_bits)
        keep_order = False
    n = off.size - 1
    lens = np.diff(off)
    keep = lens >= 2
    if min_support is not None:
        keep &= sup >= min_support
    if max_len is not None:
        keep &= lens <= max_len
    bits = pack_rows(off, new, np.arange(d.n_items, dtype=np.int64), d.n_items)
    if exclude:
        ex = _exclusion_bits(d, exclude)
        for e in ex:
            keep &= ~np.all((bits & e) == e, axis=1)
    if not keep_order:
        # standard candidate order in this database
        perm = standard_order(bits, sup, d.n_items)
        perm = perm[keep[perm]]
    else:
        perm = np.nonzero(keep)[0]
    if perm.size != n or not np.array_equal(perm, np.arange(n)):
        lens_k = lens[perm]
        off2 = np.zeros(perm.size + 1, np.int64)
        np.cumsum(lens_k, out=off2[1:])
        idx = (np.repeat(off[:-1][perm], lens_k) + np.arange(int(lens_k.sum())) - np.repeat(off2[:-1], lens_k))
        new = new[idx]
        sup = sup[perm]
        off = off2
    return off, new, sup


def krimp(
    db: Any,
    candidates: Candidates | Sequence[Sequence[int]] | None = None,
    *,
    min_support: int | None = None,
    closed: bool = False,
    prune: bool = True,
    max_len: int | None = None,
    exclude: Sequence[Sequence[int]] = (),
    progress: bool | Callable[[int, int], Any] = False,
    max_candidates: int | None = DEFAULT_MAX_CANDIDATES,
) -> KrimpResult:
    """Run KRIMP (docs/krimp.md#krimp-code-tables-and-the-search) and return the code table.

    Parameters
    ----------
    db : TransactionArray, scipy sparse matrix/array, Database, or iterable of item-id lists
        The database (original integer item ids).
    candidates : Candidates or sequence of itemsets, optional
        A :class:`Candidates` object is used in its order (the standard candidate order when it
        comes from :func:`mine_candidates`); a plain sequence of itemsets is put into the
        standard candidate order of ``db``. When omitted, candidates are mined from ``db`` with
        ``min_support``, ``closed``, ``max_len`` and ``exclude``. With given candidates those
        options filter them.
    prune : bool
        Post-acceptance pruning (default, the authors' default); ``False`` as in the paper (docs/krimp.md#clarification-pruning).
    progress : bool or callable(done, total)
        A progress line on stderr, or a callback.
    max_candidates : int or None
        Bound on the mined candidates (:func:`mine_candidates`): a clear
        :class:`~ppdm_dask.errors.ResultTooLargeError` instead of running out of memory.
    """
    d = as_database(db)
    if min_support is not None:
        min_support = _check_int("min_support", min_support, 1)
    if max_len is not None:
        max_len = _check_int("max_len", max_len, 2)
    if exclude is None:
        exclude = ()
    t0 = time.perf_counter()
    if candidates is None:
        if min_support is None:
            raise InvalidParameter("give either candidates or min_support")
        cands = mine_candidates(d, min_support, closed=closed, max_len=max_len, exclude=exclude, max_candidates=max_candidates)
        off, new, sup = cands.offsets, cands.new_items, cands.supports
    else:
        off, new, sup = _normalise_candidates(d, candidates, min_support, max_len, exclude)
    t1 = time.perf_counter()

    n, w = d.row_bits.shape
    ni = d.n_items
    nc = off.size - 1
    crank = np.arange(max(nc, 1), dtype=np.int64)  # standard-order rank = position in the cover order key
    st_s = np.asarray(d.std_lengths[d.order], np.float64)  # stdlen per new id
    cbits = pack_rows(off, new, np.arange(ni, dtype=np.int64), ni)
    if nc == 0:
        cbits = np.zeros((1, w), np.uint64)
    clen = np.diff(off).astype(np.int64)
    cst = _itemset_stdlens(off, new, st_s)
    us = np.arange(n + 1, dtype=np.float64)
    lg = np.zeros(n + 1)
    lg[1:] = [math.log2(u) for u in range(1, n + 1)]
    flog = us * lg
    row_len = np.diff(d.indptr)
    maxc = max(1, int(row_len.max()) // 2)
    cap = max(nc, 1)
    order = np.zeros(cap, np.int64)
    usage_ns = np.zeros(cap, np.int64)
    usage_s = d.new_frequencies.astype(np.int64).copy()
    cov = np.zeros((n, maxc + 1), np.int64)
    covn = np.zeros(n, np.int64)
    rem = d.row_bits.copy()
    istate = np.zeros(8, np.int64)
    fstate = np.zeros(8, np.float64)
    istate[1] = int(usage_s.sum())
    tld = np.empty(cap + ni + 1)
    tlct = np.empty(cap + ni + 1)
    fstate[0] = _exact_size(order, 0, -1, usage_ns, cst, usage_s, st_s, istate[1], tld, tlct)
    _refresh_accumulators(order, 0, usage_ns, cst, usage_s, st_s, flog, lg, istate, fstate)
    scratch = dict(
        d_ns=np.zeros(cap, np.int64),
        stamp_ns=np.zeros(cap, np.int64),
        t_ns=np.zeros(cap, np.int64),
        d_s=np.zeros(ni, np.int64),
        stamp_s=np.zeros(ni, np.int64),
        t_s=np.zeros(ni, np.int64),
        aff=np.zeros(n, np.int64),
        apre=np.zeros(n, np.int64),
        sfx=np.zeros((n, maxc + 1), np.int64),
        sfxn=np.zeros(n, np.int64),
        sfxrem=np.zeros((n, w), np.uint64),
        acc=np.zeros(d.tid_bits.shape[1], np.uint64),
        plist=np.zeros(cap, np.int64),
        pos_of=np.zeros(cap, np.int64),
        pdec=np.zeros(cap, np.int64),
    )
    # per-item element lists (canonical item = largest new id of the element), sized by the
    # number of candidates with that canonical item (each candidate is in CT at most once)
    canon = new[off[1:] - 1] if nc else np.zeros(0, np.int64)
    lst_off = np.zeros(ni + 1, np.int64)
    np.cumsum(np.bincount(canon, minlength=ni), out=lst_off[1:])
    scratch.update(
        ekey=np.zeros(cap, np.int64),
        lst=np.zeros(max(nc, 1), np.int64),
        lst_off=lst_off,
        lcnt=np.zeros(ni, np.int64),
        surv=np.zeros(cap, np.int64),
        lmax=int(clen.max()) + 1 if nc else 2,
        crank=crank,
    )
    callback = None
    if callable(progress):
        callback = progress
    elif progress:
        from ..progress import step_reporter

        report = step_reporter("KRIMP candidates")

        def callback(done: int, total: int) -> None:
            report(done, total, f"|CT\\I| = {int(istate[0]):,}")
    chunk = nc if callback is None else max(1000, nc // 100)
    s = 0
    while s < nc or (s == 0 and nc == 0):
        e = min(nc, s + chunk)
        _run(s, e, bool(prune), off, new, cbits, clen, cst, d.row_bits, d.tid_bits, st_s, flog, lg,
             order, usage_ns, usage_s, cov, covn, rem, istate, fstate, tld=tld, tlct=tlct, **scratch)
        s = e
        if callback is not None:
            callback(s, nc)
        if nc == 0:
            break
    t2 = time.perf_counter()

    m = int(istate[0])
    ids = order[:m]
    itemsets = []
    for c in ids.tolist():
        itemsets.append(np.sort(d.new_labels[new[off[c] : off[c + 1]]]))
    itemsets += [np.array([lab], np.int64) for lab in d.new_labels.tolist()]
    ct = CodeTable(
        itemsets=itemsets,
        usages=np.concatenate([usage_ns[ids], usage_s]),
        supports=np.concatenate([sup[ids], d.new_frequencies]),
        alphabet=d.labels,
        n_rows=d.n_rows,
        std_lengths=d.std_lengths,
        # public record of how the table was found (saved with it; CodeTable.save refuses secrets)
        parameters={"candidates": "mined" if candidates is None else "given", "min_support": min_support, "closed": bool(closed),
                    "prune": bool(prune), "max_len": max_len, "exclude": [[int(i) for i in x] for x in exclude]},
    )
    stats = {
        "best": float(fstate[0]),
        "n_exact_evaluations": int(istate[6]),
        "n_evaluated": int(istate[7]),
        "max_error_over_margin": float(fstate[4]),
    }
    return KrimpResult(
        code_table=ct,
        n_candidates=int(nc),
        n_accepted=int(istate[2]),
        n_pruned=int(istate[3]),
        seconds_mining=t1 - t0,
        seconds_search=t2 - t1,
        prune=bool(prune),
        min_support=min_support,
        closed=bool(closed),
        stats=stats,
    )
