"""The records that are unique in the original, as row fingerprints: what the generator must never
release verbatim (docs/krimp.md#unique-records-are-never-copied).

A record that occurs once in the original identifies one person; a generated row equal to it
publishes that person's record (synthpop removes such "replicated uniques" for the same reason).
The generator therefore redraws every row whose fingerprint is in the set of unique original
rows, and ``verify --original`` counts the released rows that are
(:func:`ppdm_dask.krimp.release.row_comparison`).

Rows compare as sets of item labels through their 128-bit fingerprints
(:mod:`ppdm_dask.data.fingerprints`; two distinct rows collide with probability below
``n²·2⁻¹²⁸``). The unique set is one distributed pass over the original: every block counts its
rows' fingerprints, the counts are merged in a tree reduction and the fingerprints of count 1
are kept, sorted — 16 bytes per unique original record in the driver's memory (1 million unique
records: 16 MB), sent once to every task that generates or checks rows. The root of the
reduction holds 24 bytes per *distinct* original record while it merges.

Kernels here are pure numpy/numba; :func:`unique_fingerprints_lazy` wires them into a Dask graph.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from ..data.fingerprints import fingerprint_counts, label_hashes, merge_fingerprint_counts, row_fingerprints

__all__ = ["in_sorted", "unique_fingerprints_lazy", "unique_fingerprints", "EMPTY_FINGERPRINTS"]

#: No unique record (an empty set of fingerprints).
EMPTY_FINGERPRINTS = np.zeros((0, 2), np.uint64)


@numba.njit(cache=True, nogil=True)
def _in_sorted(table, fp, out):  # pragma: no cover - compiled
    n = table.shape[0]
    for i in range(fp.shape[0]):
        a, b = fp[i, 0], fp[i, 1]
        lo, hi = 0, n
        while lo < hi:  # first table row >= (a, b), lexicographically
            mid = (lo + hi) >> 1
            t0 = table[mid, 0]
            if t0 < a or (t0 == a and table[mid, 1] < b):
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo < n and table[lo, 0] == a and table[lo, 1] == b


def in_sorted(table: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """Which rows of ``fp`` ``(m, 2)`` are rows of ``table`` ``(k, 2)`` (uint64, sorted
    lexicographically and unique): a binary search per row, ``O(m log k)``."""
    out = np.zeros(fp.shape[0], np.bool_)
    if table.shape[0] and fp.shape[0]:
        _in_sorted(np.ascontiguousarray(table, np.uint64), np.ascontiguousarray(fp, np.uint64), out)
    return out


def _block_counts(block: Any, h1: np.ndarray, h2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return fingerprint_counts(row_fingerprints(block, h1, h2), np.ones(block.shape[0], np.int64))


def _uniques_of(counted: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    fp, counts = counted
    return np.ascontiguousarray(fp[counts == 1])


def unique_fingerprints_lazy(tx: Any) -> Any:
    """A delayed ``(k, 2)`` uint64 array: the sorted fingerprints of the rows of the
    TransactionArray ``tx`` that occur exactly once (one pass; compute it with other passes)."""
    import dask

    from ..graph import tree_reduce

    h1, h2 = label_hashes(tx.vocabulary.labels)
    parts = [dask.delayed(_block_counts, pure=True)(b, h1, h2) for b in tx.blocks.to_delayed().ravel()]
    if not parts:
        return dask.delayed(EMPTY_FINGERPRINTS)
    return dask.delayed(_uniques_of, pure=True)(tree_reduce(parts, merge_fingerprint_counts))


def unique_fingerprints(tx: Any, **compute_kwargs: Any) -> np.ndarray:
    """The sorted fingerprints of the rows of ``tx`` that occur exactly once (see
    :func:`unique_fingerprints_lazy`)."""
    from ..progress import compute

    compute_kwargs.setdefault("progress", False)
    (out,) = compute(unique_fingerprints_lazy(tx), **compute_kwargs)
    return out
