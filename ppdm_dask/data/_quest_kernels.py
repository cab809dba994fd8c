"""Pure numpy kernels of the Quest market-basket generator (no dask here).

The algorithm is the synthetic-data generator of Agrawal & Srikant, *Fast Algorithms for Mining
Association Rules* (VLDB 1994), section "Synthetic data"; the dask layer and the public API are in
:mod:`ppdm_dask.data.quest`, which documents the model and the choices made where the paper is
silent.

Every function takes an explicit ``numpy.random.Generator`` and draws from it in a fixed order, so
the output is a pure function of the stream.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

__all__ = [
    "generate_patterns",
    "draw_instances",
    "generate_block",
    "pattern_union_size",
    "vstack_csr",
]


# ---------------------------------------------------------------------------------- patterns
def _pick_new(rng: np.random.Generator, n_items: int, k: int, exclude: set[int]) -> list[int]:
    """``k`` distinct items drawn uniformly from ``0..n_items-1`` minus ``exclude``."""
    if k <= 0:
        return []
    if 2 * (k + len(exclude)) > n_items:
        # dense case: rejection would be slow, permute the complement instead
        pool = np.setdiff1d(np.arange(n_items), np.fromiter(exclude, np.int64, len(exclude)))
        return rng.choice(pool, size=k, replace=False).tolist()
    out: list[int] = []
    seen = set(exclude)
    while len(out) < k:  # sparse case: rejection sampling, O(k) expected
        for x in rng.integers(0, n_items, size=2 * (k - len(out)) + 2).tolist():
            if x not in seen:
                seen.add(x)
                out.append(x)
                if len(out) == k:
                    break
    return out


def generate_patterns(
    rng: np.random.Generator,
    n_patterns: int,
    avg_size: float,
    n_items: int,
    correlation: float,
    corruption_mean: float,
    corruption_var: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The potentially-large itemsets ("patterns") of a Quest instance.

    Parameters
    ----------
    rng : numpy.random.Generator
        The pattern stream.
    n_patterns : int
        L, number of patterns (>= 1).
    avg_size : float
        I, mean pattern size (>= 1). Sizes are ``1 + Poisson(I - 1)`` clipped to ``n_items``.
    n_items : int
        N, number of items.
    correlation : float
        Mean of the exponential fraction of items a pattern takes from its predecessor.
    corruption_mean, corruption_var : float
        Mean and variance of the normal corruption level, clipped to [0, 1].

    Returns
    -------
    indptr : ndarray of int64, shape (L + 1,)
    items : ndarray of int32
        Items of pattern ``p`` are ``items[indptr[p]:indptr[p + 1]]`` (distinct, unsorted).
    weights : ndarray of float64, shape (L,)
        Exponential(1) weights normalised to sum 1.
    corruption : ndarray of float64, shape (L,)
    """
    L = int(n_patterns)
    # all per-pattern scalars first, in one vectorised draw each
    sizes = np.minimum(1 + rng.poisson(max(avg_size - 1.0, 0.0), L), n_items)
    weights = rng.exponential(1.0, L)
    weights /= weights.sum()
    corruption = np.clip(rng.normal(corruption_mean, np.sqrt(corruption_var), L), 0.0, 1.0)
    if correlation > 0:
        fractions = np.clip(rng.exponential(correlation, L), 0.0, 1.0)
    else:
        fractions = np.zeros(L)
    out: list[int] = []
    indptr = np.zeros(L + 1, dtype=np.int64)
    prev: list[int] = []
    for p, (size, frac) in enumerate(zip(sizes.tolist(), fractions.tolist())):
        if p == 0:
            taken: list[int] = []
        else:
            n_take = min(int(round(frac * size)), size, len(prev))
            taken = rng.choice(np.asarray(prev), size=n_take, replace=False).tolist() if n_take else []
        items = taken + _pick_new(rng, n_items, size - len(taken), set(taken))
        out.extend(items)
        indptr[p + 1] = len(out)
        prev = items
    return indptr, np.asarray(out, dtype=np.int32), weights, corruption


def pattern_union_size(indptr: np.ndarray, items: np.ndarray, corruption: np.ndarray) -> int:
    """Number of distinct items reachable by transactions (patterns with corruption < 1)."""
    sizes = np.diff(indptr)
    live = np.repeat(corruption < 1.0, sizes)
    return int(np.unique(items[live]).size)


# ---------------------------------------------------------------------------------- instances
def draw_instances(
    rng: np.random.Generator,
    indptr: np.ndarray,
    items: np.ndarray,
    cum_weights: np.ndarray,
    corruption: np.ndarray,
    m: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``m`` corrupted pattern instances, drawn in one vectorised batch.

    A pattern is chosen by weight; then items are dropped one at a time, at random, as long as a
    uniform number is below the pattern's corruption level ``c``. The number of drops is therefore
    geometric, ``P(k >= j) = c**j`` (capped at the pattern size); it is drawn with one uniform
    ``v`` as ``floor(log v / log c)``, which has exactly that law. The dropped items are a uniform
    random subset, obtained by shuffling each instance (sort by ``instance + uniform``) and keeping
    a prefix.

    Returns
    -------
    indptr : ndarray of int64, shape (m + 1,)
    items : ndarray of int32
        Items of instance ``i`` (distinct).
    uniforms : ndarray of float64, shape (m,)
        The uniform deciding, if instance ``i`` does not fit, whether it is added anyway.
    """
    L = cum_weights.size
    pid = np.searchsorted(cum_weights, rng.random(m) * cum_weights[-1], side="right")
    np.minimum(pid, L - 1, out=pid)  # guards against round-off at the top end
    size = (indptr[pid + 1] - indptr[pid]).astype(np.int64)
    c = corruption[pid]
    v = 1.0 - rng.random(m)  # in (0, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.floor(np.log(v) / np.log(c))
    k = np.where(c <= 0.0, 0.0, np.where(c >= 1.0, np.inf, k))
    keep = size - np.minimum(k, size).astype(np.int64)
    total = int(size.sum())
    starts = np.repeat(indptr[pid] - np.cumsum(size) + size, size)  # pattern start - instance start
    flat = np.arange(total, dtype=np.int64)
    inst = np.repeat(np.arange(m, dtype=np.int64), size)
    gathered = items[starts + flat]
    shuffle_key = inst + rng.random(total)
    order = np.argsort(shuffle_key, kind="stable")
    pos = flat - np.repeat(np.cumsum(size) - size, size)  # position within the instance
    kept = gathered[order][pos < np.repeat(keep, size)]
    out_ptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(keep, out=out_ptr[1:])
    uniforms = rng.random(m)
    return out_ptr, kept.astype(np.int32, copy=False), uniforms


# ---------------------------------------------------------------------------------- transactions
def generate_block(
    rng: np.random.Generator,
    indptr: np.ndarray,
    items: np.ndarray,
    weights: np.ndarray,
    corruption: np.ndarray,
    n_rows: int,
    n_items: int,
    avg_size: float,
    *,
    max_distinct: int | None = None,
) -> sp.csr_array:
    """One block of ``n_rows`` Quest transactions.

    Parameters
    ----------
    rng : numpy.random.Generator
        The block's stream.
    indptr, items, weights, corruption : ndarray
        The patterns (see :func:`generate_patterns`).
    n_rows : int
        Rows of the block.
    n_items : int
        N, number of columns.
    avg_size : float
        T; transaction sizes are ``1 + Poisson(T - 1)``.
    max_distinct : int, optional
        Distinct items reachable by any transaction (:func:`pattern_union_size`); sizes are
        capped at it so that a transaction can always be completed.

    Returns
    -------
    scipy.sparse.csr_array
        Shape ``(n_rows, n_items)``, int32 data (ones), int32 sorted unique indices per row.

    Notes
    -----
    Fill rule, per transaction of target size ``s`` (counted in *distinct* items): take the next
    corrupted instance (the first one may be carried over from the previous transaction) and let
    ``k`` be the size of its union with the items already present (``n`` of them).

    * ``k <= s``: add it; the transaction is complete when ``k == s``.
    * ``k > s`` and ``n > 0``: add it with probability ``(s - n) / (k - n)`` (free slots over new
      items), otherwise carry it over to the next transaction; either way the transaction is
      complete. The paper adds it "in half the cases"; this randomised rounding makes the
      expected final length equal ``s`` (see :mod:`ppdm_dask.data.quest` for the measurements).
    * ``k > s`` and ``n == 0``: drop the instance and draw the next one (forcing an over-large
      pattern into an empty transaction is what biases the literal rule most).

    The instance still pending at the end of the block is dropped. Safety valve for degenerate
    parameters (corruption levels of 1, every pattern larger than ``s``): after ``64 + 4 * s``
    instances that did not grow the transaction it is closed as it is, or the over-large
    instance is taken whole.
    """
    n_rows = int(n_rows)
    if n_rows == 0:
        return sp.csr_array(
            (np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(1, np.int32)),
            shape=(0, n_items),
        )
    sizes = 1 + rng.poisson(max(avg_size - 1.0, 0.0), n_rows)
    cap_max = n_items if max_distinct is None else max(1, int(max_distinct))
    caps = np.minimum(sizes, cap_max).tolist()

    cum_weights = np.cumsum(weights)
    psizes = np.diff(indptr)
    # expected number of items an instance contributes, to size the pre-drawn batches
    c = np.clip(corruption, 0.0, 1.0 - 1e-9)
    mean_kept = float(np.sum(weights * np.maximum(psizes - c / (1.0 - c), 0.0)))
    mean_kept = max(mean_kept, 0.5)
    batch = int(1.15 * float(np.sum(caps)) / mean_kept) + 64
    more = max(batch // 4, 256)

    sets: list[list[int]] = []  # instance items as small lists: cheaper than frozensets
    unif: list[float] = []
    ptr_parts: list[np.ndarray] = []
    item_parts: list[np.ndarray] = []

    def extend(m: int) -> None:
        ip, it, un = draw_instances(rng, indptr, items, cum_weights, corruption, m)
        lst = it.tolist()
        bounds = ip.tolist()
        sets.extend([lst[a:b] for a, b in zip(bounds[:-1], bounds[1:])])
        unif.extend(un.tolist())
        ptr_parts.append(np.diff(ip))
        item_parts.append(it)

    extend(batch)
    owner: list[int] = []  # row of every consumed instance (-1: dropped), in consumption order
    push = owner.append
    empty: frozenset[int] = frozenset()
    j = 0
    # The sequential fill: plain Python over small ints (frozenset.union of a short list is the
    # cheapest distinct count); everything random was drawn above in batches, and the CSR is
    # built with numpy afterwards.
    for t, cap in enumerate(caps):
        cur = empty
        n = 0  # distinct items so far
        stall = 0  # instances consumed without growing the transaction
        stall_limit = 64 + 4 * cap
        while True:
            try:
                s = sets[j]
            except IndexError:
                extend(more)
                s = sets[j]
            u = cur.union(s)
            k = len(u)
            if k <= cap:  # fits: add
                push(t)
                j += 1
                if k == cap:
                    break
                if k == n:
                    stall += 1
                    if stall > stall_limit:
                        break
                cur = u
                n = k
            elif n:  # does not fit: add with probability (free slots) / (new items), else carry
                if unif[j] * (k - n) < cap - n:
                    push(t)
                    j += 1
                break
            elif stall < stall_limit:  # too big for the empty transaction: drop it
                push(-1)
                j += 1
                stall += 1
            else:  # safety valve (degenerate parameters): take it whole
                push(t)
                j += 1
                break

    # CSR from the consumed instances: (row, item) keys, sorted and de-duplicated
    n_used = len(owner)
    inst_sizes = np.concatenate(ptr_parts)[:n_used]
    used_items = np.concatenate(item_parts)[: int(inst_sizes.sum())]
    rows = np.repeat(np.asarray(owner, dtype=np.int64), inst_sizes)
    keep = rows >= 0
    keys = rows[keep] * n_items + used_items[keep]
    keys.sort()  # sort + neighbour mask: several times faster than np.unique here
    if keys.size:
        first = np.empty(keys.size, dtype=bool)
        first[0] = True
        np.not_equal(keys[1:], keys[:-1], out=first[1:])
        keys = keys[first]
    row_of = keys // n_items
    out_indptr = np.zeros(n_rows + 1, dtype=np.int32)
    np.cumsum(np.bincount(row_of, minlength=n_rows), out=out_indptr[1:])
    indices = (keys - row_of * n_items).astype(np.int32)
    data = np.ones(indices.size, dtype=np.int32)
    return sp.csr_array((data, indices, out_indptr), shape=(n_rows, n_items))


def vstack_csr(parts: Sequence[sp.csr_array], n_items: int) -> sp.csr_array:
    """Stack CSR row blocks, keeping int32 indices and indptr (scipy may widen them)."""
    if len(parts) == 1:
        return parts[0]
    n_rows = sum(p.shape[0] for p in parts)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    pos, off = 1, 0
    for p in parts:
        r = p.shape[0]
        indptr[pos : pos + r] = p.indptr[1:].astype(np.int64) + off
        off += int(p.indptr[-1])
        pos += r
    indices = np.concatenate([p.indices for p in parts]).astype(np.int32, copy=False)
    data = np.ones(indices.size, dtype=np.int32)
    return sp.csr_array((data, indices, indptr.astype(np.int32)), shape=(n_rows, n_items))
