"""Counting the small last levels of a level-wise miner in one pass (pure numpy driver logic).

Every level of Apriori costs one pass over the blocks, and the last levels have few candidates:
the pass, not the counting, is what they cost (with bitsets decoded from packed rows or read
from the source, a pass is a full decode). Candidates of level k + 1 grown from *all* of level
k's candidates, as if every one were frequent, are a superset of the real ones (a real
candidate's k-subsets are frequent, hence among level k's candidates), and so on for k + 2, ...
So while the candidates of the current level and those grown from them number at most
:data:`COMBINE_MAX_CANDIDATES`, they are all counted in the current level's pass, and the later
levels look their real candidates' counts up. The result is the same: counts are exact and
every level's candidates are still the ones grown from its frequent sets.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .candidates import RowIndex, apriori_gen

__all__ = ["CountAhead", "COMBINE_MAX_CANDIDATES", "count_ahead_chain"]

#: Bound on the candidates counted in one pass, the current level's and those grown ahead.
COMBINE_MAX_CANDIDATES = 4096


def _query(joined: np.ndarray, cands: np.ndarray, left: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The counter's query for candidates ``cands`` joined from the rows of ``joined`` (candidate
    c = ``joined[left[c]]`` + its last item): distinct prefixes, each candidate's prefix index,
    its last item."""
    uniq_left, parent_of = np.unique(left, return_inverse=True)
    return joined[uniq_left], parent_of.ravel(), cands[:, -1].copy()


def count_ahead_chain(
    cands: np.ndarray, left: np.ndarray, k: int, max_length: int | None, bound: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The level's candidates, followed by those of the next levels grown from them (a superset
    of the next levels' real candidates: every real frequent set has all its subsets among
    these candidates), while the total stays within ``bound``."""
    chain = [(cands, left)]
    total = cands.shape[0]
    while total <= bound and (max_length is None or k + len(chain) <= max_length):
        nxt, nleft = apriori_gen(chain[-1][0])
        if nxt.shape[0] == 0 or total + nxt.shape[0] > bound:
            break
        chain.append((nxt, nleft))
        total += nxt.shape[0]
    return chain


class CountAhead:
    """Counts of each level's candidates, from its own pass or from an earlier one.

    Parameters
    ----------
    counter : SupportCounter
        With bitsets in use; candidates are positions into its ``bit_items``.
    max_length : int, optional
        No level beyond it is counted ahead.
    """

    def __init__(self, counter: Any, max_length: int | None) -> None:
        self.counter, self.max_length = counter, max_length
        self._ahead: dict[int, tuple[RowIndex, np.ndarray, int]] = {}

    def counts(self, frequent: np.ndarray, cands: np.ndarray, left: np.ndarray, k: int) -> tuple[np.ndarray, int | None]:
        """Counts of the level-``k`` candidates ``cands`` = ``frequent[left]`` + a last item, and
        the level whose pass counted them (``None``: this one)."""
        if k in self._ahead:
            index, counts, counted_with = self._ahead.pop(k)
            where, found = index.find(cands)
            if not found.all():  # cannot happen (superset argument above); never return a wrong count
                raise AssertionError(f"level {k}: candidates counted ahead do not cover the level's candidates")
            return counts[where], counted_with
        self._ahead.clear()
        chain = count_ahead_chain(cands, left, k, self.max_length, COMBINE_MAX_CANDIDATES)
        joined = [frequent] + [c for c, _ in chain[:-1]]
        results = self.counter.extension_counts_many([_query(j, c, lf) for j, (c, lf) in zip(joined, chain)])
        for j, ((c, _), counts) in enumerate(zip(chain[1:], results[1:]), start=1):
            self._ahead[k + j] = (RowIndex(c), counts, k)
        return results[0], None
