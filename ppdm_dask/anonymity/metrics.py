"""Information-loss and re-identification-risk metrics of an anonymised table.

``class_sizes`` are the sizes of the equivalence classes of the *kept* records; suppressed
records belong to no class and are passed separately as ``n_suppressed``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..data.hierarchy import ROOT, Hierarchy
from ..errors import InvalidParameter


def _sizes(class_sizes: Sequence[int] | np.ndarray) -> np.ndarray:
    s = np.asarray(class_sizes)
    if s.ndim != 1:
        raise InvalidParameter("class_sizes must be a 1-d sequence of counts")
    if s.size and (not np.issubdtype(s.dtype, np.number) or np.any(s != np.round(s)) or s.min() < 1):
        raise InvalidParameter("class sizes must be integers >= 1")
    return s.astype(np.int64)


def discernibility(class_sizes: Sequence[int] | np.ndarray, n_suppressed: int = 0, n_total: int | None = None) -> int:
    """Discernibility metric DM = sum |E|^2 + n_suppressed * N.

    Parameters
    ----------
    class_sizes : sequence of int
        Sizes of the equivalence classes of the kept records.
    n_suppressed : int
        Number of suppressed records (each costs N).
    n_total : int, optional
        N, the number of records of the input table; default ``sum(class_sizes) + n_suppressed``.

    Returns
    -------
    int
    """
    s = _sizes(class_sizes)
    if isinstance(n_suppressed, bool) or int(n_suppressed) != n_suppressed or n_suppressed < 0:
        raise InvalidParameter(f"n_suppressed must be an integer >= 0, got {n_suppressed!r}")
    n = int(s.sum()) + int(n_suppressed) if n_total is None else int(n_total)
    if n < int(s.sum()) + int(n_suppressed):
        raise InvalidParameter(f"n_total={n_total} is smaller than kept + suppressed records ({int(s.sum()) + n_suppressed})")
    return int((s * s).sum()) + int(n_suppressed) * n


def average_class_size(class_sizes: Sequence[int] | np.ndarray, k: int) -> float:
    """Normalised average equivalence class size C_avg = N_kept / (n_classes * k).

    1.0 is the ideal (every class has exactly k records).
    """
    s = _sizes(class_sizes)
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise InvalidParameter(f"k must be an integer >= 1, got {k!r}")
    if s.size == 0:
        raise InvalidParameter("average_class_size needs at least one class")
    return float(s.sum()) / (s.size * int(k))


def prosecutor_risk(class_sizes: Sequence[int] | np.ndarray, threshold: float = 0.2) -> dict:
    """Prosecutor re-identification risk of the released classes.

    Parameters
    ----------
    class_sizes : sequence of int
        Equivalence class sizes (kept records).
    threshold : float
        A record is at risk when its class risk 1/|E| is strictly greater than ``threshold``.

    Returns
    -------
    dict
        ``max`` = 1 / min |E|, ``average`` = n_classes / N (mean of 1/|E| over records),
        ``records_at_risk`` = share of records in classes with 1/|E| > threshold.
        All 0.0 for no classes.
    """
    s = _sizes(class_sizes)
    if not 0 <= float(threshold) <= 1:
        raise InvalidParameter(f"threshold must be in [0, 1], got {threshold!r}")
    if s.size == 0:
        return {"max": 0.0, "average": 0.0, "records_at_risk": 0.0}
    n = float(s.sum())
    at_risk = s[1.0 / s > threshold].sum()
    return {"max": 1.0 / float(s.min()), "average": s.size / n, "records_at_risk": float(at_risk) / n}


def ncp_categorical(hierarchy: Hierarchy, node: str, level: int) -> float:
    """Normalised certainty penalty of a generalised categorical value.

    NCP = (leaves under node - 1) / (all leaves - 1): 0 for a leaf, 1 for ``'*'``; 0 for a
    hierarchy with a single leaf. (Terrovitis' set-valued variant |leaves(n)|/|I| is a
    different formula, docs/anonymity.md#information-loss-of-a-cut.)
    """
    if hierarchy.kind != "categorical":
        raise InvalidParameter("ncp_categorical needs a categorical hierarchy")
    total = hierarchy.n_leaves
    if total <= 1:
        return 0.0
    under = total if node == ROOT else hierarchy.n_leaves_under(node, level)
    return (under - 1) / (total - 1)


def ncp_numeric(hierarchy: Hierarchy, node: Any, level: int) -> float:
    """NCP of a generalised numeric value: interval width / attribute range (high - low).

    0 at level 0 (exact value), 1 for ``'*'``.
    """
    if hierarchy.kind != "interval":
        raise InvalidParameter("ncp_numeric needs an interval hierarchy")
    a, b = hierarchy.interval_of(node, level)
    return (b - a) / (hierarchy.high - hierarchy.low)


def ncp(hierarchy: Hierarchy, node: Any, level: int) -> float:
    """NCP of one generalised value, dispatching on the hierarchy kind."""
    if hierarchy.kind == "categorical":
        return ncp_categorical(hierarchy, node, level)
    return ncp_numeric(hierarchy, node, level)


def ncp_level(hierarchy: Hierarchy, values: Any, level: int) -> float:
    """Mean NCP of generalising the leaf ``values`` (one per record) to ``level``.

    Suppressed input values ``'*'`` count as 1.
    """
    gen = np.asarray(hierarchy.generalize(values, level), dtype=object)
    if gen.size == 0:
        return 0.0
    if level == 0:
        pen = np.where(gen == ROOT, 1.0, 0.0)
        return float(pen.mean())
    uniq, inv = np.unique(gen.astype(str), return_inverse=True)
    per = np.array([ncp(hierarchy, u, level) for u in uniq])
    return float(per[inv].mean())


_RANGE = re.compile(r"^\s*(-?[0-9.]+(?:[eE][-+]?[0-9]+)?)\s*-\s*(-?[0-9.]+(?:[eE][-+]?[0-9]+)?)\s*$")


def label_ncp(
    label: str, *, hierarchy: Hierarchy | None = None, value_range: float | None = None, n_values: int | None = None
) -> float:
    """NCP of one published label of a locally recoded table (Mondrian, clustering).

    ``'*'`` -> 1; ``"lo-hi"`` of a numeric QI -> (hi - lo) / ``value_range``; a single number -> 0;
    a node of ``hierarchy`` -> its categorical NCP; ``"a|b|c"`` (a value set) ->
    (3 - 1) / (``n_values`` - 1); a leaf value -> 0.
    """
    label = str(label)
    if label == ROOT:
        return 1.0
    if value_range is not None:
        m = _RANGE.match(label)
        if m:
            lo, hi = float(m.group(1)), float(m.group(2))
            return (hi - lo) / value_range if value_range > 0 else 0.0
        return 0.0
    if hierarchy is not None and hierarchy.kind == "categorical":
        for level in range(hierarchy.levels):
            if label in set(hierarchy.nodes(level)):
                return ncp_categorical(hierarchy, label, level)
    if "|" in label and n_values:
        return (len(label.split("|")) - 1) / (n_values - 1) if n_values > 1 else 0.0
    return 0.0


def published_ncp(
    table: Any,
    qi: Sequence[str],
    *,
    hierarchies: dict | None = None,
    value_ranges: dict | None = None,
    n_values: dict | None = None,
) -> dict[str, float]:
    """Mean NCP per QI of a released table, computed from its labels alone.

    Parameters
    ----------
    table : pandas or dask DataFrame
        Released table (QIs as labels).
    qi : sequence of str
    hierarchies : attr -> Hierarchy, optional
        Categorical hierarchies (labels that are nodes get the node's NCP).
    value_ranges : attr -> float, optional
        Range (max - min) of each numeric QI in the original table.
    n_values : attr -> int, optional
        Number of distinct original values of each categorical QI without a hierarchy.

    Returns
    -------
    dict attr -> mean NCP over all records.
    """
    import dask

    hierarchies, value_ranges, n_values = hierarchies or {}, value_ranges or {}, n_values or {}
    counts = [table[a].astype(str).value_counts() for a in qi]
    if hasattr(table, "dask"):
        counts = dask.compute(*counts)
    out = {}
    for a, vc in zip(qi, counts):
        total = float(vc.sum())
        pen = sum(
            float(cnt) * label_ncp(lab, hierarchy=hierarchies.get(a), value_range=value_ranges.get(a), n_values=n_values.get(a))
            for lab, cnt in vc.items()
        )
        out[a] = pen / total if total else 0.0
    return out
