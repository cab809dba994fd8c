"""Re-identification risk of a table from its equivalence-class sizes (ARX's risk models).

Pure pandas / numpy kernels: the caller brings the class sizes to the driver (one distributed
group-by of the released table, or a size-frequency table of the original) and these functions
turn them into figures. A class is the set of records sharing one quasi-identifier tuple;
records whose every quasi-identifier is ``'*'`` (suppressed) link to nobody and are left out.

With ``f_j`` the size of class j in the sample (the table), ``F_j`` the size of the matching
class in a population table (``F_j = f_j`` without one) and ``n = sum f_j``:

* prosecutor risk (the attacker knows the target is in the table): a record of class j is
  re-identified with probability ``1 / f_j``; the highest risk is ``1 / min f_j``, the average
  risk ``sum_j f_j * (1 / f_j) / n = (#classes) / n``;
* journalist risk (the attacker only knows the target is in the population): ``1 / F_j``;
  highest ``1 / min F_j``, average ``sum_j f_j / F_j / n``. Without a population table ARX
  takes the sample as the population, so journalist risk equals prosecutor risk;
* marketer risk (expected share of records re-identified when every record is attacked):
  ``sum_j f_j / F_j / n``; without a population ``(#classes) / n``;
* sample uniques: records alone in their class (``f_j = 1``);
* records at risk above a threshold t: the share of records with ``1 / f_j > t``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["THRESHOLD", "THRESHOLDS", "size_frequencies", "risk_summary", "size_histogram"]

#: the default risk threshold (records with 1/|class| > 0.2, i.e. classes smaller than 5)
THRESHOLD = 0.2
#: thresholds of the records-at-risk table
THRESHOLDS = (0.5, 1 / 3, 0.2, 0.1, 0.05)


def size_frequencies(sizes: Any, population: Any = None) -> pd.DataFrame:
    """The classes grouped by their (sample size, population size): columns ``f``, ``F``,
    ``classes`` (how many classes have that pair), sorted by ``f`` then ``F``.

    Parameters
    ----------
    sizes : array-like of int
        One sample class size per class (or a :class:`pandas.Series` indexed by size whose
        values are class counts, when ``population`` is None — what a distributed
        ``groupby(...).size().value_counts()`` returns).
    population : array-like of int, optional
        The population class size of each sample class (same order as ``sizes``). A
        population class smaller than its sample class cannot be (the sample is part of the
        population), so ``F = max(F, f)``.
    """
    if isinstance(sizes, pd.Series) and population is None and sizes.index.dtype.kind in "iuf":
        f = sizes.index.to_numpy(dtype=np.int64)
        frame = pd.DataFrame({"f": f, "F": f, "classes": sizes.to_numpy(dtype=np.int64)})
    else:
        f = np.asarray(sizes, dtype=np.int64)
        F = f if population is None else np.maximum(np.asarray(population, dtype=np.int64), f)
        frame = pd.DataFrame({"f": f, "F": F, "classes": np.ones(len(f), dtype=np.int64)})
    frame = frame[frame["f"] > 0]
    out = frame.groupby(["f", "F"], sort=True)["classes"].sum().reset_index()
    return out.astype(np.int64)


def risk_summary(freq: pd.DataFrame, threshold: float = THRESHOLD,
                 thresholds: Sequence[float] = THRESHOLDS) -> dict[str, Any]:
    """The risk figures of a table from :func:`size_frequencies`.

    Returns
    -------
    dict
        ``n_records``, ``n_classes``, ``min_class_size``, ``prosecutor_max``,
        ``prosecutor_average``, ``journalist_max``, ``journalist_average``, ``marketer``,
        ``sample_uniques`` (share of records), ``n_sample_uniques``, ``records_at_risk``
        (share with 1/f > ``threshold``) and ``at_risk`` (``[(t, share)]`` for ``thresholds``).
        Shares are 0.0 for a table without classes.
    """
    f = freq["f"].to_numpy(dtype=np.int64)
    F = freq["F"].to_numpy(dtype=np.int64)
    m = freq["classes"].to_numpy(dtype=np.int64)
    records = f * m  # records in the classes of each row
    n = int(records.sum())
    n_classes = int(m.sum())
    if n == 0:
        zero = {"prosecutor_max": 0.0, "prosecutor_average": 0.0, "journalist_max": 0.0, "journalist_average": 0.0,
                "marketer": 0.0, "sample_uniques": 0.0, "records_at_risk": 0.0}
        return {"n_records": 0, "n_classes": 0, "min_class_size": 0, "n_sample_uniques": 0, **zero,
                "at_risk": [(float(t), 0.0) for t in thresholds]}

    def at_risk(t: float) -> float:
        # strictly above t, as ARX counts "records at risk"; the tolerance keeps 1/5 > 0.2 false
        return float(records[1.0 / f > t + 1e-12].sum()) / n

    expected = float((records / F).sum())  # sum over records of 1/F, i.e. sum_j f_j / F_j
    uniques = int(records[f == 1].sum())
    return {
        "n_records": n,
        "n_classes": n_classes,
        "min_class_size": int(f.min()),
        "prosecutor_max": 1.0 / float(f.min()),
        "prosecutor_average": n_classes / n,
        "journalist_max": 1.0 / float(F.min()),
        "journalist_average": expected / n,
        "marketer": expected / n,
        "sample_uniques": uniques / n,
        "n_sample_uniques": uniques,
        "records_at_risk": at_risk(float(threshold)),
        "at_risk": [(float(t), at_risk(float(t))) for t in thresholds],
    }


def size_histogram(freq: pd.DataFrame) -> tuple[list[float], list[int]]:
    """``(edges, counts)`` of the class sizes, one value per class: one bin per integer size
    up to 50 distinct sizes, else integer-aligned bins (the rule of
    :func:`ppdm_dask.release.figures.histogram`), counted from the size frequencies so the
    classes never need to be listed one by one."""
    if not len(freq):
        return [0.0, 1.0], [0]
    f = freq["f"].to_numpy(dtype=float)
    m = freq["classes"].to_numpy(dtype=float)
    lo, hi = math.floor(f.min()), math.ceil(f.max())
    width = max(1, math.ceil((hi - lo + 1) / 50))
    edges = np.arange(lo, hi + width + 1, width, dtype=float) - 0.5
    counts, edges = np.histogram(f, bins=edges, weights=m)
    return [float(e) for e in edges], [int(round(c)) for c in counts]
