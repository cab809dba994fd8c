"""Exact top-k neighbour kernels on row blocks (pure numpy/scipy/numba; no dask).

A *prepared block* (:func:`prepare_block`) holds one row block twice: by rows (CSR, float64
values) and by items (the postings, CSC), plus the squared norms and the global row index of every
row. :func:`pair_topk` finds, for a pair of prepared blocks ``(A, B)``, the ``k`` nearest rows of
``B`` for every row of ``A`` **and** the ``k`` nearest rows of ``A`` for every row of ``B`` in one
pass over the unordered pair (``diag=True``: ``A is B``, the upper triangle only).

Exactness. Candidates are ordered by the total order ``(distance, global index)`` on distances
computed by one formula, :func:`_dist`, from ``(x.y, |x|^2, |y|^2)``; each of those numbers is a
left-to-right sum over the items in ascending id order, so it is bitwise the same whichever row is
the query, whatever the blocking (and equal to ``np.cumsum`` of the products). A cheap,
*conservative* filter (relative slack 1e-12, far above rounding) decides which pairs reach the
exact comparison, so the result is exact, not approximate.

Cost. The dot products of a query row with the rows of ``B`` are accumulated through the
postings of its items (inverted index): work ``sum_t supp_B(t)`` per query row, memory one
accumulator of ``|B|`` values, never an ``|A| x |B|`` matrix. Rows whose accumulation reaches a
good fraction of ``B`` then *scan* the dense accumulator (vectorised filter in chunks, exact
comparisons only for the few survivors); sparser rows record the touched rows and visit only
those. Pairs that share no item (dot = 0) are visited only by dense rows; a list that may still
miss such a pair (not full, or its worst distance is not below the smallest possible no-overlap
distance) is recomputed at the end for that row alone, which completes it with the untouched
rows in ``(distance, index)`` order (cosine: distance exactly 1, by index; euclidean: by
``(|y|^2, index)``, so small rows sharing nothing are found too).

Caps. A known upper bound of a row's final k-th distance (e.g. its k-th distance inside its own
block) lets :func:`pair_topk` drop farther candidates from the start; on Quest C20.I6.D200K this
cut the exact comparisons of a block pair about tenfold (168 -> 17 per row).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit

__all__ = [
    "Prepared",
    "prepare_block",
    "pair_topk",
    "windows_topk",
    "merge_topk",
    "merge_topk_unique",
    "empty_topk",
    "DENSE_RATIO",
]

#: A query row scans the dense accumulator when ``DENSE_RATIO * work >= rows to scan``
#: (work = postings visited); otherwise it keeps a list of touched rows. On Quest C20.I6.D200K
#: (12.5K-row block pairs, one thread) ratios 0 / 1 / 4 / inf took 0.92 / 0.78 / 0.67 / 0.73 s
#: per pair before the caps; 4 is kept.
DENSE_RATIO = 4.0
#: Relative slack of the candidate filter; rounding errors are ~1e-16.
_SLACK = 1e-12
#: Rows filtered per chunk of the scan before the exact comparisons.
_CHUNK = 64


class Prepared(NamedTuple):
    """One row block in the layout of the kernels (all arrays contiguous)."""

    indptr: np.ndarray  # (n + 1,) int64, CSR
    indices: np.ndarray  # (nnz,) int32, sorted within rows
    values: np.ndarray  # (nnz,) float64, x_t
    sq: np.ndarray  # (n,) float64, |x|^2 (ascending-item sum)
    inv: np.ndarray  # (n,) float64, 1/|x| (NaN for |x| = 0: never passes a filter)
    colptr: np.ndarray  # (n_items + 1,) int64, postings
    colrows: np.ndarray  # (nnz,) int32, rows of each item, ascending
    colvals: np.ndarray  # (nnz,) float64
    order: np.ndarray  # (n_valid,) int64, rows with |x| > 0 in no-overlap distance order
    minsq: float  # smallest |x|^2 > 0 (inf if none)
    gidx: np.ndarray  # (n,) int64, global row index, strictly increasing
    binary: bool  # every value is 1.0


# ----------------------------------------------------------------------------- preparation
@njit(cache=True, nogil=True)
def _row_sq(indptr, values):  # pragma: no cover - compiled
    n = indptr.size - 1
    out = np.zeros(n)
    for i in range(n):
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            s += values[p] * values[p]
        out[i] = s
    return out


@njit(cache=True, nogil=True)
def _transpose(indptr, indices, values, n_items):  # pragma: no cover - compiled
    # counting sort by item; rows are visited in order, so each posting list is ascending
    colptr = np.zeros(n_items + 1, np.int64)
    for p in range(indices.size):
        colptr[indices[p] + 1] += 1
    for t in range(n_items):
        colptr[t + 1] += colptr[t]
    fill = colptr[:-1].copy()
    rows = np.empty(indices.size, np.int32)
    vals = np.empty(indices.size, np.float64)
    for i in range(indptr.size - 1):
        for p in range(indptr[i], indptr[i + 1]):
            t = indices[p]
            q = fill[t]
            rows[q] = i
            vals[q] = values[p]
            fill[t] = q + 1
    return colptr, rows, vals


def prepare_block(
    block: sp.csr_array,
    weights: sp.csr_array | None,
    gidx: np.ndarray,
    cosine: bool,
) -> Prepared:
    """Lay out one row block for :func:`pair_topk`.

    Parameters
    ----------
    block : scipy.sparse.csr_array
        Transactions (sorted column ids per row); only the structure is used.
    weights : scipy.sparse.csr_array or None
        Values ``x_t`` with the structure of ``block``; ``None`` means 1.0 everywhere.
    gidx : ndarray of int64
        Global index of every row, strictly increasing (ties are broken on it).
    cosine : bool
        Metric; fixes the order in which rows that share no item with a query are completed
        (cosine: all at distance 1, by index; euclidean: by ``(|y|^2, index)``).
    """
    n, n_items = block.shape
    indptr = np.ascontiguousarray(block.indptr, dtype=np.int64)
    indices = np.ascontiguousarray(block.indices, dtype=np.int32)
    if weights is None:
        values = np.ones(indices.size, np.float64)
        binary = True
    else:
        values = np.ascontiguousarray(weights.data, dtype=np.float64)
        binary = bool(np.all(values == 1.0))
    sq = _row_sq(indptr, values)
    valid = sq > 0
    with np.errstate(divide="ignore"):
        inv = np.where(valid, 1.0 / np.sqrt(sq), np.nan)
    colptr, colrows, colvals = _transpose(indptr, indices, values, n_items)
    rows = np.flatnonzero(valid).astype(np.int64)
    order = rows if cosine else rows[np.argsort(sq[rows], kind="stable")]
    minsq = float(sq[rows].min()) if rows.size else np.inf
    gidx = np.ascontiguousarray(gidx, dtype=np.int64)
    if gidx.shape != (n,):
        raise ValueError("one global index per row is needed")
    return Prepared(indptr, indices, values, sq, inv, colptr, colrows, colvals, order, minsq, gidx, binary)


# ----------------------------------------------------------------------------- exact pieces
@njit(cache=True, nogil=True, inline="always")
def _dist(dot, sqa, sqb, cosine):  # pragma: no cover - compiled
    """The one distance formula (symmetric in a, b bit for bit)."""
    if cosine:
        d = 1.0 - dot / np.sqrt(sqa * sqb)
    else:
        d2 = sqa + sqb - 2.0 * dot
        d = np.sqrt(d2) if d2 > 0.0 else 0.0
    return d if d > 0.0 else 0.0


@njit(cache=True, nogil=True, inline="always")
def _bound(worst, sq, cosine):  # pragma: no cover - compiled
    """Filter threshold of a full heap: a pair can enter only if its filter value >= this.

    Filter values: cosine ``dot / |other|`` (~ cos * |x|); euclidean ``-(|x|^2+|y|^2-2 x.y)``.
    """
    if cosine:
        return (1.0 - worst - _SLACK) * np.sqrt(sq)
    return -(worst * worst * (1.0 + _SLACK))


@njit(cache=True, nogil=True)
def _insert(hd, hj, hdot, hsize, r, d, j, dot, k):  # pragma: no cover - compiled
    """Insert ``(d, j)`` into the ascending top-k list of row ``r`` if it belongs there."""
    n = hsize[r]
    if n == k:
        wd = hd[r, k - 1]
        if d > wd or (d == wd and j > hj[r, k - 1]):
            return False
        pos = k - 1
    else:
        pos = n
        hsize[r] = n + 1
    while pos > 0:
        pd = hd[r, pos - 1]
        if pd < d or (pd == d and hj[r, pos - 1] < j):
            break
        hd[r, pos] = pd
        hj[r, pos] = hj[r, pos - 1]
        hdot[r, pos] = hdot[r, pos - 1]
        pos -= 1
    hd[r, pos] = d
    hj[r, pos] = j
    hdot[r, pos] = dot
    return True


@njit(cache=True, nogil=True)
def _recompute(
    q_idx,
    q_val,
    p0,
    p1,
    sqq,
    t_colptr,
    t_colrows,
    t_colvals,
    t_sq,
    t_order,
    binary,
    acc,
    stamp,
    touched,
    sid,
    hd,
    hj,
    hdot,
    hsize,
    r,
    self_local,
    exclude_self,
    cosine,
    k,
    cap,
):  # pragma: no cover - compiled
    """Top-k of one query row (items ``q_idx[p0:p1]``) against a whole target block, written
    into row ``r`` of the heap arrays: touched rows exactly, then the rows sharing no item in
    ``(distance, index)`` order (``t_order``); only distances ``<= cap`` are kept."""
    hsize[r] = 0
    for c in range(k):
        hd[r, c] = np.inf
        hj[r, c] = -1
        hdot[r, c] = np.nan
    nt = 0
    for p in range(p0, p1):
        t = q_idx[p]
        w = q_val[p]
        for q in range(t_colptr[t], t_colptr[t + 1]):
            j = t_colrows[q]
            if stamp[j] != sid:
                stamp[j] = sid
                touched[nt] = j
                nt += 1
            if binary:
                acc[j] += 1.0
            else:
                acc[j] += w * t_colvals[q]
    for c in range(nt):
        j = touched[c]
        dt = acc[j]
        acc[j] = 0.0
        if (j == self_local and exclude_self) or t_sq[j] == 0.0:
            continue
        d = _dist(dt, sqq, t_sq[j], cosine)
        if d <= cap:
            _insert(hd, hj, hdot, hsize, r, d, j, dt, k)
    for c in range(t_order.size):
        j = t_order[c]
        if stamp[j] == sid or j == self_local:
            continue
        d = _dist(0.0, sqq, t_sq[j], cosine)
        if d > cap:
            break
        if hsize[r] == k:
            wd = hd[r, k - 1]
            if d > wd or (cosine and d == wd and j > hj[r, k - 1]):
                break  # the order is non-decreasing in distance (cosine: constant, by index)
        _insert(hd, hj, hdot, hsize, r, d, j, 0.0, k)


@njit(cache=True, nogil=True)
def _cross(a_ptr, a_idx, a_val, b_ptr, b_idx, b_val, hj, hsize, n_items, out):  # pragma: no cover - compiled
    """``out[r, c] = sum_t a_t^2 b_t^2`` for row r of A and its c-th neighbour ``hj[r, c]`` in B.

    Row r's squares are scattered into a dense scratch vector once; each neighbour then sums
    over its own items in ascending order (items not in r add +0.0, which changes nothing).
    """
    dense = np.zeros(n_items)
    for r in range(hj.shape[0]):
        if hsize[r] == 0:
            continue
        for p in range(a_ptr[r], a_ptr[r + 1]):
            x = a_val[p]
            dense[a_idx[p]] = x * x
        for c in range(hsize[r]):
            j = hj[r, c]
            s = 0.0
            for q in range(b_ptr[j], b_ptr[j + 1]):
                y = b_val[q]
                s += dense[b_idx[q]] * (y * y)
            out[r, c] = s
        for p in range(a_ptr[r], a_ptr[r + 1]):
            dense[a_idx[p]] = 0.0


@njit(cache=True, nogil=True)
def _visit(
    i, j, dt, take_r, take_c, sqi, sqj, cosine, k, rd, rj, rdot, rsize, cd, cj, cdot, csize, loA, loB, capA, capB
):  # pragma: no cover - compiled
    """Exact comparison of a pair that passed the filter; returns row i's new threshold."""
    if sqj == 0.0:
        return loA[i]
    d = _dist(dt, sqi, sqj, cosine)
    if take_r and d <= capA[i] and _insert(rd, rj, rdot, rsize, i, d, j, dt, k) and rsize[i] == k:
        loA[i] = _bound(rd[i, k - 1], sqi, cosine)
    if take_c and d <= capB[j] and _insert(cd, cj, cdot, csize, j, d, i, dt, k) and csize[j] == k:
        loB[j] = _bound(cd[j, k - 1], sqj, cosine)
    return loA[i]


@njit(cache=True, nogil=True, inline="always")
def _chunk_hits(acc, inv, sq, lo_c, lo_r, inv_r, sq_r, cosine):  # pragma: no cover - compiled
    """Number of rows of a chunk passing the row or the column filter (vectorisable)."""
    hits = 0
    if cosine:
        for c in range(acc.size):
            dt = acc[c]
            hits += (dt * inv[c] >= lo_r) | (dt * inv_r >= lo_c[c])
    else:
        for c in range(acc.size):
            v = -(sq_r + sq[c] - 2.0 * acc[c])
            hits += (v >= lo_r) | (v >= lo_c[c])
    return hits


@njit(cache=True, nogil=True, inline="always")
def _chunk_collect(acc, inv, sq, lo_c, lo_r, inv_r, sq_r, cosine, base, cand, cdots):  # pragma: no cover - compiled
    nc = 0
    for c in range(acc.size):
        dt = acc[c]
        if cosine:
            hit = dt * inv[c] >= lo_r or dt * inv_r >= lo_c[c]
        else:
            v = -(sq_r + sq[c] - 2.0 * dt)
            hit = v >= lo_r or v >= lo_c[c]
        if hit:
            cand[nc] = base + c
            cdots[nc] = dt
            nc += 1
    return nc


# ----------------------------------------------------------------------------- the pair kernel
@njit(cache=True, nogil=True)
def _pair_loop(
    a_ptr,
    a_idx,
    a_val,
    a_sq,
    a_inv,
    a_colptr,
    a_colrows,
    a_colvals,
    a_order,
    a_minsq,
    b_ptr,
    b_idx,
    b_val,
    b_sq,
    b_inv,
    b_colptr,
    b_colrows,
    b_colvals,
    b_order,
    b_minsq,
    diag,
    cosine,
    binary,
    k,
    exclude_self,
    dense_ratio,
    capA,
    capB,
    rd,
    rj,
    rdot,
    rsize,
    cd,
    cj,
    cdot,
    csize,
):  # pragma: no cover - compiled
    nA = a_sq.size
    nB = b_sq.size
    # Filter thresholds of the row heaps (A) and the column heaps (B), the same array if diag;
    # a finite cap (a known upper bound of the final k-th distance) tightens them from the start.
    loA = np.full(nA, -np.inf)
    loB = loA if diag else np.full(nB, -np.inf)
    for i in range(nA):
        if capA[i] < np.inf:
            loA[i] = _bound(capA[i], a_sq[i], cosine)
    for j in range(nB):
        if b_sq[j] == 0.0:
            loB[j] = np.inf  # empty rows are never anybody's neighbour
        elif capB[j] < np.inf:
            loB[j] = _bound(capB[j], b_sq[j], cosine)
    acc = np.zeros(nB)
    cand = np.empty(_CHUNK, np.int64)
    cdots = np.empty(_CHUNK)
    stamp = np.full(nB, -1, np.int64)
    touched = np.empty(nB, np.int64)
    ptr = b_colptr[:-1].copy()  # diag: first posting of each item with row > current row
    row_done = np.zeros(nA, np.bool_)  # off-diag: row scanned densely = complete w.r.t. B
    all_dense = True
    for i in range(nA):
        p0 = a_ptr[i]
        p1 = a_ptr[i + 1]
        sqi = a_sq[i]
        if sqi == 0.0:
            if diag:  # keep the postings cursors in step (only explicit zero values get here)
                for p in range(p0, p1):
                    ptr[a_idx[p]] += 1
            continue
        invi = a_inv[i]
        if diag and not exclude_self:
            _insert(rd, rj, rdot, rsize, i, _dist(sqi, sqi, sqi, cosine), i, sqi, k)
            if rsize[i] == k:
                loA[i] = _bound(rd[i, k - 1], sqi, cosine)
        work = 0
        for p in range(p0, p1):
            t = a_idx[p]
            start = ptr[t] + 1 if diag else b_colptr[t]
            work += b_colptr[t + 1] - start
        j0 = i + 1 if diag else 0
        dense = dense_ratio * work >= nB - j0
        nt = 0
        # accumulate x_i . y_j over the postings (ascending items: a fixed summation order)
        for p in range(p0, p1):
            t = a_idx[p]
            w = a_val[p]
            if diag:
                start = ptr[t] + 1
                ptr[t] = start
            else:
                start = b_colptr[t]
            stop = b_colptr[t + 1]
            if dense:
                if binary:
                    for q in range(start, stop):
                        acc[b_colrows[q]] += 1.0
                else:
                    for q in range(start, stop):
                        acc[b_colrows[q]] += w * b_colvals[q]
            else:
                for q in range(start, stop):
                    j = b_colrows[q]
                    if stamp[j] != i:
                        stamp[j] = i
                        touched[nt] = j
                        nt += 1
                    if binary:
                        acc[j] += 1.0
                    else:
                        acc[j] += w * b_colvals[q]
        if dense:
            row_done[i] = True
        else:
            all_dense = False
        # Hot loop: the filter only. Dense rows test a chunk of rows with a branch-free,
        # vectorised count first (loops start at 0 on array views: numba's negative-index
        # handling would otherwise block vectorisation) and collect candidates only from chunks
        # with a hit; then the exact comparisons. Thresholds only tighten, so filtering a chunk
        # with the thresholds of its start is conservative.
        n_visit = nB - j0 if dense else nt
        for c0 in range(0, n_visit, _CHUNK):
            c1 = min(c0 + _CHUNK, n_visit)
            lo_i = loA[i]
            nc = 0
            if dense:
                acc_v = acc[j0 + c0 : j0 + c1]
                if _chunk_hits(
                    acc_v, b_inv[j0 + c0 : j0 + c1], b_sq[j0 + c0 : j0 + c1], loB[j0 + c0 : j0 + c1], lo_i, invi, sqi, cosine
                ):
                    nc = _chunk_collect(
                        acc_v,
                        b_inv[j0 + c0 : j0 + c1],
                        b_sq[j0 + c0 : j0 + c1],
                        loB[j0 + c0 : j0 + c1],
                        lo_i,
                        invi,
                        sqi,
                        cosine,
                        j0 + c0,
                        cand,
                        cdots,
                    )
                acc_v[:] = 0.0
            else:
                for c in range(c0, c1):
                    j = touched[c]
                    dt = acc[j]
                    acc[j] = 0.0
                    if cosine:
                        vr = dt * b_inv[j]
                        vc = dt * invi
                    else:
                        vr = -(sqi + b_sq[j] - 2.0 * dt)
                        vc = vr
                    if vr >= lo_i or vc >= loB[j]:
                        cand[nc] = j
                        cdots[nc] = dt
                        nc += 1
            for c in range(nc):
                j = cand[c]
                dt = cdots[c]
                if cosine:
                    take_r = dt * b_inv[j] >= loA[i]
                    take_c = dt * invi >= loB[j]
                else:
                    vr = -(sqi + b_sq[j] - 2.0 * dt)
                    take_r = vr >= loA[i]
                    take_c = vr >= loB[j]
                if take_r or take_c:
                    _visit(
                        i,
                        j,
                        dt,
                        take_r,
                        take_c,
                        sqi,
                        b_sq[j],
                        cosine,
                        k,
                        rd,
                        rj,
                        rdot,
                        rsize,
                        cd,
                        cj,
                        cdot,
                        csize,
                        loA,
                        loB,
                        capA,
                        capB,
                    )
    if all_dense:
        return
    # Complete the heaps that may miss a pair sharing no item (visited only by dense rows).
    sid = nA  # stamps 0..nA-1 were used by the main pass
    for i in range(nA):
        sqi = a_sq[i]
        if sqi == 0.0 or (not diag and row_done[i]):
            continue
        lb = 1.0 if cosine else np.sqrt(sqi + b_minsq)
        if capA[i] < lb or (rsize[i] == k and rd[i, k - 1] < lb):
            continue  # no row sharing no item with i can enter
        _recompute(
            a_idx,
            a_val,
            a_ptr[i],
            a_ptr[i + 1],
            sqi,
            b_colptr,
            b_colrows,
            b_colvals,
            b_sq,
            b_order,
            binary,
            acc,
            stamp,
            touched,
            sid,
            rd,
            rj,
            rdot,
            rsize,
            i,
            i if diag else -1,
            exclude_self,
            cosine,
            k,
            capA[i],
        )
        sid += 1
    if diag:
        return
    acc_a = np.zeros(nA)
    stamp_a = np.full(nA, -1, np.int64)
    touched_a = np.empty(nA, np.int64)
    sid = 0
    for j in range(nB):
        sqj = b_sq[j]
        if sqj == 0.0:
            continue
        lb = 1.0 if cosine else np.sqrt(sqj + a_minsq)
        if capB[j] < lb or (csize[j] == k and cd[j, k - 1] < lb):
            continue
        _recompute(
            b_idx,
            b_val,
            b_ptr[j],
            b_ptr[j + 1],
            sqj,
            a_colptr,
            a_colrows,
            a_colvals,
            a_sq,
            a_order,
            binary,
            acc_a,
            stamp_a,
            touched_a,
            sid,
            cd,
            cj,
            cdot,
            csize,
            j,
            -1,
            exclude_self,
            cosine,
            k,
            capB[j],
        )
        sid += 1


def empty_topk(n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(dist, index, dot, cross)`` arrays of ``n`` rows without neighbours (inf, -1, NaN, NaN)."""
    return (
        np.full((n, k), np.inf),
        np.full((n, k), -1, np.int64),
        np.full((n, k), np.nan),
        np.full((n, k), np.nan),
    )


def _finish(hd, hj, hdot, hsize, own: Prepared, other: Prepared):
    cross = np.full(hd.shape, np.nan)
    n_items = own.colptr.size - 1
    _cross(own.indptr, own.indices, own.values, other.indptr, other.indices, other.values, hj, hsize, n_items, cross)
    pad = hj < 0
    gj = np.where(pad, -1, other.gidx[np.where(pad, 0, hj)]) if other.gidx.size else hj.copy()
    return hd, gj.astype(np.int64), hdot, cross


def pair_topk(
    a: Prepared,
    b: Prepared,
    k: int,
    *,
    cosine: bool = True,
    diag: bool = False,
    exclude_self: bool = True,
    cap_a: np.ndarray | None = None,
    cap_b: np.ndarray | None = None,
    dense_ratio: float = DENSE_RATIO,
):
    """Exact top-k lists of one block pair.

    Parameters
    ----------
    a, b : Prepared
        The two blocks (``diag=True``: the same block, pairs ``i < j`` visited once).
    k : int
        List length.
    cosine : bool
        Cosine distance (else euclidean).
    diag : bool
        ``a is b``: neighbours within one block.
    exclude_self : bool
        With ``diag``, whether a row may be its own neighbour (distance 0).
    cap_a, cap_b : ndarray of float64, optional
        Per-row upper bounds of the final k-th distance of the rows of ``a`` / ``b`` (e.g. the
        k-th distance within the row's own block): candidates farther than the cap are dropped,
        so the lists may be shorter than ``k``; merging them with the lists that produced the
        caps stays exact. Default: no cap.

    Returns
    -------
    rows : tuple
        ``(dist, index, dot, cross)`` of shape ``(len(a), k)``: the k nearest rows of ``b`` for
        every row of ``a``, ascending by ``(dist, global index)``; padding ``(inf, -1, NaN, NaN)``.
    cols : tuple or None
        The same for the rows of ``b`` against ``a`` (``None`` if ``diag``).
    """
    nA, nB = a.sq.size, b.sq.size
    rd, rj, rdot, _ = empty_topk(nA, k)
    rsize = np.zeros(nA, np.int64)
    if diag:
        cd, cj, cdot, csize = rd, rj, rdot, rsize
    else:
        cd, cj, cdot, _ = empty_topk(nB, k)
        csize = np.zeros(nB, np.int64)
    cap_a = np.full(nA, np.inf) if cap_a is None else np.ascontiguousarray(cap_a, dtype=np.float64)
    cap_b = cap_a if diag else (np.full(nB, np.inf) if cap_b is None else np.ascontiguousarray(cap_b, dtype=np.float64))
    if nA and nB:
        _pair_loop(
            *a[:10],
            *b[:10],
            diag,
            cosine,
            a.binary and b.binary,
            k,
            exclude_self,
            float(dense_ratio),
            cap_a,
            cap_b,
            rd,
            rj,
            rdot,
            rsize,
            cd,
            cj,
            cdot,
            csize,
        )
    rows = _finish(rd, rj, rdot, rsize, a, b)
    if diag:
        return rows, None
    return rows, _finish(cd, cj, cdot, csize, b, a)


@njit(cache=True, nogil=True)
def _windows_loop(
    indptr, indices, values, bounds, gidx, n_items, cosine, binary, k, exclude_self, dense_ratio, cap, od, oj, odot, ocr
):  # pragma: no cover - compiled
    for w in range(bounds.size - 1):
        a = bounds[w]
        b = bounds[w + 1]
        n = b - a
        ptr = indptr[a : b + 1] - indptr[a]
        idx = indices[indptr[a] : indptr[b]]
        val = values[indptr[a] : indptr[b]]
        sq = _row_sq(ptr, val)
        inv = np.empty(n)
        n_valid = 0
        minsq = np.inf
        for r in range(n):
            if sq[r] > 0.0:
                inv[r] = 1.0 / np.sqrt(sq[r])
                n_valid += 1
                minsq = min(minsq, sq[r])
            else:
                inv[r] = np.nan
        valid = np.empty(n_valid, np.int64)
        c = 0
        for r in range(n):
            if sq[r] > 0.0:
                valid[c] = r
                c += 1
        order = valid if cosine else valid[np.argsort(sq[valid], kind="mergesort")]
        colptr, colrows, colvals = _transpose(ptr, idx, val, n_items)
        rd = od[a:b]
        rj = oj[a:b]
        rdot = odot[a:b]
        rsize = np.zeros(n, np.int64)
        capw = cap[a:b].copy()
        _pair_loop(
            ptr,
            idx,
            val,
            sq,
            inv,
            colptr,
            colrows,
            colvals,
            order,
            minsq,
            ptr,
            idx,
            val,
            sq,
            inv,
            colptr,
            colrows,
            colvals,
            order,
            minsq,
            True,
            cosine,
            binary,
            k,
            exclude_self,
            dense_ratio,
            capw,
            capw,
            rd,
            rj,
            rdot,
            rsize,
            rd,
            rj,
            rdot,
            rsize,
        )
        _cross(ptr, idx, val, ptr, idx, val, rj, rsize, n_items, ocr[a:b])
        for r in range(n):
            for q in range(rsize[r]):
                rj[r, q] = gidx[a + rj[r, q]]


def windows_topk(
    block: sp.csr_array,
    gidx: np.ndarray,
    bounds: np.ndarray,
    k: int,
    *,
    cosine: bool = True,
    exclude_self: bool = True,
    cap: np.ndarray | None = None,
    dense_ratio: float = DENSE_RATIO,
):
    """Exact top-k lists inside consecutive windows of rows, in one compiled call.

    Parameters
    ----------
    block : scipy.sparse.csr_array
        Rows with their values ``x_t`` (sorted column ids per row).
    gidx : ndarray of int64
        Global index of every row; strictly increasing inside each window.
    bounds : ndarray of int64
        Window ``w`` is rows ``bounds[w]:bounds[w + 1]``.
    cap : ndarray of float64, optional
        Per-row cap of the distance (see :func:`pair_topk`).

    Returns
    -------
    tuple
        ``(dist, index, dot, cross)`` of shape ``(n, k)`` (global indices), as :func:`pair_topk`.
    """
    n, n_items = block.shape
    out = empty_topk(n, k)
    if n == 0:
        return out
    indptr = np.ascontiguousarray(block.indptr, dtype=np.int64)
    values = np.ascontiguousarray(block.data, dtype=np.float64)
    cap = np.full(n, np.inf) if cap is None else np.ascontiguousarray(cap, dtype=np.float64)
    _windows_loop(
        indptr,
        np.ascontiguousarray(block.indices, dtype=np.int32),
        values,
        np.ascontiguousarray(bounds, dtype=np.int64),
        np.ascontiguousarray(gidx, dtype=np.int64),
        n_items,
        cosine,
        bool(np.all(values == 1.0)),
        k,
        exclude_self,
        float(dense_ratio),
        cap,
        *out,
    )
    return out


# ----------------------------------------------------------------------------- merging
def merge_topk(parts: list[tuple[np.ndarray, ...]], k: int) -> tuple[np.ndarray, ...]:
    """Keep the ``k`` smallest ``(dist, index)`` per row of several lists of the same rows.

    The lists must hold disjoint candidates (true of the block pairs: each pair of rows is
    examined by exactly one task).
    """
    if len(parts) == 1:
        return parts[0]
    d = np.concatenate([p[0] for p in parts], axis=1)
    j = np.concatenate([p[1] for p in parts], axis=1)
    key = np.where(j < 0, np.iinfo(np.int64).max, j)
    order = np.lexsort((key, d), axis=1)[:, :k]
    return tuple(np.take_along_axis(np.concatenate([p[f] for p in parts], axis=1), order, axis=1) for f in range(4))


@njit(cache=True, nogil=True)
def _merge_unique(cd, cj, cdot, ccr, k, od, oj, odot, ocr):  # pragma: no cover - compiled
    """Per row, the k smallest distinct candidates ``(d, j)`` of ``(cd, cj)`` (-1 = none)."""
    size = np.zeros(od.shape[0], np.int64)
    for r in range(cd.shape[0]):
        for c in range(cd.shape[1]):
            j = cj[r, c]
            if j < 0:
                continue
            dup = False
            for q in range(size[r]):
                if oj[r, q] == j:
                    dup = True
                    break
            if dup:
                continue
            d = cd[r, c]
            n = size[r]
            if n == k:
                if d > od[r, k - 1] or (d == od[r, k - 1] and j > oj[r, k - 1]):
                    continue
                pos = k - 1
            else:
                pos = n
                size[r] = n + 1
            while pos > 0 and (od[r, pos - 1] > d or (od[r, pos - 1] == d and oj[r, pos - 1] > j)):
                od[r, pos] = od[r, pos - 1]
                oj[r, pos] = oj[r, pos - 1]
                odot[r, pos] = odot[r, pos - 1]
                ocr[r, pos] = ocr[r, pos - 1]
                pos -= 1
            od[r, pos] = d
            oj[r, pos] = j
            odot[r, pos] = cdot[r, c]
            ocr[r, pos] = ccr[r, c]


def merge_topk_unique(rows: np.ndarray, parts: list[tuple[np.ndarray, ...]], k: int) -> tuple[np.ndarray, ...]:
    """Top-k per row of ``rows`` (sorted global indices) from lists that may repeat candidates.

    ``parts``: tuples ``(row_gidx (m,), dist (m, k'), index, dot, cross)``; rows absent from
    every part get no neighbours. A candidate found several times (same values) counts once.
    """
    n = rows.size
    fill = np.zeros(n, np.int64)
    for p in parts:
        fill[np.searchsorted(rows, p[0])] += p[1].shape[1]
    cand = empty_topk(n, max(int(fill.max(initial=0)), 1))
    fill[:] = 0
    for p in parts:
        pos = np.searchsorted(rows, p[0])
        w = p[1].shape[1]
        cols = fill[pos][:, None] + np.arange(w)
        for f in range(4):
            cand[f][pos[:, None], cols] = p[1 + f]
        fill[pos] += w
    out = empty_topk(n, k)
    _merge_unique(cand[0], cand[1], cand[2], cand[3], k, out[0], out[1], out[2], out[3])
    return out
