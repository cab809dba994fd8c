"""Strict multidimensional Mondrian on weighted distinct tuples (LeFevre, DeWitt & Ramakrishnan 2006).

The partitioners work on the *frequency set* of a table: its distinct quasi-identifier tuples with
their record counts (and, for l-diversity, per-tuple counts of each sensitive value), which a
distributed group-by produces. Strict Mondrian cuts by value, so it never separates identical QI
tuples and running it on (distinct tuples, weights) gives exactly the record-level partition while
its cost depends on the number of distinct tuples only. Identical rows given twice are merged, so
record-level input (all weights 1) is accepted as well.

Two cut rules share one top-down driver (:func:`_grow`, an explicit stack):

* ``split="median"`` — plain Mondrian. Dimensions are tried by decreasing normalised width
  (numeric: range in the partition / range in the table; categorical: distinct codes in the
  partition / distinct codes in the table; ties → lower column index), each cut at its weighted
  median value m (the value holding record ``ceil(W/2)`` in sorted order): left = values ≤ m, or
  values < m when m is the partition maximum. A cut is *allowed* iff both sides weigh ≥ k and, if
  ``l`` is given, both are l-diverse and, with a ``closeness``, both are t-close to the whole
  table (:func:`~ppdm_dask.anonymity._diversity.diverse_mask`). The
  first allowed cut is taken; a partition with none becomes a class.
* ``split="imprecision"`` — the accuracy-constrained heuristic used by
  :class:`~ppdm_dask.anonymity.access_control.AccuracyConstrainedAnonymizer`; see
  :class:`_ImprecisionCuts` for the objective.

Classes are numbered in depth-first order of the cut tree, left (smaller values) before right, on
the internally sorted distinct tuples, so the result does not depend on the input row order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..constraints import check
from ..errors import DataFormatError, InfeasiblePrivacyError, InvalidParameter
from ._diversity import COUNT_CONSTRAINTS, Closeness, diverse_mask, validate_diversity

SPLITS = ("median", "imprecision")

#: a compiled query: column index -> (lo, hi) for a numeric column, or a sequence of codes
#: for a categorical column; a conjunction over the listed columns (closed ranges)
CompiledQuery = Mapping[int, Any]

__all__ = ["SPLITS", "Regions", "mondrian_partition", "class_regions", "as_2d_float", "as_counts"]


# ----------------------------------------------------------------------------- input handling
@dataclass
class _Table:
    """Validated, de-duplicated and lexicographically sorted distinct tuples."""

    X: np.ndarray  # (u, q) float64
    w: np.ndarray  # (u,) int64
    S: np.ndarray | None  # (u, s) int64 sensitive counts, only when l or t is given
    cat: np.ndarray  # (q,) bool
    k: int
    l: float | None
    kind: str
    c: float | None
    inverse: np.ndarray  # input row -> distinct tuple
    gspan: np.ndarray  # (q,) normaliser of the width: numeric range / number of distinct codes
    cat_cols: np.ndarray  # indices of the categorical columns
    cat_off: np.ndarray  # (u, q_cat) int64: code + offset of its column (one bincount for all)
    cat_starts: np.ndarray  # first offset of each categorical column
    n_bins: int
    closeness: Closeness | None = None


def as_2d_float(X: Any) -> np.ndarray:
    """``X`` as a finite float64 (tuples x quasi-identifiers) array, or one clear error."""
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise DataFormatError(f"X must be numeric (categorical columns as integer codes): {e}") from None
    if X.ndim != 2:
        raise InvalidParameter(f"X must be a 2-d array (tuples x quasi-identifiers), got shape {X.shape}")
    if X.shape[1] == 0:
        raise InvalidParameter("X must have at least one quasi-identifier column")
    bad = ~np.isfinite(X)
    if bad.any():
        cols = sorted(set(np.nonzero(bad)[1].tolist()))
        raise DataFormatError(f"X has {int(bad.sum())} NaN/infinite value(s) in column(s) {cols}")
    return X


def as_counts(a: Any, name: str, ndim: int) -> np.ndarray:
    """``a`` as an int64 ``ndim``-d array of integer counts (``name`` for the error)."""
    arr = np.asarray(a)
    if arr.ndim != ndim:
        raise InvalidParameter(f"{name} must be a {ndim}-d array, got shape {arr.shape}")
    if arr.size and (not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating)):
        raise DataFormatError(f"{name} must hold integer counts, got dtype {arr.dtype}")
    if arr.size and (not np.isfinite(arr).all() or (arr != np.round(arr)).any()):
        raise DataFormatError(f"{name} must hold integer counts")
    return arr.astype(np.int64)


def _check_categorical(categorical: Any, q: int) -> np.ndarray:
    if categorical is None or isinstance(categorical, (bool, np.bool_)):
        raise InvalidParameter("categorical must be a sequence of bool, one per column of X")
    cat = np.asarray(categorical)
    if cat.shape != (q,) or not (cat.dtype == bool or np.isin(cat, [0, 1]).all()):
        raise InvalidParameter(f"categorical must be {q} booleans (one per column of X), got {categorical!r}")
    return cat.astype(bool)


def _prepare(
    X: Any,
    weights: Any,
    k: Any,
    categorical: Any,
    sensitive_counts: Any,
    l: Any,
    kind: str,
    c: Any,
    closeness: Closeness | None = None,
) -> _Table:
    k = check("k", k, COUNT_CONSTRAINTS["k"])
    l, kind, c = validate_diversity(l, kind, c)
    X = as_2d_float(X)
    n, q = X.shape
    cat = _check_categorical(categorical, q)
    w = as_counts(weights, "weights", 1)
    if w.shape != (n,):
        raise InvalidParameter(f"weights has shape {w.shape}, X has {n} rows")
    if n and w.min() < 1:
        raise DataFormatError("weights (record counts) must be >= 1")
    codes = X[:, cat]
    if codes.size and ((codes < 0).any() or (codes != np.round(codes)).any()):
        raise DataFormatError("categorical columns must hold non-negative integer codes")
    S = None
    if l is not None or closeness is not None:
        if sensitive_counts is None:
            raise InvalidParameter("l-diversity and t-closeness need sensitive_counts (tuples x sensitive values)")
        S = as_counts(sensitive_counts, "sensitive_counts", 2)
        if S.shape[0] != n:
            raise InvalidParameter(f"sensitive_counts has {S.shape[0]} rows, X has {n}")
        if S.size and S.min() < 0:
            raise DataFormatError("sensitive_counts must be non-negative")
        if not np.array_equal(S.sum(axis=1), w):
            raise DataFormatError("each row of sensitive_counts must sum to the tuple's weight")
        if closeness is not None and len(closeness.reference) != S.shape[1]:
            raise InvalidParameter(
                f"closeness has {len(closeness.reference)} reference counts, sensitive_counts {S.shape[1]} columns"
            )
    total = int(w.sum())
    if k > total:
        raise InfeasiblePrivacyError(f"k = {k} exceeds the number of records ({total})")

    # merge identical tuples and sort them (lexicographic, first column first): the partition is
    # then a function of the multiset of records only
    order = np.lexsort(X.T[::-1])
    Xs = X[order]
    new = np.r_[True, (np.diff(Xs, axis=0) != 0).any(axis=1)]
    starts = np.flatnonzero(new)
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    Xu = Xs[starts]
    wu = np.add.reduceat(w[order], starts)
    Su = None
    if S is not None:
        Su = np.add.reduceat(S[order], starts, axis=0)  # >= 1 column: rows sum to weights >= 1
        if not diverse_mask(Su.sum(axis=0, keepdims=True), l, kind, c, closeness)[0]:
            raise InfeasiblePrivacyError(
                f"the whole table is not {kind} {l}-diverse; no partition can be", python="a smaller l", fix="a smaller `l`"
            )

    gspan = np.empty(q)
    num = ~cat
    gspan[num] = Xu[:, num].max(axis=0) - Xu[:, num].min(axis=0)
    cat_cols = np.flatnonzero(cat)
    sizes = (Xu[:, cat_cols].max(axis=0).astype(np.int64) + 1) if cat_cols.size else np.zeros(0, np.int64)
    cat_starts = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64) if cat_cols.size else np.zeros(0, np.int64)
    cat_off = Xu[:, cat_cols].astype(np.int64) + cat_starts
    if cat_cols.size:
        present = np.bincount(cat_off.ravel(), minlength=int(sizes.sum())) > 0
        gspan[cat_cols] = np.add.reduceat(present, cat_starts)
    return _Table(Xu, wu, Su, cat, k, l, kind, c, inverse, gspan, cat_cols, cat_off, cat_starts, int(sizes.sum()), closeness)


# ----------------------------------------------------------------------------- shared machinery
def _dims_by_width(t: _Table, idx: np.ndarray) -> np.ndarray:
    """Cuttable columns of the partition, widest normalised width first (ties: lower index)."""
    sub = t.X[idx]
    lo, hi = sub.min(axis=0), sub.max(axis=0)
    dims = np.flatnonzero(hi > lo)
    if dims.size == 0:
        return dims
    width = np.zeros(t.X.shape[1])
    num = ~t.cat
    width[num] = (hi - lo)[num] / np.where(t.gspan[num] > 0, t.gspan[num], 1.0)
    if t.cat_cols.size:
        cnt = np.bincount(t.cat_off[idx].ravel(), minlength=t.n_bins)
        width[t.cat_cols] = np.add.reduceat(cnt > 0, t.cat_starts) / t.gspan[t.cat_cols]
    return dims[np.lexsort((dims, -width[dims]))]


def _sort_dim(t: _Table, idx: np.ndarray, j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Order of the partition along column j, the sorted values and the cumulative weights."""
    v = t.X[idx, j]
    o = np.argsort(v, kind="stable")
    return o, v[o], np.cumsum(t.w[idx[o]])


def _median_position(sv: np.ndarray, cw: np.ndarray) -> int:
    """Number of sorted tuples left of the weighted-median cut (both sides non-empty)."""
    i = int(np.searchsorted(cw, (int(cw[-1]) + 1) // 2, side="left"))  # first with 2*cw >= W
    m = sv[i]
    p = int(np.searchsorted(sv, m, side="right"))
    if p == len(sv):  # the median is the maximum: cut below it instead
        p = int(np.searchsorted(sv, m, side="left"))
    return p


def _allowed(t: _Table, idx: np.ndarray, o: np.ndarray, cw: np.ndarray, ps: np.ndarray) -> np.ndarray:
    """Which cuts (left = first p sorted tuples) leave two k-anonymous (l-diverse, t-close) sides."""
    wl = cw[ps - 1]
    ok = (wl >= t.k) & (cw[-1] - wl >= t.k)
    if t.S is not None and ok.any():
        if len(ps) == 1:
            left = t.S[idx[o[: ps[0]]]].sum(axis=0, keepdims=True)
        else:
            left = np.cumsum(t.S[idx[o]], axis=0)[ps - 1]
        right = t.S[idx].sum(axis=0) - left
        ok &= diverse_mask(left, t.l, t.kind, t.c, t.closeness) & diverse_mask(right, t.l, t.kind, t.c, t.closeness)
    return ok


def _median_cut(t: _Table, idx: np.ndarray, dims: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Plain Mondrian: the first allowed median cut in order of decreasing width."""
    for j in dims:
        o, sv, cw = _sort_dim(t, idx, int(j))
        p = _median_position(sv, cw)
        if _allowed(t, idx, o, cw, np.array([p]))[0]:
            return idx[o[:p]], idx[o[p:]]
    return None


Chooser = Callable[[np.ndarray], "tuple[np.ndarray, np.ndarray] | None"]


def _grow(t: _Table, choose: Chooser) -> np.ndarray:
    """Top-down partitioning with an explicit stack; labels in depth-first, left-first order."""
    n = len(t.w)
    labels = np.empty(n, dtype=np.int64)
    stack = [np.arange(n)]
    nxt = 0
    while stack:
        idx = stack.pop()
        # a partition lighter than 2k has no allowed cut (most leaves): skip the cut search
        cut = None if int(t.w[idx].sum()) < 2 * t.k else choose(idx)
        if cut is None:
            labels[idx] = nxt
            nxt += 1
        else:
            stack.append(cut[1])
            stack.append(cut[0])  # popped first: left before right
    return labels


# ----------------------------------------------------------------------------- imprecision cuts
def _compile_workload(t: _Table, queries: Sequence[CompiledQuery], bounds: Any) -> tuple[list[dict[int, Any]], np.ndarray]:
    if not isinstance(queries, Sequence) or isinstance(queries, (str, bytes)):
        raise InvalidParameter("queries must be a sequence of {column: constraint} mappings")
    b = np.asarray(bounds, dtype=np.float64) if bounds is not None else None
    if b is None or b.shape != (len(queries),):
        raise InvalidParameter(f"bounds must give one imprecision bound per query ({len(queries)})")
    if (~np.isfinite(b)).any() or (b < 0).any():
        raise InvalidParameter("imprecision bounds must be finite and >= 0")
    q = t.X.shape[1]
    out = []
    for i, qd in enumerate(queries):
        if not isinstance(qd, Mapping):
            raise InvalidParameter(f"query {i} must be a mapping column -> constraint, got {type(qd).__name__}")
        cq: dict[int, Any] = {}
        for j, cons in qd.items():
            if isinstance(j, bool) or not isinstance(j, (int, np.integer)) or not 0 <= j < q:
                raise InvalidParameter(f"query {i}: column {j!r} is not in 0..{q - 1}")
            if t.cat[j]:
                codes = np.unique(np.asarray(list(cons), dtype=np.float64))
                if codes.size == 0:
                    raise InvalidParameter(f"query {i}: empty value set for column {j}")
                cq[int(j)] = codes
            else:
                try:
                    lo, hi = (float(v) for v in cons)
                except (TypeError, ValueError):
                    raise InvalidParameter(f"query {i}: numeric column {j} needs (lo, hi), got {cons!r}") from None
                if not lo <= hi:
                    raise InvalidParameter(f"query {i}: empty range [{lo}, {hi}] for column {j}")
                cq[int(j)] = (lo, hi)
        out.append(cq)
    return out, b


class _ImprecisionCuts:
    """Accuracy-constrained cut rule (after Pervaiz et al., TKDE 2014, top-down selection Mondrian).

    State: ``cur[q]`` = imprecision of query q if every partition of the current frontier were a
    class. Splitting never increases it (each side's bounding region lies inside the parent's), so
    it is an upper bound of the final imprecision and a query whose ``cur`` is within its bound
    stays satisfied.

    At a partition P, the *active* queries are those whose region test passes for P and which do
    not select all of P (only these can gain). Candidate cuts on each cuttable column: the weighted
    median and every predicate boundary of an active query strictly inside P (numeric: below lo,
    above hi; categorical: every change of membership along the code order). Among the *allowed*
    candidates (both sides k-anonymous / l-diverse) the chosen cut maximises, lexicographically,

    1. ``sum over open queries of min(reduction_q, cur_q - B_q)``: progress towards bounds not yet
       met, capped at what each still needs (an open query has ``cur_q > B_q``);
    2. ``sum over active queries of reduction_q``: total imprecision reduction;
    3. being the median cut; 4. the column's width rank; 5. the smaller cut value,

    where ``reduction_q = |P| - |L|·[R(L)∩Q≠∅] - |R|·[R(R)∩Q≠∅]``. When no allowed candidate
    reduces any imprecision (keys 1 and 2 both zero), P is cut like plain Mondrian (first allowed
    median by width), so the final classes are at least as fine as the median rule allows; the
    imprecision rule is tried again on the children. A partition stops only when no allowed median
    cut and no allowed imprecision-reducing cut exist.
    """

    def __init__(self, t: _Table, queries: Sequence[CompiledQuery], bounds: Any) -> None:
        qs, b = _compile_workload(t, queries, bounds)
        self.t = t
        flags: list[np.ndarray] = []
        owner: list[int] = []
        self.num_bounds: dict[int, list[tuple[int, float, float]]] = {}
        self.cat_flags: dict[int, list[tuple[int, int]]] = {}
        eff = [i for i, cq in enumerate(qs) if cq]  # an unconstrained query is always exact
        for e, i in enumerate(eff):
            for j, cons in sorted(qs[i].items()):
                x = t.X[:, j]
                if t.cat[j]:
                    self.cat_flags.setdefault(j, []).append((e, len(flags)))
                    flags.append(np.isin(x, cons))
                    owner.append(e)
                else:
                    lo, hi = cons
                    self.num_bounds.setdefault(j, []).append((e, lo, hi))
                    # the region [min, max] meets [lo, hi] iff some tuple is <= hi and some is >= lo
                    flags += [x <= hi, x >= lo]
                    owner += [e, e]
        u = len(t.w)
        self.eff = np.asarray(eff, dtype=np.int64)
        self.G = np.column_stack(flags) if flags else np.zeros((u, 0), bool)
        self.owner = np.asarray(owner, dtype=np.int64)
        self.starts = np.flatnonzero(np.r_[True, np.diff(self.owner) != 0]) if flags else np.zeros(0, np.int64)
        # a tuple satisfies a query iff all of the query's flags hold
        self.match = np.logical_and.reduceat(self.G, self.starts, axis=1) if flags else np.zeros((u, 0), bool)
        self.bounds = b[self.eff]
        W = int(t.w.sum())
        ov = np.logical_and.reduceat(self.G.any(axis=0), self.starts) if flags else np.zeros(0, bool)
        self.cur = W * ov.astype(np.int64) - t.w @ self.match.astype(np.int64)

    def __call__(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        t = self.t
        dims = _dims_by_width(t, idx)
        if dims.size == 0:
            return None
        best = self._best_cut(idx, dims)
        if best is None:
            return _median_cut(t, idx, dims)
        left, right, aq, red = best
        self.cur[aq] -= red
        return left, right

    def _best_cut(self, idx: np.ndarray, dims: np.ndarray):
        t = self.t
        if not self.G.shape[1]:
            return None
        G = self.G[idx]
        wP = t.w[idx]
        W = int(wP.sum())
        ov = np.logical_and.reduceat(G.any(axis=0), self.starts)
        inside = wP @ self.match[idx].astype(np.int64)
        active = ov & (inside < W)
        if not active.any():
            return None
        aq = np.flatnonzero(active)
        fa = active[self.owner]
        Ga = G[:, fa]
        starts_a = np.flatnonzero(np.r_[True, np.diff(self.owner[fa]) != 0])
        excess = np.maximum(self.cur[aq] - self.bounds[aq], 0.0)  # 0 for met bounds

        best_key: tuple | None = None
        best = None
        for rank, j in enumerate(dims):
            j = int(j)
            o, sv, cw = _sort_dim(t, idx, j)
            n = len(sv)
            pm = _median_position(sv, cw)
            cand = [np.array([pm])]
            for e, lo, hi in self.num_bounds.get(j, ()):
                if active[e]:
                    cand.append(np.searchsorted(sv, [lo], side="left"))  # left: x < lo
                    cand.append(np.searchsorted(sv, [hi], side="right"))  # left: x <= hi
            for e, f in self.cat_flags.get(j, ()):
                if active[e]:
                    col = G[o, f]
                    cand.append(np.flatnonzero(col[1:] != col[:-1]) + 1)
            ps = np.unique(np.concatenate(cand))
            ps = ps[(ps > 0) & (ps < n)]
            ps = ps[_allowed(t, idx, o, cw, ps)]
            if ps.size == 0:
                continue
            # which flags occur left / right of each cut: OR over the segments between cuts, then
            # prefix / suffix ORs (memory n_cuts x n_flags, not n_tuples x n_flags)
            seg = np.logical_or.reduceat(Ga[o], np.r_[0, ps], axis=0)
            has_l = np.logical_or.accumulate(seg[:-1], axis=0)
            has_r = np.logical_or.accumulate(seg[:0:-1], axis=0)[::-1]
            ov_l = np.logical_and.reduceat(has_l, starts_a, axis=1)
            ov_r = np.logical_and.reduceat(has_r, starts_a, axis=1)
            wl = cw[ps - 1]
            red = W - (wl[:, None] * ov_l + (W - wl)[:, None] * ov_r)  # (n_cand, n_active) >= 0
            prim = np.minimum(red, excess).sum(axis=1)
            sec = red.sum(axis=1)
            is_med = ps == pm
            # best of this column: keys 1, 2, 3, then the smaller cut position (= smaller value)
            i = np.lexsort((ps, ~is_med, -sec, -prim))[0]
            key = (float(prim[i]), int(sec[i]), bool(is_med[i]), -rank)
            if best_key is None or key > best_key:
                best_key = key
                p = int(ps[i])
                best = (idx[o[:p]], idx[o[p:]], aq, red[i])
        if best is None or (best_key[0] <= 0 and best_key[1] <= 0):
            return None
        return best


# ----------------------------------------------------------------------------- public API
def mondrian_partition(
    X: Any,
    weights: Any,
    k: int,
    *,
    categorical: Sequence[bool],
    sensitive_counts: Any = None,
    l: float | None = None,
    kind: str = "distinct",
    c: float | None = None,
    closeness: Closeness | None = None,
    split: str = "median",
    queries: Sequence[CompiledQuery] | None = None,
    bounds: Sequence[float] | None = None,
) -> np.ndarray:
    """Strict multidimensional Mondrian partition of weighted distinct tuples.

    Parameters
    ----------
    X : array_like, shape (n_tuples, q)
        Quasi-identifiers: numeric values, or ordinal codes ``0..V-1`` for categorical columns
        (the caller fixes the code order, e.g. hierarchy leaf order; cuts follow it).
    weights : array_like of int, shape (n_tuples,)
        Record count of each tuple (>= 1). Identical rows are merged.
    k : int
        Minimum class weight (>= 1).
    categorical : sequence of bool, length q
        Which columns hold categorical codes (width = share of distinct codes).
    sensitive_counts : array_like of int, shape (n_tuples, n_values), optional
        Per-tuple counts of each sensitive value (rows sum to ``weights``); needed with ``l``
        or ``closeness``.
    l, kind, c : optional
        l-diversity of every class (see :func:`~ppdm_dask.anonymity._diversity.diverse_mask`).
    closeness : Closeness, optional
        t-closeness of every class to the whole table (its ``reference``: the column sums of
        ``sensitive_counts``; see :func:`~ppdm_dask.anonymity._diversity.closeness_for`).
    split : {"median", "imprecision"}
        ``"median"``: plain Mondrian. ``"imprecision"``: accuracy-constrained cuts for the
        workload ``queries``/``bounds`` (see :class:`_ImprecisionCuts`), median cuts otherwise.
    queries : sequence of mapping, optional
        Only with ``split="imprecision"``: conjunctive queries in X space,
        ``{column: (lo, hi)}`` for numeric and ``{column: codes}`` for categorical columns.
    bounds : sequence of float, optional
        Imprecision bound (in records, >= 0) of each query.

    Returns
    -------
    ndarray of int64, shape (n_tuples,)
        Class of each input row, ``0..n_classes-1`` in depth-first (left-first) order. Every
        class weighs >= k, is l-diverse when ``l`` is given and t-close with ``closeness``.

    Raises
    ------
    InvalidParameter
        Bad k, l, shapes, split or workload.
    DataFormatError
        NaN/inf in X, negative or fractional codes, weights < 1, inconsistent sensitive counts.
    InfeasiblePrivacyError
        k exceeds the total weight, or the whole table is not l-diverse.
    """
    if split not in SPLITS:
        raise InvalidParameter(f"split must be one of {SPLITS}, got {split!r}")
    if split == "median" and (queries is not None or bounds is not None):
        raise InvalidParameter("queries/bounds are only used with split='imprecision'")
    if split == "imprecision" and queries is None:
        raise InvalidParameter("split='imprecision' needs queries and bounds")
    t = _prepare(X, weights, k, categorical, sensitive_counts, l, kind, c, closeness)  # >= 1 tuple (k <= W)
    if split == "median":

        def choose(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
            return _median_cut(t, idx, _dims_by_width(t, idx))
    else:
        choose = _ImprecisionCuts(t, queries, bounds)
    return _grow(t, choose)[t.inverse]


@dataclass(frozen=True)
class Regions:
    """Bounding regions of the classes of a partition.

    Attributes
    ----------
    labels : ndarray (n_classes,)
        The class labels, ascending; row i of every array describes class ``labels[i]``.
    sizes : ndarray of int64 (n_classes,)
        Class weights (records).
    low, high : ndarray of float64 (n_classes, q)
        Per column minimum and maximum (codes for categorical columns).
    present : dict[int, ndarray of bool (n_classes, V_j)]
        For each categorical column j, which codes occur in each class (``V_j`` = largest code
        in X plus one). The region of a categorical column is this value set.
    categorical : tuple of bool
    """

    labels: np.ndarray
    sizes: np.ndarray
    low: np.ndarray
    high: np.ndarray
    present: dict[int, np.ndarray]
    categorical: tuple[bool, ...]

    @property
    def n_classes(self) -> int:
        return len(self.labels)

    def codes(self, cls: int, column: int) -> np.ndarray:
        """Codes of categorical ``column`` present in class row ``cls``."""
        return np.flatnonzero(self.present[column][cls])


def class_regions(X: Any, weights: Any, class_id: Any, categorical: Sequence[bool]) -> Regions:
    """Regions of the classes: numeric (min, max), categorical set of codes, and class weights.

    Parameters
    ----------
    X : array_like, shape (n_tuples, q)
    weights : array_like of int, shape (n_tuples,)
    class_id : array_like of int, shape (n_tuples,)
        Any non-negative integer labels (need not be contiguous).
    categorical : sequence of bool, length q

    Returns
    -------
    Regions
    """
    X = as_2d_float(X)
    n, q = X.shape
    cat = _check_categorical(categorical, q)
    w = as_counts(weights, "weights", 1)
    cid = as_counts(class_id, "class_id", 1)
    if w.shape != (n,) or cid.shape != (n,):
        raise InvalidParameter(f"weights {w.shape} and class_id {cid.shape} must have one entry per row of X ({n})")
    if n and (cid.min() < 0 or w.min() < 1):
        raise DataFormatError("class_id must be >= 0 and weights >= 1")
    codes = X[:, cat]
    if codes.size and ((codes < 0).any() or (codes != np.round(codes)).any()):
        raise DataFormatError("categorical columns must hold non-negative integer codes")
    labels, inv = np.unique(cid, return_inverse=True)
    nc = len(labels)
    if n == 0:
        empty = np.zeros((0, q))
        return Regions(
            labels,
            np.zeros(0, np.int64),
            empty,
            empty.copy(),
            {int(j): np.zeros((0, 0), bool) for j in np.flatnonzero(cat)},
            tuple(bool(b) for b in cat),
        )
    order = np.argsort(inv, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(inv[order]) != 0])
    Xo = X[order]
    low = np.minimum.reduceat(Xo, starts, axis=0)
    high = np.maximum.reduceat(Xo, starts, axis=0)
    sizes = np.add.reduceat(w[order], starts)
    present = {}
    for j in np.flatnonzero(cat):
        cj = X[:, j].astype(np.int64)
        m = np.zeros((nc, int(cj.max()) + 1), dtype=bool)
        m[inv, cj] = True
        present[int(j)] = m
    return Regions(labels, sizes, low, high, present, tuple(bool(b) for b in cat))
