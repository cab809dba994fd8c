"""The one level-wise driver of Apriori and EMASK-Apriori (pure numpy driver logic).

Like dask's one ``reduction(chunk, combine, aggregate)``, the driver owns what every level-wise
miner does the same way, and two pluggable parts say what differs:

- the **counting step** (``counter``): raw counts of a level's candidates. Apriori and EMASK both
  use the exact, distributed :class:`~ppdm_dask.mining.counting.SupportCounter` (EMASK counts the
  all-ones patterns of the distorted data); any object with its methods ``item_counts``,
  ``pair_counts``, ``use_bitsets`` / ``bit_items``, ``extension_counts_many``, ``plan_fields`` and
  ``release`` serves (a brute-force counter in the tests);
- the **judge** (a :class:`LevelJudge`): from a level's counts, which candidates grow the next
  level and which itemsets are reported with which values: exact counts against the threshold
  for Apriori, reconstructed supports for EMASK.

The driver owns the levels (1: every item; 2: every pair of grown items; >= 3: prefix join and
subset pruning, :func:`~.candidates.apriori_gen`), the candidate guard before a level is built
(:func:`~.guards.check_candidates`) and the itemset guard before it is counted
(:func:`~.guards.check_itemsets`), counting the small last levels ahead in one pass
(:class:`~.ahead.CountAhead`), and the level statistics.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .ahead import CountAhead
from .candidates import apriori_gen, join_count
from .guards import check_candidates, check_itemsets

__all__ = ["LevelJudge", "Verdict", "CandidateIds", "LevelwiseDriver", "pairs_at"]


def pairs_at(index: np.ndarray, f: int) -> tuple[np.ndarray, np.ndarray]:
    """``(a, b)`` of the pairs at the sorted positions ``index`` of ``np.triu_indices(f, 1)``."""
    a_ = np.arange(f, dtype=np.int64)
    starts = a_ * (2 * f - a_ - 1) // 2  # position of pair (a, a + 1)
    a = np.searchsorted(starts, index, side="right") - 1
    return a, index - starts[a] + a + 1


def _ids_of(items: np.ndarray, cands: np.ndarray) -> Callable[[np.ndarray | None], np.ndarray]:
    """The builder of :class:`CandidateIds` for candidates given as positions into ``items``."""

    def build(index: np.ndarray | None) -> np.ndarray:
        return items[cands if index is None else cands[index]]

    return build


class CandidateIds:
    """The column ids of a level's candidates, built only for the rows asked for.

    Parameters
    ----------
    build : callable
        ``build(index)`` -> ``(len(index), k)`` column ids of the candidates at ``index``
        (sorted positions), or of all candidates for ``index=None``.
    """

    def __init__(self, build: Callable[[np.ndarray | None], np.ndarray]) -> None:
        self._build = build

    def __call__(self, index: np.ndarray | None = None) -> np.ndarray:
        """Column ids of the candidates at ``index`` (default: all, in candidate order)."""
        return self._build(index)


@dataclass
class Verdict:
    """What a :class:`LevelJudge` decided about one level's candidates.

    Attributes
    ----------
    grow : (m,) int array
        Sorted positions of the candidates that generate the next level.
    ids : (r, k) int array
        Column ids of the itemsets reported at this level.
    values : (r,) array
        Their reported supports (exact int64 counts, or float estimates).
    """

    grow: np.ndarray
    ids: np.ndarray
    values: np.ndarray


class LevelJudge(Protocol):
    """How a family decides from a level's raw counts (the ``aggregate`` of the driver)."""

    def extra_bytes(self, k: int) -> int:
        """Driver bytes per candidate of length ``k`` that the family keeps beyond the driver's."""
        ...

    def judge(self, k: int, counts: np.ndarray, ids: CandidateIds) -> Verdict:
        """The :class:`Verdict` on the level-``k`` candidates with raw ``counts`` (in candidate order)."""
        ...


@dataclass
class LevelwiseDriver:
    """Mine the levels of ``counter``'s data, ``judge`` deciding each level.

    Parameters
    ----------
    counter : SupportCounter or alike
        The counting step (see the module docstring).
    judge : LevelJudge
    n_items : int
        Columns of the data; level 1's candidates are all of them.
    max_length : int, optional
        Longest itemsets to mine.
    max_itemsets : int
        Refuse a level that would bring the reported itemsets plus its candidates past this
        (:func:`~.guards.check_itemsets`; a warning past a tenth of it).
    max_candidates : int or None
        Refuse a level whose candidates, bounded before they are built, pass this or half the
        driver's memory (:func:`~.guards.check_candidates`).
    on_level : callable, optional
        Called with each level's statistics.
    deep : callable, optional
        ``deep(driver, pairs)`` after level 2 with the grown pairs (column ids): True when it has
        mined the levels >= 3 itself (recording them with :meth:`record`), False to go on level-wise.

    Attributes
    ----------
    levels : dict
        ``k -> (ids int32, values)`` of the reported itemsets.
    stats : list of dict
        Per level: ``length``, ``candidates``, ``frequent`` (reported), ``seconds``,
        ``counted_with`` (a level counted in an earlier level's pass), the counter's
        :meth:`plan_fields`, and for levels >= 3 :attr:`deep_fields`.
    deep_fields : dict
        Added to the statistics of the levels >= 3 (Apriori's strategy and why).
    """

    counter: Any
    judge: LevelJudge
    n_items: int
    max_length: int | None = None
    max_itemsets: int = 50_000_000
    max_candidates: int | None = None
    on_level: Callable[[dict[str, Any]], None] | None = None
    deep: Callable[[LevelwiseDriver, np.ndarray], bool] | None = None
    levels: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    stats: list[dict[str, Any]] = field(default_factory=list)
    deep_fields: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------ bookkeeping
    def n_reported(self) -> int:
        """Itemsets reported so far."""
        return sum(v.size for _, v in self.levels.values())

    def record(
        self, k: int, n_candidates: int, ids: np.ndarray, values: np.ndarray, t0: float, counted_with: int | None = None
    ) -> None:
        """Keep level ``k``'s reported itemsets and its statistics (``t0``: its start)."""
        self.levels[k] = (ids.astype(np.int32, copy=False), values)
        st = {"length": k, "candidates": int(n_candidates), "frequent": int(values.size), "seconds": time.perf_counter() - t0}
        if counted_with is not None:  # no pass of its own: counted by the pass of that level (ahead.py)
            st["counted_with"] = counted_with
        st.update(self.counter.plan_fields())  # the memory plans of the rows and bitsets, and why
        if k >= 3:
            st.update(self.deep_fields)
        self.stats.append(st)
        if self.on_level is not None:
            self.on_level(st)

    def guard(self, n_next: int, k: int, *, stacklevel: int = 2) -> None:
        """Refuse level ``k`` of ``n_next`` candidates past ``max_itemsets`` (with what is kept)."""
        total = self.n_reported() + n_next
        check_itemsets(
            total,
            self.max_itemsets,
            f"level {k} would bring the result to {total:,} itemsets and candidates",
            n_next,
            f"level {k} has {n_next:,} candidates",
            stacklevel=stacklevel + 1,
        )

    def guard_result(self, total: int, *, stacklevel: int = 2) -> None:
        """Refuse a result of ``total`` itemsets past ``max_itemsets``."""
        check_itemsets(
            total,
            self.max_itemsets,
            f"the result has {total:,} itemsets",
            total,
            f"the result has {total:,} itemsets",
            stacklevel=stacklevel + 1,
        )

    def _decide(
        self, k: int, n_candidates: int, counts: np.ndarray, ids: CandidateIds, t0: float, counted_with: int | None = None
    ) -> np.ndarray:
        verdict = self.judge.judge(k, counts, ids)
        self.record(k, n_candidates, verdict.ids, verdict.values, t0, counted_with)
        return verdict.grow

    def _deeper(self, k: int) -> bool:
        return self.max_length is None or self.max_length >= k

    # ------------------------------------------------------------------ the levels
    def run(self, *, stacklevel: int = 2) -> LevelwiseDriver:
        """Mine every level; returns ``self`` (its :attr:`levels` and :attr:`stats`).

        ``stacklevel``: of the :class:`~.guards.ItemsetExplosionWarning`, as seen from the
        caller of ``run`` (2: its caller's caller)."""
        counter, judge = self.counter, self.judge
        try:
            # ---- level 1: every item
            t0 = time.perf_counter()
            all_items = np.arange(self.n_items, dtype=np.int32)
            grow = self._decide(
                1,
                self.n_items,
                counter.item_counts(),
                CandidateIds(lambda i: (all_items if i is None else all_items[i])[:, None]),
                t0,
            )
            f1 = all_items[grow]
            if not self._deeper(2) or f1.size < 2:
                return self

            # ---- level 2: every pair of grown items
            t0 = time.perf_counter()
            n_pairs = f1.size * (f1.size - 1) // 2
            check_candidates(n_pairs, 2, self.max_candidates, extra_per_candidate=judge.extra_bytes(2))  # before counting them
            self.guard(n_pairs, 2, stacklevel=stacklevel + 1)

            def pair_ids(index: np.ndarray | None) -> np.ndarray:
                # only the pairs asked for: np.triu_indices of all of them would be 36 MB on retail
                ia, ib = np.triu_indices(f1.size, 1) if index is None else pairs_at(index, f1.size)
                return np.stack([f1[ia], f1[ib]], axis=1)

            grow = self._decide(2, n_pairs, counter.pair_counts(f1), CandidateIds(pair_ids), t0)
            pairs = pair_ids(grow)
            if not self._deeper(3) or pairs.shape[0] < 3:
                return self
            if self.deep is not None and self.deep(self, pairs):
                return self

            # ---- levels >= 3 on per-block bitsets of the items of grown pairs
            counter.use_bitsets(np.unique(pairs))
            items = counter.bit_items  # may be a superset (bitsets kept from level 2)
            frequent = np.searchsorted(items, pairs).astype(np.int32)  # positions into ``items``
            ahead = CountAhead(counter, self.max_length)
            k = 3
            while self._deeper(k):
                t0 = time.perf_counter()
                check_candidates(
                    join_count(frequent), k, self.max_candidates, extra_per_candidate=judge.extra_bytes(k), upper_bound=True
                )  # before building them
                cands, left = apriori_gen(frequent)
                if cands.shape[0] == 0:
                    break
                self.guard(cands.shape[0], k, stacklevel=stacklevel + 1)
                counts, counted_with = ahead.counts(frequent, cands, left, k)
                ids = CandidateIds(_ids_of(items, cands))
                frequent = cands[self._decide(k, cands.shape[0], counts, ids, t0, counted_with)]
                if frequent.shape[0] < k + 1:
                    break
                k += 1
            return self
        finally:
            counter.release()
