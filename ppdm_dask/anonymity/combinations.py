"""The riskiest quasi-identifier combinations: how unique the records are on every subset of the QIs.

An attacker rarely knows all of a person's quasi-identifiers; the combinations of a few of them
that already single records out are the ones to generalise further. For every non-empty subset
of the quasi-identifiers (ARX's quasi-identifier risk analysis) this module counts, from a class
table (one row per distinct QI tuple with its record count — the released table's class counts
the report already holds, so no new pass over the data):

* ``classes``: distinct value combinations on the subset;
* ``distinction``: classes / records (1: every record distinct, ARX's "distinction");
* ``separation``: the share of record pairs that differ on the subset,
  ``1 - sum_j f_j (f_j - 1) / (n (n - 1))`` (ARX's "separation");
* ``uniques``: the share of records alone in their class on the subset;
* ``below_k``: the share of records in classes smaller than k.

With q quasi-identifiers there are ``2^q - 1`` subsets; at most :data:`MAX_SUBSETS` are
counted, the smallest subsets first and the full set always (the report says when the list was
cut). Each subset groups the class table's rows by its columns' codes (packed into one integer
per row), so its cost is a pass over the class table, not over the records.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["MAX_SUBSETS", "COLUMNS", "subsets", "combination_risk"]

#: the most subsets counted (2^10)
MAX_SUBSETS = 1024
#: the columns of :func:`combination_risk`'s frame
COLUMNS = ["quasi-identifiers", "size", "classes", "distinction", "separation", "uniques", "below_k"]


def subsets(qi: Sequence[str], limit: int = MAX_SUBSETS) -> tuple[list[tuple[str, ...]], bool]:
    """The non-empty subsets of ``qi`` by increasing size (each size in ``qi``'s order), at most
    ``limit`` of them with the full set always among them; and whether some were left out."""
    qi = list(qi)
    out: list[tuple[str, ...]] = []
    total = 2 ** len(qi) - 1
    for r in range(1, len(qi) + 1):
        for s in itertools.combinations(qi, r):
            if len(out) >= limit - (1 if r < len(qi) else 0):
                break
            out.append(s)
    if tuple(qi) not in out and qi:
        out.append(tuple(qi))
    return out, len(out) < total


def combination_risk(
    classes: pd.DataFrame, qi: Sequence[str], count: str = "count", k: int = 2, limit: int = MAX_SUBSETS
) -> tuple[pd.DataFrame, bool]:
    """The risk figures of every subset of ``qi`` (module docstring), sorted from the riskiest:
    by ``uniques``, then ``below_k``, then ``distinction`` (descending), then fewer
    quasi-identifiers first.

    Parameters
    ----------
    classes : DataFrame
        One row per distinct QI tuple (rows repeating a tuple are added up), the columns ``qi``
        and ``count`` (records per row).
    qi : sequence of str
    count : str
    k : int
        The class size below which records count in ``below_k``.
    limit : int
        The most subsets counted (see :func:`subsets`).

    Returns
    -------
    (DataFrame, bool)
        The figures (columns :data:`COLUMNS`; ``quasi-identifiers`` joined with ``", "``) and
        whether subsets were left out.
    """
    qi = list(qi)
    subs, cut = subsets(qi, limit)
    f = classes[count].to_numpy(dtype=np.int64)
    n = int(f.sum())
    codes = {a: pd.factorize(classes[a].astype(str), sort=False)[0].astype(np.int64) for a in qi}
    radix = {a: int(codes[a].max()) + 1 if len(f) else 1 for a in qi}
    rows = []
    for s in subs:
        if float(np.prod([float(radix[a]) for a in s])) < 2.0**62:
            key = np.zeros(len(f), dtype=np.int64)
            for a in s:
                key = key * radix[a] + codes[a]
            inv = pd.factorize(key, sort=False)[0]
        else:  # too many combinations for one integer: group the code tuples
            inv = pd.MultiIndex.from_arrays([codes[a] for a in s]).factorize()[0]
        sizes = np.bincount(inv, weights=f).astype(np.int64) if len(f) else np.zeros(0, dtype=np.int64)
        sizes = sizes[sizes > 0]
        pairs = float((sizes * (sizes - 1)).sum())
        rows.append(
            [
                ", ".join(s),
                len(s),
                len(sizes),
                len(sizes) / n if n else 0.0,
                1.0 - pairs / (n * (n - 1)) if n > 1 else 0.0,
                float(sizes[sizes == 1].sum()) / n if n else 0.0,
                float(sizes[sizes < k].sum()) / n if n else 0.0,
            ]
        )
    out = pd.DataFrame(rows, columns=COLUMNS)
    out = out.sort_values(["uniques", "below_k", "distinction", "size"], ascending=[False, False, False, True], kind="stable")
    return out.reset_index(drop=True), cut
