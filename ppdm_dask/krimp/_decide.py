"""KRIMP decisions on the driver (numba kernels, no dask): sizes, accept/reject, pruning list.

Shared by the single-machine search (:mod:`.search`) and the distributed one
(:mod:`.distributed`): both hand these kernels the same summed usage changes, so every decision
— and therefore the code table — is the same (docs/krimp.md#exact-sizes-and-decisions).

Sizes. The documented size is L(D,CT) = fsum(u·l) + fsum(stdlen + l) over the elements with
usage > 0 (l = −log2(u/U)). Recomputing it for every candidate costs O(|CT|); instead an
incrementally kept approximation ``U·log2 U − Σ u·log2 u + Σ stdlen + K·log2 U − Σ log2 u``
(K = number of used elements) is compared with the best size first, with a safety margin
(1e-12·(K+64) relative to the magnitudes involved, ≥ 10^4 times any rounding error of either
expression). Only within that margin of the boundary — accepted candidates and near ties — is
the exact value computed: the same terms in the same floating-point operations as ``math.fsum``
gets them, summed by :func:`exact_sum` (correctly rounded, so the term order is immaterial).
``math.log2`` in numba calls the C library's ``log2``, as CPython's does.

State arrays. ``istate``: 0 m (elements in the table), 1 U (total usage), 2 accepted, 3 pruned,
4 K (used elements), 5 epoch, 6 exact evaluations, 7 evaluated candidates (usage > 0).
``fstate``: 0 best size, 1 A = Σ u·log2 u, 2 B = Σ log2 u, 3 S = Σ stdlen (used elements),
4 the largest |approximation − exact| / margin seen.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._cover import canonical_item, std_length, touch
from ._kernels import exact_sum

__all__ = ["exact_size", "refresh_accumulators", "decide", "sort_pending", "pending_after_insert", "pending_after_remove"]


@numba.njit(cache=True, nogil=True)
def exact_size(order, m, extra, usage_ns, cst, usage_s, st_s, U, tld, tlct):
    """L(D|CT) + L(CT|D) over the elements ``order[:m]`` (+ ``extra`` if ≥ 0) and the singletons."""
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
def refresh_accumulators(order, m, usage_ns, cst, usage_s, st_s, flog, lg, istate, fstate):
    """Recompute A, B, S and K from the current usages (after every change of the table)."""
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


@numba.njit(cache=True, nogil=True, inline="always")
def _account(u0, u1, cost, A, B, S, K, flog, lg):
    """One element's usage u0 → u1 in the accumulators (its stdlen ``cost`` counts while used)."""
    A += flog[u1] - flog[u0]
    B += lg[u1] - lg[u0]
    if u0 > 0 and u1 == 0:
        S -= cost
        K -= 1
    elif u0 == 0 and u1 > 0:
        S += cost
        K += 1
    return A, B, S, K


@numba.njit(cache=True, nogil=True)
def _approx_size(istate, fstate, usage_ns, d_ns, t_ns, nt_ns, cst, usage_s, d_s, t_s, nt_s, st_s, flog, lg):
    """Approximate total size after the pending change, its safety margin and the new U."""
    A = fstate[1]
    B = fstate[2]
    S = fstate[3]
    K = istate[4]
    U = istate[1]
    for a in range(nt_ns):
        c = t_ns[a]
        U += d_ns[c]
        A, B, S, K = _account(usage_ns[c], usage_ns[c] + d_ns[c], cst[c], A, B, S, K, flog, lg)
    for a in range(nt_s):
        i = t_s[a]
        U += d_s[i]
        A, B, S, K = _account(usage_s[i], usage_s[i] + d_s[i], st_s[i], A, B, S, K, flog, lg)
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
def decide(
    accept_equal,
    istate,
    fstate,
    order,
    m,
    extra,
    usage_ns,
    d_ns,
    t_ns,
    nt_ns,
    cst,
    usage_s,
    d_s,
    t_s,
    nt_s,
    st_s,
    flog,
    lg,
    tld,
    tlct,
):
    """True (usages updated, best size set) if the pending change makes the table smaller
    (``accept_equal``: or equal — pruning's non-strict test)."""
    best = fstate[0]
    approx, margin, U2 = _approx_size(istate, fstate, usage_ns, d_ns, t_ns, nt_ns, cst, usage_s, d_s, t_s, nt_s, st_s, flog, lg)
    if approx > best + margin:
        return False
    _apply_delta(usage_ns, d_ns, t_ns, nt_ns, usage_s, d_s, t_s, nt_s, 1)
    exact = exact_size(order, m, extra, usage_ns, cst, usage_s, st_s, U2, tld, tlct)
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


@numba.njit(cache=True, nogil=True)
def sort_pending(plist, npl, usage):
    """The authors' sort of the pending pruning list by usage, ascending, reproduced as it is.

    Pass ``a`` bubbles from position ``a`` to the end and the sort stops after a pass without a
    swap; position ``a`` is never revisited after pass ``a``, so the result is not always sorted
    (usages 3, 2, 1 become 2, 1, 3). Equal code tables need exactly this order.
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
def pending_after_insert(x, t_ns, d_ns, nt_ns, pos_of, plist):
    """The pending list after X was accepted: the elements whose usage X decreased, in cover
    order. Returns its length."""
    npl = 0
    for a in range(nt_ns):
        c = t_ns[a]
        if c != x and d_ns[c] < 0:
            q = npl
            while q > 0 and pos_of[plist[q - 1]] > pos_of[c]:
                plist[q] = plist[q - 1]
                q -= 1
            plist[q] = c
            npl += 1
    return npl


@numba.njit(cache=True, nogil=True)
def pending_after_remove(y, plist, npl, usage, t_ns, d_ns, nt_ns, pos_of, pdec):
    """The authors' list update after the removal of ``y``: the pending elements re-sorted by
    usage (:func:`sort_pending`), then every element whose usage the removal decreased, taken in
    cover order, inserted before the first pending element of larger usage unless it is pending
    already. Returns the new length."""
    sort_pending(plist, npl, usage)
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
        uc = usage[c]
        q = 0
        while q < npl and usage[plist[q]] <= uc:
            q += 1
        for j in range(npl, q, -1):
            plist[j] = plist[j - 1]
        plist[q] = c
        npl += 1
    return npl


@numba.njit(cache=True, nogil=True, inline="always")
def free_slot(istate, free, cap):
    """The slot the next accepted element would take (the last freed one, else a new one), or −1."""
    if istate[8] > 0:
        return free[istate[8] - 1]
    if istate[9] < cap:
        return istate[9]
    return -1


@numba.njit(cache=True, nogil=True)
def occupy(s, xb, key, sup, sbits, skey, scanon, ssup, istate, free):
    """Put an accepted itemset into slot ``s`` (the one :func:`free_slot` gave)."""
    if istate[8] > 0 and free[istate[8] - 1] == s:
        istate[8] -= 1
    else:
        istate[9] += 1
    for k in range(xb.size):
        sbits[s, k] = xb[k]
    skey[s] = key
    scanon[s] = canonical_item(xb)
    ssup[s] = sup
    istate[2] += 1


@numba.njit(cache=True, nogil=True)
def release(y, order, pos_of, free, istate):
    """Take slot ``y`` out of the cover order and onto the free stack (a deletion by pruning)."""
    istate[0] = unplace(order, istate[0], y, pos_of)
    istate[3] += 1
    free[istate[8]] = y
    istate[8] += 1


@numba.njit(cache=True, nogil=True)
def place(order, m, skey, s, pos_of):
    """Insert slot ``s`` into the cover order ``order[:m]`` by its key; returns the new m."""
    kx = skey[s]
    lo_ = 0
    hi_ = m
    while lo_ < hi_:
        mid = (lo_ + hi_) >> 1
        if skey[order[mid]] < kx:
            lo_ = mid + 1
        else:
            hi_ = mid
    for j in range(m, lo_, -1):
        order[j] = order[j - 1]
    order[lo_] = s
    m += 1
    for j in range(lo_, m):
        pos_of[order[j]] = j
    return m


@numba.njit(cache=True, nogil=True)
def unplace(order, m, s, pos_of):
    """Remove slot ``s`` from the cover order; returns the new m."""
    q = pos_of[s]
    for j in range(q, m - 1):
        order[j] = order[j + 1]
        pos_of[order[j]] = j
    return m - 1


# ----------------------------------------------------------------------------- batches (distributed search)
@numba.njit(cache=True, nogil=True)
def _load(b, ptr_ns, ids_ns, val_ns, ptr_s, ids_s, val_s, d_ns, stamp_ns, t_ns, d_s, stamp_s, t_s, epoch):
    """Summed usage changes of proposal ``b`` into the stamped scratch vectors."""
    nt_ns = 0
    for a in range(ptr_ns[b], ptr_ns[b + 1]):
        nt_ns = touch(ids_ns[a], val_ns[a], d_ns, stamp_ns, t_ns, nt_ns, epoch)
    nt_s = 0
    for a in range(ptr_s[b], ptr_s[b + 1]):
        nt_s = touch(ids_s[a], val_s[a], d_s, stamp_s, t_s, nt_s, epoch)
    return nt_ns, nt_s


@numba.njit(cache=True, nogil=True)
def decide_inserts(
    cbits,
    csup,
    keys,
    own,
    ptr_ns,
    ids_ns,
    val_ns,
    ptr_s,
    ids_s,
    val_s,
    n_items,
    st_s,
    flog,
    lg,
    sbits,
    skey,
    scanon,
    ssup,
    cst,
    order,
    pos_of,
    usage_ns,
    usage_s,
    free,
    plist,
    d_ns,
    stamp_ns,
    t_ns,
    d_s,
    stamp_s,
    t_s,
    tld,
    tlct,
    istate,
    fstate,
):
    """Decide the candidates of an evaluated batch in order, as :func:`..search._search_chunk`
    does; stop at the first acceptance (the rest was evaluated against the old table).

    Returns ``(status, b, npl, s)``: status 0 = all rejected; 1 = candidate ``b`` accepted into
    slot ``s`` (bookkeeping done; its pending pruning list, of length ``npl``, in ``plist``);
    2 = candidate ``b`` needs a free slot (grow the state and decide again from ``b``).
    """
    cap = sbits.shape[0]
    for b in range(own.size):
        if own[b] == 0:
            continue
        istate[5] += 1
        epoch = istate[5]
        nt_ns, nt_s = _load(b, ptr_ns, ids_ns, val_ns, ptr_s, ids_s, val_s, d_ns, stamp_ns, t_ns, d_s, stamp_s, t_s, epoch)
        istate[7] += 1
        s = free_slot(istate, free, cap)
        if s < 0:
            istate[7] -= 1
            return 2, b, 0, -1
        xb = cbits[b]
        cst[s] = std_length(xb, st_s)
        nt_ns = touch(s, own[b], d_ns, stamp_ns, t_ns, nt_ns, epoch)
        m = istate[0]
        if not decide(
            False,
            istate,
            fstate,
            order,
            m,
            s,
            usage_ns,
            d_ns,
            t_ns,
            nt_ns,
            cst,
            usage_s,
            d_s,
            t_s,
            nt_s,
            st_s,
            flog,
            lg,
            tld,
            tlct,
        ):
            continue
        occupy(s, xb, keys[b], csup[b], sbits, skey, scanon, ssup, istate, free)
        istate[0] = place(order, m, skey, s, pos_of)
        refresh_accumulators(order, istate[0], usage_ns, cst, usage_s, st_s, flog, lg, istate, fstate)
        return 1, b, pending_after_insert(s, t_ns, d_ns, nt_ns, pos_of, plist), s
    return 0, -1, 0, -1


@numba.njit(cache=True, nogil=True)
def decide_removals(
    plist,
    npl,
    slot_row,
    ptr_ns,
    ids_ns,
    val_ns,
    ptr_s,
    ids_s,
    val_s,
    st_s,
    flog,
    lg,
    cst,
    order,
    pos_of,
    usage_ns,
    usage_s,
    free,
    pdec,
    d_ns,
    stamp_ns,
    t_ns,
    d_s,
    stamp_s,
    t_s,
    tld,
    tlct,
    istate,
    fstate,
    events,
):
    """Work through the pending pruning list with the removal deltas of one evaluated batch.

    ``slot_row[s]`` is the batch row of slot ``s`` (−1: not evaluated). Zero-usage elements are
    zapped (event −1−s); the others are decided with their delta unless it touches an element
    zapped since the batch was evaluated, or was not evaluated — then the loop stops so that the
    rest is evaluated again. A deletion (event s) ends the batch too: the table changed. Returns
    ``(npl, n_events)``; ``plist`` holds what is still pending.
    """
    ne = 0
    while npl > 0:
        y = plist[0]
        if usage_ns[y] == 0:
            for a in range(1, npl):
                plist[a - 1] = plist[a]
            npl -= 1
            release(y, order, pos_of, free, istate)
            events[ne] = -1 - y
            ne += 1
            continue
        b = slot_row[y] if y < slot_row.size else -1
        if b < 0:
            break
        stale = False
        for a in range(ptr_ns[b], ptr_ns[b + 1]):
            c = ids_ns[a]
            for q in range(ne):
                if events[q] == -1 - c:
                    stale = True
        if stale:
            break
        for a in range(1, npl):
            plist[a - 1] = plist[a]
        npl -= 1
        istate[5] += 1
        istate[10] += 1
        epoch = istate[5]
        nt_ns, nt_s = _load(b, ptr_ns, ids_ns, val_ns, ptr_s, ids_s, val_s, d_ns, stamp_ns, t_ns, d_s, stamp_s, t_s, epoch)
        m = istate[0]
        if not decide(
            True,
            istate,
            fstate,
            order,
            m,
            -1,
            usage_ns,
            d_ns,
            t_ns,
            nt_ns,
            cst,
            usage_s,
            d_s,
            t_s,
            nt_s,
            st_s,
            flog,
            lg,
            tld,
            tlct,
        ):
            continue
        release(y, order, pos_of, free, istate)
        refresh_accumulators(order, istate[0], usage_ns, cst, usage_s, st_s, flog, lg, istate, fstate)
        npl = pending_after_remove(y, plist, npl, usage_ns, t_ns, d_ns, nt_ns, pos_of, pdec)
        events[ne] = y
        ne += 1
        break
    return npl, ne
