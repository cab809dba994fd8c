"""Re-identification risk of transaction data: the k^m audit curve and the share of unique
baskets (docs/mining.md#report-figures-the-km-audit-curve-and-unique-baskets).

* :func:`km_audit` — for m = 1..M, the number of itemsets of at most m items that occur in
  the data but in fewer than k transactions (support in [1, k)). These are exactly the itemsets
  that break k^m-anonymity: an adversary who knows m items of a person's basket is left with
  fewer than k candidate records. A k^m-anonymous release has 0 up to its m.
* :func:`unique_baskets` — the share of records whose exact item set occurs once.
* :func:`singled_out` — the records that hold an itemset of a given size no other record holds
  (what an adversary who knows m + 1 items of a k^m-anonymous release can still single out),
  exact or on a stated sample.

Both are exact integer counts, independent of the partitioning. Counting every itemset of up to
M items is exponential in the basket length, so the audit prices itself first (one cheap pass:
Σ_rows Σ_{j<=m} C(len, j) per m) and lowers M to the largest m within ``max_subsets`` (and
within the 64-bit key packing), saying so in :attr:`KmAudit.note`.

Distribution: every block counts its itemsets (a vectorised enumeration of the subsets of its
rows, grouped by row length) and splits the counts into hash buckets; each bucket is merged on the workers across all
blocks and reduced to a tally of ``M × (1 + len(ks))`` integers; only the tallies reach the
driver (no table of all itemsets is ever gathered).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..constraints import Interval, check, validate
from ..errors import InvalidParameter

__all__ = [
    "KmAudit",
    "km_audit",
    "unique_baskets",
    "singled_out",
    "gather_rows",
    "take_rows",
    "DEFAULT_MAX_SUBSETS",
    "MAX_AUDIT_M",
]

#: Bound on the itemset occurrences the audit may enumerate (Σ_rows Σ_{j<=M} C(len, j)).
DEFAULT_MAX_SUBSETS = 50_000_000
#: Largest M the audit ever counts.
MAX_AUDIT_M = 6
#: Largest number of hash buckets (one merge chain and one tally per bucket).
MAX_BUCKETS = 16


@dataclass(frozen=True)
class KmAudit:
    """Result of :func:`km_audit`.

    Attributes
    ----------
    ks : tuple of int
        The k values audited.
    m : numpy.ndarray
        ``1..M`` (M the audited maximum, possibly lowered, see ``note``).
    rare : dict
        ``k -> int64 array``: itemsets of at most ``m[i]`` items with support in [1, k).
    distinct : numpy.ndarray
        Distinct itemsets of at most ``m[i]`` items that occur.
    requested_m : int
    work : numpy.ndarray
        Itemset occurrences enumerated for each m (the cost estimate used by the guard).
    note : str
        Empty, or why M was lowered.
    """

    ks: tuple[int, ...]
    m: np.ndarray
    rare: dict[int, np.ndarray]
    distinct: np.ndarray
    requested_m: int
    work: np.ndarray
    note: str = ""

    @property
    def max_m(self) -> int:
        return int(self.m[-1]) if self.m.size else 0

    @property
    def truncated(self) -> bool:
        return self.max_m < self.requested_m


#: the sizes of the audit (:mod:`ppdm_dask.constraints`)
AUDIT_CONSTRAINTS: dict[str, list[Any]] = {name: [Interval(int, 1, None)] for name in ("k", "max_m", "size")}


def _n_buckets(n_blocks: int) -> int:
    return max(1, min(MAX_BUCKETS, int(n_blocks)))


def _bucketed(block_parts: list[Any], n_buckets: int, merge: Any, tally: Any, tally_args: tuple, split_every: int) -> Any:
    """Lazy sum of ``tally(merge(bucket b of every block), *tally_args)`` over the buckets.

    ``block_parts`` are delayed tuples of ``n_buckets`` pieces (one per bucket); ``part[b]`` is
    a small getitem task, so each merge chain only pulls its own bucket of every block.
    """
    import dask

    from ..graph import tree_reduce
    from ._audit_kernels import add_arrays

    tallies = []
    for b in range(n_buckets):
        pieces = [part[b] for part in block_parts]
        merged = tree_reduce(pieces, merge, split_every=split_every)
        tallies.append(dask.delayed(tally, pure=True)(merged, *tally_args))
    return tree_reduce(tallies, add_arrays, split_every=split_every)


def _work_lazy(tx: Any, max_m: int, split_every: int) -> Any:
    from ..graph import tree_sum
    from ._audit_kernels import subset_work

    return tree_sum(tx.blocks, subset_work, (max_m,), np.float64, max_m, split_every=split_every)


def _packable_m(n_items: int, max_m: int) -> int:
    """Largest m <= max_m whose itemsets over ``n_items`` column ids fit a 64-bit key."""
    m = max_m
    while m > 1 and n_items + 1 >= (1 << (63 // m)):
        m -= 1
    return m


def km_audit(
    tx: Any,
    k: int | Sequence[int],
    max_m: int,
    *,
    max_subsets: float = DEFAULT_MAX_SUBSETS,
    split_every: int = 8,
    client: Any = None,
    progress: bool = False,
) -> KmAudit:
    """The k^m audit curve of ``tx``: itemsets of at most m items with support in [1, k), m = 1..M.

    Parameters
    ----------
    tx : TransactionArray
        Items are taken as they are (no hierarchy): the audit of published data.
    k : int or sequence of int
        The anonymity parameter(s); one curve per k from the same counting pass.
    max_m : int
        The largest m asked for (at most :data:`MAX_AUDIT_M`).
    max_subsets : float
        Bound on the itemset occurrences to enumerate; M is lowered to the largest m within it
        (m = 1 is always counted: it enumerates each item occurrence once).
    split_every : int
        Fan-in of the tree reductions.
    client, progress
        As for :func:`ppdm_dask.progress.compute`.

    Returns
    -------
    KmAudit
    """
    import dask

    from ..progress import compute
    from ._audit_kernels import itemset_buckets, itemset_tally, merge_itemsets

    ks = tuple(sorted({check("k", x, AUDIT_CONSTRAINTS["k"]) for x in ([k] if isinstance(k, (int, np.integer)) else k)}))
    if not ks:
        raise InvalidParameter("give at least one k")
    requested = check("max_m", max_m, AUDIT_CONSTRAINTS["max_m"])
    ckw = {"client": client, "progress": progress}
    top = min(requested, MAX_AUDIT_M)
    notes = [f"m is capped at {MAX_AUDIT_M}"] if requested > MAX_AUDIT_M else []
    packable = _packable_m(tx.n_items, top)
    if packable < top:
        notes.append(f"itemsets of more than {packable} of {tx.n_items:,} items do not fit the 64-bit keys")
        top = packable
    (work,) = compute(_work_lazy(tx, top, split_every), **ckw)
    work = np.asarray(work, np.float64)
    fits = np.flatnonzero(work <= float(max_subsets))
    m_ok = max(1, int(fits[-1]) + 1 if fits.size else 1)
    if m_ok < top:
        notes.append(
            f"counting itemsets of {m_ok + 1} items would enumerate {work[m_ok]:.3g} itemset occurrences, "
            f"over the bound of {float(max_subsets):.3g}: the curve stops at m = {m_ok}"
        )
        top = m_ok
    bits = 63 // top
    n_buckets = _n_buckets(tx.n_partitions)
    split = dask.delayed(itemset_buckets, pure=True)
    parts = [split(b, top, bits, n_buckets) for b in tx.blocks.to_delayed().ravel()]
    lazy = _bucketed(parts, n_buckets, merge_itemsets, itemset_tally, (np.asarray(ks, np.int64), top, bits), split_every)
    (tally,) = compute(lazy, **ckw)
    tally = np.asarray(tally, np.int64)
    distinct = np.cumsum(tally[:, 0])
    rare = {k_: np.cumsum(tally[:, 1 + i]) for i, k_ in enumerate(ks)}
    note = "; ".join(notes) + ("; the audit is partial" if notes else "")
    return KmAudit(ks, np.arange(1, top + 1), rare, distinct, requested, work[:top], note)


def unique_baskets(tx: Any, *, split_every: int = 8, client: Any = None, progress: bool = False) -> dict[str, Any]:
    """The records whose exact item set occurs once in ``tx``.

    Rows are compared as sets of item labels (128-bit fingerprints; distinct sets collide with probability below ``n²·2⁻¹²⁸``); the empty basket is an
    item set like any other.

    Returns
    -------
    dict
        ``unique`` (records whose item set occurs once), ``distinct`` (distinct item sets),
        ``rows``, ``share`` (unique / rows; NaN without rows).
    """
    import dask

    from ..progress import compute
    from ._audit_kernels import fingerprint_tally, label_hashes, merge_fingerprints

    h1, h2 = label_hashes(tx.vocabulary.labels)
    hashes = dask.delayed((h1, h2), pure=True)  # shipped once, not embedded in every task
    n_buckets = _n_buckets(tx.n_partitions)
    split = dask.delayed(_fingerprint_split, pure=True)
    parts = [split(b, hashes, n_buckets) for b in tx.blocks.to_delayed().ravel()]
    (tally,) = compute(
        _bucketed(parts, n_buckets, merge_fingerprints, fingerprint_tally, (), split_every), client=client, progress=progress
    )
    unique, distinct, rows = (int(x) for x in np.asarray(tally))
    return {"unique": unique, "distinct": distinct, "rows": rows, "share": unique / rows if rows else math.nan}


def _fingerprint_split(block: Any, hashes: tuple, n_buckets: int) -> tuple:
    from ._audit_kernels import fingerprint_buckets

    return fingerprint_buckets(block, hashes[0], hashes[1], n_buckets)


#: targets (rows) and subsets per target of :func:`singled_out` (bounds the work)
SINGLED_OUT_TARGETS = 2000
SINGLED_OUT_SUBSETS = 500
#: public seed of the sample of :func:`singled_out` (it only chooses what to measure)
_SINGLED_OUT_SEED = 0x5EED_4B4D


def take_rows(block: Any, start: int, rows: np.ndarray, n_items: int) -> Any:
    """Rows ``rows`` (global, sorted, inside this block which starts at ``start``) of a
    transaction block, as a 0/1 CSR array (pure kernel)."""
    import scipy.sparse as sp

    b = sp.csr_array(block)
    X = sp.csr_array((np.ones(b.indices.size, np.int64), b.indices, b.indptr), shape=(b.shape[0], int(n_items)))
    return sp.csr_array(X[np.asarray(rows, np.int64) - int(start)])


def gather_rows(tx: Any, rows: np.ndarray, **ckw: Any) -> Any:
    """Rows ``rows`` (global, any order) of a TransactionArray as a 0/1 CSR array: one small task
    per block holding some of them; only those rows reach the driver."""
    import dask
    import scipy.sparse as sp

    from ..progress import compute

    rows = np.asarray(rows, np.int64)
    want = np.unique(rows)
    off = np.concatenate([[0], np.cumsum(np.asarray(tx.partition_rows, np.int64))])
    tasks = []
    for i, b in enumerate(tx.blocks.to_delayed().ravel()):
        sel = want[(want >= off[i]) & (want < off[i + 1])]
        if sel.size:
            tasks.append(dask.delayed(take_rows, pure=True)(b, int(off[i]), sel, int(tx.n_items)))
    (parts,) = compute(tasks, **ckw)
    X = sp.vstack(parts, format="csr") if parts else sp.csr_array((0, int(tx.n_items)))
    return sp.csr_array(X[np.searchsorted(want, rows)])


def _subsets(items: np.ndarray, size: int, cap: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """The ``size``-subsets of ``items`` (sorted ids) as rows, all of them when there are at most
    ``cap``, else ``cap`` drawn at random (then ``False``: not all)."""
    from itertools import combinations

    total = math.comb(int(items.size), size)
    if total <= cap:
        return np.array(list(combinations(items.tolist(), size)), np.int64).reshape(-1, size), True
    picks = np.sort(np.argsort(rng.random((cap, items.size)), axis=1)[:, :size], axis=1)
    return np.unique(items[picks], axis=0), False


def singled_out(
    tx: Any,
    size: int,
    k: int = 2,
    *,
    max_targets: int = SINGLED_OUT_TARGETS,
    max_subsets: int = SINGLED_OUT_SUBSETS,
    client: Any = None,
    progress: bool = False,
) -> dict[str, Any]:
    """The records an adversary who knows ``size`` of their items can single out: records with
    some ``size``-itemset supported by them alone (and by fewer than ``k`` records).

    Exact when at most ``max_targets`` records hold ``size`` items or more and none of them has
    more than ``max_subsets`` such itemsets; otherwise an estimate from a fixed sample of
    ``max_targets`` of those records (``sampled``), each with up to ``max_subsets`` of its
    itemsets drawn at random (``subsets_capped``: then a lower bound). Supports are counted
    exactly over all of ``tx`` (distributed bitset counting).

    Returns
    -------
    dict
        ``size``, ``max_subsets``, ``rows``, ``eligible`` (records with >= size items), ``targets`` (examined;
        ``examined``: their rows),
        ``unique`` and ``rare`` (targets with an itemset of support 1, resp. < k),
        ``unique_share`` and ``rare_share`` (estimated share of all rows), ``sampled``,
        ``subsets_capped``, ``itemsets`` (distinct itemsets counted).
    """
    from ..mining.counting import SupportCounter
    from ..progress import compute

    size, k = validate(AUDIT_CONSTRAINTS, {"size": size, "k": k}).values()
    ckw = {"client": client, "progress": progress}
    (lengths,) = compute(tx.row_lengths(), **ckw)
    lengths = np.asarray(lengths, np.int64)
    rows = int(lengths.size)
    eligible = np.flatnonzero(lengths >= size)
    rng = np.random.default_rng(_SINGLED_OUT_SEED)
    sampled = eligible.size > max_targets
    targets = np.sort(rng.choice(eligible, max_targets, replace=False)) if sampled else eligible
    out = {
        "size": size,
        "max_subsets": int(max_subsets),
        "rows": rows,
        "eligible": int(eligible.size),
        "targets": int(targets.size),
        "unique": 0,
        "rare": 0,
        "unique_share": 0.0,
        "rare_share": 0.0,
        "sampled": bool(sampled),
        "subsets_capped": False,
        "itemsets": 0,
        "examined": targets,
    }
    if not targets.size:
        return out
    X = gather_rows(tx, targets, **ckw)
    parts, owner, complete = [], [], True
    for j in range(targets.size):
        subs, full = _subsets(np.sort(X.indices[X.indptr[j] : X.indptr[j + 1]]).astype(np.int64), size, max_subsets, rng)
        complete &= full
        parts.append(subs)
        owner.append(np.full(subs.shape[0], j, np.int64))
    allsubs, owner = np.concatenate(parts), np.concatenate(owner)
    distinct, at = np.unique(allsubs, axis=0, return_inverse=True)
    if size == 1:
        counts = np.asarray(compute(tx.item_supports_lazy(), **ckw)[0], np.int64)[distinct[:, 0]]
    else:
        counter = SupportCounter(tx, **ckw)
        counts = np.asarray(counter.itemset_counts(distinct), np.int64)
        counter.release()
    support = counts[np.asarray(at).ravel()]
    unique = np.zeros(targets.size, bool)
    rare = np.zeros(targets.size, bool)
    np.logical_or.at(unique, owner, support == 1)
    np.logical_or.at(rare, owner, support < k)
    scale = eligible.size / targets.size / rows if rows else 0.0
    out.update(
        examined=targets,
        unique=int(unique.sum()),
        rare=int(rare.sum()),
        unique_share=float(unique.sum() * scale),
        rare_share=float(rare.sum() * scale),
        subsets_capped=not complete,
        itemsets=int(distinct.shape[0]),
    )
    return out
