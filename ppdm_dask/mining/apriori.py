"""Exact level-wise Apriori on a TransactionArray (Agrawal & Srikant 1994), as Dask graphs.

Counting is done by :class:`~ppdm_dask.mining.counting.SupportCounter`. Level 1: per-block
``bincount`` summed in a tree. Level 2: every pair of frequent items, enumerated per block and
counted with one ``bincount`` (int32 ``X.T @ X`` for very many items), summed in a tree. Levels >= 3: each block's packed bitsets of the items that occur
in frequent 2-itemsets are built once and persisted on the workers; each level sends only the
candidate arrays and tree-sums one count vector. The counts are exact integers, so the result
does not depend on partitioning or workers.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any, Callable

import numpy as np

from ..errors import DataFormatError, InvalidParameter, ResultTooLargeError
from .ahead import CountAhead
from .candidates import apriori_gen, join_count
from .counting import SupportCounter
from .partition import LOCAL_MAX_ITEMSETS, mine_levels
from .results import FrequentItemsets
from .strategy import choose_strategy

__all__ = ["apriori", "min_count_of", "ResultTooLargeError", "ItemsetExplosionWarning", "frequent_items", "check_candidates",
           "candidate_bytes", "DEFAULT_MAX_CANDIDATES"]

#: Default bound on the number of frequent itemsets + pending candidates.
DEFAULT_MAX_ITEMSETS = 50_000_000
#: Default bound on the candidates of one level, checked *before* they are built
#: (:func:`check_candidates`); KRIMP's candidate miners take the same bound.
DEFAULT_MAX_CANDIDATES = 20_000_000
#: Driver bytes per candidate of length k: ``BYTES_PER_CANDIDATE + BYTES_PER_CANDIDATE_ITEM * k``.
#: The prefix join and subset pruning of :func:`~.candidates.apriori_gen` hold a few 8-byte arrays
#: per joined pair at their peak, the candidates 4 bytes per item, then their counts and the
#: frequent rows kept (traced peaks of a level: 96 bytes per candidate at k = 5 on 60-item rows,
#: 119 and 124 at k = 5 and 6 on mushroom at min-count 1).
BYTES_PER_CANDIDATE = 64
BYTES_PER_CANDIDATE_ITEM = 10
#: Never use more than this share of the driver's available memory for one level's candidates.
MEMORY_SHARE = 0.5


def candidate_bytes(n_candidates: int, k: int, extra_per_candidate: int = 0) -> int:
    """Estimated driver memory to build and count ``n_candidates`` candidates of length ``k``."""
    return int(n_candidates) * (BYTES_PER_CANDIDATE + BYTES_PER_CANDIDATE_ITEM * int(k) + int(extra_per_candidate))


def _available_bytes() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # no psutil or no /proc: the count bound alone applies
        return None


def _gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB" if n >= 2**30 else f"{n / 2**20:,.0f} MiB"


def check_candidates(n_candidates: int, k: int, max_candidates: int | None, *, extra_per_candidate: int = 0,
                     upper_bound: bool = False, memory: int | None = None) -> None:
    """Refuse a level of ``n_candidates`` candidates of length ``k`` **before** it is built: more
    than ``max_candidates`` (None: no bound), or an estimated memory over :data:`MEMORY_SHARE` of
    the driver's available memory (``memory``: that figure, default measured now).

    ``upper_bound``: ``n_candidates`` counts the joined pairs before subset pruning (what
    :func:`~.candidates.apriori_gen` allocates; the candidates may be fewer).
    """
    need = candidate_bytes(n_candidates, k, extra_per_candidate)
    what = (f"level {k} would build {'up to ' if upper_bound else ''}{n_candidates:,} candidate itemsets "
            f"(about {_gib(need)} on the driver)")
    fix_py = "raise min_support, set max_length, or raise max_candidates"
    fix = "raise `min_support` or `min_count`, set `max_length`, or raise `max_candidates`"
    if max_candidates is not None and n_candidates > max_candidates:
        raise ResultTooLargeError(f"{what}, over the bound of {max_candidates:,} candidates", python=fix_py, fix=fix)
    avail = _available_bytes() if memory is None else memory
    if avail is not None and need > MEMORY_SHARE * avail:
        raise ResultTooLargeError(f"{what}, more than {MEMORY_SHARE:.0%} of the {_gib(avail)} of memory available",
                                  python="raise min_support or set max_length", fix="raise `min_support` or `min_count`, or set `max_length`")


class ItemsetExplosionWarning(UserWarning):
    """A level has a very large number of candidates."""


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


def pairs_at(index: np.ndarray, f: int) -> tuple[np.ndarray, np.ndarray]:
    """``(a, b)`` of the pairs at the sorted positions ``index`` of ``np.triu_indices(f, 1)``."""
    a_ = np.arange(f, dtype=np.int64)
    starts = a_ * (2 * f - a_ - 1) // 2  # position of pair (a, a + 1)
    a = np.searchsorted(starts, index, side="right") - 1
    return a, index - starts[a] + a + 1


def frequent_items(counts: np.ndarray, min_count: int) -> np.ndarray:
    """Column ids of the items with count >= min_count (sorted)."""
    return np.flatnonzero(counts >= min_count).astype(np.int32)


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
    levels: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    stats: list[dict[str, Any]] = []
    strategy_st: dict[str, Any] = {}  # the strategy of the levels >= 3 and why, for their statistics

    def record(k: int, n_cand: int, ids: np.ndarray, counts: np.ndarray, t0: float, ahead_of: int | None = None) -> None:
        levels[k] = (ids.astype(np.int32, copy=False), counts.astype(np.int64, copy=False))
        st = {"length": k, "candidates": int(n_cand), "frequent": int(counts.size), "seconds": time.perf_counter() - t0}
        if ahead_of is not None:  # no pass of its own: counted by the pass of that level
            st["counted_with"] = ahead_of
        st.update(counter.plan_fields())  # the memory plans of the rows and bitsets, and why
        if k >= 3:
            st.update(strategy_st)  # the strategy of the levels >= 3, and why
        stats.append(st)
        if on_level is not None:
            on_level(st)

    def refuse_past(total: int, too_many: str, many: int, many_text: str) -> None:
        """Refuse a result past ``max_itemsets``; warn when ``many`` passes a tenth of it."""
        if total > max_itemsets:
            raise ResultTooLargeError(f"{too_many}, over the bound of {max_itemsets:,}",
                                      python="raise min_support, set max_length, or raise max_itemsets",
                                      fix="raise `min_support` or `min_count`, set `max_length`, or raise `max_itemsets`")
        if many > max_itemsets // 10:
            warnings.warn(f"{many_text}; the output may explode", ItemsetExplosionWarning, stacklevel=4)

    def guard(n_next: int, k: int) -> None:
        total = sum(c.size for _, c in levels.values()) + n_next
        refuse_past(total, f"level {k} would bring the result to {total:,} itemsets and candidates", n_next,
                    f"level {k} has {n_next:,} candidates")

    def guard_result(total: int) -> None:
        refuse_past(total, f"the result has {total:,} itemsets", total, f"the result has {total:,} itemsets")

    counter = SupportCounter(tx, client=client, progress=progress, split_every=split_every, memory_plan=memory_plan)
    # ---- level 1
    t0 = time.perf_counter()
    counts1 = counter.item_counts()
    f1 = frequent_items(counts1, min_count)
    record(1, tx.n_items, f1[:, None], counts1[f1], t0)
    if (max_length is not None and max_length < 2) or f1.size < 2:
        return FrequentItemsets(levels, tx.vocabulary, n, min_count, stats)

    # ---- level 2: every pair of frequent items
    t0 = time.perf_counter()
    n_pairs = f1.size * (f1.size - 1) // 2
    check_candidates(n_pairs, 2, max_candidates)
    guard(n_pairs, 2)
    pc = counter.pair_counts(f1)
    kept = np.flatnonzero(pc >= min_count)
    ia, ib = pairs_at(kept, f1.size)  # only the frequent pairs: np.triu_indices of all would be 36 MB on retail
    l2 = np.stack([f1[ia], f1[ib]], axis=1)
    record(2, n_pairs, l2, pc[kept], t0)
    if (max_length is not None and max_length < 3) or l2.shape[0] < 3:
        return FrequentItemsets(levels, tx.vocabulary, n, min_count, stats)

    # ---- levels >= 3 on per-block bitsets of the items of frequent pairs
    items = np.unique(l2)
    if counter.bit_items is not None and np.all(np.isin(items, counter.bit_items)):
        items = counter.bit_items  # bitsets kept from level 2: a superset, positions index it
    frequent = np.searchsorted(items, l2).astype(np.int32)  # positions into ``items``
    choice = choose_strategy(strategy, frequent, tx.partition_rows, min_count, max_length, int(items.size))
    strategy_st.update(strategy=choice.strategy, strategy_reason=choice.reason)
    if choice.strategy == "partition":
        t0 = time.perf_counter()
        bound = min(LOCAL_MAX_ITEMSETS, max_itemsets, max_candidates or max_itemsets)
        # one or two passes: bitsets are built inside its tasks unless level 2 kept them
        counter.use_bitsets(items, keep=False)
        outcome = mine_levels(counter, frequent, levels[2][1], min_count, max_length=max_length, max_out=bound)
        if outcome.fallback is None:
            guard_result(sum(c.size for _, c in levels.values()) + sum(c.size for _, c in outcome.levels.values()))
            strategy_st["passes"] = outcome.passes
            if outcome.missing:
                strategy_st["recounted"] = outcome.missing
            for k in sorted(outcome.counted):
                rows, counts = outcome.levels.get(k, (np.zeros((0, k), np.int32), np.zeros(0, np.int64)))
                record(k, outcome.counted[k], items[rows], counts, t0, None if k == 3 else 3)
                t0 = time.perf_counter()
            counter.release()
            return FrequentItemsets(levels, tx.vocabulary, n, min_count, stats)
        strategy_st.update(strategy="levelwise", strategy_reason=outcome.fallback)
    counter.use_bitsets(np.unique(l2))
    items = counter.bit_items  # may be a superset (bitsets kept from level 2)
    frequent = np.searchsorted(items, l2).astype(np.int32)
    k = 3
    ahead = CountAhead(counter, max_length)
    while max_length is None or k <= max_length:
        t0 = time.perf_counter()
        check_candidates(join_count(frequent), k, max_candidates, upper_bound=True)  # before building them
        cands, left = apriori_gen(frequent)
        if cands.shape[0] == 0:
            break
        guard(cands.shape[0], k)
        ck, counted_with = ahead.counts(frequent, cands, left, k)
        keep = ck >= min_count
        frequent = cands[keep]
        record(k, cands.shape[0], items[frequent], ck[keep], t0, counted_with)
        if frequent.shape[0] < k + 1:
            break
        k += 1
    counter.release()
    return FrequentItemsets(levels, tx.vocabulary, n, min_count, stats)
