"""EMASK's counting step: level 2 by block search on distorted data, where it pays
(docs/emask.md#level-2-by-block-search).

Distortion adds ``(1 - q)`` of every absent item to every row: a distorted click-stream row over
3,340 pages holds ~100 items instead of ~4. Level 2 then costs a full pass over all those
entries, and the levels >= 3 need their bitsets, which costs another full pass (decoding packed
rows, or reading the source). :class:`BlockSearchCounter` wraps the exact
:class:`~ppdm_dask.mining.counting.SupportCounter` and, when the cost estimate says so, counts
level 2 by the block search instead: each block's bitsets of the level's items are built once and
kept, all pairs are counted by AND + popcount over them (compiled nogil kernels, threads over
item ranges when there are fewer blocks than cores, :mod:`._pair_kernels`), and the same bitsets
serve the levels >= 3 (their items are among level 2's). Counts are exact either way, so the
result does not depend on the engine nor on the partitioning.

Cost estimate (units: one streamed AND + popcount word, as in
:meth:`~ppdm_dask.mining.counting.SupportCounter.pair_method`):

- pair enumeration in rows: one pass over all ``T`` entries (:data:`ENTRY_COST` each) plus
  ``sum(L^2) / 2`` random increments (``L`` = a row's counted items; bounded below by
  ``n (mu^2 + mu)``, ``mu`` their mean: distortion noise is independent per cell), and the levels
  >= 3 then pay the bitsets' pass again;
- block search: ``f (f - 1) / 2`` pairs x ``n / 64`` words (the bitsets' pass is shared with
  the levels >= 3).

The block search runs when it is the cheaper (or the counter's own model prefers bitsets) and
the bitsets fit in :data:`~ppdm_dask.mining.counting.BITSET_MEMORY_SHARE` of the workers'
memory; otherwise level 2 is the counter's own. :attr:`BlockSearchCounter.choice` says which ran
and why (in every level's statistics, ``pair_search``).
"""

from __future__ import annotations

import os
from typing import Any

import dask
import numpy as np

from ..graph import tree_reduce
from ..mining.counting import BITSET_MEMORY_SHARE, MAX_BITSET_BYTES, ROW_INCREMENT_COST, SupportCounter, bitset_bytes
from . import _pair_kernels as P

__all__ = ["BlockSearchCounter", "ENTRY_COST", "ENGINES", "MAX_THREADS"]

#: Cost of reading one entry in a counting pass (bitsets built, or pairs enumerated), in streamed
#: AND + popcount words (measured: ~2 ns per entry against ~0.25 ns per word).
ENTRY_COST = 8.0
#: Threads of one block's kernels when there are fewer blocks than cores.
MAX_THREADS = 4
#: ``engine`` values of :class:`BlockSearchCounter`.
ENGINES = ("auto", "block", "rows")

Query = tuple[np.ndarray, np.ndarray, np.ndarray]


def _sum_arrays(parts: list[np.ndarray]) -> np.ndarray:
    out = parts[0].copy()
    for p in parts[1:]:
        out += p
    return out


def threads_per_block(n_blocks: int, client: Any = None) -> int:
    """Threads one block's kernels may use: the cores a task gets when the blocks are fewer."""
    from ..cluster import current_client

    client = client if client is not None else current_client()
    cores, workers = os.cpu_count() or 1, 1
    if client is not None:
        nthreads = [int(t) for t in client.nthreads().values()]
        if not nthreads:  # no workers yet: the tasks wait for them anyway
            return 1
        cores, workers = min(nthreads), len(nthreads)
    per_worker = -(-max(1, n_blocks) // max(1, workers))
    return int(max(1, min(MAX_THREADS, cores // per_worker)))


class BlockSearchCounter:
    """A :class:`~ppdm_dask.mining.counting.SupportCounter` whose level 2 may be a block search.

    Serves the level-wise driver (:class:`~ppdm_dask.mining.levelwise.LevelwiseDriver`): level 1
    and, when the block search does not run, everything else is the wrapped counter's.

    Parameters
    ----------
    counter : SupportCounter
    client : distributed.Client, optional
    progress : bool
    engine : {"auto", "block", "rows"}
        Level 2 by the cost estimate (see the module docstring), always by block search, or
        always by the wrapped counter.

    Attributes
    ----------
    choice : dict or None
        After level 2: ``engine`` (``"block"`` or ``"counter"``), ``reason``, the estimated costs
        ``block_cost`` and ``rows_cost``, and ``threads`` (per block task).
    """

    def __init__(self, counter: SupportCounter, *, client: Any = None, progress: bool = False, engine: str = "auto") -> None:
        if engine not in ENGINES:
            from ..errors import InvalidParameter

            raise InvalidParameter(
                f"engine must be one of {ENGINES}, got {engine!r}",
                parameter="engine",
                fix="give `engine` as 'auto', 'block' or 'rows'",
            )
        self.counter, self.engine = counter, engine
        self._ckw = {"client": client, "progress": progress}
        self.choice: dict[str, Any] | None = None
        self._counts: np.ndarray | None = None
        self._bits: list[Any] = []
        self._items: np.ndarray | None = None
        self._memory: str | None = None

    def __getattr__(self, name: str) -> Any:  # everything else is the wrapped counter's
        return getattr(self.__dict__["counter"], name)

    def _compute(self, lazy: Any) -> Any:
        from ..progress import compute

        (out,) = compute(lazy, **self._ckw)
        return out

    # ------------------------------------------------------------------ level 1
    def item_counts(self) -> np.ndarray:
        """The wrapped counter's level 1 (its counts price level 2)."""
        counts = self.counter.item_counts()
        self._counts = counts.copy()
        return counts

    # ------------------------------------------------------------------ level 2
    def estimate(self, items: np.ndarray) -> tuple[float, float]:
        """``(block_cost, rows_cost)`` of counting every pair of ``items`` (module docstring)."""
        if self._counts is None:
            raise RuntimeError("call item_counts() first")
        n = float(self.counter.tx.n_transactions)
        total = float(self._counts.sum())
        mu = float(self._counts[items].sum()) / max(1.0, n)  # counted items per row
        f = float(items.size)
        block = f * (f - 1) / 2 * (n / 64.0)
        rows = 0.5 * n * (mu * mu + mu) * ROW_INCREMENT_COST + ENTRY_COST * total
        return block, rows

    def _plan(self, items: np.ndarray) -> tuple[bool, str, float, float]:
        """Whether the block search runs for ``items``, why, and the two cost estimates."""
        block, rows = self.estimate(items)
        costs = f"estimated cost {block:.3g} against {rows:.3g} for pairs in rows"
        if self.engine == "rows":
            return False, "pairs counted by the mining engine (engine='rows' asked for)", block, rows
        if P._numba is None:  # pragma: no cover - numba is installed with the package
            return False, "pairs counted by the mining engine (no compiled kernels)", block, rows
        if self.engine == "auto" and block >= rows and self.counter.pair_method(items) != "bitsets":
            return False, f"pairs counted by the mining engine: {costs}", block, rows
        asked = self.counter.memory_plan
        if asked in ("stream", "packed"):
            return False, f"pairs counted by the mining engine: bitsets not kept ({asked} plan asked for)", block, rows
        from ..cluster import memory_plan

        per_block = bitset_bytes(self.counter.tx.partition_rows, items.size)
        need = float(per_block.sum()) + float(per_block.max(initial=0))  # room for an uneven spread
        what = f"bitsets of {items.size:,} items"
        plan, why, _ = memory_plan(need, BITSET_MEMORY_SHARE, self._ckw["client"], local=MAX_BITSET_BYTES, what=what)
        if asked == "persist":
            plan, why = "persist", f"{what}, {need / 2**20:,.1f} MiB: persist (asked for)"
        if plan != "persist":
            return False, f"pairs counted by the mining engine: {why}", block, rows
        self._memory = why
        lead = "engine='block' asked for" if self.engine == "block" else costs
        return True, f"block search (AND + popcount on kept bitsets): {lead}", block, rows

    def pair_counts(self, items: np.ndarray, *, method: str = "auto") -> np.ndarray:
        """Counts of all pairs of the sorted column ids ``items``, in ``np.triu_indices`` order."""
        from ..progress import persist

        items = np.asarray(items, dtype=np.int32)
        run, reason, block, rows = self._plan(items)
        n_blocks = int(self.counter.tx.n_partitions)
        threads = threads_per_block(n_blocks, self._ckw["client"]) if run else 1
        self.choice = {
            "engine": "block" if run else "counter",
            "reason": reason,
            "block_cost": block,
            "rows_cost": rows,
            "threads": threads,
        }
        if not run:
            return self.counter.pair_counts(items, method=method)
        self.release()
        payload = dask.delayed(items, pure=True)
        built = self.counter.map_rows(P.block_bitsets, payload, threads, blocks=list(range(n_blocks)), per_block=[()] * n_blocks)
        self._bits, self._items = list(persist(*built, **self._ckw)), items
        parts = [dask.delayed(P.gram_pair_counts, pure=True)(b, threads) for b in self._bits]
        return self._compute(tree_reduce(parts, _sum_arrays, split_every=self.counter.split_every))

    # ------------------------------------------------------------------ levels >= 3
    def _own(self) -> bool:
        return self._items is not None

    @property
    def bit_items(self) -> np.ndarray | None:
        """Items of the bitsets in use (the block search's, else the counter's)."""
        return self._items if self._own() else self.counter.bit_items

    def use_bitsets(self, items: np.ndarray, *, keep: bool = True) -> None:
        """Bitsets of (at least) ``items``: the block search's when they cover them."""
        items = np.asarray(items, dtype=np.int32)
        if self._items is not None and np.all(np.isin(items, self._items)):
            return
        self._drop()
        self.counter.use_bitsets(items, keep=keep)

    def extension_counts_many(self, queries: list[Query]) -> list[np.ndarray]:
        """Counts of several extension queries (positions into :attr:`bit_items`) in one pass."""
        if not self._own():
            return self.counter.extension_counts_many(queries)
        queries = [(np.asarray(p), np.asarray(po, np.int64), np.asarray(la)) for p, po, la in queries]
        sizes = [q[1].size for q in queries]
        if sum(sizes) == 0:
            return [np.zeros(0, np.int64) for _ in queries]
        payload = dask.delayed(queries, pure=True)
        threads = self.choice["threads"] if self.choice is not None else 1
        parts = [dask.delayed(P.query_counts, pure=True)(b, payload, threads) for b in self._bits]
        counts = self._compute(tree_reduce(parts, _sum_arrays, split_every=self.counter.split_every))
        return np.split(counts, np.cumsum(sizes)[:-1])

    def extension_counts(self, parents: np.ndarray, parent_of: np.ndarray, last: np.ndarray) -> np.ndarray:
        """One extension query (see :meth:`extension_counts_many`)."""
        return self.extension_counts_many([(parents, parent_of, last)])[0]

    def plan_fields(self) -> dict[str, Any]:
        """The counter's plan fields, the block search's bitsets when in use, and ``pair_search``."""
        out = dict(self.counter.plan_fields())
        if self._own():
            out.update(memory_plan="persist", memory=self._memory)
        if self.choice is not None:
            out["pair_search"] = self.choice["reason"]
        return out

    def _drop(self) -> None:
        self._bits, self._items = [], None

    def release(self) -> None:
        """Drop the block search's bitsets and the counter's."""
        self._drop()
        self.counter.release()
