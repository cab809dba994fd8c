"""The levels >= 3 of exact frequent-itemset mining in one or two passes (the partition strategy).

Savasere, Omiecinski & Navathe's two-pass *Partition* algorithm (VLDB 1995) on the blocks of a
TransactionArray, after the exact levels 1 and 2:

1. **Local pass.** Every block is mined alone, depth-first on its bitsets
   (:func:`~ppdm_dask.mining._eclat_kernels.mine_block`), at its scaled threshold
   ``t_p = ceil(min_count * n_p / N)`` and joining only globally frequent pairs. An itemset whose
   count is below ``t_p`` in every block has a total below ``min_count`` (each count is an
   integer ``< min_count * n_p / N``), so the union of the local results holds every frequent
   itemset of length >= 3. A block also drops an itemset whose count there plus the most the
   other blocks can add (for any of its pairs, the pair's global count less its count here)
   stays below ``min_count``: such an itemset is not frequent, and the test cuts whole subtrees
   of itemsets concentrated in one block.
2. **Count pass.** The driver merges the local results as they arrive: per itemset the sum of
   the local counts and the number of blocks that found it. An itemset found by every block has
   its exact total already; the others (itemsets near the threshold, usually few) are counted
   exactly in the blocks that did not find them, which still hold their local results. No
   second pass runs when nothing is missing, nor with one block (its threshold is ``min_count``).

The result is exact, hence independent of the partitioning. What the driver holds: the union
with its sums (the size of the result plus the near-threshold itemsets), and one block's local
result at a time. Each worker holds its block's local result until the count pass. A local
search that exceeds its bound (a low scaled threshold on a small or skewed block can explode)
stops, and mining continues level-wise (:func:`~ppdm_dask.mining.apriori.apriori`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import dask
import numpy as np

from ..graph import tree_reduce
from . import _eclat_kernels as E

__all__ = ["PartitionOutcome", "local_thresholds", "mine_levels", "LOCAL_MAX_ITEMSETS"]

#: Bound on the pair matrices of a local search (:func:`pair_matrix_bytes`): the strategy is
#: not chosen for more items than fit.
MAX_PAIR_MATRIX_BYTES = 256 * 2**20
#: Bound on one block's local result (about 60 bytes per itemset of length 12 in the task, the
#: driver and the transfer); beyond it the strategy gives way to the level-wise one.
LOCAL_MAX_ITEMSETS = 4_000_000
#: Threads of the search of a single block (its roots' subtrees are independent).
SEARCH_THREADS = 4


@dataclass
class PartitionOutcome:
    """What :func:`mine_levels` found.

    Attributes
    ----------
    levels : dict
        ``k -> (rows, counts)``, ``rows`` an ``(n_k, k)`` array of positions into the counter's
        ``bit_items`` in lexicographic order, exact counts >= the threshold; lengths >= 3.
    counted : dict
        ``k -> number of itemsets of length k whose total was established (the union)``.
    passes : int
        Passes over the blocks (1 or 2).
    missing : int
        Itemsets counted in the second pass (found by some blocks only).
    fallback : str or None
        Why the strategy gave way to the level-wise one (``levels`` is then empty).
    """

    levels: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    counted: dict[int, int] = field(default_factory=dict)
    passes: int = 0
    missing: int = 0
    fallback: str | None = None


def local_thresholds(min_count: int, partition_rows: Any) -> np.ndarray:
    """``ceil(min_count * n_p / N)`` per block, in integers (0 for an empty block)."""
    rows = np.asarray(partition_rows, dtype=np.int64)
    n = int(rows.sum())
    return (int(min_count) * rows + n - 1) // n


def _unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows in lexicographic order and the inverse index."""
    order = np.lexsort(rows.T[::-1])
    srt = rows[order]
    new = np.ones(srt.shape[0], dtype=bool)
    if srt.shape[0] > 1:
        new[1:] = np.any(srt[1:] != srt[:-1], axis=1)
    group = np.cumsum(new) - 1
    inverse = np.empty(rows.shape[0], np.int64)
    inverse[order] = group
    return srt[new], inverse


class _Union:
    """Per length: the distinct itemsets of the local results so far, the sum of their local
    counts and the number of blocks that found each."""

    def __init__(self) -> None:
        self.by_k: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def add(self, result: E.LocalResult) -> None:
        for k, (rows, counts) in E.split_by_length(result).items():
            if k not in self.by_k:
                self.by_k[k] = (rows, counts.astype(np.int64), np.ones(rows.shape[0], np.int64))
                continue
            u_rows, u_sum, u_hits = self.by_k[k]
            uniq, inv = _unique_rows(np.concatenate([u_rows, rows]))
            n = uniq.shape[0]
            self.by_k[k] = (
                uniq,
                np.bincount(inv, np.concatenate([u_sum, counts]), minlength=n).astype(np.int64),
                np.bincount(inv, np.concatenate([u_hits, np.ones(rows.shape[0], np.int64)]), minlength=n).astype(np.int64),
            )


def pair_matrix_bytes(f: int) -> int:
    """Bytes of the pair matrices of a local search over ``f`` items (the global totals shipped to
    the workers, and each task's own): :data:`MAX_PAIR_MATRIX_BYTES` bounds them."""
    return 2 * 4 * f * f


def mine_levels(
    counter: Any,
    pairs: np.ndarray,
    pair_counts: np.ndarray,
    min_count: int,
    *,
    max_length: int | None = None,
    max_out: int = LOCAL_MAX_ITEMSETS,
) -> PartitionOutcome:
    """The frequent itemsets of length >= 3, exactly, in one or two passes over the blocks.

    Driver step. Holds the union of the local results with one count and one hit number per
    itemset, and one block's local result at a time.

    Parameters
    ----------
    counter : SupportCounter
        With bitsets in use (:meth:`~ppdm_dask.mining.counting.SupportCounter.use_bitsets`).
    pairs : (m, 2) int
        The frequent 2-itemsets, as positions into ``counter.bit_items``.
    pair_counts : (m,) int
        Their global counts (they bound what other blocks can add to an itemset's count).
    min_count : int
        The global threshold.
    max_length : int, optional
        Longest itemsets.
    max_out : int
        Bound on one block's local result; past it the outcome says why and holds no levels.
    """
    from ..progress import compute, compute_each, persist, ship

    ckw = counter._ckw
    thresholds = local_thresholds(min_count, counter.unit_rows)  # units: blocks searched together
    blocks = [int(b) for b in np.flatnonzero(np.asarray(counter.unit_rows) > 0)]
    out = PartitionOutcome()
    if not blocks or pairs.shape[0] < 3:
        return out
    # the frequent pairs and their counts; each task expands them to its f x f matrix (shipping
    # the matrix would carry and hash f^2 counts: 27 MB on retail)
    (totals,) = map(_as_arg, ship([(np.asarray(pairs), np.asarray(pair_counts))], ckw["client"]))
    # one block is one task: its search uses the cores itself (several blocks use them as tasks)
    threads = min(SEARCH_THREADS, os.cpu_count() or 1) if len(blocks) == 1 else 1
    tasks = counter.map_bitsets(
        E.mine_block,
        totals,
        blocks=blocks,
        per_block=[(int(thresholds[b]), int(min_count), max_length, max_out, threads) for b in blocks],
    )
    out.passes = 1
    if len(blocks) == 1:
        (result,) = compute(tasks[0], **ckw)
        if not result[3]:
            out.fallback = _overflow_reason(max_out, thresholds[blocks[0]])
            return out
        for k, (rows, counts) in E.split_by_length(result).items():
            out.levels[k] = (rows, counts)
            out.counted[k] = rows.shape[0]
        return out

    local = list(persist(*tasks, **ckw))  # kept on the workers for the count pass
    union = _Union()
    overflow: list[int] = []

    def consume(j: int, result: E.LocalResult) -> None:
        if not result[3]:
            overflow.append(blocks[j])
        if not overflow:
            union.add(result)

    compute_each(local, consume, client=ckw["client"])
    if overflow:
        out.fallback = _overflow_reason(max_out, int(thresholds[overflow[0]]))
        return out
    n_blocks = len(blocks)
    query = [(k, rows[hits < n_blocks]) for k, (rows, _, hits) in sorted(union.by_k.items())]
    query = [(k, q) for k, q in query if q.shape[0]]
    extra: dict[int, np.ndarray] = {}
    if query:
        out.passes = 2
        out.missing = int(sum(q.shape[0] for _, q in query))
        (payload,) = map(_as_arg, ship([query], ckw["client"]))
        if counter.bitsets_kept():
            parts = counter.map_bitsets(E.count_missing, blocks=blocks, per_block=[(lr, payload) for lr in local])
        else:  # each task builds the bitsets of the queried items only
            parts = counter.map_rows(
                _count_missing_in_rows, _as_arg(counter.bit_items), blocks=blocks, per_block=[(lr, payload) for lr in local]
            )
        (sums,) = compute(tree_reduce(parts, _sum_arrays, split_every=counter.split_every), **ckw)
        extra = dict(zip([k for k, _ in query], np.split(sums, np.cumsum([q.shape[0] for _, q in query])[:-1])))
    del local
    for k, (rows, total, hits) in sorted(union.by_k.items()):
        total = total.copy()
        if k in extra:
            total[hits < n_blocks] += extra[k]
        keep = total >= min_count
        out.counted[k] = rows.shape[0]
        if keep.any():
            out.levels[k] = (rows[keep], total[keep])
    return out


def _count_missing_in_rows(
    block: Any, items: np.ndarray, local: E.LocalResult, query: list[tuple[int, np.ndarray]]
) -> np.ndarray:
    """:func:`~._eclat_kernels.count_missing` on a block's rows: bitsets of the queried items only."""
    from .counting import build_bitsets

    used = np.unique(np.concatenate([q.ravel() for _, q in query]))
    return E.count_missing(build_bitsets(block, items[used]), local, query, rows_of=used)


def _as_arg(payload: Any) -> Any:
    """A driver payload as one task argument: a future as it is (shipped to the workers once), a
    local object embedded in the graph once (not once per task)."""
    return payload if hasattr(payload, "key") and hasattr(payload, "client") else dask.delayed(payload, pure=True)


def _sum_arrays(parts: list[np.ndarray]) -> np.ndarray:
    out = parts[0].copy()
    for p in parts[1:]:
        out += p
    return out


def _overflow_reason(max_out: int, threshold: int) -> str:
    return (
        f"a block's local search passed {max_out:,} itemsets (scaled threshold {threshold:,}): "
        "the levels >= 3 were mined level-wise instead"
    )
