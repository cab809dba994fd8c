"""A quality score of released or synthetic rows against the original, as SDMetrics' quality
report defines it: how well each column's distribution and each pair of columns' trend survive.

Column shapes (one score per column, 1 = the same distribution):

* numeric — ``1 − KS``, KS the two-sample Kolmogorov–Smirnov statistic (the largest gap between
  the two empirical CDFs); exact when the two tables together have at most
  :data:`EXACT_VALUES` distinct values in the column, else measured at :data:`GRID_POINTS`
  evenly spaced points between the smallest and the largest value (a lower bound of the gap);
* categorical — ``1 − TVD``, TVD the total variation distance ``½ Σ |p_v − q_v|`` of the two
  value distributions (missing values a category of their own).

Pair trends (one score per pair of columns):

* two numeric columns — ``1 − |r_original − r_release| / 2`` with Pearson's r (rows where
  both are present); undefined (left out) when a column is constant on either side;
* any other pair — ``1 − TVD`` of the two normalised contingency tables, a numeric column cut
  into :data:`PAIR_BINS` equal-width bins between the original's minimum and maximum (the end
  bins open, missing values a bin of their own).

The overall score is the mean of the column-shape mean and the pair-trend mean. Both tables are
read in two distributed passes (:mod:`._quality_kernels`: a profile, then the counts); only
counts and sums reach the driver. :func:`basket_quality` scores transactions the same way, every
item a 0/1 column (its support the shape, pairs of the most frequent items the trends).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from . import _quality_kernels as K

__all__ = [
    "EXACT_VALUES",
    "GRID_POINTS",
    "PAIR_BINS",
    "MAX_PAIR_CATEGORIES",
    "TOP_ITEMS",
    "Quality",
    "quality_report",
    "basket_quality",
    "quality_figures",
    "ks_complement",
    "tv_complement",
    "correlation_similarity",
]

#: numeric columns with at most this many distinct values (both tables) get the exact KS statistic
EXACT_VALUES = 20_000
#: the points the CDFs are compared at otherwise
GRID_POINTS = 2_048
#: bins of a numeric column in a pair's contingency table (as SDMetrics)
PAIR_BINS = 10
#: a categorical column with more categories than this is left out of the pairs (its tables would be huge)
MAX_PAIR_CATEGORIES = 1_000
#: the most frequent items of the original whose pairs are scored by :func:`basket_quality`
TOP_ITEMS = 50


@dataclass
class Quality:
    """The scores of :func:`quality_report`.

    ``shapes``: ``{column: (metric, score)}``; ``pairs``: ``{(a, b): (metric, score)}``;
    ``shapes_score``, ``pairs_score`` their means (NaN when empty), ``score`` the overall one;
    ``notes``: columns or pairs left out and why.
    """

    shapes: dict[str, tuple[str, float]]
    pairs: dict[tuple[str, str], tuple[str, float]]
    notes: list[str] = field(default_factory=list)

    @property
    def shapes_score(self) -> float:
        v = [s for _, s in self.shapes.values() if np.isfinite(s)]
        return _stable(np.mean(v)) if v else float("nan")

    @property
    def pairs_score(self) -> float:
        v = [s for _, s in self.pairs.values() if np.isfinite(s)]
        return _stable(np.mean(v)) if v else float("nan")

    @property
    def score(self) -> float:
        v = [s for s in (self.shapes_score, self.pairs_score) if np.isfinite(s)]
        return _stable(np.mean(v)) if v else float("nan")


# ---------------------------------------------------------------------------- scores from counts
def ks_complement(cdf_a: np.ndarray, cdf_b: np.ndarray) -> float:
    """``1 − max |F_a − F_b|`` from the counts at common points (:func:`._quality_kernels.tally`)."""
    na, nb = cdf_a.sum(), cdf_b.sum()
    if not na or not nb:
        return float("nan")
    return 1.0 - float(np.max(np.abs(np.cumsum(cdf_a) / na - np.cumsum(cdf_b) / nb)))


def tv_complement(a: np.ndarray, b: np.ndarray) -> float:
    """``1 − ½ Σ |p − q|`` of two count vectors (or tables) over the same cells."""
    na, nb = a.sum(), b.sum()
    if not na or not nb:
        return float("nan")
    return 1.0 - 0.5 * float(np.abs(a / na - b / nb).sum())


def _stable(v: float | np.floating) -> float:
    """A score rounded to 12 decimals: sums of floats taken in another order (another
    partitioning) differ in the last bits, the figures should not."""
    return round(float(v), 12) if np.isfinite(v) else float("nan")


def _pearson(m: np.ndarray) -> float:
    n, sx, sy, sxx, syy, sxy = (float(v) for v in m)
    if n < 2:
        return float("nan")
    vx, vy = sxx - sx * sx / n, syy - sy * sy / n
    if vx <= 1e-12 * max(sxx, 1.0) or vy <= 1e-12 * max(syy, 1.0):
        return float("nan")
    return float(np.clip((sxy - sx * sy / n) / np.sqrt(vx * vy), -1.0, 1.0))


def correlation_similarity(r_a: float, r_b: float) -> float:
    """``1 − |r_a − r_b| / 2`` (NaN when either correlation is undefined)."""
    return 1.0 - abs(r_a - r_b) / 2.0 if np.isfinite(r_a) and np.isfinite(r_b) else float("nan")


# ---------------------------------------------------------------------------- tables
def _is_numeric(dtype: Any) -> bool:
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def _as_dask(table: Any) -> Any:

    return _from_pandas(table) if isinstance(table, pd.DataFrame) else table


def _plan(
    po: Mapping[str, Any], pr: Mapping[str, Any], numeric: Sequence[str], categorical: Sequence[str], notes: list[str]
) -> dict[str, Any]:
    """Grids, cells and pairs from the two tables' profiles."""
    grids, cells, shift = {}, {}, {}
    for c in numeric:
        lo_o, hi_o, u_o = po["num"][c]
        lo_r, hi_r, u_r = pr["num"][c]
        lo, hi = min(lo_o, lo_r), max(hi_o, hi_r)
        if u_o is not None and u_r is not None and len(np.union1d(u_o, u_r)) <= EXACT_VALUES:
            grids[c] = np.union1d(u_o, u_r)
        elif np.isfinite(lo) and np.isfinite(hi):
            grids[c] = np.linspace(lo, hi, GRID_POINTS)
            notes.append(f"{c}: KS measured at {GRID_POINTS:,} points (more than {EXACT_VALUES:,} distinct values)")
        else:
            grids[c] = np.zeros(0)
        # the pair bins come from the original alone (as SDMetrics), equal width, the end bins open
        a, b = (lo_o, hi_o) if np.isfinite(lo_o) else (0.0, 0.0)
        cells[c] = {"kind": "numeric", "bins": np.linspace(a, b, PAIR_BINS + 1)[1:-1], "size": PAIR_BINS + 1}
        shift[c] = a
    for c in categorical:
        cats = sorted(set(po["cat"][c].index) | set(pr["cat"][c].index))
        cells[c] = {"kind": "categorical", "categories": np.asarray(cats, dtype=object), "size": len(cats) + 1}
    usable = [c for c in [*numeric, *categorical] if cells[c]["size"] <= MAX_PAIR_CATEGORIES + 1]
    for c in [*numeric, *categorical]:
        if c not in usable:
            notes.append(f"{c}: left out of the pair trends ({cells[c]['size'] - 1:,} categories)")
    order = [c for c in [*numeric, *categorical] if c in usable]
    return {"grids": grids, "cells": cells, "shift": shift, "pairs": list(combinations(order, 2))}


def quality_report(
    original: Any,
    release: Any,
    columns: Sequence[str] | None = None,
    *,
    numeric: Sequence[str] | None = None,
    **compute_kwargs: Any,
) -> Quality:
    """Column shapes, pair trends and the overall score of ``release`` against ``original``
    (see the module docstring).

    Parameters
    ----------
    original, release : dask or pandas DataFrame
        The two tables; ``columns`` (default: the columns they share) are compared.
    numeric : sequence of str, optional
        The numeric columns (default: those numeric in the original; a column numeric in the
        original but not in the release is compared as categorical).
    **compute_kwargs
        ``client=``, ``progress=`` of the passes (one profile pass; a second for numeric CDFs and pair tables when there are any).
    """
    import dask

    from ..progress import compute

    o, r = _as_dask(original), _as_dask(release)
    cols = [c for c in (columns if columns is not None else o.columns) if c in o.columns and c in r.columns]
    if numeric is None:
        numeric = [c for c in cols if _is_numeric(o[c].dtype) and _is_numeric(r[c].dtype)]
    numeric = [c for c in cols if c in set(numeric)]
    categorical = [c for c in cols if c not in set(numeric)]
    ckw = {"progress": False, **compute_kwargs}
    prof = [
        dask.delayed(K.merge_profiles, pure=True)(
            [dask.delayed(K.profile, pure=True)(p, numeric, categorical, EXACT_VALUES) for p in t[cols].to_delayed()],
            EXACT_VALUES,
        )
        for t in (o, r)
    ]
    po, pr = compute(*prof, **ckw)
    notes: list[str] = []
    plan = _plan(po, pr, numeric, categorical, notes)
    to = tr = None
    if plan["grids"] or plan["pairs"]:  # categorical shapes alone come from the profiles: no second pass
        lazy_plan = dask.delayed(plan, pure=True)
        tal = [
            dask.delayed(K.merge_tallies, pure=True)(
                [dask.delayed(K.tally, pure=True)(p, lazy_plan) for p in t[cols].to_delayed()]
            )
            for t in (o, r)
        ]
        to, tr = compute(*tal, **ckw)
    shapes: dict[str, tuple[str, float]] = {}
    for c in cols:
        if c in plan["grids"]:
            shapes[c] = ("KS complement", ks_complement(to["cdf"][c], tr["cdf"][c]))
        else:
            a, b = po["cat"][c].align(pr["cat"][c], fill_value=0)
            shapes[c] = ("TV complement", tv_complement(a.to_numpy(dtype=float), b.to_numpy(dtype=float)))
    pairs: dict[tuple[str, str], tuple[str, float]] = {}
    for a, b in plan["pairs"]:
        if (a, b) in to["moments"]:
            pairs[(a, b)] = (
                "correlation similarity",
                _stable(correlation_similarity(_pearson(to["moments"][(a, b)]), _pearson(tr["moments"][(a, b)]))),
            )
        else:
            pairs[(a, b)] = ("contingency similarity", tv_complement(to["pairs"][(a, b)], tr["pairs"][(a, b)]))
    undefined = [f"{a}/{b}" for (a, b), (_, s) in pairs.items() if not np.isfinite(s)]
    if undefined:
        notes.append(f"{len(undefined)} pair(s) left out: a constant column has no correlation ({', '.join(undefined[:5])})")
    return Quality(shapes, pairs, notes)


# ---------------------------------------------------------------------------- baskets
def _item_pairs(block: Any, columns: np.ndarray) -> np.ndarray:
    """Kernel: co-occurrence counts of the items at ``columns`` (-1: an item absent from this
    table) in one block of transactions (a CSR matrix)."""
    n = len(columns)
    if not n or block.shape[0] == 0:
        return np.zeros((n, n), dtype=np.int64)
    present = columns >= 0
    sub = np.zeros((block.shape[0], n), dtype=np.int64)
    if present.any():
        sub[:, present] = (block[:, columns[present]].toarray() != 0).astype(np.int64)
    return sub.T @ sub


def basket_quality(original: Any, release: Any, *, top: int = TOP_ITEMS, **compute_kwargs: Any) -> Quality:
    """Quality of transactions against the original's (:class:`~ppdm_dask.data.transactions.TransactionArray`),
    every item a 0/1 column matched by its label.

    Column shapes: ``1 − |p − q|`` per item of either side (the TV complement of a 0/1 column,
    ``p`` and ``q`` its support fractions). Pair trends: the TV complement of the 2 × 2 tables of
    every pair of the ``top`` items most frequent in the original. One pass per table for the
    supports (the figures the release holds anyway) and one for the pairs.
    """
    import dask

    from ..progress import compute

    ckw = {"progress": False, **compute_kwargs}
    so, sr = compute(original.item_supports_lazy(), release.item_supports_lazy(), **ckw)
    no, nr = original.n_transactions, release.n_transactions
    if not no or not nr:
        return Quality({}, {}, ["no rows to compare"])
    lo = [str(x) for x in original.vocabulary.labels]
    lr = [str(x) for x in release.vocabulary.labels]
    fo = pd.Series(np.asarray(so, dtype=float) / no, index=lo).groupby(level=0).sum()
    fr = pd.Series(np.asarray(sr, dtype=float) / nr, index=lr).groupby(level=0).sum()
    fo, fr = fo.align(fr, fill_value=0.0)
    shapes = {str(i): ("TV complement", 1.0 - abs(float(a) - float(b))) for i, a, b in zip(fo.index, fo, fr)}
    top_items = [
        str(i)
        for i in pd.Series(np.asarray(so), index=lo).sort_values(ascending=False, kind="stable").index[:top]
        if so[lo.index(i)] > 0
    ]
    notes = [f"pair trends over the {len(top_items)} items most frequent in the original"]
    cols_o = np.asarray([lo.index(i) for i in top_items], dtype=np.int64)
    rpos = {x: j for j, x in enumerate(lr)}
    cols_r = np.asarray([rpos.get(i, -1) for i in top_items], dtype=np.int64)
    lazy = [
        dask.delayed(sum, pure=True)(
            [dask.delayed(_item_pairs, pure=True)(b, c) for b in t.blocks.to_delayed().ravel()],
            np.zeros((len(c), len(c)), dtype=np.int64),
        )
        for t, c in ((original, cols_o), (release, cols_r))
    ]
    co, cr = compute(*lazy, **ckw)
    pairs: dict[tuple[str, str], tuple[str, float]] = {}
    for i, j in combinations(range(len(top_items)), 2):
        pairs[(top_items[i], top_items[j])] = (
            "contingency similarity",
            tv_complement(_two_by_two(co, i, j, no), _two_by_two(cr, i, j, nr)),
        )
    return Quality(shapes, pairs, notes)


def _two_by_two(co: np.ndarray, i: int, j: int, n: int) -> np.ndarray:
    """The 2 × 2 table (both, i only, j only, neither) of items i and j from co-occurrence counts."""
    both = co[i, j]
    return np.array([both, co[i, i] - both, co[j, j] - both, n - co[i, i] - co[j, j] + both], dtype=float)


# ---------------------------------------------------------------------------- report figures
def quality_figures(q: Quality, what: str, *, column_kind: str = "column") -> list[Any]:
    """The report items of a :class:`Quality`: ``utility_quality_score`` (a score the external
    report may show), ``utility_column_shapes``, ``utility_pair_trends`` and a table per column
    (``utility_column_shape_table``); ``what`` names the compared rows (e.g. "the pseudo-data")."""
    from ..release.figures import Table, Value

    how = (
        f"as SDMetrics' quality report: the mean of the column-shape mean ({len(q.shapes):,} {column_kind}s) and "
        f"the pair-trend mean ({len(q.pairs):,} pairs); 1 = the same distributions"
    )
    nan = lambda v: v if np.isfinite(v) else None  # noqa: E731
    shape_rows = sorted(q.shapes.items(), key=lambda kv: (kv[1][1] if np.isfinite(kv[1][1]) else 2.0, kv[0]))
    items: list[Any] = [
        Value(
            "utility_quality_score",
            f"Quality score of {what} (column shapes and pair trends)",
            nan(q.score),
            about="comparison",
            unit="share",
            score=True,
            note=how,
        ),
        Value(
            "utility_column_shapes",
            f"Column shapes of {what}",
            nan(q.shapes_score),
            about="comparison",
            unit="share",
            note="mean over the columns of 1 − KS statistic (numeric) or 1 − total variation distance (categorical)",
        ),
        Value(
            "utility_pair_trends",
            f"Pair trends of {what}",
            nan(q.pairs_score),
            about="comparison",
            unit="share",
            note="mean over the pairs of 1 − |Δ Pearson r| / 2 (two numeric columns) or 1 − total variation distance "
            f"of the contingency tables (numeric columns in {PAIR_BINS} bins)",
        ),
        Table(
            "utility_column_shape_table",
            f"Column shapes of {what}, worst first",
            [column_kind, "metric", "score"],
            [[c, m, nan(s)] for c, (m, s) in shape_rows[:300]],
            about="comparison",
            note=f"{len(shape_rows) - 300:,} more not shown" if len(shape_rows) > 300 else "",
        ),
    ]
    if q.pairs:
        worst = sorted(q.pairs.items(), key=lambda kv: (kv[1][1] if np.isfinite(kv[1][1]) else 2.0, kv[0]))[:20]
        items.append(
            Table(
                "utility_pair_trend_table",
                f"Pair trends of {what}, the 20 worst",
                [f"{column_kind} 1", f"{column_kind} 2", "metric", "score"],
                [[a, b, m, nan(s)] for (a, b), (m, s) in worst],
                about="comparison",
            )
        )
    return items


def _from_pandas(df: Any) -> Any:
    """A pandas frame as one dask partition (arrow slices copied: :func:`ppdm_dask.data.tables.from_pandas`)."""
    from ..data.tables import from_pandas

    return from_pandas(df, npartitions=1)
