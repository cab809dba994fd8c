"""Independent k-anonymity, l-diversity and t-closeness checks of a released table
(docs/anonymity.md#k-anonymity-and-l-diversity, docs/anonymity.md#attribute-disclosure-and-t-closeness).

The checks recount from the released table alone. For a ``dask.dataframe`` the group-by is a
distributed aggregation (``groupby(...).size()``, a tree reduction); only the per-class counts are
brought to the driver. Suppressed values are the string ``'*'``; rows whose every QI is ``'*'``
are suppressed records, left out of the classes by default. Missing values (NaN/None) in a
checked column are an error.

Every ``check_*`` returns a :class:`~ppdm_dask.release.Verdict` (one :class:`~ppdm_dask.release.Check` named
``"k-anonymity"``, ``"l-diversity"`` or ``"t-closeness"`` with the figure, the threshold, the class at fault in
``where`` and the counts in ``stats``); every ``is_*`` returns a plain bool.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..constraints import check
from ..errors import DataFormatError, InvalidParameter
from ..release import Check, Verdict
from ._diversity import COUNT_CONSTRAINTS

__all__ = [
    "equivalence_classes",
    "class_counts",
    "k_anonymity_check",
    "l_diversity_check",
    "t_closeness_check",
    "check_k_anonymity",
    "check_l_diversity",
    "check_t_closeness",
    "is_k_anonymous",
    "is_l_diverse",
    "SUPPRESSED",
    "qi_columns",
]

COUNT = "count"
SUPPRESSED = "*"
K_ANONYMITY = "k-anonymity"
L_DIVERSITY = "l-diversity"
T_CLOSENESS = "t-closeness"


def _is_dask(df: Any) -> bool:
    return hasattr(df, "npartitions") and hasattr(df, "map_partitions")


def qi_columns(df: Any, qi: str | Sequence[str], extra: Sequence[str] = ()) -> list[str]:
    """Validate the column names and return the QI list."""
    qi = [qi] if isinstance(qi, str) else list(qi)
    if not qi:
        raise InvalidParameter("qi must name at least one column")
    if len(set(qi)) != len(qi):
        raise InvalidParameter(f"qi has duplicate columns: {qi}")
    cols = set(df.columns)
    unknown = [c for c in [*qi, *extra] if c not in cols]
    if unknown:
        raise InvalidParameter(f"unknown column(s) {unknown}; the table has {list(df.columns)}")
    overlap = [c for c in extra if c in qi]
    if overlap:
        raise InvalidParameter(f"sensitive attribute {overlap} is also a quasi-identifier")
    return qi


def counts_lazy(df: Any, keys: list[str]) -> tuple[Any, Any]:
    """The two lazy results (missing values per key, group sizes) :func:`counts_of` turns into
    the class counts of a dask ``df``: to be computed together with other passes."""
    return df[keys].isna().sum(), df.groupby(keys, dropna=False, observed=True).size(split_out=1)


def _counts(df: Any, keys: list[str], **compute_kwargs: Any) -> pd.DataFrame:
    """Group-by ``keys`` with sizes as a pandas frame (sorted by the keys)."""
    if _is_dask(df):
        from ..progress import compute

        na, sizes = compute(*counts_lazy(df, keys), **{"progress": False, **compute_kwargs})
    else:
        na = df[keys].isna().sum()
        sizes = df.groupby(keys, dropna=False, observed=True, sort=False).size()
    return counts_of(na, sizes, keys)


def counts_of(na: pd.Series, sizes: pd.Series, keys: list[str]) -> pd.DataFrame:
    """Class counts (sorted by the keys) from the computed :func:`counts_lazy`; missing values
    in a key are an error."""
    missing = [c for c in keys if int(na[c]) > 0]
    if missing:
        raise DataFormatError(
            f"missing values (NaN/None) in column(s) {missing} ({[int(na[c]) for c in missing]} rows); "
            "suppressed values must be the string '*'"
        )
    out = sizes.rename(COUNT).reset_index()
    out = out[out[COUNT] > 0]  # categorical/empty-partition artefacts
    out[COUNT] = out[COUNT].astype(np.int64)
    # sort numeric columns by value, others by their string form (mixed '*'/numbers stay sortable
    # and pandas/dask, whose string dtypes differ, give the same order)
    key = lambda c: (
        c if pd.api.types.is_numeric_dtype(c.dtype) and not isinstance(c.dtype, pd.CategoricalDtype) else c.astype(str)
    )
    return out.sort_values(keys, kind="stable", key=key).reset_index(drop=True)


def _suppressed_mask(counts: pd.DataFrame, qi: list[str]) -> np.ndarray:
    star = np.ones(len(counts), dtype=bool)
    for a in qi:
        star &= counts[a].astype(str).to_numpy() == SUPPRESSED
    return star


def _split_suppressed(counts: pd.DataFrame, qi: list[str], exclude: bool) -> tuple[pd.DataFrame, int]:
    """Drop the rows whose every QI is ``'*'`` (suppressed records) and count them."""
    if not exclude or counts.empty:
        return counts, 0
    star = _suppressed_mask(counts, qi)
    return counts[~star].reset_index(drop=True), int(counts.loc[star, COUNT].sum())


def _label(row: pd.Series, cols: Sequence[str]) -> str:
    """``age=[30, 40), sex=*`` — a class named by its published labels."""
    return ", ".join(f"{c}={row[c]}" for c in cols)


def equivalence_classes(df: Any, qi: str | Sequence[str]) -> pd.DataFrame:
    """Equivalence classes of ``df`` on the quasi-identifiers ``qi``.

    Parameters
    ----------
    df : pandas.DataFrame or dask.dataframe.DataFrame
        The released table.
    qi : str or sequence of str
        Quasi-identifier columns.

    Returns
    -------
    pandas.DataFrame
        One row per class: the QI values and ``count`` (int64), sorted by the QI values.

    Raises
    ------
    InvalidParameter
        Unknown or empty ``qi``.
    DataFormatError
        Missing values in a QI column.
    """
    return _counts(df, qi_columns(df, qi))


def class_counts(df: Any, qi: str | Sequence[str], sensitive: str | None = None, **compute_kwargs: Any) -> pd.DataFrame:
    """Rows per distinct (QI tuple[, sensitive value]) of ``df``: one distributed group-by from
    which both :func:`k_anonymity_check` and :func:`l_diversity_check` are decided.

    ``compute_kwargs`` (``client=``, ``progress=``) go to the distributed pass.
    """
    qi = qi_columns(df, qi, extra=[sensitive] if sensitive else [])
    return _counts(df, [*qi, *([sensitive] if sensitive else [])], **compute_kwargs)


def k_anonymity_check(counts: pd.DataFrame, qi: Sequence[str], k: int, *, exclude_suppressed: bool = True) -> Check:
    """The ``"k-anonymity"`` check from :func:`class_counts` (a sensitive column in ``counts``
    is summed out).

    The figure is the smallest class size (None for a table without classes), ``where`` names
    that class by its labels; ``stats``: ``k_anonymous``, ``min_class_size`` (0 without
    classes), ``n_classes``, ``violating_rows`` (rows in classes smaller than k),
    ``n_suppressed``, ``n_records`` (all rows counted, suppressed included).
    """
    qi = list(qi)
    k = check("k", k, COUNT_CONSTRAINTS["k"])
    n_records = int(counts[COUNT].sum()) if len(counts) else 0
    if len(counts) and len(counts.columns) > len(qi) + 1:  # fold the sensitive values
        counts = counts.groupby(qi, sort=False, dropna=False, observed=True)[COUNT].sum().reset_index()
        key = lambda c: (
            c if pd.api.types.is_numeric_dtype(c.dtype) and not isinstance(c.dtype, pd.CategoricalDtype) else c.astype(str)
        )
        counts = counts.sort_values(qi, kind="stable", key=key).reset_index(drop=True)
    classes, n_sup = _split_suppressed(counts, qi, exclude_suppressed)
    sizes = classes[COUNT].to_numpy()
    small = sizes < k
    where = None
    if len(sizes):
        where = _label(classes.iloc[int(np.argmin(sizes))], qi)
    stats = {
        "k_anonymous": bool(not small.any()),
        "min_class_size": int(sizes.min()) if len(sizes) else 0,
        "n_classes": int(len(sizes)),
        "violating_rows": int(sizes[small].sum()),
        "n_suppressed": n_sup,
        "n_records": n_records,
    }
    detail = (
        f"{stats['n_classes']:,} classes"
        + (f", {stats['violating_rows']:,} rows in classes smaller than {k}" if small.any() else "")
        + (f", {n_sup:,} suppressed records not counted" if n_sup else "")
    )
    return Check(
        K_ANONYMITY,
        stats["k_anonymous"],
        int(sizes.min()) if len(sizes) else None,
        k,
        where=f"smallest class {where}" if where else None,
        detail=detail,
        stats=stats,
    )


def l_diversity_check(
    counts: pd.DataFrame,
    qi: Sequence[str],
    sensitive: str,
    l: float,
    kind: str = "distinct",
    c: float | None = None,
    *,
    exclude_suppressed: bool = True,
) -> Check:
    """The ``"l-diversity"`` check from :func:`class_counts` with the sensitive column.

    The figure is the kind's achieved value over all classes (see :func:`check_l_diversity`),
    the threshold ``l`` (``c`` for recursive diversity, which needs figure < c); ``where``
    names the least diverse class.
    """
    from ._diversity import validate_diversity

    if l is None:
        raise InvalidParameter("l must be a number >= 1, got None")
    l, kind, c = validate_diversity(l, kind, c)
    qi = list(qi)
    counts, n_sup = _split_suppressed(counts, qi, exclude_suppressed)
    threshold = c if kind == "recursive" else l
    base = {"kind": kind, "l": l, "c": c, "n_suppressed": n_sup}
    if counts.empty:
        stats = {
            "l_diverse": True,
            **base,
            "n_classes": 0,
            "violating_classes": 0,
            "violating_rows": 0,
            "min_distinct": 0,
            "min_entropy": 0.0,
            "achieved": 0 if kind == "distinct" else (1.0 if kind == "entropy" else 0.0),
        }
        return Check(L_DIVERSITY, True, None, threshold, detail=f"{kind}: no classes", stats=stats)

    # classes as consecutive runs of equal QI tuples (counts is sorted by qi first)
    cls_id = counts.groupby(qi, sort=False, dropna=False, observed=True).ngroup().to_numpy()
    n_cls = int(cls_id.max()) + 1
    cnt = counts[COUNT].to_numpy().astype(float)
    size = np.bincount(cls_id, weights=cnt, minlength=n_cls)
    distinct = np.bincount(cls_id, minlength=n_cls)
    f = cnt / size[cls_id]
    entropy = np.bincount(cls_id, weights=-f * np.log(f), minlength=n_cls)

    if kind == "distinct":
        ok = distinct >= l
        score = distinct.astype(float)
        achieved: float = int(distinct.min())
    elif kind == "entropy":
        ok = entropy >= math.log(l) - 1e-12
        score = entropy
        achieved = float(math.exp(entropy.min()))
    else:
        # per class: counts sorted descending, rank within class
        order = np.lexsort((-cnt, cls_id))
        cid, cs = cls_id[order], cnt[order]
        starts = np.r_[0, np.flatnonzero(np.diff(cid)) + 1]
        rank = np.arange(len(cs)) - np.repeat(starts, np.diff(np.r_[starts, len(cs)]))  # 0-based
        r1 = cs[starts]
        tail = np.bincount(cid, weights=np.where(rank >= l - 1, cs, 0.0), minlength=n_cls)
        ok = r1 < c * tail
        with np.errstate(divide="ignore"):
            ratio = np.where(tail > 0, r1 / np.where(tail > 0, tail, 1.0), np.inf)
        score = -ratio
        achieved = float(ratio.max())
    bad = ~ok
    worst = int(np.argmin(score))
    first_row = int(np.flatnonzero(cls_id == worst)[0])
    stats = {
        "l_diverse": bool(ok.all()),
        **base,
        "n_classes": n_cls,
        "violating_classes": int(bad.sum()),
        "violating_rows": int(size[bad].sum()),
        "min_distinct": int(distinct.min()),
        "min_entropy": float(entropy.min()),
        "achieved": achieved,
    }
    if kind == "distinct":
        rule = f"at least {l} distinct values of {sensitive!r} per class"
    elif kind == "entropy":
        rule = f"entropy of {sensitive!r} >= ln {l:g} per class"
    else:
        rule = f"r1 < {c:g} * (r{l} + ...) of {sensitive!r} per class; the figure is the largest r1 / (r{l} + ...)"
    detail = f"{kind}: {rule}" + (f"; {int(bad.sum()):,} of {n_cls:,} classes fail" if bad.any() else f"; {n_cls:,} classes")
    return Check(
        L_DIVERSITY,
        stats["l_diverse"],
        achieved,
        threshold,
        where=f"least diverse class {_label(counts.iloc[first_row], qi)}",
        detail=detail,
        stats=stats,
    )


def t_closeness_check(counts: pd.DataFrame, qi: Sequence[str], sensitive: str, t: float, t_kind: str = "equal") -> Check:
    """The ``"t-closeness"`` check from :func:`class_counts` with the sensitive column.

    The figure is the largest Earth Mover's Distance of a class's ``sensitive`` distribution
    to the distribution of all the classes' records (suppressed records left out of both),
    the threshold ``t``; ``where`` names the farthest class. ``t_kind``: ``equal`` (every two
    values 1 apart: half the L1 distance) or ``ordered`` (the m values in their order, numbers
    by value, |i - j| / (m - 1) apart); ``auto`` is ordered when the released values all read as
    numbers. ``stats``: ``t_close``, ``t``, ``t_kind``, ``n_classes``, ``violating_classes``,
    ``violating_rows``, ``achieved``.
    """
    from ._diversity import T_TOLERANCE, validate_closeness
    from .disclosure import class_profile

    if t is None:
        raise InvalidParameter("t must be a number in [0, 1], got None", parameter="t")
    t, t_kind = validate_closeness(t, t_kind)
    qi = list(qi)
    ordered = None if t_kind == "auto" else t_kind == "ordered"
    prof, table = class_profile(counts, qi, sensitive, ordered=ordered)
    if t_kind == "auto":
        t_kind = "ordered" if "emd_ordered" in prof else "equal"
    if prof.empty:
        stats = {
            "t_close": True,
            "t": t,
            "t_kind": t_kind,
            "n_classes": 0,
            "violating_classes": 0,
            "violating_rows": 0,
            "achieved": 0.0,
        }
        return Check(T_CLOSENESS, True, None, t, detail=f"{t_kind} distance: no classes", stats=stats)
    d = prof["emd_ordered" if t_kind == "ordered" else "emd_equal"].to_numpy(dtype=float)
    bad = d > t + T_TOLERANCE
    worst = int(np.argmax(d))
    achieved = float(d[worst])
    stats = {
        "t_close": bool(not bad.any()),
        "t": t,
        "t_kind": t_kind,
        "n_classes": int(len(d)),
        "violating_classes": int(bad.sum()),
        "violating_rows": int(prof["size"].to_numpy()[bad].sum()),
        "achieved": achieved,
    }
    dist = (
        "ordered distance: the values in their order |i - j| / (m - 1) apart"
        if t_kind == "ordered"
        else "equal distance: half the L1 distance"
    )
    detail = f"Earth Mover's Distance of each class's {sensitive!r} to the {len(table):,} values of the table ({dist})" + (
        f"; {int(bad.sum()):,} of {len(d):,} classes exceed t" if bad.any() else f"; {len(d):,} classes"
    )
    return Check(
        T_CLOSENESS,
        stats["t_close"],
        achieved,
        t,
        where=f"farthest class {_label(prof.iloc[worst], qi)}",
        detail=detail,
        stats=stats,
    )


def check_t_closeness(
    df: Any, qi: str | Sequence[str], sensitive: str, t: float, t_kind: str = "auto", **compute_kwargs: Any
) -> Verdict:
    """Check t-closeness of the sensitive attribute: every class's distribution is within
    Earth Mover's Distance ``t`` of the whole table's (as ARX and pycanon define it).

    Parameters
    ----------
    df : pandas.DataFrame or dask.dataframe.DataFrame
        The released table (rows whose every QI is ``'*'`` are left out).
    qi : str or sequence of str
    sensitive : str
    t : float
        In [0, 1].
    t_kind : {"auto", "ordered", "equal"}
        ``auto``: ordered when the sensitive column is numeric (pycanon's rule), else equal.
    **compute_kwargs
        ``client=``, ``progress=`` for the distributed group-by.

    Returns
    -------
    Verdict
        One check ``"t-closeness"`` (see :func:`t_closeness_check`).
    """
    from ._diversity import resolve_t_kind, validate_closeness

    t, t_kind = validate_closeness(t, t_kind)
    if not isinstance(sensitive, str):
        raise InvalidParameter(f"sensitive must be one column name, got {sensitive!r}")
    qi = qi_columns(df, qi, extra=[sensitive])
    kind = resolve_t_kind(t_kind, df[sensitive].dtype)
    counts = _counts(df, [*qi, sensitive], **compute_kwargs)
    return Verdict([t_closeness_check(counts, qi, sensitive, t, kind)])


def check_k_anonymity(
    df: Any, qi: str | Sequence[str], k: int, *, exclude_suppressed: bool = True, **compute_kwargs: Any
) -> Verdict:
    """Check that every equivalence class on ``qi`` has at least ``k`` rows.

    Parameters
    ----------
    df : pandas.DataFrame or dask.dataframe.DataFrame
        The released table (suppressed values as ``'*'``).
    qi : str or sequence of str
        Quasi-identifier columns.
    k : int
        Required minimum class size (>= 1).
    exclude_suppressed : bool
        Rows whose every QI is ``'*'`` are suppressed records: they link to nobody, so they are
        left out of the classes and counted in ``n_suppressed`` (default). ``False`` treats
        them as one more class.
    **compute_kwargs
        ``client=``, ``progress=`` for the distributed group-by.

    Returns
    -------
    Verdict
        One check ``"k-anonymity"``: figure = smallest class size, threshold = k, ``where`` the
        smallest class, ``stats`` = ``k_anonymous``, ``min_class_size`` (0 for an empty
        table), ``n_classes``, ``violating_rows``, ``n_suppressed``, ``n_records``. An empty
        table is (vacuously) k-anonymous.
    """
    k = check("k", k, COUNT_CONSTRAINTS["k"])
    qi = qi_columns(df, qi)
    return Verdict([k_anonymity_check(_counts(df, qi, **compute_kwargs), qi, k, exclude_suppressed=exclude_suppressed)])


def check_l_diversity(
    df: Any,
    qi: str | Sequence[str],
    sensitive: str,
    l: float,
    kind: str = "distinct",
    c: float | None = None,
    *,
    exclude_suppressed: bool = True,
    **compute_kwargs: Any,
) -> Verdict:
    """Check l-diversity of the sensitive attribute within every equivalence class.

    Parameters
    ----------
    df : pandas.DataFrame or dask.dataframe.DataFrame
        The released table.
    qi : str or sequence of str
        Quasi-identifier columns.
    sensitive : str
        Sensitive column.
    l : int or float
        Diversity parameter (>= 1; an integer for ``distinct`` and ``recursive``).
    kind : {"distinct", "entropy", "recursive"}
        ``distinct``: >= l distinct sensitive values per class. ``entropy``:
        -sum f ln f >= ln l per class (f = relative frequencies; 1e-12 tolerance).
        ``recursive`` (c, l): r_1 < c * (r_l + ... + r_m), r_i the i-th largest count.
    c : float, optional
        Required (> 0) for ``recursive``; must be omitted otherwise.
    exclude_suppressed : bool
        Leave out rows whose every QI is ``'*'`` (see :func:`check_k_anonymity`).
    **compute_kwargs
        ``client=``, ``progress=`` for the distributed group-by.

    Returns
    -------
    Verdict
        One check ``"l-diversity"``. Its figure is the kind's achieved value over all classes:
        min distinct count, ``exp(min entropy)`` (the largest l met), or for ``recursive`` the
        largest r_1 / (r_l + ... + r_m) (``inf`` if a class has < l values; the table is
        (c, l)-diverse iff it is < c, the threshold). ``stats``: ``l_diverse``, ``kind``,
        ``l``, ``c``, ``n_classes``, ``violating_classes``, ``violating_rows``,
        ``min_distinct``, ``min_entropy`` (nats), ``achieved``, ``n_suppressed``.
    """
    from ._diversity import validate_diversity

    if l is None:
        raise InvalidParameter("l must be a number >= 1, got None")
    l, kind, c = validate_diversity(l, kind, c)
    if not isinstance(sensitive, str):
        raise InvalidParameter(f"sensitive must be one column name, got {sensitive!r}")
    qi = qi_columns(df, qi, extra=[sensitive])
    counts = _counts(df, [*qi, sensitive], **compute_kwargs)
    return Verdict([l_diversity_check(counts, qi, sensitive, l, kind, c, exclude_suppressed=exclude_suppressed)])


def is_k_anonymous(df: Any, qi: str | Sequence[str], k: int, *, exclude_suppressed: bool = True, **compute_kwargs: Any) -> bool:
    """Whether every equivalence class on ``qi`` has at least ``k`` rows (see :func:`check_k_anonymity`)."""
    return check_k_anonymity(df, qi, k, exclude_suppressed=exclude_suppressed, **compute_kwargs).ok


def is_l_diverse(
    df: Any,
    qi: str | Sequence[str],
    sensitive: str,
    l: float,
    kind: str = "distinct",
    c: float | None = None,
    *,
    exclude_suppressed: bool = True,
    **compute_kwargs: Any,
) -> bool:
    """Whether every class is l-diverse in ``sensitive`` (see :func:`check_l_diversity`)."""
    return check_l_diversity(df, qi, sensitive, l, kind, c, exclude_suppressed=exclude_suppressed, **compute_kwargs).ok
