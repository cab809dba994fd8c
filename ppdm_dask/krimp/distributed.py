"""Distributed KRIMP search: the cover lives on the workers, the decisions on the driver.

docs/krimp.md#distributed-search. The rows of a TransactionArray are split in *cover blocks*,
one per partition, each kept on one worker for the whole search (:class:`CoverBlock`: its rows as
bitsets, their current covers and a replica of the code table; :mod:`._cover`). The driver
(:func:`krimp_distributed`) holds only the code table, the usages and the candidate stream, and
repeats one *round trip*:

1. every block first applies the table changes decided since its last round (insert X into slot
   s; remove the element of slot s; zap a zero-usage element), then evaluates a batch of
   proposals — candidates to insert, in the standard order, or pending elements to remove — each
   against the same current table, and returns, per proposal, the usage changes in its rows;
2. the per-block changes are summed in a tree reduction (exact integers);
3. the driver decides the proposals in order with the same kernels as the single-machine search
   (:mod:`._decide`) and stops at the first one that changes the table: the proposals after it
   were evaluated against the old table and go into the next batch.

The code table is therefore exactly the single-machine one, for any number of blocks and
workers. A batch of ``B`` candidates costs one round trip (latency ``c0``) plus ``B`` evaluations;
the batch ends at the first acceptance, so with an acceptance rate ``p`` it consumes
``(1 − (1 − p)^B) / p`` candidates on average. :class:`BatchPlanner` measures ``c0``, the evaluation
time per candidate and ``p`` as the search goes and picks the ``B`` that maximises candidates
consumed per second.

Blocks are mutable state on the workers: the blocks of one worker live in one Dask actor
(:class:`BlockHost`; calls reach it directly, about 2 ms a round trip on a local cluster against
13 ms for tasks through the scheduler), which sums its blocks' changes (the first level of the
reduction; the driver adds the hosts'). Every call carries the version (number of table changes)
the driver expects; a host lost with its worker is rebuilt on a live worker from the partitions
and the driver replays its log of changes (:class:`StaleBlock`).

Memory: per row, the record of :mod:`._cover` (2·⌈items/64⌉ + ⌈(longest/2 + 1)/2⌉ words) and
⌈items/8⌉ bytes of item row bitsets; the two row indexes take what the budget gives
(``index_memory``, default a quarter of each worker's memory limit, split over its blocks by rows).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..constraints import validate
from ..errors import DataFormatError, InvalidParameter, PPDMError
from . import _cover as C
from . import _decide as X
from ._kernels import AlphabetItems, pack_rows, renumber
from .candidates import DEFAULT_MAX_CANDIDATES, MINER_CONSTRAINTS, CandidateStream, exclusion_bits

__all__ = ["CoverBlock", "StaleBlock", "BatchPlanner", "krimp_distributed", "Alphabet"]

#: Table changes shipped to the blocks: (kind, slot, bitset words, key); kind 0 insert, 1 remove, 2 zap.
INSERT, REMOVE, ZAP = 0, 1, 2


class StaleBlock(PPDMError, RuntimeError):
    """A cover block is at another version than the driver expected (it was rebuilt)."""

    def __init__(self, version: int) -> None:
        super().__init__(f"cover block at version {version}")
        self.version = int(version)

    def __reduce__(self) -> tuple:
        return (StaleBlock, (self.version,))


# ----------------------------------------------------------------------------- the alphabet
@dataclass(frozen=True, eq=False)
class Alphabet(AlphabetItems):
    """What the search needs of a database besides its rows: the items (original ids, ascending),
    their frequencies, the renumbering (docs/krimp.md#clarification-item-renumbering-decides-every-tie)
    and the number of rows. Quacks like :class:`~ppdm_dask.krimp.Database` for
    :meth:`..search.TableState.code_table`."""

    labels: np.ndarray
    frequencies: np.ndarray
    new_ids: np.ndarray
    order: np.ndarray
    n_rows: int

    @classmethod
    def from_counts(cls, labels: np.ndarray, counts: np.ndarray, n_rows: int) -> Alphabet:
        labels = np.asarray(labels)
        if labels.size and labels.dtype.kind not in "iu":
            raise DataFormatError("KRIMP needs integer item labels (original ids)")
        counts = np.asarray(counts, np.int64)
        keep = counts > 0
        lab = labels[keep].astype(np.int64)
        cnt = counts[keep]
        o = np.argsort(lab, kind="stable")
        lab, cnt = lab[o], cnt[o]
        new_ids, order = renumber(lab, cnt)
        return cls(lab, cnt, new_ids, order, int(n_rows))


# ----------------------------------------------------------------------------- blocks (worker side)
class CoverBlock:
    """The cover of one row partition and a replica of the code table (worker memory).

    Holds: the rows as bitsets and records (:mod:`._cover`), the items' row bitsets, the
    ``blocked``/``urows`` indexes when they fit, and per code-table slot a few words.
    """

    # the arrays indexed by slot, set by C.resize_slots (declared here for the type checker)
    skey: np.ndarray
    scanon: np.ndarray
    lkey: np.ndarray
    order: np.ndarray
    pos_of: np.ndarray
    idx: np.ndarray
    d_ns: np.ndarray
    stamp_ns: np.ndarray
    t_ns: np.ndarray
    sfx: np.ndarray
    sbits: np.ndarray
    lbits: np.ndarray
    surv: np.ndarray

    def __init__(self, rows: Any, column_new: np.ndarray, n_items: int, longest: int, index_memory: int) -> None:
        import scipy.sparse as sp

        m = sp.csr_array(rows)
        indptr = m.indptr.astype(np.int64)
        new = column_new[m.indices.astype(np.int64)]
        if new.size and new.min() < 0:
            raise DataFormatError("a row holds an item outside the alphabet")
        self.n_rows = int(m.shape[0])
        self.n_items = int(n_items)
        self.w = max(1, (self.n_items + 63) // 64)
        ident = np.arange(self.n_items, dtype=np.int64)
        row_bits = pack_rows(indptr, new, ident, self.n_items)
        from ._kernels import pack_columns

        self.tid_bits = pack_columns(indptr, new, ident, self.n_items)
        self.rec, self.rec32, self.blocked, self.index_memory = C.block_state(row_bits, self.n_items, longest, index_memory)
        self.wt = np.ones(self.n_rows, np.int64)  # one record per row (see _cover: weights)
        self.acc = np.zeros(self.tid_bits.shape[1], np.uint64)
        self.r = np.zeros(self.w, np.uint64)
        self.d_s = np.zeros(self.n_items, np.int64)
        self.stamp_s = np.zeros(self.n_items, np.int64)
        self.t_s = np.zeros(self.n_items, np.int64)
        self.idx_off = np.zeros(self.n_items + 1, np.int64)
        self.icnt = np.zeros(self.n_items, np.int64)
        self.cap = 0
        self.m = 0
        self.version = 0
        self.epoch = 0
        self.seconds_apply = 0.0
        self._alloc(64)

    def _alloc(self, cap: int) -> None:
        old = self.cap
        C.resize_slots(
            self, cap, old, self.w, ("skey", "scanon", "lkey", "order", "pos_of", "idx", "d_ns", "stamp_ns", "t_ns", "sfx")
        )
        self.urows = (
            C.usage_rows(cap, self.n_rows, self.index_memory)
            if not old
            else C.grow_usage_rows(self.urows, cap, self.n_rows, self.index_memory)
        )
        self.cap = cap

    def _reindex(self) -> None:
        C.rebuild_index(
            self.order,
            self.m,
            self.scanon,
            self.sbits,
            self.skey,
            self.n_items,
            self.idx,
            self.idx_off,
            self.icnt,
            self.lkey,
            self.lbits,
        )

    def _arrays(self) -> tuple:
        return (
            self.rec,
            self.rec32,
            self.wt,
            self.tid_bits,
            self.blocked,
            self.urows,
            self.sbits,
            self.skey,
            self.idx,
            self.idx_off,
            self.lkey,
            self.lbits,
            self.acc,
            self.r,
            self.surv,
            self.sfx,
            self.d_ns,
            self.stamp_ns,
            self.t_ns,
            self.d_s,
            self.stamp_s,
            self.t_s,
        )

    def apply(self, events: Sequence[tuple]) -> None:
        """Apply table changes in order: write the new covers of the rows they change."""
        t = time.perf_counter()
        self._apply(events)
        self.seconds_apply += time.perf_counter() - t

    def _apply(self, events: Sequence[tuple]) -> None:
        for kind, slot, bits, key in events:
            while slot >= self.cap:
                self._alloc(2 * self.cap)
            if kind == INSERT:
                xb = np.asarray(bits, np.uint64)
                self.epoch += 1
                # the element's words first: the commit marks its items in the row indexes
                self.sbits[slot] = xb
                self.skey[slot] = key
                self.scanon[slot] = C.canonical_item(xb)
                (
                    rec,
                    rec32,
                    wt,
                    tid,
                    blocked,
                    urows,
                    sbits,
                    skey,
                    idx,
                    idx_off,
                    lkey,
                    lbits,
                    acc,
                    r,
                    surv,
                    sfx,
                    d_ns,
                    stamp_ns,
                    t_ns,
                    d_s,
                    stamp_s,
                    t_s,
                ) = self._arrays()
                C.insert_change(
                    True,
                    xb,
                    key,
                    slot,
                    rec,
                    rec32,
                    wt,
                    tid,
                    blocked,
                    urows,
                    sbits,
                    skey,
                    idx,
                    idx_off,
                    lkey,
                    lbits,
                    acc,
                    r,
                    surv,
                    sfx,
                    d_ns,
                    stamp_ns,
                    t_ns,
                    d_s,
                    stamp_s,
                    t_s,
                    self.epoch,
                )
                self.m = X.place(self.order, self.m, self.skey, slot, self.pos_of)
            else:
                if kind == REMOVE:
                    self.epoch += 1
                    (
                        rec,
                        rec32,
                        wt,
                        tid,
                        blocked,
                        urows,
                        sbits,
                        skey,
                        idx,
                        idx_off,
                        lkey,
                        lbits,
                        acc,
                        r,
                        surv,
                        sfx,
                        d_ns,
                        stamp_ns,
                        t_ns,
                        d_s,
                        stamp_s,
                        t_s,
                    ) = self._arrays()
                    C.remove_change(
                        True,
                        slot,
                        rec,
                        rec32,
                        wt,
                        tid,
                        blocked,
                        urows,
                        sbits,
                        skey,
                        idx,
                        idx_off,
                        lkey,
                        lbits,
                        acc,
                        r,
                        surv,
                        sfx,
                        d_ns,
                        stamp_ns,
                        t_ns,
                        d_s,
                        stamp_s,
                        t_s,
                        self.epoch,
                    )
                self.m = X.unplace(self.order, self.m, slot, self.pos_of)
            self._reindex()
            self.version += 1

    def evaluate(self, kind: int, cbits: np.ndarray, keys: np.ndarray, slots: np.ndarray) -> tuple:
        """Usage changes of a batch of proposals (:func:`._cover.evaluate_batch`), then this
        block's seconds evaluating and (in total so far) applying changes."""
        t = time.perf_counter()
        for s in slots.tolist():
            while s >= self.cap:
                self._alloc(2 * self.cap)
        (
            rec,
            rec32,
            wt,
            tid,
            blocked,
            urows,
            sbits,
            skey,
            idx,
            idx_off,
            lkey,
            lbits,
            acc,
            r,
            surv,
            sfx,
            d_ns,
            stamp_ns,
            t_ns,
            d_s,
            stamp_s,
            t_s,
        ) = self._arrays()
        out = C.evaluate_batch(
            kind,
            cbits,
            keys,
            slots,
            rec,
            rec32,
            wt,
            tid,
            blocked,
            urows,
            sbits,
            skey,
            idx,
            idx_off,
            lkey,
            lbits,
            acc,
            r,
            surv,
            sfx,
            d_ns,
            stamp_ns,
            t_ns,
            d_s,
            stamp_s,
            t_s,
            self.epoch + 1,
        )
        self.epoch += max(1, int(keys.size if kind == 0 else slots.size))
        return out + (time.perf_counter() - t, self.seconds_apply)


def _shares(parts: Sequence[Any], budget: int) -> list[int]:
    """The index budget split over blocks in proportion to their rows."""
    rows = [int(p.shape[0]) for p in parts]
    total = max(sum(rows), 1)
    return [budget * r // total for r in rows]


def _step(block: CoverBlock, base: int, events: list, requests: Sequence[tuple]) -> list[tuple]:
    """One round trip on a block: check its version, apply the changes, evaluate the batches
    (each against the same table)."""
    if block.version != base:
        raise StaleBlock(block.version)
    block.apply(events)
    return [block.evaluate(*r) for r in requests]


def _combine_all(parts: list[list[tuple]], sizes: Sequence[tuple[int, int, int]]) -> list[tuple]:
    """Per request, the sum over blocks."""
    return [combine([p[j] for p in parts], *sizes[j]) for j in range(len(sizes))]


def combine(parts: list[tuple], nb: int, n_slots: int, n_items: int) -> tuple:
    """Sum the per-block usage changes of a batch (exact integers): the tree reduction's step."""
    parts = [p for p in parts if p is not None]
    own = np.sum([p[0] for p in parts], axis=0, dtype=np.int64)
    seconds = max(p[7] for p in parts)
    applying = max(p[8] for p in parts)
    out = [own]
    for off, base in ((1, n_slots), (4, n_items)):
        keys, vals = [], []
        for p in parts:
            ptr, ids, val = p[off], p[off + 1], p[off + 2]
            row = np.repeat(np.arange(nb, dtype=np.int64), np.diff(ptr))
            keys.append(row * base + ids)
            vals.append(val)
        k = np.concatenate(keys)
        v = np.concatenate(vals)
        uk, inv = np.unique(k, return_inverse=True)
        sv = np.zeros(uk.size, np.int64)
        np.add.at(sv, inv, v)
        nz = sv != 0
        uk, sv = uk[nz], sv[nz]
        rows = uk // base
        ptr = np.zeros(nb + 1, np.int64)
        np.cumsum(np.bincount(rows, minlength=nb), out=ptr[1:])
        out += [ptr, uk - rows * base, sv]
    return tuple(out) + (seconds, applying)


# ----------------------------------------------------------------------------- executors
class LocalBlocks:
    """Cover blocks in this process, evaluated by a thread pool (the kernels release the GIL).
    Used without a distributed client, and to test the distributed search on 1..n blocks."""

    def __init__(
        self,
        parts: Sequence[Any],
        column_new: np.ndarray,
        n_items: int,
        longest: int,
        index_memory: int,
        threads: int | None = None,
    ) -> None:
        budget = C.index_budget(index_memory, None)
        self.blocks = [CoverBlock(p, column_new, n_items, longest, share) for p, share in zip(parts, _shares(parts, budget))]
        self._column_new, self._longest, self._index_memory = column_new, longest, budget // max(len(parts), 1)
        self.pool = ThreadPoolExecutor(max_workers=threads or min(len(self.blocks), 4) or 1)
        self.where = f"{len(self.blocks)} cover block(s) in this process"
        self.rebuilt = 0

    def round_trip(self, log: list, base: int, n_new: int, requests: Sequence[tuple], sizes: Sequence[tuple]) -> list[tuple]:
        parts = []
        for i, f in enumerate([self.pool.submit(_step, b, base, log[base : base + n_new], requests) for b in self.blocks]):
            try:
                parts.append(f.result())
            except StaleBlock as exc:  # a block replaced by a fresh one: replay what it misses
                self.rebuilt += 1
                parts.append(_step(self.blocks[i], exc.version, log[exc.version : base + n_new], requests))
        return _combine_all(parts, sizes)

    def close(self) -> None:
        self.pool.shutdown(wait=True)


class BlockHost:
    """The cover blocks of the partitions given to one worker, as a Dask actor: calls reach it
    directly (about 2 ms a round trip on a local cluster, against 13 ms for tasks through the
    scheduler) and its state stays in the worker's memory between calls."""

    def __init__(self, parts: list, column_new: np.ndarray, n_items: int, longest: int, index_memory: int | None) -> None:
        from distributed import get_worker

        try:
            limit = get_worker().memory_manager.memory_limit
        except Exception:  # pragma: no cover - not on a worker
            limit = None
        budget = C.index_budget(index_memory, limit)
        self.blocks = [CoverBlock(p, column_new, n_items, longest, share) for p, share in zip(parts, _shares(parts, budget))]
        self.n_rows = sum(b.n_rows for b in self.blocks)

    def step(self, base: int, events: list, requests: Sequence[tuple], sizes: Sequence[tuple]) -> list[tuple]:
        """Apply the changes and evaluate the batch on every block, and sum the blocks' changes
        (the first level of the reduction)."""
        versions = {b.version for b in self.blocks}
        if versions != {base}:
            raise StaleBlock(min(versions))
        parts = [_step(b, base, events, requests) for b in self.blocks]
        # the blocks of one host run one after the other: their seconds add up
        return [
            out[:7] + (sum(p[j][7] for p in parts), sum(p[j][8] for p in parts))
            for j, out in enumerate(_combine_all(parts, sizes))
        ]

    def memory(self) -> int:
        """Bytes held by the blocks' arrays."""
        return int(sum(sum(v.nbytes for v in vars(b).values() if isinstance(v, np.ndarray)) for b in self.blocks))


class ClusterBlocks:
    """Cover blocks on the workers of a distributed client: the partitions are dealt round robin
    to one :class:`BlockHost` actor per worker. A round trip calls every host; the hosts' sums
    are added on the driver (the second level of the reduction). A host lost with its worker is
    rebuilt on another worker from the partitions (recomputed from ``tx``'s graph) and brought
    up to date from the change log."""

    def __init__(self, client: Any, tx: Any, column_new: np.ndarray, n_items: int, longest: int, index_memory: int) -> None:
        self.client = client
        self.args = (column_new, n_items, longest, index_memory)
        self.delayed = list(tx.blocks.to_delayed().ravel())
        workers = sorted(client.scheduler_info()["workers"])
        if not workers:
            raise PPDMError("the distributed client has no workers")
        self.assign = [list(range(i, len(self.delayed), len(workers))) for i in range(min(len(workers), len(self.delayed)))]
        with client.as_current():  # actor handles bind to the current client when they arrive
            self.hosts = [self._build(i, w) for i, w in zip(range(len(self.assign)), workers)]
        self.where = f"{len(self.delayed)} cover blocks on {len(self.hosts)} worker(s)"
        self.rebuilt = 0

    def _build(self, i: int, worker: str | None) -> Any:
        parts = self.client.compute([self.delayed[j] for j in self.assign[i]])
        fut = self.client.submit(
            BlockHost,
            parts,
            *self.args,
            actor=True,
            pure=False,
            workers=None if worker is None else [worker],
            allow_other_workers=worker is None,
        )
        host = fut.result()
        del parts  # the blocks hold their own copy; a rebuild recomputes the partitions
        return host

    def round_trip(self, log: list, base: int, n_new: int, requests: Sequence[tuple], sizes: Sequence[tuple]) -> list[tuple]:
        # actor handles find their client through the current one (the client may not be the default)
        with self.client.as_current():
            return self._round_trip(log, base, n_new, requests, sizes)

    def _round_trip(self, log: list, base: int, n_new: int, requests: Sequence[tuple], sizes: Sequence[tuple]) -> list[tuple]:
        events = log[base : base + n_new]
        futs: list = []
        for h in self.hosts:
            try:
                futs.append(h.step(base, events, requests, sizes))
            except Exception as exc:  # the handle knows its worker is gone
                futs.append(exc)
        parts = []
        for i, f in enumerate(futs):
            try:
                if isinstance(f, Exception):
                    raise f
                parts.append(f.result())
            except StaleBlock as exc:
                parts.append(self.hosts[i].step(exc.version, log[exc.version : base + n_new], requests, sizes).result())
            except Exception:
                # the host is gone with its worker: rebuild it on a live worker and replay the whole log
                live = sorted(self.client.scheduler_info()["workers"])
                self.hosts[i] = self._build(i, live[i % len(live)] if live else None)
                self.rebuilt += 1
                parts.append(self.hosts[i].step(0, log[: base + n_new], requests, sizes).result())
        return _combine_all(parts, sizes)

    def memory(self) -> list[int]:
        """Bytes held by the cover blocks, per worker."""
        with self.client.as_current():
            return [f.result() for f in [h.memory() for h in self.hosts]]

    def close(self) -> None:
        self.hosts = []


# ----------------------------------------------------------------------------- the batch size
class BatchPlanner:
    """Batch size from a cost model: a round trip costs ``c0 + B·e`` seconds and consumes
    ``(1 − (1 − p)^B) / p`` candidates on average (the batch ends at the first acceptance);
    ``c0`` (round-trip latency), ``e`` (evaluation seconds per candidate on the slowest block)
    and ``p`` (acceptances per candidate) are measured as the search goes (``c0`` and ``e`` as
    moving averages). The size that maximises candidates per second is taken among powers of √2
    up to 65,536; ``fixed`` overrides it."""

    SIZES = tuple(sorted({int(round(2 ** (k / 2))) for k in range(0, 33)}))

    def __init__(self, fixed: int | None = None, initial: int = 64) -> None:
        self.fixed = fixed
        self.c0: float | None = None
        self.e: float | None = None
        self.accepts = 1.0
        self.tried = float(initial)
        self.size = int(fixed or initial)
        self.trips = 0

    def update(self, batch: int, consumed: int, accepted: bool, wall: float, compute: float) -> None:
        a = 0.2
        e = compute / max(batch, 1)
        c0 = max(wall - compute, 1e-6)
        self.e = e if self.e is None else (1 - a) * self.e + a * e
        self.c0 = c0 if self.c0 is None else (1 - a) * self.c0 + a * c0
        self.accepts += float(accepted)
        self.tried += consumed
        self.trips += 1
        if self.fixed is None:
            self.size = self.best()

    @property
    def p(self) -> float:
        return min(1.0, self.accepts / max(self.tried, 1.0))

    def expected(self, b: int) -> float:
        """Candidates a batch of ``b`` consumes on average."""
        p = self.p
        return float(b) if p <= 0 else (1.0 - (1.0 - p) ** b) / p

    def best(self) -> int:
        c0, e = self.c0 or 1e-3, self.e or 1e-6
        return max(self.SIZES, key=lambda b: self.expected(b) / (c0 + b * e))

    def summary(self) -> dict:
        return {
            "batch_size": self.size,
            "round_trip_seconds": self.c0,
            "seconds_per_candidate": self.e,
            "acceptance_rate": self.p,
            "round_trips": self.trips,
        }


# ----------------------------------------------------------------------------- the driver
class _Driver:
    """The driver's loop: table state, change log, round trips."""

    def __init__(self, blocks: Any, alphabet: Alphabet, prune: bool, planner: BatchPlanner) -> None:
        from .search import TableState

        self.blocks = blocks
        self.d = alphabet
        self.prune = prune
        self.planner = planner
        self.state = TableState(alphabet.n_items, alphabet.n_rows, alphabet.std_lengths[alphabet.order], alphabet.new_frequencies)
        self.log: list[tuple] = []
        self.shipped = 0
        self.trips = 0
        self.proposals = 0
        self.seconds_blocks = 0.0
        self.seconds_apply = 0.0
        self.seconds_trips = 0.0
        self._events = np.zeros(64, np.int64)

    def trip(self, requests: Sequence[tuple]) -> list[tuple]:
        """One round trip: ship the changes decided since the last one, evaluate ``requests``
        ((kind, bitsets, keys, slots); kind 0 = insert candidates, 1 = remove slots)."""
        sizes = [((r[1].shape[0] if r[0] == 0 else r[3].size), self.state.cap, self.d.n_items) for r in requests]
        n_new = len(self.log) - self.shipped
        t = time.perf_counter()
        out = self.blocks.round_trip(self.log, self.shipped, n_new, requests, sizes)
        self.seconds_trips += time.perf_counter() - t
        self.shipped += n_new
        self.trips += 1
        self.proposals += sum(z[0] for z in sizes)
        for o in out:
            self.seconds_blocks += o[7]
            self.seconds_apply = o[8]
        return out

    def search(self, cbits: np.ndarray, csup: np.ndarray, rank0: int) -> None:
        st = self.state
        keys = C.keys_of(cbits, rank0, self.d.n_items)
        pos = 0
        n = cbits.shape[0]
        ahead = None  # (position, batch size, result, seconds): a batch evaluated with the last pruning round
        while pos < n:
            if ahead is not None and ahead[0] == pos:
                _, bsize, res, wall = ahead
            else:
                bsize = max(1, min(self.planner.size, n - pos))
                t = time.perf_counter()
                (res,) = self.trip([(0, cbits[pos : pos + bsize], keys[pos : pos + bsize], _NO_SLOTS)])
                wall = time.perf_counter() - t
            ahead = None
            off = 0
            while True:
                status, b, npl, s = X.decide_inserts(
                    cbits[pos + off : pos + bsize],
                    csup[pos + off : pos + bsize],
                    keys[pos + off : pos + bsize],
                    *res[:7],
                    self.d.n_items,
                    st.st_s,
                    st.flog,
                    st.lg,
                    st.sbits,
                    st.skey,
                    st.scanon,
                    st.ssup,
                    st.cst,
                    st.order,
                    st.pos_of,
                    st.usage_ns,
                    st.usage_s,
                    st.free,
                    st.plist,
                    st.d_ns,
                    st.stamp_ns,
                    st.t_ns,
                    st.d_s,
                    st.stamp_s,
                    st.t_s,
                    st.tld,
                    st.tlct,
                    st.istate,
                    st.fstate,
                )
                if status != 2:
                    break
                st.grow()  # candidates before b were rejected: decide again from b
                res = _slice_batch(res, b)
                off += b
            consumed = bsize if status == 0 else off + b + 1
            self.planner.update(bsize, consumed, status == 1, wall, res[7])
            pos += consumed
            if status == 1:
                self.log.append((INSERT, int(s), st.sbits[s].copy(), int(st.skey[s])))
                if self.prune and npl:
                    nxt = max(1, min(self.planner.size, n - pos)) if pos < n else 0
                    ahead = self._prune(npl, (cbits[pos : pos + nxt], keys[pos : pos + nxt]) if nxt else None)
                    if ahead is not None:
                        ahead = (pos, nxt) + ahead

    def _prune(self, npl: int, following: tuple | None) -> tuple | None:
        """Post-acceptance pruning through round trips: every pending removal is evaluated at
        once and decided in order; the rest is evaluated again whenever the table changed.

        Each round also evaluates the ``following`` candidates against the same table: if the
        round changes nothing (every pending removal rejected) that evaluation is still valid
        and is returned as ``(result, seconds)``, which saves the next round trip."""
        st = self.state
        while npl > 0:
            pend = st.plist[:npl].copy()
            live = pend[st.usage_ns[pend] > 0].astype(np.int64)
            slot_row = np.full(st.cap, -1, np.int64)
            requests = [(1, _NO_BITS, _NO_SLOTS, live)] if live.size else []
            if following is not None:
                requests.append((0, following[0], following[1], _NO_SLOTS))
            t = time.perf_counter()
            out = self.trip(requests) if requests else []
            wall = time.perf_counter() - t
            res = out[0] if live.size else _EMPTY
            slot_row[live] = np.arange(live.size)
            if self._events.size < npl + 1:
                self._events = np.zeros(2 * npl + 1, np.int64)
            before = npl
            npl, ne = X.decide_removals(
                st.plist,
                npl,
                slot_row,
                *res[1:7],
                st.st_s,
                st.flog,
                st.lg,
                st.cst,
                st.order,
                st.pos_of,
                st.usage_ns,
                st.usage_s,
                st.free,
                st.pdec,
                st.d_ns,
                st.stamp_ns,
                st.t_ns,
                st.d_s,
                st.stamp_s,
                st.t_s,
                st.tld,
                st.tlct,
                st.istate,
                st.fstate,
                self._events,
            )
            for e in self._events[:ne].tolist():
                self.log.append((ZAP, -1 - e, None, 0) if e < 0 else (REMOVE, e, None, 0))
            if ne == 0 and npl == 0 and following is not None:
                return out[-1], wall
            if npl == before and ne == 0:  # pragma: no cover - every round decides at least one element
                raise PPDMError("internal error: a pruning round decided nothing")
        return None


_NO_SLOTS = np.zeros(0, np.int64)
_NO_BITS = np.zeros((0, 1), np.uint64)
_EMPTY = (
    np.zeros(0, np.int64),
    np.zeros(1, np.int64),
    np.zeros(0, np.int64),
    np.zeros(0, np.int64),
    np.zeros(1, np.int64),
    np.zeros(0, np.int64),
    np.zeros(0, np.int64),
    0.0,
    0.0,
)


def _slice_batch(res: tuple, b: int) -> tuple:
    """A batch's usage changes from proposal ``b`` on."""
    own, pn, inn, vn, ps, is_, vs, sec, app = res
    return (own[b:], pn[b:] - pn[b], inn[pn[b] :], vn[pn[b] :], ps[b:] - ps[b], is_[ps[b] :], vs[ps[b] :], sec, app)


# ----------------------------------------------------------------------------- candidates for the distributed search
def _void(bits: np.ndarray) -> np.ndarray:
    b = np.ascontiguousarray(bits)
    return b.view(np.dtype((np.void, b.dtype.itemsize * b.shape[1]))).ravel()


def _closed_mask(levels: dict[int, tuple[np.ndarray, np.ndarray]]) -> dict[int, np.ndarray]:
    """Per level, which itemsets are closed: no superset one item longer has the same support
    (a superset with equal support is frequent too, so the next level is enough)."""
    out = {}
    for k, (bits, cnt) in levels.items():
        keep = np.ones(cnt.size, bool)
        nxt = levels.get(k + 1)
        if nxt is not None and nxt[1].size and cnt.size:
            vb = _void(bits)
            order = np.argsort(vb)
            sorted_v = vb[order]
            nbits, ncnt = nxt
            w = nbits.shape[1]
            for k2 in range(w):
                col = nbits[:, k2]
                for b in range(64):
                    has = (col >> np.uint64(b)) & np.uint64(1)
                    rows = np.nonzero(has)[0]
                    if rows.size == 0:
                        continue
                    sub = nbits[rows].copy()
                    sub[:, k2] &= ~(np.uint64(1) << np.uint64(b))
                    sv = _void(sub)
                    pos = np.searchsorted(sorted_v, sv)
                    pos = np.minimum(pos, sorted_v.size - 1)
                    hit = sorted_v[pos] == sv
                    idx = order[pos[hit]]
                    same = cnt[idx] == ncnt[rows[hit]]
                    keep[idx[same]] = False
        out[k] = keep
    return out


def apriori_candidates(
    tx: Any,
    alphabet: Alphabet,
    column_new: np.ndarray,
    min_support: int,
    *,
    closed: bool,
    max_len: int | None,
    exclude: Sequence[Sequence[int]],
    max_candidates: int | None,
    memory: int | None,
    spill_dir: str | None,
    client: Any = None,
    progress: bool = False,
) -> CandidateStream:
    """The candidates of :func:`..candidates.mine_candidates`, mined on the cluster by the exact
    distributed Apriori (:func:`ppdm_dask.mining.apriori`): every frequent itemset (closed ones
    kept with ``closed``), renumbered, filtered and streamed in the standard candidate order."""
    from ..mining import apriori
    from ..mining.guards import DEFAULT_MAX_ITEMSETS
    from .candidates import DEFAULT_CANDIDATE_MEMORY, Spiller

    cap = DEFAULT_MAX_ITEMSETS if max_candidates is None else int(max_candidates)
    # closed sets of length <= max_len need the level above to be recognised
    ml = None if max_len is None else int(max_len) + (1 if closed else 0)
    fi = apriori(
        tx, int(min_support), max_length=ml, max_itemsets=cap, max_candidates=max_candidates, client=client, progress=progress
    )
    w = max(1, (alphabet.n_items + 63) // 64)
    ident = np.arange(alphabet.n_items, dtype=np.int64)
    levels = {}
    for k, (ids, counts) in fi.levels.items():
        new = column_new[ids.astype(np.int64)]
        off = np.arange(0, new.size + 1, max(k, 1), dtype=np.int64)[: ids.shape[0] + 1]
        levels[k] = (pack_rows(off, new.ravel(), ident, alphabet.n_items), counts.astype(np.int64))
    keep = _closed_mask(levels) if closed else {k: np.ones(c.size, bool) for k, (_, c) in levels.items()}
    ex_bits = exclusion_bits(alphabet, exclude)
    spiller = Spiller(w, DEFAULT_CANDIDATE_MEMORY if memory is None else int(memory), spill_dir)
    t = time.perf_counter()
    try:
        for k in sorted(levels):
            if k < 2 or (max_len is not None and k > max_len):
                continue
            bits, cnt = levels[k]
            m = keep[k].copy()
            for eb in ex_bits:
                m &= ~np.all((bits & eb) == eb, axis=1)
            spiller.add(bits[m], cnt[m])
        return spiller.stream(t)
    except BaseException:
        spiller.close()
        raise


def _partitions(tx: Any) -> list:
    return list(tx.blocks.to_delayed().ravel())


def krimp_distributed(
    db: Any,
    candidates: Any = None,
    *,
    min_support: int | float | None = None,
    closed: bool = False,
    prune: bool = True,
    max_len: int | None = None,
    exclude: Sequence[Sequence[int]] = (),
    client: Any = None,
    miner: str = "auto",
    batch_size: int | None = None,
    progress: bool | Callable[[int, int], Any] = False,
    max_candidates: int | None = DEFAULT_MAX_CANDIDATES,
    memory: int | None = None,
    spill_dir: str | None = None,
    index_memory: int | None = None,
) -> Any:
    """KRIMP with the cover kept on the workers (see the module docstring); the same code table
    as :func:`ppdm_dask.krimp.krimp` for any partitioning.

    Parameters
    ----------
    db : TransactionArray
        One cover block per partition (repartition first to choose their number).
    candidates : Candidates or sequence of itemsets, optional
        As in :func:`~ppdm_dask.krimp.krimp`; plain itemsets get their supports counted on the
        cluster. When omitted they are mined with ``min_support`` (an absolute count, or a
        fraction of the rows), ``closed``, ``max_len``, ``exclude``.
    client : distributed.Client, optional
        Blocks on this client's workers (default: the active client). Without a distributed
        client the blocks live in this process and a thread pool evaluates them.
    miner : {"auto", "apriori", "driver"}
        ``"apriori"``: every frequent itemset counted on the cluster (closed ones filtered on the
        driver) — nothing but itemsets reaches the driver, but dense data at low support has far
        more frequent than closed itemsets; ``"driver"``: the rows' bitsets are collected on the
        driver for the depth-first closed/all miner of the single-machine search (freed before the
        search); ``"auto"``: the driver miner when those bitsets take at most 1 GiB.
    batch_size : int, optional
        Candidates per round trip (default: chosen by :class:`BatchPlanner`'s cost model).
    index_memory : int, optional
        Bytes the blocks of one worker may spend on their row indexes (:mod:`._cover`), split
        over the blocks by rows; default a quarter of the worker's memory limit (of this
        machine's memory for blocks in this process).

    Returns
    -------
    KrimpResult
        ``stats`` adds ``round_trips``, ``proposals`` (evaluated candidates and removals),
        ``seconds_blocks`` (evaluation on the slowest block, summed over round trips), the
        planner's final estimates and where the blocks ran.
    """
    from ..data.transactions import TransactionArray
    from ..mining import min_count_of
    from ..progress import compute
    from ._kernels import as_database
    from .search import KrimpResult, progress_callback

    if not isinstance(db, TransactionArray):
        raise InvalidParameter("the distributed search needs a TransactionArray (ppdm_dask.read(...) or TransactionArray.from_*)")
    if miner not in ("auto", "apriori", "driver"):
        raise InvalidParameter(f"miner must be 'auto', 'apriori' or 'driver', got {miner!r}")
    v = validate(MINER_CONSTRAINTS, {"batch_size": batch_size, "max_len": max_len})
    batch_size, max_len = v["batch_size"], v["max_len"]
    exclude = tuple(tuple(x) for x in (exclude or ()))
    active = _client(client)
    ckw = {"client": active, "progress": False}
    n_rows = db.n_transactions
    if n_rows == 0:
        raise DataFormatError("the database is empty (no rows or no items)")
    counts = db.item_supports(**ckw)
    alphabet = Alphabet.from_counts(np.asarray(db.vocabulary.labels), counts, n_rows)
    if alphabet.n_items == 0:
        raise DataFormatError("the database is empty (no rows or no items)")
    labels = np.asarray(db.vocabulary.labels)
    column_new = np.full(labels.size, -1, np.int64)
    present = counts > 0
    column_new[present] = alphabet.new_ids[np.searchsorted(alphabet.labels, labels[present].astype(np.int64))]
    (lengths,) = compute(db.row_lengths().max(), **ckw)
    longest = int(lengths)
    ms = None if min_support is None else min_count_of(min_support, n_rows)
    t0 = time.perf_counter()
    if candidates is None:
        if ms is None:
            raise InvalidParameter("give either candidates or min_support")
        w = max(1, (alphabet.n_items + 63) // 64)
        use_driver = miner == "driver" or (miner == "auto" and 4 * n_rows * w * 8 <= 1 << 30)
        if use_driver:
            from .candidates import candidate_stream

            d = as_database(db)
            stream = candidate_stream(
                d,
                ms,
                closed=closed,
                max_len=max_len,
                exclude=exclude,
                max_candidates=max_candidates,
                memory=memory,
                spill_dir=spill_dir,
            )
            del d
        else:
            stream = apriori_candidates(
                db,
                alphabet,
                column_new,
                ms,
                closed=closed,
                max_len=max_len,
                exclude=exclude,
                max_candidates=max_candidates,
                memory=memory,
                spill_dir=spill_dir,
                client=active,
            )
    else:
        stream = _given_stream(db, alphabet, column_new, candidates, ms, max_len, exclude, active)
    t1 = time.perf_counter()
    if active is None:
        import dask

        parts = dask.compute(*_partitions(db))
        blocks: Any = LocalBlocks(parts, column_new, alphabet.n_items, longest, index_memory)
    else:
        blocks = ClusterBlocks(active, db, column_new, alphabet.n_items, longest, index_memory)
    planner = BatchPlanner(batch_size)
    driver = _Driver(blocks, alphabet, prune, planner)
    callback = progress_callback(progress, driver.state)
    t2 = time.perf_counter()
    try:
        with stream:
            done = 0
            for cbits, csup in stream.chunks(1 << 16):
                driver.search(cbits, csup, done)
                done += cbits.shape[0]
                if callback is not None:
                    callback(done, stream.n_candidates)
            mined = stream.seconds
    finally:
        blocks.close()
    t3 = time.perf_counter()
    st = driver.state
    ct = st.code_table(
        alphabet,
        {
            "candidates": "mined" if candidates is None else "given",
            "min_support": ms,
            "closed": bool(closed),
            "prune": bool(prune),
            "max_len": max_len,
            "exclude": [[int(i) for i in x] for x in exclude],
        },
    )
    stats = {
        "best": float(st.fstate[0]),
        "n_exact_evaluations": int(st.istate[6]),
        "n_evaluated": int(st.istate[7]),
        "n_prune_trials": int(st.istate[10]),
        "max_error_over_margin": float(st.fstate[4]),
        "spilled_runs": int(stream.n_runs),
        "round_trips": driver.trips,
        "proposals": driver.proposals,
        "seconds_blocks": driver.seconds_blocks,
        "seconds_applying": driver.seconds_apply,
        "seconds_round_trips": driver.seconds_trips,
        "seconds_setup": t2 - t1,
        "planner": planner.summary(),
        "blocks": blocks.where,
        "blocks_replayed": blocks.rebuilt,
    }
    return KrimpResult(
        code_table=ct,
        n_candidates=int(stream.n_candidates),
        n_accepted=int(st.istate[2]),
        n_pruned=int(st.istate[3]),
        seconds_mining=(t1 - t0) if candidates is None else mined,
        seconds_search=t3 - t2,
        prune=bool(prune),
        min_support=ms,
        closed=bool(closed),
        stats=stats,
    )


def _client(client: Any) -> Any:
    """The distributed client to use, or None (blocks in this process)."""
    if client is not None:
        return client
    from ..progress import pick_client

    return pick_client(None, {})


def _given_stream(
    db: Any,
    alphabet: Alphabet,
    column_new: np.ndarray,
    candidates: Any,
    ms: int | None,
    max_len: int | None,
    exclude: Sequence[Sequence[int]],
    client: Any,
) -> CandidateStream:
    """Given candidates in the standard order of the whole database (supports counted on the cluster
    for plain itemsets)."""
    from .candidates import Candidates, standard_order

    if isinstance(candidates, Candidates):
        sets = [np.asarray(x, np.int64) for x in candidates]
        sup = np.asarray(candidates.supports, np.int64)
        keep_order = True
    else:
        sets = [np.unique(np.asarray(list(x), np.int64).ravel()) for x in candidates]
        sup = None
        keep_order = False
    w = max(1, (alphabet.n_items + 63) // 64)
    bits = np.zeros((len(sets), w), np.uint64)
    lens = np.zeros(len(sets), np.int64)
    for j, x in enumerate(sets):
        pos = np.searchsorted(alphabet.labels, x)
        if x.size and (np.any(pos >= alphabet.n_items) or np.any(alphabet.labels[np.minimum(pos, alphabet.n_items - 1)] != x)):
            from ..errors import ItemIdError

            raise ItemIdError(f"items not in the database alphabet: {x[:5].tolist()}")
        for r in alphabet.new_ids[pos].tolist():
            bits[j, r >> 6] |= np.uint64(1) << np.uint64(r & 63)
        lens[j] = x.size
    if sup is None:
        sup = count_supports(db, column_new, alphabet.n_items, bits, client)
    keep = lens >= 2
    if ms is not None:
        keep &= sup >= ms
    if max_len is not None:
        keep &= lens <= max_len
    for eb in exclusion_bits(alphabet, exclude):
        keep &= ~np.all((bits & eb) == eb, axis=1)
    perm = np.nonzero(keep)[0] if keep_order else standard_order(bits, sup)
    if not keep_order:
        perm = perm[keep[perm]]
    return CandidateStream.given(bits[perm], sup[perm])


def _block_supports(rows: Any, column_new: np.ndarray, n_items: int, bits: np.ndarray) -> np.ndarray:
    import scipy.sparse as sp

    from ._kernels import pack_columns
    from .search import bitset_supports

    m = sp.csr_array(rows)
    tid = pack_columns(
        m.indptr.astype(np.int64), column_new[m.indices.astype(np.int64)], np.arange(n_items, dtype=np.int64), n_items
    )
    return bitset_supports(bits, tid)


def count_supports(db: Any, column_new: np.ndarray, n_items: int, bits: np.ndarray, client: Any) -> np.ndarray:
    """Support of every bitset (new ids) in ``db``: counted per partition, summed in a tree."""
    import dask

    from ..graph import tree_reduce
    from ..progress import compute

    parts = [dask.delayed(_block_supports, pure=True)(b, column_new, n_items, bits) for b in _partitions(db)]
    (out,) = compute(tree_reduce(parts, _sum_arrays), client=client, progress=False)
    return np.asarray(out, np.int64)


def _sum_arrays(parts: list[np.ndarray]) -> np.ndarray:
    return np.sum(parts, axis=0, dtype=np.int64)
