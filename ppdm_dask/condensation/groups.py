"""Condensed group statistics (docs/condensation.md#group-statistics) and the principal-axis split
(docs/condensation.md#dynamic-maintenance).

A group is published only through ``n``, ``Fs = Σx``, ``Sc = Σxxᵀ`` and ``Ps = Σp``. Internally
every group is stored *centred* — ``mean`` and the scatter ``m2 = Σ(x − mean)(x − mean)ᵀ`` —
because ``Sc/n − μμᵀ`` cancels catastrophically when the data sit far from the origin (e.g.
``1e8 + noise`` loses every digit of the covariance). ``Fs`` and ``Sc`` are derived on demand.
Updates use Welford's formula (one point) and Chan's parallel formula (two groups).

The internal ``req`` (largest privacy level among the members; a level counts the record itself,
docs/condensation.md#clarification-a-privacy-level-counts-the-record-itself) decides feasibility
(``n >= req``) and is never published.

:class:`CondensedGroup` is one group (used by the sequential and dynamic algorithms);
:class:`GroupTable` holds G groups as arrays, the unit that travels between Dask tasks. Both
are treated as values: table methods return new tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from ..errors import DataFormatError, InvalidParameter

__all__ = ["CondensedGroup", "GroupTable"]


# --------------------------------------------------------------------------- validation helpers
def _points(X: Any) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise InvalidParameter(f"points must be a 2-D array (records x attributes), got {X.ndim}-D")
    if X.shape[0] == 0:
        raise InvalidParameter("a group needs at least one point")
    if not np.isfinite(X).all():
        bad = np.flatnonzero(~np.isfinite(X).all(axis=1))
        raise DataFormatError(f"records {bad[:10].tolist()} have NaN or infinite attributes")
    return X


def _levels(privacy: Any, n: int) -> np.ndarray:
    p = np.asarray(privacy)
    if p.ndim == 0:
        p = np.full(n, p)
    if p.shape != (n,):
        raise InvalidParameter(f"privacy levels must have one value per record ({n}), got shape {p.shape}")
    if p.dtype.kind == "f":
        if not (np.isfinite(p) & (p == np.round(p))).all():
            raise InvalidParameter("privacy levels must be integers")
    elif p.dtype.kind not in "iu":
        raise InvalidParameter(f"privacy levels must be integers, got dtype {p.dtype}")
    p = p.astype(np.int64)
    if p.size and p.min() < 1:
        raise InvalidParameter("privacy levels must be >= 1")
    return p


def _centred_moments(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and centred scatter of the rows of X (two-pass with a corrected mean)."""
    mean = X.mean(axis=0)
    # One correction step removes the rounding error of the first mean (and makes a constant
    # column's mean exact, so its scatter row/column is exactly zero).
    mean = mean + (X - mean).mean(axis=0)
    Xc = X - mean
    m2 = Xc.T @ Xc
    return mean, 0.5 * (m2 + m2.T)


# --------------------------------------------------------------------------- one group
@dataclass(eq=False)  # array fields: element-wise == would make dataclass equality ambiguous
class CondensedGroup:
    """One group's published statistics (docs/condensation.md#group-statistics); stored centred
    internally for stability.

    Attributes
    ----------
    n : int
        Number of records.
    mean : ndarray (d,)
        Centroid ``Fs / n``.
    m2 : ndarray (d, d)
        Centred scatter ``Σ (x − mean)(x − mean)ᵀ``.
    ps : float
        Sum of the privacy levels (a float: splits share it proportionally).
    req : int
        Largest privacy level among the members (internal, never published;
        docs/condensation.md#clarification-a-privacy-level-counts-the-record-itself).
    """

    n: int
    mean: np.ndarray
    m2: np.ndarray
    ps: float
    req: int = 1

    def __post_init__(self) -> None:
        self.n = int(self.n)
        self.mean = np.array(self.mean, dtype=np.float64).reshape(-1)
        d = self.mean.shape[0]
        self.m2 = np.array(self.m2, dtype=np.float64)
        if self.m2.shape != (d, d):
            raise InvalidParameter(f"m2 must have shape ({d}, {d}), got {self.m2.shape}")
        if self.n < 1:
            raise InvalidParameter(f"a group needs n >= 1, got {self.n}")
        self.ps = float(self.ps)
        self.req = int(self.req)

    @classmethod
    def from_points(cls, X: Any, privacy: Any) -> CondensedGroup:
        """Statistics of the records ``X`` (n, d) with privacy levels ``privacy`` (n,) or scalar.

        Two-pass: the (corrected) mean first, then the scatter of the centred records.
        """
        X = _points(X)
        p = _levels(privacy, X.shape[0])
        mean, m2 = _centred_moments(X)
        return cls(X.shape[0], mean, m2, float(p.sum()), int(p.max()))

    @property
    def d(self) -> int:
        """Number of attributes."""
        return self.mean.shape[0]

    @property
    def Fs(self) -> np.ndarray:
        """First-order sums ``Σx`` (d,)."""
        return self.n * self.mean

    @property
    def Sc(self) -> np.ndarray:
        """Second-order sums ``Σxxᵀ`` (d, d)."""
        return self.m2 + self.n * np.outer(self.mean, self.mean)

    @property
    def covariance(self) -> np.ndarray:
        """Population covariance ``m2 / n`` (the paper's Obs. 2.2; docs/condensation.md#group-statistics)."""
        return self.m2 / self.n

    @property
    def ssq(self) -> float:
        """``Σ ‖x − μ‖²`` = trace of the scatter."""
        return float(np.trace(self.m2))

    def add_point(self, x: Any, p: int) -> None:
        """Add record ``x`` with privacy level ``p`` in place (Welford update)."""
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        if x.shape != self.mean.shape:
            raise InvalidParameter(f"a record must have {self.d} attributes, got {x.shape[0]}")
        if not np.isfinite(x).all():
            raise DataFormatError("the record has NaN or infinite attributes")
        p = int(_levels([p], 1)[0])
        n_old = self.n
        self.n = n_old + 1
        delta = x - self.mean
        self.mean = self.mean + delta / self.n
        self.m2 = self.m2 + np.outer(delta, delta) * (n_old / self.n)
        self.ps += p
        self.req = max(self.req, p)

    def merge(self, other: CondensedGroup) -> CondensedGroup:
        """The union of two groups as a new group (Chan's parallel formula)."""
        if other.d != self.d:
            raise InvalidParameter(f"cannot merge groups over {self.d} and {other.d} attributes")
        na, nb = self.n, other.n
        n = na + nb
        delta = other.mean - self.mean
        mean = self.mean + delta * (nb / n)
        m2 = self.m2 + other.m2 + np.outer(delta, delta) * (na * nb / n)
        return CondensedGroup(n, mean, m2, self.ps + other.ps, max(self.req, other.req))

    def should_split(self, strict: bool = False) -> bool:
        """Split condition, Eq. 3.2 in integer-safe form ``n² >= 2·Ps`` (``>`` if ``strict``;
        docs/condensation.md#clarification-the-split-condition)."""
        lhs, rhs = self.n * self.n, 2.0 * self.ps
        return lhs > rhs if strict else lhs >= rhs

    def split(self) -> tuple[CondensedGroup, CondensedGroup]:
        """Split along the principal axis into sizes ``n//2`` and the rest
        (docs/condensation.md#correction-the-split-centroid-offset,
        docs/condensation.md#correction-splitting-groups-of-odd-size).

        With ``f = n1/n``, ``λ1, e1`` the largest (canonical) eigenpair of the covariance and
        ``a = sqrt(12 λ1)``: child 1 is centred at ``μ + (f−1)(a/2) e1``, child 2 at
        ``μ + f (a/2) e1``; their covariances replace ``λ1`` by ``f² λ1`` and ``(1−f)² λ1``; Ps is
        shared as ``f``, ``1−f``. This conserves n, Fs, Sc and Ps exactly. Both children keep
        the parent's ``req`` (a child may be smaller than it, as in the paper:
        docs/condensation.md#clarification-split-children-may-be-smaller-than-their-members-levels).
        """
        from .pseudo import canonical_eigh  # pseudo imports this module

        if self.n < 2:
            raise InvalidParameter(f"cannot split a group of {self.n} record")
        n1 = self.n // 2
        n2 = self.n - n1
        f = n1 / self.n
        C = self.covariance
        lam, E = canonical_eigh(C)
        lam1, e1 = lam[-1], E[:, -1]  # eigh sorts ascending: ties -> the last index
        a = np.sqrt(12.0 * lam1)
        P = lam1 * np.outer(e1, e1)
        mean1 = self.mean + ((f - 1.0) * a / 2.0) * e1
        mean2 = self.mean + (f * a / 2.0) * e1
        C1 = C + (f * f - 1.0) * P
        C2 = C + ((1.0 - f) ** 2 - 1.0) * P
        c1 = CondensedGroup(n1, mean1, n1 * C1, self.ps * f, self.req)
        c2 = CondensedGroup(n2, mean2, n2 * C2, self.ps * (1.0 - f), self.req)
        return c1, c2

    def published(self) -> dict:
        """The publishable statistics ``{"n", "Fs", "Sc", "Ps"}`` (never ``req``)."""
        return {"n": self.n, "Fs": self.Fs, "Sc": self.Sc, "Ps": self.ps}


# --------------------------------------------------------------------------- kernels
@numba.njit(cache=True, nogil=True)
def _table_moments(X, labels, privacy, G):  # pragma: no cover - compiled
    N, d = X.shape
    n = np.zeros(G, np.int64)
    mean = np.zeros((G, d))
    m2 = np.zeros((G, d, d))
    ps = np.zeros(G, np.int64)
    req = np.zeros(G, np.int64)
    for i in range(N):
        g = labels[i]
        n[g] += 1
        ps[g] += privacy[i]
        if privacy[i] > req[g]:
            req[g] = privacy[i]
        for a in range(d):
            mean[g, a] += X[i, a]
    for g in range(G):
        for a in range(d):
            mean[g, a] /= n[g]
    # correction pass: mean += Σ(x − mean)/n (as in the single-group two-pass)
    corr = np.zeros((G, d))
    for i in range(N):
        g = labels[i]
        for a in range(d):
            corr[g, a] += X[i, a] - mean[g, a]
    for g in range(G):
        for a in range(d):
            mean[g, a] += corr[g, a] / n[g]
    xc = np.empty(d)
    for i in range(N):
        g = labels[i]
        for a in range(d):
            xc[a] = X[i, a] - mean[g, a]
        for a in range(d):
            for b in range(a, d):
                m2[g, a, b] += xc[a] * xc[b]
    for g in range(G):
        for a in range(d):
            for b in range(a + 1, d):
                m2[g, b, a] = m2[g, a, b]
    return n, mean, m2, ps, req


# --------------------------------------------------------------------------- many groups
def _common_d(items: list[Any], method: str, kind: str) -> int:
    """The number of attributes of a non-empty list of groups or tables that all have it."""
    if not items:
        raise InvalidParameter(f"{method} needs at least one {kind}; use GroupTable.empty(d)")
    d = items[0].d
    if any(x.d != d for x in items):
        raise InvalidParameter(f"all {kind}s must have the same number of attributes")
    return d


class GroupTable:
    """G groups over d attributes as arrays: the unit that travels between Dask tasks.

    Parameters
    ----------
    n : int64 (G,)
    mean : float64 (G, d)
    m2 : float64 (G, d, d)
        Centred scatter matrices.
    ps : float64 (G,)
    req : int64 (G,)
        Internal privacy requirement (largest member level), never published.

    Notes
    -----
    Tables are values: every method returns a new table, and callers must not modify the
    arrays of a table in place (:meth:`take` with a slice shares memory).
    """

    def __init__(self, n: Any, mean: Any, m2: Any, ps: Any, req: Any) -> None:
        self.n = np.asarray(n, dtype=np.int64).reshape(-1)
        G = self.n.shape[0]
        self.mean = np.asarray(mean, dtype=np.float64)
        if self.mean.ndim != 2 or self.mean.shape[0] != G:
            raise InvalidParameter(f"mean must have shape ({G}, d), got {self.mean.shape}")
        d = self.mean.shape[1]
        self.m2 = np.asarray(m2, dtype=np.float64)
        if self.m2.shape != (G, d, d):
            raise InvalidParameter(f"m2 must have shape ({G}, {d}, {d}), got {self.m2.shape}")
        self.ps = np.asarray(ps, dtype=np.float64).reshape(-1)
        self.req = np.asarray(req, dtype=np.int64).reshape(-1)
        if self.ps.shape != (G,) or self.req.shape != (G,):
            raise InvalidParameter(f"ps and req must have shape ({G},), got {self.ps.shape} and {self.req.shape}")
        if G and self.n.min() < 1:
            raise InvalidParameter("every group needs n >= 1")

    # ---- constructors
    @classmethod
    def empty(cls, d: int) -> GroupTable:
        """A table of no group over ``d`` attributes."""
        d = int(d)
        return cls(np.empty(0, np.int64), np.empty((0, d)), np.empty((0, d, d)), np.empty(0), np.empty(0, np.int64))

    @classmethod
    def from_groups(cls, groups: list[CondensedGroup]) -> GroupTable:
        """Stack a non-empty list of groups (use :meth:`empty` for none)."""
        groups = list(groups)
        _common_d(groups, "from_groups", "group")
        return cls(
            np.array([g.n for g in groups], dtype=np.int64),
            np.stack([g.mean for g in groups]),
            np.stack([g.m2 for g in groups]),
            np.array([g.ps for g in groups], dtype=np.float64),
            np.array([g.req for g in groups], dtype=np.int64),
        )

    @classmethod
    def concat(cls, tables: list[GroupTable]) -> GroupTable:
        """The groups of all ``tables`` in order (a non-empty list, same ``d``)."""
        tables = list(tables)
        _common_d(tables, "concat", "table")
        return cls(
            np.concatenate([t.n for t in tables]),
            np.concatenate([t.mean for t in tables]),
            np.concatenate([t.m2 for t in tables]),
            np.concatenate([t.ps for t in tables]),
            np.concatenate([t.req for t in tables]),
        )

    @classmethod
    def from_points(cls, X: Any, privacy: Any, labels: Any, n_groups: int | None = None) -> GroupTable:
        """Statistics of the groups ``labels`` assigns to the records ``X`` (N, d).

        Parameters
        ----------
        X : array (N, d)
        privacy : int array (N,) or scalar
        labels : int array (N,)
            ``labels[i]`` in ``0..G-1`` is the group of record i; group g of the table is label g.
        n_groups : int, optional
            G (default ``labels.max() + 1``). Every label must have at least one record.
        """
        X = _points(X)
        N = X.shape[0]
        p = _levels(privacy, N)
        lab = np.asarray(labels)
        if lab.shape != (N,):
            raise InvalidParameter(f"labels must have one value per record ({N}), got shape {lab.shape}")
        if lab.dtype.kind not in "iu":
            raise InvalidParameter(f"labels must be integers, got dtype {lab.dtype}")
        lab = lab.astype(np.int64)
        G = int(lab.max()) + 1 if n_groups is None else int(n_groups)
        if lab.min() < 0 or lab.max() >= G:
            raise InvalidParameter(f"labels must lie in 0..{G - 1}")
        empty = np.flatnonzero(np.bincount(lab, minlength=G) == 0)
        if empty.size:
            raise InvalidParameter(f"groups {empty[:10].tolist()} have no record")
        n, mean, m2, ps, req = _table_moments(np.ascontiguousarray(X), lab, p, G)
        return cls(n, mean, m2, ps.astype(np.float64), req)

    @classmethod
    def from_published(cls, n: Any, Fs: Any, Sc: Any, Ps: Any) -> GroupTable:
        """Inverse of :meth:`published`.

        ``req`` is not published, so it is set to 1; the scatter ``Sc − Fs Fsᵀ/n`` carries the
        cancellation error of the published form (tiny negative eigenvalues are clipped by the
        pseudo-data generator).
        """
        n = np.asarray(n, dtype=np.int64).reshape(-1)
        Fs = np.asarray(Fs, dtype=np.float64)
        Sc = np.asarray(Sc, dtype=np.float64)
        G = n.shape[0]
        if Fs.ndim != 2 or Fs.shape[0] != G or Sc.shape != (G, Fs.shape[1], Fs.shape[1]):
            raise InvalidParameter(f"inconsistent shapes: n {n.shape}, Fs {Fs.shape}, Sc {Sc.shape}")
        if G and n.min() < 1:
            raise InvalidParameter("every group needs n >= 1")
        nf = n.astype(np.float64)
        mean = Fs / nf[:, None]
        m2 = Sc - Fs[:, :, None] * Fs[:, None, :] / nf[:, None, None]
        m2 = 0.5 * (m2 + m2.transpose(0, 2, 1))
        return cls(n, mean, m2, Ps, np.ones(G, dtype=np.int64))

    # ---- access
    def __len__(self) -> int:
        return self.n.shape[0]

    def __repr__(self) -> str:
        return f"GroupTable(groups={len(self)}, d={self.d}, records={int(self.n.sum())})"

    def __getitem__(self, g: int) -> CondensedGroup:
        g = int(g)
        if not -len(self) <= g < len(self):
            raise IndexError(f"group {g} out of range for a table of {len(self)} groups")
        return CondensedGroup(int(self.n[g]), self.mean[g].copy(), self.m2[g].copy(), float(self.ps[g]), int(self.req[g]))

    def take(self, idx: Any) -> GroupTable:
        """The groups selected by ``idx`` (slice, integer array or boolean mask) as a table."""
        if isinstance(idx, (int, np.integer)):
            idx = [int(idx)]
        return GroupTable(self.n[idx], self.mean[idx], self.m2[idx], self.ps[idx], self.req[idx])

    @property
    def d(self) -> int:
        """Number of attributes."""
        return self.mean.shape[1]

    @property
    def Fs(self) -> np.ndarray:
        """First-order sums (G, d)."""
        return self.n[:, None] * self.mean

    @property
    def Sc(self) -> np.ndarray:
        """Second-order sums (G, d, d)."""
        return self.m2 + self.n[:, None, None] * self.mean[:, :, None] * self.mean[:, None, :]

    @property
    def covariance(self) -> np.ndarray:
        """Population covariances (G, d, d)."""
        return self.m2 / self.n[:, None, None]

    @property
    def ssq(self) -> np.ndarray:
        """Per-group ``Σ ‖x − μ‖²`` (G,)."""
        return np.einsum("gii->g", self.m2).copy()

    @property
    def total_ssq(self) -> float:
        """Sum of the groups' SSQ."""
        return float(self.ssq.sum())

    @property
    def feasible(self) -> np.ndarray:
        """``n >= req`` per group (bool (G,))."""
        return self.n >= self.req

    # ---- updates
    def merge_into(self, dst: int, src: int) -> GroupTable:
        """A new table where group ``src`` is merged into ``dst`` and removed.

        The other groups keep their order, so when ``src < dst`` the merged group ends up at
        index ``dst − 1``.
        """
        G = len(self)
        dst, src = int(dst), int(src)
        if not (0 <= dst < G and 0 <= src < G) or dst == src:
            raise InvalidParameter(f"merge_into needs two different groups in 0..{G - 1}, got {dst} and {src}")
        merged = self[dst].merge(self[src])
        n, mean, m2, ps, req = self.n.copy(), self.mean.copy(), self.m2.copy(), self.ps.copy(), self.req.copy()
        n[dst], mean[dst], m2[dst], ps[dst], req[dst] = merged.n, merged.mean, merged.m2, merged.ps, merged.req
        keep = np.arange(G) != src
        return GroupTable(n[keep], mean[keep], m2[keep], ps[keep], req[keep])

    def published(self) -> dict[str, np.ndarray]:
        """The publishable statistics ``{"n", "Fs", "Sc", "Ps"}`` (never ``req``)."""
        return {"n": self.n.copy(), "Fs": self.Fs, "Sc": self.Sc, "Ps": self.ps.copy()}
