"""Exact level-wise Apriori on a TransactionArray (Agrawal & Srikant 1994), as Dask graphs.

Counting is done by :class:`~ppdm_dask.mining.counting.SupportCounter`. Level 1: per-block
``bincount`` summed in a tree. Level 2: every pair of frequent items, enumerated per block and
counted with one ``bincount`` (int32 ``X.T @ X`` for very many items), summed in a tree. Levels >= 3: each block's packed bitsets of the items that occur
in frequent 2-itemsets are built once and persisted on the workers; each level sends only the
candidate arrays and tree-sums one count vector. The counts are exact integers, so the result
does not depend on partitioning or workers.

The levels are mined by the one level-wise driver (:class:`~ppdm_dask.mining.levelwise.LevelwiseDriver`,
shared with EMASK-Apriori) with the judge :class:`ExactCounts`; only the partition strategy of the
levels >= 3 is Apriori's own.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import DataFormatError, InvalidParameter, ResultTooLargeError
from .counting import SupportCounter
from .guards import DEFAULT_MAX_CANDIDATES, DEFAULT_MAX_ITEMSETS, ItemsetExplosionWarning, candidate_bytes, check_candidates
from .levelwise import CandidateIds, LevelwiseDriver, Verdict
from .partition import LOCAL_MAX_ITEMSETS, mine_levels
from .results import FrequentItemsets
from .strategy import MIN_LOCAL_COUNT, choose_strategy

__all__ = [
    "apriori",
    "min_count_of",
    "ResultTooLargeError",
    "ItemsetExplosionWarning",
    "frequent_items",
    "check_candidates",
    "candidate_bytes",
    "DEFAULT_MAX_CANDIDATES",
    "DEFAULT_MAX_ITEMSETS",
    "ExactCounts",
]


def min_count_of(min_support: float | int, n_transactions: int) -> int:
    """Absolute threshold from a fraction in (0, 1] or a count >= 1 (an itemset is frequent iff
    its count >= the threshold; a fraction s gives ceil(s * N))."""
    if isinstance(min_support, bool) or not isinstance(min_support, (int, float, np.integer, np.floating)):
        raise InvalidParameter(f"min_support must be a number, got {type(min_support).__name__}")
    if n_transactions <= 0:
        raise DataFormatError("cannot mine an empty database (no transactions)")
    if isinstance(min_support, (int, np.integer)):
        if min_support < 1:
            raise InvalidParameter(f"min_support as a count must be >= 1, got {min_support}")
        if min_support > n_transactions:
            raise InvalidParameter(f"min_support {min_support} exceeds the number of transactions ({n_transactions})")
        return int(min_support)
    s = float(min_support)
    if not (0.0 < s <= 1.0) or math.isnan(s):
        raise InvalidParameter(f"min_support as a fraction must be in (0, 1], got {min_support}")
    return max(1, math.ceil(s * n_transactions - 1e-9))


def frequent_items(counts: np.ndarray, min_count: int) -> np.ndarray:
    """Column ids of the items with count >= min_count (sorted)."""
    return np.flatnonzero(counts >= min_count).astype(np.int32)


class ExactCounts:
    """Apriori's judge for :class:`~ppdm_dask.mining.levelwise.LevelwiseDriver`: an itemset is
    frequent iff its exact count is >= ``min_count``; the frequent ones grow the next level."""

    def __init__(self, min_count: int) -> None:
        self.min_count = min_count

    def extra_bytes(self, k: int) -> int:
        """Nothing kept beyond the driver's candidates."""
        return 0

    def judge(self, k: int, counts: np.ndarray, ids: CandidateIds) -> Verdict:
        """The candidates whose count reaches ``min_count``, with their counts."""
        kept = np.flatnonzero(counts >= self.min_count)
        return Verdict(kept, ids(kept), counts[kept].astype(np.int64, copy=False))


def apriori(
    tx: Any,
    min_support: float | int,
    *,
    max_length: int | None = None,
    max_itemsets: int = DEFAULT_MAX_ITEMSETS,
    max_candidates: int | None = DEFAULT_MAX_CANDIDATES,
    progress: bool = False,
    split_every: int = 8,
    on_level: Callable[[dict[str, Any]], None] | None = None,
    client: Any = None,
    memory_plan: str = "auto",
    strategy: str = "auto",
    coalesce: bool = True,
) -> FrequentItemsets:
    """All frequent itemsets of ``tx`` with their exact support counts.

    Parameters
    ----------
    tx : TransactionArray
    min_support : float or int
        A fraction of the transactions in (0, 1] (threshold ``ceil(min_support * N)``) or an
        absolute count >= 1.
    max_length : int, optional
        Longest itemsets to mine.
    max_itemsets : int
        Guard against output explosion (low support on dense data): mining stops with
        :class:`ResultTooLargeError` before the frequent itemsets plus the next level's
        candidates exceed this number. A warning is issued past 1/10 of it.
    max_candidates : int or None
        Guard against memory explosion: before a level's candidates are built, their number is
        bounded cheaply (the prefix-join pairs, :func:`~.candidates.join_count`) and mining stops
        with :class:`ResultTooLargeError` (saying how many and how much memory) when it exceeds
        this, or when their estimated memory exceeds half the driver's available memory.
    progress : bool
        Progress bars on stderr.
    split_every : int
        Fan-in of the tree reductions.
    on_level : callable, optional
        Called with each level's statistics (``length``, ``candidates``, ``frequent``, ``seconds``).
    client : distributed.Client, optional
        Run on this client (default: the active one, else the configured local scheduler).
    memory_plan : {"auto", "persist", "stream"}
        Keep the per-block bitsets of levels >= 2 on the workers, or rebuild them in every
        counting task; ``"auto"`` persists only what fits the workers' memory
        (:mod:`ppdm_dask.mining.counting`). The levels' statistics say which plan ran and why.
    strategy : {"auto", "levelwise", "partition"}
        How the itemsets of length >= 3 are mined, with the same result: one pass per level
        (``"levelwise"``), or a depth-first local search in every block at its scaled threshold
        followed, with several blocks, by one exact count of what some blocks missed
        (``"partition"``, :mod:`ppdm_dask.mining.partition`; it falls back to level-wise when a
        block's search passes its bound). ``"auto"`` picks the cheaper by a cost model
        (:mod:`ppdm_dask.mining.strategy`). The levels' statistics say which ran and why.
    coalesce : bool
        Count and search small consecutive blocks together, as units of the rows a block's
        scaled threshold needs (:mod:`ppdm_dask.mining.units`; the statistics' ``units`` field
        says how and why). ``False`` keeps one unit per block. The result is the same.

    Returns
    -------
    FrequentItemsets
    """
    if max_length is not None and max_length < 1:
        raise InvalidParameter("max_length must be >= 1")
    if max_itemsets < 1:
        raise InvalidParameter("max_itemsets must be >= 1")
    if max_candidates is not None and max_candidates < 1:
        raise InvalidParameter("max_candidates must be >= 1 (or None)")
    n = tx.n_transactions
    min_count = min_count_of(min_support, n)
    counter = SupportCounter(tx, client=client, progress=progress, split_every=split_every, memory_plan=memory_plan)
    if coalesce:
        # small blocks counted and searched together (units), so that the partitioning does not
        # decide the speed: planned from what level 1 measures (mining/units.py)
        counter.coalesce(min_count, MIN_LOCAL_COUNT)

    def partition_levels(driver: LevelwiseDriver, l2: np.ndarray) -> bool:
        """Choose the strategy of the levels >= 3; mine them here when it is the partition one."""
        items = np.unique(l2)
        if counter.bit_items is not None and np.all(np.isin(items, counter.bit_items)):
            items = counter.bit_items  # bitsets kept from level 2: a superset, positions index it
        frequent = np.searchsorted(items, l2).astype(np.int32)  # positions into ``items``
        choice = choose_strategy(strategy, frequent, counter.unit_rows, min_count, max_length, int(items.size))
        driver.deep_fields.update(strategy=choice.strategy, strategy_reason=choice.reason)
        if choice.strategy != "partition":
            return False
        t0 = time.perf_counter()
        bound = min(LOCAL_MAX_ITEMSETS, max_itemsets, max_candidates or max_itemsets)
        # one or two passes: bitsets are built inside its tasks unless level 2 kept them
        counter.use_bitsets(items, keep=False)
        outcome = mine_levels(counter, frequent, driver.levels[2][1], min_count, max_length=max_length, max_out=bound)
        if outcome.fallback is not None:
            driver.deep_fields.update(strategy="levelwise", strategy_reason=outcome.fallback)
            return False
        driver.guard_result(driver.n_reported() + sum(c.size for _, c in outcome.levels.values()), stacklevel=4)
        driver.deep_fields["passes"] = outcome.passes
        if outcome.missing:
            driver.deep_fields["recounted"] = outcome.missing
        for k in sorted(outcome.counted):
            rows, counts = outcome.levels.get(k, (np.zeros((0, k), np.int32), np.zeros(0, np.int64)))
            driver.record(k, outcome.counted[k], items[rows], counts.astype(np.int64, copy=False), t0, None if k == 3 else 3)
            t0 = time.perf_counter()
        return True

    driver = LevelwiseDriver(
        counter,
        ExactCounts(min_count),
        tx.n_items,
        max_length=max_length,
        max_itemsets=max_itemsets,
        max_candidates=max_candidates,
        on_level=on_level,
        deep=partition_levels,
    )
    driver.run(stacklevel=2)
    return FrequentItemsets(driver.levels, tx.vocabulary, n, min_count, driver.stats)
