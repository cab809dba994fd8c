"""EMASK-Apriori (docs/emask.md#emask-apriori): Apriori on distorted data with per-level support reconstruction.

Only the all-ones count of each candidate is counted on the distorted data (by the exact
:class:`~ppdm_dask.mining.counting.SupportCounter` of plain Apriori); the counts of every
candidate of every level are kept on the driver, and at the end of a pass the true support of
each candidate is reconstructed from the counts of all its subsets with the closed form of
docs/emask.md#the-closed-form (identical to M^-1 applied to the inclusion-exclusion class counts).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from ..errors import InvalidParameter
from ..mining.apriori import min_count_of
from ..mining.candidates import RowIndex
from ..mining.counting import SupportCounter
from ..mining.guards import DEFAULT_MAX_CANDIDATES, DEFAULT_MAX_ITEMSETS
from ..mining.levelwise import CandidateIds, LevelwiseDriver, Verdict
from ..mining.results import FrequentItemsets
from . import _kernels as K
from .block_search import ENGINES, BlockSearchCounter
from .distortion import check_pq

__all__ = ["mine", "EstimatedItemsets", "ReconstructedSupports", "lookup_rows"]


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


class ReconstructedSupports:
    """EMASK-Apriori's judge for :class:`~ppdm_dask.mining.levelwise.LevelwiseDriver`.

    The distorted count of every candidate of every level is kept (the store); a level's true
    supports are reconstructed from the counts of all subsets of its candidates with the closed
    form (:func:`~ppdm_dask.emask._kernels.closed_form_estimate`). Candidates whose estimate is
    >= ``keep_threshold`` grow the next level; those >= ``threshold`` are reported.

    Parameters
    ----------
    n : int
        Transactions.
    p, q : float
        The distortion parameters.
    threshold, keep_threshold : float
        Reporting and pipeline thresholds on the estimated counts.
    return_se : bool
        Also keep the variance estimate of every reported support (:attr:`variances`).
    """

    def __init__(self, n: int, p: float, q: float, threshold: float, keep_threshold: float, return_se: bool) -> None:
        self.n, self.p, self.q = n, p, q
        self.threshold, self.keep_threshold, self.return_se = threshold, keep_threshold, return_se
        self.variances: dict[int, np.ndarray] = {}
        self._c1 = np.zeros(0, np.int64)
        # distorted counts of everything counted so far: level -> (index of column-id rows, counts)
        self._store: dict[int, tuple[RowIndex, np.ndarray]] = {}

    def extra_bytes(self, k: int) -> int:
        """Driver bytes per candidate of length k beyond plain Apriori's: its distorted count and
        row index stay in the store until the end, and k + 1 subset sums are reconstructed (traced
        peak of a level: 143 bytes per candidate at k = 4, mushroom with p = q = 0)."""
        return 24 + 8 * k

    def _sigma(self, k: int, counts: np.ndarray, cand_ids: np.ndarray) -> list[np.ndarray]:
        """Sums of the distorted counts of the candidates' j-subsets, j = 0 .. k."""
        if k == 1:
            self._c1 = counts.astype(np.int64)
            return [np.full(counts.size, float(self.n)), self._c1]
        self._store[k] = (RowIndex(cand_ids), counts)
        sigma = [np.full(counts.size, float(self.n)), self._c1[cand_ids].sum(axis=1)]
        for j in range(2, k):
            index, stored = self._store[j]
            total = np.zeros(counts.size, np.float64)
            for combo in combinations(range(k), j):
                total += lookup_rows(cand_ids[:, combo], index, stored)
            sigma.append(total)
        sigma.append(counts)
        return sigma

    def judge(self, k: int, counts: np.ndarray, ids: CandidateIds) -> Verdict:
        """Reconstruct the level's supports; grow the kept candidates, report the frequent ones."""
        cand_ids = ids()
        sigma = self._sigma(k, counts, cand_ids)
        est = K.closed_form_estimate(sigma, k, self.p, self.q)
        report = est >= self.threshold
        if self.return_se:
            self.variances[k] = K.closed_form_variance(sigma, k, self.p, self.q, est)[report]
        return Verdict(np.flatnonzero(est >= self.keep_threshold), cand_ids[report], est[report])


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
    engine: str = "auto",
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
    engine : {"auto", "block", "rows"}
        How level 2 is counted: by the block search (bitsets of the level's items, AND +
        popcount, kept for the levels >= 3; :mod:`~ppdm_dask.emask.block_search`) when its cost
        estimate says it pays (``"auto"``), always (``"block"``), or by the mining engine's
        pair enumeration or bitsets (``"rows"``). The counts, hence the result, are the same;
        the levels' statistics say which ran and why (``pair_search``).

    Returns
    -------
    EstimatedItemsets
        Frequency is decided on the unclipped estimates.
    """
    try:
        p, q = check_pq(p, q)
    except InvalidParameter as exc:
        raise InvalidParameter(
            exc.message, python="p and q in [0, 1] with p + q != 1", fix="give `p` and `q` in [0, 1] with p + q != 1"
        ) from None
    if max_candidates is not None and max_candidates < 1:
        raise InvalidParameter("max_candidates must be >= 1 (or None)")
    if not 0.0 <= prune_margin < 1.0:
        raise InvalidParameter("prune_margin must be in [0, 1)")
    if engine not in ENGINES:
        raise InvalidParameter(
            f"engine must be one of {ENGINES}, got {engine!r}",
            parameter="engine",
            fix="give `engine` as 'auto', 'block' or 'rows'",
        )
    n = distorted.n_transactions
    min_count = min_count_of(min_support, n)  # validates
    threshold = float(min_support) * n if isinstance(min_support, float) else float(min_support)
    counter = BlockSearchCounter(
        SupportCounter(distorted, client=client, progress=progress, memory_plan=memory_plan),
        client=client,
        progress=progress,
        engine=engine,
    )
    judge = ReconstructedSupports(n, p, q, threshold, threshold * (1.0 - prune_margin), return_se)
    driver = LevelwiseDriver(
        counter,
        judge,
        distorted.n_items,
        max_length=max_length,
        max_itemsets=max_itemsets,
        max_candidates=max_candidates,
        on_level=on_level,
    ).run(stacklevel=2)
    return EstimatedItemsets(driver.levels, distorted.vocabulary, n, min_count, driver.stats, variances=judge.variances, p=p, q=q)
