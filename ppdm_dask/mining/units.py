"""Counting units: small blocks searched together, so that the partitioning does not decide the speed.

A TransactionArray arrives in as many blocks as its dataset has files, and small files give small
blocks. Counting per block then costs what the data as a whole does not need:

- **The partition strategy is refused.** A block's scaled threshold ``ceil(min_count * n_p / N)``
  falls below :data:`~ppdm_dask.mining.strategy.MIN_LOCAL_COUNT` and its local search could
  explode, so the levels >= 3 run level-wise: a pass per level, 10-40x the one-pass search at low
  support (measured on retail, BMS-WebView-1 and T10I4D100K in 4 and 16 blocks).
- **Fixed costs grow with the blocks.** Every block allocates and returns a counter per candidate
  pair at level 2, and every tree reduction sums them. Every deep candidate also pays a per-block
  overhead that a block of a few words of bitsets cannot amortize.

:func:`plan_units` groups consecutive blocks into *units* once level 1 has measured them (rows and
entries per block). A unit is the block of every later pass: its rows are concatenated in one task
(:func:`concat_rows`), on one worker. A unit grows until it has the rows that give it a scaled
threshold of at least ``MIN_LOCAL_COUNT`` (all the rows, when the threshold itself is lower) and at
least :data:`MIN_UNIT_ROWS`. A unit never exceeds the byte bound (:data:`UNIT_MAX_BYTES`, or a share
of the smallest worker's memory limit), so large data keeps one unit per block.

Moving a block to the worker of its unit is the price. On a cluster its cost is one transfer of its
rows, at most a unit's bytes. That is less than the two or more level-wise passes the search saves
(tens of milliseconds each on a cluster). On the local schedulers the concatenation is one copy.
:class:`UnitPlan` carries the estimate, and the level statistics say what was chosen and why.

Counts are exact integers summed over units, so the result does not depend on the grouping. This
module is pure numpy (no dask): the plan is a driver step and the concatenation a per-unit kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["UnitPlan", "plan_units", "concat_rows", "block_bytes", "MIN_UNIT_ROWS", "UNIT_MAX_BYTES"]

#: A unit has at least this many rows when the blocks allow it (512 bitset words). Below it, the
#: per-candidate and per-task overheads of a block outweigh its words: chess in 16 blocks of 200
#: rows spends its search in overheads, 16 times over.
MIN_UNIT_ROWS = 32_768
#: A unit is at most this large (the default block size of ``TransactionArray.repartition``), and
#: at most :data:`UNIT_MEMORY_SHARE` of the smallest worker's memory limit.
UNIT_MAX_BYTES = 128 * 2**20
UNIT_MEMORY_SHARE = 0.1
#: Cost of moving one byte to another worker, in AND + popcount word operations (~1 GB/s of
#: serialization and network against ~5 words per ns): the transfer estimate of the plan.
TRANSFER_WORDS_PER_BYTE = 5.0


@dataclass
class UnitPlan:
    """Which blocks form each unit, and why.

    Attributes
    ----------
    units : list of list of int
        Consecutive block indices per unit; every block is in exactly one unit.
    rows : tuple of int
        Rows per unit.
    moved_bytes : int
        Bytes of the blocks that join another block's unit (the transfer, on a cluster).
    reason : str
        What was chosen and why (for the level statistics).
    """

    units: list[list[int]]
    rows: tuple[int, ...]
    moved_bytes: int = 0
    reason: str = ""
    estimates: dict[str, Any] = field(default_factory=dict)

    @property
    def coalesced(self) -> bool:
        """Some unit holds more than one block."""
        return any(len(u) > 1 for u in self.units)


def block_bytes(rows: Any, nnz: Any) -> np.ndarray:
    """Bytes of CSR blocks: int32 column ids and values per entry, an int32 offset per row."""
    return 8 * np.asarray(nnz, dtype=np.int64) + 4 * (np.asarray(rows, dtype=np.int64) + 1)


def plan_units(
    partition_rows: Any, partition_nnz: Any, min_count: int, *, min_local_count: int, max_bytes: float = UNIT_MAX_BYTES
) -> UnitPlan:
    """Group consecutive blocks into counting units (driver step).

    Parameters
    ----------
    partition_rows, partition_nnz : sequence of int
        Rows and entries per block.
    min_count : int
        The global threshold.
    min_local_count : int
        The scaled threshold a unit should reach (the partition strategy's bound).
    max_bytes : float
        Bound on a unit's bytes.
    """
    rows = np.asarray(partition_rows, dtype=np.int64)
    sizes = block_bytes(rows, partition_nnz)
    n = int(rows.sum())
    n_blocks = rows.size
    one_each = UnitPlan([[b] for b in range(n_blocks)], tuple(int(r) for r in rows))
    if n_blocks <= 1 or n == 0:
        one_each.reason = "one block"
        return one_each
    # the rows for a scaled threshold of min_local_count (all of them when min_count is lower)
    want_threshold = -(-n * int(min_local_count) // max(1, int(min_count)))
    want = min(n, max(MIN_UNIT_ROWS, want_threshold))
    units: list[list[int]] = []
    cur: list[int] = []
    cur_rows = cur_bytes = 0
    for b in range(n_blocks):
        if cur and (cur_rows >= want or cur_bytes + sizes[b] > max_bytes):
            units.append(cur)
            cur, cur_rows, cur_bytes = [], 0, 0
        cur.append(b)
        cur_rows += int(rows[b])
        cur_bytes += int(sizes[b])
    # a short remainder joins the unit before it when it fits
    if units and cur_rows < want and sum(int(sizes[b]) for b in units[-1]) + cur_bytes <= max_bytes:
        units[-1].extend(cur)
    else:
        units.append(cur)
    unit_rows = tuple(int(rows[u].sum()) for u in units)
    moved = int(sum(int(sizes[u].sum() - sizes[u].max()) for u in units if len(u) > 1))
    mib = 2**20
    if len(units) == n_blocks:
        one_each.reason = (
            f"{n_blocks} blocks, one unit each (every block has >= {min(want, int(rows.max())):,} rows "
            f"or a unit would pass {max_bytes / mib:,.0f} MiB)"
        )
        return one_each
    thresholds = [-(-int(min_count) * r // n) for r in unit_rows]
    reason = (
        f"{n_blocks} blocks searched as {len(units)} unit(s) of {min(unit_rows):,}-{max(unit_rows):,} rows "
        f"(a unit wants {want:,} rows{' (all)' if want == n else ''}: scaled threshold >= {min(int(min_local_count), int(min_count))} and >= "
        f"{MIN_UNIT_ROWS:,} rows; <= {max_bytes / mib:,.0f} MiB each); scaled thresholds "
        f"{min(thresholds):,}-{max(thresholds):,}; {moved / mib:,.1f} MiB joined to other blocks "
        f"(transfer est. {moved * TRANSFER_WORDS_PER_BYTE / 1e6:,.0f} M words on a cluster)"
    )
    est = {"moved_bytes": moved, "transfer_words": moved * TRANSFER_WORDS_PER_BYTE, "want_rows": want}
    return UnitPlan(units, unit_rows, moved, reason, est)


def concat_rows(*blocks: Any) -> sp.csr_array:
    """The rows of CSR ``blocks`` one after the other, as one CSR block (index dtypes kept)."""
    if len(blocks) == 1:
        return blocks[0]
    first = blocks[0]
    offsets = np.cumsum([0] + [int(b.nnz) for b in blocks])
    starts = [int(b.indptr[0]) for b in blocks]
    indptr = np.concatenate([[0]] + [b.indptr[1:] - s + off for b, s, off in zip(blocks, starts, offsets[:-1])])
    indices = np.concatenate([b.indices[s : s + b.nnz] for b, s in zip(blocks, starts)])
    data = np.concatenate([b.data[s : s + b.nnz] for b, s in zip(blocks, starts)])
    shape = (sum(int(b.shape[0]) for b in blocks), int(first.shape[1]))
    return sp.csr_array((data, indices, indptr.astype(first.indptr.dtype, copy=False)), shape=shape)
