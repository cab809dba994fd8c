"""Per-block kernels of the reinterrogated-privacy evaluation (docs/emask.md#reinterrogated-privacy,
docs/emask.md#distributed-execution); pure numpy/scipy.

A *plan* describes the itemset family F once per job:

* ``items``: sorted int64 column ids of every item that occurs in F (the set U);
* ``levels``: list of ``(k, pos)`` with ``pos`` an ``(n_k, k)`` int64 array of positions into
  ``items`` (one row per itemset of length k).

Pairs (I, b ∈ I) are ordered level by level, itemset-major, position-minor, i.e. the ravel of
each level's ``(n_k, k)`` array. Rows of a block are processed in chunks of :data:`ROW_CHUNK`
rows packed into uint64 masks (bit r of word w = row 64 w + r), so memory stays bounded by
``O(|U| * ROW_CHUNK)`` plus an itemset chunk of at most :data:`MAX_CHUNK_BYTES`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

__all__ = [
    "ROW_CHUNK",
    "MAX_CHUNK_BYTES",
    "make_plan",
    "n_pairs",
    "pack_columns",
    "breach_counts",
    "privacy_sums",
    "sum_arrays",
]

#: Rows per packed chunk (a multiple of 64).
ROW_CHUNK = 4096
#: Bound on the temporary per-itemset buffers (AND masks, unpacked candidate values).
MAX_CHUNK_BYTES = 32 * 2**20

Plan = tuple[np.ndarray, list[tuple[int, np.ndarray]]]


def make_plan(levels: Sequence[np.ndarray]) -> Plan:
    """Build the plan from itemsets given as ``(n_k, k)`` arrays of column ids (one per length)."""
    arrays = [np.asarray(a, dtype=np.int64) for a in levels if np.asarray(a).size]
    items = np.unique(np.concatenate([a.ravel() for a in arrays])) if arrays else np.zeros(0, np.int64)
    plan_levels = [(int(a.shape[1]), np.searchsorted(items, a).astype(np.int64)) for a in arrays]
    return items, plan_levels


def n_pairs(plan: Plan) -> int:
    """Number of (I, b ∈ I) pairs of the plan."""
    return int(sum(pos.size for _, pos in plan[1]))


def n_itemsets(plan: Plan) -> int:
    """Number of itemsets of the plan."""
    return int(sum(pos.shape[0] for _, pos in plan[1]))


def pack_columns(block: sp.csr_array, items: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Packed row masks ``(len(items), ceil((stop-start)/64))`` uint64 of rows ``start:stop``."""
    n_rows = stop - start
    n_words = max(1, (n_rows + 63) // 64)
    bits = np.zeros((items.size, n_words), dtype=np.uint64)
    if items.size == 0 or n_rows <= 0:
        return bits
    ip = block.indptr
    lo, hi = int(ip[start]), int(ip[stop])
    cols = block.indices[lo:hi].astype(np.int64)
    rows = np.repeat(np.arange(n_rows, dtype=np.int64), np.diff(ip[start : stop + 1]))
    pos = np.searchsorted(items, cols)
    pos_c = np.minimum(pos, items.size - 1)
    keep = items[pos_c] == cols  # only the columns of U
    pos, rows = pos_c[keep], rows[keep]
    vals = np.left_shift(np.uint64(1), (rows & 63).astype(np.uint64))
    # distinct (item, row) pairs set distinct bits, so OR-accumulation is exact
    np.bitwise_or.at(bits, (pos, rows >> 6), vals)
    return bits


def _itemset_chunks(n: int, n_words: int, k: int, extra_bytes_per_itemset: int = 0):
    per = max(1, MAX_CHUNK_BYTES // max(1, 8 * n_words * (k + 1) + extra_bytes_per_itemset))
    for s in range(0, n, per):
        yield s, min(n, s + per)


def _and_masks(bits: np.ndarray, pos: np.ndarray) -> np.ndarray:
    acc = bits[pos[:, 0]].copy()
    for j in range(1, pos.shape[1]):
        acc &= bits[pos[:, j]]
    return acc


def _check_blocks(t_block: sp.csr_array, d_block: sp.csr_array) -> None:
    if t_block.shape != d_block.shape:
        raise ValueError(f"original block {t_block.shape} and distorted block {d_block.shape} differ in shape")


def breach_counts(t_block: sp.csr_array, d_block: sp.csr_array, plan: Plan) -> np.ndarray:
    """Pass 1 counts of one block pair.

    Returns
    -------
    ndarray of int64, shape ``(n_itemsets + n_pairs,)``
        First ``|S_I ∩ block|`` = number of rows t with I ⊆ D_t for every itemset I (plan order),
        then for every pair (I, b) the number of those rows that also have b ∈ T_t.
    """
    _check_blocks(t_block, d_block)
    items, levels = plan
    n_i = n_itemsets(plan)
    sizes = np.zeros(n_i, dtype=np.int64)
    hits = np.zeros(n_pairs(plan), dtype=np.int64)
    n_rows = t_block.shape[0]
    for r0 in range(0, n_rows, ROW_CHUNK):
        r1 = min(n_rows, r0 + ROW_CHUNK)
        dbits = pack_columns(d_block, items, r0, r1)
        tbits = pack_columns(t_block, items, r0, r1)
        i_off = p_off = 0
        for k, pos in levels:
            for s, e in _itemset_chunks(pos.shape[0], dbits.shape[1], k):
                sub = pos[s:e]
                acc = _and_masks(dbits, sub)  # rows with I ⊆ D_t
                sizes[i_off + s : i_off + e] += np.bitwise_count(acc).sum(axis=1, dtype=np.int64)
                for j in range(k):
                    c = np.bitwise_count(acc & tbits[sub[:, j]]).sum(axis=1, dtype=np.int64)
                    hits[p_off + s * k + j : p_off + e * k : k] += c
            i_off += pos.shape[0]
            p_off += pos.size
    return np.concatenate([sizes, hits])


def _unpack(masks: np.ndarray, n_rows: int) -> np.ndarray:
    """``(m, n_words)`` uint64 masks -> ``(m, n_rows)`` bool (little-endian bit order)."""
    u8 = np.ascontiguousarray(masks).view(np.uint8)  # native uint64 little-endian on supported platforms
    if np.little_endian is False:  # pragma: no cover - big-endian hosts
        u8 = np.ascontiguousarray(masks.byteswap()).view(np.uint8)
    return np.unpackbits(u8, axis=1, bitorder="little", count=n_rows).astype(bool)


def privacy_sums(t_block: sp.csr_array, d_block: sp.csr_array, plan: Plan, breach: np.ndarray) -> np.ndarray:
    """Pass 2 sums of one block pair.

    For every 1 of T at (t, b) with b ∈ U and b ∈ D_t, the per-row maximal breach
    ``m(t, b) = max{breach(I, b) : I ∈ F, b ∈ I, I ⊆ D_t}`` is computed (when at least one such I
    exists). The caller turns the sums into RP with the basic privacy BP of all other ones.

    Parameters
    ----------
    breach : float64 array, shape ``(n_pairs,)``, values in [0, 1], plan pair order.

    Returns
    -------
    ndarray of float64, shape ``(3,)``
        ``[Σ (1 − m(t, b)) over qualifying ones, number of qualifying ones, number of ones of T]``
        (counts are exact in float64 below 2**53).
    """
    _check_blocks(t_block, d_block)
    items, levels = plan
    breach = np.asarray(breach, dtype=np.float64)
    total = 0.0
    n_q = 0
    n_rows = t_block.shape[0]
    for r0 in range(0, n_rows, ROW_CHUNK):
        r1 = min(n_rows, r0 + ROW_CHUNK)
        m = r1 - r0
        dbits = pack_columns(d_block, items, r0, r1)
        tbits = pack_columns(t_block, items, r0, r1)
        best = np.full((items.size, m), -1.0)  # -1 = no itemset of F containing b lies in D_t
        p_off = 0
        for k, pos in levels:
            br = breach[p_off : p_off + pos.size].reshape(pos.shape)
            for s, e in _itemset_chunks(
                pos.shape[0], dbits.shape[1], k, extra_bytes_per_itemset=40 * m
            ):  # worst case: every row a hit
                sub = pos[s:e]
                acc = _and_masks(dbits, sub)  # rows with I ⊆ D_t
                live = np.flatnonzero(acc.any(axis=1))
                if live.size == 0:
                    continue
                # I ⊆ D_t is rare for long itemsets: scatter-max only the (itemset, row) hits
                it, row = np.nonzero(_unpack(acc[live], m))
                it = live[it] + s
                for j in range(k):
                    np.maximum.at(best, (pos[it, j], row), br[it, j])
            p_off += pos.size
        qual = (best >= 0.0) & _unpack(tbits, m) & _unpack(dbits, m)
        total += float(np.sum(1.0 - best[qual]))
        n_q += int(np.count_nonzero(qual))
    n_ones = int(t_block.indptr[-1] - t_block.indptr[0])
    return np.array([total, float(n_q), float(n_ones)], dtype=np.float64)


def sum_arrays(parts: list[np.ndarray]) -> np.ndarray:
    """Tree-reduction combiner: element-wise sum of equally shaped arrays."""
    out = np.array(parts[0], copy=True)
    for p in parts[1:]:
        out += p
    return out
