"""Exact, distributed support counting: the engine of Apriori and, later, EMASK-Apriori.

A :class:`SupportCounter` wraps a TransactionArray and answers count queries with tree
reductions over the partitions: all items (``bincount``), all pairs of chosen items (pair
enumeration per block), and arbitrary itemsets on per-block packed bitsets. Only queries and
count vectors travel.

Memory plan (``memory_plan``). Two kinds of state may be kept on the workers: the rows,
*packed* (the column ids of each row as varint gaps, about 1.3 bytes per entry instead of the 8
of a CSR block; :mod:`ppdm_dask.data.packed`), and the per-block *bitsets* of the counted items.

- ``"persist"``: the bitsets are built once and kept for every later query; rows are read from
  the TransactionArray as given.
- ``"packed"``: the first pass packs the rows and keeps them; every counting task decodes its
  block's bitsets straight from them (only the items of the query), nothing else is kept.
- ``"stream"``: nothing is kept; every counting task re-reads its block from the source (or
  from memory when the TransactionArray is persisted) and builds what it needs.
- ``"auto"``: rows are packed when they fit in :data:`ROWS_MEMORY_SHARE` of the workers'
  memory, bitsets are persisted when they fit in :data:`BITSET_MEMORY_SHARE`; otherwise
  counting runs as ``"packed"`` or ``"stream"``. Shares are of the smallest worker's limit times
  the number of workers (without a cluster: :data:`MAX_BITSET_BYTES` for the bitsets, and
  :data:`ROWS_LOCAL_BYTES` for the rows), less the largest block for an uneven spread, so that
  the Dask workers never have to spill either.

:attr:`SupportCounter.plan` and :attr:`SupportCounter.rows_plan` say which plan ran and why.
"""

from __future__ import annotations

import os
from typing import Any

import dask
import numpy as np
import scipy.sparse as sp

from ..data.packed import PackedRows, pack_rows, packed_bitsets, packed_bytes_estimate, unpack_rows
from ..graph import tree_reduce
from . import _kernels as K
from .units import UnitPlan, block_bytes, concat_rows

__all__ = ["SupportCounter", "build_bitsets"]

#: Cost of one random counter increment in units of one streamed AND+popcount word (measured:
#: ~1.5 ns vs ~0.13 ns for the compiled kernels on an AVX-512 machine).
ROW_INCREMENT_COST = 12.0
#: Never persist more bitsets than this for level 2 (pair enumeration needs no extra memory),
#: and the budget of persisted bitsets without a cluster.
MAX_BITSET_BYTES = 4 * 2**30
#: Share of the workers' memory that persisted bitsets may take (Dask spills from 60 % by
#: default; the data blocks and every task's temporaries need the rest).
BITSET_MEMORY_SHARE = 0.25
#: Share of the workers' memory that packed rows may take, and their budget without a cluster.
ROWS_MEMORY_SHARE = 0.3
ROWS_LOCAL_BYTES = 2 * 2**30
MEMORY_PLANS = ("auto", "persist", "packed", "stream")
#: Threads of the pair counting of a single block (:func:`_kernels.pair_counts`). 1: each
#: thread reads every row, so on a machine shared with other work (measured: retail's level 2,
#: 85-120 ms on one thread, 140-160 ms on two, with the 2 cores busy elsewhere) the threads cost
#: more than they save; raise it where the cores are the job's own.
PAIR_THREADS = 1


def bitset_bytes(partition_rows: Any, n_items: int) -> np.ndarray:
    """Bytes of the packed bitsets of ``n_items`` columns, per block (:func:`_kernels.build_bitsets`)."""
    rows = np.asarray(partition_rows, dtype=np.int64)
    return n_items * np.maximum(1, (rows + 63) // 64) * 8


def _sum_arrays(parts: list[np.ndarray]) -> np.ndarray:
    out = parts[0].copy()
    for p in parts[1:]:
        out += p
    return out


Query = tuple[np.ndarray, np.ndarray, np.ndarray]


def _count_on_bits(bits: np.ndarray, queries: list[Query]) -> np.ndarray:
    """The counts of every query (parents, parent_of, last), concatenated."""
    return np.concatenate([K.count_extensions(bits, *q) for q in queries])


def build_bitsets(block: Any, items: np.ndarray) -> np.ndarray:
    """Bitsets of ``items`` from a CSR block or, decoded directly, a packed one."""
    return packed_bitsets(block, items) if isinstance(block, PackedRows) else K.build_bitsets(block, items)


def _count_on_block(block: Any, items: np.ndarray, queries: list[Query]) -> np.ndarray:
    return _count_on_bits(build_bitsets(block, items), queries)


def _on_block_bits(fn: Any, block: Any, items: np.ndarray, *args: Any) -> Any:
    return fn(build_bitsets(block, items), *args)


def _nbytes(packed: PackedRows) -> int:
    return int(packed.data.nbytes)


def _in_memory(blocks: Any) -> bool:
    """The dask array's blocks are values or futures already (persisted), not tasks to run."""
    graph = dict(blocks.__dask_graph__())
    return len(graph) == blocks.npartitions and all(
        sp.issparse(v) or (hasattr(v, "key") and hasattr(v, "client")) for v in graph.values()
    )


def _local_nnz(blocks: Any) -> list[int] | None:
    """Entries of every block when all are scipy values in the graph (persisted on the local
    schedulers), else ``None`` (tasks to run, or futures on a cluster)."""
    from dask.core import flatten

    graph = dict(blocks.__dask_graph__())
    values = [graph.get(k) for k in flatten(blocks.__dask_keys__())]
    if not all(sp.issparse(v) for v in values):
        return None
    return [int(getattr(v, "nnz", 0)) for v in values]


def _as_csr(block: Any) -> Any:
    return unpack_rows(block) if isinstance(block, PackedRows) else block


def _item_counts(block: Any) -> np.ndarray:
    return K.item_counts_and_work(_as_csr(block))


def _item_counts_and_nnz(block: Any, j: int, n_blocks: int) -> np.ndarray:
    """:func:`_item_counts` followed by ``n_blocks`` slots, the block's entries in slot ``j``: the
    tree sum then carries every block's entries too (the units' plan), in no extra task."""
    counts = _item_counts(block)
    out = np.zeros(counts.size + n_blocks, np.int64)
    out[: counts.size] = counts
    out[counts.size + j] = int(block.nnz)
    return out


def _pair_counts(block: Any, items: np.ndarray, threads: int = 1) -> np.ndarray:
    return K.pair_counts(_as_csr(block), items, threads=threads)


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
    memory_plan : {"auto", "persist", "packed", "stream"}
        What is kept on the workers between queries (see the module docstring).

    Attributes
    ----------
    plan : dict or None
        After bitsets were first used: ``plan`` (``"persist"``, ``"packed"`` or ``"stream"``),
        ``bytes`` (all blocks' bitsets), ``budget`` and ``reason``.
    rows_plan : dict or None
        After the first pass: ``packed`` (bool), ``bytes`` (planned), ``budget``, ``reason``.
    """

    def __init__(
        self, tx: Any, *, client: Any = None, progress: bool = False, split_every: int = 8, memory_plan: str = "auto"
    ) -> None:
        if memory_plan not in MEMORY_PLANS:
            from ..errors import InvalidParameter

            raise InvalidParameter(f"memory_plan must be one of {MEMORY_PLANS}, got {memory_plan!r}")
        self.tx = tx
        self._ckw = {"client": client, "progress": progress}
        self.split_every = split_every
        self.memory_plan = memory_plan
        self.plan: dict[str, Any] | None = None
        self.rows_plan: dict[str, Any] | None = None
        self.bit_items: np.ndarray | None = None
        self._bits: list[Any] = []
        self._packed: list[Any] | None = None
        self._item_counts: np.ndarray | None = None
        self._sum_sq_lengths = 0
        self.units: UnitPlan | None = None
        self._kept_units: list[Any] | None = None
        self._unit_threshold: tuple[int, int] | None = None

    def _compute(self, lazy: Any) -> Any:
        from ..progress import compute

        (out,) = compute(lazy, **self._ckw)
        return out

    # ------------------------------------------------------------------ the units
    def coalesce(self, min_count: int, min_local_count: int) -> None:
        """Count on units of consecutive blocks (:mod:`~ppdm_dask.mining.units`) from the next
        pass on: planned before level 1 when the blocks' entries are known (``tx.partition_nnz``),
        else from what level 1 measures. Without this call every block is its own unit."""
        self._unit_threshold = (int(min_count), int(min_local_count))
        known = self._known_nnz()
        if known is not None:
            self._plan_units(known)

    def _known_nnz(self) -> list[int] | None:
        """Entries per block without a pass: from a dataset's manifest, or read off blocks held
        in memory by the local schedulers (persisted values in the graph)."""
        known = getattr(self.tx, "partition_nnz", None)
        return list(known) if known is not None else _local_nnz(self.tx.blocks)

    def _plan_units(self, nnz: Any) -> None:
        if self._unit_threshold is None or self.units is not None:
            return
        from ..cluster import worker_memory_budget
        from .units import UNIT_MAX_BYTES, UNIT_MEMORY_SHARE, plan_units

        cap = min(UNIT_MAX_BYTES, worker_memory_budget(UNIT_MEMORY_SHARE, self._ckw["client"], local=UNIT_MAX_BYTES))
        min_count, local = self._unit_threshold
        self.units = plan_units(self.tx.partition_rows, nnz, min_count, min_local_count=local, max_bytes=cap)

    @property
    def unit_rows(self) -> tuple[int, ...]:
        """Rows per counting unit (per block until units are planned)."""
        return self.units.rows if self.units is not None else tuple(self.tx.partition_rows)

    def _source_blocks(self) -> list[Any]:
        """One delayed CSR block per unit, read from the TransactionArray (concatenated in a task
        when a unit has several blocks)."""
        if self._kept_units is not None:
            return list(self._kept_units)
        source = list(self.tx.blocks.to_delayed().ravel())
        if self.units is None or not self.units.coalesced:
            return source
        return [
            source[u[0]] if len(u) == 1 else dask.delayed(concat_rows, pure=True)(*[source[b] for b in u])
            for u in self.units.units
        ]

    # ------------------------------------------------------------------ the rows
    def _plan_rows(self, nnz: int | None) -> None:
        """Decide once whether to pack the rows (needs their number of entries)."""
        if self.rows_plan is not None or nnz is None:
            return
        from ..cluster import memory_plan

        rows = np.asarray(self.unit_rows, dtype=np.int64)
        if self.memory_plan == "auto" and _in_memory(self.tx.blocks):
            # persisted blocks are read from memory: packing them would only add a copy and a
            # decode per pass; units of several blocks are kept concatenated when they fit
            if self.units is None or not self.units.coalesced:
                self.rows_plan = {"packed": False, "bytes": 0, "budget": 0, "reason": "rows in memory already (persisted)"}
                return
            unit_bytes = float(block_bytes(rows, [nnz * r / max(1, int(rows.sum())) for r in rows]).sum())
            what = f"rows of {len(rows)} unit(s) of several blocks, concatenated"
            plan, reason, budget = memory_plan(
                unit_bytes, ROWS_MEMORY_SHARE, self._ckw["client"], local=ROWS_LOCAL_BYTES, what=what
            )
            if plan == "persist":
                self.rows_plan = {
                    "packed": False,
                    "units": True,
                    "bytes": int(unit_bytes),
                    "budget": int(budget),
                    "reason": reason,
                }
                return
        planned = packed_bytes_estimate(nnz, int(rows.sum()), self.tx.n_items)
        largest = planned * float(rows.max(initial=0)) / max(1, int(rows.sum()))
        what = f"packed rows of {nnz:,} entries"
        plan, reason, budget = memory_plan(
            planned + largest, ROWS_MEMORY_SHARE, self._ckw["client"], local=ROWS_LOCAL_BYTES, what=what
        )
        if self.memory_plan != "auto":
            plan = "persist" if self.memory_plan == "packed" else "stream"
            reason = f"{what}: {'kept' if plan == 'persist' else 'not kept'} ({self.memory_plan} plan asked for)"
        self.rows_plan = {"packed": plan == "persist", "bytes": int(planned), "budget": int(budget), "reason": reason}

    def _blocks(self) -> list[Any]:
        """One delayed block per partition: packed rows when kept, else the TransactionArray's."""
        return list(self._packed) if self._packed is not None else self._source_blocks()

    def _pack(self, *also: Any) -> list[Any]:
        """Pack and keep the rows (one read of the source), computing ``also`` (graphs on the
        source blocks) in the same pass; returns the results of ``also``."""
        from ..progress import persist

        source = self._source_blocks()
        packed = [dask.delayed(pack_rows, pure=True)(b) for b in source]
        out = persist(*packed, *[also_fn(source) for also_fn in also], **self._ckw)
        self._packed = list(out[: len(packed)])
        return [self._compute(o) for o in out[len(packed) :]]

    def _keep_units(self, *also: Any) -> list[Any]:
        """Concatenate and keep the units of several blocks (one read of the source), computing
        ``also`` (graphs on the units) in the same pass; returns the results of ``also``."""
        from ..progress import persist

        source = self._source_blocks()
        out = persist(*source, *[also_fn(source) for also_fn in also], **self._ckw)
        self._kept_units = list(out[: len(source)])
        return [self._compute(o) for o in out[len(source) :]]

    def packed_nbytes(self) -> int:
        """Bytes of the packed rows kept on the workers (0 when not packed; one small pass)."""
        if self._packed is None:
            return 0
        sizes = [dask.delayed(_nbytes, pure=True)(p) for p in self._packed]
        return int(sum(self._compute(dask.delayed(list)(sizes))))

    # ------------------------------------------------------------------ counting
    def _item_counts_graph(self, blocks: list[Any]) -> Any:
        parts = [dask.delayed(_item_counts, pure=True)(b) for b in blocks]
        return tree_reduce(parts, _sum_arrays, split_every=self.split_every)

    def item_counts(self) -> np.ndarray:
        """Support count of every column id (int64, length ``n_items``).

        The same pass records the sum of squared row lengths, which prices pair enumeration for
        :meth:`pair_counts`, and packs the rows when the plan says so and their number of
        entries is known beforehand (``tx.partition_nnz``, from a dataset's manifest).
        """
        known = self._known_nnz()
        self._plan_rows(None if known is None else int(sum(known)))
        if self._packed is None and self.rows_plan is not None and self.rows_plan["packed"]:
            (out,) = self._pack(self._item_counts_graph)
        elif self._kept_units is None and self.rows_plan is not None and self.rows_plan.get("units"):
            (out,) = self._keep_units(self._item_counts_graph)
        elif self._unit_threshold is not None and self.units is None:
            # the same pass measures the blocks' entries for the units' plan
            blocks = self._blocks()
            parts = [dask.delayed(_item_counts_and_nnz, pure=True)(b, j, len(blocks)) for j, b in enumerate(blocks)]
            out = self._compute(tree_reduce(parts, _sum_arrays, split_every=self.split_every))
            out, per_block = out[: -len(blocks)], out[-len(blocks) :]
            self._plan_units(per_block)
        else:
            out = self._compute(self._item_counts_graph(self._blocks()))
        self._item_counts, self._sum_sq_lengths = out[:-1], int(out[-1])
        return out[:-1].copy()

    def _ensure_rows(self, *also: Any) -> list[Any]:
        """Pack the rows, or keep the units of several blocks, before a later pass when the plan
        asks for it (entries now counted), computing ``also`` (graphs on the blocks) in the same
        pass; returns the results of ``also``."""
        if self._item_counts is not None:
            self._plan_rows(int(self._item_counts.sum()))
        if self._packed is None and self.rows_plan is not None and self.rows_plan["packed"]:
            return self._pack(*also)
        if self._kept_units is None and self.rows_plan is not None and self.rows_plan.get("units"):
            return self._keep_units(*also)
        return [self._compute(fn(self._blocks())) for fn in also]

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
        with bitsets, they are kept for the next levels when the plan allows (:meth:`use_bitsets`).
        """
        items = np.asarray(items, dtype=np.int32)

        def total(parts: list[Any]) -> Any:
            # one block's own vector as it is (each task makes a new one): copying a one-part sum
            # costs tens of MB of pairs on wide data
            return parts[0] if len(parts) == 1 else tree_reduce(parts, _sum_arrays, split_every=self.split_every)

        if method == "auto":
            method = self.pair_method(items)
        if method == "bitsets":
            self.use_bitsets(items)
            positions = np.searchsorted(self.bit_items, items)
            parts = [dask.delayed(K.pair_counts_bits, pure=True)(b, positions) for b in self._bits]
            return self._compute(total(parts))
        if method != "rows":
            raise ValueError(f"unknown method {method!r}")

        def graph(blocks: list[Any]) -> Any:
            # one block is one task: its loop uses the cores itself (several blocks use them as tasks)
            threads = min(PAIR_THREADS, os.cpu_count() or 1) if len(blocks) == 1 else 1
            return total([dask.delayed(_pair_counts, pure=True)(b, items, threads) for b in blocks])

        (out,) = self._ensure_rows(graph)  # rows packed or units kept in the same pass
        return out

    def use_bitsets(self, items: np.ndarray, *, keep: bool = True) -> None:
        """Have per-block bitsets of (at least) the sorted column ids ``items`` ready: persisted,
        or (plans ``"packed"``, ``"stream"``) built again inside every counting task.

        Bitsets already prepared for a superset are kept; address them by positions into
        :attr:`bit_items`, which may then hold more items than asked for. ``keep=False`` (for
        one or two passes, where keeping them costs a pass and the memory) builds them inside
        every task from the rows as they are kept now, and keeps nothing.
        """
        from ..progress import persist

        items = np.asarray(items, dtype=np.int32)
        transient = self.plan is not None and self.plan.get("transient", False)
        if self.bit_items is not None and np.all(np.isin(items, self.bit_items)) and not (keep and transient):
            return
        self.release()
        if not keep:
            plan = "packed" if self._packed is not None else "stream"
            self.plan = {
                "plan": plan,
                "bytes": int(bitset_bytes(self.unit_rows, items.size).sum()),
                "budget": 0,
                "reason": f"bitsets of {items.size:,} items built inside each task ({plan}): one or two passes keep nothing",
                "transient": True,
            }
            self._bits, self.bit_items = [], items
            return
        self._ensure_rows()
        self.plan = self._choose_plan(items.size)
        parts = [dask.delayed(build_bitsets, pure=True)(b, items) for b in self._blocks()]
        self._bits = list(persist(*parts, **self._ckw)) if self.plan["plan"] == "persist" else parts
        self.bit_items = items

    def _choose_plan(self, n_items: int) -> dict[str, Any]:
        from ..cluster import memory_plan

        per_block = bitset_bytes(self.unit_rows, n_items)
        total = float(per_block.sum())
        need = total + float(per_block.max(initial=0))  # room for an uneven spread of the blocks
        what = f"bitsets of {n_items:,} items"
        plan, reason, budget = memory_plan(need, BITSET_MEMORY_SHARE, self._ckw["client"], local=MAX_BITSET_BYTES, what=what)
        if self.memory_plan != "auto":
            plan, reason = self.memory_plan, f"{what}, {total / 2**20:,.1f} MiB: {self.memory_plan} (asked for)"
        elif plan == "stream" and self._packed is not None:
            plan, reason = (
                "packed",
                reason.replace("recomputed or re-read at every pass", "decoded from the packed rows in every counting task"),
            )
        return {"plan": plan, "bytes": int(total), "budget": int(budget), "reason": reason}

    def plan_fields(self) -> dict[str, Any]:
        """For a level's statistics: ``rows`` (the rows' plan and why) once decided, and
        ``memory_plan`` and ``memory`` (the bitsets' plan and why) once bitsets are in use."""
        out: dict[str, Any] = {} if self.rows_plan is None else {"rows": self.rows_plan["reason"]}
        if self.units is not None:
            out["units"] = self.units.reason
        if self.plan is not None:
            out.update(memory_plan=self.plan["plan"], memory=self.plan["reason"])
        return out

    def release(self) -> None:
        """Drop the persisted bitsets (the packed rows stay until the counter goes)."""
        self._bits = []
        self.bit_items = None

    def extension_counts(self, parents: np.ndarray, parent_of: np.ndarray, last: np.ndarray) -> np.ndarray:
        """Counts of ``parents[parent_of[c]] + (last[c],)``; all entries are *positions* into
        :attr:`bit_items` (see :meth:`use_bitsets`), ``parent_of`` non-decreasing."""
        return self.extension_counts_many([(parents, parent_of, last)])[0]

    def extension_counts_many(self, queries: list[Query]) -> list[np.ndarray]:
        """:meth:`extension_counts` of several queries (itemsets of different lengths, say) in
        one pass over the blocks: each block's bitsets serve them all.

        When the bitsets are not kept, each task builds those of the queries' items only.
        """
        if self.bit_items is None:
            raise RuntimeError("call use_bitsets() first")
        queries = [(np.asarray(p), np.asarray(po, np.int64), np.asarray(la)) for p, po, la in queries]
        sizes = [q[1].size for q in queries]
        if sum(sizes) == 0:
            return [np.zeros(0, np.int64) for _ in queries]
        if self.plan is not None and self.plan["plan"] != "persist":
            used = np.unique(np.concatenate([np.concatenate([p.ravel(), la]) for p, _, la in queries]))
            queries = [(np.searchsorted(used, p), po, np.searchsorted(used, la)) for p, po, la in queries]
            payload, items = dask.delayed(queries, pure=True), self.bit_items[used]
            parts = [dask.delayed(_count_on_block, pure=True)(b, items, payload) for b in self._blocks()]
        else:
            payload = dask.delayed(queries, pure=True)
            parts = [dask.delayed(_count_on_bits, pure=True)(b, payload) for b in self._bits]
        counts = self._compute(tree_reduce(parts, _sum_arrays, split_every=self.split_every))
        return np.split(counts, np.cumsum(sizes)[:-1])

    def map_bitsets(
        self, fn: Any, *args: Any, blocks: list[int] | None = None, per_block: list[tuple] | None = None
    ) -> list[Any]:
        """One delayed ``fn(bits, *args, *per_block[j])`` for each block ``blocks[j]`` (default:
        all), ``bits`` the block's bitsets of :attr:`bit_items` (persisted, or built inside the
        task under the ``"packed"`` and ``"stream"`` plans). ``args`` are embedded in the graph once
        (wrap big ones in ``dask.delayed``); ``fn`` must be a pure kernel (no dask)."""
        if self.bit_items is None:
            raise RuntimeError("call use_bitsets() first")
        which = range(len(self.unit_rows)) if blocks is None else blocks
        extra = [() if per_block is None else tuple(per_block[j]) for j in range(len(which))]
        if self.plan is not None and self.plan["plan"] != "persist":
            source, items = self._blocks(), self.bit_items
            return [dask.delayed(_on_block_bits, pure=True)(fn, source[b], items, *args, *e) for b, e in zip(which, extra)]
        return [dask.delayed(fn, pure=True)(self._bits[b], *args, *e) for b, e in zip(which, extra)]

    def bitsets_kept(self) -> bool:
        """The bitsets of :attr:`bit_items` are persisted on the workers."""
        return self.bit_items is not None and self.plan is not None and self.plan["plan"] == "persist"

    def map_rows(self, fn: Any, *args: Any, blocks: list[int], per_block: list[tuple]) -> list[Any]:
        """One delayed ``fn(block, *args, *per_block[j])`` for each block ``blocks[j]``, ``block``
        its rows as kept (packed rows, or the TransactionArray's CSR block)."""
        source = self._blocks()
        return [dask.delayed(fn, pure=True)(source[b], *args, *tuple(e)) for b, e in zip(blocks, per_block)]

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
