"""Itemset utility of a transaction release against its original
(docs/mining.md#report-figures-the-km-audit-curve-and-unique-baskets).

F are the frequent itemsets of the original (exact Apriori), R those of the release: exact
Apriori for releases whose rows are read as they are (k^m-anonymised, generated), EMASK-Apriori
with reconstructed supports for distorted releases. σ⁺, σ⁻ and ρ are
:func:`~ppdm_dask.metrics.itemsets.itemset_accuracy` on supports as fractions of each side's
rows (a generated release may have another number of rows). Itemsets are compared by the string
form of their labels, since a generalised release names its items by strings.

The support scatter has one point per itemset of F ∪ R (at most ``max_points``, an evenly
spaced deterministic subsample beyond): its support in the original and in the release. An
itemset found on one side only is recounted on the other side (exact counting engine; for a
distorted release its support is reconstructed from the distorted counts of all its subsets
by the family's reconstruction), so every point has both coordinates.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["itemset_utility", "exact_supports", "DEFAULT_MAX_POINTS"]

#: Most points of the support scatter.
DEFAULT_MAX_POINTS = 2000


def _keyed(fi: Any) -> dict[frozenset, tuple[tuple, float]]:
    """``{frozenset(str labels): (labels, count)}`` of a FrequentItemsets (or EstimatedItemsets)."""
    return {frozenset(str(x) for x in s): (tuple(s), float(c)) for s, c in zip(fi.itemsets, fi.counts.tolist())}


def _column_ids(tx: Any, itemsets: list[frozenset]) -> tuple[list[int], list[np.ndarray]]:
    """Positions of the itemsets whose labels all exist in ``tx``, and their column ids."""
    index = {str(v): j for j, v in enumerate(tx.vocabulary.labels.tolist())}
    pos, ids = [], []
    for i, s in enumerate(itemsets):
        if all(x in index for x in s):
            pos.append(i)
            ids.append(np.array(sorted(index[x] for x in s), np.int64))
    return pos, ids


def exact_supports(tx: Any, itemsets: list[frozenset], ckw: dict) -> np.ndarray:
    """Exact support counts in ``tx`` of itemsets given as frozensets of label strings (0 for an
    itemset with an item ``tx`` does not have)."""
    from ..mining.counting import SupportCounter

    out = np.zeros(len(itemsets), np.float64)
    pos, ids = _column_ids(tx, itemsets)
    if not pos:
        return out
    counter = SupportCounter(tx, **ckw)
    by_len: dict[int, list[int]] = {}
    for j, x in enumerate(ids):
        by_len.setdefault(x.size, []).append(j)
    for _n, js in sorted(by_len.items()):
        out[[pos[j] for j in js]] = counter.itemset_counts(np.stack([ids[j] for j in js]))
    counter.release()
    return out


def itemset_utility(
    original: Any,
    release: Any,
    min_support: float | int,
    *,
    max_length: int | None = 3,
    miner: Callable[..., Any] | None = None,
    recount: Callable[..., np.ndarray] | None = None,
    max_itemsets: int = 2_000_000,
    max_points: int = DEFAULT_MAX_POINTS,
    client: Any = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Frequent itemsets of ``release`` against those of ``original``.

    Parameters
    ----------
    original, release : TransactionArray
    min_support : float or int
        Mining threshold on both sides (a fraction of each side's rows, or a count).
    max_length : int, optional
        Longest itemsets mined.
    miner : callable, optional
        ``miner(release, min_support, max_length=, max_itemsets=, client=, progress=)`` giving R
        (a FrequentItemsets-like object with ``itemsets``, ``counts``, ``min_count``); default
        exact Apriori. A distorted release passes EMASK-Apriori (reconstructed supports).
    recount : callable, optional
        ``recount(release, itemsets, client=, progress=)``: support counts in the release of
        itemsets given as frozensets of label strings (default :func:`exact_supports`); a
        distorted release passes its reconstruction.
    max_itemsets : int
        Guard of both mining runs (:class:`~ppdm_dask.errors.ResultTooLargeError` beyond).
    max_points : int
        Most points of the support scatter.

    Returns
    -------
    dict
        ``accuracy`` (:func:`~ppdm_dask.metrics.itemset_accuracy` on support fractions),
        ``n_original`` (|F|), ``n_release`` (|R|), ``min_count_original``, ``min_count_release``,
        ``points``: list of ``(labels, original support, release support, in F, in R)``
        (fractions of rows), ``n_points_total`` (|F ∪ R|), ``original_itemsets`` (F) and
        ``release_itemsets`` (R) as mined.
    """
    from ..mining import ItemsetExplosionWarning, apriori
    from .itemsets import itemset_accuracy

    ckw = {"client": client, "progress": progress}
    n_o, n_r = max(original.n_transactions, 1), max(release.n_transactions, 1)
    with warnings.catch_warnings():  # explosion is bounded by max_itemsets and reported by the caller
        warnings.simplefilter("ignore", ItemsetExplosionWarning)
        fo = apriori(original, min_support, max_length=max_length, max_itemsets=max_itemsets, **ckw)
        fr = (miner or apriori)(release, min_support, max_length=max_length, max_itemsets=max_itemsets, **ckw)
    ko, kr = _keyed(fo), _keyed(fr)
    acc = itemset_accuracy({s: c / n_o for s, (_, c) in ko.items()}, {s: c / n_r for s, (_, c) in kr.items()})
    union = sorted(ko.keys() | kr.keys(), key=lambda s: (len(s), sorted(s)))
    if len(union) > max_points:  # evenly spaced, deterministic
        union = [union[i] for i in np.unique(np.linspace(0, len(union) - 1, max_points).round().astype(int))]
    x = np.array([ko[s][1] / n_o if s in ko else np.nan for s in union])
    y = np.array([kr[s][1] / n_r if s in kr else np.nan for s in union])
    miss_o = [i for i, s in enumerate(union) if s not in ko]
    miss_r = [i for i, s in enumerate(union) if s not in kr]
    if miss_o:
        x[miss_o] = exact_supports(original, [union[i] for i in miss_o], ckw) / n_o
    if miss_r:
        sets = [union[i] for i in miss_r]
        y[miss_r] = (recount(release, sets, **ckw) if recount is not None else exact_supports(release, sets, ckw)) / n_r
    labels = [(ko.get(s) or kr.get(s))[0] for s in union]
    points = [(lab, float(a), float(b), s in ko, s in kr) for lab, a, b, s in zip(labels, x, y, union)]
    return {
        "accuracy": acc,
        "n_original": len(ko),
        "n_release": len(kr),
        "min_count_original": int(fo.min_count),
        "min_count_release": int(fr.min_count),
        "points": points,
        "n_points_total": len(ko.keys() | kr.keys()),
        "original_itemsets": fo,
        "release_itemsets": fr,
    }
