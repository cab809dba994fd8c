"""Per-block kernels of the sketch method (docs/sketches.md): numpy + numba only, no dask.

The shared ±1 generator: for component ``j`` (1-based) the coefficients ``a0..a3`` are drawn from
``SeedSequence(seed, spawn_key=(0, j))`` and ``r_t^j = +1`` iff
``h_j(t) = (((a3 t + a2) t + a1) t + a0) mod P`` is even, with ``P = 2**31 - 1``.
"""

from __future__ import annotations

import numba
import numpy as np

from ..random import Tag

__all__ = [
    "PRIME",
    "ifloor",
    "component_coefficients",
    "signs",
    "signs_t",
    "sketch_block",
    "sketch_with_signs",
    "TABLE_MAX_ENTRIES",
    "distinct_columns",
    "delta_components",
    "row_sq_stats",
    "dot_variance",
    "max_components",
]

#: Mersenne prime 2**31 - 1: the field of the degree-3 hash polynomials (item ids must be < PRIME).
PRIME = 2**31 - 1
# Beyond this, int64 conversion of a float bound is meaningless; every caller caps at m_max anyway.
_IFLOOR_CAP = float(2**62)


def ifloor(z: np.ndarray | float) -> np.ndarray:
    """Tolerant floor ``floor(z + 1e-9 * max(1, |z|))`` as int64
    (docs/sketches.md#clarification-tolerant-floor).

    ``+inf`` maps to ``2**62``, ``-inf`` to ``-2**62`` and NaN to 0.
    """
    z = np.asarray(z, dtype=np.float64)
    f = np.floor(z + 1e-9 * np.maximum(1.0, np.abs(z)))
    f = np.nan_to_num(f, nan=0.0, posinf=_IFLOOR_CAP, neginf=-_IFLOOR_CAP)
    return np.clip(f, -_IFLOOR_CAP, _IFLOOR_CAP).astype(np.int64)


def component_coefficients(seed: int, j_lo: int, j_hi: int) -> np.ndarray:
    """Coefficients ``(a0, a1, a2, a3)`` of components ``j_lo <= j < j_hi`` (1-based), int64.

    Each component has its own SeedSequence stream, so component ``j`` never depends on how many
    components are drawn (prefix stability,
    docs/sketches.md#clarification-one-generator-shared-by-all-records).
    """
    if j_lo < 1 or j_hi < j_lo:
        raise ValueError("components are numbered from 1 and j_hi >= j_lo")
    out = np.empty((j_hi - j_lo, 4), dtype=np.int64)
    for row, j in enumerate(range(j_lo, j_hi)):
        ss = np.random.SeedSequence(int(seed), spawn_key=(int(Tag.SKETCH), j))
        out[row] = np.random.default_rng(ss).integers(0, PRIME, size=4)
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _fold(x):  # pragma: no cover - compiled
    # x -> a value congruent to x mod 2^31 - 1 below 2^32 (Mersenne folding, no division)
    return (x & 2147483647) + (x >> 31)


@numba.njit(cache=True, nogil=True, inline="always")
def _sign(a0, a1, a2, a3, t):  # pragma: no cover - compiled
    # Horner evaluation of a3 t^3 + a2 t^2 + a1 t + a0 mod P. Every * and + is followed by a
    # fold, which keeps each intermediate < 2^33, so products stay < 2^63 (no int64 overflow);
    # the final value is fully reduced. Branch-free so that the j-loop vectorises.
    h = _fold(a3 * t)
    h = _fold(h + a2)
    h = _fold(h * t)
    h = _fold(h + a1)
    h = _fold(h * t)
    h = _fold(_fold(h + a0))
    h = h - 2147483647 * (h >= 2147483647)
    return 1 - 2 * (h & 1)


@numba.njit(cache=True, nogil=True)
def _fill_signs(A0, A1, A2, A3, items, out):  # pragma: no cover - compiled
    # out[j, i] = r_{items[i]}^{j+1}
    for j in range(A0.shape[0]):
        a0, a1, a2, a3 = A0[j], A1[j], A2[j], A3[j]
        for i in range(items.shape[0]):
            out[j, i] = _sign(a0, a1, a2, a3, items[i])


@numba.njit(cache=True, nogil=True)
def _fill_signs_t(A0, A1, A2, A3, items, out):  # pragma: no cover - compiled
    # out[i, j] = r_{items[i]}^{j+1}: item-major, rows of the sign table are contiguous
    for i in range(items.shape[0]):
        t = items[i]
        for j in range(A0.shape[0]):
            out[i, j] = _sign(A0[j], A1[j], A2[j], A3[j], t)


@numba.njit(cache=True, nogil=True)
def _sketch_direct(indptr, indices, data, A0, A1, A2, A3, m, out):  # pragma: no cover - compiled
    # hash on the fly: no sign table, O(1) extra memory; ~1e9 nnz*components/s (AVX-512)
    for i in range(indptr.shape[0] - 1):
        row = out[i]
        for k in range(indptr[i], indptr[i + 1]):
            t = np.int64(indices[k])
            x = data[k]
            for j in range(m[i]):
                row[j] += x * _sign(A0[j], A1[j], A2[j], A3[j], t)


@numba.njit(cache=True, nogil=True)
def _sketch_lookup(indptr, local, data, table, m, out):  # pragma: no cover - compiled
    # rows of a precomputed sign table (one per distinct column of the block)
    for i in range(indptr.shape[0] - 1):
        row = out[i]
        for k in range(indptr[i], indptr[i + 1]):
            s = table[local[k]]
            x = data[k]
            for j in range(m[i]):
                row[j] += x * s[j]


def _coef_columns(coef: np.ndarray) -> list[np.ndarray]:
    coef = np.asarray(coef, dtype=np.int64).reshape(-1, 4)
    return [np.ascontiguousarray(coef[:, k]) for k in range(4)]


def _check_items(items: np.ndarray) -> np.ndarray:
    items = np.ascontiguousarray(items, dtype=np.int64)
    if items.size and (items.min() < 0 or items.max() >= PRIME):
        raise ValueError(f"item ids must lie in [0, {PRIME})")
    return items


def signs(coef: np.ndarray, items: np.ndarray) -> np.ndarray:
    """±1 signs ``r_t^j`` as int8, shape ``(len(coef), len(items))`` (row j = component j+1 of coef)."""
    cols = _coef_columns(coef)
    items = _check_items(np.asarray(items).ravel())
    out = np.empty((cols[0].size, items.size), dtype=np.int8)
    if out.size:
        _fill_signs(*cols, items, out)
    return out


def signs_t(coef: np.ndarray, items: np.ndarray) -> np.ndarray:
    """Transposed float64 signs, shape ``(len(items), len(coef))``: the dense right operand of
    ``X_block @ R.T`` (written in place, no int8 intermediate)."""
    cols = _coef_columns(coef)
    items = _check_items(np.asarray(items).ravel())
    out = np.empty((items.size, cols[0].size), dtype=np.float64)
    if out.size:
        _fill_signs_t(*cols, items, out)
    return out


def distinct_columns(indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(cols, local)``: the sorted distinct column ids of a block and each entry's position in
    ``cols``. A mark-and-cumsum pass (O(nnz + max id)) when the ids are dense enough, a sort
    otherwise."""
    indices = np.asarray(indices)
    if indices.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int32)
    top = int(indices.max()) + 1
    if top <= 8 * indices.size + 1024:
        mark = np.zeros(top, dtype=np.bool_)
        mark[indices] = True
        cols = np.flatnonzero(mark)
        pos = np.cumsum(mark, dtype=np.int64) - 1
        return cols.astype(np.int64), pos[indices].astype(np.int32)
    cols, local = np.unique(indices, return_inverse=True)
    return cols.astype(np.int64), local.astype(np.int32).ravel()


def _check_m(m: np.ndarray, n_rows: int, m_max: int) -> np.ndarray:
    m = np.ascontiguousarray(np.broadcast_to(np.asarray(m, dtype=np.int64), (n_rows,)))
    if m.size and (m.min() < 0 or m.max() > m_max):
        raise ValueError(f"numbers of components must lie in [0, {m_max}]")
    return m


def sketch_with_signs(
    indptr: np.ndarray, local: np.ndarray, data: np.ndarray, n_rows: int, table: np.ndarray, m: np.ndarray
) -> np.ndarray:
    """Sketches of a CSR block whose column ids were remapped to ``local`` (rows of the sign
    ``table``, shape ``(n_distinct, m_max)``): float64 ``(n_rows, m_max)``, zero beyond each
    row's ``m_i`` components."""
    table = np.ascontiguousarray(table, dtype=np.float64)
    m = _check_m(m, n_rows, table.shape[1])
    out = np.zeros((n_rows, table.shape[1]), dtype=np.float64)
    if n_rows and table.size:
        _sketch_lookup(np.asarray(indptr), np.asarray(local), np.asarray(data, dtype=np.float64), table, m, out)
    return out


#: The sign-table path is used when the table would be at most this many entries (8 bytes
#: each) and every distinct column is used this many times on average; otherwise signs are
#: hashed on the fly (about as fast, no memory). Measured with AVX-512: table 0.9-1.6e9,
#: direct 0.8-1.0e9 nnz*components/s.
TABLE_MAX_ENTRIES = 2**22
TABLE_MIN_REUSE = 4.0


def sketch_block(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, n_rows: int, coef: np.ndarray, m: np.ndarray
) -> np.ndarray:
    """Sketches of one CSR block, float64 ``(n_rows, m_max)`` with ``m_max = len(coef)``.

    ``s_i^j = sum_t x_it r_t^j`` for ``j < m_i`` and exactly 0.0 beyond (zero padding: the
    plain dot product of two padded sketches then sums the first ``min(m_i, m_j)`` components).
    """
    cols4 = _coef_columns(coef)
    m_max = cols4[0].size
    m = _check_m(m, n_rows, m_max)
    indices = np.asarray(indices)
    data = np.asarray(data, dtype=np.float64)
    if indices.size:
        _check_items(np.array([indices.min(), indices.max()]))
    nnz = indices.size
    if nnz and m_max:
        # distinct columns cost O(nnz), ~1% of the sketching work
        cols, local = distinct_columns(indices)
        if cols.size * m_max <= TABLE_MAX_ENTRIES and nnz >= TABLE_MIN_REUSE * cols.size:
            return sketch_with_signs(indptr, local, data, n_rows, signs_t(coef, cols), m)
    out = np.zeros((n_rows, m_max), dtype=np.float64)
    if n_rows and m_max and nnz:
        _sketch_direct(np.asarray(indptr), indices, data, *cols4, m, out)
    return out


def row_sq_stats(indptr: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row ``(sum x_t^2, max x_t^2)`` (zeros for empty rows), float64."""
    indptr = np.asarray(indptr, dtype=np.int64)
    n = indptr.size - 1
    sq = np.asarray(data, dtype=np.float64) ** 2
    total = np.zeros(n, dtype=np.float64)
    top = np.zeros(n, dtype=np.float64)
    nonempty = np.flatnonzero(np.diff(indptr) > 0)
    if nonempty.size:
        starts = indptr[nonempty]
        total[nonempty] = np.add.reduceat(sq, starts)
        top[nonempty] = np.maximum.reduceat(sq, starts)
    return total, top


def delta_components(indptr: np.ndarray, data: np.ndarray, delta: float, m_max: int) -> np.ndarray:
    """δ-anonymous number of components of every row (docs/sketches.md#δ-anonymity, with
    docs/sketches.md#correction-δ-anonymity-uses-the-largest-admissible-m and
    docs/sketches.md#correction-suppression-is-decided-at-one-component).

    ``V = sum x^2 - max x^2`` (0 for rows with at most one non-zero); ``m = min(ifloor(V/δ),
    m_max)``, the LARGEST admissible count, and 0 (suppressed) when it is below 1. int32.
    """
    total, top = row_sq_stats(indptr, data)
    nnz = np.diff(np.asarray(indptr, dtype=np.int64))
    v = np.where(nnz > 1, total - top, 0.0)
    r = ifloor(v / float(delta))
    m = np.minimum(r, int(m_max))
    m[m < 1] = 0
    return m.astype(np.int32)


def dot_variance(sqx: np.ndarray, sqy: np.ndarray, dot: np.ndarray, cross: np.ndarray) -> np.ndarray:
    """Per-component variance of the dot-product estimate, corrected
    (docs/sketches.md#correction-variance-of-the-dot-product-estimate):
    ``V = |x|^2 |y|^2 + (x.y)^2 - 2 sum_t x_t^2 y_t^2`` (``cross`` = the last sum)."""
    sqx, sqy, dot, cross = (np.asarray(a, dtype=np.float64) for a in (sqx, sqy, dot, cross))
    return sqx * sqy + dot**2 - 2.0 * cross


def max_components(v: np.ndarray, sqx: np.ndarray, sqy: np.ndarray, dot: np.ndarray, m_max: int) -> np.ndarray:
    """Largest ``m`` with ``sqrt(V/m) >= tau``, ``tau = |x||y| - |x.y|`` (docs/sketches.md#k-variance-anonymity), in
    ``[0, m_max]``, int64. ``m_max`` when ``tau <= 1e-12 |x||y|`` (parallel vectors: the
    condition holds for every m). Invariant to rescaling x or y."""
    v, sqx, sqy, dot = (np.asarray(a, dtype=np.float64) for a in (v, sqx, sqy, dot))
    norms = np.sqrt(sqx * sqy)
    tau = norms - np.abs(dot)
    degenerate = tau <= 1e-12 * norms
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(degenerate, np.inf, v / np.where(degenerate, 1.0, tau) ** 2)
    out = np.clip(ifloor(ratio), 0, int(m_max))
    return np.where(degenerate, int(m_max), out).astype(np.int64)
