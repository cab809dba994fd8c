"""Attribute disclosure of a released table: what the classes say about their sensitive values
(docs/anonymity.md#attribute-disclosure-and-t-closeness).

k-anonymity hides *who* a record is among k, not *what* the k have: a class whose records
almost all share one sensitive value discloses it to anyone who knows a member's
quasi-identifiers (the homogeneity attack). Everything here is computed from the released
table's rows per (QI tuple, sensitive value) — the counts :func:`~.checks.class_counts` gives
from one distributed group-by — with pandas / numpy on the driver (one row per class and value):

* :func:`class_profile` — per class: size, distinct values, entropy, the dominant value and its
  share, and the Earth Mover's Distance to the whole table's distribution (equal distance, and
  ordered distance when the values are ordered);
* :func:`disclosure_summary` — the figures of the report: classes and records at or above a
  share threshold, entropy l, distinct l and t achieved, the attribute-inference success
  against the base rate;
* :func:`disclosure_items` — those figures as report items (:mod:`ppdm_dask.release.figures`).

Suppressed records (every QI ``'*'``) are left out of the classes *and* of the whole table's
distribution, as :func:`~.checks.t_closeness_check` does: the distribution compared with is the
one of the records a reader sees in classes.

The EMD of the ordered distance is summed interval by interval between the values a class has
(prefix sums of the table's cumulative distribution, a binary search for the crossing), so a
class costs its number of distinct values, not the number of values of the table; this is a
second implementation, independent of the dense kernel the anonymisers use
(:func:`~._diversity.emd`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..release.figures import Plot, Series, Table, Value, histogram
from ..report.units import percent as _pct
from ._diversity import value_order

__all__ = [
    "SHARE_THRESHOLD",
    "TOP_CLASSES",
    "class_profile",
    "DisclosureSummary",
    "disclosure_summary",
    "disclosure_items",
    "fold_sensitive",
]

COUNT = "count"
SUPPRESSED = "*"
#: a class "discloses" its dominant sensitive value when at least this share of it has that value
SHARE_THRESHOLD = 0.9
#: at most this many disclosing classes are listed in the report's table
TOP_CLASSES = 20


def _kept(counts: pd.DataFrame, qi: Sequence[str]) -> pd.DataFrame:
    """The rows of ``counts`` that are not suppressed records (some QI is not ``'*'``)."""
    star = np.ones(len(counts), dtype=bool)
    for a in qi:
        star &= counts[a].astype(str).to_numpy() == SUPPRESSED
    return counts[~star] if star.any() else counts


def fold_sensitive(counts: pd.DataFrame, qi: Sequence[str]) -> pd.DataFrame:
    """Class sizes (rows per QI tuple, sorted by the QIs as :func:`~.checks.counts_of` sorts)
    from the counts per (QI tuple, sensitive value)."""
    qi = list(qi)
    out = counts.groupby(qi, sort=False, dropna=False, observed=True)[COUNT].sum().reset_index()
    key = lambda c: (
        c if pd.api.types.is_numeric_dtype(c.dtype) and not isinstance(c.dtype, pd.CategoricalDtype) else c.astype(str)
    )
    return out.sort_values(qi, kind="stable", key=key).reset_index(drop=True)


def _ordered_emd(cls: np.ndarray, pos: np.ndarray, share: np.ndarray, p: np.ndarray, n_classes: int) -> np.ndarray:
    """Ordered-distance EMD of every class from its sparse rows (class, value position, share),
    sorted by class then position; ``p`` the table's distribution in value order."""
    m = len(p)
    if m <= 1:
        return np.zeros(n_classes)
    P = np.cumsum(p)  # table's cumulative distribution at each position
    S = np.r_[0.0, np.cumsum(P)]  # S[i] = sum of P over positions < i
    F = pd.Series(share).groupby(cls).cumsum().to_numpy()  # class's cumulative share
    first = np.r_[True, cls[1:] != cls[:-1]]
    last = np.r_[cls[1:] != cls[:-1], True]
    nxt = np.r_[pos[1:], m]
    b = np.where(last, m, nxt)  # F holds on [pos, b)
    a = pos
    j = np.clip(np.searchsorted(P, F, side="left"), a, b)  # P < F before j (P non-decreasing)
    part = F * (j - a) - (S[j] - S[a]) + (S[b] - S[j]) - F * (b - j)
    # before a class's first value its cumulative share is 0: sum of P over [0, pos)
    part = part + np.where(first, S[pos], 0.0)
    return np.bincount(cls, weights=part, minlength=n_classes) / (m - 1)


def class_profile(
    counts: pd.DataFrame, qi: Sequence[str], sensitive: str, *, ordered: bool | None = None
) -> tuple[pd.DataFrame, pd.Series]:
    """One row per released class with what it says about ``sensitive``.

    Parameters
    ----------
    counts : pandas.DataFrame
        Rows per (QI tuple, sensitive value): the QI columns, ``sensitive`` and ``count``
        (:func:`~.checks.class_counts` with the sensitive column), sorted by the QIs.
    qi : sequence of str
    sensitive : str
    ordered : bool, optional
        Compute the ordered-distance EMD (``emd_ordered``). Default: when the values read as
        numbers. The order is :func:`~._diversity.value_order`.

    Returns
    -------
    (profile, table)
        ``profile``: the QI columns, ``size``, ``distinct``, ``entropy`` (nats), ``top`` (the
        most frequent value; ties: the first in value order), ``top_count``, ``share``
        (top_count / size), ``emd_equal`` and, when ordered, ``emd_ordered``; in the order of
        the classes in ``counts``. ``table``: the whole table's count of each value, in value
        order. Suppressed records are left out of both.
    """
    qi = list(qi)
    counts = _kept(counts, qi)
    counts = counts[counts[COUNT] > 0]
    cols = [*qi, "size", "distinct", "entropy", "top", "top_count", "share", "emd_equal"]
    if counts.empty:
        return pd.DataFrame(columns=cols), pd.Series([], dtype=np.int64)
    values = pd.unique(counts[sensitive].to_numpy(dtype=object))
    order = value_order(values)
    values = values[order]
    table = counts.groupby(counts[sensitive].astype(object), sort=False)[COUNT].sum()
    table = pd.Series(table.reindex(values).to_numpy(dtype=np.int64), index=pd.Index(values, dtype=object))
    if ordered is None:
        ordered = bool(pd.to_numeric(pd.Series(values), errors="coerce").notna().all())
    p = table.to_numpy(dtype=float) / table.sum()
    position = pd.Series(np.arange(len(values)), index=pd.Index(values, dtype=object))

    cls = counts.groupby(qi, sort=False, dropna=False, observed=True).ngroup().to_numpy()
    n_cls = int(cls.max()) + 1
    pos = position.reindex(counts[sensitive].to_numpy(dtype=object)).to_numpy()
    cnt = counts[COUNT].to_numpy(dtype=float)
    o = np.lexsort((pos, cls))
    cls, pos, cnt = cls[o], pos[o], cnt[o]
    size = np.bincount(cls, weights=cnt, minlength=n_cls)
    share = cnt / size[cls]
    # dominant value: the largest count, ties the first in value order (rows are in value order)
    best = pd.DataFrame({"c": cls, "n": cnt, "i": np.arange(len(cls))}).sort_values(
        ["c", "n", "i"], ascending=[True, False, True]
    )
    head = best.drop_duplicates("c")
    top_row = head["i"].to_numpy()
    first_rows = np.flatnonzero(np.r_[True, cls[1:] != cls[:-1]])
    out = counts.iloc[o[first_rows]][qi].reset_index(drop=True)
    out["size"] = size.astype(np.int64)
    out["distinct"] = np.bincount(cls, minlength=n_cls).astype(np.int64)
    out["entropy"] = np.bincount(cls, weights=-share * np.log(share), minlength=n_cls)
    out["top"] = values[pos[top_row]]
    out["top_count"] = cnt[top_row].astype(np.int64)
    out["share"] = out["top_count"] / out["size"]
    # equal distance: 1/2 (sum over the class's values |q - p| + the table's share of the others)
    absdiff = np.bincount(cls, weights=np.abs(share - p[pos]), minlength=n_cls)
    covered = np.bincount(cls, weights=p[pos], minlength=n_cls)
    out["emd_equal"] = 0.5 * (absdiff + np.clip(1.0 - covered, 0.0, None))
    if ordered:
        out["emd_ordered"] = _ordered_emd(cls, pos, share, p, n_cls)
    # back to the order of the classes in ``counts`` (ngroup numbers them in that order)
    return out.reset_index(drop=True), table


@dataclass(frozen=True)
class DisclosureSummary:
    """Attribute-disclosure figures of a release (see :func:`disclosure_summary`)."""

    sensitive: str
    n_records: int
    n_classes: int
    threshold: float
    #: classes (and their records) whose dominant value has a share >= threshold
    n_disclosing_classes: int
    n_disclosing_records: int
    #: records whose value is their class's dominant value, in classes >= threshold
    n_disclosed_records: int
    #: classes with a single value (and their records)
    n_homogeneous_classes: int
    n_homogeneous_records: int
    distinct_l: int
    entropy_l: float
    t_equal: float
    t_ordered: float | None
    #: attribute inference: share of records whose value is their class's dominant value
    inference_success: float
    #: its baseline: the share of the table's most frequent value
    base_rate: float
    base_value: Any
    #: per class (see :func:`class_profile`) and the table's counts
    profile: pd.DataFrame
    table: pd.Series


def disclosure_summary(
    counts: pd.DataFrame, qi: Sequence[str], sensitive: str, *, threshold: float = SHARE_THRESHOLD, ordered: bool | None = None
) -> DisclosureSummary:
    """The attribute-disclosure figures of a release from its counts per (QI tuple, sensitive
    value) (suppressed records left out).

    ``inference_success`` is the attacker's hit rate who, knowing a record's quasi-identifiers,
    guesses the dominant sensitive value of its class; ``base_rate`` the hit rate of guessing the
    table's most frequent value for everyone (what the attacker gets without the classes).
    ``entropy_l`` = min over classes of exp(entropy), ``distinct_l`` = min distinct values,
    ``t_equal`` / ``t_ordered`` = max over classes of the EMD to the table.
    """
    if not 0 < float(threshold) <= 1:
        from ..errors import InvalidParameter

        raise InvalidParameter(f"the share threshold must be in (0, 1], got {threshold!r}")
    prof, table = class_profile(counts, qi, sensitive, ordered=ordered)
    n = int(prof["size"].sum()) if len(prof) else 0
    hit = prof["share"].to_numpy(dtype=float) >= float(threshold) - 1e-12 if len(prof) else np.zeros(0, bool)
    homog = prof["distinct"].to_numpy() == 1 if len(prof) else np.zeros(0, bool)
    base_value = table.idxmax() if len(table) else None
    return DisclosureSummary(
        sensitive=sensitive,
        n_records=n,
        n_classes=int(len(prof)),
        threshold=float(threshold),
        n_disclosing_classes=int(hit.sum()),
        n_disclosing_records=int(prof["size"].to_numpy()[hit].sum()) if len(prof) else 0,
        n_disclosed_records=int(prof["top_count"].to_numpy()[hit].sum()) if len(prof) else 0,
        n_homogeneous_classes=int(homog.sum()),
        n_homogeneous_records=int(prof["size"].to_numpy()[homog].sum()) if len(prof) else 0,
        distinct_l=int(prof["distinct"].min()) if len(prof) else 0,
        entropy_l=float(np.exp(prof["entropy"].min())) if len(prof) else 0.0,
        t_equal=float(prof["emd_equal"].max()) if len(prof) else 0.0,
        t_ordered=float(prof["emd_ordered"].max()) if "emd_ordered" in prof and len(prof) else None,
        inference_success=float(prof["top_count"].sum() / n) if n else 0.0,
        base_rate=float(table.max() / table.sum()) if len(table) else 0.0,
        base_value=base_value,
        profile=prof,
        table=table,
    )


def disclosing_classes(s: DisclosureSummary, qi: Sequence[str], top: int = TOP_CLASSES) -> pd.DataFrame:
    """The classes at or above the share threshold, largest share first (then largest class,
    then the class order), at most ``top``."""
    prof = s.profile
    if not len(prof):
        return prof
    sel = prof[prof["share"] >= s.threshold - 1e-12].copy()
    sel["_i"] = np.arange(len(sel))
    sel = sel.sort_values(["share", "size", "_i"], ascending=[False, False, True]).drop(columns="_i")
    return sel.head(int(top))


def disclosure_items(s: DisclosureSummary, qi: Sequence[str], *, top: int = TOP_CLASSES) -> list[Any]:
    """The attribute-disclosure figures as report items (``about="release"``: recomputable from
    the release alone)."""
    qi = list(qi)
    sens = s.sensitive
    edges, hist = histogram(s.profile["share"].to_numpy(dtype=float) if len(s.profile) else [], bins=np.linspace(0, 1, 21))
    rows = [
        [*(str(r[a]) for a in qi), int(r["size"]), str(r["top"]), round(float(r["share"]), 4)]
        for _, r in disclosing_classes(s, qi, top).iterrows()
    ]
    listed = (
        f"the {len(rows)} with the largest share" if s.n_disclosing_classes > len(rows) else "all"
    ) + f" of {s.n_disclosing_classes:,}"
    what = f"{s.n_records:,} released records in {s.n_classes:,} classes, suppressed records left out"
    items: list[Any] = [
        Plot(
            "disclosure_top_share",
            f"Largest share of one {sens} value per class",
            "histogram",
            [Series("classes", edges, hist)],
            x_label=f"share of the class's most frequent {sens} value",
            y_label="classes",
            note=f"{what}; a share of 1 is a class with a single value",
        ),
        Value(
            "disclosure_classes_at_threshold",
            f"Classes with >= {_pct(s.threshold)} one {sens} value",
            s.n_disclosing_classes,
            unit="classes",
            note=f"of {s.n_classes:,} classes; {s.n_homogeneous_classes:,} hold a single value "
            f"({s.n_homogeneous_records:,} records)",
        ),
        Value(
            "disclosure_records_at_threshold",
            f"Records in classes with >= {_pct(s.threshold)} one {sens} value",
            s.n_disclosing_records,
            unit="records",
            note=f"{_pct(s.n_disclosing_records / s.n_records if s.n_records else 0)} of {s.n_records:,} records; "
            f"{s.n_disclosed_records:,} of them have that value",
        ),
        Table(
            "disclosure_classes",
            f"Classes with >= {_pct(s.threshold)} one {sens} value ({listed})",
            [*qi, "records", f"most frequent {sens}", "share"],
            rows,
            note="largest share first, then the largest class",
        ),
        Value(
            "disclosure_distinct_l",
            "Distinct l achieved",
            s.distinct_l,
            unit="values",
            note=f"fewest distinct {sens} values in a class",
        ),
        Value(
            "disclosure_entropy_l",
            "Entropy l achieved",
            s.entropy_l,
            note="min over classes of exp(entropy of the class's values): the table is entropy l-diverse for every l up to it",
        ),
        Value(
            "disclosure_t_equal",
            "t achieved (equal distance)",
            s.t_equal,
            note="max over classes of the Earth Mover's Distance to the table's distribution, every two values 1 apart "
            "(half the L1 distance: the largest change of the probability of any value or set of values)",
        ),
    ]
    if s.t_ordered is not None:
        items.append(
            Value(
                "disclosure_t_ordered",
                "t achieved (ordered distance)",
                s.t_ordered,
                note=f"max over classes of the Earth Mover's Distance to the table's distribution, the "
                f"{len(s.table):,} values in their order |i - j| / (m - 1) apart",
            )
        )
    return items
