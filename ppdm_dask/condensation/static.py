"""Static condensation with variable privacy levels (Aggarwal & Yu, Figs. 2-5;
docs/condensation.md#static-construction).

:func:`construct_groups` runs ConstructGroups on one in-memory partition: level by level,
Segment the records of that level into groups of exactly ``p`` (plus leftovers), Cannibalize
earlier groups that are better off (or forced, when deficient) inside the new ones, then let
Attrition move surplus records of oversized new groups to viable earlier groups; finally Repair
merges any group still smaller than its largest privacy level.

Everything after validation runs in one numba kernel. Group state is kept incrementally
(``n``, first-order sums ``Fs``, requirement ``req = max p``, member list as a linked list), so
centroids and the cannibalization SSQ change are O(d) per record. The random draws of Segment
are the only use of ``rng``; since every Segment group removes exactly ``p`` records, the sizes
``|R|`` of all draws are known in advance and the draws are made up front, in the algorithm's order
and with its exact call ``rng.integers(|R|)``.

Exactness. Every nearest-centroid / nearest-record decision compares squared distances computed
by one loop (ties: earliest group / smallest record index, docs/randomness.md#ties-and-determinism). The candidate filters in
Cannibalize and Attrition are conservative (triangle inequality with a relative slack far above
rounding), so they never change a decision.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..errors import InfeasiblePrivacyError, InvalidParameter
from ._validate import check_levels, check_records

__all__ = ["construct_groups", "group_ssq"]

#: Relative slack of the triangle-inequality candidate filters (rounding is ~1e-16), plus an
#: absolute one so that zero distances pass.
_SLACK = 1e-9
_TINY = 1e-300
#: Leaf size of Segment's k-d tree (read at call time, so tests can shrink it).
_LEAF = 32


def _check_input(X: np.ndarray, privacy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = check_records(X)
    return X, check_levels(privacy, X.shape[0])


def construct_groups(X: np.ndarray, privacy: np.ndarray, rng: np.random.Generator, *, repair: bool = True) -> np.ndarray:
    """Static condensation (docs/condensation.md#static-construction) of one in-memory partition.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Finite records (converted to float64).
    privacy : ndarray, shape (n,)
        Integer privacy level of every record, >= 1 (level ``p``: the record's group must hold at
        least ``p`` records including itself).
    rng : numpy.random.Generator
        Used only for Segment's uniform samples (``rng.integers(len(R))``, in the algorithm's order), so a
        given generator state reproduces the result.
    repair : bool, default True
        Run the final Repair. ``False`` leaves deficient groups (size below the largest level of
        their members) for a global repair on statistics; only then can they remain.

    Returns
    -------
    ndarray of int64, shape (n,)
        Group of every record, groups numbered ``0..G-1`` in the final order of the algorithm's list H.

    Raises
    ------
    InfeasiblePrivacyError
        ``repair=True`` and a privacy level exceeds the number of records.
    InvalidParameter, DataFormatError
        Malformed input (levels < 1 or not integers, NaN in ``X``, shape mismatch).
    """
    if not isinstance(rng, np.random.Generator):
        raise InvalidParameter(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    X, p = _check_input(X, privacy)
    n = X.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.int64)
    p_max = int(p.max())
    if repair and p_max > n:
        raise InfeasiblePrivacyError(
            f"privacy level {p_max} cannot be met: there are only N = {n} records (a group needs at least {p_max})"
        )
    # Rows grouped by level, index order inside a level (stable sort).
    order = np.argsort(p, kind="stable").astype(np.int64)
    levels, starts = np.unique(p[order], return_index=True)
    bounds = np.append(starts, n).astype(np.int64)
    # Segment's draws, level by level: |R| goes |D|, |D|-p, ... while |R| >= p.
    draws: list[int] = []
    draw_start = np.zeros(levels.size + 1, dtype=np.int64)
    for li, lvl in enumerate(levels.tolist()):
        draw_start[li] = len(draws)
        if lvl >= 2:
            m = int(bounds[li + 1] - bounds[li])
            while m >= lvl:
                draws.append(int(rng.integers(m)))
                m -= lvl
    draw_start[-1] = len(draws)
    labels, status = _construct(
        X, p, order, levels.astype(np.int64), bounds, np.asarray(draws, dtype=np.int64), draw_start, bool(repair), _LEAF
    )
    if status != 0:  # unreachable after the check above; kept as a guard
        raise InfeasiblePrivacyError(f"privacy level {p_max} cannot be met with N = {n} records")
    return labels


def group_ssq(X: np.ndarray, labels: np.ndarray) -> float:
    """Total within-group sum of squares ``sum_g sum_{x in g} ||x - mean_g||^2``.

    Parameters
    ----------
    X : ndarray, shape (n, d)
    labels : ndarray of int, shape (n,)
        Group of every row (any non-negative ids).

    Returns
    -------
    float
        The quality measure of a condensation (smaller is better); 0.0 for empty input.
    """
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    if X.ndim != 2 or labels.shape != (X.shape[0],):
        raise InvalidParameter("X must be (n, d) and labels (n,)")
    if labels.size == 0:
        return 0.0
    if labels.min() < 0:
        raise InvalidParameter("labels must be non-negative")
    G = int(labels.max()) + 1
    cnt = np.bincount(labels, minlength=G).astype(np.float64)
    sums = np.zeros((G, X.shape[1]))
    np.add.at(sums, labels, X)
    mean = sums / np.maximum(cnt, 1.0)[:, None]
    return float(((X - mean[labels]) ** 2).sum())


# ----------------------------------------------------------------------------------------------
# numba kernel
# ----------------------------------------------------------------------------------------------


@numba.njit(cache=True, nogil=True)
def _sq(X, i, c):
    """||X[i] - c||^2, summed over the attributes in order (the one distance formula)."""
    s = 0.0
    for k in range(X.shape[1]):
        t = X[i, k] - c[k]
        s += t * t
    return s


@numba.njit(cache=True, nogil=True)
def _sqv(a, b):
    s = 0.0
    for k in range(a.shape[0]):
        t = a[k] - b[k]
        s += t * t
    return s


# Candidate lists are ordered by their distance to the group's centroid in this many bins, so that a
# record stops at the first bin beyond its own threshold. In 10 dimensions the candidates within a
# radius grow like its 10th power, so most records need only the first bins (a 200,000-row cell
# inside one cluster of the scale benchmark: Attrition 7.6 s -> 4.2 s; the "Cost" paragraph of
# docs/condensation.md#partition-then-merge-on-dask).
_BINS = 32


@numba.njit(cache=True, nogil=True)
def _bin_candidates(dist, ids, n, lim, out_dist, out_ids, starts):
    """Counting sort of candidates ``ids[:n]`` (distances ``dist[:n]`` in [0, lim]) into ``_BINS`` bins.

    Writes the reordered candidates into ``out_dist``/``out_ids``; bin ``b`` is
    ``out_*[starts[b]:starts[b + 1]]`` and holds distances of at least about ``b * lim / _BINS``
    (callers compare with a relative margin, so rounding in the bin index never drops a candidate).
    """
    for b in range(_BINS + 1):
        starts[b] = 0
    scale = _BINS / lim
    for c in range(n):
        b = int(dist[c] * scale)
        if b >= _BINS:
            b = _BINS - 1
        starts[b + 1] += 1
    for b in range(_BINS):
        starts[b + 1] += starts[b]
    fill = starts[:_BINS].copy()
    for c in range(n):
        b = int(dist[c] * scale)
        if b >= _BINS:
            b = _BINS - 1
        out_dist[fill[b]] = dist[c]
        out_ids[fill[b]] = ids[c]
        fill[b] += 1


@numba.njit(cache=True, nogil=True)
def _bin_floor(b, lim):
    """A lower bound, with margin, of the distances in bin ``b`` of ``_bin_candidates``."""
    return b * lim / _BINS * (1.0 - 1e-6)


@numba.njit(cache=True, nogil=True)
def _dist_to_all(mu, CT, n, out):
    """``out[j] = sqrt(_sqv(mu, C[j]))`` for ``j < n``, from the transposed centroids ``CT`` (d × n).

    The same terms added in the same order as ``_sqv`` (bit-identical), but the inner loop runs
    over contiguous centroids, which the compiler vectorizes (1.6 times faster than one ``_sqv``
    per centroid): Cannibalize and Attrition compare every group with every group of the other
    side.
    """
    for j in range(n):
        out[j] = 0.0
    for kk in range(CT.shape[0]):
        m = mu[kk]
        row = CT[kk]
        for j in range(n):
            t = m - row[j]
            out[j] += t * t
    for j in range(n):
        out[j] = math.sqrt(out[j])


@numba.njit(cache=True, nogil=True, inline="always")
def _nearest_binned(X, x, C, ids, dist, starts, lim, dx, best, bdist, room, req, px):
    """Nearest centroid of record ``x`` among binned candidates, as the smallest (distance, index)
    pair strictly below ``bdist`` (or ``best`` itself when none is); returns ``(best, bdist)``.

    ``ids``/``dist``/``starts``: the candidates (rows of ``C``) and their distances to the
    centroid of ``x``'s group, as ``_bin_candidates`` orders them; ``dx``: the distance of ``x`` to
    that centroid. A candidate ``h`` can only beat ``b`` if its distance is at most ``dx + b``
    (triangle inequality), so the visit stops at the first bin beyond that bound; the minimum does
    not depend on the visiting order. Only candidates with ``room[h] >= max(req[h], px)`` count
    (Attrition's viability; Cannibalize passes arrays that admit every candidate).
    """
    thr = (dx + math.sqrt(bdist)) * (1.0 + _SLACK) + _TINY
    for b in range(_BINS):
        if _bin_floor(b, lim) > thr:
            break
        for c in range(starts[b], starts[b + 1]):
            if dist[c] > thr:
                continue
            h = ids[c]
            if room[h] < req[h] or room[h] < px:
                continue
            dd = _sq(X, x, C[h])
            if dd < bdist or (dd == bdist and h < best):
                bdist = dd
                best = h
                thr = (dx + math.sqrt(bdist)) * (1.0 + _SLACK) + _TINY
    return best, bdist


@numba.njit(cache=True, nogil=True)
def _add(X, p, g, x, gn, gfs, greq, head, nxt, lab):
    """Put record x into group g (prepended to g's member list)."""
    lab[x] = g
    nxt[x] = head[g]
    head[g] = x
    gn[g] += 1
    for k in range(X.shape[1]):
        gfs[g, k] += X[x, k]
    if p[x] > greq[g]:
        greq[g] = p[x]


@numba.njit(cache=True, nogil=True)
def _members(g, head, nxt, buf):
    """Copy g's members into buf; returns their number."""
    c = 0
    x = head[g]
    while x >= 0:
        buf[c] = x
        c += 1
        x = nxt[x]
    return c


@numba.njit(cache=True, nogil=True)
def _construct(X, p, order, levels, bounds, draws, draw_start, do_repair, leaf):
    n, d = X.shape
    cap = n + 1
    gn = np.zeros(cap, np.int64)
    gfs = np.zeros((cap, d))
    greq = np.zeros(cap, np.int64)
    galive = np.zeros(cap, np.bool_)
    head = np.full(cap, -1, np.int64)
    nxt = np.full(n, -1, np.int64)
    lab = np.full(n, -1, np.int64)
    buf = np.empty(n, np.int64)
    tbuf = np.empty(n, np.int64)
    ng = np.int64(0)  # not a literal: avoids a second specialization of the callees

    for li in range(levels.shape[0]):
        P = levels[li]
        s, e = bounds[li], bounds[li + 1]
        if P == 1:  # H_1: singletons in index order
            for r in range(s, e):
                galive[ng] = True
                _add(X, p, ng, order[r], gn, gfs, greq, head, nxt, lab)
                ng += 1
            continue
        g0 = ng
        # ---------------- Segment(D_P, P, rng) ----------------
        R0 = order[s:e]  # the level's records, index order
        gm, R = _segment(X, R0, P, draws[draw_start[li] : draw_start[li + 1]], leaf)
        for q in range(gm.shape[0]):
            galive[ng] = True
            for a in range(P):  # x first, then its P-1 nearest
                _add(X, p, ng, gm[q, a], gn, gfs, greq, head, nxt, lab)
            ng += 1
        m = R.shape[0]
        k_new = ng - g0
        if k_new > 0:
            if m > 0:  # leftovers to the nearest frozen centroid (ties: earliest group)
                cents = np.empty((k_new, d))
                for j in range(k_new):
                    for kk in range(d):
                        cents[j, kk] = gfs[g0 + j, kk] / gn[g0 + j]
                for r in range(m):
                    y = R[r]
                    best = 0
                    bdist = _sq(X, y, cents[0])
                    for j in range(1, k_new):
                        dd = _sq(X, y, cents[j])
                        if dd < bdist:
                            bdist = dd
                            best = j
                    _add(X, p, g0 + best, y, gn, gfs, greq, head, nxt, lab)
            _cannibalize(X, p, g0, ng, gn, gfs, greq, galive, head, nxt, lab, buf, tbuf)
            _attrition(X, p, P, g0, ng, gn, gfs, greq, galive, head, nxt, lab, buf)
        elif m > 0:  # 0 < |D_P| < P: one deficient group Q, after Hn (empty here;
            # docs/condensation.md#correction-a-level-with-fewer-records-than-its-privacy-level)
            galive[ng] = True
            for r in range(m):
                _add(X, p, ng, R[r], gn, gfs, greq, head, nxt, lab)
            ng += 1

    status = 0
    if do_repair:
        status = _repair(X, ng, gn, gfs, greq, galive, head, nxt, lab)
    rank = np.full(ng, -1, np.int64)
    c = 0
    for g in range(ng):
        if galive[g]:
            rank[g] = c
            c += 1
    out = np.empty(n, np.int64)
    for i in range(n):
        out[i] = rank[lab[i]]
    return out, status


@numba.njit(cache=True, nogil=True)
def _select(X, rows, perm, lo, hi, kth, dim):
    """Reorder perm[lo:hi] so that perm[kth] has the kth-smallest coordinate ``dim``, smaller or
    equal ones before it and larger or equal ones after (quickselect, median-of-three pivot)."""
    while hi - lo > 1:
        a, b, c = perm[lo], perm[(lo + hi) // 2], perm[hi - 1]
        va, vb, vc = X[rows[a], dim], X[rows[b], dim], X[rows[c], dim]
        if (va <= vb <= vc) or (vc <= vb <= va):
            pivot = vb
        elif (vb <= va <= vc) or (vc <= va <= vb):
            pivot = va
        else:
            pivot = vc
        # three-way partition: [< pivot | == pivot | > pivot]
        i, lt, gt = lo, lo, hi
        while i < gt:
            u = X[rows[perm[i]], dim]
            if u < pivot:
                perm[i], perm[lt] = perm[lt], perm[i]
                lt += 1
                i += 1
            elif u > pivot:
                gt -= 1
                perm[i], perm[gt] = perm[gt], perm[i]
            else:
                i += 1
        if kth < lt:
            hi = lt
        elif kth >= gt:
            lo = gt
        else:
            return


@numba.njit(cache=True, nogil=True)
def _kd_build(X, rows, leaf):
    """k-d tree over X[rows] (median split of the widest box side), tight boxes.

    Returns (perm, start, end, left, right, parent, lo, hi, leaf_of): node ``v`` holds the local
    positions ``perm[start[v]:end[v]]``; ``left[v] < 0`` for a leaf; ``leaf_of[pos]`` is the leaf
    of local position ``pos``.
    """
    m = rows.shape[0]
    d = X.shape[1]
    maxn = 4 * (m // leaf + 1) + 1
    perm = np.arange(m)
    start = np.zeros(maxn, np.int64)
    end = np.zeros(maxn, np.int64)
    left = np.full(maxn, -1, np.int64)
    right = np.full(maxn, -1, np.int64)
    parent = np.full(maxn, -1, np.int64)
    lo = np.empty((maxn, d))
    hi = np.empty((maxn, d))
    leaf_of = np.empty(m, np.int64)
    stack = np.empty(maxn, np.int64)
    nn = 1
    start[0], end[0] = 0, m
    sp = 0
    stack[sp] = 0
    sp += 1
    while sp > 0:
        sp -= 1
        v = stack[sp]
        s0, e0 = start[v], end[v]
        for k in range(d):
            lo[v, k] = np.inf
            hi[v, k] = -np.inf
        for a in range(s0, e0):
            r = rows[perm[a]]
            for k in range(d):
                u = X[r, k]
                if u < lo[v, k]:
                    lo[v, k] = u
                if u > hi[v, k]:
                    hi[v, k] = u
        dim = np.int64(0)
        wid = -1.0
        for k in range(d):
            if hi[v, k] - lo[v, k] > wid:
                wid = hi[v, k] - lo[v, k]
                dim = k
        if e0 - s0 <= leaf or wid <= 0.0:
            for a in range(s0, e0):
                leaf_of[perm[a]] = v
            continue
        mid = (s0 + e0) // 2
        _select(X, rows, perm, s0, e0, mid, dim)
        w = nn
        nn += 2
        left[v], right[v] = w, w + 1
        start[w], end[w], parent[w] = s0, mid, v
        start[w + 1], end[w + 1], parent[w + 1] = mid, e0, v
        stack[sp] = w
        stack[sp + 1] = w + 1
        sp += 2
    return perm, start, end, left, right, parent, lo, hi, leaf_of


@numba.njit(cache=True, nogil=True)
def _box_sq(X, x, lo, hi, v):
    """Squared distance from X[x] to node v's box, a float lower bound of _sq to any point in it.

    Exact bound: each term is computed like _sq's (a difference, squared, summed in attribute
    order) from a difference no larger in magnitude, and rounding is monotone.
    """
    s = 0.0
    for k in range(X.shape[1]):
        u = X[x, k]
        if u < lo[v, k]:
            t = lo[v, k] - u
        elif u > hi[v, k]:
            t = u - hi[v, k]
        else:
            t = 0.0
        s += t * t
    return s


@numba.njit(cache=True, nogil=True)
def _segment(X, R0, P, draws, leaf):
    """Segment (docs/condensation.md#static-construction) on the level's records R0 (index order) with the pre-made draws.

    Returns the groups (rows: x, then its P-1 nearest remaining records in (distance, index)
    order) and the leftover records in index order. The remaining set R is a Fenwick tree over
    positions (the draw-th remaining record in O(log m)) and a k-d tree with live counts (exact
    nearest-neighbour search; boxes are pruned only when strictly farther than the current
    (P-1)-th distance, so ties are all seen and broken by record index).
    """
    m = R0.shape[0]
    ngr = draws.shape[0]
    gm = np.empty((ngr, P), np.int64)
    if ngr == 0:
        return gm, R0.copy()
    d = X.shape[1]
    perm, start, end, left, right, parent, lo, hi, leaf_of = _kd_build(X, R0, leaf)
    cnt = end - start
    alive = np.ones(m, np.bool_)
    fen = np.zeros(m + 1, np.int64)  # Fenwick tree of alive flags
    for i in range(1, m + 1):
        fen[i] += 1
        j = i + (i & -i)
        if j <= m:
            fen[j] += fen[i]
    top = 1
    while top * 2 <= m:
        top *= 2
    bd = np.empty(P - 1)
    bi = np.empty(P - 1, np.int64)
    bp = np.empty(P - 1, np.int64)
    stack = np.empty(start.shape[0], np.int64)
    sbound = np.empty(start.shape[0])  # box lower bound of each stacked node
    for q in range(ngr):
        # x = R[draw]: the (draw+1)-th alive position
        pos = 0
        rem = draws[q] + 1
        step = top
        while step > 0:
            if pos + step <= m and fen[pos + step] < rem:
                pos += step
                rem -= fen[pos]
            step //= 2
        xp = pos
        x = R0[xp]
        nb = 0
        sp = 0
        stack[sp] = 0
        sbound[sp] = 0.0
        sp += 1
        while sp > 0:
            sp -= 1
            v = stack[sp]
            if cnt[v] == 0:
                continue
            if nb == P - 1 and sbound[sp] > bd[P - 2]:
                continue
            if left[v] < 0:
                for a in range(start[v], end[v]):
                    yp = perm[a]
                    if not alive[yp] or yp == xp:
                        continue
                    y = R0[yp]
                    dd = 0.0
                    for k in range(d):
                        u = X[y, k] - X[x, k]
                        dd += u * u
                    if nb < P - 1:
                        at = nb
                        nb += 1
                    elif dd < bd[P - 2] or (dd == bd[P - 2] and y < bi[P - 2]):
                        at = P - 2
                    else:
                        continue
                    while at > 0 and (bd[at - 1] > dd or (bd[at - 1] == dd and bi[at - 1] > y)):
                        bd[at] = bd[at - 1]
                        bi[at] = bi[at - 1]
                        bp[at] = bp[at - 1]
                        at -= 1
                    bd[at] = dd
                    bi[at] = y
                    bp[at] = yp
            else:  # visit the nearer child first (pushed last)
                l, r = left[v], right[v]
                bl = _box_sq(X, x, lo, hi, l)
                br = _box_sq(X, x, lo, hi, r)
                if bl <= br:
                    stack[sp], sbound[sp] = r, br
                    stack[sp + 1], sbound[sp + 1] = l, bl
                else:
                    stack[sp], sbound[sp] = l, bl
                    stack[sp + 1], sbound[sp + 1] = r, br
                sp += 2
        gm[q, 0] = x
        for a in range(P - 1):
            gm[q, a + 1] = bi[a]
        # remove x and its neighbours from R
        for a in range(P):
            yp = xp if a == 0 else bp[a - 1]
            alive[yp] = False
            v = leaf_of[yp]
            while v >= 0:
                cnt[v] -= 1
                v = parent[v]
            i = yp + 1
            while i <= m:
                fen[i] -= 1
                i += i & -i
    nrem = 0
    for a in range(m):
        nrem += alive[a]
    R = np.empty(nrem, np.int64)
    c = 0
    for a in range(m):
        if alive[a]:
            R[c] = R0[a]
            c += 1
    return gm, R


@numba.njit(cache=True, nogil=True)
def _cannibalize(X, p, g0, ng, gn, gfs, greq, galive, head, nxt, lab, buf, tbuf):
    """Cannibalize (docs/condensation.md#static-construction): groups g < g0 (H, creation order) against Hn = g0..ng-1.

    Hn centroids are updated after every absorbed group (the sequential semantics).
    ΔSSQ of moving G's records (target subsets S_g, sizes m_g) into Hn is computed exactly as
    sum_g [n_g m_g/(n_g+m_g) ||mu_g - mu(S_g)||^2 - m_g ||mu(S_g) - mu(G)||^2]
    (union formula of docs/condensation.md#group-statistics plus the within/between split of SSQ(G)).
    """
    d = X.shape[1]
    k = ng - g0
    cents = np.empty((k, d))
    centsT = np.empty((d, k))
    for j in range(k):
        for kk in range(d):
            cents[j, kk] = gfs[g0 + j, kk] / gn[g0 + j]
            centsT[kk, j] = cents[j, kk]
    slot = np.full(k, -1, np.int64)
    tlist = np.empty(k, np.int64)
    ssum = np.empty((k, d))
    scnt = np.empty(k, np.int64)
    dc = np.empty(k)
    cidx = np.empty(k, np.int64)
    cval = np.empty(k)
    sval = np.empty(k)
    sidx = np.empty(k, np.int64)
    starts = np.empty(_BINS + 1, np.int64)
    any_room = np.ones(k, np.int64)  # every new group may receive (no viability test here)
    no_req = np.zeros(k, np.int64)
    muG = np.empty(d)
    for G in range(g0):
        if not galive[G]:
            continue
        if gn[G] == 1 and greq[G] <= 1:
            continue  # a feasible singleton has ΔSSQ >= 0: never cannibalized (docs/condensation.md#static-construction)
        nG = _members(G, head, nxt, buf)
        for kk in range(d):
            muG[kk] = gfs[G, kk] / nG
        # Candidate filters (triangle inequality around muG, relative slack far above rounding):
        # per group, the nearest centroid of any member lies within dmin + 2r of muG (r = radius
        # of G); per record, c_j can only beat the best distance b if dc_j <= dist(x, muG) + b.
        r2 = 0.0
        for a in range(nG):
            dd = _sq(X, buf[a], muG)
            if dd > r2:
                r2 = dd
        dmin = np.inf
        jmin = 0
        _dist_to_all(muG, centsT, k, dc)
        for j in range(k):
            if dc[j] < dmin:
                dmin = dc[j]
                jmin = j
        lim = (dmin + 2.0 * math.sqrt(r2)) * (1.0 + _SLACK) + _TINY
        nc = 0
        for j in range(k):
            if dc[j] <= lim:
                cidx[nc] = j
                cval[nc] = dc[j]
                nc += 1
        _bin_candidates(cval, cidx, nc, lim, sval, sidx, starts)
        # temporary assignment t(x): nearest current centroid, ties earliest
        for a in range(nG):
            x = buf[a]
            dx = math.sqrt(_sq(X, x, muG))
            # jmin is a good first guess: it makes the per-record filter effective
            best, _ = _nearest_binned(X, x, cents, sidx, sval, starts, lim, dx, jmin, _sq(X, x, cents[jmin]), any_room, no_req, 0)
            tbuf[a] = best
        take = (
            gn[G] < greq[G]
        )  # deficient groups are forced (docs/condensation.md#correction-the-forced-cannibalization-test-is-per-group)
        if not take:
            nt = 0
            for a in range(nG):
                j = tbuf[a]
                if slot[j] < 0:
                    slot[j] = nt
                    tlist[nt] = j
                    scnt[nt] = 0
                    for kk in range(d):
                        ssum[nt, kk] = 0.0
                    nt += 1
                sl = slot[j]
                scnt[sl] += 1
                for kk in range(d):
                    ssum[sl, kk] += X[buf[a], kk]
            # mu(G) from the same fresh sums, so the decomposition is consistent
            for kk in range(d):
                muG[kk] = 0.0
            for sl in range(nt):
                for kk in range(d):
                    muG[kk] += ssum[sl, kk]
            for kk in range(d):
                muG[kk] /= nG
            delta = 0.0
            for sl in range(nt):
                j = tlist[sl]
                mg = scnt[sl]
                ngj = gn[g0 + j]
                a1 = 0.0
                a2 = 0.0
                for kk in range(d):
                    ms = ssum[sl, kk] / mg
                    u = cents[j, kk] - ms
                    a1 += u * u
                    v = ms - muG[kk]
                    a2 += v * v
                delta += (ngj * mg) / (ngj + mg) * a1 - mg * a2
                slot[j] = -1
            take = delta < 0.0
        if take:
            for a in range(nG):
                _add(X, p, g0 + tbuf[a], buf[a], gn, gfs, greq, head, nxt, lab)
            galive[G] = False
            head[G] = -1
            gn[G] = 0
            for a in range(nG):
                j = tbuf[a]
                for kk in range(d):
                    cents[j, kk] = gfs[g0 + j, kk] / gn[g0 + j]
                    centsT[kk, j] = cents[j, kk]


@numba.njit(cache=True, nogil=True)
def _attrition(X, p, P, g0, ng, gn, gfs, greq, galive, head, nxt, lab, buf):
    """Attrition (docs/condensation.md#correction-sampling-and-viability-in-attrition) on a snapshot of H (groups < g0) taken at entry; moves applied at the end."""
    d = X.shape[1]
    nh = 0
    for g in range(g0):
        if galive[g]:
            nh += 1
    if nh == 0:
        return
    hid = np.empty(nh, np.int64)
    hc = np.empty((nh, d))
    hcT = np.empty((d, nh))
    dall = np.empty(nh)
    room = np.empty(nh, np.int64)  # size after receiving one more record
    hreq = np.empty(nh, np.int64)
    c = 0
    for g in range(g0):
        if galive[g]:
            hid[c] = g
            room[c] = gn[g] + 1
            hreq[c] = greq[g]
            for kk in range(d):
                hc[c, kk] = gfs[g, kk] / gn[g]
                hcT[kk, c] = hc[c, kk]
            c += 1
    # moves (record, destination group, source group)
    nmoves = 0
    cap_moves = 0
    for B in range(g0, ng):
        cap_moves += max(gn[B] - P, 0)
    mx = np.empty(cap_moves, np.int64)
    mj = np.empty(cap_moves, np.int64)
    mb = np.empty(cap_moves, np.int64)
    muB = np.empty(d)
    dcent = np.empty(nh)
    cand = np.empty(nh, np.int64)
    sdc = np.empty(nh)
    scand = np.empty(nh, np.int64)
    starts = np.empty(_BINS + 1, np.int64)
    for B in range(g0, ng):
        if gn[B] <= P:
            continue
        nB = _members(B, head, nxt, buf)
        for kk in range(d):
            muB[kk] = gfs[B, kk] / gn[B]
        # Only a move with Improve > 0 matters, i.e. dist(x, mu_j*) < dist(x, muB) = dx; then
        # dist(muB, mu_j*) < 2 dx <= 2r. Candidates: H groups within 2r of muB; per record, a
        # group h can only beat the best distance b if dist(muB, mu_h) <= dx + b.
        r2 = 0.0
        for a in range(nB):
            dd = _sq(X, buf[a], muB)
            if dd > r2:
                r2 = dd
        lim = 2.0 * math.sqrt(r2) * (1.0 + _SLACK) + _TINY
        nc = 0
        _dist_to_all(muB, hcT, nh, dall)
        for h in range(nh):
            dd = dall[h]
            if dd <= lim:
                cand[nc] = h
                dcent[nc] = dd
                nc += 1
        if nc == 0:
            continue
        _bin_candidates(dcent, cand, nc, lim, sdc, scand, starts)
        imp = np.empty(nB)
        dst = np.empty(nB, np.int64)
        npos = 0
        for a in range(nB):
            x = buf[a]
            px = p[x]
            dB = _sq(X, x, muB)
            dx = math.sqrt(dB)
            # only strictly closer viable groups can give Improve > 0 (viable after the move:
            # docs/condensation.md#correction-sampling-and-viability-in-attrition)
            best, bdist = _nearest_binned(X, x, hc, scand, sdc, starts, lim, dx, -1, dB, room, hreq, px)
            if best >= 0:
                v = dx - math.sqrt(bdist)
                if v > 0.0:
                    imp[npos] = v
                    dst[npos] = best
                    buf[npos] = x  # safe: position npos <= a was already read
                    npos += 1
        # S_B: the <= n(B) - P largest Improve values, ties by smaller record index
        quota = gn[B] - P
        for q in range(min(quota, npos)):
            bsel = q
            for a in range(q + 1, npos):
                if imp[a] > imp[bsel] or (imp[a] == imp[bsel] and buf[a] < buf[bsel]):
                    bsel = a
            imp[q], imp[bsel] = imp[bsel], imp[q]
            dst[q], dst[bsel] = dst[bsel], dst[q]
            buf[q], buf[bsel] = buf[bsel], buf[q]
            mx[nmoves] = buf[q]
            mj[nmoves] = hid[dst[q]]
            mb[nmoves] = B
            nmoves += 1
    if nmoves == 0:
        return
    for t in range(nmoves):
        x, j, B = mx[t], mj[t], mb[t]
        # unlink x from B
        prev = -1
        y = head[B]
        while y != x:
            prev = y
            y = nxt[y]
        if prev < 0:
            head[B] = nxt[x]
        else:
            nxt[prev] = nxt[x]
        gn[B] -= 1
        for kk in range(d):
            gfs[B, kk] -= X[x, kk]
        _add(X, p, j, x, gn, gfs, greq, head, nxt, lab)
    for t in range(nmoves):  # requirement of a source group = max level of what remains
        B = mb[t]
        r = 0
        y = head[B]
        while y >= 0:
            if p[y] > r:
                r = p[y]
            y = nxt[y]
        greq[B] = r


@numba.njit(cache=True, nogil=True)
def _repair(X, ng, gn, gfs, greq, galive, head, nxt, lab):
    """Repair (docs/condensation.md#addition-the-final-repair): earliest infeasible group merges into the nearest centroid."""
    d = X.shape[1]
    nalive = 0
    for g in range(ng):
        if galive[g]:
            nalive += 1
    cG = np.empty(d)
    ch = np.empty(d)
    start = 0
    while True:
        G = -1
        for g in range(start, ng):
            if galive[g] and gn[g] < greq[g]:
                G = g
                break
        if G < 0:
            return 0
        if nalive == 1:
            return 1
        for kk in range(d):
            cG[kk] = gfs[G, kk] / gn[G]
        best = -1
        bdist = np.inf
        for h in range(ng):
            if h == G or not galive[h]:
                continue
            for kk in range(d):
                ch[kk] = gfs[h, kk] / gn[h]
            dd = _sqv(cG, ch)
            if dd < bdist:
                bdist = dd
                best = h
        # splice G's members onto best
        x = head[G]
        last = -1
        while x >= 0:
            lab[x] = best
            last = x
            x = nxt[x]
        nxt[last] = head[best]
        head[best] = head[G]
        gn[best] += gn[G]
        for kk in range(d):
            gfs[best, kk] += gfs[G, kk]
        if greq[G] > greq[best]:
            greq[best] = greq[G]
        galive[G] = False
        head[G] = -1
        gn[G] = 0
        nalive -= 1
        start = min(G, best)
