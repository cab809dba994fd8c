"""Per-block kernels of the k^m audit and of the unique-basket share (pure numpy/scipy, no Dask).

Both measures need, for every distinct key (a packed itemset, a row fingerprint), its count over
the whole database. Instead of merging every distinct key on the driver, each block splits its
``(keys, counts)`` into ``n_buckets`` by a hash of the key; every bucket is merged on the
workers and reduced to a small tally, and only the tallies travel to the driver.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import scipy.sparse as sp

from ..data.fingerprints import fingerprint_counts, label_hashes, merge_fingerprint_counts, row_fingerprints

__all__ = [
    "subset_work",
    "count_itemsets",
    "key_sizes",
    "itemset_buckets",
    "itemset_tally",
    "merge_itemsets",
    "label_hashes",
    "fingerprint_buckets",
    "merge_fingerprints",
    "fingerprint_tally",
    "add_arrays",
]

_MIX = np.uint64(0x9E3779B97F4A7C15)


def _bucket_of(h: np.ndarray, n_buckets: int) -> np.ndarray:
    """Bucket of each uint64 hash input (multiplicative hashing: the high bits are well mixed)."""
    with np.errstate(over="ignore"):
        mixed = h.astype(np.uint64) * _MIX
    return ((mixed >> np.uint64(33)) % np.uint64(n_buckets)).astype(np.int64)


def _split(bucket: np.ndarray, n_buckets: int, *arrays: np.ndarray) -> tuple:
    """``arrays`` cut into ``n_buckets`` pieces by ``bucket``, each piece keeping its sort order."""
    order = np.argsort(bucket, kind="stable")
    cut = np.searchsorted(bucket[order], np.arange(n_buckets + 1))
    return tuple(tuple(a[order[cut[b] : cut[b + 1]]] for a in arrays) for b in range(n_buckets))


def add_arrays(parts: list[np.ndarray]) -> np.ndarray:
    """Tree-combine step: exact sum of equally shaped integer arrays."""
    out = np.array(parts[0], copy=True)
    for p in parts[1:]:
        out += p
    return out


# ---------------------------------------------------------------------- k^m audit
def subset_work(block: sp.csr_array, max_m: int) -> np.ndarray:
    """``[Σ_rows Σ_{j<=m} C(len, j) for m = 1..max_m]``: the itemsets one block enumerates when
    counting up to m items (float64; prices the audit before it runs)."""
    lengths = np.diff(sp.csr_array(block).indptr).astype(np.float64)
    out = np.zeros(max_m)
    term = np.ones(lengths.size)
    total = 0.0
    for j in range(1, max_m + 1):
        term = term * np.maximum(lengths - (j - 1), 0) / j
        total += float(term.sum())
        out[j - 1] = total
    return out


#: most (row, subset) entries materialised at once when enumerating subsets
_CHUNK = 1 << 22


def _merge_sorted(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique keys with the counts of equal keys summed (exact)."""
    if keys.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.argsort(keys, kind="stable")
    keys, counts = keys[order], counts[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return keys[starts], np.add.reduceat(counts, starts).astype(np.int64)


def count_itemsets(block: sp.csr_array, max_m: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Counts of every itemset of 1..max_m items of the rows of one block.

    Keys pack the sorted column ids + 1 of an itemset into ``bits``-bit fields (first item in the
    lowest field; empty fields 0). Rows are grouped by length L, and each group's j-subsets are
    taken with one fancy index by the ``C(L, j)`` combinations, a bounded number of rows at a time.
    """
    b = sp.csr_array(block)
    b.sort_indices()
    lengths = np.diff(b.indptr)
    keys_out, counts_out = [], []
    for length in np.unique(lengths[lengths > 0]).tolist():
        rows = np.flatnonzero(lengths == length)
        items = b.indices[(b.indptr[rows][:, None] + np.arange(length)[None, :])].astype(np.int64) + 1
        for j in range(1, min(max_m, length) + 1):
            combos = np.array(list(combinations(range(length), j)), np.int64)
            step = max(1, _CHUNK // (combos.shape[0] * j))
            for s in range(0, rows.size, step):
                sub = items[s : s + step][:, combos]  # (rows, C(L, j), j), ids ascending
                keys = np.zeros(sub.shape[:2], np.int64)
                for f in range(j):
                    keys |= sub[:, :, f] << (bits * f)
                k, c = np.unique(keys.ravel(), return_counts=True)
                keys_out.append(k)
                counts_out.append(c.astype(np.int64))
    if not keys_out:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return _merge_sorted(np.concatenate(keys_out), np.concatenate(counts_out))


def key_sizes(keys: np.ndarray, max_m: int, bits: int) -> np.ndarray:
    """Number of items of each packed key."""
    mask = np.int64((1 << bits) - 1)
    return sum(((keys >> (bits * f)) & mask) != 0 for f in range(max_m)).astype(np.int64)


def itemset_buckets(block: sp.csr_array, max_m: int, bits: int, n_buckets: int) -> tuple:
    """:func:`count_itemsets` of one block, split into ``n_buckets`` pairs ``(keys, counts)``."""
    keys, counts = count_itemsets(block, max_m, bits)
    return _split(_bucket_of(keys.view(np.uint64), n_buckets), n_buckets, keys, counts)


def itemset_tally(merged: tuple[np.ndarray, np.ndarray], ks: np.ndarray, max_m: int, bits: int) -> np.ndarray:
    """``(max_m, 1 + len(ks))`` int64 tally of one merged bucket: per itemset size j (row j-1),
    column 0 the distinct itemsets of that size, column 1+i those with support < ``ks[i]``."""
    keys, counts = merged
    out = np.zeros((max_m, 1 + len(ks)), np.int64)
    if keys.size == 0:
        return out
    sizes = key_sizes(keys, max_m, bits)
    out[:, 0] = np.bincount(sizes - 1, minlength=max_m)[:max_m]
    for i, k in enumerate(ks):
        rare = counts < k  # counted keys all occur (support >= 1)
        out[:, 1 + i] = np.bincount(sizes[rare] - 1, minlength=max_m)[:max_m]
    return out


def merge_itemsets(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Tree-combine step: exact merge of ``(keys, counts)`` runs."""
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return _merge_sorted(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))


# ---------------------------------------------------------------------- unique baskets
def fingerprint_buckets(block: sp.csr_array, h1: np.ndarray, h2: np.ndarray, n_buckets: int) -> tuple:
    """Distinct-row counts of one block (128-bit fingerprints of the rows' label sets; distinct
    sets collide with probability below n²·2⁻¹²⁸), split into ``n_buckets`` pairs
    ``(fingerprints, counts)``."""
    b = sp.csr_array(block)
    fp, counts = fingerprint_counts(row_fingerprints(b, h1, h2), np.ones(b.shape[0], np.int64))
    return _split(_bucket_of(fp[:, 0], n_buckets), n_buckets, fp, counts)


merge_fingerprints = merge_fingerprint_counts


def fingerprint_tally(merged: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``[rows whose item set occurs once, distinct item sets, rows]`` of one merged bucket."""
    _, counts = merged
    return np.array([int(np.count_nonzero(counts == 1)), int(counts.size), int(counts.sum())], np.int64)
