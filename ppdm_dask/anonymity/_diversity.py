"""Vectorised l-diversity and t-closeness tests on per-class sensitive-value counts (pure numpy kernels).

Every anonymiser (lattice, Mondrian, clustering, access control) decides "is this class l-diverse
(and t-close)" on a matrix of sensitive-value counts, one row per class
(:func:`diverse_mask`); the independent checkers (:func:`ppdm_dask.anonymity.check_l_diversity`,
:func:`ppdm_dask.anonymity.check_t_closeness`) recount from the released table instead.

t-closeness (Li, Li & Venkatasubramanian 2007, as ARX and pycanon compute it) bounds the Earth
Mover's Distance between a class's sensitive distribution q and the whole table's p:

* ``equal`` distance (categorical values): every two values are 1 apart, EMD = 1/2 sum |q_i - p_i|
  (the total variation distance: the largest change of the probability of any value or set of
  values);
* ``ordered`` distance (numbers, ordinal values): the m distinct values of the table in their
  order are |i - j| / (m - 1) apart, EMD = 1/(m - 1) sum_i |sum_{j <= i} (q_j - p_j)|.

A :class:`Closeness` carries t, the distance and the table's counts (the reference the classes
are compared with); :func:`closeness_for` builds it where an anonymiser has the table's counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..constraints import Interval
from ..errors import InvalidParameter
from .names import L_KINDS, T_KINDS

#: the counts of the anonymity checks and anonymizers (:mod:`ppdm_dask.constraints`): a class
#: size ``k`` and an itemset size ``m``
COUNT_CONSTRAINTS: dict[str, list[Any]] = {"k": [Interval(int, 1, None)], "m": [Interval(int, 1, None)]}

KINDS = L_KINDS
#: tolerance of ``EMD <= t`` (float sums of shares)
T_TOLERANCE = 1e-9


def validate_diversity(l: float | None, kind: str = "distinct", c: float | None = None) -> tuple[float | None, str, float | None]:
    """Check (l, kind, c) and return them normalised; ``l=None`` means no l-diversity."""
    if kind not in KINDS:
        raise InvalidParameter(f"l-diversity kind must be one of {KINDS}, got {kind!r}")
    if l is None:
        return None, kind, None
    if isinstance(l, bool) or not isinstance(l, (int, float, np.integer, np.floating)) or not l >= 1:
        raise InvalidParameter(f"l must be a number >= 1, got {l!r}")
    if kind != "entropy" and float(l) != int(l):
        raise InvalidParameter(f"l must be an integer for {kind} l-diversity, got {l!r}")
    if kind == "recursive":
        if c is None or isinstance(c, bool) or not isinstance(c, (int, float, np.integer, np.floating)) or not c > 0:
            raise InvalidParameter(f"recursive (c, l)-diversity needs c > 0, got c={c!r}", fix="`c` > 0")
        c = float(c)
    elif c is not None:
        raise InvalidParameter(
            f"c is only used with kind='recursive' (got kind={kind!r})", fix="`c` only with `l_kind` recursive"
        )
    return (float(l) if kind == "entropy" else int(l)), kind, c


def diverse_mask(
    counts: np.ndarray, l: float | None, kind: str = "distinct", c: float | None = None, closeness: Closeness | None = None
) -> np.ndarray:
    """Which classes are l-diverse (and, with ``closeness``, t-close).

    Parameters
    ----------
    counts : ndarray, shape (n_classes, n_values)
        Sensitive-value counts per class (non-negative integers).
    l : number or None
        ``None`` (or 1) accepts every class.
    kind : {"distinct", "entropy", "recursive"}
        distinct: at least l values with a non-zero count; entropy: -sum f ln f >= ln l
        (1e-12 tolerance); recursive: r_1 < c (r_l + ... + r_m), r_i the i-th largest count.
    c : float, optional
        Needed for ``recursive``.
    closeness : Closeness, optional
        t-closeness too: the class's EMD to the table's distribution is at most t.

    Returns
    -------
    ndarray of bool, shape (n_classes,)
    """
    counts = np.asarray(counts)
    if counts.ndim != 2:
        raise InvalidParameter("counts must be a 2-d array (classes x sensitive values)")
    if closeness is not None:
        return _l_mask(counts, l, kind, c) & closeness.mask(counts)
    return _l_mask(counts, l, kind, c)


def _l_mask(counts: np.ndarray, l: float | None, kind: str, c: float | None) -> np.ndarray:
    if l is None or l <= 1:
        return np.ones(counts.shape[0], dtype=bool)
    if kind == "distinct":
        return (counts > 0).sum(axis=1) >= l
    if kind == "entropy":
        tot = counts.sum(axis=1, keepdims=True).astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.where(counts > 0, counts / np.where(tot > 0, tot, 1.0), 0.0)
            h = -(np.where(f > 0, f * np.log(np.where(f > 0, f, 1.0)), 0.0)).sum(axis=1)
        return (h >= math.log(l) - 1e-12) & (tot[:, 0] > 0)
    if kind == "recursive":
        l = int(l)
        if counts.shape[1] < l:
            return np.zeros(counts.shape[0], dtype=bool)
        s = -np.sort(-counts, axis=1)
        return s[:, 0] < c * s[:, l - 1 :].sum(axis=1)
    raise InvalidParameter(f"l-diversity kind must be one of {KINDS}, got {kind!r}")


# ----------------------------------------------------------------------------- t-closeness
def validate_closeness(t: Any, t_kind: str = "auto") -> tuple[float | None, str]:
    """Check ``(t, t_kind)`` and return them normalised; ``t=None`` means no t-closeness."""
    if t_kind not in T_KINDS:
        raise InvalidParameter(f"t-closeness distance must be one of {T_KINDS}, got {t_kind!r}", parameter="t_kind")
    if t is None:
        return None, t_kind
    if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)) or not 0 <= float(t) <= 1:
        raise InvalidParameter(f"t must be a number in [0, 1], got {t!r}", fix="`t` in [0, 1]")
    return float(t), t_kind


def is_numeric_values(values: Any) -> bool:
    """Whether sensitive values (or a dtype) are numbers (a numeric, non-boolean dtype)."""
    dtype = values if isinstance(values, (np.dtype, pd.api.extensions.ExtensionDtype)) else getattr(values, "dtype", None)
    if dtype is None:
        values = np.asarray(values)
        dtype = values.dtype
    return bool(pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype))


def resolve_t_kind(t_kind: str, values: Any) -> str:
    """``ordered`` or ``equal``: ``auto`` is ordered for numeric ``values``, equal otherwise."""
    if t_kind == "auto":
        return "ordered" if is_numeric_values(values) else "equal"
    return t_kind


def value_order(values: Any) -> np.ndarray:
    """The positions of ``values`` (distinct sensitive values) in their order: by number when
    every value is (or reads as) a number, else by their text. The same order whichever the
    column's dtype, so a release read back from CSV (text) is ordered as the anonymiser ordered
    the typed input."""
    vals = pd.Series(np.asarray(values, dtype=object))
    nums = pd.to_numeric(vals, errors="coerce")
    if len(vals) and nums.notna().all():
        key = nums.to_numpy(dtype=float)
    else:
        key = vals.astype(str).to_numpy()
    return np.argsort(key, kind="stable")


def emd(counts: np.ndarray, reference: np.ndarray, ordered: bool) -> np.ndarray:
    """EMD of every row of ``counts`` (classes x values, in value order when ``ordered``) to the
    distribution of ``reference`` (the table's counts of the same values).

    Values absent from the reference (no record of the table has them) are left out; with
    ``ordered``, m is the number of values present in the table (1 value: every EMD is 0).
    An empty class (row of zeros) has EMD 0.
    """
    counts = np.asarray(counts, dtype=float)
    ref = np.asarray(reference, dtype=float)
    present = ref > 0
    counts, ref = counts[:, present], ref[present]
    if not len(ref) or counts.shape[0] == 0:
        return np.zeros(counts.shape[0])
    p = ref / ref.sum()
    size = counts.sum(axis=1, keepdims=True)
    q = counts / np.where(size > 0, size, 1.0)
    diff = np.where(size > 0, q - p, 0.0)
    if not ordered:
        return 0.5 * np.abs(diff).sum(axis=1)
    m = len(p)
    if m == 1:
        return np.zeros(counts.shape[0])
    return np.abs(np.cumsum(diff, axis=1)).sum(axis=1) / (m - 1)


@dataclass(frozen=True)
class Closeness:
    """A t-closeness requirement against the whole table.

    Attributes
    ----------
    t : float
        Largest EMD a class may have.
    kind : {"ordered", "equal"}
        The ground distance (resolved: never ``auto``).
    reference : ndarray of int, shape (n_values,)
        The table's count of each sensitive value, in the column order of the count matrices
        the anonymiser tests.
    order : ndarray of int, optional
        ``ordered``: the columns in value order (:func:`value_order`); None keeps them as given.
    """

    t: float
    kind: str
    reference: np.ndarray
    order: np.ndarray | None = None

    def distances(self, counts: np.ndarray) -> np.ndarray:
        """EMD of every class (row of ``counts``) to the table."""
        counts = np.asarray(counts)
        ref = np.asarray(self.reference)
        if self.order is not None:
            counts, ref = counts[:, self.order], ref[self.order]
        return emd(counts, ref, self.kind == "ordered")

    def mask(self, counts: np.ndarray) -> np.ndarray:
        """Which classes are t-close (EMD <= t, up to :data:`T_TOLERANCE`)."""
        return self.distances(counts) <= self.t + T_TOLERANCE

    def with_reference(self, reference: np.ndarray) -> Closeness:
        """The same requirement against other table counts (e.g. the records not suppressed)."""
        return Closeness(self.t, self.kind, np.asarray(reference), self.order)


def closeness_for(t: float | None, t_kind: str, values: Any, reference: Any) -> Closeness | None:
    """The :class:`Closeness` of ``t`` over a table whose distinct sensitive ``values`` (the
    columns of the count matrices, any order) have the counts ``reference``; None without t.

    ``t_kind`` ``auto`` is resolved from ``values`` (:func:`resolve_t_kind`); ``ordered`` sorts
    the columns by :func:`value_order`.
    """
    t, t_kind = validate_closeness(t, t_kind)
    if t is None:
        return None
    kind = resolve_t_kind(t_kind, values)
    order = value_order(values) if kind == "ordered" else None
    return Closeness(t, kind, np.asarray(reference, dtype=np.int64), order)
