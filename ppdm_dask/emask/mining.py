"""EMASK-Apriori (docs/emask.md#emask-apriori): Apriori on distorted data with per-level support reconstruction.

Only the all-ones count of each candidate is counted on the distorted data (by the exact
:class:`~ppdm_dask.mining.counting.SupportCounter` of plain Apriori); the counts of every
candidate of every level are kept on the driver, and at the end of a pass the true support of
each candidate is reconstructed from the counts of all its subsets with the closed form of
docs/emask.md#the-closed-form (identical to M^-1 applied to the inclusion-exclusion class counts).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Callable

import numpy as np

from ..errors import InvalidParameter
from ..mining.apriori import DEFAULT_MAX_CANDIDATES, DEFAULT_MAX_ITEMSETS, ResultTooLargeError, check_candidates, min_count_of
from ..mining.candidates import RowIndex, apriori_gen, join_count
from ..mining.ahead import CountAhead
from ..mining.counting import SupportCounter
from ..mining.results import FrequentItemsets
from . import _kernels as K
from .distortion import check_pq

__all__ = ["mine", "EstimatedItemsets", "lookup_rows"]


def _store_bytes(k: int) -> int:
    """Driver bytes per candidate of length k beyond plain Apriori's: its distorted count and
    row index stay in the store until the end, and k + 1 subset sums are reconstructed (traced
    peak of a level: 143 bytes per candidate at k = 4, mushroom with p = q = 0)."""
    return 24 + 8 * k


@dataclass(repr=False)  # keep FrequentItemsets' one-line summary
class EstimatedItemsets(FrequentItemsets):
    """Itemsets judged frequent from distorted data, with reconstructed supports.

    ``levels[k] = (ids, estimates)`` holds float estimates of the true support counts;
    ``variances[k]`` the unbiased variance estimates (when requested).
    """

    variances: dict[int, np.ndarray] = field(default_factory=dict)
    p: float = 0.0
    q: float = 0.0

    def as_dict(self) -> dict[frozenset, float]:
        """``{frozenset(labels): reconstructed support count}``."""
        return {frozenset(s): float(c) for s, c in zip(self.itemsets, self.counts.tolist())}

    @property
    def counts(self) -> np.ndarray:
        parts = [self.levels[k][1] for k in sorted(self.levels)]
        return np.concatenate(parts).astype(np.float64) if parts else np.zeros(0)

    def __repr__(self) -> str:
        per = ", ".join(f"{k}: {c.size}" for k, (_, c) in sorted(self.levels.items()))
        return f"EstimatedItemsets({len(self)} itemsets, reconstructed from data distorted with p={self.p}, q={self.q}; by length {{{per}}})"

    def std_errors(self) -> np.ndarray:
        """sqrt(max(V̂, 0)) per itemset, in the order of :attr:`counts` (needs return_se)."""
        parts = [self.variances[k] for k in sorted(self.levels)]
        return np.sqrt(np.maximum(np.concatenate(parts), 0.0)) if parts else np.zeros(0)


def lookup_rows(query: np.ndarray, index: RowIndex, values: np.ndarray) -> np.ndarray:
    """``values`` of the table rows equal to each query row (all must be present)."""
    idx, found = index.find(query)
    if not np.all(found):
        raise AssertionError("a subset of a candidate is missing from the counted store")
    return values[idx]


def mine(
    distorted: Any,
    p: float,
    q: float,
    min_support: float | int,
    *,
    max_length: int | None = None,
    prune_margin: float = 0.0,
    return_se: bool = False,
    max_itemsets: int = DEFAULT_MAX_ITEMSETS,
    max_candidates: int | None = DEFAULT_MAX_CANDIDATES,
    progress: bool = False,
    on_level: Callable[[dict[str, Any]], None] | None = None,
    client: Any = None,
    memory_plan: str = "auto",
) -> EstimatedItemsets:
    """EMASK-Apriori: frequent itemsets of the *original* data, mined from its distortion.

    Parameters
    ----------
    distorted : TransactionArray
        Output of :func:`ppdm_dask.emask.distort` with the same ``p``, ``q``.
    p, q : float
        The distortion parameters.
    min_support : float or int
        Fraction of transactions (threshold ``min_support * N``) or absolute count.
    max_length : int, optional
    prune_margin : float in [0, 1)
        Keep candidates whose reconstructed support is >= (1 - prune_margin) x threshold in the
        candidate pipeline (fewer false negatives σ−, more work); the reported itemsets still
        satisfy the threshold.
    return_se : bool
        Also estimate the variance of every reconstructed support (``variances``).
    max_itemsets : int
        Guard against output explosion, as in :func:`ppdm_dask.mining.apriori`.
    max_candidates : int or None
        Guard against memory explosion, checked before a level's candidates are built, as in
        :func:`ppdm_dask.mining.apriori`.
    memory_plan : {"auto", "persist", "stream"}
        The bitsets' memory plan of :class:`~ppdm_dask.mining.counting.SupportCounter` (the
        levels' statistics say which plan ran and why).

    Returns
    -------
    EstimatedItemsets
        Frequency is decided on the unclipped estimates.
    """
    try:
        p, q = check_pq(p, q)
    except InvalidParameter as exc:
        raise InvalidParameter(exc.message, python="p and q in [0, 1] with p + q != 1",
                               fix="give `p` and `q` in [0, 1] with p + q != 1") from None
    if max_candidates is not None and max_candidates < 1:
        raise InvalidParameter("max_candidates must be >= 1 (or None)")
    if not 0.0 <= prune_margin < 1.0:
        raise InvalidParameter("prune_margin must be in [0, 1)")
    n = distorted.n_transactions
    min_count = min_count_of(min_support, n)  # validates
    threshold = float(min_support) * n if isinstance(min_support, float) else float(min_support)
    keep_thr = threshold * (1.0 - prune_margin)
    counter = SupportCounter(distorted, client=client, progress=progress, memory_plan=memory_plan)
    levels: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    variances: dict[int, np.ndarray] = {}
    stats: list[dict[str, Any]] = []
    # distorted counts of everything counted so far: level -> (index of column-id rows, counts)
    store: dict[int, tuple[RowIndex, np.ndarray]] = {}

    def finish(k: int, n_cand: int, ids: np.ndarray, sigma: list[np.ndarray], t0: float, counted_with: int | None = None) -> np.ndarray:
        est = K.closed_form_estimate(sigma, k, p, q)
        pipeline = est >= keep_thr
        report = est >= threshold
        levels[k] = (ids[report].astype(np.int32), est[report])
        if return_se:
            variances[k] = K.closed_form_variance(sigma, k, p, q, est)[report]
        st = {"length": k, "candidates": int(n_cand), "frequent": int(report.sum()), "seconds": time.perf_counter() - t0}
        if counted_with is not None:  # no pass of its own (see ppdm_dask.mining.ahead)
            st["counted_with"] = counted_with
        st.update(counter.plan_fields())  # the memory plans of the rows and bitsets, and why
        stats.append(st)
        if on_level is not None:
            on_level(st)
        if sum(lv[1].size for lv in levels.values()) > max_itemsets:
            raise ResultTooLargeError(f"more than {max_itemsets:,} itemsets", python="raise min_support or set max_length",
                                         fix="raise `min_support` or `min_count`, or set `max_length`")
        return pipeline

    def result() -> EstimatedItemsets:
        counter.release()
        return EstimatedItemsets(levels, distorted.vocabulary, n, min_count, stats, variances=variances, p=p, q=q)

    # ---- level 1: all items
    t0 = time.perf_counter()
    c1 = counter.item_counts().astype(np.int64)
    all_items = np.arange(distorted.n_items, dtype=np.int32)
    keep1 = finish(1, distorted.n_items, all_items[:, None], [np.full(c1.size, float(n)), c1], t0)
    f1 = all_items[keep1]
    if (max_length is not None and max_length < 2) or f1.size < 2:
        return result()

    # ---- level 2: all pairs of kept items
    t0 = time.perf_counter()
    n_pairs = f1.size * (f1.size - 1) // 2
    check_candidates(n_pairs, 2, max_candidates, extra_per_candidate=_store_bytes(2))  # before counting them
    if n_pairs > max_itemsets:
        raise ResultTooLargeError(f"{n_pairs:,} pair candidates exceed max_itemsets={max_itemsets:,}",
                                  python="raise min_support or set max_length", fix="raise `min_support` or `min_count`, or set `max_length`")
    pc = counter.pair_counts(f1)
    ia, ib = np.triu_indices(f1.size, 1)
    pairs = np.stack([f1[ia], f1[ib]], axis=1)
    store[2] = (RowIndex(pairs), pc)
    keep2 = finish(2, n_pairs, pairs, [np.full(pc.size, float(n)), c1[pairs[:, 0]] + c1[pairs[:, 1]], pc], t0)
    frequent_ids = pairs[keep2]
    if (max_length is not None and max_length < 3) or frequent_ids.shape[0] < 3:
        return result()

    # ---- levels >= 3 on the persisted bitsets
    items = np.unique(frequent_ids)
    counter.use_bitsets(items)
    items = counter.bit_items  # may be a superset (bitsets kept from level 2)
    frequent = np.searchsorted(items, frequent_ids).astype(np.int32)
    ahead = CountAhead(counter, max_length)
    k = 3
    while max_length is None or k <= max_length:
        t0 = time.perf_counter()
        # before building them (the store keeps every level's counts: they add up)
        check_candidates(join_count(frequent), k, max_candidates, extra_per_candidate=_store_bytes(k), upper_bound=True)
        cands, left = apriori_gen(frequent)
        if cands.shape[0] == 0:
            break
        if cands.shape[0] + sum(lv[1].size for lv in levels.values()) > max_itemsets:
            raise ResultTooLargeError(f"level {k}: {cands.shape[0]:,} candidates exceed max_itemsets={max_itemsets:,}",
                                      python="raise min_support or set max_length", fix="raise `min_support` or `min_count`, or set `max_length`")
        ck, counted_with = ahead.counts(frequent, cands, left, k)
        cand_ids = items[cands]
        store[k] = (RowIndex(cand_ids), ck)
        sigma = [np.full(ck.size, float(n)), c1[cand_ids].sum(axis=1)]
        for j in range(2, k):
            index, counts = store[j]
            total = np.zeros(ck.size, np.float64)
            for combo in combinations(range(k), j):
                total += lookup_rows(cand_ids[:, combo], index, counts)
            sigma.append(total)
        sigma.append(ck)
        keep = finish(k, cands.shape[0], cand_ids, sigma, t0, counted_with)
        frequent = cands[keep]
        if frequent.shape[0] < k + 1:
            break
        k += 1
    return result()
