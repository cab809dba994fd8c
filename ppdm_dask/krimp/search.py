"""KRIMP search (docs/krimp.md#krimp-code-tables-and-the-search): strict acceptance, optional
post-acceptance ("pop") pruning, on one machine.

Layers
------
* :mod:`._cover` — the incremental cover of a block of rows (evaluate / commit an insertion or
  a removal); :mod:`._decide` — sizes, accept/reject and the pruning list, on summed usage
  changes. The distributed search (:mod:`.distributed`) uses the same two.
* here — :func:`_search_chunk`, one compiled loop over a chunk of candidates with the whole
  database as one block, and :func:`krimp`, the driver: candidates arrive in chunks in the
  standard candidate order (:func:`.candidates.candidate_stream`, spilled to disk and merged when
  they do not fit the memory budget), and the state grows with the code table, not with the
  number of candidates.

Rows: the cover holds the rows restricted to the items the candidates can hold, those with ≥ 2 of
them, identical ones merged with their number as weight (:class:`SingleBlock`,
:func:`._cover.merged_rows`) — the same code table on fewer rows.

Memory (driver): the database twice as bitsets (rows × ⌈items/64⌉ and items × ⌈rows/64⌉ words),
the covers (rows × longest-row/2 int32 slots), one chunk of candidates, and per code-table slot
a few words. A slot is reused after its element is pruned.

Exactness: every accept/reject is decided by :func:`._decide.decide` bit for bit as the literal
computation of docs/krimp.md#exact-sizes-and-decisions; a candidate with usage 0 changes nothing
and is rejected without any size computation (equal size ⇒ reject). stdlen(X) is the sum of the
item stdlens in ascending new-id order, as :meth:`CodeTable.sizes` computes it, so the table's
``sizes()['total']`` equals the search's final best size bit for bit.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np

from ..constraints import validate
from ..errors import InvalidParameter
from . import _cover as C
from . import _decide as X
from ._kernels import Database, as_database, pack_rows
from .candidates import (
    DEFAULT_MAX_CANDIDATES,
    MINER_CONSTRAINTS,
    Candidates,
    CandidateStream,
    candidate_stream,
    exclusion_bits,
    standard_order,
)
from .codetable import CodeTable

__all__ = ["krimp", "KrimpResult", "progress_callback", "bitset_supports"]

#: Candidates handed to the compiled loop at a time (progress granularity, chunk memory).
CHUNK = 1 << 16


@numba.njit(cache=True, nogil=True)
def bitset_supports(bits, tid_bits):
    """Support of every bitset row of ``bits`` (AND of tid bitsets + popcount)."""
    out = np.zeros(bits.shape[0], np.int64)
    acc = np.empty(tid_bits.shape[1], np.uint64)
    for k in range(bits.shape[0]):
        C.rows_with(bits[k], tid_bits, acc)
        s = 0
        for w in range(acc.size):
            s += C.popcount(acc[w])
        out[k] = s
    return out


# ----------------------------------------------------------------------------- state
class TableState:
    """The code table and the driver's decision state, in slots (see :mod:`._cover`).

    ``istate``/``fstate`` as in :mod:`._decide`, plus istate[8] = free slots on the stack
    ``free``, istate[9] = next never-used slot, istate[10] = removals tried by pruning. Arrays indexed by slot grow by doubling.
    """

    # the arrays indexed by slot, set by C.resize_slots (declared here for the type checker)
    skey: np.ndarray
    scanon: np.ndarray
    lkey: np.ndarray
    ssup: np.ndarray
    usage_ns: np.ndarray
    order: np.ndarray
    pos_of: np.ndarray
    free: np.ndarray
    idx: np.ndarray
    plist: np.ndarray
    pdec: np.ndarray
    d_ns: np.ndarray
    stamp_ns: np.ndarray
    t_ns: np.ndarray
    sfx: np.ndarray
    cst: np.ndarray
    sbits: np.ndarray
    lbits: np.ndarray
    surv: np.ndarray

    def __init__(self, n_items: int, n_rows: int, std_lengths_new: np.ndarray, item_usages: np.ndarray, cap: int = 256) -> None:
        self.n_items = int(n_items)
        self.w = max(1, (self.n_items + 63) // 64)
        self.st_s = np.asarray(std_lengths_new, np.float64)
        lg = np.zeros(n_rows + 1)
        lg[1:] = [math.log2(u) for u in range(1, n_rows + 1)]
        self.lg = lg
        self.flog = np.arange(n_rows + 1, dtype=np.float64) * lg
        self.usage_s = np.asarray(item_usages, np.int64).copy()
        self.d_s = np.zeros(self.n_items, np.int64)
        self.stamp_s = np.zeros(self.n_items, np.int64)
        self.t_s = np.zeros(self.n_items, np.int64)
        self.idx_off = np.zeros(self.n_items + 1, np.int64)
        self.icnt = np.zeros(self.n_items, np.int64)
        self.istate = np.zeros(11, np.int64)
        self.fstate = np.zeros(8, np.float64)
        self.cap = 0
        self._alloc(max(16, int(cap)))
        self.istate[1] = int(self.usage_s.sum())
        self.fstate[0] = X.exact_size(
            self.order, 0, -1, self.usage_ns, self.cst, self.usage_s, self.st_s, self.istate[1], self.tld, self.tlct
        )
        X.refresh_accumulators(
            self.order, 0, self.usage_ns, self.cst, self.usage_s, self.st_s, self.flog, self.lg, self.istate, self.fstate
        )

    _SLOT_ARRAYS = (
        "skey",
        "scanon",
        "lkey",
        "ssup",
        "usage_ns",
        "order",
        "pos_of",
        "free",
        "idx",
        "plist",
        "pdec",
        "d_ns",
        "stamp_ns",
        "t_ns",
        "sfx",
    )

    def _alloc(self, cap: int) -> None:
        C.resize_slots(self, cap, self.cap, self.w, self._SLOT_ARRAYS, ("cst",))
        self.tld = np.empty(cap + self.n_items + 1)
        self.tlct = np.empty(cap + self.n_items + 1)
        self.cap = cap

    def grow(self) -> None:
        self._alloc(2 * self.cap)

    @property
    def m(self) -> int:
        return int(self.istate[0])

    def ct(self) -> tuple:
        return (self.sbits, self.skey, self.scanon, self.ssup, self.cst, self.idx, self.idx_off, self.icnt, self.lkey, self.lbits)

    def drv(self) -> tuple:
        return (self.order, self.pos_of, self.usage_ns, self.usage_s, self.free, self.plist, self.pdec)

    def code_table(self, d: Database, parameters: dict) -> CodeTable:
        """The final code table: elements in cover order, original ids, usages, supports."""
        from .candidates import bits_to_items

        ids = self.order[: self.m]
        off, new = bits_to_items(self.sbits[ids], self.n_items)
        labels = d.new_labels
        itemsets = [np.sort(labels[new[off[k] : off[k + 1]]]) for k in range(ids.size)]
        itemsets += [np.array([lab], np.int64) for lab in labels.tolist()]
        return CodeTable(
            itemsets=itemsets,
            usages=np.concatenate([self.usage_ns[ids], self.usage_s]),
            supports=np.concatenate([self.ssup[ids], d.new_frequencies]),
            alphabet=d.labels,
            n_rows=d.n_rows,
            std_lengths=d.std_lengths,
            parameters=parameters,
        )


# ----------------------------------------------------------------------------- the compiled loop
@numba.njit(cache=True, nogil=True)
def _search_chunk(cbits, csup, rank0, start, prune, n_items, st_s, flog, lg, blk, ct, drv, scr, istate, fstate):
    """Try the candidates ``cbits[start:]`` (standard order, global ranks ``rank0 + x``) in turn.

    Returns the index of the first candidate not yet tried: the chunk's length, or earlier when an
    acceptance needs a code-table slot and none is free (the caller grows the state and resumes).
    Holds nothing beyond its arguments.
    """
    rec, rec32, wt, tid_bits, blocked, urows, acc, r = blk
    sbits, skey, scanon, ssup, cst, idx, idx_off, icnt, lkey, lbits = ct
    order, pos_of, usage_ns, usage_s, free, plist, pdec = drv
    d_ns, stamp_ns, t_ns, d_s, stamp_s, t_s, surv, sfx, tld, tlct = scr
    cap = sbits.shape[0]
    for x in range(start, cbits.shape[0]):
        xb = cbits[x]
        kx = C.cover_key(xb, rank0 + x, n_items)
        istate[5] += 1
        epoch = istate[5]
        nx, nt_ns, nt_s = C.insert_change(
            False,
            xb,
            kx,
            -1,
            rec,
            rec32,
            wt,
            tid_bits,
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
            epoch,
        )
        if nx == 0:
            continue  # usage 0: nothing changes, equal size -> reject
        istate[7] += 1
        s = X.free_slot(istate, free, cap)
        if s < 0:
            return x
        cst[s] = C.std_length(xb, st_s)
        nt_ns = C.touch(s, nx, d_ns, stamp_ns, t_ns, nt_ns, epoch)
        m = istate[0]
        if not X.decide(
            False,
            istate,
            fstate,
            order,
            m,
            s,
            usage_ns,
            d_ns,
            t_ns,
            nt_ns,
            cst,
            usage_s,
            d_s,
            t_s,
            nt_s,
            st_s,
            flog,
            lg,
            tld,
            tlct,
        ):
            continue
        # ---- accept X into slot s
        X.occupy(s, xb, kx, csup[x], sbits, skey, scanon, ssup, istate, free)
        C.insert_change(
            True,
            xb,
            kx,
            s,
            rec,
            rec32,
            wt,
            tid_bits,
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
            epoch,
        )
        m = X.place(order, m, skey, s, pos_of)
        istate[0] = m
        C.rebuild_index(order, m, scanon, sbits, skey, n_items, idx, idx_off, icnt, lkey, lbits)
        X.refresh_accumulators(order, m, usage_ns, cst, usage_s, st_s, flog, lg, istate, fstate)
        if not prune:
            continue
        # ---- post-acceptance pruning (docs/krimp.md: the pending list)
        npl = X.pending_after_insert(s, t_ns, d_ns, nt_ns, pos_of, plist)
        while npl > 0:
            y = plist[0]
            for a in range(1, npl):
                plist[a - 1] = plist[a]
            npl -= 1
            m = istate[0]
            if usage_ns[y] == 0:
                X.release(y, order, pos_of, free, istate)
                C.rebuild_index(order, istate[0], scanon, sbits, skey, n_items, idx, idx_off, icnt, lkey, lbits)
                continue
            istate[5] += 1
            istate[10] += 1
            epoch = istate[5]
            na, nt_ns, nt_s = C.remove_change(
                False,
                y,
                rec,
                rec32,
                wt,
                tid_bits,
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
                epoch,
            )
            if not X.decide(
                True,
                istate,
                fstate,
                order,
                m,
                -1,
                usage_ns,
                d_ns,
                t_ns,
                nt_ns,
                cst,
                usage_s,
                d_s,
                t_s,
                nt_s,
                st_s,
                flog,
                lg,
                tld,
                tlct,
            ):
                continue
            C.remove_change(
                True,
                y,
                rec,
                rec32,
                wt,
                tid_bits,
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
                epoch,
            )
            X.release(y, order, pos_of, free, istate)
            m = istate[0]
            C.rebuild_index(order, m, scanon, sbits, skey, n_items, idx, idx_off, icnt, lkey, lbits)
            X.refresh_accumulators(order, m, usage_ns, cst, usage_s, st_s, flog, lg, istate, fstate)
            npl = X.pending_after_remove(y, plist, npl, usage_ns, t_ns, d_ns, nt_ns, pos_of, pdec)
    return cbits.shape[0]


# ----------------------------------------------------------------------------- driver
@dataclass(eq=False)
class KrimpResult:
    """Outcome of :func:`krimp`."""

    code_table: CodeTable
    n_candidates: int
    n_accepted: int
    n_pruned: int
    seconds_mining: float
    seconds_search: float
    prune: bool = True
    min_support: int | None = None
    closed: bool = False
    stats: dict = field(default_factory=dict)

    @property
    def sizes(self) -> dict:
        return self.code_table.sizes()

    def summary(self) -> dict:
        """The figures of the run as a dict (parameters, counts, sizes in bits, seconds)."""
        return {
            "closed": self.closed,
            "min_support": self.min_support,
            "prune": self.prune,
            "n_candidates": int(self.n_candidates),
            "n_accepted": int(self.n_accepted),
            "n_pruned": int(self.n_pruned),
            "code_table_itemsets": int(self.code_table.n_nontrivial),
            "sizes": self.code_table.sizes(),
            "seconds_mining": float(self.seconds_mining),
            "seconds_search": float(self.seconds_search),
        }

    def __str__(self) -> str:
        s = self.code_table.sizes()
        ms = "given" if self.min_support is None else str(self.min_support)
        return "\n".join(
            [
                f"KRIMP ({'closed' if self.closed else 'all'} candidates, min_support {ms}, "
                f"prune={'on' if self.prune else 'off'})",
                f"  candidates      {self.n_candidates:,}   accepted {self.n_accepted:,}   pruned {self.n_pruned:,}",
                f"  |CT \\ I|        {self.code_table.n_nontrivial:,}   used singletons {s['n_used_singletons']}",
                f"  L(D|CT)         {s['L_D_CT']:,.1f} bits",
                f"  L(CT|D)         {s['L_CT_D']:,.1f} bits",
                f"  L(D,CT)         {s['total']:,.1f} bits   (standard code table {s['total_ST']:,.1f})",
                f"  L%              {s['L_percent']:.2f}",
                f"  time            mining {self.seconds_mining:.2f} s, search {self.seconds_search:.2f} s",
            ]
        )

    def __repr__(self) -> str:
        return (
            f"KrimpResult(|CT\\I|={self.code_table.n_nontrivial}, n_candidates={self.n_candidates}, "
            f"n_accepted={self.n_accepted}, n_pruned={self.n_pruned})"
        )


def _normalise_candidates(
    d: Database,
    candidates: Any,
    min_support: int | None,
    max_len: int | None,
    exclude: Sequence[Sequence[int]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Given candidates → (offsets, new ids ascending per set, supports), filtered and ordered."""
    if isinstance(candidates, Candidates):
        off = candidates.offsets.astype(np.int64)
        sup = candidates.supports.astype(np.int64)
        if candidates.database is d and candidates.new_items is not None:
            new = candidates.new_items.astype(np.int64)
        else:
            new = d.to_new(candidates.items)
            rowid = np.repeat(np.arange(off.size - 1, dtype=np.int64), np.diff(off))
            new = new[np.lexsort((new, rowid))]
            # supports in this database (they decide nothing in the search, but are reported)
            sup = bitset_supports(pack_rows(off, new, np.arange(d.n_items, dtype=np.int64), d.n_items), d.tid_bits)
        keep_order = True
    else:
        sets = [np.unique(np.asarray(list(x), dtype=np.int64).ravel()) for x in candidates]
        lens = np.array([s.size for s in sets], dtype=np.int64)
        off = np.zeros(len(sets) + 1, np.int64)
        np.cumsum(lens, out=off[1:])
        flat = np.concatenate(sets) if sets else np.zeros(0, np.int64)
        new = d.to_new(flat)
        rowid = np.repeat(np.arange(len(sets), dtype=np.int64), lens)
        new = new[np.lexsort((new, rowid))]
        sup = bitset_supports(pack_rows(off, new, np.arange(d.n_items, dtype=np.int64), d.n_items), d.tid_bits)
        keep_order = False
    n = off.size - 1
    lens = np.diff(off)
    keep = lens >= 2
    if min_support is not None:
        keep &= sup >= min_support
    if max_len is not None:
        keep &= lens <= max_len
    bits = pack_rows(off, new, np.arange(d.n_items, dtype=np.int64), d.n_items)
    if exclude:
        ex = exclusion_bits(d, exclude)
        for e in ex:
            keep &= ~np.all((bits & e) == e, axis=1)
    if not keep_order:
        # standard candidate order in this database
        perm = standard_order(bits, sup, d.n_items)
        perm = perm[keep[perm]]
    else:
        perm = np.nonzero(keep)[0]
    if perm.size != n or not np.array_equal(perm, np.arange(n)):
        lens_k = lens[perm]
        off2 = np.zeros(perm.size + 1, np.int64)
        np.cumsum(lens_k, out=off2[1:])
        idx = np.repeat(off[:-1][perm], lens_k) + np.arange(int(lens_k.sum())) - np.repeat(off2[:-1], lens_k)
        new = new[idx]
        sup = sup[perm]
        off = off2
    return off, new, sup


def _given_chunks(
    d: Database, candidates: Any, min_support: int | None, max_len: int | None, exclude: Sequence[Sequence[int]]
) -> tuple[np.ndarray, np.ndarray]:
    """Given candidates as (bitsets in new ids, supports), filtered and in order."""
    off, new, sup = _normalise_candidates(d, candidates, min_support, max_len, exclude)
    bits = pack_rows(off, new, np.arange(d.n_items, dtype=np.int64), d.n_items)
    return bits, sup


class SingleBlock:
    """The whole database as one block of the cover (:mod:`._cover`), with its scratch: the
    rows restricted to ``items`` (a bitset of the items the candidates hold; default all), those
    with ≥ 2 of them, identical ones merged with their number as weight
    (:func:`._cover.merged_rows`: the same code table, on far fewer rows when the candidates'
    items repeat — Adult at 20 % support: 48,842 rows, 1,386 distinct on its frequent items)."""

    def __init__(self, d: Database, index_memory: int, cap: int, items: np.ndarray | None = None) -> None:
        if items is None:
            items = np.full(d.n_words, ~np.uint64(0), np.uint64)
        row_bits, self.wt, self.tid_bits = C.merged_rows(d.row_bits, items, d.n_items)
        longest = int(np.bitwise_count(row_bits).sum(axis=1).max())
        self.rec, self.rec32, self.blocked, self.budget = C.block_state(row_bits, d.n_items, longest, index_memory)
        self.n_rows = row_bits.shape[0]
        self.urows = C.usage_rows(cap, self.n_rows, self.budget)
        self.acc = np.zeros(self.tid_bits.shape[1], np.uint64)
        self.r = np.zeros(d.n_words, np.uint64)

    def grow(self, cap: int) -> None:
        self.urows = C.grow_usage_rows(self.urows, cap, self.n_rows, self.budget)

    def blk(self) -> tuple:
        return (self.rec, self.rec32, self.wt, self.tid_bits, self.blocked, self.urows, self.acc, self.r)


def candidate_items(d: Database, min_support: int | None, given: np.ndarray | None) -> np.ndarray:
    """Bitset (new ids) of the items candidates can hold: the union of the ``given`` candidates'
    bitsets, else the items of frequency ≥ ``min_support`` (every mined candidate is frequent)."""
    if given is not None:
        return np.bitwise_or.reduce(given, axis=0) if given.shape[0] else np.zeros(d.n_words, np.uint64)
    mask = np.zeros(d.n_words, np.uint64)
    for r in np.flatnonzero(d.new_frequencies >= (min_support or 1)).tolist():
        mask[r >> 6] |= np.uint64(1) << np.uint64(r & 63)
    return mask


def krimp(
    db: Any,
    candidates: Candidates | Sequence[Sequence[int]] | None = None,
    *,
    min_support: int | None = None,
    closed: bool = False,
    prune: bool = True,
    max_len: int | None = None,
    exclude: Sequence[Sequence[int]] = (),
    progress: bool | Callable[[int, int], Any] = False,
    max_candidates: int | None = DEFAULT_MAX_CANDIDATES,
    memory: int | None = None,
    spill_dir: str | None = None,
    index_memory: int | None = None,
    distributed: bool = False,
    client: Any = None,
    batch_size: int | None = None,
) -> KrimpResult:
    """Run KRIMP (docs/krimp.md#krimp-code-tables-and-the-search) and return the code table.

    Parameters
    ----------
    db : TransactionArray, scipy sparse matrix/array, Database, or iterable of item-id lists
        The database (original integer item ids).
    candidates : Candidates or sequence of itemsets, optional
        A :class:`Candidates` object is used in its order (the standard candidate order when it
        comes from :func:`mine_candidates`); a plain sequence of itemsets is put into the
        standard candidate order of ``db``. When omitted, candidates are mined from ``db`` with
        ``min_support``, ``closed``, ``max_len`` and ``exclude`` and streamed to the search in
        the standard order. With given candidates those options filter them.
    prune : bool
        Post-acceptance pruning (default, the authors' default); ``False`` as in the paper (docs/krimp.md#clarification-pruning).
    progress : bool or callable(done, total)
        A progress line on stderr, or a callback.
    max_candidates : int or None
        Bound on the mined candidates: a clear :class:`~ppdm_dask.errors.ResultTooLargeError`
        as soon as the miner finds more (the search would run for very long).
    memory : int, optional
        Bytes the mined candidates may take in memory (default:
        :data:`~ppdm_dask.krimp.candidates.DEFAULT_CANDIDATE_MEMORY`); beyond it they are
        written to sorted runs in ``spill_dir`` (default: the system's temporary folder) and
        merged back in the standard order (docs/krimp.md#memory).
    index_memory : int, optional
        Bytes the two row indexes of the cover may take together (with the distributed search: on
        each worker); default a quarter of the memory where the cover lives (this machine, or each
        worker's memory limit). An index that does not fit is not built and the search looks at
        more rows instead — the same code table (docs/krimp.md#memory).
    distributed : bool
        Keep the cover on the cluster's workers, one block per partition of the TransactionArray
        ``db``, and decide on the driver (:func:`~ppdm_dask.krimp.distributed.krimp_distributed`,
        docs/krimp.md#distributed-search): the same code table, for data whose rows do not fit
        one machine. ``client`` (default: the active one; without a distributed client the
        blocks stay in this process) and ``batch_size`` (default: chosen by a cost model) go to
        it.
    """
    if distributed:
        from .distributed import krimp_distributed

        return krimp_distributed(
            db,
            candidates,
            min_support=min_support,
            closed=closed,
            prune=prune,
            max_len=max_len,
            exclude=exclude,
            client=client,
            batch_size=batch_size,
            progress=progress,
            max_candidates=max_candidates,
            memory=memory,
            spill_dir=spill_dir,
            index_memory=index_memory,
        )
    d = as_database(db)
    v = validate(
        {**MINER_CONSTRAINTS, "min_support": [None, *MINER_CONSTRAINTS["min_support"]]},
        {"min_support": min_support, "max_len": max_len, "index_memory": index_memory},
    )
    min_support, max_len = v["min_support"], v["max_len"]
    if exclude is None:
        exclude = ()
    if candidates is None:
        if min_support is None:
            raise InvalidParameter("give either candidates or min_support")
        stream = candidate_stream(
            d,
            min_support,
            closed=closed,
            max_len=max_len,
            exclude=exclude,
            max_candidates=max_candidates,
            memory=memory,
            spill_dir=spill_dir,
        )
    else:
        stream = CandidateStream.given(*_given_chunks(d, candidates, min_support, max_len, exclude))
    items = candidate_items(d, min_support, stream._bits if candidates is not None else None)
    with stream:
        nc = stream.n_candidates
        state = TableState(d.n_items, d.n_rows, d.std_lengths[d.order], d.new_frequencies)
        budget = C.index_budget(v["index_memory"], None)
        block = SingleBlock(d, budget, state.cap, items)
        callback = progress_callback(progress, state)
        searched = 0.0
        done = 0
        for cbits, csup in stream.chunks(CHUNK):
            ts = time.perf_counter()
            x = 0
            while x < cbits.shape[0]:
                x = _search_chunk(
                    cbits,
                    csup,
                    done,
                    x,
                    bool(prune),
                    d.n_items,
                    state.st_s,
                    state.flog,
                    state.lg,
                    block.blk(),
                    state.ct(),
                    state.drv(),
                    _scratch(state),
                    state.istate,
                    state.fstate,
                )
                if x < cbits.shape[0]:
                    state.grow()
                    block.grow(state.cap)
            done += cbits.shape[0]
            searched += time.perf_counter() - ts
            if callback is not None:
                callback(done, nc)
        seconds_mining = stream.seconds
    ct = state.code_table(
        d,
        {
            "candidates": "mined" if candidates is None else "given",
            "min_support": min_support,
            "closed": bool(closed),
            "prune": bool(prune),
            "max_len": max_len,
            "exclude": [[int(i) for i in x] for x in exclude],
        },
    )
    istate, fstate = state.istate, state.fstate
    stats = {
        "best": float(fstate[0]),
        "n_exact_evaluations": int(istate[6]),
        "n_evaluated": int(istate[7]),
        "n_prune_trials": int(istate[10]),
        "max_error_over_margin": float(fstate[4]),
        "spilled_runs": int(stream.n_runs),
    }
    return KrimpResult(
        code_table=ct,
        n_candidates=int(nc),
        n_accepted=int(istate[2]),
        n_pruned=int(istate[3]),
        seconds_mining=seconds_mining,
        seconds_search=searched,
        prune=bool(prune),
        min_support=min_support,
        closed=bool(closed),
        stats=stats,
    )


def _scratch(state: TableState) -> tuple:
    return (
        state.d_ns,
        state.stamp_ns,
        state.t_ns,
        state.d_s,
        state.stamp_s,
        state.t_s,
        state.surv,
        state.sfx,
        state.tld,
        state.tlct,
    )


def progress_callback(progress: bool | Callable[[int, int], Any], state: TableState) -> Callable[[int, int], Any] | None:
    """The candidates' progress callback: ``progress`` itself when callable, a reporter on
    stderr showing the code table's size when True, else None."""
    if callable(progress):
        return progress
    if not progress:
        return None
    from ..progress import step_reporter

    report = step_reporter("KRIMP candidates")

    def callback(done: int, total: int) -> None:
        report(done, total, f"|CT\\I| = {state.m:,}")

    return callback
