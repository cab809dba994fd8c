"""Which exact strategy mines the levels >= 3: level-wise passes or the partition strategy.

Both give the same, exact result; they differ in passes and work (measured, docs/mining.md):

- **level-wise** (:func:`~ppdm_dask.mining.apriori.apriori`'s loop): one pass over the blocks
  per level (several small last levels share one, :mod:`~ppdm_dask.mining.ahead`), and every
  candidate of length k ANDs its k - 1 prefix items again. A pass has a fixed cost (graph,
  scheduling, gathering, the driver's candidate generation) of milliseconds on the threaded
  scheduler and tens of milliseconds on a cluster; deep searches (dense data: 13 levels on
  chess, 15 on mushroom) are made of such passes, and of prefix ANDs.
- **partition** (:mod:`~ppdm_dask.mining.partition`): one local depth-first pass (one AND per
  candidate, the frequent pairs counted again locally), and a second, usually small, pass when
  there are several blocks. Its risk is a scaled threshold so low that a block's local search
  explodes; it is refused below :data:`MIN_LOCAL_COUNT` and bounded otherwise (falling back to
  level-wise).

The cost of each is ``passes x PASS_COST_WORDS + word operations``, estimated from what levels 1
and 2 left: the candidates of level 3 and, while they are few, those grown ahead from them (as
the level-wise strategy would count them in one pass), which tells whether level-wise would end
in one pass. The deeper levels are unknown to both estimates alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _eclat_kernels as E
from .ahead import COMBINE_MAX_CANDIDATES, count_ahead_chain
from .candidates import apriori_gen, join_count
from .partition import MAX_PAIR_MATRIX_BYTES, local_thresholds, pair_matrix_bytes

__all__ = ["STRATEGIES", "Choice", "choose_strategy", "PASS_COST_WORDS", "MIN_LOCAL_COUNT"]

STRATEGIES = ("auto", "levelwise", "partition")
#: The fixed cost of one pass over the blocks in AND + popcount word operations (~4 ms of
#: graph, scheduling and candidate generation on the threaded scheduler, at ~5 words per ns).
PASS_COST_WORDS = 20e6
#: Word passes per candidate of length k in level-wise counting: the k - 1 prefix rows gathered
#: and ANDed, the last row, the popcount (``count_extensions``, numpy) ~ k + 1; the partition
#: strategy's depth-first search reads two rows per candidate (:data:`PARTITION_WORDS`).
LEVELWISE_EXTRA_WORDS = 1.0
PARTITION_WORDS = 1.0
#: With several blocks, the partition strategy is not chosen when some block's scaled threshold
#: is below this. A block's counts vary between blocks by about their square root even on a
#: random split, and real data is not split at random (sessions by time, bursts): at low
#: thresholds the local searches keep many itemsets that the other blocks do not confirm
#: (measured: BMS-WebView-1 in 4 blocks at a scaled threshold of 15 counted 215,107 itemsets
#: for 3,991 frequent ones, 3-4x slower than level-wise; at threshold 1 a search enumerates
#: every subset of the block's rows).
MIN_LOCAL_COUNT = 100


@dataclass
class Choice:
    """The strategy for the levels >= 3 and why (``estimates``: the two costs, in words)."""

    strategy: str
    reason: str
    estimates: dict[str, Any] = field(default_factory=dict)


def choose_strategy(
    requested: str, frequent: np.ndarray, partition_rows: Any, min_count: int, max_length: int | None, n_items: int
) -> Choice:
    """Choose ``"levelwise"`` or ``"partition"`` for the levels >= 3.

    Driver step; holds the level-3 candidates when they are at most
    :data:`~ppdm_dask.mining.ahead.COMBINE_MAX_CANDIDATES` (and those grown ahead from them).

    Parameters
    ----------
    requested : {"auto", "levelwise", "partition"}
    frequent : (m, 2) int
        The frequent pairs (sorted rows, lexicographic order).
    partition_rows : sequence of int
        Rows per block.
    min_count : int
    max_length : int, optional
    n_items : int
        Items of the bitsets (the pairs' positions index them).
    """
    if requested not in STRATEGIES:
        from ..errors import InvalidParameter

        raise InvalidParameter(f"strategy must be one of {STRATEGIES}, got {requested!r}")
    if requested != "auto":
        if requested == "partition" and not E.available():
            return Choice("levelwise", "partition asked for, but numba (its compiled kernels) is not installed")
        return Choice(requested, f"{requested} (asked for)")
    if not E.available():
        return Choice("levelwise", "numba is not installed (the partition strategy's kernels are compiled)")
    if pair_matrix_bytes(n_items) > MAX_PAIR_MATRIX_BYTES:
        return Choice(
            "levelwise",
            f"the local searches' pair matrices of {n_items:,} items would take "
            f"{pair_matrix_bytes(n_items) / 2**20:,.0f} MiB (> {MAX_PAIR_MATRIX_BYTES / 2**20:,.0f})",
        )
    rows = np.asarray(partition_rows, dtype=np.int64)
    nonempty = rows[rows > 0]
    thresholds = local_thresholds(min_count, rows)[rows > 0]
    t_min = int(thresholds.min(initial=min_count))
    if nonempty.size > 1 and t_min < MIN_LOCAL_COUNT:
        return Choice(
            "levelwise", f"a block's scaled threshold would be {t_min} (< {MIN_LOCAL_COUNT}): its local search could explode"
        )
    words = float(rows.sum()) / 64.0  # words of one item's bitsets over all blocks
    c3 = join_count(frequent)
    sizes: list[tuple[int, int]] = []  # (length, candidates) known in advance
    complete = False
    if c3 <= COMBINE_MAX_CANDIDATES:
        cands, left = apriori_gen(frequent)
        if cands.shape[0] == 0:
            return Choice("levelwise", "no candidates of length 3")
        chain = count_ahead_chain(cands, left, 3, max_length, COMBINE_MAX_CANDIDATES)
        sizes = [(3 + j, c.shape[0]) for j, (c, _) in enumerate(chain)]
        last_k = 2 + len(chain)
        complete = (max_length is not None and last_k >= max_length) or apriori_gen(chain[-1][0])[0].shape[0] == 0
    else:
        sizes = [(3, c3)]
    lw_passes = 1 if complete else 2  # at least two when the search goes on past the chain
    pt_passes = 1 if nonempty.size <= 1 else 2
    lw_work = sum(n * (k + LEVELWISE_EXTRA_WORDS) for k, n in sizes) * words
    pt_work = (frequent.shape[0] + sum(n for _, n in sizes)) * PARTITION_WORDS * words
    lw = lw_passes * PASS_COST_WORDS + lw_work
    pt = pt_passes * PASS_COST_WORDS + pt_work
    est = {"levelwise_words": lw, "partition_words": pt, "levelwise_passes": lw_passes, "partition_passes": pt_passes}
    known = ", ".join(f"{n:,}" for _, n in sizes)
    what = (
        f"candidates of lengths 3..{sizes[-1][0]}: {known}{' (the end)' if complete else ' (and more)'}; "
        f"estimated cost level-wise {lw / 1e6:,.0f} M words in {'>= ' if not complete else ''}{lw_passes} pass(es), "
        f"partition {pt / 1e6:,.0f} M words in <= {pt_passes}"
    )
    return Choice("partition" if pt < lw else "levelwise", what, est)
