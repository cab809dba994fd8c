"""Exact, distributed support counting: the engine of Apriori and, later, EMASK-Apriori.

A :class:`SupportCounter` wraps a TransactionArray and answers count queries with tree
reductions over the partitions: all items (``bincount``), all pairs of chosen items (pair
enumeration per block), and arbitrary itemsets on per-block packed bitsets. Only queries and
count vectors travel.

Memory plan of the bitsets (``memory_plan``): ``"persist"`` builds them once and keeps them on
the workers for every later query; ``"stream"`` keeps nothing and rebuilds each block's
bitsets inside every counting task from the block (re-read from its source when the data are
not persisted), so a worker holds one block's bitsets per running task. ``"auto"`` persists
when the bitsets fit in :data:`BITSET_MEMORY_SHARE` of the workers' memory (the smallest
worker's limit times the number of workers, less the largest block's share for imbalance;
without a cluster :data:`MAX_BITSET_BYTES`), and streams otherwise — never leaving it to the
Dask worker to spill them. :attr:`SupportCounter.plan` says which plan ran and why.
"""

from __future__ import annotations

from typing import Any

import dask
import numpy as np

from ..graph import tree_reduce, tree_sum
from . import _kernels as K

__all__ = ["SupportCounter"]

#: Cost of one random counter increment in units of one streamed AND+popcount word (measured:
#: ~1.5 ns vs ~0.13 ns for the compiled kernels on an AVX-512 machine).
ROW_INCREMENT_COST = 12.0
#: Never persist more bitsets than this for level 2 (pair enumeration needs no extra memory),
#: and the budget of persisted bitsets without a cluster.
MAX_BITSET_BYTES = 4 * 2**30
#: Share of the workers' memory that persisted bitsets may take (Dask spills from 60 % by
#: default; the data blocks and every task's temporaries need the rest).
BITSET_MEMORY_SHARE = 0.25
MEMORY_PLANS = ("auto", "persist", "stream")


def bitset_bytes(partition_rows: Any, n_items: int) -> np.ndarray:
    """Bytes of the packed bitsets of ``n_items`` columns, per block (:func:`_kernels.build_bitsets`)."""
    rows = np.asarray(partition_rows, dtype=np.int64)
    return n_items * np.maximum(1, (rows + 63) // 64) * 8


def _sum_arrays(parts: list[np.ndarray]) -> np.ndarray:
    out = parts[0].copy()
    for p in parts[1:]:
        out += p
    return out


def _count_on_bits(bits: np.ndarray, query: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    parents, parent_of, last = query
    return K.count_extensions(bits, parents, parent_of, last)


class SupportCounter:
    """Support counts of items and itemsets of ``tx``, exact and partition-independent.

    Parameters
    ----------
    tx : TransactionArray
    client : distributed.Client, optional
        Run on this client (default: the active one, else the configured local scheduler).
    progress : bool
        Progress bars on stderr.
    split_every : int
        Fan-in of the tree reductions.
    memory_plan : {"auto", "persist", "stream"}
        Persist the bitsets or rebuild them in every counting task (see the module docstring).

    Attributes
    ----------
    plan : dict or None
        After bitsets were first used: ``plan`` (``"persist"`` or ``"stream"``), ``bytes`` (all
        blocks' bitsets), ``budget`` and ``reason``.
    """

    def __init__(self, tx: Any, *, client: Any = None, progress: bool = False, split_every: int = 8,
                 memory_plan: str = "auto") -> None:
        if memory_plan not in MEMORY_PLANS:
            from ..errors import InvalidParameter

            raise InvalidParameter(f"memory_plan must be one of {MEMORY_PLANS}, got {memory_plan!r}")
        self.tx = tx
        self._ckw = {"client": client, "progress": progress}
        self.split_every = split_every
        self.memory_plan = memory_plan
        self.plan: dict[str, Any] | None = None
        self.bit_items: np.ndarray | None = None
        self._bits: list[Any] = []
        self._item_counts: np.ndarray | None = None
        self._sum_sq_lengths = 0

    def _compute(self, lazy: Any) -> Any:
        from ..progress import compute

        (out,) = compute(lazy, **self._ckw)
        return out

    def item_counts(self) -> np.ndarray:
        """Support count of every column id (int64, length ``n_items``).

        The same pass records the sum of squared row lengths, which prices pair enumeration for
        :meth:`pair_counts`.
        """
        n = self.tx.n_items
        out = self._compute(tree_sum(self.tx.blocks, K.item_counts_and_work, (n + 1,), np.int64, split_every=self.split_every))
        self._item_counts, self._sum_sq_lengths = out[:-1], int(out[-1])
        return out[:-1].copy()

    def pair_method(self, items: np.ndarray) -> str:
        """``"bitsets"`` or ``"rows"``: the cheaper way to count all pairs of ``items``.

        Enumerating pairs inside rows costs about sum(len^2)/2 random increments (len = a row's
        number of counted items, estimated from the item supports); AND + popcount over bitsets
        costs pairs x rows/64 streamed words plus one pass to build them. The constants are
        measured ratios of the two compiled kernels (a random increment ~12 streamed words).
        """
        if self._item_counts is None or K._numba is None:
            return "rows"
        items = np.asarray(items)
        total = max(1, int(self._item_counts.sum()))
        share = float(self._item_counts[items].sum()) / total  # share of entries that are counted
        rows_cost = 0.5 * share**2 * self._sum_sq_lengths * ROW_INCREMENT_COST
        n_pairs = items.size * (items.size - 1) / 2
        bits_cost = n_pairs * (self.tx.n_transactions / 64.0) + total * share * ROW_INCREMENT_COST
        memory = items.size * self.tx.n_transactions / 8.0
        return "bitsets" if bits_cost < rows_cost and memory <= MAX_BITSET_BYTES else "rows"

    def pair_counts(self, items: np.ndarray, *, method: str = "auto") -> np.ndarray:
        """Counts of all pairs of the sorted column ids ``items``, in ``np.triu_indices`` order.

        ``method="auto"`` picks pair enumeration in rows or bitsets (see :meth:`pair_method`);
        with bitsets, they stay persisted for the next levels (:meth:`use_bitsets`).
        """
        items = np.asarray(items, dtype=np.int32)
        n_pairs = items.size * (items.size - 1) // 2
        if method == "auto":
            method = self.pair_method(items)
        if method == "bitsets":
            self.use_bitsets(items)
            positions = np.searchsorted(self.bit_items, items)
            parts = [dask.delayed(K.pair_counts_bits, pure=True)(b, positions) for b in self._bits]
            return self._compute(tree_reduce(parts, _sum_arrays, split_every=self.split_every))
        if method != "rows":
            raise ValueError(f"unknown method {method!r}")
        return self._compute(tree_sum(self.tx.blocks, K.pair_counts, (n_pairs,), np.int64, items, split_every=self.split_every))

    def use_bitsets(self, items: np.ndarray) -> None:
        """Have per-block bitsets of (at least) the sorted column ids ``items`` ready: persisted,
        or (plan ``"stream"``) built again inside every counting task.

        Bitsets already prepared for a superset are kept; address them by positions into
        :attr:`bit_items`, which may then hold more items than asked for.
        """
        from ..progress import persist

        items = np.asarray(items, dtype=np.int32)
        if self.bit_items is not None and np.all(np.isin(items, self.bit_items)):
            return
        self.release()
        self.plan = self._choose_plan(items.size)
        parts = [dask.delayed(K.build_bitsets, pure=True)(b, items) for b in self.tx.blocks.to_delayed().ravel()]
        self._bits = list(persist(*parts, **self._ckw)) if self.plan["plan"] == "persist" else parts
        self.bit_items = items

    def _choose_plan(self, n_items: int) -> dict[str, Any]:
        from ..cluster import memory_plan

        per_block = bitset_bytes(self.tx.partition_rows, n_items)
        total = float(per_block.sum())
        need = total + float(per_block.max(initial=0))  # room for an uneven spread of the blocks
        what = f"bitsets of {n_items:,} items"
        plan, reason, budget = memory_plan(need, BITSET_MEMORY_SHARE, self._ckw["client"], local=MAX_BITSET_BYTES, what=what)
        if self.memory_plan != "auto":
            plan, reason = self.memory_plan, f"{what}, {total / 2**20:,.1f} MiB: {self.memory_plan} (asked for)"
        return {"plan": plan, "bytes": int(total), "budget": int(budget), "reason": reason}

    def plan_fields(self) -> dict[str, Any]:
        """``memory_plan`` and ``memory`` (the reason) for a level's statistics, once bitsets are
        in use (empty before)."""
        return {} if self.plan is None else {"memory_plan": self.plan["plan"], "memory": self.plan["reason"]}

    def release(self) -> None:
        """Drop the persisted bitsets."""
        self._bits = []
        self.bit_items = None

    def extension_counts(self, parents: np.ndarray, parent_of: np.ndarray, last: np.ndarray) -> np.ndarray:
        """Counts of ``parents[parent_of[c]] + (last[c],)``; all entries are *positions* into
        :attr:`bit_items` (see :meth:`use_bitsets`), ``parent_of`` non-decreasing."""
        if self.bit_items is None:
            raise RuntimeError("call use_bitsets() first")
        payload = dask.delayed((np.asarray(parents), np.asarray(parent_of, np.int64), np.asarray(last)), pure=True)
        parts = [dask.delayed(_count_on_bits, pure=True)(b, payload) for b in self._bits]
        return self._compute(tree_reduce(parts, _sum_arrays, split_every=self.split_every))

    def itemset_counts(self, itemsets: np.ndarray) -> np.ndarray:
        """Counts of arbitrary itemsets given as an ``(m, k)`` array of column ids, k >= 2.

        Builds bitsets over the items involved when the current ones do not cover them.
        """
        itemsets = np.sort(np.asarray(itemsets, dtype=np.int64), axis=1)
        m, k = itemsets.shape
        if m == 0:
            return np.zeros(0, np.int64)
        if k < 2:
            return self.item_counts()[itemsets[:, 0]]
        needed = np.unique(itemsets)
        if self.bit_items is None or not np.all(np.isin(needed, self.bit_items)):
            self.use_bitsets(needed if self.bit_items is None else np.union1d(self.bit_items, needed))
        pos = np.searchsorted(self.bit_items, itemsets)
        order = np.lexsort(pos[:, ::-1].T)
        sorted_pos = pos[order]
        prefixes, parent_of = np.unique(sorted_pos[:, :-1], axis=0, return_inverse=True)
        counts_sorted = self.extension_counts(prefixes, parent_of.ravel(), sorted_pos[:, -1])
        out = np.empty(m, np.int64)
        out[order] = counts_sorted
        return out
